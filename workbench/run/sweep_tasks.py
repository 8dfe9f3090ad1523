"""The tasks of a sweep on an executor: planned, run in the workers, and gathered.

:mod:`workbench.run.runner` decides which points of a sweep to compute (steps 1, 4 and 5 of its
docstring); this module computes them (steps 2 and 3):

- :func:`plan_tasks` turns the points into tasks, largest first (longest-processing-time
  order). With several workers, points whose replicates run in independently seeded blocks
  are split into groups of consecutive blocks, only as much as balancing the workers requires.
- A :class:`TaskBatch` holds the tasks of some points of one sweep and what came back: a split
  point is finished (``finish_point`` over its merged blocks) as soon as its last block is in,
  and every finished point is handed to the sweep, encoded as netCDF by the worker that
  computed it when there is a store (:func:`workbench.store.result_store.encode_point`). With a
  store, a point is claimed (its lock taken, by the sweep's ``claim``) only when its first
  task is about to be submitted, and a point the sweep does not claim is dropped with its
  tasks: the locks held at once are those of the points in flight.
- A point whose replicate blocks are kept (a sequential check's looks,
  :meth:`~workbench.run.experiment.Experiment.kept_blocks`) always runs as blocks: the runs
  of consecutive blocks found stored are not computed again (:class:`KeptBlocks`), and each
  run of consecutive blocks a task computes is cut from its raw results and encoded by the
  worker, and kept by the sweep the moment it is back (one stored file a run, not a block),
  unless it was computed faster than it would be written and read back.
  A point that is not split is finished by the task that computes its missing blocks, with
  the blocks found stored sent along.
- A :class:`TaskLoop` keeps a bounded number of tasks in flight on one executor, for one or
  more batches (oldest first), gives the workers their next tasks before the parent writes
  finished points, and recovers from a worker that dies: only the point whose task it took
  fails (:class:`PointsLost`), the other tasks run again.
"""

from __future__ import annotations

import heapq
import math
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import ALL_COMPLETED, CancelledError, Future
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np
import xarray as xr

from simulators.exceptions import PicklesWithArguments
from workbench.core.interrupts import wait_deferring_interrupt
from workbench.core.memory_budget import replay_memory_budget
from workbench.run import progress
from workbench.run.compile_time import compiling
from workbench.run.executors import Workers
from workbench.run.experiment import Experiment, point_key
from workbench.run.pool import one_blas_thread
from workbench.store.result_store import encode_point, stamped_bytes

BALANCE_TOLERANCE = 0.1
SPLIT_LEVELS = (1, 2, 3, 4, 6, 8)
IN_FLIGHT_PER_WORKER = 2
FINISH: tuple[int, ...] = ()  # the blocks of a finishing task (merge and finish a split point)


class PointsLost(PicklesWithArguments, Exception):
    """Points whose worker process died while computing them (the others were stored)."""

    def __init__(self, reasons: dict[str, str]):
        self.reasons = reasons
        listed = "; ".join(f"{point}: {reason}" for point, reason in reasons.items())
        super().__init__(f"{len(reasons)} point(s) failed because {listed}; the other points "
                         "are stored, and a rerun computes only the failed ones")


@dataclass(frozen=True)
class Task:
    """One unit of work: a whole point (``blocks`` None) or some of its replicate blocks;
    ``finishes``: the blocks are all its point still needs (kept blocks), and the task finishes
    the point too."""

    point: int
    blocks: tuple[int, ...] | None
    cost: float
    finishes: bool = False


class TaskSeconds(NamedTuple):
    """What a task took, in seconds of its process: its computation (encoding and numba's
    compiling left out), and numba's compiling (:mod:`.compile_time`), which a later task of
    the process, or a later run on this machine, does not pay again."""

    compute: float
    compiling: float


@dataclass(frozen=True)
class KeptRun:
    """A run of consecutive kept blocks just computed: the bytes the store keeps (None: it was
    computed too fast to be worth keeping), its raw results (None when its task finished the
    point, which needs them no more), and the seconds computing it took (its replicates' share
    of its task's)."""

    content: bytes | None
    raw: xr.Dataset | None
    seconds: float


