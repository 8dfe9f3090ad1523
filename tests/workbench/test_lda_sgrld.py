"""SGRLD for LDA in the expanded-mean parametrisation (Patterson & Teh 2013; seed 004 Eq. 7),
its Gibbs expectations and document-completion perplexity (workbench/models/lda.py)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from simulators.seeding import generator
from simulators.validation import InvalidParameter
from workbench.data.corpus import Corpus, HeldOutSplit, generate_corpus, split_held_out
from workbench.models import lda
from workbench.systems.topics.cost import CostModel
from workbench.systems.topics.dsgld import run_sgrld

# θ with disjoint supports: words 0, 1 belong to topic 0 only, word 2 to topic 1 only, so a
# token's topic is determined by its word whatever the uniforms
THETA = np.array([[[2.0, 1.0, 0.0], [0.0, 0.0, 3.0]]])
DOCUMENT = Corpus(np.array([0, 1, 2, 2]), np.array([0, 4]), 3)


def _uniforms(n_sweeps: int, n_tokens: int, rows: int = 1, seed: int = 0):
    rng = generator(seed, "test-uniforms")
    return [rng.random((n_sweeps + 1, n_tokens)) for _ in range(rows)]


def test_expected_counts_where_the_topics_are_determined():
    expected = lda.expected_counts(lda.topics_of(THETA), DOCUMENT, np.array([[0]]), alpha=0.3,
                                   n_sweeps=5, uniforms=_uniforms(5, 4))
    assert np.array_equal(expected, [[[1.0, 1.0, 0.0], [0.0, 0.0, 2.0]]])


@pytest.mark.parametrize(("step", "theta_after"), [
    # hand computation: π_0 = (2/3, 1/3, 0), π_1 = (0, 0, 1), E[n_kw] as above, n_d0 = n_d1 = 2,
    # so E[n_dkw - π_kw n_dk] = ((-1/3, 1/3, 0), (0, 0, 0)); s = N/n = 10, β = 0.5:
    # θ + (ε/2)(β - θ + s g) with ε = 0.1: 2 + 0.05 (0.5 - 2 - 10/3) = 1.7583…,
    # 1 + 0.05 (0.5 - 1 + 10/3) = 1.1416…, 0 + 0.05 · 0.5 = 0.025; 3 + 0.05 (0.5 - 3) = 2.875
    (0.1, [[2 - 0.05 * (1.5 + 10 / 3), 1 + 0.05 * (10 / 3 - 0.5), 0.025],
           [0.025, 0.025, 2.875]]),
    # ε = 1: 2 + 0.5 (0.5 - 2 - 10/3) = -0.4166… is mirrored to 0.4166…
    (1.0, [[abs(2 - 0.5 * (1.5 + 10 / 3)), 1 + 0.5 * (10 / 3 - 0.5), 0.25],
           [0.25, 0.25, 3 - 0.5 * 2.5]]),
])
def test_sgrld_step_by_hand_without_noise(step, theta_after):
    expected = lda.expected_counts(lda.topics_of(THETA), DOCUMENT, np.array([[0]]), alpha=0.3,
                                   n_sweeps=3, uniforms=_uniforms(3, 4))
    updated = lda.sgrld_step(THETA, expected, 10.0, step, 0.5, np.zeros_like(THETA))
    np.testing.assert_allclose(updated[0], theta_after, rtol=1e-14, atol=1e-15)


def test_sgrld_noise_is_sqrt_of_step_times_theta():
    """With a zero drift (θ = β, expected counts proportional to π) only the noise moves θ:
    θ' = |θ + (ε θ)^{1/2} ξ|."""
    theta = np.full((1, 2, 3), 0.5)
    expected = np.zeros((1, 2, 3))
    normals = np.array([[[0.3, -0.2, 1.0], [0.0, 2.0, -0.1]]])
    updated = lda.sgrld_step(theta, expected, 7.0, 0.04, 0.5, normals)
    np.testing.assert_allclose(updated, np.abs(0.5 + np.sqrt(0.04 * 0.5) * normals),
                               rtol=1e-15)


