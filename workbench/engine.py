"""The engine: replays a schedule over many replicates at once.

One Python loop runs over the schedule's applied updates; everything inside is vectorised over
replicates (and servers). For update l the engine reads the gradient point of version
``l - τ_l`` from a ring buffer holding the last ``τ_max + 1`` versions, evaluates the
stochastic gradient there with a fresh minibatch, and lets the sampler step (seed 001 §3.1).

Sharded data: when the schedule spreads updates over several shards, the gradient estimator
must be shard-aware: it has ``shard_sizes`` (N_s) and ``prepare(indices, shards,
frequencies)``. Each update of each server then draws its minibatch from the shard the schedule
names (indices local to that shard), and the estimator receives, per update and server, the
shard id and the shard's selection frequency (the schedule's ``shard_frequency``), which D-SGLD
scaling and conducive gradients need (:mod:`workbench.shard_gradients`). Single-shard
schedules with a plain estimator are replayed exactly as before.

Windows: update l + i reads version l + i - τ_{l+i}, which is already known when update l
starts if τ_{l+i} >= i. Such a run of updates (up to ``WINDOW_MAX``) has its gradients
evaluated in one vectorised call, and a sampler with an ``advance`` method steps through it in
one call too (SGLD: one running sum, bit-identical to stepping); with staleness τ that removes
most of the per-update Python overhead.

Randomness: replicates are split into fixed-size blocks; block b draws its Gaussian noise and
its minibatches from the seed-tree streams ``(seed, "noise", b)`` and ``(seed, "minibatch", b)``,
always in calls covering ``DRAW_STEPS`` updates. The sequence of calls on a stream is therefore
fixed, so neither the engine's chunk size (chosen for memory) nor the set of blocks run together
changes any replicate's path: replicates 0-49 are the same run alone or inside a 200-replicate
run, and in one process or spread over many.

Groups: a large run steps its replicate blocks in groups of about ``GROUP_ELEMENTS`` state
elements, each group through all updates before the next, so that the arrays of one update
stay in cache instead of streaming through memory (issue 15); each block keeps its streams, so
the grouping, like the chunk size, changes no replicate's path. Protocol replays
(:mod:`workbench.protocol_replay`), which pay a Python loop per group, make groups only as
small as the memory budget requires (:class:`GroupLayout`).

Compiled path: where the sampler and the estimator describe themselves (``kernel_spec()``:
SGLD, SGHMC; the Gaussian mean, and on sharded schedules its shard-local estimator, D-SGLD's
scaling of it and FSGLD's conducive gradient with diagonal surrogates), each chunk is stepped
by a numba kernel instead of the loop below, bit-identical to it (:mod:`workbench.engine_kernel`).

Memory: ``memory_budget`` (bytes, default 1 GiB, or what the enclosing
:func:`replay_memory_budget` says: the ``--memory-budget`` flag of ``workbench run``/``check``
sets it around every task) bounds what a replay holds at once: its
results (kept for every replicate: averages at each checkpoint, thinned draws, final
positions; counted twice, as joining the groups copies them) plus one group's working arrays
(the chunk's noise, minibatches and positions, the ring buffer, and the worker states a
downpour replay keeps between pushes). Groups are made smaller
until that fits; a run whose results alone, or with a single block, cannot fit is refused
before it starts, saying how much it needs (:func:`memory_need`).

Output: test-function averages φ̂_L at the requested checkpoints L, per replicate and server;
thinned draws on request (ArviZ-style dims ``chain``, ``draw``); and, per replicate, the update
at which its position first became non-finite or exceeded ``divergence_threshold`` in absolute
value. Averages at and after a divergence are NaN, and the replicate is flagged, never silently.
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np

from simulators import validation
from simulators.schedule import Schedule
from simulators.seeding import SeedLike, generator
from workbench import running_sums
from workbench.minibatch import check_batch, draw_indices
from workbench.samplers.base import Sampler
from workbench.test_functions import THETA, THETA_SQUARED, TestFunction

_CHUNK_BUDGET = 1 << 22  # float64 elements per chunk array (32 MiB)
DRAW_STEPS = 64  # every random-number call covers this many updates of one replicate block
WINDOW_MAX = 64  # updates a sampler's ``advance`` may take at once
# Replicate blocks are stepped in groups of about this many float64 state elements
# (replicate × server × d: 256 KiB, the size of a core's L2 cache), each group through the
# whole run before the next; results do not depend on it (module docstring, *Groups*).
GROUP_ELEMENTS = 1 << 15
MEMORY_BUDGET = 1 << 30  # bytes: what one replay may hold at once, by default (*Memory*)
_BUDGET = contextvars.ContextVar("memory_budget", default=MEMORY_BUDGET)


@contextmanager
def replay_memory_budget(budget: int | None) -> Iterator[None]:
    """Replays inside the block hold at most ``budget`` bytes unless they are given their own
    ``memory_budget`` (None: the default, :data:`MEMORY_BUDGET`). The runner wraps every task
    in it, wherever the task runs (this process, a pool worker, a Dask worker)."""
    budget = MEMORY_BUDGET if budget is None else validation.integer("memory_budget", budget,
                                                                     minimum=1)
    token = _BUDGET.set(budget)
    try:
        yield
    finally:
        _BUDGET.reset(token)


def log_checkpoints(n_updates: int, count: int) -> np.ndarray:
    """``min(count, n_updates)`` distinct, roughly log-spaced sample counts ending at n_updates.

    Rounded geometric points are pushed apart where they would collide, so the number of
    checkpoints depends only on ``count`` (runs of different lengths share a checkpoint dim).
    """
    n_updates = validation.integer("n_updates", n_updates, minimum=1)
    count = min(validation.integer("n_checkpoints", count, minimum=1), n_updates)
    points = np.round(np.geomspace(1, n_updates, count)).astype(np.int64)
    points[-1] = n_updates
    for i in range(count - 2, -1, -1):
        points[i] = max(min(points[i], points[i + 1] - 1), i + 1)
    return points


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


def replay(
    schedule: Schedule,
    sampler: Sampler,
    gradient,
    *,
    n_updates: int,
    n_replicates: int,
    initial_position,
    seed: SeedLike,
    batch_size: int,
    replacement: bool = True,
    test_functions: Sequence[TestFunction] = (THETA, THETA_SQUARED),
    checkpoints: Sequence[int] | None = None,
    thin: int = 0,
    replicate_block: int = 50,
    blocks: Sequence[int] | None = None,
    divergence_threshold: float = 1e100,
    chunk_size: int | None = None,
    progress: Callable[[int], None] | None = None,
    memory_budget: int | None = None,
) -> Replay:
    """Replay the first ``n_updates`` applied updates of every server of ``schedule``.

    gradient: an estimator with ``n_data``, ``dim``, ``prepare(indices) -> minibatch`` and
        ``__call__(position, minibatch) -> ∇Ũ`` (see :mod:`workbench.models`); for sharded
        schedules a shard-aware one (module docstring).
    initial_position: broadcastable to ``(replicate, server, d)``.
    blocks: which replicate blocks to run (default all); see the module docstring.
    memory_budget: bytes the replay may hold (default: :func:`replay_memory_budget`'s, else
        :data:`MEMORY_BUDGET`); a run that cannot fit is refused before it starts.
    """
    n_updates = validation.integer("n_updates", n_updates, minimum=1)
    memory_budget = _BUDGET.get() if memory_budget is None else memory_budget
    if schedule.attrs.get("protocol") is not None:
        from workbench.protocol_replay import ProtocolReplayer  # it builds on this module

        replayer = ProtocolReplayer(schedule, sampler, gradient, n_updates, batch_size,
                                    replacement)
    else:
        replayer = _ScheduleReplayer.of(schedule, sampler, gradient, n_updates, batch_size,
                                        replacement)
    all_blocks = replicate_blocks(n_replicates, replicate_block)
    n_blocks = len(all_blocks)
    selected = list(range(n_blocks)) if blocks is None else list(blocks)
    per_group = _blocks_per_group(
        memory_budget, replayer.layout, selected_blocks=len(selected),
        selected_rows=sum(len(all_blocks[b]) for b in selected if 0 <= b < n_blocks),
        block_rows=len(all_blocks[0]), dim=gradient.dim, n_updates=n_updates,
        batch_size=batch_size, test_functions=test_functions, checkpoints=checkpoints,
        thin=thin, chunk_size=chunk_size)
    groups = [selected[i:i + per_group] for i in range(0, len(selected), per_group)]
    options = dict(n_replicates=n_replicates, seed=seed, batch_size=batch_size,
                   test_functions=test_functions, checkpoints=checkpoints, thin=thin,
                   replicate_block=replicate_block, divergence_threshold=divergence_threshold,
                   chunk_size=chunk_size)
    start = np.asarray(initial_position, dtype=float)
    rows = np.cumsum([0] + [len(all_blocks[b]) if 0 <= b < n_blocks else 0 for b in selected])
    per_replicate = start.ndim == 3 and start.shape[0] > 1
    if len(groups) <= 1 or (per_replicate and start.shape[0] != rows[-1]):
        # one group; or starting positions that do not fit, which build() reports
        return replayer.run(initial_position, blocks=blocks, progress=progress, **options)
    # Blocks draw from their own streams, so a group of blocks run on its own gives its
    # replicates exactly as the whole run would (module docstring, *Randomness*).
    parts, first = [], 0
    scaled = _GroupProgress(progress, rows[-1])
    for group in groups:
        last = first + len(group)
        group_start = start[rows[first]:rows[last]] if per_replicate else start
        parts.append(replayer.run(group_start, blocks=group,
                                  progress=scaled.for_rows(rows[last] - rows[first]),
                                  **options))
        first = last
    return _joined(parts)


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


@dataclass(frozen=True)
class _ScheduleReplayer:
    """The plain replay of a schedule, one group of replicate blocks at a time."""

    staleness: np.ndarray  # (update, server)
    shards: _ShardDraws | None
    sampler: Sampler
    gradient: object
    n_updates: int
    replacement: bool

    @classmethod
    def of(cls, schedule: Schedule, sampler: Sampler, gradient, n_updates: int,
           batch_size: int, replacement: bool) -> _ScheduleReplayer:
        shards = _ShardDraws.for_schedule(schedule, gradient, n_updates, batch_size,
                                          replacement)
        return cls(schedule.update_staleness(n_updates), shards, sampler, gradient, n_updates,
                   replacement)

    @property
    def layout(self) -> GroupLayout:
        return GroupLayout(self.staleness.shape[1], int(self.staleness.max()))

    def run(self, initial_position, *, blocks, progress, **options) -> Replay:
        return _replay_blocks(self.staleness, self.shards, self.sampler, self.gradient,
                              self.n_updates, initial_position, replacement=self.replacement,
                              blocks=blocks, progress=progress, **options)


def _replay_blocks(staleness, shards, sampler, gradient, n_updates, initial_position, *,
                   n_replicates, seed, batch_size, replacement, test_functions, checkpoints,
                   thin, replicate_block, blocks, divergence_threshold, chunk_size,
                   progress) -> Replay:
    """:func:`replay` of the listed blocks, stepped together (one group)."""
    n_servers = staleness.shape[1]
    run = ReplaySetup.build(
        n_updates, n_servers, gradient, n_replicates=n_replicates,
        initial_position=initial_position, seed=seed, batch_size=batch_size,
        test_functions=test_functions, checkpoints=checkpoints, thin=thin,
        replicate_block=replicate_block, blocks=blocks,
        divergence_threshold=divergence_threshold, chunk_size=chunk_size)
    state = sampler.init(run.start)
    shape = run.start.shape
    recorded = np.shape(sampler.position(state))  # (replicate, server, d), or more (phase space)

    tau_max = int(staleness.max())
    ring_size = tau_max + 1
    ring = np.empty((ring_size,) + shape)
    ring[:] = sampler.gradient_point(state)
    steps = np.arange(n_updates)
    read_slots = (steps[:, None] - staleness) % ring_size
    same_slot = (read_slots == read_slots[:, :1]).all(axis=1).tolist()
    first_slot = read_slots[:, 0].tolist()  # Python ints: fast scalar access in the loop
    write_slot = ((steps + 1) % ring_size).tolist()
    write_slots = (steps + 1) % ring_size
    server_index = np.arange(n_servers)
    advance = _advance_of(sampler)
    windows = _windows(staleness.min(axis=1), WINDOW_MAX if advance else 1)
    accumulator = run.accumulator()
    # The compiled path (workbench.engine_kernel) where sampler and estimator opt in.
    from workbench.engine_kernel import KernelReplay

    kernel = KernelReplay.plan(sampler, gradient, state, shards, run, accumulator, replacement)

    with np.errstate(over="ignore", invalid="ignore"):
        for first in range(0, n_updates, run.chunk_size):
            length = min(run.chunk_size, n_updates - first)
            if kernel is not None:
                kernel.advance(ring, read_slots[first:first + length],
                               write_slots[first:first + length], first, length)
                if progress is not None:
                    progress(length)
                continue
            noise, minibatches = run.draw(first, length, gradient, replacement, shards)
            positions = np.empty((length,) + recorded)
            step, position, gradient_point = sampler.step, sampler.position, sampler.gradient_point
            j = 0
            while j < length:
                update = first + j
                width = min(windows[update], length - j)
                if width > 1:
                    # Every update of the window reads a version older than its start, so
                    # their gradients are evaluated together and the sampler advances
                    # through them in one call (bit-identical to stepping; see _windows).
                    end = update + width
                    slots = read_slots[update:end]
                    if all(same_slot[update:end]):
                        read = ring[slots[:, 0]]
                    else:
                        read = ring[slots, :, server_index].transpose(0, 2, 1, 3)
                    state, window_positions, points = advance(
                        state, gradient(read, minibatches[j:j + width]), noise[j:j + width])
                    positions[j:j + width] = window_positions
                    ring[write_slots[update:end]] = points
                    j += width
                    continue
                if same_slot[update]:
                    read = ring[first_slot[update]]
                else:
                    read = ring[read_slots[update], :, server_index].transpose(1, 0, 2)
                state = step(state, gradient(read, minibatches[j]), noise[j])
                positions[j] = position(state)
                ring[write_slot[update]] = gradient_point(state)
                j += 1
            accumulator.add(positions, first)
            if progress is not None:
                progress(length)
    if kernel is not None:
        state = kernel.final_state()
    return accumulator.result(np.array(sampler.position(state)))


def memory_need(rows: int, group_rows: int, layout: GroupLayout, *, dim: int, n_updates: int,
                batch_size: int, test_functions: Sequence[TestFunction],
                checkpoints: Sequence[int] | None, thin: int,
                chunk_size: int | None) -> tuple[int, int]:
    """(results, working) bytes of a replay of ``rows`` replicates stepped ``group_rows`` at
    a time (module docstring, *Memory*): results for all rows; for one group, a chunk's noise,
    minibatches and positions, the ring buffer and the states held beside it."""
    n_servers, steps = layout.n_servers, layout.steps_per_update
    widths = sum(int(np.shape(f(np.zeros((1, 1, dim))))[-1]) for f in test_functions)
    n_checkpoints = 1 if checkpoints is None else len(np.unique(np.asarray(checkpoints)))
    n_draws = n_updates // thin if thin else 0
    per_row = n_servers * (n_checkpoints * widths + n_draws * dim + dim + 1)
    results = 2 * 8 * rows * per_row
    elements = group_rows * n_servers * dim
    chunk = chunk_size or _default_chunk(group_rows, n_servers, dim, batch_size, steps)
    evaluations = chunk * steps * (batch_size + 2)  # noise and minibatch of each evaluation
    working = 8 * elements * (evaluations + chunk + layout.tau_max + 2 + layout.held_states)
    return results, working


def _blocks_per_group(budget: int, layout: GroupLayout, *, selected_blocks: int,
                      selected_rows: int, block_rows: int, dim: int, **sizes) -> int:
    """The most blocks a group may hold within the memory budget (and GROUP_ELEMENTS, where
    the layout is cache-sized)."""
    budget = validation.integer("memory_budget", budget, minimum=1)
    per_group = max(1, (GROUP_ELEMENTS // (block_rows * layout.n_servers * dim)
                        if layout.cache_sized else selected_blocks))
    while True:
        results, working = memory_need(selected_rows, per_group * block_rows, layout,
                                       dim=dim, **sizes)
        if results + working <= budget or per_group == 1:
            break
        per_group = max(1, per_group // 2)
    if results + working > budget:
        mib = 1 << 20
        raise validation.InvalidParameter(
            "memory_budget", budget,
            f"is too small for this run: it needs about {(results + working) / mib:.0f} MiB "
            f"({results / mib:.0f} MiB of results for {selected_rows} replicates, "
            f"{working / mib:.0f} MiB to step one block); raise memory_budget, or run fewer "
            "replicates, checkpoints or thinned draws")
    return per_group


class _GroupProgress:
    """A replay's progress callback shared by its groups: each group reports its updates,
    and the caller is told whole updates of the full run (all replicates)."""

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


def _joined(parts: list[Replay]) -> Replay:
    """The replays of consecutive replicate groups as one replay (replicate-first arrays)."""
    first = parts[0]
    return Replay(
        checkpoints=first.checkpoints,
        averages={name: np.concatenate([p.averages[name] for p in parts], axis=1)
                  for name in first.averages},
        diverged_at=np.concatenate([p.diverged_at for p in parts]),
        draws=None if first.draws is None else np.concatenate([p.draws for p in parts]),
        draw_iterations=first.draw_iterations,
        final_position=np.concatenate([p.final_position for p in parts]),
    )


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
    thin: int
    divergence_threshold: float
    chunk_size: int

    @classmethod
    def build(cls, n_updates: int, n_servers: int, gradient, *, n_replicates: int,
              initial_position, seed: SeedLike, batch_size: int,
              test_functions: Sequence[TestFunction], checkpoints: Sequence[int] | None,
              thin: int, replicate_block: int, blocks: Sequence[int] | None,
              divergence_threshold: float, chunk_size: int | None,
              steps_per_update: int = 1) -> ReplaySetup:
        """``steps_per_update``: gradient evaluations per recorded update (π for downpour);
        the chunk size counts gradient evaluations and stays a multiple of DRAW_STEPS."""
        thin = validation.integer("thin", thin, minimum=0)
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
            chunk_size = _default_chunk(n_rows, n_servers, dim, batch_size, steps_per_update)
        chunk_size = validation.integer("chunk_size", chunk_size, minimum=1)
        if (chunk_size * steps_per_update) % DRAW_STEPS:
            raise validation.InvalidParameter(
                "chunk_size", chunk_size,
                f"times {steps_per_update} must be a multiple of DRAW_STEPS = {DRAW_STEPS}")
        return cls(n_updates, start, block_sizes,
                   [generator(seed, "noise", b) for b in blocks],
                   [generator(seed, "minibatch", b) for b in blocks],
                   batch_size, checkpoints, tuple(test_functions), thin, divergence_threshold,
                   chunk_size)

    def draw(self, first: int, length: int, gradient, replacement: bool,
             shards: _ShardDraws | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Noise and minibatches for ``length`` gradient evaluations from evaluation ``first``."""
        return _draw(self.noise_rngs, self.batch_rngs, self.block_sizes, first, length,
                     self.start.shape[1], self.start.shape[2], gradient, self.batch_size,
                     replacement, shards)

    def accumulator(self) -> Accumulator:
        return Accumulator(self.test_functions, self.checkpoints, self.start.shape[:2],
                           self.thin, self.divergence_threshold)


