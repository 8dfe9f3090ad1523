"""Pool workers run BLAS single-threaded (issue 15: an OpenBLAS thread per core in every
worker oversubscribed the machine); a terminated pool's workers are gone within its grace,
even one that ignores SIGTERM."""

from __future__ import annotations

import multiprocessing.connection
import os
import signal
import time

import numpy as np
import pytest
from threadpoolctl import threadpool_info

from workbench.run.pool import TERMINATE_GRACE, WorkerPool


def _blas_threads() -> list[int]:
    np.ones((2, 2)) @ np.ones((2, 2))  # BLAS loaded and in use
    return [pool["num_threads"] for pool in threadpool_info()]


def test_every_thread_pool_of_a_worker_has_one_thread():
    pool = WorkerPool(2)
    try:
        answers = [pool.submit(_blas_threads).result(timeout=60) for _ in range(4)]
    finally:
        pool.shutdown()
    assert all(answer and set(answer) == {1} for answer in answers)


@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="one core: one thread")
def test_the_parent_is_not_limited():
    # negative control: the probe sees more than one thread where nothing limits them
    assert max(_blas_threads()) > 1


@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="one core: one thread")
def test_a_task_run_in_this_process_runs_blas_on_one_thread_like_a_worker():
    """One process (--processes 1) and a pool give the same last bits: the runner limits BLAS
    for each task wherever it runs, and lifts the limit afterwards."""
    from workbench.run.sweep_tasks import _run_task

    class Probe:
        def run_point(self, config, point, seed):
            return _blas_threads()

    threads, _ = _run_task(Probe(), {}, {}, 0, None, None)
    assert threads and set(threads) == {1}
    assert max(_blas_threads()) > 1


def _pid_after(ignore_sigterm: bool) -> int:
    if ignore_sigterm:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    time.sleep(0.2)  # long enough that both workers take some of these tasks
    return os.getpid()


def _exited(sentinels: list[int], timeout: float) -> bool:
    """Whether every process of ``sentinels`` exits within ``timeout`` seconds."""
    waiting, deadline = set(sentinels), time.monotonic() + timeout
    while waiting and (left := deadline - time.monotonic()) > 0:
        waiting -= set(multiprocessing.connection.wait(list(waiting), timeout=left))
    return not waiting


def _sleep(seconds: float) -> None:
    time.sleep(seconds)


@pytest.mark.parametrize("ignore_sigterm", [False, True])
def test_terminate_ends_every_worker_within_its_grace(ignore_sigterm):
    pool = WorkerPool(2)
    try:
        asked = [pool.submit(_pid_after, ignore_sigterm) for _ in range(8)]
        pids = {future.result(timeout=60) for future in asked}
        for _ in range(2):
            pool.submit(_sleep, 60)  # both workers busy
        sentinels = [p.sentinel for p in pool._pool._processes.values() if p.pid in pids]
        assert len(sentinels) == 2
        time.sleep(0.3)
        started = time.monotonic()
        pool.terminate()
        took = time.monotonic() - started
        # every worker is dead or killed when terminate returns: gone a moment later
        assert _exited(sentinels, timeout=0.5)
        assert took < TERMINATE_GRACE + 0.5
        # the grace is waited only where a worker outlived its SIGTERM (negative control: a
        # worker that does not ignore it is gone long before)
        assert (took >= TERMINATE_GRACE) == ignore_sigterm
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
