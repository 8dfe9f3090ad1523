"""The count-based distributed baselines of seed 004 §4.2: AD-LDA (a) and Async-LDA (b), on
the simulated clock of the cost model (:mod:`.cost`).

Both keep global topic-word counts n_kw at a master. Worker s holds shard s's documents (their
z and n_dk) and a local copy ñ^s of the counts; it sweeps its shard by collapsed Gibbs
(:mod:`.gibbs`) against that copy, which takes ``cost.gibbs_sweep(tokens of shard s) /
speed_factors[s]``, and then synchronises:

- AD-LDA (Newman et al. 2007): synchronous. After the slowest worker's sweep (the barrier) the
  master merges n_kw ← n_kw + Σ_s (ñ^s − n_kw^old), n_kw^old the counts every copy started
  from, and every worker takes the new counts for its next sweep.
- Async-LDA (Y-LDA's update, Ahmed et al. 2012; seed 004 §4.2(b)): no barrier. A worker that
  finishes its sweep adds ñ^s − n^s (n^s its copy at its previous sync) into n_kw at that
  moment, takes the current n_kw as its new copy and starts its next sweep.

A worker's change to its copy since its last sync is the moves of its own tokens from their
topics then to their topics now, so the merges are applied as those moves (the same integers).

Communication is counted the same way in both. A worker's deltas go to the master as one
message and the global counts come back as one (``cost.message(K, W)`` each way); every
worker has its own link, so workers' messages travel in parallel. The master adds one
worker's deltas in ``cost.topic_entry · K · W``, one worker after another. So an AD-LDA
iteration starting at T merges at T + max_s sweep_s + message + S · add, and the next starts a
message later. In Async-LDA a delta arriving at the master while it adds another waits its turn
(first come first served, ties by worker index); the merge time of a sync is when its addition
ends, and the worker starts its next sweep a message after it.

Topics recorded at an evaluation time are the global counts' (n_kw + β)/(n_k + Wβ) after every
merge at or before it (before the first, the initial counts), and ``updates`` counts the sweeps
merged by then. A run goes on until the first merge after the last evaluation time
(``finished``: that merge's time; the sweeps it would merge are not computed). A sweep's
inputs (the worker's copy, its documents' z, its stream) are fixed when it starts, so it is
computed when it is merged, in the order of the merges.
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence

import numba
import numpy as np

from workbench.data.corpus import Corpus
from workbench.systems.topics.arguments import RunArguments
from workbench.systems.topics.cost import CostModel
from workbench.systems.topics.gibbs import (
    GibbsState,
    Recorder,
    document_tokens,
    sweep_streams,
    sweep_uniforms,
)
from workbench.systems.topics.trace import TopicTrace


@numba.njit(cache=True)
def _merge(words, offsets, documents, synced, z, n_kw, n_k):  # pragma: no cover - compiled
    """Move ``documents``' tokens in the counts from their topics ``synced`` to their topics
    ``z``, then ``synced`` ← ``z`` on those tokens."""
    for r in range(z.shape[0]):
        for d in documents:
            for i in range(offsets[d], offsets[d + 1]):
                before, after = synced[r, i], z[r, i]
                if before != after:
                    w = words[i]
                    n_kw[r, before, w] -= 1
                    n_k[r, before] -= 1
                    n_kw[r, after, w] += 1
                    n_k[r, after] += 1
                    synced[r, i] = after


def ad_lda_iteration(state: GibbsState, training: Corpus, shards: Sequence[np.ndarray],
                     streams: Sequence[Sequence[np.random.Generator]], alpha: float,
                     beta: float) -> None:
    """One AD-LDA iteration on ``state`` (z, n_dk and the global counts): every worker s
    sweeps ``shards[s]`` against its own copy of the global counts, drawing from
    ``streams[s]``; then the merge n_kw ← n_kw + Σ_s (ñ^s − n_kw^old)."""
    synced = state.z.copy()
    for shard, stream in zip(shards, streams, strict=True):
        state.sweep(training, shard, alpha, beta,
                    sweep_uniforms(stream, document_tokens(training, shard)),
                    state.n_kw.copy(), state.n_k.copy())
    _merge(training.words, training.offsets, np.concatenate(shards), synced, state.z,
           state.n_kw, state.n_k)


def _clock(training: Corpus, run: RunArguments, cost: CostModel) -> tuple[np.ndarray, float, float]:
    """Each worker's sweep time, a message's time and the master's time to add one delta."""
    sweeps = np.array([cost.gibbs_sweep(document_tokens(training, shard)) / speed
                       for shard, speed in zip(run.shards, run.speed_factors, strict=True)])
    entries = run.n_topics * training.vocabulary_size
    return (sweeps, cost.message(run.n_topics, training.vocabulary_size),
            cost.topic_entry * entries)