class Accumulator:
    """Running test-function sums, checkpoint averages, divergence flags and thinned draws,
    fed chunk by chunk with the recorded positions ``(update, replicate, server, d)``."""

    def __init__(self, test_functions: Sequence[TestFunction], checkpoints: np.ndarray,
                 shape: tuple[int, int], thin: int, divergence_threshold: float):
        self.test_functions = test_functions
        self.checkpoints = checkpoints
        self.thin = thin
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
        if self.thin:
            keep = sample_counts % self.thin == 0
            self.draws.append(positions[keep])
            self.draw_iterations.append(sample_counts[keep])

    def result(self, final_position: np.ndarray) -> Replay:
        checkpoints, diverged_at = self.checkpoints, self.diverged_at
        result = {name: np.stack(values) for name, values in self.averages.items()}
        for values in result.values():
            too_late = (diverged_at >= 0) & (checkpoints[:, None, None] >= diverged_at)
            values[too_late] = np.nan
        thin = self.thin
        return Replay(
            checkpoints=checkpoints,
            averages=result,
            diverged_at=diverged_at,
            draws=np.concatenate(self.draws).transpose(1, 2, 0, 3) if thin else None,
            draw_iterations=np.concatenate(self.draw_iterations) if thin else None,
            final_position=final_position,
        )


