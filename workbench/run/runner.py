"""Runs an experiment's sweep points on any executor, through the result store.

Each point is a pure function of (configuration, point, seed) (see
:mod:`workbench.run.experiment`), so where it runs cannot change it: one process, a process
pool and a Dask cluster give identical Datasets. The runner

1. looks every point up in the result store (:mod:`workbench.store.result_store`), if one is given;
   valid points are loaded, corrupt ones reported, moved aside and recomputed;
2. plans tasks for the rest: with several workers, points whose replicates run in
   independently seeded blocks are split into groups of consecutive blocks, only as much as
   balancing the workers requires; tasks are submitted largest first (longest-processing-time
   order), a bounded number at a time (:mod:`workbench.run.sweep_tasks`). A point's lock is
   taken when its first task is about to be submitted: a point another process holds is
   left to it, and one stored meanwhile is read instead of computed;
   A sweep that keeps blocks (``keep_blocks``: a sequential check's looks) runs a point whose
   blocks give the same bits whatever its replicate count as blocks, reads those of its
   blocks the store keeps (:func:`workbench.store.result_store.block_store`) and computes
   only the others, keeping each new run of blocks that took at least
   :data:`KEEP_MIN_SECONDS` to compute the moment it is back;
3. finishes a split point (``finish_point`` over its merged blocks) as soon as its last block
   is in, stores each point the moment it is complete (the worker that computed it also
   encodes it as netCDF, :func:`workbench.store.result_store.encode_point`; the parent writes the
   bytes, after giving the workers their next tasks) and releases its lock, so that a sweep
   holds only the locks of the points in flight, whatever its size, and
4. waits for the points another process was computing into the same store, one at a time,
   and reads them;
5. combines the points in grid order, whatever order they finished in.

If a task raises, no new task of its sweep is started, the tasks already running are waited
for and their points stored, and the error is raised: a rerun computes only what is missing.
A pool worker that dies (killed, out of memory) fails only the point it was computing, with
the worker's exit reason (:class:`PointsLost`, raised once the other points are done). Ctrl-C
says, for every sweep running, how many points were saved before it stops.

:func:`run_sweeps` runs several experiments' sweeps on the same workers and may overlap them:
the next sweep's tasks start as soon as the ones before have handed out all theirs.
"""

from __future__ import annotations

import math
import sys
import time
from collections import Counter, deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import ExitStack, nullcontext
from dataclasses import dataclass, field

import xarray as xr

from simulators import validation
from workbench.run import progress
from workbench.run.executors import Workers, open_workers
from workbench.run.experiment import Experiment, point_key
from workbench.run.sweep_tasks import KeptBlocks, PointsLost, TaskBatch, TaskLoop, raw_block
from workbench.store.netcdf import with_provenance
from workbench.store.result_store import (
    CorruptPoint,
    EncodedPoint,
    PointLock,
    ResultStore,
    block_identity,
    block_store,
    canonical_json,
    is_replicate_count,
    point_identity,
    positive_counts,
    store_key,
)

__all__ = ["MAX_SEED", "PointsLost", "SweepRequest", "SweepResult", "run_experiment",
           "run_sweep", "run_sweeps"]

