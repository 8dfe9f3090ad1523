"""D-SGLD and SGRLD runners for LDA on simulated workers (seed 004 §4.2;
workbench/systems/topics/dsgld.py)."""

from __future__ import annotations

import numpy as np
import pytest

from simulators.seeding import generator
from simulators.validation import InvalidParameter
from workbench.data.corpus import Corpus, generate_corpus, shard_documents, split_held_out
from workbench.models import lda
from workbench.systems.topics.cost import CostModel
from workbench.systems.topics.dsgld import run_dsgld, run_sgrld, trajectory_plan

# Tiny timing case: documents of 3 tokens, minibatches of 1, 2 sweeps, K = 2, W = 5. A step
# costs 3 (2 · 1 + 1) + 2 · 5 · 0.1 = 10 on worker 0 (speed 1) and 20 on worker 1 (speed 0.5);
# a message costs 2 · 5 · 0.5 = 5.
TINY = Corpus(np.array([0, 1, 2, 3, 4, 0, 1, 1, 2, 4, 4, 3]), np.arange(5) * 3, 5)
TINY_COST = CostModel(gibbs_token=1.0, sgrld_token=1.0, topic_entry=0.1, message_entry=0.5)
TINY_SHARDS = [np.array([0, 1]), np.array([2, 3])]
TINY_SETTINGS = dict(n_topics=2, alpha=0.5, beta=0.1, cost=TINY_COST,
                     speed_factors=np.array([1.0, 0.5]), n_replicates=1, seed=3,
                     batch_documents=1, n_sweeps=2, step_a=0.01)


def _tiny(times, **settings):
    return run_dsgld(TINY, TINY_SHARDS, evaluation_times=np.array(times, dtype=float),
                     **{**TINY_SETTINGS, **settings})


def test_one_worker_with_unit_trajectories_is_sgrld_bit_for_bit():
    """Documents of unequal lengths (so replicates' times differ) and a shard out of order."""
    rng = generator(0, "test-corpus")
    lengths = rng.integers(5, 15, size=60)
    corpus = Corpus(rng.integers(0, 30, size=lengths.sum()),
                    np.concatenate(([0], np.cumsum(lengths))), 30)
    shards = [rng.permutation(60)]
    cost = CostModel()
    times = np.linspace(0.0, 25 * cost.sgrld_step(8 * 10, 4, 3, 30), 9)
    settings = dict(n_topics=3, alpha=0.2, beta=0.05, cost=cost, speed_factors=np.array([0.8]),
                    evaluation_times=times, n_replicates=3, seed=11, batch_documents=8,
                    n_sweeps=4, step_a=0.02)
    sgrld = run_sgrld(corpus, shards, **settings)
    dsgld = run_dsgld(corpus, shards, trajectory_length=1, groups=(1,), **settings)
    assert np.array_equal(sgrld.topics, dsgld.topics)
    assert np.array_equal(sgrld.updates, dsgld.updates) and sgrld.finished == dsgld.finished
    assert sgrld.updates[-1] >= 20  # two of run_sgrld's blocks of 10 steps
    assert not np.array_equal(sgrld.topics[-1, 0], sgrld.topics[-1, 1])


def test_independent_chains_times_by_hand():
    """D-CI, τ = 2. Chain 0: steps at 10, 20 on worker 0; hop (+5) arrives at 25 but worker 1
    is busy with chain 1 until 40 (its steps at 20, 40): steps at 60, 80; back on worker 0 at
    85 (chain 1 ran there from 45 to 65): steps at 95, 105."""
    times = [5, 15, 25, 59, 61, 79, 81, 94, 96]
    trace = _tiny(times, trajectory_length=2, groups=(1, 1))
    assert trace.updates.tolist() == [0, 1, 2, 2, 3, 3, 4, 4, 5]
    assert trace.finished == 105.0
    assert np.array_equal(trace.times, times)


def test_complete_coupling_times_by_hand_and_equal_chains_after_averaging():
    """D-CC, τ = 2. Round 0: chain 0 steps at 10, 20, chain 1 at 20, 40 (slow worker); the
    average is back at 40 + 2 · 5 = 50; both hop (+5). Round 1 from 55: chain 0 on worker 1
    at 75, 95, chain 1 on worker 0 at 65, 75; averaged at 105; round 2 from 110: 120, 130."""
    times = [15, 21, 49, 51, 54, 56, 76, 96, 104, 106, 121]
    chain0 = _tiny(times, trajectory_length=2, groups=(2,))
    chain1 = _tiny(times, trajectory_length=2, groups=(2,), recorded_chain=1)
    assert chain0.updates.tolist() == [1, 2, 2, 2, 2, 2, 3, 4, 4, 4, 5]
    assert chain0.finished == 130.0
    topics0, topics1 = chain0.topics[:, 0], chain1.topics[:, 0]
    assert not np.array_equal(topics0[2], topics0[3])  # the averaging at 50
    assert np.array_equal(topics0[3], topics0[4])  # nothing between 51 and 54
    for e in (3, 4, 5, 9):  # after an averaging, before the next step: the chains are equal
        assert np.array_equal(topics0[e], topics1[e])
    for e in (0, 1, 2, 6, 7, 8):  # mid-trajectory they are not
        assert not np.array_equal(topics0[e], topics1[e])
    independent = _tiny(times, trajectory_length=2, groups=(1, 1), recorded_chain=1)
    assert not np.array_equal(_tiny(times, trajectory_length=2, groups=(1, 1)).topics[3],
                              independent.topics[3])