def _default_chunk(n_rows: int, n_servers: int, dim: int, batch_size: int,
                   steps_per_update: int = 1) -> int:
    """Updates per chunk: arrays of about _CHUNK_BUDGET elements, whole DRAW_STEPS calls."""
    per_step = n_rows * n_servers * dim * (batch_size + 3)
    chunk_size = int(max(1, min(4096, _CHUNK_BUDGET // per_step)))
    chunk_size //= steps_per_update
    return max(DRAW_STEPS, chunk_size - chunk_size % DRAW_STEPS)


def _draw(noise_rngs, batch_rngs, sizes, first: int, length: int, n_servers: int, dim: int,
          gradient, batch_size: int, replacement: bool,
          shards: _ShardDraws | None) -> tuple[np.ndarray, np.ndarray]:
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

def _windows(least_staleness: np.ndarray, limit: int) -> list[int]:
    """For each update l, how many updates from l on can be evaluated together.

    Update l + i reads version l + i - τ_{l+i}; it is already known at the start of update l
    when τ_{l+i} >= i (on every server). The window is the longest run with that property,
    at most ``limit`` updates (1 when the sampler cannot advance several steps at once).
    """
    n = least_staleness.size
    widths = np.ones(n, dtype=np.int64)
    growing = np.ones(n, dtype=bool)
    for offset in range(1, limit):
        if offset >= n:
            break
        fits = np.zeros(n, dtype=bool)
        fits[:n - offset] = least_staleness[offset:] >= offset
        growing &= fits
        if not growing.any():
            break
        widths += growing
    return widths.tolist()


def _advance_of(sampler):
    """The sampler's ``advance`` if the class that defines its ``step`` also defines it.

    A subclass that changes ``step`` but not ``advance`` is stepped one update at a time.
    """
    owner = next((c for c in type(sampler).__mro__ if "step" in c.__dict__), None)
    if owner is None or "advance" not in owner.__dict__:
        return None
    return sampler.advance


@dataclass(frozen=True)
class _ShardDraws:
    """Per-update shards and shard frequencies of a sharded replay, ``(update, server)``."""

    sizes: np.ndarray  # N_s of each shard
    shards: np.ndarray  # padded to whole DRAW_STEPS calls (the surplus is never used)
    frequencies: np.ndarray

    @classmethod
    def for_schedule(cls, schedule: Schedule, gradient, n_updates: int, batch_size: int,
                     replacement: bool) -> _ShardDraws | None:
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
