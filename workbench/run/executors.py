"""Where sweep tasks run: any ``concurrent.futures.Executor``, with a progress sink to match.

- one process (``--processes 1``): :class:`SerialExecutor` runs each task when submitted;
- a process pool (``--processes N``, the default with N = the usable cores):
  :class:`workbench.run.pool.WorkerPool`, a ``concurrent.futures.ProcessPoolExecutor`` that names
  the task a dying worker took with it;
- a Dask distributed cluster: ``--scheduler tcp://host:port`` (or ``host:port``) connects to
  a running scheduler, waiting at most ``--connect-timeout`` seconds (default
  :data:`CONNECT_TIMEOUT`); ``--dask-local N`` starts a ``LocalCluster`` of N single-threaded
  worker processes on this machine. Tasks go through ``Client.get_executor()``,
  distributed's concurrent.futures interface, so the runner is the same code for all three.
  Workers of a remote cluster need this package installed (same version: it is part of every
  stored point's key).

Each kind also provides a progress *sink* (see :mod:`workbench.run.progress`): a picklable callable
that tasks call with replicate-update counts and that lands in the parent's bar — directly in
one process, through a ``multiprocessing.Manager`` queue from a pool, through distributed's
event topics (``log_event``/``subscribe_topic``) from a cluster.

No process outlives the run: pool workers (:class:`workbench.run.pool.WorkerPool`) and the
progress queue's manager ask the kernel to kill them when their parent dies (Linux
``prctl(PR_SET_PDEATHSIG)``), so a SIGKILLed run leaves no orphan blocked on a pipe, and on
Ctrl-C the pool's workers are terminated rather than waited for.
"""

from __future__ import annotations

import importlib
import logging
import os
import pickle
import re
import threading
import uuid
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Executor, Future
from contextlib import contextmanager
from dataclasses import dataclass
from multiprocessing.managers import SyncManager

from simulators import validation
from workbench.run.pool import WorkerPool, context, die_with_parent

CONNECT_TIMEOUT = 10.0
_ADDRESS = re.compile(r"(?:tcp://)?(?P<host>\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9._-]+):(?P<port>[0-9]+)")


def available_cores() -> int:
    """Cores this process may run on (the default pool size)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def max_local_workers() -> int:
    """The most local worker processes accepted: four per usable core (more only thrash)."""
    return 4 * available_cores()


def scheduler_address(text: str) -> str:
    """``host:port`` or ``tcp://host:port`` (port 1-65535) as ``tcp://host:port``."""
    match = _ADDRESS.fullmatch(str(text))
    if match is None or not 1 <= int(match["port"]) <= 65535:
        raise validation.InvalidParameter(
            "--scheduler", text, "must be host:port or tcp://host:port with a port in [1, 65535]")
    return f"tcp://{match['host']}:{int(match['port'])}"


class SerialExecutor(Executor):
    """Runs each task in the calling process at ``submit``; futures come back completed."""

    def submit(self, fn, /, *args, **kwargs) -> Future:
        future: Future = Future()
        future.set_running_or_notify_cancel()
        try:
            result = fn(*args, **kwargs)
        except (KeyboardInterrupt, SystemExit):
            raise
        except BaseException as error:  # noqa: BLE001 - delivered through the future
            future.set_exception(error)
        else:
            future.set_result(result)
        return future


@dataclass
class Workers:
    """An open executor, how many tasks it runs at once, and how progress gets back."""

    executor: Executor
    n_workers: int
    kind: str  # "serial", "processes" or "dask"
    description: str
    client: object | None = None
    memory_budget: int | None = None  # bytes per replay in every task (None: the engine's)

    @contextmanager
    def progress_sink(self, add: Callable[[int], None]) -> Iterator[Callable[[int], None]]:
        """A sink for tasks whose counts reach ``add`` in this process."""
        if self.kind == "serial":
            yield add
        elif self.kind == "processes":
            manager = SyncManager(ctx=context())
            manager.start(die_with_parent, (os.getpid(),))
            with manager:
                queue = manager.Queue()
                drain = threading.Thread(target=_drain, args=(queue, add), daemon=True)
                drain.start()
                try:
                    yield QueueSink(queue)
                finally:
                    queue.put(None)
                    drain.join()
        else:
            topic = f"workbench-progress-{uuid.uuid4().hex}"
            self.client.subscribe_topic(topic, lambda event: add(int(event[1])))
            try:
                yield DaskSink(topic)
            finally:
                self.client.unsubscribe_topic(topic)


def _drain(queue, add: Callable[[int], None]) -> None:
    while (count := queue.get()) is not None:
        add(count)


@dataclass(frozen=True)
class QueueSink:
    """Progress from a pool worker: counts go onto a Manager queue the parent drains."""

    queue: object

    def __call__(self, count: int) -> None:
        self.queue.put(count)


@dataclass(frozen=True)
class DaskSink:
    """Progress from a Dask worker: counts are logged as events under the sweep's topic."""

    topic: str

    def __call__(self, count: int) -> None:
        from distributed import get_worker

        get_worker().log_event(self.topic, count)


