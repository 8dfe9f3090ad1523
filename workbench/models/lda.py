"""Latent Dirichlet allocation sampled by SGRLD in the expanded-mean parametrisation.

Patterson & Teh 2013 ("Stochastic gradient Riemannian Langevin dynamics on the probability
simplex", NIPS 2013, §3–4), as seed 004 (Ahn, Shahbaba & Welling 2014, §4.2, Eq. 7) uses it:

- State: θ_kw ≥ 0 (K topics × W words), with a Gamma(β, 1) prior on every entry, and the
  topics π_kw = θ_kw / θ_k· (θ_k· = Σ_w θ_kw). Here θ carries a leading axis of independent
  rows (replicates, or replicates × chains).
- Mean score of a minibatch of n documents from a corpus of N (seed 004 Eq. 7):
  ḡ(θ_kw) = (1/n) Σ_d E_{z_d | w_d, θ, α}[n_dkw / θ_kw − n_dk / θ_k·]; preconditioned by
  the expanded-mean metric G⁻¹ = diag(θ) it becomes E[n_dkw − π_kw n_dk].
- Update (Patterson & Teh's expanded-mean SGRLD for LDA, mirrored at 0):

      θ_kw ← | θ_kw + (ε/2) (β − θ_kw + s Σ_{d ∈ minibatch} E[n_dkw − π_kw n_dk])
               + (ε θ_kw)^{1/2} ξ_kw |,      ξ_kw ~ N(0, 1),

  with the gradient scale s = N/n (SGRLD; D-SGLD passes N_s/(q_s n), seed 004 §3.2).
  Patterson & Teh write the noise as θ_kw^{1/2} ζ_kw with ζ_kw ~ N(0, ε); the two are equal.
  Since Σ_w E[n_dkw − π_kw n_dk] = 0, the row sums θ_k· only feel the prior and the noise.
- Expectations (:func:`expected_counts`): for each document separately, a collapsed Gibbs
  sampler of its topic assignments z_d given π and α (the document's proportions integrated
  out): p(z_i = k | z_¬i) ∝ (α + n_dk^{¬i}) π_{k,w_i}. The assignments start from
  p(z_i = k) ∝ π_{k,w_i} (one uniform a token), then ``n_sweeps`` sweeps follow (one uniform a
  token each); the first ``n_sweeps // 2`` are discarded as burn-in and the counts after each
  of the others are averaged.
- Step sizes: ε_t = a (1 + t/b)^(−c) (the schedule of Patterson & Teh's experiments; seed 004
  §4.2: b = 1000, c = 0.6).

Held-out evaluation (:func:`perplexity`) is document completion (Wallach et al. 2009, seed 004
§4.2): each held-out document's topic proportions are estimated from its observed part by the
same Gibbs sampler with the topics fixed, and its predicted part is scored.

Randomness never enters the kernels: callers pass the uniforms, drawn from numpy Generators.
"""

from __future__ import annotations

from collections.abc import Sequence

import numba
import numpy as np

from simulators import validation
from simulators.seeding import SeedLike, generator
from workbench.core.kernel_arrays import kernel_array
from workbench.data.corpus import Corpus, HeldOutSplit


