"""Pool workers run BLAS single-threaded (issue 15: an OpenBLAS thread per core in every
worker oversubscribed the machine)."""

from __future__ import annotations

import os

import numpy as np
import pytest
from threadpoolctl import threadpool_info

from workbench.run.pool import WorkerPool


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
