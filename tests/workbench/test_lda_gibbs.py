"""Collapsed Gibbs for LDA (workbench/systems/topics/gibbs.py): the conditional by hand, the
count invariants, recovery of two known topics, replicate streams and refusals."""

import numpy as np
import pytest

from simulators.seeding import generator
from simulators.validation import InvalidParameter
from workbench.data.corpus import Corpus
from workbench.systems.topics.cost import CostModel
from workbench.systems.topics.gibbs import (
    GibbsState,
    run_collapsed_gibbs,
    sweep_streams,
    sweep_uniforms,
    topics_from_counts,
)


def corpus_of(documents, vocabulary_size):
    lengths = [len(document) for document in documents]
    return Corpus(np.concatenate(documents), np.concatenate(([0], np.cumsum(lengths))),
                  vocabulary_size)


def random_corpus(rng, n_documents, vocabulary_size, max_length):
    return corpus_of([rng.integers(vocabulary_size, size=rng.integers(1, max_length + 1))
                      for _ in range(n_documents)], vocabulary_size)


def counts_of(corpus, z, n_topics):
    """n_dk, n_kw, n_k of assignments z (R, N), by numpy (independent of the kernels)."""
    n_replicates = z.shape[0]
    documents = np.repeat(np.arange(corpus.n_documents), np.diff(corpus.offsets))
    n_dk = np.zeros((n_replicates, corpus.n_documents, n_topics), dtype=np.int64)
    n_kw = np.zeros((n_replicates, n_topics, corpus.vocabulary_size), dtype=np.int64)
    for r in range(n_replicates):
        np.add.at(n_dk[r], (documents, z[r]), 1)
        np.add.at(n_kw[r], (z[r], corpus.words), 1)
    return n_dk, n_kw, n_kw.sum(axis=2)


@pytest.mark.parametrize("start", [0, 1])
@pytest.mark.parametrize(("uniform", "expected"), [(25 / 28 - 1e-9, 0), (25 / 28 + 1e-9, 1)])
def test_one_token_conditional_by_hand(start, uniform, expected):
    # Document 0 is one token of word 0; document 1 holds word 0 in topic 0 and word 1 twice
    # in topic 1. Without the token: n_0w0 = 1, n_1w0 = 0, n_k = (1, 2), n_dk = (0, 0); with
    # α = 0.5, β = 0.25, W = 2: p(0) ∝ 0.5 · 1.25/1.5, p(1) ∝ 0.5 · 0.25/2.5, so
    # p(0) = (5/6)/(5/6 + 1/10) = 25/28, whatever topic the token held before.
    corpus = corpus_of([np.array([0]), np.array([0, 1, 1])], 2)
    state = GibbsState.of_assignments(corpus, np.array([[start, 0, 1, 1]]), 2)
    state.sweep(corpus, np.array([0]), 0.5, 0.25, np.array([[uniform]]), state.n_kw, state.n_k)
    assert state.z.tolist() == [[expected, 0, 1, 1]]
    assert state.n_kw.tolist() == [[[1 + (expected == 0), 0], [expected == 1, 2]]]
    assert state.n_k.tolist() == [[1 + (expected == 0), 2 + (expected == 1)]]
    assert state.n_dk[0, 0].tolist() == [expected == 0, expected == 1]


