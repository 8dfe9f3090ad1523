"""Collapsed Gibbs sampling for LDA (Griffiths & Steyvers 2004), and the serial sampler timed by
the cost model: the baseline of seed 004 §4.2 and the local step of AD-LDA and Async-LDA
(:mod:`.counts`).

With the topic proportions and the topics integrated out, token i of document d, word w, is
resampled from (Griffiths & Steyvers 2004, Eq. 5)

    p(z_i = k | z_¬i, w) ∝ (n_dk^¬i + α) (n_kw^¬i + β) / (n_k^¬i + W β),

the counts without token i. The state of R independent replicate chains is z (R, N) over the N
tokens of the corpus, n_dk (R, D, K), n_kw (R, K, W) and n_k (R, K). A sweep visits a set of
documents (a worker's shard) in their given order and their tokens in order, against the
topic-word counts it is given (the state's own, or a worker's local copy of them), which it
updates in place.

Randomness: the initial z is uniform over the K topics, drawn for replicate r from
``generator(seed, "collapsed-gibbs-start", r)``; a sweep by worker s draws one uniform per token
from ``generator(seed, "collapsed-gibbs", s, r)``, the stream carried on from sweep to sweep.
Neither depends on the number of replicates or of workers, so the serial sampler (worker 0's
stream) and AD-LDA with one worker draw the same numbers.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numba
import numpy as np

from simulators.seeding import generator
from workbench.data.corpus import Corpus
from workbench.systems.topics.arguments import RunArguments
from workbench.systems.topics.cost import CostModel
from workbench.systems.topics.trace import TopicTrace


@numba.njit(cache=True)
def _count(words, offsets, z, n_dk, n_kw, n_k):  # pragma: no cover - compiled
    """Add every token's topic to the (zeroed) counts."""
    for r in range(z.shape[0]):
        for d in range(offsets.size - 1):
            for i in range(offsets[d], offsets[d + 1]):
                k = z[r, i]
                n_dk[r, d, k] += 1
                n_kw[r, k, words[i]] += 1
                n_k[r, k] += 1


@numba.njit(cache=True)
def _sweep(words, offsets, documents, alpha, beta, uniforms, z, n_dk, n_kw,
           n_k):  # pragma: no cover - compiled
    """One collapsed Gibbs sweep of ``documents`` for every replicate (module docstring).

    Token j of the sweep (counted across the documents in order) takes the first topic k whose
    cumulative weight exceeds ``uniforms[r, j]`` times the total weight."""
    n_topics = n_k.shape[1]
    vocabulary_beta = n_kw.shape[2] * beta
    cumulative = np.empty(n_topics)
    for r in range(z.shape[0]):
        j = 0
        for d in documents:
            for i in range(offsets[d], offsets[d + 1]):
                w = words[i]
                k = z[r, i]
                n_dk[r, d, k] -= 1
                n_kw[r, k, w] -= 1
                n_k[r, k] -= 1
                total = 0.0
                for t in range(n_topics):
                    total += ((n_dk[r, d, t] + alpha) * (n_kw[r, t, w] + beta)
                              / (n_k[r, t] + vocabulary_beta))
                    cumulative[t] = total
                target = uniforms[r, j] * total
                k = 0
                while k < n_topics - 1 and cumulative[k] <= target:
                    k += 1
                z[r, i] = k
                n_dk[r, d, k] += 1
                n_kw[r, k, w] += 1
                n_k[r, k] += 1
                j += 1


def document_tokens(corpus: Corpus, documents: np.ndarray) -> int:
    """The number of tokens in ``documents``."""
    return int(np.diff(corpus.offsets)[documents].sum())


@dataclass
class GibbsState:
    """Topic assignments ``z`` (R, N) of R replicate chains and their counts ``n_dk`` (R, D,
    K), ``n_kw`` (R, K, W), ``n_k`` (R, K) (module docstring)."""

    z: np.ndarray
    n_dk: np.ndarray
    n_kw: np.ndarray
    n_k: np.ndarray

    @classmethod
    def initial(cls, corpus: Corpus, n_topics: int, n_replicates: int, seed) -> GibbsState:
        """Every token's topic uniform over the K topics, replicate r from its own stream."""
        z = np.stack([generator(seed, "collapsed-gibbs-start", r).integers(
            n_topics, size=corpus.n_tokens) for r in range(n_replicates)])
        return cls.of_assignments(corpus, z, n_topics)

    @classmethod
    def of_assignments(cls, corpus: Corpus, z: np.ndarray, n_topics: int) -> GibbsState:
        """The state of the assignments ``z`` (R, N) with their counts."""
        z = np.array(z, dtype=np.int64)  # a copy: sweeps change it in place
        n_replicates = z.shape[0]
        n_dk = np.zeros((n_replicates, corpus.n_documents, n_topics), dtype=np.int64)
        n_kw = np.zeros((n_replicates, n_topics, corpus.vocabulary_size), dtype=np.int64)
        n_k = np.zeros((n_replicates, n_topics), dtype=np.int64)
        _count(corpus.words, corpus.offsets, z, n_dk, n_kw, n_k)
        return cls(z, n_dk, n_kw, n_k)

    def sweep(self, corpus: Corpus, documents: np.ndarray, alpha: float, beta: float,
              uniforms: np.ndarray, n_kw: np.ndarray, n_k: np.ndarray) -> None:
        """Resample the topics of ``documents``' tokens in place against the topic-word counts
        ``n_kw``, ``n_k`` (this state's own or a local copy; updated in place).
        ``uniforms`` (R, tokens of ``documents``)."""
        _sweep(corpus.words, corpus.offsets, documents, alpha, beta, uniforms, self.z,
               self.n_dk, n_kw, n_k)