MAX_SEED = 2**63 - 1  # every result stores its seed as a netCDF int64 attribute
#: the least compute seconds of a run of blocks that is kept: a run computed faster is
#: computed again about as soon as it is written, read back before the next look's tasks
#: start and sent to a worker (about 55 ms a point on the 2-core reference machine; at 0.1 s
#: stale-gaussian's quick looks took 1.07 times as long kept; ``benchmarks/kept_blocks.py``)
KEEP_MIN_SECONDS = 0.25
STORE_ATTRS = ("store_key", "store_identity")


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
    ignored_store: bool = False  # --recompute: every point computed, whatever was stored
    #: the compute seconds the store's manifest records for the loaded points: what computing
    #: them would cost (one process each), where ``seconds`` is only the time to read them
    stored_seconds: float = 0.0
    #: replicate blocks read from the store's kept blocks instead of computed (``keep_blocks``)
    kept_blocks: int = 0
    #: the compute seconds the store recorded for those blocks (as ``stored_seconds``)
    reused_seconds: float = 0.0
    #: the compute seconds of every kept block of the computed points, read or computed: what a
    #: run of the same points with more replicates would not compute again
    kept_seconds: float = 0.0
    #: each point's compute seconds (one process), in the order of the experiment's points:
    #: measured where computed, as the store recorded them where loaded (nan: not known)
    point_seconds: list[float] = field(default_factory=list)
    #: of each computed point whose replicate blocks are kept, the compute seconds of the
    #: blocks it computed (0 where it read every block; nan: not such a point): the rest of
    #: its seconds finished it (merging the blocks, its oracle, its chains' limits)
    block_seconds: list[float] = field(default_factory=list)
    #: the compute seconds (one process) of the longest task computed: no worker can finish a
    #: round sooner than that task takes (the sequential checks' round prediction)
    longest_task: float = 0.0
    #: the seconds numba spent compiling in the tasks (left out of their compute seconds)
    compile_seconds: float = 0.0

    def describe(self) -> str:
        parts = [f"{len(self.loaded)} from the store", f"{len(self.computed)} computed"]
        if self.recomputed:
            parts.append(f"{len(self.recomputed)} of them recomputed after corruption")
        if self.kept_blocks:
            parts.append(f"{self.kept_blocks} of their replicate blocks kept from an earlier run")
        if self.split:
            parts.append(f"{len(self.split)} split into blocks")
        n = len(self.loaded) + len(self.computed)
        return f"{n} points ({', '.join(parts)}; {self.tasks} tasks) in {self.seconds:.1f} s"


@dataclass(frozen=True)
class SweepRequest:
    """One experiment's sweep as :func:`run_sweeps` takes it (the arguments of
    :func:`run_sweep`)."""

    experiment: Experiment
    config: dict
    seed: int
    store: ResultStore | None = None
    recompute: bool = False
    show_progress: bool = False
    on_point: Callable[[int, int], None] | None = None
    keep_blocks: bool = False


def run_sweep(experiment: Experiment, config: dict, seed: int, *,
              workers: Workers | None = None, store: ResultStore | None = None,
              recompute: bool = False, show_progress: bool = False,
              on_point: Callable[[int, int], None] | None = None) -> SweepResult:
    """All sweep points of ``experiment`` under ``config`` and ``seed``, combined.

    workers: an open executor (:func:`workbench.run.executors.open_workers`); default this process.
    store: where points are looked up and saved; ``recompute`` ignores what it holds. A point
        another process is computing into the same store (its lock is held) is waited for and
        read, not computed twice (:meth:`workbench.store.result_store.ResultStore.claim`).
    show_progress: draw bars (only on a terminal; see :mod:`workbench.run.progress`).
    on_point: called as ``on_point(done, total)`` once the stored points are loaded and after
        every computed point (for a progress display other than the terminal's, such as the
        dashboard's).
    """
    request = SweepRequest(experiment, config, seed, store, recompute, show_progress, on_point)
    with ExitStack() as stack:
        if workers is None:
            workers = stack.enter_context(open_workers(processes=1))
        [result] = run_sweeps([request], workers)
    if isinstance(result, Exception):
        raise result
    return result


def run_sweeps(requests: Iterable[SweepRequest], workers: Workers, *,
               overlap: bool = False) -> Iterator[SweepResult | Exception]:
    """:func:`run_sweep` for each request, in order, on the same workers: yields each sweep's
    result, or the exception that failed it (the sweeps after it still run).

    overlap: start the next sweep as soon as every task of the ones before has been handed to
        the workers, so that its tasks fill the workers their last tasks leave idle (issue 15:
        those tails were about a tenth of the main job). Tasks go out oldest sweep first. An
        experiment that ``runs_alone`` starts only when no other sweep runs, and none starts
        beside it. Each sweep's points, store entries and Dataset are its own, so the results
        are those of one sweep after the other; only the oldest sweep draws its bars.
    """
    loop = TaskLoop(workers)
    pending = iter(requests)
    upcoming = next(pending, None)
    active: deque[_Sweep] = deque()  # started and not yet yielded, oldest first
    try:
        while upcoming is not None or active:
            while upcoming is not None and _may_start(upcoming, active, overlap):
                active.append(_Sweep(upcoming, workers, shown=not active))
                upcoming = next(pending, None)
            if active[0].done:
                result = active[0].finish(workers)
                active.popleft()
                if active:
                    active[0].bars.show()
                yield result
                continue
            batches = [sweep.batch for sweep in active if sweep.batch is not None]
            loop.submit_more(batches)
            loop.step(batches)
    except KeyboardInterrupt:
        for sweep in active:
            sweep.interrupted()
        raise
    finally:
        for sweep in active:
            sweep.stack.close()


