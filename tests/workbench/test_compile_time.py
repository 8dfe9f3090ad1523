"""A task's compute seconds leave numba's compiling out (:mod:`workbench.run.compile_time`): a
kernel compiles once per process (and once per machine with its cache), so the seconds a larger
run of the same points is predicted from must not carry it."""

import time

import numba
import numpy as np
import pytest
import xarray as xr

from workbench.run.compile_time import CompileTimer, compiling
from workbench.run.experiment import Experiment
from workbench.run.sweep_tasks import _run_task

PAUSE = 0.2


def _fresh_kernel():
    """A kernel numba has not compiled yet (a new function object each call)."""

    @numba.njit
    def total(values):
        result = 0.0
        for value in values:
            result += value * value
        return result

    return total


class Compiles(Experiment):
    """A point that compiles five fresh kernels (a tenth of a second or more), runs them, and
    then works (sleeps) for ``PAUSE``."""

    name = "compiles"

    def points(self, config):
        return [{}]

    def run_point(self, config, point, seed):
        kernels = [_fresh_kernel() for _ in range(5)] if config["compile"] else []
        value = sum(kernel(np.arange(10.0)) for kernel in kernels) / 5 if kernels else 285.0
        time.sleep(PAUSE)
        return xr.Dataset({"total": value})


def test_the_timer_counts_a_compilation_and_nothing_else():
    with compiling() as compiled:
        kernel = _fresh_kernel()
        assert kernel(np.arange(4.0)) == 14.0
    first = compiled.seconds
    with compiling() as again:
        assert kernel(np.arange(4.0)) == 14.0  # compiled already: no event
        time.sleep(0.05)
    assert first > 0.005 and again.seconds == 0.0
    assert isinstance(compiled, CompileTimer)


@pytest.mark.parametrize("compile", [True, False])
def test_a_task_s_seconds_leave_its_compiling_out(compile):
    """The task's seconds are its wall time less the compiling an outer timer saw (within
    timer noise, well below the compiling), and at least the work it did; without a
    compilation (negative control), its wall time."""
    experiment = Compiles()
    with compiling() as outer:
        started = time.perf_counter()
        result, seconds = _run_task(experiment, {"compile": compile}, {}, 0, None, None)
        wall = time.perf_counter() - started
    assert float(result["total"]) == 285.0
    assert seconds.compute >= PAUSE
    assert seconds.compute == pytest.approx(wall - outer.seconds, abs=0.02)
    assert seconds.compiling == pytest.approx(outer.seconds, abs=0.02)
    assert (outer.seconds > 0.1) is compile


def test_a_look_s_compiling_counts_in_its_round_and_in_no_later_look():
    """A look that computed 10 s and compiled for 3 s of its round (its tasks' compiling
    shared among the workers, and its judging's): its round is explained with the 3 s, so
    they are not charged to it as unexplained; a later look of twice the replicates is
    predicted without them."""
    from tests.workbench.tracks import wanting_track
    from workbench.run.until_decided import LookCost, _charge_unexplained, round_seconds

    track = wanting_track(10.0, 1.0)
    track.cost = track.ran = LookCost(10.0, 10.0, compiling=3.0)
    assert round_seconds([track.cost], 1) == 13.0
    _charge_unexplained([track], 13.0, 1, [track])
    assert track.cost.serial == 0.0
    assert track.predicted(2) == 20.0
