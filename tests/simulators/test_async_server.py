"""The event-driven single-server system against traces computed by hand."""

import numpy as np
import pytest

from simulators.async_server import AsyncServerSystem
from simulators.events import EventQueue
from simulators.latency import LatencyModel, WorkerTiming
from simulators.static import round_robin
from simulators.validation import InvalidParameter


def _trace(schedule):
    return list(zip(schedule.worker.tolist(), schedule.version_read.tolist(),
                    schedule.staleness.tolist(), schedule.applied.tolist(),
                    schedule.start_time.tolist(), schedule.finish_time.tolist(),
                    schedule.time.tolist(), strict=True))


def test_speeds_network_server_time_and_a_dropped_gradient_match_hand_trace():
    # Compute times 1, 2, 4 (constant latency 1, speed factors 1, 1/2, 1/4); messages take
    # 1/8 each way; an update takes 1/16; gradients staler than 2 are dropped. All times are
    # binary fractions, so the comparison is exact.
    system = AsyncServerSystem(
        3, WorkerTiming(LatencyModel("constant", 1.0), speed_factors=(1.0, 0.5, 0.25)),
        server_update_time=0.0625, network_delay=0.125, staleness_bound=2)
    schedule = system.simulate(7, seed=0)
    # (worker, version read, staleness, applied, start, finish, processed)
    expected = [
        (0, 0, 0, True, 0.125, 1.125, 1.3125),
        (1, 0, 1, True, 0.125, 2.125, 2.3125),
        (0, 1, 1, True, 1.4375, 2.4375, 2.625),
        (0, 3, 0, True, 2.75, 3.75, 3.9375),
        (2, 0, 4, False, 0.125, 4.125, 4.25),  # staleness 4 > 2: dropped, takes no time
        (1, 2, 2, True, 2.4375, 4.4375, 4.625),
        (0, 4, 1, True, 4.0625, 5.0625, 5.25),
        (0, 6, 0, True, 5.375, 6.375, 6.5625),
    ]
    assert _trace(schedule) == expected
    assert schedule.n_updates() == 7
    assert schedule.update_staleness().ravel().tolist() == [0, 1, 1, 0, 2, 1, 0]


def test_busy_server_queues_gradients_first_in_first_out():
    # Three equal workers all finish at t = 1; each update takes 1/2, so the second and third
    # wait in the queue and read older versions.
    system = AsyncServerSystem(3, WorkerTiming(LatencyModel("constant", 1.0)),
                               server_update_time=0.5)
    schedule = system.simulate(6, seed=0)
    expected = [
        (0, 0, 0, True, 0.0, 1.0, 1.5),
        (1, 0, 1, True, 0.0, 1.0, 2.0),
        (2, 0, 2, True, 0.0, 1.0, 2.5),
        (0, 1, 2, True, 1.5, 2.5, 3.0),
        (1, 2, 2, True, 2.0, 3.0, 3.5),
        (2, 3, 2, True, 2.5, 3.5, 4.0),
    ]
    assert _trace(schedule) == expected


def test_constant_latency_system_equals_round_robin_schedule():
    simulated = AsyncServerSystem(4, WorkerTiming(LatencyModel("constant", 0.5))).simulate(50, 1)
    closed_form = round_robin(50, 4, compute_time=0.5)
    for name in ("worker", "version_read", "staleness", "applied", "start_time", "time"):
        np.testing.assert_array_equal(getattr(simulated, name), getattr(closed_form, name))


def test_worker_latencies_do_not_depend_on_the_number_of_workers():
    timing = WorkerTiming(LatencyModel("exponential", 1.0), straggler_probability=0.2,
                          straggler_slowdown=5.0)
    small = AsyncServerSystem(4, timing).simulate(200, seed=7)
    large = AsyncServerSystem(9, timing).simulate(400, seed=7)

    def durations(schedule, worker, count):
        rows = schedule.worker == worker
        return (schedule.finish_time[rows] - schedule.start_time[rows])[:count]

    assert np.count_nonzero(small.worker == 3) >= 20
    np.testing.assert_array_equal(durations(small, 3, 20), durations(large, 3, 20))