@dataclass(frozen=True)
class KeptBlocks:
    """A point whose replicate blocks the store keeps: each block's replicates (``ranges``),
    the raw results of the runs of consecutive blocks found stored (``found``, by first block,
    with ``stops``, each run's end), ``stored_as(rows)``, the store key and identity of a
    run of blocks holding the replicates ``rows``, and the blocks a run with more replicates
    has too (``lasting``: all but a last block shorter than the others, or a lone block
    shorter than the block size, which a larger run replaces by a longer one)."""

    ranges: list[range]
    found: dict[int, xr.Dataset]
    stops: dict[int, int]
    stored_as: Callable[[range], tuple[str, dict]]
    lasting: frozenset[int]

    @property
    def missing(self) -> list[int]:
        """The blocks to compute, in order."""
        covered = {b for first, stop in self.stops.items() for b in range(first, stop)}
        return [b for b in range(len(self.ranges)) if b not in covered]

    def runs(self, blocks: tuple[int, ...]) -> list[tuple[int, range, str | None, dict | None]]:
        """``blocks`` as runs of consecutive blocks, none of them both :attr:`lasting` and
        not: each one's first block, replicates, and store key and identity (None for a run
        of blocks that do not last, which no larger run could read, so it is not kept)."""
        runs, start = [], 0
        for end in range(1, len(blocks) + 1):
            if end == len(blocks) or blocks[end] != blocks[end - 1] + 1 or \
                    (blocks[end] in self.lasting) != (blocks[start] in self.lasting):
                rows = range(self.ranges[blocks[start]].start, self.ranges[blocks[end - 1]].stop)
                stored = self.stored_as(rows) if blocks[start] in self.lasting else (None, None)
                runs.append((blocks[start], rows, *stored))
                start = end
        return runs


def plan_tasks(costs: list[float], blocks: list[int], n_workers: int) -> list[Task]:
    """Tasks for points with the given costs and block counts, largest first.

    Splitting a point costs something (each task pays the engine's per-update overhead once,
    and the point needs a finishing task), so points are split only as much as balance
    requires: the coarsest of ever finer block groupings whose longest-processing-time
    schedule on ``n_workers`` comes within ``BALANCE_TOLERANCE`` of a perfect share.
    """
    whole = [Task(i, None, cost) for i, cost in enumerate(costs)]
    if n_workers <= 1:
        return sorted(whole, key=lambda task: -task.cost)
    share = sum(costs) / n_workers
    tasks = whole
    for pieces_per_worker in SPLIT_LEVELS:
        if _makespan(tasks, n_workers) <= (1 + BALANCE_TOLERANCE) * share:
            break
        tasks = _split(costs, blocks, share / pieces_per_worker)
    return sorted(tasks, key=lambda task: -task.cost)


def _split(costs: list[float], blocks: list[int], target: float) -> list[Task]:
    """Every point cut into groups of consecutive blocks costing about ``target`` or more."""
    tasks = []
    for i, (cost, n_blocks) in enumerate(zip(costs, blocks, strict=True)):
        group = max(1, math.ceil(target / (cost / n_blocks))) if cost > 0 else n_blocks
        if n_blocks <= 1 or group >= n_blocks:
            tasks.append(Task(i, None, cost))
            continue
        for start in range(0, n_blocks, group):
            chunk = tuple(range(start, min(start + group, n_blocks)))
            tasks.append(Task(i, chunk, cost * len(chunk) / n_blocks))
    return tasks


def _makespan(tasks: list[Task], n_workers: int) -> float:
    """Finishing time of the longest-processing-time-first schedule of ``tasks``."""
    loads = [0.0] * n_workers
    for task in sorted(tasks, key=lambda task: -task.cost):
        heapq.heapreplace(loads, loads[0] + task.cost)
    return max(loads)


