"""Runs an experiment's sweep points on any executor, through the result store.

Each point is a pure function of (configuration, point, seed) (see
:mod:`workbench.experiments.base`), so where it runs cannot change it: one process, a process
pool and a Dask cluster give identical Datasets. The runner

1. looks every point up in the result store (:mod:`workbench.store`), if one is given; valid
   points are loaded, corrupt ones reported, moved aside and recomputed;
2. plans tasks for the rest: with several workers, points whose replicates run in
   independently seeded blocks are split into groups of consecutive blocks, only as much as
   balancing the workers requires (:func:`plan_tasks`); tasks are submitted largest first
   (longest-processing-time order), a bounded number at a time;
3. finishes a split point (``finish_point`` over its merged blocks) as soon as its last block
   is in, stores each point the moment it is complete, and
4. waits for the points another process was computing into the same store, and reads them;
5. combines the points in grid order, whatever order they finished in.

If a task raises, no new task is started, the tasks already running are waited for and their
points stored, and the error is raised: a rerun computes only what is missing. A pool worker
that dies (killed, out of memory) fails only the point it was computing, with the worker's
exit reason (:class:`PointsLost`, raised once the other points are done). Ctrl-C says how
many points were saved before it stops.
"""

from __future__ import annotations

import heapq
import math
import sys
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, CancelledError, wait
from concurrent.futures.process import BrokenProcessPool
from contextlib import ExitStack, nullcontext
from dataclasses import dataclass, field

import xarray as xr
from filelock import FileLock

from simulators import validation
from workbench import progress
from workbench.engine import replay_memory_budget
from workbench.executors import Workers, open_workers
from workbench.experiments.base import Experiment, point_key
from workbench.pool import one_blas_thread
from workbench.results import with_provenance
from workbench.store import CorruptPoint, ResultStore, point_identity, store_key

MAX_SEED = 2**63 - 1  # every result stores its seed as a netCDF int64 attribute
BALANCE_TOLERANCE = 0.1
SPLIT_LEVELS = (1, 2, 3, 4, 6, 8)
IN_FLIGHT_PER_WORKER = 2
STORE_ATTRS = ("store_key", "store_identity")
FINISH: tuple[int, ...] = ()  # the blocks of a finishing task (merge and finish a split point)


class PointsLost(Exception):
    """Points whose worker process died while computing them (the others were stored)."""

    def __init__(self, reasons: dict[str, str]):
        self.reasons = reasons
        listed = "; ".join(f"{point}: {reason}" for point, reason in reasons.items())
        super().__init__(f"{len(reasons)} point(s) failed because {listed}; the other points "
                         "are stored, and a rerun computes only the failed ones")


@dataclass(frozen=True)
class Task:
    """One unit of work: a whole point (``blocks`` None) or some of its replicate blocks."""

    point: int
    blocks: tuple[int, ...] | None
    cost: float


@dataclass
class SweepResult:
    """The combined Dataset and what the run did to get it."""

    dataset: xr.Dataset
    computed: list[dict] = field(default_factory=list)
    loaded: list[dict] = field(default_factory=list)
    recomputed: list[tuple[dict, str]] = field(default_factory=list)
    tasks: int = 0
    split: list[dict] = field(default_factory=list)
    seconds: float = 0.0

    def describe(self) -> str:
        parts = [f"{len(self.loaded)} from the store", f"{len(self.computed)} computed"]
        if self.recomputed:
            parts.append(f"{len(self.recomputed)} of them recomputed after corruption")
        if self.split:
            parts.append(f"{len(self.split)} split into replicate blocks")
        n = len(self.loaded) + len(self.computed)
        return f"{n} points ({', '.join(parts)}; {self.tasks} tasks) in {self.seconds:.1f} s"


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
              memory_budget: int | None = None) -> tuple[xr.Dataset, float]:
    start = time.perf_counter()
    with progress.reporting_to(sink), one_blas_thread(), replay_memory_budget(memory_budget):
        if blocks is None:
            result = experiment.run_point(config, point, seed)
        else:
            result = experiment.run_blocks(config, point, seed, list(blocks))
    return result, time.perf_counter() - start


def _finish_task(experiment: Experiment, config: dict, point: dict, seed: int,
                 raws: list[xr.Dataset],
                 memory_budget: int | None = None) -> tuple[xr.Dataset, float]:
    start = time.perf_counter()
    with one_blas_thread(), replay_memory_budget(memory_budget):
        raw = experiment.merge_blocks(config, point, raws)
        finished = experiment.finish_point(config, point, seed, raw)
    return finished, time.perf_counter() - start