def test_independent_servers_each_apply_their_own_updates():
    system = AsyncServerSystem(3, WorkerTiming(LatencyModel("gamma", 1.0, 2.0)), n_servers=2)
    schedule = system.simulate(100, seed=3)
    assert schedule.n_servers == 2
    assert schedule.n_updates(0) == schedule.n_updates(1) == 100
    # server 1's workers are 3, 4, 5 and only ever talk to server 1
    assert set(schedule.worker[schedule.server == 1].tolist()) == {3, 4, 5}
    assert schedule.update_staleness().shape == (100, 2)


def test_same_seed_same_schedule_different_seed_different_schedule():
    system = AsyncServerSystem(5, WorkerTiming(LatencyModel("lognormal", 1.0, 0.5)))
    a, b, c = system.simulate(300, 11), system.simulate(300, 11), system.simulate(300, 12)
    np.testing.assert_array_equal(a.time, b.time)
    np.testing.assert_array_equal(a.staleness, b.staleness)
    assert not np.array_equal(a.time, c.time)


def test_event_queue_resolves_ties_in_push_order():
    queue = EventQueue()
    for label in "abcde":
        queue.push(1.0, label)
    queue.push(0.5, "first")
    assert [queue.pop()[1] for _ in range(6)] == ["first", "a", "b", "c", "d", "e"]


@pytest.mark.parametrize("kwargs, field", [
    ({"n_workers": 0}, "n_workers"),
    ({"n_workers": 2, "n_servers": 0}, "n_servers"),
    ({"n_workers": 2, "staleness_bound": -1}, "staleness_bound"),
    ({"n_workers": 2, "network_delay": -0.1}, "network_delay"),
    ({"n_workers": 2, "server_update_time": float("nan")}, "server_update_time"),
    ({"n_workers": 2, "timing": WorkerTiming(speed_factors=(1.0,))}, "speed_factors"),
])
def test_bad_system_parameters_name_the_field(kwargs, field):
    with pytest.raises(InvalidParameter) as error:
        AsyncServerSystem(**kwargs)
    assert error.value.field == field
    assert field in str(error.value)


@pytest.mark.parametrize("kwargs, field", [
    ({"kind": "exponential", "mean": float("nan")}, "latency_mean"),
    ({"kind": "exponential", "mean": -1.0}, "latency_mean"),
    ({"kind": "gamma", "mean": 1.0, "shape": float("nan")}, "latency_shape"),
    ({"kind": "lognormal", "mean": 1.0, "shape": -0.5}, "latency_shape"),
    ({"kind": "weibull"}, "latency"),
])
def test_bad_latency_parameters_name_the_field(kwargs, field):
    with pytest.raises(InvalidParameter) as error:
        LatencyModel(**kwargs)
    assert error.value.field == field


@pytest.mark.parametrize("kwargs, field", [
    ({"straggler_probability": 1.5}, "straggler_probability"),
    ({"straggler_probability": float("nan")}, "straggler_probability"),
    ({"straggler_slowdown": 0.5}, "straggler_slowdown"),
    ({"speed_factors": (1.0, 0.0)}, "speed_factors[1]"),
])
def test_bad_worker_timing_names_the_field(kwargs, field):
    with pytest.raises(InvalidParameter) as error:
        WorkerTiming(**kwargs)
    assert error.value.field == field


def test_latency_models_have_the_stated_mean():
    # Each mean is estimated from 200,000 draws; z = 5 (two-sided false-failure rate 5.7e-7).
    rng = np.random.default_rng(0)
    for kind, shape in (("exponential", 1.0), ("lognormal", 0.7), ("gamma", 3.0)):
        draws = LatencyModel(kind, 2.0, shape).draw(rng, 200_000)
        assert abs(draws.mean() - 2.0) < 5 * draws.std() / np.sqrt(draws.size), kind
