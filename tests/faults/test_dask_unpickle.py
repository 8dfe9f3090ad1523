"""A Dask task that a worker cannot unpickle fails the run instead of hanging it.

distributed logs such an error on the worker and never completes the task's future. The
workbench's Dask executor (:class:`workbench.run.executors.UnpicklingInTask`) ships each task
as bytes that the task itself unpickles, so the failure is the task's exception. Negative
control: the same task through distributed's own executor is still pending when the first one
has long failed.
"""

from __future__ import annotations

import pytest

from tests.faults.unpicklable import OnlyHere, describe
from workbench.run.executors import open_workers


def test_a_task_a_worker_cannot_unpickle_fails_within_the_timeout():
    with open_workers(dask_local=1) as workers:
        future = workers.executor.submit(describe, OnlyHere())
        with pytest.raises(RuntimeError, match="cannot rebuild the task"):
            future.result(timeout=60)
        assert workers.executor.submit(describe, 1).result(timeout=60) == "int"
        # negative control: distributed's executor, given the same task, never completes it
        plain = workers.client.get_executor(pure=False).submit(describe, OnlyHere())
        with pytest.raises(TimeoutError):
            plain.result(timeout=3)
        plain.cancel()