def lasting_blocks(experiment: Experiment, config: dict, point: dict,
                   ranges: Sequence[range]) -> frozenset[int]:
    """The blocks of ``ranges`` (the point's, :meth:`Experiment.kept_blocks`) that a run with
    twice its replicates (every replicate count of ``config`` and ``point`` doubled, as a
    sequential look grows them) has too: every full block. A last block shorter than the
    block size is replaced by a longer one there, so that keeping it would only take room,
    and would credit the next look with seconds it does not save
    (:mod:`workbench.run.until_decided`)."""
    def doubled(values: dict) -> dict:
        counts = positive_counts(values, is_replicate_count)
        return {key: 2 * value if key in counts else value for key, value in values.items()}

    larger = set(experiment.kept_blocks(doubled(config), doubled(point)) or ())
    return frozenset(b for b, rows in enumerate(ranges) if rows in larger)


def _may_start(request: SweepRequest, active: deque[_Sweep], overlap: bool) -> bool:
    if not active:
        return True
    if not overlap or request.experiment.runs_alone:
        return False
    return all(sweep.drained and not sweep.alone for sweep in active)


class _Sweep:
    """One experiment's sweep while it runs: its points looked up in the store and claimed
    (module docstring, step 1), the :class:`TaskBatch` of those it computes, the points another
    process computes (step 4) and the combined result (step 5). A sweep that cannot start
    keeps the error, which :meth:`finish` returns."""

    def __init__(self, request: SweepRequest, workers: Workers, shown: bool):
        self.request = request
        self.alone = request.experiment.runs_alone
        self.started = time.perf_counter()
        self.stack = ExitStack()
        self.batch: TaskBatch | None = None
        self.error: Exception | None = None
        self.claims: dict[int, PointLock] = {}  # held: points in flight (step 2)
        self.blocks: ResultStore | None = None  # where blocks are kept (keep_blocks)
        self.bars = progress.SweepBars(request.experiment.name, 0, 0, 0, enabled=False,
                                       shown=False)  # until _start makes the sweep's own
        try:
            self._start(workers, shown)
        except Exception as error:  # noqa: BLE001 - this sweep's result; the others still run
            self.error = error
        except BaseException:  # Ctrl-C: release what was claimed before it comes through
            self.stack.close()
            raise

    def _start(self, workers: Workers, shown: bool) -> None:
        request, store = self.request, self.request.store
        experiment, config = request.experiment, request.config
        self.seed = validation.integer("seed", request.seed, minimum=0, maximum=MAX_SEED)
        self.points = experiment.points(config)
        n_points = len(self.points)
        self.identities = [point_identity(experiment, config, p, self.seed) for p in self.points]
        self.keys = [store_key(identity) for identity in self.identities]
        self.report = SweepResult(dataset=xr.Dataset(),
                                  ignored_store=store is not None and request.recompute,
                                  point_seconds=[math.nan] * n_points,
                                  block_seconds=[math.nan] * n_points)
        self.results: list[xr.Dataset | None] = [None] * n_points
        self.corrupt: dict[int, str] = {}
        self.waiting: list[int] = []  # points another process is computing
        self.stack.callback(lambda: [self._release(i) for i in list(self.claims)])
        if store is not None:
            if not request.recompute:
                self._load_stored(list(range(n_points)))
            store.remove_orphaned_temporaries({self.keys[i] for i in range(n_points)
                                               if self.results[i] is None})
        self.report.loaded = [self.points[i] for i in range(n_points)
                              if self.results[i] is not None]
        todo = [i for i in range(n_points) if self.results[i] is None and i not in self.waiting]
        work = [experiment.work(config, self.points[i]) for i in todo]
        self.bars = progress.SweepBars(experiment.name, n_points, sum(work), max(work, default=0),
                                       progress.wanted(request.show_progress), shown=shown)
        self.stack.callback(self.bars.close)
        self.bars.points_done(len(self.report.loaded))
        if request.on_point is not None:
            request.on_point(len(self.report.loaded), n_points)
        self.sink = self.stack.enter_context(workers.progress_sink(self.bars.add_updates)
                                             if self.bars.tracks_updates else nullcontext(None))
        self.batch = self._batch(todo, workers)

    def _batch(self, indices: list[int], workers: Workers, claim: bool = True) -> TaskBatch:
        """A batch of the points ``indices``; ``claim``: take each point's lock when its first
        task is submitted (false: this sweep holds them already)."""
        request = self.request
        stored_as = (None if request.store is None
                     else list(zip(self.keys, self.identities, strict=True)))
        return TaskBatch(request.experiment, request.config, self.seed, self.points, indices,
                         workers.n_workers, self.sink, self._complete, stored_as,
                         self._claim if request.store is not None and claim else None,
                         kept=self._kept(indices), keep=self._keep,
                         keep_min_seconds=KEEP_MIN_SECONDS)

    def _kept(self, indices: list[int]) -> dict[int, KeptBlocks]:
        """The points among ``indices`` whose blocks this sweep keeps (step 2), with the runs
        of their blocks the store holds (:meth:`_found`)."""
        request = self.request
        if request.store is None or not request.keep_blocks:
            return {}
        experiment, config = request.experiment, request.config
        self.blocks = block_store(request.store.root, experiment.name)
        self.blocks.warnings = request.store.warnings
        entries = {} if request.recompute else self.blocks.manifest()
        stored: dict[tuple[str, int], list[tuple[int, int]]] = {}  # (point, seed) -> runs
        for entry in entries.values():
            if "replicates" in entry:
                stored.setdefault((canonical_json(entry["point"]), entry["seed"]), []).append(
                    tuple(entry["replicates"]))
        kept = {}
        for i in indices:
            ranges = experiment.kept_blocks(config, self.points[i])
            if ranges is None:
                continue

            def stored_as(rows: range, point=self.points[i]) -> tuple[str, dict]:
                identity = block_identity(experiment, config, point, self.seed, rows)
                return store_key(identity), identity

            runs = stored.get((canonical_json(self.points[i]), self.seed), [])
            kept[i] = KeptBlocks(list(ranges), {}, {}, stored_as,
                                 lasting_blocks(experiment, config, self.points[i], ranges))
            self._found(i, kept[i], runs, entries)
        return kept

    def _found(self, i: int, blocks: KeptBlocks, runs: list[tuple[int, int]],
               entries: dict) -> None:
        """Fill ``blocks.found`` with the stored runs (``runs``: their replicates) of point
        ``i``'s blocks: from the first block on, the longest run that starts where the last
        one stopped; a corrupt run is reported, moved aside and computed again."""
        first_of = {rows.start: b for b, rows in enumerate(blocks.ranges)}
        stop_of = {rows.stop: b + 1 for b, rows in enumerate(blocks.ranges)}
        first = 0
        for start, stop in sorted(((first_of[a], stop_of[b]) for a, b in runs
                                   if a in first_of and b in stop_of),
                                  key=lambda run: (run[0], -run[1])):
            if start != first:
                continue
            key, _ = blocks.stored_as(range(blocks.ranges[start].start,
                                            blocks.ranges[stop - 1].stop))
            if key in entries and (raw := self._kept_run(key, entries[key], i)) is not None:
                blocks.found[start], blocks.stops[start], first = raw, stop, stop
                seconds = float(entries[key].get("compute_seconds", 0))
                self.report.kept_blocks += stop - start
                self.report.reused_seconds += seconds
                self.report.kept_seconds += seconds

    def _kept_run(self, key: str, entry: dict, i: int) -> xr.Dataset | None:
        """A stored run of point ``i``'s blocks, or None if it is corrupt (then moved aside,
        and its blocks computed again)."""
        try:
            return raw_block(self.blocks.load(key, entry))
        except CorruptPoint as error:
            moved = self.blocks.quarantine(key)
            print(f"workbench: kept replicate blocks of point {point_key(self.points[i])} of "
                  f"{self.request.experiment.name} are corrupt ({error}); computing them "
                  "again" + (f" (the file is kept as {moved})" if moved else ""),
                  file=sys.stderr)
            return None

    def _keep(self, key: str, identity: dict, content: bytes, seconds: float) -> None:
        """Keep a run of blocks just computed (:meth:`_kept`)."""
        self.blocks.write_bytes(key, identity, content, seconds)
        self.report.kept_seconds += seconds

    def _claim(self, i: int) -> bool:
        """Before point ``i``'s first task is submitted (step 2): whether to compute it, now
        holding its lock. Not if another process holds the lock (the point is waited for at
        the end, step 4) or stored the point since the manifest was read (it is read)."""
        store = self.request.store
        lock = store.claim(self.keys[i])
        if lock is None:
            self.waiting.append(i)
            return False
        self.claims[i] = lock
        if self.request.recompute or not store.path(self.keys[i]).exists():
            return True  # (a stat: what nobody stored needs no manifest read)
        self._load_stored([i])
        if self.results[i] is None:
            return True
        self._release(i)
        self._loaded_later(i)
        return False

    def _loaded_later(self, i: int) -> None:
        """Point ``i``, which another process stored after this sweep started, counted as
        loaded."""
        self.report.loaded.append(self.points[i])
        self.bars.point_done(point_key(self.points[i]))
        if self.request.on_point is not None:
            self.request.on_point(len(self.report.loaded) + len(self.report.computed),
                                  len(self.points))

    def _count_stored(self, i: int, entries: dict) -> None:
        """Add point ``i``'s recorded compute seconds, if it was loaded, to the report's."""
        if self.results[i] is not None:
            seconds = float(entries[self.keys[i]].get("compute_seconds", 0))
            self.report.stored_seconds += seconds
            self.report.point_seconds[i] = seconds

    def _load_stored(self, indices: list[int]) -> None:
        """Load the stored points among ``indices``. One found corrupt is judged again under
        its lock, with the manifest as it is then (its writer may have just listed it): a
        point whose lock another process holds is waited for instead (step 4); a corrupt one
        is moved aside and recomputed. Only the locks this call took are released."""
        store = self.request.store
        entries = store.manifest()
        for i in indices:
            try:
                self.results[i] = store.load(self.keys[i], entries.get(self.keys[i]))
                self._count_stored(i, entries)
                continue
            except CorruptPoint:
                pass
            took = i not in self.claims
            if took:
                lock = store.claim(self.keys[i])
                if lock is None:  # being written by its owner: not corrupt, wait for it
                    self.waiting.append(i)
                    continue
                self.claims[i] = lock
            try:
                entries = store.manifest()
                self.results[i] = store.load(self.keys[i], entries.get(self.keys[i]))
                self._count_stored(i, entries)
            except CorruptPoint as error:
                self._set_aside(i, error)
            finally:
                if took:
                    self._release(i)

    def _set_aside(self, i: int, error: CorruptPoint) -> None:
        store, name = self.request.store, self.request.experiment.name
        self.corrupt[i] = error.reason
        moved = store.quarantine(self.keys[i])
        print(f"workbench: stored point {point_key(self.points[i])} of {name} is "
              f"corrupt ({error}); recomputing it"
              + (f" (the file is kept as {moved})" if moved else ""), file=sys.stderr)

    def _release(self, i: int) -> None:
        if i in self.claims:
            self.claims.pop(i).release()

    def _complete(self, i: int, finished: xr.Dataset | EncodedPoint, seconds: float) -> None:
        store = self.request.store
        if store is not None:
            dataset = store.write(self.keys[i], self.identities[i], finished, seconds)
            self._release(i)
        else:
            dataset = finished
        self.results[i] = dataset
        self.report.computed.append(self.points[i])
        self.report.point_seconds[i] = seconds
        if i in self.corrupt:
            self.report.recomputed.append((self.points[i], self.corrupt[i]))
        self.bars.point_done(point_key(self.points[i]))
        if self.request.on_point is not None:
            self.request.on_point(len(self.report.loaded) + len(self.report.computed),
                                  len(self.points))

    @property
    def drained(self) -> bool:
        """Every task handed to the workers (none queued)."""
        return self.batch is None or not self.batch.queued

    @property
    def done(self) -> bool:
        """Every task back and its point stored."""
        return self.batch is None or self.batch.done

    def finish(self, workers: Workers) -> SweepResult | Exception:
        """The points another process was computing, then the combined result (or the error
        that failed the sweep); closes what the sweep held."""
        try:
            with self.stack:
                if self.error is not None:
                    raise self.error
                self._account(self.batch)
                self._wait_for_others(workers)
        except Exception as error:  # noqa: BLE001 - this sweep's result; the others still run
            return error
        request, report = self.request, self.report
        report.dataset = combined_result(request.experiment, request.config, self.seed,
                                         self.results)
        report.seconds = time.perf_counter() - self.started
        return report

    def _account(self, batch: TaskBatch) -> None:
        batch.raise_failures()
        submitted = batch.submitted
        self.report.tasks += len(submitted)
        self.report.longest_task = max(self.report.longest_task, batch.longest)
        self.report.compile_seconds += batch.compiling
        for i, seconds in batch.block_seconds.items():
            self.report.block_seconds[i] = seconds
        block_tasks = Counter(t.point for t in submitted if t.blocks)
        self.report.split += [self.points[i] for i in sorted(block_tasks)
                              if block_tasks[i] > 1]

    def _wait_for_others(self, workers: Workers) -> None:
        """Step 4: each point another process held when this sweep reached it, one at a time
        (its lock taken, blocking), read, or computed if that process stopped before storing
        it."""
        store = self.request.store
        while self.waiting:
            i = self.waiting.pop(0)
            print(f"workbench: waiting for another process computing point "
                  f"{point_key(self.points[i])} of {self.request.experiment.name}",
                  file=sys.stderr)
            lock = store.lock(self.keys[i])
            lock.acquire()
            self.claims[i] = lock
            self._load_stored([i])
            if self.results[i] is None:  # that process stopped before storing it
                batch = self._batch([i], workers, claim=False)
                TaskLoop(workers).run(batch)
                self._account(batch)
                self._release(i)
            else:
                self._release(i)
                self._loaded_later(i)

    def interrupted(self) -> None:
        """Say how much of the sweep Ctrl-C left saved."""
        if self.error is not None:
            return
        store, name = self.request.store, self.request.experiment.name
        if store is None:
            saved = "nothing saved (no store)"
        else:  # read back: the interrupt may have come between a save and its count
            entries = store.manifest()
            saved = (f"{sum(key in entries for key in self.keys)} of {len(self.points)} points "
                     f"saved in {store.directory}")
        print(f"workbench: {name} interrupted; {saved}; a rerun resumes from there",
              file=sys.stderr)