def test_adaptive_balancing_gives_the_slow_worker_shorter_trajectories():
    """τ_s = round(q_s τ̄ S), q ∝ speed (2/3, 1/3), τ̄ = 10: (13, 7). Chain 0: 13 steps on
    worker 0 (10 … 130); worker 1 is busy with chain 1 (7 steps of 20) until 140, so 7 steps
    there at 160 … 280; back on worker 0 at 285 (chain 1 left it at 275): 295, …"""
    assert trajectory_plan([1.0, 0.5], 10, "adaptive").tolist() == [13, 7]
    assert trajectory_plan([1.0, 0.5], 10, "fixed").tolist() == [10, 10]
    times = [129, 131, 159, 161, 279, 281, 294, 296]
    trace = _tiny(times, trajectory_length=10, groups=(1, 1), balancing="adaptive")
    assert trace.updates.tolist() == [12, 13, 13, 14, 19, 20, 20, 21]
    assert trace.finished == 305.0


def test_replicates_are_prefix_stable():
    settings = dict(evaluation_times=[35.0, 95.0], trajectory_length=2, groups=(2, 2),
                    speed_factors=np.ones(4), batch_documents=2)
    shards = shard_documents(12, 4, seed=1)
    corpus = generate_corpus(n_topics=2, vocabulary_size=5, n_documents=12, n_held_out=1,
                             document_length=3, alpha=0.5, topic_concentration=0.1,
                             seed=2).training
    three = run_dsgld(corpus, shards, **{**TINY_SETTINGS, **settings, "n_replicates": 3})
    two = run_dsgld(corpus, shards, **{**TINY_SETTINGS, **settings, "n_replicates": 2})
    assert np.array_equal(three.topics[:, :2], two.topics)
    assert not np.array_equal(three.topics[:, 1], three.topics[:, 2])


@pytest.fixture(scope="module")
def synthetic():
    corpus = generate_corpus(n_topics=5, vocabulary_size=100, n_documents=500, n_held_out=200,
                             document_length=50, alpha=0.5, topic_concentration=0.05, seed=1)
    split = split_held_out(corpus.held_out, seed=2)
    return corpus, split, lda.perplexity(corpus.topics, split, alpha=0.5, n_sweeps=10, seed=3)


@pytest.mark.parametrize("groups", [None, (5,), (1,) * 5, (2, 3)],
                         ids=["sgrld", "d-cc", "d-ci", "d-hybrid"])
def test_samplers_reach_the_true_topics_perplexity(synthetic, groups):
    """K = 5, W = 100, 500 documents of 50 tokens (α = 0.5), 5 workers: after the time of
    400 SGRLD steps (batch 20, 10 sweeps, ε_t = 0.005 (1 + t/1000)^-0.6) every replicate's
    held-out perplexity is within 5 % of the true topics' (the same Gibbs uniforms); the
    initial random topics are not (negative control)."""
    corpus, split, true = synthetic
    cost = CostModel()
    settings = dict(n_topics=5, alpha=0.5, beta=0.01, cost=cost, speed_factors=np.ones(5),
                    evaluation_times=np.array([0.0, 400 * cost.sgrld_step(20 * 50, 10, 5, 100)]),
                    n_replicates=2, seed=5, batch_documents=20, n_sweeps=10, step_a=0.005)
    shards = shard_documents(500, 5, seed=0)
    trace = (run_sgrld(corpus.training, shards, **settings) if groups is None
             else run_dsgld(corpus.training, shards, groups=groups, **settings))
    initial = lda.perplexity(trace.topics[0], split, alpha=0.5, n_sweeps=10, seed=3)
    final = lda.perplexity(trace.topics[1], split, alpha=0.5, n_sweeps=10, seed=3)
    assert (initial / true > 1.5).all()
    assert (final / true <= 1.05).all()


@pytest.mark.parametrize(("changes", "field"), [
    (dict(groups=(1, 2)), "groups"),
    (dict(speed_factors=np.ones(3)), "speed_factors"),
    (dict(speed_factors=np.array([1.0, 0.0])), "speed_factors"),
    (dict(batch_documents=3), "batch_documents"),
    (dict(evaluation_times=[5.0, 5.0]), "evaluation_times"),
    (dict(evaluation_times=[-1.0]), "evaluation_times"),
    (dict(recorded_chain=2), "recorded_chain"),
    (dict(balancing="greedy"), "balancing"),
    (dict(trajectory_length=0), "trajectory_length"),
    (dict(n_topics=1), "n_topics"),
    (dict(alpha=0.0), "alpha"),
    (dict(beta=0.0), "beta"),
    (dict(n_replicates=0), "n_replicates"),
    (dict(step_a=0.0), "step_a"),
    (dict(cost=None), "cost"),
])
def test_refusals(changes, field):
    settings = {**TINY_SETTINGS, "evaluation_times": [1.0], **changes}
    with pytest.raises(InvalidParameter) as error:
        run_dsgld(TINY, TINY_SHARDS, **settings)
    assert error.value.field == field


def test_shards_must_partition_the_training_documents():
    for shards in ([np.array([0, 1]), np.array([2])], [np.array([0, 1, 2]), np.array([2, 3])],
                   [np.array([0, 1, 2, 3]), np.array([], dtype=np.int64)]):
        with pytest.raises(InvalidParameter) as error:
            run_sgrld(TINY, shards, **{**TINY_SETTINGS, "evaluation_times": [1.0]})
        assert error.value.field == "shards"