def run_sweep(experiment: Experiment, config: dict, seed: int, *,
              workers: Workers | None = None, store: ResultStore | None = None,
              recompute: bool = False, show_progress: bool = False,
              on_point: Callable[[int, int], None] | None = None) -> SweepResult:
    """All sweep points of ``experiment`` under ``config`` and ``seed``, combined.

    workers: an open executor (:func:`workbench.executors.open_workers`); default this process.
    store: where points are looked up and saved; ``recompute`` ignores what it holds. A point
        another process is computing into the same store (its lock is held) is waited for and
        read, not computed twice (:meth:`workbench.store.ResultStore.claim`).
    show_progress: draw bars (only on a terminal; see :mod:`workbench.progress`).
    on_point: called as ``on_point(done, total)`` once the stored points are loaded and after
        every computed point (for a progress display other than the terminal's, such as the
        dashboard's).
    """
    seed = validation.integer("seed", seed, minimum=0, maximum=MAX_SEED)
    started = time.perf_counter()
    points = experiment.points(config)
    n_points = len(points)
    identities = [point_identity(experiment, config, p, seed) for p in points]
    keys = [store_key(identity) for identity in identities]
    report = SweepResult(dataset=xr.Dataset())
    results: list[xr.Dataset | None] = [None] * n_points
    corrupt: dict[int, str] = {}
    claims: dict[int, FileLock] = {}
    waiting: list[int] = []  # points another process is computing

    def load_stored(indices: list[int]) -> None:
        entries = store.manifest()
        for i in indices:
            try:
                results[i] = store.load(keys[i], entries.get(keys[i]))
            except CorruptPoint as error:
                if i not in claims:
                    lock = store.claim(keys[i])
                    if lock is None:  # being written by its owner: not corrupt, wait for it
                        waiting.append(i)
                        continue
                    claims[i] = lock
                corrupt[i] = error.reason
                moved = store.quarantine(keys[i])
                print(f"workbench: stored point {point_key(points[i])} of {experiment.name} is "
                      f"corrupt ({error}); recomputing it"
                      + (f" (the file is kept as {moved})" if moved else ""), file=sys.stderr)

    def release(i: int) -> None:
        if i in claims:
            claims.pop(i).release()

    with ExitStack() as stack:
        stack.callback(lambda: [release(i) for i in list(claims)])
        if store is not None:
            if not recompute:
                load_stored(list(range(n_points)))
            for i in range(n_points):
                if results[i] is not None or i in claims or i in waiting:
                    continue
                lock = store.claim(keys[i])
                if lock is None:
                    waiting.append(i)
                else:
                    claims[i] = lock
            store.remove_orphaned_temporaries({keys[i] for i in claims})
            if not recompute:  # stored by another process since the manifest was read
                load_stored([i for i in claims if i not in corrupt])
                for i in [i for i in claims if results[i] is not None]:
                    release(i)
        report.loaded = [points[i] for i in range(n_points) if results[i] is not None]
        todo = [i for i in range(n_points) if results[i] is None and i not in waiting]
        work = {i: experiment.work(config, points[i]) for i in todo}
        if workers is None:
            workers = stack.enter_context(open_workers(processes=1))
        bars = progress.SweepBars(experiment.name, n_points, sum(work.values()),
                                  max(work.values(), default=0),
                                  progress.wanted(show_progress))
        stack.callback(bars.close)
        bars.points.update(len(report.loaded))
        if on_point is not None:
            on_point(len(report.loaded), n_points)
        sink = stack.enter_context(workers.progress_sink(bars.add_updates)
                                   if bars.tracks_updates else nullcontext(None))

        def complete(i: int, dataset: xr.Dataset, seconds: float) -> None:
            if store is not None:
                dataset = store.save(keys[i], identities[i], dataset, seconds)
                release(i)
            results[i] = dataset
            report.computed.append(points[i])
            if i in corrupt:
                report.recomputed.append((points[i], corrupt[i]))
            bars.point_done(point_key(points[i]))
            if on_point is not None:
                on_point(len(report.loaded) + len(report.computed), n_points)

        def compute(indices: list[int]) -> None:
            tasks = _execute(experiment, config, seed, points, indices, workers, sink, complete)
            report.tasks += len(tasks)
            report.split += [points[i] for i in sorted({t.point for t in tasks if t.blocks})]

        try:
            compute(todo)
            for i in waiting:  # points another process was computing when this one started
                print(f"workbench: waiting for another process computing point "
                      f"{point_key(points[i])} of {experiment.name}", file=sys.stderr)
                claims[i] = store.lock(keys[i])
                claims[i].acquire()
                load_stored([i])
                if results[i] is None:  # that process stopped before storing it
                    compute([i])
                else:
                    release(i)
                    report.loaded.append(points[i])
                    bars.point_done(point_key(points[i]))
        except KeyboardInterrupt:
            if store is None:
                saved = "nothing saved (no store)"
            else:  # read back: the interrupt may have come between a save and its count
                entries = store.manifest()
                saved = (f"{sum(key in entries for key in keys)} of {n_points} points saved "
                         f"in {store.directory}")
            print(f"workbench: {experiment.name} interrupted; {saved}; a rerun resumes from "
                  "there", file=sys.stderr)
            raise

    for dataset in results:
        for name in STORE_ATTRS:
            dataset.attrs.pop(name, None)
    combined = experiment.combine(config, results)
    report.dataset = with_provenance(combined, experiment.name, config, seed)
    report.seconds = time.perf_counter() - started
    return report