def test_sweep_follows_the_conditional_token_by_token():
    # A plain-Python sampler of Griffiths & Steyvers' Eq. 5 on a random state, token by token
    # through two documents of several tokens (so n_dk^¬i matters), against the kernel.
    rng = generator(5, "test-gibbs-conditional")
    corpus = random_corpus(rng, 6, 7, 9)
    n_topics, alpha, beta = 3, 0.3, 0.2
    z = rng.integers(n_topics, size=(1, corpus.n_tokens))
    documents = np.array([4, 1])
    n_sweep = int(np.diff(corpus.offsets)[documents].sum())
    uniforms = rng.random((1, n_sweep))
    state = GibbsState.of_assignments(corpus, z, n_topics)
    state.sweep(corpus, documents, alpha, beta, uniforms, state.n_kw, state.n_k)

    expected = z[0].copy()
    j = 0
    for d in documents:
        for i in range(corpus.offsets[d], corpus.offsets[d + 1]):
            others = np.ones(corpus.n_tokens, dtype=bool)
            others[i] = False
            in_document = others & (np.arange(corpus.n_tokens) >= corpus.offsets[d]) \
                & (np.arange(corpus.n_tokens) < corpus.offsets[d + 1])
            weights = [(np.sum(in_document & (expected == k)) + alpha)
                       * (np.sum(others & (expected == k) & (corpus.words == corpus.words[i]))
                          + beta)
                       / (np.sum(others & (expected == k)) + corpus.vocabulary_size * beta)
                       for k in range(n_topics)]
            probabilities = np.array(weights) / sum(weights)
            expected[i] = int(np.searchsorted(np.cumsum(probabilities), uniforms[0, j],
                                              side="right"))
            j += 1
    assert np.array_equal(state.z[0], expected)


def test_counts_stay_consistent_with_assignments():
    rng = generator(6, "test-gibbs-invariants")
    corpus = random_corpus(rng, 30, 11, 12)
    n_topics, n_replicates = 4, 3
    state = GibbsState.initial(corpus, n_topics, n_replicates, seed=8)
    streams = sweep_streams(8, 0, n_replicates)
    shard = np.array([3, 17, 0, 29, 11])  # a subset, in its own order
    for documents in (np.arange(corpus.n_documents), shard, np.arange(corpus.n_documents)):
        tokens = int(np.diff(corpus.offsets)[documents].sum())
        state.sweep(corpus, documents, 0.1, 0.05, sweep_uniforms(streams, tokens),
                    state.n_kw, state.n_k)
        n_dk, n_kw, n_k = counts_of(corpus, state.z, n_topics)
        assert np.array_equal(state.n_dk, n_dk)
        assert np.array_equal(state.n_kw, n_kw)
        assert np.array_equal(state.n_k, n_k)
        assert (state.n_kw.sum(axis=(1, 2)) == corpus.n_tokens).all()
        assert (state.n_dk.sum(axis=2) == np.diff(corpus.offsets)).all()
    assert state.z.min() >= 0 and state.z.max() < n_topics


def test_sweep_against_a_local_copy_leaves_the_given_counts_alone():
    rng = generator(7, "test-gibbs-local")
    corpus = random_corpus(rng, 10, 6, 8)
    state = GibbsState.initial(corpus, 3, 2, seed=9)
    global_kw = state.n_kw.copy()
    n_kw, n_k = state.n_kw.copy(), state.n_k.copy()
    documents = np.array([2, 5])
    tokens = int(np.diff(corpus.offsets)[documents].sum())
    state.sweep(corpus, documents, 0.1, 0.05, rng.random((2, tokens)), n_kw, n_k)
    assert np.array_equal(state.n_kw, global_kw)
    assert np.array_equal(n_kw, counts_of(corpus, state.z, 3)[1])
    assert np.array_equal(n_k, n_kw.sum(axis=2))


def test_topics_from_counts():
    n_kw = np.array([[[3, 0, 1], [0, 0, 0]]])
    topics = topics_from_counts(n_kw, 0.5)
    assert np.allclose(topics, [[[3.5 / 5.5, 0.5 / 5.5, 1.5 / 5.5], [1 / 3, 1 / 3, 1 / 3]]],
                       rtol=0, atol=1e-15)
    assert np.allclose(topics.sum(axis=-1), 1.0, rtol=0, atol=1e-15)


def two_topic_corpus(n_documents=60, length=25, half=10, seed=11):
    """Documents alternately from topic 0 (uniform over words 0..half-1) and topic 1 (uniform
    over half..2·half-1)."""
    rng = generator(seed, "test-gibbs-two-topics")
    documents = [rng.integers(half, size=length) + half * (d % 2) for d in range(n_documents)]
    return corpus_of(documents, 2 * half)


