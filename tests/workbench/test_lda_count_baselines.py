"""AD-LDA and Async-LDA on the simulated clock (workbench/systems/topics/counts.py): one worker
is serial collapsed Gibbs, the barrier and the master's queue by hand, Async-LDA's merges
against a replay of Y-LDA's update, and recovery of known topics."""

import numpy as np
import pytest
from scipy.optimize import linear_sum_assignment

from simulators.seeding import generator
from workbench.data.corpus import Corpus
from workbench.systems.topics.cost import CostModel
from workbench.systems.topics.counts import (
    ad_lda_iteration,
    async_lda_syncs,
    run_ad_lda,
    run_async_lda,
)
from workbench.systems.topics.gibbs import (
    GibbsState,
    run_collapsed_gibbs,
    sweep_streams,
    sweep_uniforms,
    topics_from_counts,
)

# message: K·W·0.25 = 2 and the master's addition of one delta: K·W·0.5 = 4, at K = 2, W = 4
HAND_COST = CostModel(gibbs_token=1.0, sgrld_token=0.0, topic_entry=0.5, message_entry=0.25)


def uniform_corpus(n_documents, length, vocabulary_size, seed):
    rng = generator(seed, "test-count-baselines-corpus")
    return Corpus(rng.integers(vocabulary_size, size=n_documents * length),
                  np.arange(n_documents + 1) * length, vocabulary_size)


def assert_same_trace(first, second):
    assert np.array_equal(first.times, second.times)
    assert np.array_equal(first.topics, second.topics)
    assert np.array_equal(first.updates, second.updates)
    assert first.finished == second.finished


def test_ad_lda_iteration_with_one_worker_is_a_serial_sweep():
    corpus = uniform_corpus(15, 8, 12, seed=1)
    documents = np.arange(15)
    serial = GibbsState.initial(corpus, 4, 3, seed=2)
    distributed = GibbsState.initial(corpus, 4, 3, seed=2)
    serial_streams = sweep_streams(2, 0, 3)
    worker_streams = [sweep_streams(2, 0, 3)]
    for _ in range(6):
        serial.sweep(corpus, documents, 0.2, 0.1, sweep_uniforms(serial_streams, 120),
                     serial.n_kw, serial.n_k)
        ad_lda_iteration(distributed, corpus, [documents], worker_streams, 0.2, 0.1)
        for field in ("z", "n_dk", "n_kw", "n_k"):
            assert np.array_equal(getattr(serial, field), getattr(distributed, field)), field


def test_ad_lda_merge_adds_every_workers_deltas():
    # Three workers sweep against copies of the same counts; the merged counts are those of
    # the new assignments (n_kw^old + Σ_s (ñ^s − n_kw^old) counts every token once).
    corpus = uniform_corpus(12, 6, 9, seed=3)
    shards = [np.array([4, 0, 7, 11]), np.array([1, 2, 3]), np.array([5, 6, 8, 9, 10])]
    state = GibbsState.initial(corpus, 3, 2, seed=4)
    streams = [sweep_streams(4, s, 2) for s in range(3)]
    for _ in range(3):
        ad_lda_iteration(state, corpus, shards, streams, 0.3, 0.2)
        recounted = GibbsState.of_assignments(corpus, state.z, 3)
        assert np.array_equal(state.n_kw, recounted.n_kw)
        assert np.array_equal(state.n_k, recounted.n_k)
        assert np.array_equal(state.n_dk, recounted.n_dk)


SERIAL_SETTINGS = dict(n_topics=3, alpha=0.2, beta=0.1, n_replicates=2, seed=5)


def test_ad_lda_with_one_worker_is_collapsed_gibbs():
    corpus = uniform_corpus(10, 6, 8, seed=6)  # 60 tokens: a sweep takes 60 at speed 1
    shards = [np.arange(10)]
    free = CostModel(topic_entry=0.0, message_entry=0.0)
    times = np.array([30.0, 60.0, 150.0, 180.0, 400.0])
    serial = run_collapsed_gibbs(corpus, shards, cost=free, speed_factors=np.ones(1),
                                 evaluation_times=times, **SERIAL_SETTINGS)
    one_worker = run_ad_lda(corpus, shards, cost=free, speed_factors=np.ones(1),
                            evaluation_times=times, **SERIAL_SETTINGS)
    assert_same_trace(serial, one_worker)
    assert serial.updates.tolist() == [0, 1, 2, 3, 6] and serial.finished == 420.0
    # With communication the merges come later (K·W = 24: messages of 24, an addition of
    # 2.4): merge i at i·(60 + 2·24 + 2.4) − 24, each the serial sweep's state.
    costly = CostModel()
    cycle = 60 + 2 * 24 + 2.4
    merges = np.arange(1, 6) * cycle - 24 + 10  # 10 after each merge: clear of rounding
    one_worker = run_ad_lda(corpus, shards, cost=costly, speed_factors=np.ones(1),
                            evaluation_times=merges, **SERIAL_SETTINGS)
    serial = run_collapsed_gibbs(corpus, shards, cost=costly, speed_factors=np.ones(1),
                                 evaluation_times=60.0 * np.arange(1, 6), **SERIAL_SETTINGS)
    assert np.array_equal(one_worker.topics, serial.topics)
    assert one_worker.updates.tolist() == serial.updates.tolist() == [1, 2, 3, 4, 5]


