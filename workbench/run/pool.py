"""A process pool whose workers die with the run and whose lost tasks are named.

``concurrent.futures.ProcessPoolExecutor`` has two gaps for long sweeps:

- a worker outlives a parent killed with SIGKILL (it blocks on its pipe under pid 1 until
  killed by hand). Here every worker asks the kernel to kill it when its parent dies
  (:func:`die_with_parent`, Linux ``prctl(PR_SET_PDEATHSIG)``);
- when one worker dies (killed, out of memory), the stdlib pool breaks: every pending future
  fails with ``BrokenProcessPool`` and nothing says which task was running in the dead worker.
  Here each worker announces ``(pid, task)`` when it starts a task, on a pipe the parent reads;
  :meth:`WorkerPool.lost` then names the tasks the dead workers were running with their exit
  reason ("killed by SIGKILL"), and replaces the broken pool with a fresh one, so the caller
  fails those tasks and resubmits the others.

Each worker also limits BLAS and OpenMP to one thread (:func:`one_blas_thread`): the pool already
runs one task per core, and a worker whose OpenBLAS starts a thread per core oversubscribes the
machine (issue 15 measured the dense oracle 17 times slower that way).

An announcement is one 16-byte ``os.write`` on a pipe (atomic below ``PIPE_BUF``, so no lock
that a dying worker could leave held); the parent drains the pipe at every ``submit``.
"""

from __future__ import annotations

import ctypes
import itertools
import multiprocessing
import multiprocessing.connection
import os
import signal
import struct
import sys
import time
from concurrent.futures import Executor, Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool

from threadpoolctl import threadpool_limits

PR_SET_PDEATHSIG = 1  # linux/prctl.h
_RECORD = struct.Struct("qq")  # (pid, task token)
_announce_fd: int | None = None  # in a worker: where it announces its tasks
TERMINATE_GRACE = 1.0  # seconds a worker has to exit on SIGTERM before it is killed


def die_with_parent(parent: int) -> None:
    """Process initializer: have the kernel SIGKILL this process when ``parent`` dies.

    The check of the parent's pid afterwards closes the race of a parent that died between
    the fork and the ``prctl``. Outside Linux this does nothing.
    """
    if not sys.platform.startswith("linux"):
        return
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:
        os._exit(1)


def context():
    """fork on Linux: workers start already holding the imported modules."""
    return multiprocessing.get_context("fork") if sys.platform.startswith("linux") else None


def one_blas_thread():
    """BLAS and OpenMP limited to one thread each: for the rest of a pool worker's life (its
    initializer calls this), or, used as a context, for one task wherever it runs (in this
    process, a pool worker or a Dask worker) — a multi-threaded BLAS may add a product's terms
    in another order, so one process and several would otherwise differ in the last bits."""
    return threadpool_limits(limits=1)


def _start_worker(parent: int, announce_fd: int) -> None:
    global _announce_fd
    die_with_parent(parent)
    one_blas_thread()
    _announce_fd = announce_fd


def _tracked(token: int, fn, /, *args, **kwargs):
    os.write(_announce_fd, _RECORD.pack(os.getpid(), token))
    return fn(*args, **kwargs)


def exit_reason(exitcode: int | None) -> str:
    """A worker's exit code in words."""
    if exitcode is None:
        return "still running"
    if exitcode < 0:
        try:
            return f"killed by {signal.Signals(-exitcode).name}"
        except ValueError:
            return f"killed by signal {-exitcode}"
    return f"exited with status {exitcode}"


class WorkerPool(Executor):
    """A ``ProcessPoolExecutor`` of ``n_workers`` processes, as the module docstring says."""

    def __init__(self, n_workers: int):
        self.n_workers = n_workers
        self._read_fd, self._write_fd = os.pipe()
        os.set_blocking(self._read_fd, False)
        self._pending = b""
        self._running: dict[int, int] = {}  # pid -> the last task it announced
        self._tokens = itertools.count()
        self._pool = self._new_pool()

    def _new_pool(self) -> ProcessPoolExecutor:
        return ProcessPoolExecutor(max_workers=self.n_workers, mp_context=context(),
                                   initializer=_start_worker,
                                   initargs=(os.getpid(), self._write_fd))

    def submit(self, fn, /, *args, **kwargs) -> Future:
        self._drain()
        token = next(self._tokens)
        try:
            future = self._pool.submit(_tracked, token, fn, *args, **kwargs)
        except BrokenProcessPool as error:  # broke since the caller last looked: say so alike
            future = Future()
            future.set_exception(error)
        future.worker_task = token
        return future

    def _drain(self) -> None:
        while True:
            try:
                chunk = os.read(self._read_fd, 64 * _RECORD.size)
            except BlockingIOError:
                return
            if not chunk:
                return
            self._pending += chunk
            whole = len(self._pending) - len(self._pending) % _RECORD.size
            for pid, token in _RECORD.iter_unpack(self._pending[:whole]):
                self._running[pid] = token
            self._pending = self._pending[whole:]

    def lost(self, futures: list[Future]) -> dict[Future, str]:
        """After the pool broke: which of ``futures`` died with their worker, and why.

        The broken pool is replaced by a fresh one; the futures not in the answer were queued
        or running in workers the stdlib pool terminated, and can be submitted again.
        """
        self._drain()
        # the stdlib pool keeps its worker processes in _processes (no public accessor); its
        # shutdown waits until it has reaped them all, so every exit code is known after it
        processes = self._pool._processes
        self._pool.shutdown(wait=True, cancel_futures=True)
        exits = {pid: process.exitcode for pid, process in processes.items()}
        dead = {pid: code for pid, code in exits.items()
                if code is not None and code != -signal.SIGTERM}
        if not dead:  # killed by SIGTERM: indistinguishable from the workers the pool stopped
            dead = {pid: code for pid, code in exits.items() if code is not None}
        by_task = {self._running.get(pid): (pid, code) for pid, code in dead.items()}
        self._running.clear()
        self._pool = self._new_pool()
        answer = {}
        for future in futures:
            if getattr(future, "worker_task", None) in by_task:
                pid, code = by_task[future.worker_task]
                answer[future] = f"its worker process {pid} died ({exit_reason(code)})"
        return answer

    def terminate(self) -> None:
        """SIGTERM every worker now (Ctrl-C: a running task is not waited for), and SIGKILL
        any still alive :data:`TERMINATE_GRACE` seconds later: the pool's shutdown joins every
        worker, so one that ignores or blocks SIGTERM would otherwise hold the run open."""
        processes = list((self._pool._processes or {}).values())
        for process in processes:
            process.terminate()
        alive = {process.sentinel: process for process in processes}
        deadline = time.monotonic() + TERMINATE_GRACE
        while alive and (left := deadline - time.monotonic()) > 0:
            for sentinel in multiprocessing.connection.wait(list(alive), timeout=left):
                del alive[sentinel]
        for process in alive.values():
            process.kill()

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        self._pool.shutdown(wait=wait, cancel_futures=cancel_futures)
        for fd in (self._read_fd, self._write_fd):
            try:
                os.close(fd)
            except OSError:  # closed by an earlier shutdown
                pass