def _exact_expectation(pi: np.ndarray, words: list[int], alpha: float) -> np.ndarray:
    """E[n_kw] under p(z | w, π, α) ∝ Π_i π_{z_i w_i} Π_k Γ(α + n_k) (the document's
    Dirichlet-multinomial), by enumerating the K^n assignments."""
    n_topics, size = pi.shape
    total, moments = 0.0, np.zeros((n_topics, size))
    for z in itertools.product(range(n_topics), repeat=len(words)):
        counts = np.bincount(z, minlength=n_topics)
        weight = math.prod(pi[k, w] for k, w in zip(z, words, strict=True)) * math.prod(
            math.gamma(alpha + c) for c in counts)
        total += weight
        for k, w in zip(z, words, strict=True):
            moments[k, w] += weight
    return moments / total


def test_gibbs_expectations_match_exact_enumeration():
    """3 tokens, K = 3: M = 4000 independent rows (their own uniforms) each average the kept
    sweeps; the mean over rows within z = 4 standard errors (the rows' spread / √M) of the
    enumeration, every entry (9 entries with mass: family-wise level about 6e-4)."""
    pi = np.array([[0.6, 0.3, 0.1], [0.1, 0.2, 0.7], [0.3, 0.4, 0.3]])
    words, alpha, rows, n_sweeps = [0, 1, 2], 0.4, 4000, 20
    corpus = Corpus(np.array(words), np.array([0, 3]), 3)
    estimates = lda.expected_counts(np.broadcast_to(pi, (rows, 3, 3)), corpus,
                                    np.zeros((rows, 1), dtype=np.int64), alpha=alpha,
                                    n_sweeps=n_sweeps, uniforms=_uniforms(n_sweeps, 3, rows))
    exact = _exact_expectation(pi, words, alpha)
    error = np.abs(estimates.mean(axis=0) - exact)
    assert (error <= 4 * estimates.std(axis=0, ddof=1) / np.sqrt(rows)).all()
    np.testing.assert_allclose(estimates.sum(axis=(1, 2)), 3.0)  # every token counted once


def test_perplexity_by_hand():
    """Observed tokens (0, 0, 2) have determined topics (0, 0, 1), so n̄_d = (2, 1) and
    θ_d = ((0.5 + 2)/(3 + 1), (0.5 + 1)/(3 + 1)) = (0.625, 0.375); the predicted token is word
    1 with probability 0.625 · 0.5 + 0.375 · 0.2 = 0.3875, the perplexity 1/0.3875."""
    topics = np.array([[0.5, 0.5, 0.0], [0.0, 0.2, 0.8]])
    split = HeldOutSplit(Corpus(np.array([0, 0, 2]), np.array([0, 3]), 3),
                         Corpus(np.array([1]), np.array([0, 1]), 3))
    value = lda.perplexity(topics, split, alpha=0.5, n_sweeps=4, seed=0)
    assert value == pytest.approx(1 / 0.3875, rel=1e-14)


@pytest.fixture(scope="module")
def synthetic():
    corpus = generate_corpus(n_topics=5, vocabulary_size=100, n_documents=200, n_held_out=200,
                             document_length=50, alpha=0.1, topic_concentration=0.05, seed=1)
    return corpus, split_held_out(corpus.held_out, seed=2)


def test_true_topics_beat_random_topics(synthetic):
    corpus, split = synthetic
    random = lda.topics_of(lda.initial_theta(3, 5, 100, seed=4))
    true = lda.perplexity(corpus.topics, split, alpha=0.1, n_sweeps=10, seed=3)
    values = lda.perplexity(random, split, alpha=0.1, n_sweeps=10, seed=3)
    assert values.shape == (3,) and (values > 2 * true).all()
    # rows share their uniforms: a row's value does not depend on the others, and it is
    # deterministic given the seed
    both = lda.perplexity(np.concatenate((corpus.topics[None], random)), split, alpha=0.1,
                          n_sweeps=10, seed=3)
    assert both[0] == true and np.array_equal(both[1:], values)


