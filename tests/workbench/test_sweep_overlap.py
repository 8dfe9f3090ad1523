"""Overlapping sweeps (workbench.run.runner.run_sweeps, issue 15): the next experiment's sweep
starts while the last tasks of the one before still run, and yet every sweep's result, its
store, its error and its lost points are what running the sweeps one after the other gives.

The toy experiments log when each of their points ran, so the tests read the overlap off the
log: with ``overlap=False`` (the negative control) no sweep's point starts before the sweep
before it has ended.
"""

from __future__ import annotations

import json
import os
import signal
import time

import numpy as np
import pytest
import xarray as xr

from workbench.run.executors import open_workers
from workbench.run.experiment import Experiment
from workbench.run.runner import PointsLost, SweepRequest, SweepResult, run_sweep, run_sweeps
from workbench.store.result_store import ResultStore, point_identity, store_key

SEED = 3


class Timed(Experiment):
    """Points that sleep for the given seconds and log (name, point, start, end)."""

    sweep_dims = ("x",)

    def __init__(self, name: str, seconds: list[float], log, alone: bool = False,
                 dies_at: int | None = None, fails_at: int | None = None):
        self.name, self.seconds, self.log = name, seconds, str(log)
        self.runs_alone, self.dies_at, self.fails_at = alone, dies_at, fails_at

    def points(self, config):
        return [{"x": i} for i in range(len(self.seconds))]

    def work(self, config, point):
        return int(1000 * self.seconds[point["x"]]) + 1

    def run_point(self, config, point, seed):
        start = time.time()
        if point["x"] == self.dies_at:
            time.sleep(0.2)
            os.kill(os.getpid(), signal.SIGKILL)
        if point["x"] == self.fails_at:
            raise RuntimeError(f"{self.name} cannot do point {point['x']}")
        time.sleep(self.seconds[point["x"]])
        with open(self.log, "a") as log:
            log.write(json.dumps([self.name, point["x"], start, time.time()]) + "\n")
        value = np.random.default_rng([seed, point["x"], len(self.name)]).standard_normal()
        return xr.Dataset({"y": ("x", [value])}, coords={"x": [point["x"]]})


class Unplannable(Timed):
    def points(self, config):
        raise ValueError("no grid today")


def _intervals(log) -> dict[str, list[tuple[float, float]]]:
    ran: dict[str, list[tuple[float, float]]] = {}
    for line in log.read_text().splitlines():
        name, _, start, end = json.loads(line)
        ran.setdefault(name, []).append((start, end))
    return ran


def _requests(experiments, tmp_path=None):
    return [SweepRequest(e, {}, SEED, None if tmp_path is None
                         else ResultStore(tmp_path / "store", e.name)) for e in experiments]


@pytest.mark.parametrize("overlap", [True, False])
def test_next_sweep_fills_the_workers_the_last_tasks_leave_idle(tmp_path, overlap):
    log = tmp_path / "ran.jsonl"
    first = Timed("first", [2.0, 0.05], log)  # a fresh worker's first netCDF write: ~0.5 s
    second = Timed("second", [0.1, 0.1, 0.1], log)
    with open_workers(processes=2) as workers:
        results = list(run_sweeps(_requests([first, second], tmp_path), workers,
                                  overlap=overlap))
    ran = _intervals(log)
    long_point_end = max(end for _, end in ran["first"])
    second_start = min(start for start, _ in ran["second"])
    if overlap:  # the second sweep ran beside the first one's long point
        assert second_start < long_point_end - 1.0, ran
    else:  # negative control: one sweep after the other
        assert second_start >= long_point_end, ran
    for experiment, result in zip((first, second), results, strict=True):
        assert isinstance(result, SweepResult)
        alone = run_sweep(experiment, {}, SEED)
        xr.testing.assert_identical(result.dataset, alone.dataset)
        assert len(ResultStore(tmp_path / "store", experiment.name).manifest()) == len(
            experiment.seconds)