def test_ad_lda_waits_for_the_slowest_worker():
    # Shards of 10 tokens each; worker 1 is twice slower: sweeps of 10 and 20. An iteration
    # starting at T merges at T + 20 (the barrier) + 2 (deltas in) + 2 · 4 (two additions) and
    # the next starts at the merge + 2 (counts out): merges at 30, 62, 94, 126.
    corpus = uniform_corpus(4, 5, 4, seed=7)
    shards = [np.array([0, 1]), np.array([2, 3])]
    times = np.array([0.0, 29.5, 30.0, 61.0, 62.0, 100.0])
    trace = run_ad_lda(corpus, shards, n_topics=2, alpha=0.5, beta=0.5, cost=HAND_COST,
                       speed_factors=np.array([1.0, 0.5]), evaluation_times=times,
                       n_replicates=2, seed=8)
    assert trace.updates.tolist() == [0, 0, 2, 2, 4, 6]
    assert trace.finished == 126.0
    initial = GibbsState.initial(corpus, 2, 2, seed=8)
    assert np.array_equal(trace.topics[0], topics_from_counts(initial.n_kw, 0.5))
    assert np.array_equal(trace.topics[1], trace.topics[0])
    assert np.array_equal(trace.topics[3], trace.topics[2])
    assert not np.array_equal(trace.topics[2], trace.topics[1])
    swapped = run_ad_lda(corpus, shards, n_topics=2, alpha=0.5, beta=0.5, cost=HAND_COST,
                         speed_factors=np.array([0.5, 1.0]), evaluation_times=times,
                         n_replicates=2, seed=8)
    assert swapped.updates.tolist() == trace.updates.tolist()
    assert swapped.finished == 126.0


def test_async_lda_merge_order_by_hand():
    # Sweeps of 10 (worker 0) and 25 (worker 1), messages of 2, additions of 4 at the master.
    # Worker 0: sweep 0–10, delta in at 12, merged at 16. Worker 1: in at 27, merged at 31.
    # Worker 0 again: starts 18, in at 30, waits for the master until 31, merged at 35; then
    # starts 37, in at 49, merged 53. Worker 1: starts 33, in at 60, merged 64. Next: worker
    # 0 at 71. The fast worker merges twice between the slow one's merges.
    workers, times, finished = async_lda_syncs(np.array([10.0, 25.0]), 2.0, 4.0, 64.0)
    assert workers.tolist() == [0, 1, 0, 0, 1]
    assert times.tolist() == [16.0, 31.0, 35.0, 53.0, 64.0]
    assert finished == 71.0
    # Equal sweeps: the deltas arrive together at 12; worker 0 goes first (index), worker 1
    # waits until 16 and is merged at 20. Next: worker 0 in at 30, merged at 34.
    workers, times, finished = async_lda_syncs(np.array([10.0, 10.0]), 2.0, 4.0, 20.0)
    assert workers.tolist() == [0, 1] and times.tolist() == [16.0, 20.0]
    assert finished == 34.0