def _run_task(experiment: Experiment, config: dict, point: dict, seed: int,
              blocks: tuple[int, ...] | None, sink,
              memory_budget: int | None = None,
              stored_as: tuple[str, dict] | None = None,
              kept: list[tuple[int, range, str | None, dict | None]] | None = None,
              found: dict[int, xr.Dataset] | None = None,
              keep_min_seconds: float = 0.0) -> tuple[Any, TaskSeconds]:
    """Run a whole point (``blocks`` None) or some of its replicate blocks; a whole point is
    returned encoded for the store (:func:`_stored_form`) if ``stored_as`` gives its key and
    identity. Blocks that are kept (``kept``: each run of consecutive blocks' first block,
    replicates, store key and identity) come back as one :class:`KeptRun` a run, encoded
    only if it has a key (its blocks last, :class:`KeptBlocks`) and computing it took at least
    ``keep_min_seconds`` (its share of the blocks' time), and
    with ``found`` (the raw results of the point's other blocks, by first block) the point is
    finished here too: ``(runs, finished point)``. With it come its :class:`TaskSeconds`."""
    start = time.perf_counter()
    with progress.reporting_to(sink), one_blas_thread(), replay_memory_budget(memory_budget), \
            compiling() as compiled:
        if blocks is None:
            result = experiment.run_point(config, point, seed)
        else:
            result = experiment.run_blocks(config, point, seed, list(blocks))
        blocks_seconds = time.perf_counter() - start - compiled.seconds
        if kept is not None:
            # each run's replicates by position, as a slice: a selection by an index array
            # would lay the values out otherwise, and sums over them round otherwise
            edges = np.cumsum([0] + [len(rows) for _, rows, _, _ in kept])
            pieces = {first: result.isel(replicate=slice(edges[k], edges[k + 1]))
                      for k, (first, _, _, _) in enumerate(kept)}
            finished = None
            if found is not None:
                raws = {**found, **pieces}
                finished = experiment.finish_point(config, point, seed, experiment.merge_blocks(
                    config, point, [raws[b] for b in sorted(raws)]))
    seconds = TaskSeconds(time.perf_counter() - start - compiled.seconds, compiled.seconds)
    if blocks is None:
        return _stored_form(result, stored_as), seconds
    if kept is None:
        return result, seconds
    replicates = sum(len(rows) for _, rows, _, _ in kept)
    shares = [blocks_seconds * len(rows) / replicates for _, rows, _, _ in kept]
    runs = [KeptRun(stamped_bytes(key, identity, pieces[first])
                    if key is not None and share >= keep_min_seconds else None,
                    None if found is not None else pieces[first], share)
            for (first, _, key, identity), share in zip(kept, shares, strict=True)]
    return (runs, None if finished is None else _stored_form(finished, stored_as)), seconds


def raw_block(dataset: xr.Dataset) -> xr.Dataset:
    """A kept block as :meth:`Experiment.merge_blocks` takes it: without the store's
    attributes."""
    dataset = dataset.copy()
    for name in ("store_key", "store_identity"):
        dataset.attrs.pop(name, None)
    return dataset


def _finish_task(experiment: Experiment, config: dict, point: dict, seed: int,
                 raws: list[xr.Dataset],
                 memory_budget: int | None = None,
                 stored_as: tuple[str, dict] | None = None) -> tuple[Any, TaskSeconds]:
    """Merge a split point's blocks and finish it; encoded, and its seconds counted, as
    :func:`_run_task` says."""
    start = time.perf_counter()
    with one_blas_thread(), replay_memory_budget(memory_budget), compiling() as compiled:
        raw = experiment.merge_blocks(config, point, raws)
        finished = experiment.finish_point(config, point, seed, raw)
    seconds = TaskSeconds(time.perf_counter() - start - compiled.seconds, compiled.seconds)
    return _stored_form(finished, stored_as), seconds


def _stored_form(dataset: xr.Dataset, stored_as: tuple[str, dict] | None):
    """The finished point as the parent saves it: encoded here, in the worker, when there is a
    store (:func:`workbench.store.result_store.encode_point`), else the Dataset itself."""
    return dataset if stored_as is None else encode_point(*stored_as, dataset)