@numba.njit(cache=True)
def _gibbs(pi_t, words, offsets, documents, alpha, n_sweeps, uniforms, starts, word_topic,
           document_topic):  # pragma: no cover - compiled
    """Collapsed Gibbs sweeps over each row's documents (module docstring).

    pi_t (M, W, K): the topics, word-major. documents (M, n): row m's document ids into
    ``offsets``. Row m reads its uniforms from ``uniforms[starts[m]:]``, laid out (sweep,
    token) with sweep 0 the initial draw and the tokens of its documents in order. Adds the
    kept sweeps' counts: ``word_topic[m, w, k]`` summed over the row's documents and
    ``document_topic[m, i, k]`` per document i (the caller divides by the number kept).
    """
    n_rows, n_documents = documents.shape
    n_topics = pi_t.shape[2]
    burn_in = n_sweeps // 2
    weights = np.empty(n_topics)
    counts = np.empty(n_topics)
    for m in range(n_rows):
        n_tokens = 0
        for i in range(n_documents):
            d = documents[m, i]
            n_tokens += offsets[d + 1] - offsets[d]
        position = 0  # the row's tokens before this document
        for i in range(n_documents):
            d = documents[m, i]
            begin, length = offsets[d], offsets[d + 1] - offsets[d]
            topics = np.empty(length, dtype=np.int64)
            counts[:] = 0.0
            for j in range(length):
                w = words[begin + j]
                total = 0.0
                for k in range(n_topics):
                    total += pi_t[m, w, k]
                    weights[k] = total
                target = uniforms[starts[m] + position + j] * total
                k = 0
                while k < n_topics - 1 and weights[k] <= target:
                    k += 1
                topics[j] = k
                counts[k] += 1.0
            for sweep in range(1, n_sweeps + 1):
                base = starts[m] + sweep * n_tokens + position
                for j in range(length):
                    w = words[begin + j]
                    counts[topics[j]] -= 1.0
                    total = 0.0
                    for k in range(n_topics):
                        total += (alpha + counts[k]) * pi_t[m, w, k]
                        weights[k] = total
                    target = uniforms[base + j] * total
                    k = 0
                    while k < n_topics - 1 and weights[k] <= target:
                        k += 1
                    topics[j] = k
                    counts[k] += 1.0
                if sweep > burn_in:
                    for j in range(length):
                        word_topic[m, words[begin + j], topics[j]] += 1.0
                    for k in range(n_topics):
                        document_topic[m, i, k] += counts[k]
            position += length


