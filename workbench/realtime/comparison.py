"""Real against calibrated simulated runs for several worker counts (issue 17, item 4).

For each P: a real run (:func:`workbench.realtime.processes.run_processes`), the simulator
calibrated on it (:func:`workbench.realtime.calibration.calibrate`), a simulated schedule of
that calibrated system ``simulated_factor`` times as long (so that the comparison's error is
mostly the real run's), and between them: the chi-square test of their staleness counts, the
throughput (applied updates per second, with the batch-means error of its log), the mean
staleness (with its batch-means error) and, relative to P = 1, the time speed-up T_P and the
schedule's iteration speed-up (updates per worker iteration). The worker counts run one after
the other, never together, so that each real run has the machine to itself.

Seeds: the real run of P workers uses ``(seed, "real", P)``, its simulation
``(seed, "simulated", P)``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np
import xarray as xr

from simulators import validation
from simulators.seeding import SeedLike, derive
from workbench.realtime.calibration import (
    calibrate,
    log_throughput_error,
    mean_staleness,
    staleness_test,
    throughput,
    updates_per_worker_iteration,
)
from workbench.realtime.processes import run_processes
from workbench.realtime.server import RealRunSettings
from workbench.samplers.base import Sampler

FITTED = ("latency_mean", "latency_shape", "server_update_time", "network_delay")


def compare_real_and_simulated(model, sampler: Sampler, settings: RealRunSettings,
                               workers: Sequence[int], seed: SeedLike,
                               simulated_factor: int = 10) -> xr.Dataset:
    """The comparison of the module docstring over ``workers`` (which must include 1);
    ``settings.n_workers`` is replaced by each P in turn. Returns a Dataset over dims
    ``workers`` and ``staleness``."""
    workers = [validation.integer("workers", p, minimum=1) for p in workers]
    if 1 not in workers:
        raise validation.InvalidParameter("workers", workers, "needs 1, the speed-ups' baseline")
    simulated_factor = validation.integer("simulated_factor", simulated_factor, minimum=1)
    rows = []
    for n_workers in workers:
        timing = settings.timing
        if timing is not None and timing.speed_factors is not None:
            raise validation.InvalidParameter(
                "speed_factors", list(timing.speed_factors),
                "must be None when the worker count varies")
        run = run_processes(model, sampler,
                            dataclasses.replace(settings, n_workers=n_workers, kill_after={}),
                            derive(seed, "real", n_workers))
        calibration = calibrate(run)
        simulated = calibration.simulate(simulated_factor * run.n_applied,
                                         derive(seed, "simulated", n_workers))
        rows.append((n_workers, run, calibration, simulated,
                     staleness_test(run.schedule, simulated, thin=n_workers)))
    return _dataset(rows, settings, simulated_factor)


def _dataset(rows, settings: RealRunSettings, simulated_factor: int) -> xr.Dataset:
    workers = [row[0] for row in rows]
    top = max(int(max(run.schedule.staleness.max(), simulated.staleness.max()))
              for _, run, _, simulated, _ in rows)
    counts = {kind: np.stack([np.bincount(schedule.staleness[schedule.applied],
                                          minlength=top + 1)
                              for schedule in schedules])
              for kind, schedules in (("real", [row[1].schedule for row in rows]),
                                      ("simulated", [row[3] for row in rows]))}
    real_rate = np.array([throughput(run.schedule) for _, run, _, _, _ in rows])
    simulated_rate = np.array([throughput(simulated) for _, _, _, simulated, _ in rows])
    real_iteration = np.array([updates_per_worker_iteration(run.schedule)
                               for _, run, _, _, _ in rows])
    simulated_iteration = np.array([updates_per_worker_iteration(simulated)
                                    for _, _, _, simulated, _ in rows])
    staleness = {kind: np.array([mean_staleness(schedule) for schedule in schedules])
                 for kind, schedules in (("real", [row[1].schedule for row in rows]),
                                         ("simulated", [row[3] for row in rows]))}
    log_errors = {kind: np.array([log_throughput_error(schedule) for schedule in schedules])
                  for kind, schedules in (("real", [row[1].schedule for row in rows]),
                                          ("simulated", [row[3] for row in rows]))}
    base = workers.index(1)
    fitted = {name: [] for name in FITTED}
    for _, _, calibration, _, _ in rows:
        fitted["latency_mean"].append(calibration.timing.latency.mean)
        fitted["latency_shape"].append(calibration.timing.latency.shape)
        fitted["server_update_time"].append(calibration.server_update_time)
        fitted["network_delay"].append(calibration.network_delay)
    dims = ("workers",)
    data = {
        "real_staleness_count": (("workers", "staleness"), counts["real"]),
        "simulated_staleness_count": (("workers", "staleness"), counts["simulated"]),
        "real_throughput": (dims, real_rate),
        "simulated_throughput": (dims, simulated_rate),
        "real_time_speedup": (dims, real_rate / real_rate[base]),
        "simulated_time_speedup": (dims, simulated_rate / simulated_rate[base]),
        "real_iteration_speedup": (dims, real_iteration / real_iteration[base]),
        "simulated_iteration_speedup": (dims, simulated_iteration / simulated_iteration[base]),
        "real_mean_staleness": (dims, staleness["real"][:, 0]),
        "real_mean_staleness_se": (dims, staleness["real"][:, 1]),
        "simulated_mean_staleness": (dims, staleness["simulated"][:, 0]),
        "simulated_mean_staleness_se": (dims, staleness["simulated"][:, 1]),
        "real_log_throughput_se": (dims, log_errors["real"]),
        "simulated_log_throughput_se": (dims, log_errors["simulated"]),
        "staleness_chi2": (dims, [row[4].statistic for row in rows]),
        "staleness_chi2_dof": (dims, [row[4].dof for row in rows]),
        "staleness_p_value": (dims, [row[4].p_value for row in rows]),
        "latency": (dims, [row[2].timing.latency.kind for row in rows]),
        **{name: (dims, values) for name, values in fitted.items()},
        "lost_workers": (dims, [len(row[1].lost_workers) for row in rows]),
        "complete": (dims, [int(row[1].complete) for row in rows]),
        "wall_time": (dims, [row[1].wall_time for row in rows]),
    }
    dataset = xr.Dataset(data, coords={"workers": workers,
                                       "staleness": np.arange(top + 1)})
    dataset.attrs.update({f"real_{key}": value for key, value in settings.describe().items()
                          if key != "n_workers"})
    dataset.attrs["simulated_factor"] = simulated_factor
    dataset.attrs["staleness_test"] = ("chi-square homogeneity on staleness counts, thinned "
                                       "1 in P (workbench.realtime.calibration)")
    return dataset