def test_step_size_schedule():
    assert lda.step_size(0, 0.01) == 0.01
    assert lda.step_size(1000, 1.0, 1000, 0.6) == pytest.approx(2 ** -0.6, rel=1e-15)
    np.testing.assert_allclose(lda.step_size(np.array([0, 500]), 2.0, 500, 1.0), [2.0, 1.0])


def test_initial_theta_is_gamma_and_replicate_prefix_stable():
    theta = lda.initial_theta(4, 3, 5, seed=9)
    assert theta.shape == (4, 3, 5) and (theta > 0).all()
    assert np.array_equal(lda.initial_theta(2, 3, 5, seed=9), theta[:2])
    assert not np.array_equal(lda.initial_theta(2, 3, 5, seed=9, chain=1), theta[:2])


def test_refusals():
    pi = lda.topics_of(THETA)
    uniforms = _uniforms(2, 4)
    with pytest.raises(InvalidParameter) as error:
        lda.expected_counts(pi, DOCUMENT, np.array([[0]]), alpha=0.0, n_sweeps=2,
                            uniforms=uniforms)
    assert error.value.field == "alpha"
    with pytest.raises(InvalidParameter) as error:
        lda.expected_counts(pi, DOCUMENT, np.array([[0]]), alpha=0.1, n_sweeps=2,
                            uniforms=_uniforms(2, 3))
    assert error.value.field == "uniforms"
    with pytest.raises(InvalidParameter) as error:
        lda.expected_counts(pi, Corpus(np.array([0]), np.array([0, 1]), 4), np.array([[0]]),
                            alpha=0.1, n_sweeps=2, uniforms=_uniforms(2, 1))
    assert error.value.field == "vocabulary"
    with pytest.raises(InvalidParameter) as error:
        lda.sgrld_step(THETA, np.zeros_like(THETA), 1.0, 0.1, -1.0, np.zeros_like(THETA))
    assert error.value.field == "beta"
    with pytest.raises(InvalidParameter) as error:
        lda.initial_theta(1, 1, 5, seed=0)
    assert error.value.field == "n_topics"
    split = HeldOutSplit(Corpus(np.array([0, 1]), np.array([0, 2]), 3),
                         Corpus(np.array([2]), np.array([0, 1]), 3))
    with pytest.raises(InvalidParameter) as error:
        lda.perplexity(np.full((1, 3), 1 / 3), split, alpha=0.1, n_sweeps=2, seed=0)
    assert error.value.field == "n_topics"
    with pytest.raises(InvalidParameter) as error:
        lda.perplexity(np.full((2, 4), 0.25), split, alpha=0.1, n_sweeps=2, seed=0)
    assert error.value.field == "vocabulary"
    with pytest.raises(InvalidParameter) as error:
        lda.perplexity(np.full((2, 3), 1 / 3), split, alpha=-1.0, n_sweeps=2, seed=0)
    assert error.value.field == "alpha"


def test_sgrld_runner_replicates_are_prefix_stable(synthetic):
    """Replicate r's streams are keyed by r: the first 2 replicates of a run of 3 are those of
    a run of 2, bit for bit."""
    corpus, _ = synthetic
    cost = CostModel()
    step = cost.sgrld_step(10 * 50, 4, 5, 100)
    settings = dict(n_topics=5, alpha=0.1, beta=0.01, cost=cost, speed_factors=np.ones(1),
                    evaluation_times=np.array([0.5, 3.5, 12.5]) * step, seed=6,
                    batch_documents=10, n_sweeps=4, step_a=0.01)
    shards = [np.arange(200)]
    three = run_sgrld(corpus.training, shards, n_replicates=3, **settings)
    two = run_sgrld(corpus.training, shards, n_replicates=2, **settings)
    assert np.array_equal(three.topics[:, :2], two.topics)
    assert not np.array_equal(three.topics[:, 0], three.topics[:, 2])
    assert three.updates.tolist() == [0, 3, 12] and three.finished == 13 * step
    np.testing.assert_allclose(three.topics.sum(axis=-1), 1.0, rtol=1e-12)
