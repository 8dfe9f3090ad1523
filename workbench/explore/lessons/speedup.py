"""Lesson (c): the linear speed-up of the variance, and why the time speed-up bends.

Seed 001 Theorem 4 says the variance of a stale SG-MCMC average does not depend on the
staleness, and §4 turns this into a speed-up: P workers feeding one server produce P times
the updates per unit of a worker's time, each as good as a fresh one for the variance, so the
variance reaches a target after P times fewer iterations per worker (the registered
``seed001-section-4-variance-workers``). Wall-clock time is another matter: the server
applies one update at a time, each taking ``server_update_time`` u, so it cannot apply more
than 1/u updates per unit time; once P workers deliver more than that, extra workers only
queue (and add staleness). The time speed-up bends towards its ceiling while the iteration
speed-up stays linear.

The lesson measures both exactly. For each P in :data:`WORKERS` the asynchronous system
(gamma latencies of mean 1, shape :data:`LATENCY_SHAPE`) runs P·L_w updates; the exact
variance of φ̂_L(θ) for that realised staleness sequence comes from the stacked-state oracle
(docs/math.md §8; no Monte Carlo error; the chains start at rest at the posterior mean, so the
variance first grows during burn-in and is read from its peak on), the wall-clock time of
each update from the schedule, and the speed-ups from :func:`bounds.speedup.speedup_check` —
iterations per worker and time to reach the one-worker run's final variance.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

import numpy as np
import xarray as xr

from bounds.speedup import speedup_check
from bounds.verdict import Verdict
from simulators import validation
from simulators.async_server import AsyncServerSystem
from simulators.latency import LatencyModel, WorkerTiming
from simulators.seeding import derive, generator
from workbench.engine.replay import log_checkpoints
from workbench.models.gaussian import GaussianMeanModel
from workbench.oracles.linear_gaussian import estimator_moments, finite_moments, sgld_dynamics

NAME = "lesson-speedup"
WORKERS = (1, 2, 4, 8, 16)
SERVER_UPDATE_TIMES = (0.0, 0.02, 0.05, 0.1, 0.2)
ITERATIONS_PER_WORKER = 500
RELATIVE_STEP = 0.02  # h = c·s², stable for the staleness these systems produce
LATENCY_SHAPE = 10.0
N_DATA, BATCH_SIZE = 1000, 10
N_CHECKPOINTS = 40
RELATIVE_TOLERANCE = 0.1  # exact values: the iteration speed-up must be within 10% of P
SEED = 2016


@dataclass(frozen=True)
class SpeedupLesson:
    """curves: Dataset over (workers, checkpoint) with ``iterations_per_worker``,
    ``variance`` (exact Var φ̂_L(θ)) and ``time`` (simulated wall-clock at that update);
    verdict: the speed-up check, whose evidence holds both speed-ups; throughput: applied
    updates per unit time for each P."""

    server_update_time: float
    curves: xr.Dataset
    verdict: Verdict
    iteration_speedup: xr.DataArray
    time_speedup: xr.DataArray
    throughput: xr.DataArray
    mean_staleness: xr.DataArray

    @property
    def throughput_ceiling(self) -> float:
        """1/u: the most updates per unit time one server can apply (inf when u = 0)."""
        u = self.server_update_time
        return np.inf if u == 0 else 1.0 / u


@cache
def lesson(server_update_time: float) -> SpeedupLesson:
    """The exact curves for one server update time (cached per value)."""
    u = validation.non_negative("server_update_time", server_update_time)
    model = GaussianMeanModel.generate(generator(SEED, NAME, "data"), N_DATA)
    h = RELATIVE_STEP * model.posterior_variance
    vz = model.gradient_noise_variance(BATCH_SIZE)
    timing = WorkerTiming(LatencyModel("gamma", 1.0, LATENCY_SHAPE))
    rows = {k: [] for k in ("iterations_per_worker", "variance", "time")}
    throughput, staleness = [], []
    for workers in WORKERS:
        length = workers * ITERATIONS_PER_WORKER
        system = AsyncServerSystem(workers, timing, server_update_time=u)
        schedule = system.simulate(length, derive(SEED, NAME, f"workers={workers}"))
        realised = schedule.update_staleness(length)[:, 0]
        times = schedule.update_times(length)[:, 0]
        checkpoints = log_checkpoints(length, N_CHECKPOINTS)
        moments = finite_moments(sgld_dynamics(h), model.precision, realised, checkpoints,
                                 fourth_moments=False)
        exact = estimator_moments(moments, model.posterior_mean, 0.0, vz)
        rows["iterations_per_worker"].append(checkpoints / workers)
        variance = exact["theta"]["variance"][:, 0]
        # From rest at μ the variance of the running average first grows (burn-in), then
        # falls like 1/(Lh); precision is read on the falling part only.
        variance[:int(np.argmax(variance))] = np.nan
        rows["variance"].append(variance)
        rows["time"].append(times[checkpoints - 1])
        throughput.append(length / times[-1])
        staleness.append(realised.mean())
    dims = ("workers", "checkpoint")
    curves = xr.Dataset({k: (dims, np.stack(v)) for k, v in rows.items()},
                        coords={"workers": list(WORKERS)})
    verdict = speedup_check(
        "speedup/variance/theta", curves["workers"].values, curves["iterations_per_worker"],
        curves["variance"], np.zeros_like(curves["variance"].values), z=0.0,
        times=curves["time"], relative_tolerance=RELATIVE_TOLERANCE,
        detail="Theorem 4: the variance is free of τ, so P workers need P times fewer "
               "iterations per worker (exact oracle values: no Monte Carlo error; within "
               f"{RELATIVE_TOLERANCE:.0%} of P)")
    coords = {"workers": list(WORKERS)}
    return SpeedupLesson(
        u, curves, verdict,
        xr.DataArray(verdict.evidence["iteration_speedup"], dims="workers", coords=coords),
        xr.DataArray(verdict.evidence["time_speedup"], dims="workers", coords=coords),
        xr.DataArray(throughput, dims="workers", coords=coords),
        xr.DataArray(staleness, dims="workers", coords=coords))