def _execute(experiment: Experiment, config: dict, seed: int, points: list[dict],
             todo: list[int], workers: Workers, sink,
             complete: Callable[[int, xr.Dataset, float], None]) -> list[Task]:
    """Compute the points ``todo`` on ``workers``, calling ``complete(i, dataset, seconds)`` as
    each one is done; returns the tasks it planned (module docstring, steps 2 and 3)."""
    blocks = [experiment.replicate_blocks(config, points[i]) for i in todo]
    costs = [float(experiment.work(config, points[i])) or 1.0 for i in todo]
    planned = [Task(todo[t.point], t.blocks, t.cost)
               for t in plan_tasks(costs, blocks, workers.n_workers)]
    tasks = deque(planned)
    outstanding = {i: sum(1 for t in tasks if t.point == i) for i in todo}
    partial: dict[int, dict[int, xr.Dataset]] = {i: {} for i in todo}
    seconds: dict[int, float] = dict.fromkeys(todo, 0.0)
    in_flight: dict = {}
    error: BaseException | None = None
    limit = 1 if workers.kind == "serial" else max(1, workers.n_workers * IN_FLIGHT_PER_WORKER)

    def submit_more() -> None:
        while tasks and len(in_flight) < limit and error is None:
            task = tasks.popleft()
            if task.blocks == FINISH:
                raws = [partial[task.point][b] for b in sorted(partial[task.point])]
                future = workers.executor.submit(_finish_task, experiment, config,
                                                 points[task.point], seed, raws,
                                                 workers.memory_budget)
            else:
                future = workers.executor.submit(_run_task, experiment, config,
                                                 points[task.point], seed, task.blocks, sink,
                                                 workers.memory_budget)
            in_flight[future] = task

    def recover(broken: dict) -> None:
        """A worker died: fail the points whose task it took, run the other tasks again."""
        broken.update({future: in_flight.pop(future) for future in wait(in_flight).done})
        reasons = workers.executor.lost(list(broken))
        for future, task in broken.items():
            if future in reasons:
                lost[task.point] = reasons[future]
        for task in broken.values():
            if task.point not in lost:
                tasks.appendleft(task)
        for task in [t for t in tasks if t.point in lost]:
            tasks.remove(task)

    lost: dict[int, str] = {}
    submit_more()
    while in_flight:
        done, _ = wait(in_flight, return_when=FIRST_COMPLETED)
        broken = {}
        for future in done:
            task = in_flight.pop(future)
            try:
                value, elapsed = future.result()
            except CancelledError:
                continue
            except BrokenProcessPool:
                broken[future] = task
                continue
            except Exception as failure:  # noqa: BLE001 - re-raised below
                error = error or failure
                continue
            if task.point in lost:
                continue
            seconds[task.point] += elapsed
            if task.blocks is None or task.blocks == FINISH:
                complete(task.point, value, seconds[task.point])
                continue
            partial[task.point][task.blocks[0]] = value
            outstanding[task.point] -= 1
            if outstanding[task.point] == 0:
                # finish as soon as the last block is in: the point is stored sooner
                tasks.appendleft(Task(task.point, FINISH, 0.0))
        if broken:
            recover(broken)
        submit_more()
    if error is not None:
        raise error
    if lost:
        raise PointsLost({point_key(points[i]): reason for i, reason in lost.items()})
    return planned


def run_experiment(experiment: Experiment, config: dict, seed: int, processes: int = 1,
                   progress: bool = False, store: ResultStore | None = None) -> xr.Dataset:
    """All sweep points of ``experiment``, combined; ``processes`` local processes."""
    with open_workers(processes=processes) as workers:
        return run_sweep(experiment, config, seed, workers=workers, store=store,
                         show_progress=progress).dataset