def combined_result(experiment: Experiment, config: dict, seed: int,
                    results: list[xr.Dataset]) -> xr.Dataset:
    """The points' results (in the order of ``experiment.points(config)``) combined, with the
    run's provenance and without the store's attributes of each point."""
    for dataset in results:
        for name in STORE_ATTRS:
            dataset.attrs.pop(name, None)
    return with_provenance(experiment.combine(config, results), experiment.name, config, seed)


def stored_result(experiment: Experiment, config: dict, seed: int, store: ResultStore,
                  loaded: dict[str, xr.Dataset] | None = None) -> xr.Dataset | None:
    """What a sweep of ``config`` that reads every point from ``store`` returns, computing
    nothing: None where a point is not stored (or is corrupt, which a sweep would recompute).
    ``loaded``: the points already read, by store key, where the points read are kept too
    (trials of several sweeps of the same points read each once)."""
    entries = store.manifest()
    loaded = {} if loaded is None else loaded
    results = []
    for point in experiment.points(config):
        key = store_key(point_identity(experiment, config, point, seed))
        if key not in loaded:
            try:
                dataset = store.load(key, entries.get(key))
            except CorruptPoint:
                return None
            if dataset is None:
                return None
            loaded[key] = dataset
        results.append(loaded[key])
    return combined_result(experiment, config, seed, results)


def run_experiment(experiment: Experiment, config: dict, seed: int, processes: int = 1,
                   progress: bool = False, store: ResultStore | None = None) -> xr.Dataset:
    """All sweep points of ``experiment``, combined; ``processes`` local processes."""
    with open_workers(processes=processes) as workers:
        return run_sweep(experiment, config, seed, workers=workers, store=store,
                         show_progress=progress).dataset