class TaskBatch:
    """Tasks for some points of one sweep, and what came back of them (module docstring,
    steps 2 and 3). ``complete(i, finished, seconds)`` is called for each point once it is
    done: ``finished`` is the point's Dataset, or with ``stored_as`` (every point's store key
    and identity) the :class:`~workbench.store.result_store.EncodedPoint` its worker made of it.
    ``claim(i)``, if given, is called before point ``i``'s first task is submitted: false drops
    the point and its tasks (module docstring). ``kept``: the points whose blocks are kept
    (:class:`KeptBlocks`); ``keep(key, identity, content, seconds)`` is called for every run of
    their blocks computed here in at least ``keep_min_seconds``, with the bytes to store."""

    def __init__(self, experiment: Experiment, config: dict, seed: int, points: list[dict],
                 todo: list[int], n_workers: int, sink,
                 complete: Callable[[int, Any, float], None],
                 stored_as: list[tuple[str, dict]] | None,
                 claim: Callable[[int], bool] | None = None,
                 kept: dict[int, KeptBlocks] | None = None,
                 keep: Callable[[str, dict, bytes, float], None] | None = None,
                 keep_min_seconds: float = 0.0):
        self.experiment, self.config, self.seed, self.points = experiment, config, seed, points
        self.sink, self.complete, self.stored_as = sink, complete, stored_as
        self.claim = claim
        self.kept, self.keep, self.keep_min_seconds = kept or {}, keep, keep_min_seconds
        # the runs of kept blocks each task in flight computes (KeptBlocks.runs), by task
        self.described: dict[Task, list[tuple[int, range, str | None, dict | None]]] = {}
        self.begun: set[int] = set()
        self.dropped: set[int] = set()
        self.planned = self._plan(todo, n_workers)
        self.tasks = deque(self.planned)
        self.outstanding = {i: sum(1 for t in self.tasks if t.point == i and t.blocks != FINISH)
                            for i in todo}
        self.partial: dict[int, dict[int, xr.Dataset]] = {
            i: dict(self.kept[i].found) if i in self.kept else {} for i in todo}
        self.seconds: dict[int, float] = dict.fromkeys(todo, 0.0)
        #: of the points whose blocks are kept, the compute seconds of the replicate blocks
        #: computed here (kept or too short to keep; none where every block was read): the
        #: rest of a point's seconds finished it
        self.block_seconds = {i: 0.0 for i in todo if i in self.kept}
        self.longest = 0.0  # the compute seconds of the longest task back so far
        self.compiling = 0.0  # the seconds numba compiled in the tasks back so far
        self.finished: dict[int, Any] = {}
        self.running = 0
        self.error: BaseException | None = None
        self.lost: dict[int, str] = {}

    def _plan(self, todo: list[int], n_workers: int) -> list[Task]:
        """The tasks of the points ``todo`` (:func:`plan_tasks`): a point whose blocks are
        kept runs its missing blocks alone, as blocks even when it is not split, and one with
        none missing only its finishing task."""
        experiment, config, points = self.experiment, self.config, self.points
        blocks, costs = [], []
        for i in todo:
            cost = float(experiment.work(config, points[i])) or 1.0
            if i in self.kept:
                missing, whole = len(self.kept[i].missing), len(self.kept[i].ranges)
                blocks.append(missing)
                costs.append(cost * missing / whole)
            else:
                blocks.append(experiment.replicate_blocks(config, points[i]))
                costs.append(cost)
        planned = [Task(i, FINISH, 0.0) for i in todo
                   if i in self.kept and not self.kept[i].missing]
        for task in plan_tasks(costs, blocks, n_workers):
            i = todo[task.point]
            if i not in self.kept:
                planned.append(Task(i, task.blocks, task.cost))
            elif missing := self.kept[i].missing:
                if task.blocks is None:  # not split: the task finishes the point too
                    planned.append(Task(i, tuple(missing), task.cost, finishes=True))
                else:
                    planned.append(Task(i, tuple(missing[b] for b in task.blocks), task.cost))
        return planned

    @property
    def queued(self) -> bool:
        """Tasks wait to be submitted (none after an error)."""
        return bool(self.tasks) and self.error is None

    @property
    def done(self) -> bool:
        return not self.queued and self.running == 0

    def begin(self, task: Task) -> bool:
        """Whether to submit ``task``: not if its point was dropped, or is dropped now because
        ``claim`` refuses its first task (or fails: the batch's error)."""
        i = task.point
        if i in self.dropped:
            return False
        if self.claim is None or i in self.begun:
            return True
        self.begun.add(i)
        try:
            if self.claim(i):
                return True
        except Exception as error:  # noqa: BLE001 - raised by raise_failures
            self.error = self.error or error
        self.dropped.add(i)
        return False

    @property
    def submitted(self) -> list[Task]:
        """The planned tasks, less those of dropped points."""
        return [task for task in self.planned if task.point not in self.dropped]

    def submit(self, task: Task, workers: Workers):
        stored = None if self.stored_as is None else self.stored_as[task.point]
        point = self.points[task.point]
        if task.blocks == FINISH:
            raws = [self.partial[task.point][b] for b in sorted(self.partial[task.point])]
            return workers.executor.submit(_finish_task, self.experiment, self.config, point,
                                           self.seed, raws, workers.memory_budget, stored)
        kept = found = None
        if task.point in self.kept:
            kept = self.described[task] = self.kept[task.point].runs(task.blocks)
            found = self.kept[task.point].found if task.finishes else None
        return workers.executor.submit(_run_task, self.experiment, self.config, point,
                                       self.seed, task.blocks, self.sink,
                                       workers.memory_budget, stored, kept, found,
                                       self.keep_min_seconds)

    def accept(self, task: Task, value, elapsed: float) -> bool:
        """Take a task's result; whether its point is now finished."""
        if task.point in self.lost:
            return False
        self.seconds[task.point] += elapsed
        self.longest = max(self.longest, elapsed)
        if task.blocks is None or task.blocks == FINISH:
            self.finished[task.point] = value
            return True
        if task.point in self.kept:
            runs, finished = value
            self.block_seconds[task.point] += sum(run.seconds for run in runs)
            described = self.described.pop(task)
            for (first, _, key, identity), run in zip(described, runs, strict=True):
                if run.raw is not None:
                    self.partial[task.point][first] = run.raw
                try:
                    if self.keep is not None and run.content is not None:
                        self.keep(key, identity, run.content, run.seconds)
                except Exception as error:  # noqa: BLE001 - raised by raise_failures
                    self.error = self.error or error
            if task.finishes:
                self.finished[task.point] = finished
                return True
        else:
            self.partial[task.point][task.blocks[0]] = value
        self.outstanding[task.point] -= 1
        if self.outstanding[task.point] == 0:
            # finish as soon as the last block is in: the point is stored sooner
            self.tasks.appendleft(Task(task.point, FINISH, 0.0))
        return False

    def complete_point(self, i: int) -> None:
        try:
            self.complete(i, self.finished.pop(i), self.seconds[i])
        except Exception as error:  # noqa: BLE001 - raised by raise_failures
            self.error = self.error or error

    def raise_failures(self) -> None:
        if self.error is not None:
            raise self.error
        if self.lost:
            raise PointsLost({point_key(self.points[i]): reason
                              for i, reason in self.lost.items()})


