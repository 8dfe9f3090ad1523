"""Schedules: static generators, validation, summaries and the netCDF round trip."""

import numpy as np
import pytest
import xarray as xr

from simulators.async_server import AsyncServerSystem
from simulators.latency import LatencyModel, WorkerTiming
from simulators.schedule import Schedule, ScheduleError
from simulators.static import constant_staleness, iid_staleness, round_robin
from simulators.validation import InvalidParameter


def test_constant_staleness_reads_version_zero_during_warm_up():
    schedule = constant_staleness(8, 3)
    assert schedule.version_read.tolist() == [0, 0, 0, 0, 1, 2, 3, 4]
    assert schedule.staleness.tolist() == [0, 1, 2, 3, 3, 3, 3, 3]


def test_iid_staleness_follows_its_distribution():
    probabilities = [0.5, 0.0, 0.3, 0.2]
    schedule = iid_staleness(40_000, probabilities, seed=5)
    tail = schedule.staleness[10:]  # past the warm-up the draw is the staleness
    counts = np.bincount(tail, minlength=4)
    expected = np.asarray(probabilities) * tail.size
    # each count within z = 5 binomial standard errors (false-failure rate 5.7e-7 each)
    spread = np.sqrt(tail.size * np.asarray(probabilities) * (1 - np.asarray(probabilities)))
    assert np.all(np.abs(counts - expected) <= 5 * spread + 1e-9)
    assert counts[1] == 0


@pytest.mark.parametrize("probabilities", [[0.5, 0.6], [1.2, -0.2], [float("nan"), 1.0], []])
def test_iid_staleness_rejects_bad_distributions(probabilities):
    with pytest.raises(InvalidParameter) as error:
        iid_staleness(10, probabilities, seed=0)
    assert error.value.field == "staleness_probabilities"


def test_round_robin_keeps_every_worker_busy():
    schedule = round_robin(60, 4)
    np.testing.assert_allclose(schedule.utilisation().values, np.ones(4))
    assert schedule.staleness_histogram().sel(staleness=3).item() == 57


def test_schedule_round_trips_through_netcdf(tmp_path):
    system = AsyncServerSystem(3, WorkerTiming(LatencyModel("exponential", 1.0)),
                               staleness_bound=2, n_servers=2)
    schedule = system.simulate(50, seed=9)
    assert not schedule.applied.all()  # the bound dropped something
    path = tmp_path / "schedule.nc"
    schedule.to_dataset().to_netcdf(path, engine="h5netcdf")
    with xr.open_dataset(path, engine="h5netcdf") as stored:
        restored = Schedule.from_dataset(stored.load())
    xr.testing.assert_identical(restored.to_dataset(), schedule.to_dataset())
    assert restored.attrs == schedule.attrs


def test_inconsistent_staleness_is_rejected():
    dataset = constant_staleness(5, 1).to_dataset()
    dataset["staleness"].values[3] = 0
    with pytest.raises(ScheduleError, match="staleness"):
        Schedule.from_dataset(dataset)


def test_without_staleness_reads_the_current_version():
    schedule = AsyncServerSystem(4, WorkerTiming(LatencyModel("exponential", 1.0))).simulate(
        100, seed=2)
    fresh = schedule.without_staleness()
    assert fresh.staleness.max() == 0
    np.testing.assert_array_equal(fresh.time, schedule.time)
    assert schedule.staleness.max() > 0


def test_update_staleness_refuses_more_updates_than_a_server_has():
    with pytest.raises(ScheduleError, match="has only"):
        constant_staleness(10, 2).update_staleness(11)