def test_collapsed_gibbs_recovers_two_topics():
    corpus = two_topic_corpus()
    cost = CostModel()
    sweep = cost.gibbs_sweep(corpus.n_tokens)
    trace = run_collapsed_gibbs(corpus, [np.arange(corpus.n_documents)], n_topics=2,
                                alpha=0.1, beta=0.01, cost=cost, speed_factors=np.ones(1),
                                evaluation_times=np.array([30 * sweep]), n_replicates=3,
                                seed=12)
    assert trace.updates.tolist() == [30] and trace.finished == 31 * sweep
    counts = np.zeros((2, corpus.vocabulary_size))
    for d in range(corpus.n_documents):
        np.add.at(counts[d % 2], corpus.document(d), 1)
    for topics in trace.topics[-1]:
        first = int(np.argmax(topics[:, 0]))  # the topic holding word 0: label matching
        matched = topics[[first, 1 - first]]
        # every token in its true topic: the counts of each half, exactly (rounding only)
        exact = (counts + 0.01) / (counts.sum(axis=1, keepdims=True) + 20 * 0.01)
        assert np.allclose(matched, exact, rtol=1e-12, atol=0)
        # and the truth, uniform 1/10 on its half, within z = 5 standard errors of the corpus's
        # multinomial word counts (750 tokens per topic)
        truth = np.repeat(np.eye(2), 10, axis=1) / 10
        assert np.abs(matched - truth).max() < 5 * np.sqrt(0.1 * 0.9 / 750)


def test_replicates_are_a_prefix_of_more_replicates():
    corpus = two_topic_corpus(n_documents=20, length=10)
    settings = dict(n_topics=3, alpha=0.1, beta=0.01, cost=CostModel(),
                    speed_factors=np.array([2.0]),
                    evaluation_times=np.array([10.0, 250.0, 600.0]), seed=13)
    shards = [np.arange(20)]
    two = run_collapsed_gibbs(corpus, shards, n_replicates=2, **settings)
    four = run_collapsed_gibbs(corpus, shards, n_replicates=4, **settings)
    assert np.array_equal(two.topics, four.topics[:, :2])
    assert np.array_equal(two.updates, four.updates)
    assert two.updates.tolist() == [0, 2, 6]  # a sweep takes 200 tokens / speed 2 = 100
    assert two.finished == four.finished == 700.0
    assert not np.array_equal(four.topics[-1, 2], four.topics[-1, 3])
    initial = GibbsState.initial(corpus, 3, 4, seed=13)
    assert np.array_equal(GibbsState.initial(corpus, 3, 2, seed=13).z, initial.z[:2])
    assert np.array_equal(two.topics[0], topics_from_counts(initial.n_kw[:2], 0.01))


@pytest.mark.parametrize(("field", "changes"), [
    ("alpha", {"alpha": 0.0}), ("alpha", {"alpha": -1.0}),
    ("beta", {"beta": 0.0}), ("beta", {"beta": -0.5}),
    ("n_topics", {"n_topics": 1}), ("n_replicates", {"n_replicates": 0}),
    ("shards", {"shards": [np.arange(5)]}),
    ("shards", {"shards": [np.arange(6), np.array([5])]}),
    ("shards", {"shards": [np.arange(6), np.array([], dtype=np.int64)]}),
    ("speed_factors", {"speed_factors": np.array([0.0])}),
    ("speed_factors", {"speed_factors": np.ones(2)}),
    ("evaluation_times", {"evaluation_times": np.array([5.0, 5.0])}),
    ("evaluation_times", {"evaluation_times": np.array([-1.0])}),
    ("evaluation_times", {"evaluation_times": np.array([])}),
    ("training", {"training": np.arange(6)}),
    ("cost", {"cost": None}),
])
def test_refusals_name_the_field(field, changes):
    arguments = dict(training=two_topic_corpus(n_documents=6, length=3),
                     shards=[np.arange(6)], n_topics=2, alpha=0.1, beta=0.1,
                     cost=CostModel(), speed_factors=np.ones(1),
                     evaluation_times=np.array([1.0]), n_replicates=1, seed=0)
    arguments.update(changes)
    training, shards = arguments.pop("training"), arguments.pop("shards")
    with pytest.raises(InvalidParameter) as refused:
        run_collapsed_gibbs(training, shards, **arguments)
    assert refused.value.field == field
