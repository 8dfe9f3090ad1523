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
scaling and conducive gradients need (:mod:`workbench.gradients.sharded`). Single-shard
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
(:mod:`workbench.engine.protocols`), which pay a Python loop per group, make groups only as
small as the memory budget requires (:class:`GroupLayout`).

Compiled path: where the sampler and the estimator describe themselves (``kernel_spec()``:
SGLD, SGHMC; the Gaussian mean, and on sharded schedules its shard-local estimator, D-SGLD's
scaling of it and FSGLD's conducive gradient with diagonal surrogates), each chunk is stepped
by a numba kernel instead of the loop below, bit-identical to it (:mod:`workbench.engine.compiled`).

Memory: ``memory_budget`` (bytes, default 1 GiB, or what the enclosing
:func:`workbench.core.memory_budget.replay_memory_budget` says: the ``--memory-budget`` flag of
``workbench run``/``check`` sets it around every task) bounds what a replay holds at once: its
results (kept for every replicate: averages at each checkpoint, thinned draws, final
positions; counted twice, as joining the groups copies them) plus one group's working arrays
(the chunk's noise, minibatches and positions, the ring buffer, and the worker states a
downpour replay keeps between pushes; a prepared minibatch counts as d·(n + 1) floats unless
the estimator counts its own, as a per-example likelihood's indices and the intermediates of
one of its calls do, :func:`~workbench.engine.replay_setup.evaluation_elements`). Groups are
made smaller until that fits; a run whose results alone, or with a single block, cannot fit is
refused before it starts, saying how much it needs (:func:`memory_need`).

Output: test-function averages φ̂_L at the requested checkpoints L, per replicate and server;
thinned draws on request (ArviZ-style dims ``chain``, ``draw``); and, per replicate, the update
at which its position first became non-finite or exceeded ``divergence_threshold`` in absolute
value. Averages at and after a divergence are NaN, and the replicate is flagged, never silently.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from simulators import validation
from simulators.schedule import Schedule
from simulators.seeding import SeedLike
from workbench.core.memory_budget import memory_budget_in_force
from workbench.core.phi import THETA, THETA_SQUARED, TestFunction
from workbench.engine.replay_setup import (
    WINDOW_MAX,
    GroupLayout,
    GroupProgress,
    Replay,
    ReplaySetup,
    ShardDraws,
    memory_need,
    replicate_blocks,
)
from workbench.samplers.base import Sampler

# Replicate blocks are stepped in groups of about this many float64 state elements
# (replicate × server × d: 256 KiB, the size of a core's L2 cache), each group through the
# whole run before the next; results do not depend on it (module docstring, *Groups*).
GROUP_ELEMENTS = 1 << 15


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
    thin: int | Sequence[int] = 0,
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
    thin: keep every ``thin``-th update's positions as draws (0: none), or the updates listed
        (:func:`~workbench.engine.replay_setup.kept_updates`).
    blocks: which replicate blocks to run (default all); see the module docstring.
    memory_budget: bytes the replay may hold (default: :func:`replay_memory_budget`'s, else
        :data:`MEMORY_BUDGET`); a run that cannot fit is refused before it starts.
    """
    n_updates = validation.integer("n_updates", n_updates, minimum=1)
    memory_budget = memory_budget_in_force() if memory_budget is None else memory_budget
    if schedule.attrs.get("protocol") is not None:
        from workbench.engine.protocols import ProtocolReplayer  # it builds on this module

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
        thin=thin, chunk_size=chunk_size, gradient=gradient)
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
    scaled = GroupProgress(progress, rows[-1])
    for group in groups:
        last = first + len(group)
        group_start = start[rows[first]:rows[last]] if per_replicate else start
        parts.append(replayer.run(group_start, blocks=group,
                                  progress=scaled.for_rows(rows[last] - rows[first]),
                                  **options))
        first = last
    return _joined(parts)


@dataclass(frozen=True)
class _ScheduleReplayer:
    """The plain replay of a schedule, one group of replicate blocks at a time."""

    staleness: np.ndarray  # (update, server)
    shards: ShardDraws | None
    sampler: Sampler
    gradient: object
    n_updates: int
    replacement: bool

    @classmethod
    def of(cls, schedule: Schedule, sampler: Sampler, gradient, n_updates: int,
           batch_size: int, replacement: bool) -> _ScheduleReplayer:
        shards = ShardDraws.for_schedule(schedule, gradient, n_updates, batch_size,
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
    # The compiled path (workbench.engine.compiled) where sampler and estimator opt in.
    from workbench.engine.compiled import KernelReplay

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
