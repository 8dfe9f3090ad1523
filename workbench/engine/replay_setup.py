"""What every replay path shares (:mod:`~workbench.engine.replay`, the compiled path
:mod:`~workbench.engine.compiled`, the protocol replay :mod:`~workbench.engine.protocols`):
replicate blocks and their random streams (:class:`ReplaySetup`, :func:`draw`, ``DRAW_STEPS``),
the accumulator of φ̂ (:class:`Accumulator`), the record of a replay (:class:`Replay`), the
layout of replicate groups (:class:`GroupLayout`) and what a replay needs of the memory budget
(:func:`memory_need`; the budget itself is :mod:`workbench.core.memory_budget`'s). The rules these
follow are those of :mod:`workbench.engine.replay`'s module docstring (*Randomness*, *Groups*,
*Memory*).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from simulators import validation
from simulators.schedule import Schedule
from simulators.seeding import SeedLike, generator
from workbench.core.phi import TestFunction
from workbench.engine import running_sums
from workbench.gradients.minibatch import check_batch, draw_indices

_CHUNK_BUDGET = 1 << 22  # float64 elements per chunk array (32 MiB)


DRAW_STEPS = 64  # every random-number call covers this many updates of one replicate block
WINDOW_MAX = 64  # updates a sampler's ``advance`` may take at once (one gradient call)


@dataclass(frozen=True)
class Replay:
    """What a replay returns (arrays indexed replicate-first within the selected blocks).

    averages[name]: ``(checkpoint, replicate, server, m)`` values of φ̂_L.
    diverged_at: ``(replicate, server)`` sample count at which the chain diverged, -1 if never.
    draws: ``(replicate, server, draw, d)`` thinned positions, or None.
    """

    checkpoints: np.ndarray
    averages: dict[str, np.ndarray]
    diverged_at: np.ndarray
    draws: np.ndarray | None
    draw_iterations: np.ndarray | None
    final_position: np.ndarray


def replicate_blocks(n_replicates: int, block_size: int) -> list[range]:
    """The replicate ranges of each seeding block."""
    n_replicates = validation.integer("n_replicates", n_replicates, minimum=1)
    block_size = validation.integer("replicate_block", block_size, minimum=1)
    return [range(start, min(start + block_size, n_replicates))
            for start in range(0, n_replicates, block_size)]


def block_rows(n_replicates: int, block_size: int, blocks=None) -> np.ndarray:
    """The replicates (global indices, in order) of the seeding blocks ``blocks`` (default
    all) of :func:`replicate_blocks`."""
    ranges = replicate_blocks(n_replicates, block_size)
    chosen = range(len(ranges)) if blocks is None else blocks
    return np.concatenate([np.arange(ranges[b].start, ranges[b].stop) for b in chosen])


@dataclass(frozen=True)
class GroupLayout:
    """What sizing a replay's replicate groups takes beyond the run's options (module
    docstring, *Groups* and *Memory*).

    n_servers: servers (or chains) stepped side by side within a replicate.
    tau_max: the longest staleness: the ring buffer holds ``tau_max + 1`` versions.
    steps_per_update: gradient evaluations (each with its noise and minibatch) per recorded
        update: the downpour period π, else 1.
    held_states: position-sized arrays a replicate holds beside the ring (downpour's worker
        states, kept between their pushes).
    cache_sized: groups of about GROUP_ELEMENTS, to keep one update's arrays in cache (the
        vectorised and compiled paths); False for replays that pay a Python loop per group
        (the protocols), which take groups as large as the budget allows.
    """

    n_servers: int
    tau_max: int
    steps_per_update: int = 1
    held_states: int = 0
    cache_sized: bool = True


def evaluation_elements(gradient, dim: int, batch_size: int) -> float:
    """Float64 elements one gradient evaluation's noise and prepared minibatch hold per
    replicate and server: the noise's d, and the estimator's own count of a prepared minibatch
    where it gives one (``prepared_elements(batch_size)``: a per-example likelihood keeps its
    indices, :class:`workbench.models.per_example.PerExampleGradient`, which then also gives
    ``call_elements``), else d·(n + 1)."""
    own = getattr(gradient, "prepared_elements", None)
    return dim + (dim * (batch_size + 1) if own is None else own(batch_size))


def memory_need(rows: int, group_rows: int, layout: GroupLayout, *, dim: int, n_updates: int,
                batch_size: int, test_functions: Sequence[TestFunction],
                checkpoints: Sequence[int] | None, thin: int | Sequence[int],
                chunk_size: int | None, gradient=None) -> tuple[int, int]:
    """(results, working) bytes of a replay of ``rows`` replicates stepped ``group_rows`` at
    a time (module docstring, *Memory*): results for all rows; for one group, a chunk's noise,
    minibatches and positions, the ring buffer and the states held beside it. A minibatch
    counts d·(n + 1) floats an evaluation, which covers the chunk's other temporaries (the
    test functions' values and running sums; tests/workbench/test_engine_memory.py) unless the
    estimator counts its own (:func:`evaluation_elements`); then those temporaries count
    apart, and so does what a call of the estimator holds beyond its arguments
    (``call_elements(positions, batch_size)``, for the most positions a call takes: a window
    of the group's updates, at most ``WINDOW_MAX`` and τ_max + 1)."""
    n_servers, steps = layout.n_servers, layout.steps_per_update
    widths = sum(int(np.shape(f(np.zeros((1, 1, dim))))[-1]) for f in test_functions)
    n_checkpoints = 1 if checkpoints is None else len(np.unique(np.asarray(checkpoints)))
    n_draws = kept_updates(thin, n_updates).size
    per_row = n_servers * (n_checkpoints * widths + n_draws * dim + dim + 1)
    results = 2 * 8 * rows * per_row
    chains = group_rows * n_servers
    per_evaluation = evaluation_elements(gradient, dim, batch_size)
    chunk = chunk_size or default_chunk(group_rows, n_servers, dim, batch_size, steps,
                                        per_evaluation)
    held = dim * (chunk + layout.tau_max + 2 + layout.held_states)  # positions, ring, states
    if getattr(gradient, "prepared_elements", None) is None:
        return results, 8 * chains * (chunk * steps * per_evaluation + held)
    window = min(WINDOW_MAX, layout.tau_max + 1)  # updates whose reads are all known: τ ≥ i
    calls = gradient.call_elements(chains * window, batch_size)
    return results, int(8 * (chains * (chunk * (steps * per_evaluation + 2 * widths) + held)
                             + calls))


def kept_updates(thin: int | Sequence[int], n_updates: int) -> np.ndarray:
    """The updates (counted from 1) whose positions a replay keeps as draws: every
    ``thin``-th for an integer (none for 0), or the updates listed (for example the master's
    versions current every R seconds of simulated wall-clock, seed 003 Appendix C)."""
    if np.ndim(thin) == 0:
        thin = validation.integer("thin", thin, minimum=0)
        return np.arange(thin, n_updates + 1, thin) if thin else np.zeros(0, np.int64)
    kept = np.unique(np.asarray(thin, dtype=np.int64))
    if kept.size and (kept[0] < 1 or kept[-1] > n_updates):
        raise validation.InvalidParameter("thin", [int(kept[0]), int(kept[-1])],
                                          f"kept updates must lie in [1, {n_updates}]")
    return kept


@dataclass(frozen=True)
class ReplaySetup:
    """What every replay (plain or protocol) validates and prepares in the same way: the
    replicate blocks and their random streams, the starting positions, the checkpoints and
    the chunk size (module docstring, *Randomness*)."""

    n_updates: int
    start: np.ndarray  # (replicate, server, d)
    block_sizes: list[int]
    noise_rngs: list
    batch_rngs: list
    batch_size: int
    checkpoints: np.ndarray
    test_functions: Sequence[TestFunction]
    kept: np.ndarray  # updates kept as draws (:func:`kept_updates`)
    divergence_threshold: float
    chunk_size: int

    @classmethod
    def build(cls, n_updates: int, n_servers: int, gradient, *, n_replicates: int,
              initial_position, seed: SeedLike, batch_size: int,
              test_functions: Sequence[TestFunction], checkpoints: Sequence[int] | None,
              thin: int | Sequence[int], replicate_block: int, blocks: Sequence[int] | None,
              divergence_threshold: float, chunk_size: int | None,
              steps_per_update: int = 1) -> ReplaySetup:
        """``steps_per_update``: gradient evaluations per recorded update (π for downpour);
        the chunk size counts gradient evaluations and stays a multiple of DRAW_STEPS."""
        kept = kept_updates(thin, n_updates)
        validation.positive("divergence_threshold", divergence_threshold)
        all_blocks = replicate_blocks(n_replicates, replicate_block)
        blocks = range(len(all_blocks)) if blocks is None else list(blocks)
        for b in blocks:
            if not 0 <= b < len(all_blocks):
                raise validation.InvalidParameter("blocks", b,
                                                  f"must lie in [0, {len(all_blocks)})")
        block_sizes = [len(all_blocks[b]) for b in blocks]
        n_rows = sum(block_sizes)
        checkpoints = (np.array([n_updates]) if checkpoints is None
                       else np.unique(np.asarray(checkpoints, dtype=np.int64)))
        if checkpoints.size == 0 or checkpoints[0] < 1 or checkpoints[-1] > n_updates:
            raise validation.InvalidParameter("checkpoints", checkpoints.tolist(),
                                              f"must lie in [1, {n_updates}]")
        dim = gradient.dim
        try:
            start = np.broadcast_to(np.asarray(initial_position, dtype=float),
                                    (n_rows, n_servers, dim)).copy()
        except ValueError as error:
            raise validation.InvalidParameter(
                "initial_position", np.shape(initial_position),
                f"must broadcast to (replicate, server, d) = {(n_rows, n_servers, dim)}"
            ) from error
        if chunk_size is None:
            chunk_size = default_chunk(n_rows, n_servers, dim, batch_size, steps_per_update,
                                       evaluation_elements(gradient, dim, batch_size))
        chunk_size = validation.integer("chunk_size", chunk_size, minimum=1)
        if (chunk_size * steps_per_update) % DRAW_STEPS:
            raise validation.InvalidParameter(
                "chunk_size", chunk_size,
                f"times {steps_per_update} must be a multiple of DRAW_STEPS = {DRAW_STEPS}")
        return cls(n_updates, start, block_sizes,
                   [generator(seed, "noise", b) for b in blocks],
                   [generator(seed, "minibatch", b) for b in blocks],
                   batch_size, checkpoints, tuple(test_functions), kept, divergence_threshold,
                   chunk_size)

    def draw(self, first: int, length: int, gradient, replacement: bool,
             shards: ShardDraws | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Noise and minibatches for ``length`` gradient evaluations from evaluation ``first``."""
        return draw(self.noise_rngs, self.batch_rngs, self.block_sizes, first, length,
                     self.start.shape[1], self.start.shape[2], gradient, self.batch_size,
                     replacement, shards)

    def accumulator(self) -> Accumulator:
        return Accumulator(self.test_functions, self.checkpoints, self.start.shape[:2],
                           self.kept, self.divergence_threshold)


class Accumulator:
    """Running test-function sums, checkpoint averages, divergence flags and thinned draws,
    fed chunk by chunk with the recorded positions ``(update, replicate, server, d)``."""

    def __init__(self, test_functions: Sequence[TestFunction], checkpoints: np.ndarray,
                 shape: tuple[int, int], kept: np.ndarray, divergence_threshold: float):
        self.test_functions = test_functions
        self.checkpoints = checkpoints
        self.kept = kept
        self.threshold = divergence_threshold
        self.sums = {f.name: None for f in test_functions}
        self.averages: dict[str, list[np.ndarray]] = {f.name: [] for f in test_functions}
        self.diverged_at = np.full(shape, -1, dtype=np.int64)
        self.draws: list[np.ndarray] = []
        self.draw_iterations: list[np.ndarray] = []

    def add(self, positions: np.ndarray, first: int) -> None:
        """Positions of updates ``first + 1 .. first + len(positions)``."""
        length = positions.shape[0]
        checkpoints = self.checkpoints
        running_sums.mark_divergence(positions, first, self.threshold, self.diverged_at)
        sample_counts = np.arange(first + 1, first + length + 1)
        inside = checkpoints[(checkpoints > first) & (checkpoints <= first + length)]
        with np.errstate(over="ignore", invalid="ignore"):
            for f in self.test_functions:
                values = f(positions)
                total = self.sums[f.name]
                if total is None:
                    total = self.sums[f.name] = np.zeros_like(values[0])
                # Sequential additions from the previous total (a cumsum's order), so the sums
                # are bit-identical for any chunking; float64 sums in one compiled pass.
                if values.dtype == np.float64 and total.dtype == np.float64:
                    self.averages[f.name].extend(
                        running_sums.running_sums(values, total, first, inside))
                    continue
                running = np.cumsum(np.concatenate([total[None], values]), axis=0)[1:]
                self.sums[f.name] = running[-1]
                for count in inside:
                    self.averages[f.name].append(running[count - first - 1] / count)
        if self.kept.size:
            keep = np.isin(sample_counts, self.kept)
            self.draws.append(positions[keep])
            self.draw_iterations.append(sample_counts[keep])

    def result(self, final_position: np.ndarray) -> Replay:
        checkpoints, diverged_at = self.checkpoints, self.diverged_at
        result = {name: masked_after_divergence(np.stack(values), checkpoints, diverged_at)
                  for name, values in self.averages.items()}
        keeps_draws = self.kept.size > 0
        return Replay(
            checkpoints=checkpoints,
            averages=result,
            diverged_at=diverged_at,
            draws=np.concatenate(self.draws).transpose(1, 2, 0, 3) if keeps_draws else None,
            draw_iterations=(np.concatenate(self.draw_iterations) if keeps_draws else None),
            final_position=final_position,
        )


class GroupProgress:
    """A replay's progress callback shared by its groups (of :func:`~.replay.replay` and of
    :func:`~.jax_replay.replay`): each group reports its updates, and the caller is told whole
    updates of the full run (all replicates)."""

    def __init__(self, progress: Callable[[int], None] | None, n_rows: int):
        self.progress, self.n_rows, self.done = progress, int(n_rows), 0

    def for_rows(self, rows: int) -> Callable[[int], None] | None:
        if self.progress is None:
            return None

        def report(updates: int) -> None:
            before = self.done // self.n_rows
            self.done += int(updates) * int(rows)
            if self.done // self.n_rows > before:
                self.progress(self.done // self.n_rows - before)

        return report


def masked_after_divergence(values: np.ndarray, checkpoints: np.ndarray,
                            diverged_at: np.ndarray) -> np.ndarray:
    """``values`` ``(checkpoint, replicate, server, m)`` with NaN at every checkpoint at or
    after the sample count at which its replicate and server diverged (in place)."""
    too_late = (diverged_at >= 0) & (checkpoints[:, None, None] >= diverged_at)
    values[too_late] = np.nan
    return values


def default_chunk(n_rows: int, n_servers: int, dim: int, batch_size: int,
                   steps_per_update: int = 1, per_evaluation: float | None = None) -> int:
    """Updates per chunk: arrays of about _CHUNK_BUDGET elements, whole DRAW_STEPS calls;
    ``per_evaluation``: :func:`evaluation_elements` (by default a minibatch as large as its
    rows)."""
    if per_evaluation is None:
        per_evaluation = dim * (batch_size + 2)
    per_step = int(n_rows * n_servers * (per_evaluation + dim))
    chunk_size = int(max(1, min(4096, _CHUNK_BUDGET // per_step)))
    chunk_size //= steps_per_update
    return max(DRAW_STEPS, chunk_size - chunk_size % DRAW_STEPS)


def draw(noise_rngs, batch_rngs, sizes, first: int, length: int, n_servers: int, dim: int,
          gradient, batch_size: int, replacement: bool,
          shards: ShardDraws | None) -> tuple[np.ndarray, np.ndarray]:
    """Noise and prepared minibatches for ``length`` updates of every block.

    Each block draws from its own streams in calls of DRAW_STEPS updates (any surplus of the
    last call is discarded: the run is over). Minibatch indices are prepared call by call, so
    only the prepared minibatches (not the indices) are assembled for the chunk; an estimator
    whose prepared minibatches are not arrays gives them a ``concatenate(pieces, axis)``
    classmethod. On sharded
    schedules each call draws indices local to the shard of every update and server, and the
    estimator is given those shards and their selection frequencies.
    """
    noise = np.empty((length, sum(sizes), n_servers, dim))
    minibatches = None
    structured: list[list] = []  # per block, per call: minibatches that are not plain arrays
    row = 0
    for noise_rng, batch_rng, size in zip(noise_rngs, batch_rngs, sizes, strict=True):
        rows = slice(row, row + size)
        structured.append([])
        for start in range(0, length, DRAW_STEPS):
            stop = min(start + DRAW_STEPS, length)
            draws = noise_rng.standard_normal((DRAW_STEPS, size, n_servers, dim))
            noise[start:stop, rows] = draws[:stop - start]
            if shards is None:
                indices = draw_indices(batch_rng, gradient.n_data, batch_size,
                                       (DRAW_STEPS, size, n_servers), replacement)
                prepared = gradient.prepare(indices[:stop - start])
            else:
                indices = draw_indices(batch_rng, shards.sizes_for(first + start),
                                       batch_size, (DRAW_STEPS, size, n_servers), replacement)
                prepared = gradient.prepare(indices[:stop - start],
                                            *shards.chunk(first + start, stop - start))
            if not isinstance(prepared, np.ndarray):
                structured[-1].append(prepared)
                continue
            if minibatches is None:
                minibatches = np.empty((length, noise.shape[1]) + prepared.shape[2:],
                                       prepared.dtype)
            minibatches[start:stop, rows] = prepared
        row += size
    if minibatches is None:
        # Structured minibatches (e.g. shard-aware ones) join themselves: calls along the
        # update axis, then blocks along the replicate axis.
        kind = type(structured[0][0])
        minibatches = kind.concatenate([kind.concatenate(calls, axis=0)
                                        for calls in structured], axis=1)
    return noise, minibatches


@dataclass(frozen=True)
class ShardDraws:
    """Per-update shards and shard frequencies of a sharded replay, ``(update, server)``."""

    sizes: np.ndarray  # N_s of each shard
    shards: np.ndarray  # padded to whole DRAW_STEPS calls (the surplus is never used)
    frequencies: np.ndarray

    @classmethod
    def for_schedule(cls, schedule: Schedule, gradient, n_updates: int, batch_size: int,
                     replacement: bool) -> ShardDraws | None:
        shards = schedule.update_shards(n_updates)
        shard_sizes = getattr(gradient, "shard_sizes", None)
        if shard_sizes is None:
            if shards.max() > 0:
                raise validation.InvalidParameter(
                    "gradient", type(gradient).__name__,
                    f"the schedule draws from {int(shards.max()) + 1} shards; the estimator must"
                    " be shard-aware (shard_sizes and prepare(indices, shards, frequencies))")
            check_batch(gradient.n_data, batch_size, replacement)
            return None
        sizes = np.asarray(shard_sizes, dtype=np.int64)
        if shards.max() >= sizes.size:
            raise validation.InvalidParameter(
                "shard", int(shards.max()),
                f"the estimator has {sizes.size} shards (shard ids 0..{sizes.size - 1})")
        check_batch(int(sizes[np.unique(shards)].min()), batch_size, replacement)
        pad = (0, -n_updates % DRAW_STEPS)
        frequencies = schedule.update_column("shard_frequency", n_updates)
        return cls(sizes, np.pad(shards, (pad, (0, 0)), mode="edge"),
                   np.pad(frequencies, (pad, (0, 0)), mode="edge"))

    def sizes_for(self, start: int) -> np.ndarray:
        """N_s for the updates of the draw call starting at update ``start``, shaped
        ``(DRAW_STEPS, 1, server)``."""
        return self.sizes[self.shards[start:start + DRAW_STEPS, None, :]]

    def chunk(self, first: int, length: int) -> tuple[np.ndarray, np.ndarray]:
        """Shards and frequencies of a chunk, shaped ``(update, 1, server)``."""
        rows = slice(first, first + length)
        return self.shards[rows, None, :], self.frequencies[rows, None, :]