def test_async_lda_merges_are_y_ldas_update():
    # The schedule of test_async_lda_merge_order_by_hand from the cost model: worker 0 holds
    # 10 tokens, worker 1 25, both at speed 1. Replayed with the update as seed 004 §4.2(b)
    # writes it, n_kw ← n_kw + (ñ^s − n^s), on copies.
    corpus = uniform_corpus(7, 5, 4, seed=9)
    shards = [np.array([0, 1]), np.array([2, 3, 4, 5, 6])]
    times = np.array([15.0, 16.0, 34.0, 35.0, 52.0, 64.0])
    alpha, beta, n_replicates = 0.5, 0.3, 2
    trace = run_async_lda(corpus, shards, n_topics=2, alpha=alpha, beta=beta, cost=HAND_COST,
                          speed_factors=np.ones(2), evaluation_times=times,
                          n_replicates=n_replicates, seed=10)
    assert trace.updates.tolist() == [0, 1, 2, 3, 3, 5]
    assert trace.finished == 71.0

    state = GibbsState.initial(corpus, 2, n_replicates, seed=10)
    streams = [sweep_streams(10, s, n_replicates) for s in range(2)]
    global_kw = state.n_kw.copy()
    copies = [(state.n_kw.copy(), state.n_k.copy()) for _ in shards]
    at_sync = [state.n_kw.copy() for _ in shards]
    replayed = [topics_from_counts(global_kw, beta)]
    for s in [0, 1, 0, 0, 1]:
        n_kw, n_k = copies[s]
        state.sweep(corpus, shards[s], alpha, beta, sweep_uniforms(streams[s], 5 * len(shards[s])),
                    n_kw, n_k)
        global_kw += n_kw - at_sync[s]
        copies[s] = (global_kw.copy(), global_kw.sum(axis=2))
        at_sync[s] = global_kw.copy()
        replayed.append(topics_from_counts(global_kw, beta))
    for e, merged in enumerate(trace.updates):
        assert np.array_equal(trace.topics[e], replayed[merged]), e


@pytest.mark.parametrize("speed", [1.0, 0.25])
def test_async_lda_with_one_worker_is_ad_lda_with_one_worker(speed):
    corpus = uniform_corpus(10, 6, 8, seed=11)
    settings = dict(cost=CostModel(), speed_factors=np.array([speed]),
                    evaluation_times=np.linspace(0.0, 2000.0, 13), **SERIAL_SETTINGS)
    shards = [np.array([3, 1, 4, 0, 5, 9, 2, 6, 8, 7])]
    ad_lda = run_ad_lda(corpus, shards, **settings)
    assert_same_trace(ad_lda, run_async_lda(corpus, shards, **settings))
    assert ad_lda.updates[-1] >= 3


def synthetic_corpus():
    """K = 3 topics over W = 30 words drawn from Dirichlet(0.1), 200 documents of 40 tokens
    with proportions from Dirichlet(0.2): the topics, the proportions and the corpus."""
    rng = generator(21, "test-count-baselines-synthetic")
    topics = rng.dirichlet(np.full(30, 0.1), size=3)
    proportions = rng.dirichlet(np.full(3, 0.2), size=200)
    words = np.concatenate([rng.choice(30, size=40, p=theta @ topics) for theta in proportions])
    return topics, proportions, Corpus(words, np.arange(201) * 40, 30)


@pytest.mark.parametrize("runner", [run_ad_lda, run_async_lda])
def test_count_baselines_recover_synthetic_topics(runner):
    topics, proportions, corpus = synthetic_corpus()
    shards = np.array_split(np.arange(200), 4)
    sweep = CostModel().gibbs_sweep(2000)  # a shard's sweep at speed 1
    trace = runner(corpus, shards, n_topics=3, alpha=0.2, beta=0.1, cost=CostModel(),
                   speed_factors=np.array([1.0, 1.0, 1.0, 0.5]),
                   evaluation_times=np.array([0.0, 60 * sweep]), n_replicates=2, seed=22)

    def log_likelihood(estimate):
        """Training tokens' log likelihood under the true proportions and the topics."""
        return sum(np.log(theta @ estimate[:, corpus.document(d)]).sum()
                   for d, theta in enumerate(proportions))

    truth = log_likelihood(topics)
    # the largest multinomial standard error of a topic-word frequency: a topic's expected
    # tokens n_k = 40 Σ_d θ_dk (2,300 to 3,000), over its word probabilities
    n_k = 40 * proportions.sum(axis=0)
    error = np.sqrt((topics * (1 - topics) / n_k[:, None]).max())
    for r in range(2):
        distance = np.abs(trace.topics[-1, r][:, None, :] - topics[None]).sum(axis=2)
        rows, columns = linear_sum_assignment(distance)
        matched = np.empty_like(topics)
        matched[columns] = trace.topics[-1, r][rows]
        # every entry within z = 4 of those errors (the assignments of mixed documents add
        # some spread; observed at most 2.5)
        assert np.abs(matched - topics).max() < 4 * error
        start, end = log_likelihood(trace.topics[0, r]), log_likelihood(matched)
        # from about 0.48 nats a token below the truth's to within 0.005 of it (observed
        # 0.002 above: the topics are fitted to these tokens)
        assert (truth - start) / corpus.n_tokens > 0.3
        assert abs(end - truth) / corpus.n_tokens < 0.005