class TaskLoop:
    """Tasks of one or more batches on one executor, a bounded number in flight: each batch's
    in its order, the first batch's before the next one's."""

    def __init__(self, workers: Workers):
        self.workers = workers
        self.in_flight: dict[Future, tuple[TaskBatch, Task]] = {}
        self.limit = (1 if workers.kind == "serial"
                      else max(1, workers.n_workers * IN_FLIGHT_PER_WORKER))

    def submit_more(self, batches: list[TaskBatch]) -> None:
        for batch in batches:
            while batch.queued and len(self.in_flight) < self.limit:
                task = batch.tasks.popleft()
                if not batch.begin(task):
                    continue
                self.in_flight[batch.submit(task, self.workers)] = (batch, task)
                batch.running += 1

    def run(self, batch: TaskBatch) -> None:
        """One batch, until all its tasks are back."""
        self.submit_more([batch])
        while self.in_flight:
            self.step([batch])

    def step(self, batches: list[TaskBatch]) -> None:
        """Wait for some task to end and take what ended; the workers are given their next
        tasks before finished points are completed, so they do not wait while the parent
        writes a point."""
        done, _ = wait_deferring_interrupt(self.in_flight)
        broken: dict[Future, tuple[TaskBatch, Task]] = {}
        finished = []
        for future in done:
            batch, task = self.in_flight.pop(future)
            batch.running -= 1
            try:
                value, elapsed = future.result()
            except CancelledError:
                continue
            except BrokenProcessPool:
                broken[future] = (batch, task)
                continue
            except Exception as failure:  # noqa: BLE001 - raised by raise_failures
                batch.error = batch.error or failure
                continue
            batch.compiling += elapsed.compiling
            if batch.accept(task, value, elapsed.compute):
                finished.append((batch, task.point))
        if broken:
            self._recover(broken)
        self.submit_more(batches)
        for batch, i in finished:
            batch.complete_point(i)

    def _recover(self, broken: dict[Future, tuple[TaskBatch, Task]]) -> None:
        """A worker died: fail the points whose task it took, run the other tasks again."""
        for future in wait_deferring_interrupt(self.in_flight, ALL_COMPLETED)[0]:
            batch, task = broken[future] = self.in_flight.pop(future)
            batch.running -= 1
        reasons = self.workers.executor.lost(list(broken))
        for future, (batch, task) in broken.items():
            if future in reasons:
                batch.lost[task.point] = reasons[future]
        for batch, task in broken.values():
            if task.point not in batch.lost:
                batch.tasks.appendleft(task)
        for batch in {id(batch): batch for batch, _ in broken.values()}.values():
            for task in [t for t in batch.tasks if t.point in batch.lost]:
                batch.tasks.remove(task)