def check_options(processes: int | None = None, scheduler: str | None = None,
                  dask_local: int | None = None,
                  connect_timeout: float = CONNECT_TIMEOUT,
                  memory_budget: int | str | None = None) -> dict[str, object]:
    """The executor options validated (at most one executor), as :func:`open_workers` takes
    them; raises :class:`~simulators.validation.InvalidParameter` naming the option.
    ``memory_budget``: bytes (or text such as ``512MiB``) each task's replays may hold."""
    options = {"processes": processes, "scheduler": scheduler, "dask_local": dask_local}
    chosen = [name for name, value in options.items() if value is not None]
    if len(chosen) > 1:
        raise validation.InvalidParameter(chosen[1], options[chosen[1]],
                                          f"cannot be combined with {chosen[0]}")
    for name in ("processes", "dask_local"):
        if options[name] is not None:
            options[name] = validation.integer(name, options[name], minimum=1,
                                               maximum=max_local_workers())
    if scheduler is not None:
        options["scheduler"] = scheduler_address(scheduler)
    options["connect_timeout"] = validation.positive("connect_timeout", connect_timeout)
    options["memory_budget"] = (None if memory_budget is None
                                else validation.byte_size("memory_budget", memory_budget))
    return options


@contextmanager
def open_workers(processes: int | None = None, scheduler: str | None = None,
                 dask_local: int | None = None,
                 connect_timeout: float = CONNECT_TIMEOUT,
                 memory_budget: int | str | None = None,
                 preload: Sequence[str] = ()) -> Iterator[Workers]:
    """Open the executor the options ask for (at most one of them), close it afterwards.

    preload: modules a process pool's parent imports before it starts the workers: forked,
        they start holding them, where each would otherwise import them again on its first
        task (sympy, arviz-stats and the netCDF writer cost about a second a process; issue
        15). Ignored by the other executors.
    """
    options = check_options(processes, scheduler, dask_local, connect_timeout, memory_budget)
    processes, scheduler, dask_local = (options[k] for k in ("processes", "scheduler",
                                                              "dask_local"))
    budget = options["memory_budget"]
    if scheduler is not None or dask_local is not None:
        with _dask(scheduler, dask_local, options["connect_timeout"]) as workers:
            workers.memory_budget = budget
            yield workers
        return
    processes = available_cores() if processes is None else processes
    if processes == 1:
        yield Workers(SerialExecutor(), 1, "serial", "this process", memory_budget=budget)
        return
    for module in preload:
        importlib.import_module(module)
    # the workers are started here, before the caller starts threads (progress bars, queues)
    pool = WorkerPool(processes)
    try:
        pool.submit(int).result()
        yield Workers(pool, processes, "processes", f"a pool of {processes} processes",
                      memory_budget=budget)
    except KeyboardInterrupt:
        pool.terminate()  # Ctrl-C: stop now, do not wait for running tasks to end
        raise
    finally:
        # on an error, tasks not yet started are dropped rather than run
        pool.shutdown(wait=True, cancel_futures=True)


class UnpicklingInTask(Executor):
    """An executor whose tasks unpickle their function and arguments as their first step.

    A Dask worker that cannot unpickle a task (a module or object it cannot rebuild) logs the
    error and never completes the task's future, so the run would wait forever. Here the task
    Dask ships is :func:`_call_pickled` with the bytes of the real call: it always unpickles,
    and a failure to rebuild the real call is an exception inside the task, which reaches the
    run as that task's error (exit status 3, naming it)."""

    def __init__(self, inner: Executor):
        self.inner = inner

    def submit(self, fn, /, *args, **kwargs) -> Future:
        return self.inner.submit(_call_pickled, pickle.dumps((fn, args, kwargs)))

    def shutdown(self, wait: bool = True, **_) -> None:
        self.inner.shutdown(wait=wait)


def _call_pickled(payload: bytes):
    fn, args, kwargs = pickle.loads(payload)
    return fn(*args, **kwargs)


@contextmanager
def _dask(scheduler: str | None, dask_local: int | None,
          connect_timeout: float) -> Iterator[Workers]:
    try:
        from distributed import Client, LocalCluster
    except ImportError as error:  # pragma: no cover - distributed is a dependency
        raise validation.InvalidParameter("scheduler", scheduler or dask_local,
                                          "needs the 'distributed' package") from error
    if dask_local is not None:
        n = validation.integer("dask_local", dask_local, minimum=1)
        with LocalCluster(n_workers=n, threads_per_worker=1, processes=True,
                          dashboard_address=None, silence_logs=logging.ERROR) as cluster, \
                Client(cluster) as client:
            yield Workers(UnpicklingInTask(client.get_executor(pure=False)), n, "dask",
                          f"a Dask LocalCluster of {n} workers", client)
        return
    try:
        client = Client(scheduler, timeout=connect_timeout)
    except OSError as error:  # TimeoutError included
        raise validation.InvalidParameter(
            "--scheduler", scheduler, f"must be a Dask scheduler reachable within "
                                      f"--connect-timeout {connect_timeout:g} s ({error})"
        ) from error
    with client:
        threads = sum(w.get("nthreads", 1) for w in client.scheduler_info()["workers"].values())
        yield Workers(UnpicklingInTask(client.get_executor(pure=False)), max(threads, 1),
                      "dask", f"the Dask cluster at {scheduler} ({threads} threads)", client)