def test_an_experiment_that_runs_alone_has_the_workers_to_itself(tmp_path):
    log = tmp_path / "ran.jsonl"
    before = Timed("before", [0.8, 0.05], log)
    timed = Timed("timed", [0.3], log, alone=True)
    after = Timed("after", [0.1, 0.1], log)
    with open_workers(processes=2) as workers:
        results = list(run_sweeps(_requests([before, timed, after]), workers, overlap=True))
    assert all(isinstance(r, SweepResult) for r in results)
    ran = _intervals(log)
    [(start, end)] = ran["timed"]
    assert start >= max(e for _, e in ran["before"]), ran
    assert end <= min(s for s, _ in ran["after"]), ran


def test_a_failed_sweep_is_its_own_result_and_the_overlapping_ones_carry_on(tmp_path):
    log = tmp_path / "ran.jsonl"
    experiments = [Timed("first", [0.6, 0.05], log), Unplannable("unplannable", [], log),
                   Timed("failing", [0.05, 0.05, 0.05], log, fails_at=1),
                   Timed("last", [0.05, 0.05], log)]
    with open_workers(processes=2) as workers:
        results = list(run_sweeps(_requests(experiments, tmp_path), workers, overlap=True))
    assert isinstance(results[0], SweepResult) and isinstance(results[3], SweepResult)
    assert isinstance(results[1], ValueError) and "no grid today" in str(results[1])
    assert isinstance(results[2], RuntimeError) and "point 1" in str(results[2])
    stored = ResultStore(tmp_path / "store", "failing").manifest()
    assert len(stored) == 2  # the points that succeeded are kept for a rerun
    assert results[3].dataset.y.size == 2


def test_a_dead_worker_fails_only_its_point_in_its_own_sweep(tmp_path):
    log = tmp_path / "ran.jsonl"
    dying = Timed("dying", [0.05, 0.6, 0.05], log, dies_at=1)
    beside = Timed("beside", [0.3, 0.3, 0.3], log)
    later = Timed("later", [0.05, 0.05], log)
    with open_workers(processes=2) as workers:
        results = list(run_sweeps(_requests([dying, beside, later], tmp_path), workers,
                                  overlap=True))
    assert isinstance(results[0], PointsLost), results[0]
    assert list(results[0].reasons) == ["x=1"]
    assert "killed by SIGKILL" in results[0].reasons["x=1"]
    assert len(ResultStore(tmp_path / "store", "dying").manifest()) == 2
    for result, experiment in zip(results[1:], (beside, later), strict=True):
        assert isinstance(result, SweepResult), result
        xr.testing.assert_identical(result.dataset, run_sweep(experiment, {}, SEED).dataset)


def test_ctrl_c_names_every_running_sweep_and_releases_their_points(tmp_path, capsys):
    log = tmp_path / "ran.jsonl"
    first, second = Timed("first", [0.8, 0.05], log), Timed("second", [0.3, 0.3, 0.3], log)
    requests = _requests([first, second], tmp_path)

    def interrupt(done, total):
        if done == 1:  # the second sweep's first point, while the first sweep's long one runs
            raise KeyboardInterrupt

    requests[1] = SweepRequest(second, {}, SEED, requests[1].store, on_point=interrupt)
    with pytest.raises(KeyboardInterrupt), open_workers(processes=2) as workers:
        list(run_sweeps(requests, workers, overlap=True))
    err = capsys.readouterr().err
    assert "workbench: first interrupted; 1 of 2 points saved" in err
    assert "workbench: second interrupted; 1 of 3 points saved" in err
    for request in requests:  # no claim is left held: a rerun can take every point
        for point in request.experiment.points({}):
            key = store_key(point_identity(request.experiment, {}, point, SEED))
            lock = request.store.claim(key)
            assert lock is not None, (request.experiment.name, point)
            lock.release()