def run_ad_lda(training: Corpus, shards: Sequence[np.ndarray], *, n_topics: int, alpha: float,
               beta: float, cost: CostModel, speed_factors: np.ndarray,
               evaluation_times: np.ndarray, n_replicates: int, seed) -> TopicTrace:
    """AD-LDA (module docstring) on ``len(shards)`` workers; ``updates`` counts worker sweeps
    (S per merge). With one worker it is :func:`.gibbs.run_collapsed_gibbs` draw for draw."""
    run = RunArguments.check(training, shards, n_topics, alpha, beta, cost, speed_factors,
                         evaluation_times, n_replicates)
    sweep_times, message, add = _clock(training, run, cost)
    slowest, n_workers = sweep_times.max(), len(run.shards)
    state = GibbsState.initial(training, run.n_topics, run.n_replicates, seed)
    streams = [sweep_streams(seed, s, run.n_replicates) for s in range(n_workers)]
    recorder = Recorder(run.evaluation_times, run.n_replicates, run.n_topics,
                        training.vocabulary_size, run.beta)
    start, sweeps = 0.0, 0
    while True:
        merged = start + slowest + message + n_workers * add
        if recorder.before(merged, state.n_kw, sweeps):
            return recorder.trace(merged)
        ad_lda_iteration(state, training, run.shards, streams, run.alpha, run.beta)
        sweeps += n_workers
        start = merged + message


def async_lda_syncs(sweep_times: np.ndarray, message: float, add: float,
                    horizon: float) -> tuple[np.ndarray, np.ndarray, float]:
    """Async-LDA's merges up to ``horizon`` (module docstring): the worker of each, in the
    order the master adds them, their merge times (non-decreasing), and the time of the first
    merge after ``horizon``. ``sweep_times[s]``: worker s's time for one sweep."""
    arrivals = [(0.0 + duration + message, s) for s, duration in enumerate(sweep_times)]
    heapq.heapify(arrivals)
    workers, times, free = [], [], 0.0
    while True:
        arrival, s = heapq.heappop(arrivals)
        merged = max(arrival, free) + add
        if merged > horizon:
            return np.array(workers, dtype=np.int64), np.array(times), merged
        workers.append(s)
        times.append(merged)
        free = merged
        heapq.heappush(arrivals, (merged + message + sweep_times[s] + message, s))


def run_async_lda(training: Corpus, shards: Sequence[np.ndarray], *, n_topics: int,
                  alpha: float, beta: float, cost: CostModel, speed_factors: np.ndarray,
                  evaluation_times: np.ndarray, n_replicates: int, seed) -> TopicTrace:
    """Async-LDA (module docstring) on ``len(shards)`` workers; ``updates`` counts merged
    sweeps. With one worker it is :func:`run_ad_lda` with one worker, to the bit."""
    run = RunArguments.check(training, shards, n_topics, alpha, beta, cost, speed_factors,
                         evaluation_times, n_replicates)
    sweep_times, message, add = _clock(training, run, cost)
    workers, times, finished = async_lda_syncs(sweep_times, message, add,
                                               run.evaluation_times[-1])
    state = GibbsState.initial(training, run.n_topics, run.n_replicates, seed)
    synced = state.z.copy()
    streams = [sweep_streams(seed, s, run.n_replicates) for s in range(len(run.shards))]
    tokens = [document_tokens(training, shard) for shard in run.shards]
    copies = [(state.n_kw.copy(), state.n_k.copy()) for _ in run.shards]
    recorder = Recorder(run.evaluation_times, run.n_replicates, run.n_topics,
                        training.vocabulary_size, run.beta)
    for sweeps, (s, merged) in enumerate(zip(workers, times, strict=True)):
        recorder.before(merged, state.n_kw, sweeps)
        n_kw, n_k = copies[s]
        state.sweep(training, run.shards[s], run.alpha, run.beta,
                    sweep_uniforms(streams[s], tokens[s]), n_kw, n_k)
        _merge(training.words, training.offsets, run.shards[s], synced, state.z, state.n_kw,
               state.n_k)
        n_kw[...] = state.n_kw
        n_k[...] = state.n_k
    recorder.before(finished, state.n_kw, workers.size)
    return recorder.trace(finished)
