"""Calibration of the simulator on recorded runs, and the staleness comparison.

Recovery is checked on runs whose truth is known: schedules of the simulator itself, dressed as
recorded runs (the simulator's update of u seconds ends at ``time``). Tolerances on fitted means
are z = 4 standard errors (false-failure rate 6e-5 per check).
"""

import math

import numpy as np
import pytest

from simulators.async_server import AsyncServerSystem
from simulators.latency import LatencyModel, WorkerTiming
from simulators.seeding import generator
from simulators.validation import InvalidParameter
from workbench.realtime.calibration import (
    calibrate,
    fit_latency,
    staleness_test,
    throughput,
    updates_per_worker_iteration,
)
from workbench.realtime.server import RealRun

Z = 4.0


def as_recorded(schedule, update_time):
    applied = schedule.time[schedule.applied]
    return RealRun(schedule=schedule, trajectory=np.zeros((applied.size, 1)),
                   apply_times=applied, update_starts=applied - update_time, lost_workers={},
                   complete=True, stopped_because="", wall_time=float(applied[-1]), seed=0,
                   streams=(), initial_position=np.zeros(1))


@pytest.mark.parametrize("truth", [LatencyModel("exponential", 2.0),
                                   LatencyModel("gamma", 2.0, 4.0),
                                   LatencyModel("lognormal", 2.0, 0.8)])
def test_fit_latency_recovers_the_family_and_mean(truth):
    times = truth.draw(generator(4, "latency-fit"), 4000)
    fitted = fit_latency(times)
    assert fitted.kind == truth.kind
    assert abs(fitted.mean - truth.mean) <= Z * times.std() / math.sqrt(times.size)


def test_fit_latency_constant_and_bad_input():
    assert fit_latency(np.full(10, 0.5)) == LatencyModel("constant", 0.5)
    with pytest.raises(InvalidParameter, match="compute_times"):
        fit_latency(np.array([1.0, 0.0, 2.0]))


def test_calibrate_recovers_the_simulated_system():
    truth = AsyncServerSystem(3, WorkerTiming(LatencyModel("exponential", 1.0), (1.0, 2.0, 0.5)),
                              server_update_time=0.2, network_delay=0.05)
    schedule = truth.simulate(6000, seed=8)
    calibration = calibrate(as_recorded(schedule, 0.2))
    assert calibration.server_update_time == pytest.approx(0.2)
    assert calibration.network_delay == pytest.approx(0.05)
    assert calibration.timing.latency.kind == "exponential"
    compute = schedule.finish_time - schedule.start_time
    for worker, factor in enumerate((1.0, 2.0, 0.5)):
        own = compute[schedule.worker == worker]
        fitted_mean = calibration.timing.latency.mean / calibration.timing.speed_factors[worker]
        assert abs(fitted_mean - 1.0 / factor) <= Z * own.std() / math.sqrt(own.size)
    # the calibrated simulator reproduces the staleness distribution
    test = staleness_test(schedule, calibration.simulate(6000, seed=9), thin=3)
    assert not test.rejects(0.01), test.describe()


def test_staleness_test_detects_a_different_system():
    timing = WorkerTiming(LatencyModel("exponential", 1.0))
    two = AsyncServerSystem(2, timing, server_update_time=0.1).simulate(3000, seed=1)
    again = AsyncServerSystem(2, timing, server_update_time=0.1).simulate(3000, seed=2)
    four = AsyncServerSystem(4, timing, server_update_time=0.1).simulate(3000, seed=1)
    same = staleness_test(two, two, thin=2)
    assert same.statistic == 0.0 and same.p_value == 1.0
    assert not staleness_test(two, again, thin=2).rejects(0.01)
    assert staleness_test(two, four, thin=2).p_value < 1e-6  # negative control
    for counts in staleness_test(two, four, thin=2).counts:
        assert sum(counts) == 1500


def test_throughput_and_iteration_speedup_of_simulated_systems():
    timing = WorkerTiming(LatencyModel("constant", 1.0))
    one = AsyncServerSystem(1, timing, server_update_time=0.25).simulate(400, seed=1)
    four = AsyncServerSystem(4, timing, server_update_time=0.25).simulate(400, seed=1)
    eight = AsyncServerSystem(8, timing, server_update_time=0.25).simulate(400, seed=1)
    # a worker's cycle takes 1.25: P workers deliver P/1.25 updates per unit time until the
    # server saturates at 1/u = 4 (P* = 5)
    assert throughput(one) == pytest.approx(1 / 1.25)
    assert throughput(four) == pytest.approx(4 / 1.25, rel=0.01)  # start-up transient
    assert throughput(eight) == pytest.approx(4.0, rel=0.01)
    assert updates_per_worker_iteration(four) == pytest.approx(4.0)
    bounded = AsyncServerSystem(4, timing, server_update_time=0.25,
                                staleness_bound=1).simulate(400, seed=1)
    assert updates_per_worker_iteration(bounded) < 4.0


def test_real_against_simulated_comparison_structure(gaussian_model):
    """A small real comparison (P = 1, 2): every field present and consistent. Agreement itself
    is measured in benchmarks/real_vs_simulated.py, never asserted on timing here."""
    from workbench.realtime.comparison import compare_real_and_simulated
    from workbench.realtime.server import RealRunSettings
    from workbench.samplers import SGLD

    settings = RealRunSettings(n_workers=1, n_updates=120, batch_size=10,
                               timing=WorkerTiming(LatencyModel("exponential", 0.002)),
                               server_delay=0.0005)
    result = compare_real_and_simulated(gaussian_model, SGLD(1e-4), settings, [1, 2], seed=4,
                                        simulated_factor=5)
    assert list(result["workers"].values) == [1, 2]
    assert result["complete"].values.tolist() == [1, 1]
    assert result["real_staleness_count"].sum("staleness").values.tolist() == [120, 120]
    assert result["simulated_staleness_count"].sum("staleness").values.tolist() == [600, 600]
    # one worker waits for its own update: never stale, in the real run and the simulation
    assert result["real_staleness_count"].sel(workers=1).values[1:].sum() == 0
    assert result["simulated_staleness_count"].sel(workers=1).values[1:].sum() == 0
    assert float(result["real_time_speedup"].sel(workers=1)) == 1.0
    assert np.all(result["server_update_time"].values >= 0.0005)
    assert result["staleness_p_value"].sel(workers=1).item() == 1.0
    with pytest.raises(InvalidParameter, match="workers"):
        compare_real_and_simulated(gaussian_model, SGLD(1e-4), settings, [2, 4], seed=4)


def test_batch_means_exact_values():
    from workbench.realtime.calibration import batch_means

    mean, error = batch_means(np.tile([0.0, 1.0], 100))  # batches of 10: every mean 0.5
    assert (mean, error) == (0.5, 0.0)
    mean, error = batch_means(np.repeat([0.0, 1.0], 100))  # half the batches 0, half 1
    assert mean == 0.5
    assert error == pytest.approx(np.std([0.0] * 10 + [1.0] * 10, ddof=1) / np.sqrt(20))
    assert math.isnan(batch_means(np.ones(5))[1])  # too short for 20 batches