def sweep_streams(seed, worker: int, n_replicates: int) -> list[np.random.Generator]:
    """Worker ``worker``'s sweep streams, one per replicate (module docstring)."""
    return [generator(seed, "collapsed-gibbs", worker, r) for r in range(n_replicates)]


def sweep_uniforms(streams: Sequence[np.random.Generator], n_tokens: int) -> np.ndarray:
    """One sweep's uniforms (R, ``n_tokens``), replicate r from ``streams[r]``."""
    return np.stack([stream.random(n_tokens) for stream in streams])


def topics_from_counts(n_kw: np.ndarray, beta: float) -> np.ndarray:
    """The topics' posterior-mean word probabilities (n_kw + β)/(n_k + Wβ), along the last
    axis of ``n_kw`` (Griffiths & Steyvers 2004, Eq. 7)."""
    vocabulary_size = n_kw.shape[-1]
    return (n_kw + beta) / (n_kw.sum(axis=-1, keepdims=True) + vocabulary_size * beta)


class Recorder:
    """Fills a :class:`TopicTrace` while a run applies its updates in time order: before an
    update finishing at time u is applied, every evaluation time before u gets the state then
    holding (so an update finishing exactly at an evaluation time counts at that time)."""

    def __init__(self, evaluation_times: np.ndarray, n_replicates: int, n_topics: int,
                 vocabulary_size: int, beta: float):
        self.times = evaluation_times
        self.beta = beta
        self.topics = np.empty((evaluation_times.size, n_replicates, n_topics,
                                vocabulary_size))
        self.updates = np.zeros(evaluation_times.size, dtype=np.int64)
        self.recorded = 0

    def before(self, time: float, n_kw: np.ndarray, updates: int) -> bool:
        """Record the state ``n_kw`` after ``updates`` updates at the evaluation times before
        ``time``; True once the update at ``time`` is past the last evaluation time."""
        end = int(np.searchsorted(self.times, time, side="left"))
        if end > self.recorded:
            self.topics[self.recorded:end] = topics_from_counts(n_kw, self.beta)
            self.updates[self.recorded:end] = updates
            self.recorded = end
        return self.recorded == self.times.size

    def trace(self, finished: float) -> TopicTrace:
        """The trace of a run that stopped at ``finished`` (after every evaluation time)."""
        return TopicTrace(self.times, self.topics, self.updates, float(finished))


def run_collapsed_gibbs(training: Corpus, shards: Sequence[np.ndarray], *, n_topics: int,
                        alpha: float, beta: float, cost: CostModel, speed_factors: np.ndarray,
                        evaluation_times: np.ndarray, n_replicates: int,
                        seed) -> TopicTrace:
    """Collapsed Gibbs on one machine holding all the training documents (the shards back to
    back, in order), at worker 0's speed: each sweep takes ``cost.gibbs_sweep(N) /
    speed_factors[0]`` and updates the counts when it finishes. Runs until the first sweep
    finishing after the last evaluation time (``finished``: its finish time; it is not
    computed); ``updates`` counts sweeps."""
    run = RunArguments.check(training, shards, n_topics, alpha, beta, cost, speed_factors,
                         evaluation_times, n_replicates)
    documents = np.concatenate(run.shards)
    state = GibbsState.initial(training, run.n_topics, run.n_replicates, seed)
    streams = sweep_streams(seed, 0, run.n_replicates)
    recorder = Recorder(run.evaluation_times, run.n_replicates, run.n_topics,
                        training.vocabulary_size, run.beta)
    duration = cost.gibbs_sweep(training.n_tokens) / run.speed_factors[0]
    finish, sweeps = duration, 0
    while not recorder.before(finish, state.n_kw, sweeps):
        state.sweep(training, documents, run.alpha, run.beta,
                    sweep_uniforms(streams, training.n_tokens), state.n_kw, state.n_k)
        sweeps += 1
        finish += duration
    return recorder.trace(finish)
