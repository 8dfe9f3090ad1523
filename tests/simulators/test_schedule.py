"""Schedules: static generators, validation, summaries and the netCDF round trip."""

import numpy as np
import pytest

from simulators.async_server import AsyncServerSystem
from simulators.latency import LatencyModel, WorkerTiming
from simulators.schedule import Schedule, ScheduleError
from simulators.static import constant_staleness, iid_staleness, round_robin
from simulators.traveling_chains import TravelingChains
from simulators.validation import InvalidParameter
from tests.simulators.round_trip import assert_round_trips


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
    assert_round_trips(schedule, tmp_path / "schedule.nc")


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


def test_a_schedule_without_shard_frequencies_reads_as_one_shard_always_selected():
    dataset = constant_staleness(6, 1).to_dataset().drop_vars("shard_frequency")
    dataset.attrs["schedule_format"] = 1
    restored = Schedule.from_dataset(dataset)
    np.testing.assert_array_equal(restored.shard_frequency, np.ones(6))
    np.testing.assert_array_equal(restored.update_shards(), np.zeros((6, 1)))


def _columns(schedule):
    return {name: getattr(schedule, name).copy() for name in
            ("server", "worker", "shard", "kind", "version_read", "staleness", "applied",
             "start_time", "finish_time", "time", "shard_frequency")}


@pytest.mark.parametrize("column, index, value, message", [
    ("kind", 2, 1, "only gradient and push events can be applied"),
    ("kind", 2, 3, "only gradient and push events can be applied"),
    ("kind", 2, 4, "only gradient and push events can be applied"),
    ("shard_frequency", 0, 0.0, "shard_frequency"),
    ("shard_frequency", 1, 1.5, "shard_frequency"),
    ("shard", 3, -1, "shard indices"),
    ("kind", 0, 5, "event kinds"),
])
def test_contradictory_distributed_columns_are_rejected(column, index, value, message):
    columns = _columns(constant_staleness(5, 0))
    columns[column][index] = value
    with pytest.raises(ScheduleError, match=message):
        Schedule(**columns)


def test_hop_events_are_not_updates_and_do_not_count_as_staleness():
    columns = _columns(constant_staleness(4, 0))
    # insert a hop (not applied, reading the current version) between updates 1 and 2
    hop = {"server": 0, "worker": 1, "shard": 1, "kind": 1, "version_read": 2, "staleness": 0,
           "applied": False, "start_time": 2.0, "finish_time": 2.0, "time": 2.5,
           "shard_frequency": 0.5}
    columns = {name: np.insert(values, 2, hop[name]) for name, values in columns.items()}
    columns["start_time"][3:] += 0.5
    columns["finish_time"][3:] += 0.5
    columns["time"][3:] += 0.5
    schedule = Schedule(**columns)
    assert schedule.n_updates() == 4
    assert schedule.update_staleness().ravel().tolist() == [0, 0, 0, 0]
    assert schedule.staleness_histogram(applied_only=False).values.tolist() == [4]
    assert schedule.update_times().ravel().tolist() == [1.0, 2.0, 3.5, 4.5]


def test_the_first_inconsistent_server_is_named_staleness_before_order():
    # three servers of round-robin rows; break server 2's order and server 1's staleness:
    # server 1 is named; with server 0's order broken too, server 0 is named
    base = {name: np.concatenate([values] * 3) for name, values in
            _columns(constant_staleness(4, 0)).items()}
    base["server"] = np.repeat(np.arange(3, dtype=np.int32), 4)
    base["time"] = np.tile(np.arange(4.0), 3)
    base["start_time"], base["finish_time"] = base["time"].copy(), base["time"].copy()
    Schedule(**{name: values.copy() for name, values in base.items()})  # consistent
    columns = {name: values.copy() for name, values in base.items()}
    columns["time"][9] = -1.0  # server 2 goes back in time
    with pytest.raises(ScheduleError, match="server 2: events must be in processing order"):
        Schedule(**_with_times(columns))
    columns["staleness"][6] = 1  # server 1's staleness is wrong
    with pytest.raises(ScheduleError, match="server 1: staleness"):
        Schedule(**_with_times(columns))
    columns["time"][2] = -1.0  # server 0 goes back in time too
    with pytest.raises(ScheduleError, match="server 0: events must be in processing order"):
        Schedule(**_with_times(columns))
    columns = {name: values.copy() for name, values in base.items()}
    columns["server"][4:8] = 3  # no rows for server 1: nothing to check there
    Schedule(**columns)


def _with_times(columns):
    """Fresh copies (a Schedule freezes its arrays), start and finish at ``time``."""
    columns = {name: values.copy() for name, values in columns.items()}
    columns["start_time"], columns["finish_time"] = columns["time"].copy(), columns["time"].copy()
    return columns


@pytest.mark.parametrize("name", ["shard", "time", "staleness", "shard_frequency"])
def test_update_columns_list_each_servers_applied_rows_in_order(name):
    """Against the per-server boolean selection, on a schedule whose servers interleave and
    carry rows that are not updates (hops) and have unequal numbers of updates."""
    timing = WorkerTiming(LatencyModel("exponential", 1.0),
                          speed_factors=(1.0, 0.5, 0.25, 0.5, 1.0))
    schedule = TravelingChains(5, n_chains=4, trajectory_lengths=(3, 2, 1, 2, 1),
                               timing=timing).simulate(40, seed=3)
    values = getattr(schedule, name)
    per_server = [values[schedule.applied & (schedule.server == s)] for s in range(4)]
    shortest = min(column.size for column in per_server)
    assert (~schedule.applied).any() and len({column.size for column in per_server}) > 1
    for n_updates in (None, 1, shortest):
        columns = schedule.update_column(name, n_updates)
        count = shortest if n_updates is None else n_updates
        expected = np.stack([column[:count] for column in per_server], axis=1)
        assert columns.dtype == values.dtype
        np.testing.assert_array_equal(columns, expected)
    with pytest.raises(ScheduleError, match=f"has only {shortest}"):
        schedule.update_column(name, shortest + 1)