def _topics_word_major(pi: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(np.swapaxes(pi, 1, 2), dtype=np.float64)


def _kept(n_sweeps: int) -> int:
    return n_sweeps - n_sweeps // 2


def expected_counts(pi: np.ndarray, corpus: Corpus, documents: np.ndarray, *, alpha: float,
                    n_sweeps: int, uniforms: Sequence[np.ndarray]) -> np.ndarray:
    """Σ_{d ∈ minibatch} E[n_dkw] for each row, shape (M, K, W) (module docstring).

    pi (M, K, W): each row's topics. documents (M, n): row m's minibatch, document indices
    into ``corpus``. uniforms: one array a row, shape (n_sweeps + 1, T_m) with T_m the row's
    number of tokens (row 0: the initial draw; row s: sweep s). E[n_dk] is the sum over w.
    """
    pi = np.asarray(pi, dtype=np.float64)
    documents = kernel_array(documents, np.int64)
    alpha = validation.positive("alpha", alpha)
    n_sweeps = validation.integer("n_sweeps", n_sweeps, minimum=1)
    if documents.ndim != 2 or documents.shape[0] != pi.shape[0]:
        raise validation.InvalidParameter("documents", documents.shape,
                                          f"must be (rows = {pi.shape[0]}, minibatch size)")
    if pi.shape[2] != corpus.vocabulary_size:
        raise validation.InvalidParameter(
            "vocabulary", pi.shape[2],
            f"the topics must cover the corpus vocabulary of {corpus.vocabulary_size} words")
    tokens = np.diff(corpus.offsets)[documents].sum(axis=1)
    for m, block in enumerate(uniforms):
        if np.shape(block) != (n_sweeps + 1, tokens[m]):
            raise validation.InvalidParameter(
                "uniforms", np.shape(block), f"row {m} needs ({n_sweeps + 1}, {tokens[m]})")
    flat = np.concatenate([np.ravel(block) for block in uniforms])
    starts = np.concatenate(([0], np.cumsum((n_sweeps + 1) * tokens)[:-1]))
    word_topic = np.zeros((pi.shape[0], pi.shape[2], pi.shape[1]))
    document_topic = np.zeros((*documents.shape, pi.shape[1]))
    _gibbs(_topics_word_major(pi), corpus.words, corpus.offsets, documents, alpha, n_sweeps,
           flat, starts, word_topic, document_topic)
    return np.ascontiguousarray(np.swapaxes(word_topic, 1, 2)) / _kept(n_sweeps)


def sgrld_step(theta: np.ndarray, expected: np.ndarray, scale, step_size, beta: float,
               normals: np.ndarray) -> np.ndarray:
    """One expanded-mean SGRLD update (module docstring) of every row.

    theta, expected, normals (M, K, W): the state, Σ_d E[n_dkw] of the row's minibatch
    (:func:`expected_counts`) and standard normals. scale, step_size: scalars or (M,) arrays,
    the gradient scale s and ε of each row.
    """
    beta = validation.positive("beta", beta)
    scale = np.asarray(scale, dtype=np.float64).reshape(-1, 1, 1)
    step_size = np.asarray(step_size, dtype=np.float64).reshape(-1, 1, 1)
    pi = theta / theta.sum(axis=2, keepdims=True)
    gradient = beta - theta + scale * (expected - pi * expected.sum(axis=2, keepdims=True))
    return np.abs(theta + 0.5 * step_size * gradient + np.sqrt(step_size * theta) * normals)


def step_size(t, a: float, b: float = 1000.0, c: float = 0.6):
    """ε_t = a (1 + t/b)^(−c) (Patterson & Teh 2013 §5), for a step count t or an array."""
    return a * (1.0 + np.asarray(t, dtype=np.float64) / b) ** (-c)


def initial_theta(n_replicates: int, n_topics: int, vocabulary_size: int, seed: SeedLike,
                  chain: int = 0) -> np.ndarray:
    """Gamma(1, 1) entries, shape (R, K, W): topics π uniform on the simplex (Dirichlet(1));
    replicate r draws from ``generator(seed, "initial_theta", r, chain)``."""
    n_replicates = validation.integer("n_replicates", n_replicates, minimum=1)
    n_topics = validation.integer("n_topics", n_topics, minimum=2)
    size = validation.integer("vocabulary_size", vocabulary_size, minimum=1)
    return np.stack([generator(seed, "initial_theta", r, chain).gamma(1.0, size=(n_topics, size))
                     for r in range(n_replicates)])


def topics_of(theta: np.ndarray) -> np.ndarray:
    """π_kw = θ_kw / θ_k·."""
    return theta / theta.sum(axis=-1, keepdims=True)


def perplexity(topics: np.ndarray, split: HeldOutSplit, *, alpha: float, n_sweeps: int,
               seed: SeedLike):
    """Document-completion perplexity of topics (K, W) (a float) or (R, K, W) (one a row).

    For each held-out document, n̄_dk is the average topic count of its observed tokens over
    the kept Gibbs sweeps (module docstring: the topics fixed, burn-in ``n_sweeps // 2``), its
    proportions θ_dk = (α + n̄_dk) / (n_d + K α) (n_d its observed tokens), and the perplexity
    is exp(−Σ_d Σ_{i predicted} log Σ_k θ_dk π_{k,w_i} / #predicted tokens). Every row uses
    the same uniforms (``generator(seed, "perplexity")``): the result is deterministic, a
    replicate's value does not depend on the others, and two topic sets are compared on
    common random numbers.
    """
    topics = np.asarray(topics, dtype=np.float64)
    single = topics.ndim == 2
    rows = topics[None] if single else topics
    if rows.ndim != 3:
        raise validation.InvalidParameter("topics", topics.shape, "must be (K, W) or (R, K, W)")
    validation.integer("n_topics", rows.shape[1], minimum=2)
    alpha = validation.positive("alpha", alpha)
    n_sweeps = validation.integer("n_sweeps", n_sweeps, minimum=1)
    if rows.shape[2] != split.observed.vocabulary_size:
        raise validation.InvalidParameter(
            "vocabulary", split.observed.vocabulary_size,
            f"held-out data must use the topics' vocabulary of {rows.shape[2]} words")
    observed, predicted = split.observed, split.predicted
    n_rows, n_topics = rows.shape[:2]
    documents = np.broadcast_to(np.arange(observed.n_documents), (n_rows, observed.n_documents))
    uniforms = generator(seed, "perplexity").random((n_sweeps + 1) * observed.n_tokens)
    word_topic = np.zeros((n_rows, rows.shape[2], n_topics))
    document_topic = np.zeros((n_rows, observed.n_documents, n_topics))
    _gibbs(_topics_word_major(rows), observed.words, observed.offsets,
           kernel_array(documents, np.int64), alpha, n_sweeps, uniforms,
           np.zeros(n_rows, dtype=np.int64), word_topic, document_topic)
    lengths = np.diff(observed.offsets)[None, :, None]
    proportions = (alpha + document_topic / _kept(n_sweeps)) / (lengths + n_topics * alpha)
    document_of = np.repeat(np.arange(predicted.n_documents), np.diff(predicted.offsets))
    values = np.array([  # row by row, so a row's sums do not depend on the other rows
        np.exp(-np.log((proportions[r, document_of] * rows[r][:, predicted.words].T)
                       .sum(axis=1)).sum() / predicted.n_tokens) for r in range(n_rows)])
    return float(values[0]) if single else values
