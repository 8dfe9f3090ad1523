"""Processes: no worker outlives its run, Ctrl-C stops at once, a dead worker fails only its
point, and two runs into one store compute each point once."""

import os
import signal
import time
from collections import Counter

import psutil
import xarray as xr

from simulators.validation import InvalidParameter
from workbench.cli.main import main
from workbench.store.netcdf import read_netcdf
from workbench.store.result_store import ResultStore
from workbench.studies.experiment import StudyExperiment

from .conftest import N_POINTS, QUICK, run, start, temporaries

POOL = ["run", "stale-gaussian", *QUICK, "--processes", "2"]


def _slow_points(seconds, counter=None, quick_first=None):
    """In the child: every point takes ``seconds`` longer (and is counted in ``counter``); with
    ``quick_first`` (a path that does not exist yet), the point that starts first does not, so
    it is saved while the others are still running however slowly this machine lets the test
    look."""
    def patch():
        run_point = StudyExperiment.run_point

        def slow(self, config, point, seed):
            if counter is not None:
                with open(counter, "a") as log:
                    log.write(f"{point['staleness']}\n")
            if quick_first is None or not _first_to_create(quick_first):
                time.sleep(seconds)
            return run_point(self, config, point, seed)

        StudyExperiment.run_point = slow
        StudyExperiment.replicate_blocks = lambda self, config, point: 1  # whole points only

    return patch


def _first_to_create(path):
    try:
        os.close(os.open(path, os.O_CREAT | os.O_EXCL))
    except FileExistsError:
        return False
    return True


def _workers(child, n=2):
    parent = psutil.Process(child.process.pid)
    child.wait_for(lambda: len(parent.children()) >= n)
    return parent.children()


def _gone(processes, timeout=3.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        alive = [p for p in processes if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]
        if not alive:
            return True
        time.sleep(0.05)
    return False


def test_no_worker_outlives_a_killed_parent(tmp_path):
    child = start([*POOL, "--out", str(tmp_path / "out")], tmp_path, before=_slow_points(5))
    workers = _workers(child)
    time.sleep(0.3)  # the workers are computing
    child.process.kill()
    child.finish()
    assert _gone(workers), [p.pid for p in workers if p.is_running()]


def test_ctrl_c_stops_within_two_seconds_leaving_no_child_and_no_temporary(tmp_path):
    out = tmp_path / "out"
    child = start([*POOL, "--out", str(out)], tmp_path,
                  before=_slow_points(30, quick_first=tmp_path / "first-point"))
    workers = _workers(child)
    store = ResultStore(out / "store", "stale-gaussian")
    child.wait_for(lambda: len(store.manifest()) >= 1)  # a point saved, the others running
    interrupted = time.monotonic()
    os.kill(child.process.pid, signal.SIGINT)
    assert child.finish(timeout=10) == 130
    assert time.monotonic() - interrupted < 2.0
    saved = len(store.manifest())
    assert f"interrupted; {saved} of {N_POINTS} points saved" in child.output
    assert _gone(workers, timeout=0.5)
    assert temporaries(out) == []


def test_a_worker_that_dies_fails_its_point_and_the_run_carries_on(tmp_path, reference, capsys):
    out = tmp_path / "out"
    child = start([*POOL, "--out", str(out)], tmp_path, before=_slow_points(1))
    workers = _workers(child)
    time.sleep(0.4)  # both workers are inside a point
    workers[0].send_signal(signal.SIGKILL)
    assert child.finish() == 3, child.output
    [line] = [line for line in child.output.splitlines() if "failed" in line]
    assert "1 point(s) failed because staleness=" in line
    assert f"worker process {workers[0].pid} died (killed by SIGKILL)" in line
    assert len(ResultStore(out / "store", "stale-gaussian").manifest()) == N_POINTS - 1
    capsys.readouterr()
    assert main(["run", "stale-gaussian", *QUICK, "--processes", "1", "--out", str(out)]) == 0
    assert f"{N_POINTS - 1} from the store, 1 computed" in capsys.readouterr().err
    xr.testing.assert_identical(read_netcdf(out / "stale-gaussian.nc"), reference)


def test_two_identical_runs_compute_each_point_once_and_agree(tmp_path, reference):
    out = tmp_path / "out"
    counter = tmp_path / "computed.log"
    argv = ["run", "stale-gaussian", *QUICK, "--processes", "1", "--out", str(out)]
    children = [start(argv, tmp_path, before=_slow_points(0.3, counter)) for _ in range(2)]
    assert [child.finish() for child in children] == [0, 0], [c.output for c in children]
    computed = Counter(counter.read_text().split())
    assert computed == Counter({"1": 1, "2": 1, "3": 1})  # once each, by one run or the other
    manifest = (out / "store" / "stale-gaussian" / "manifest.jsonl").read_text().splitlines()
    assert len(manifest) == N_POINTS  # no duplicate lines
    assert sum(f"{N_POINTS} points" in child.output for child in children) == 2
    xr.testing.assert_identical(read_netcdf(out / "stale-gaussian.nc"), reference)


def _invalid_point(staleness):
    """In the child: the point at ``staleness`` refuses its configuration inside the worker."""
    def patch():
        run_point = StudyExperiment.run_point
        parent = os.getpid()

        def refusing(self, config, point, seed):
            if point["staleness"] == staleness and os.getpid() != parent:
                raise InvalidParameter("staleness", staleness, "refused inside the worker")
            return run_point(self, config, point, seed)

        StudyExperiment.run_point = refusing
        StudyExperiment.replicate_blocks = lambda self, config, point: 1

    return patch


def test_a_refusal_inside_a_worker_reaches_the_user_as_itself(tmp_path):
    # its exception crosses the pool whole (tests/workbench/test_picklable_errors.py shows why
    # that needs simulators/exceptions.py): the run stops with the refusal, exit status 2,
    # and does not blame the workers
    child = run([*POOL, "--out", str(tmp_path / "out")], tmp_path, before=_invalid_point(2))
    assert child.process.exitcode == 2, child.output
    assert "workbench: error: staleness = 2 is invalid: refused inside the worker" in child.output
    assert "died" not in child.output
