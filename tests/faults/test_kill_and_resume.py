"""A run SIGKILLed at any moment resumes to a dataset bit-identical to an uninterrupted run."""

import os
import signal

import pytest
import xarray as xr

from workbench.run import sweep_tasks
from workbench.store.netcdf import array_checksum, read_netcdf
from workbench.store.result_store import ResultStore

from .conftest import N_POINTS, QUICK, run, temporaries


def _kill_myself(*args, **kwargs):
    os.kill(os.getpid(), signal.SIGKILL)


def _before_any_point():
    sweep_tasks._run_task = _kill_myself


def _after_saving(n):
    def patch():
        write = ResultStore.write  # what the runner stores a point with
        saved = []

        def counting_write(self, *args, **kwargs):
            stored = write(self, *args, **kwargs)
            saved.append(stored)
            if len(saved) == n:
                _kill_myself()
            return stored

        ResultStore.write = counting_write

    return patch


def _in_the_middle_of_a_write():
    os.replace = _kill_myself  # the point's temporary file is written, not yet renamed


@pytest.mark.parametrize("moment, saved", [
    (_before_any_point, 0),
    (_after_saving(1), 1),
    (_after_saving(N_POINTS - 1), N_POINTS - 1),
    (_in_the_middle_of_a_write, 0),
], ids=["after-0-points", "after-1-point", "after-all-but-one", "in-a-write"])
def test_killed_run_resumes_bit_identical(tmp_path, reference, moment, saved):
    out = tmp_path / "out"
    argv = ["run", "stale-gaussian", *QUICK, "--processes", "1", "--out", str(out)]
    killed = run(argv, tmp_path, before=moment)
    assert killed.process.exitcode == -signal.SIGKILL
    store = ResultStore(out / "store", "stale-gaussian")
    assert len(store.manifest()) == saved
    if moment is _in_the_middle_of_a_write:
        assert len(temporaries(out)) == 1  # what the crash left

    resumed = run(argv, tmp_path)
    assert resumed.process.exitcode == 0, resumed.output
    assert f"{saved} from the store, {N_POINTS - saved} computed" in resumed.output
    assert temporaries(out) == []  # an orphaned temporary is removed at start
    dataset = read_netcdf(out / "stale-gaussian.nc")
    xr.testing.assert_identical(dataset, reference)
    assert array_checksum(dataset) == array_checksum(reference)
