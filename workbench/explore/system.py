"""The System page: simulate the asynchronous parameter-server system and summarise it.

Seed 001 Appendix A (Algorithm 2) as built by :class:`simulators.async_server.AsyncServerSystem`:
workers compute gradients with latencies from a :class:`~simulators.latency.LatencyModel`,
scaled by per-worker speed factors and stragglers; servers apply them in arrival order, each
taking ``server_update_time``; gradients staler than ``staleness_bound`` are dropped.

:func:`simulate` returns the schedule and what the page draws: the timeline (one bar per
gradient computation, one per server update), the staleness histogram, each worker's
utilisation and the simulated wall-clock time per applied update.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import xarray as xr

from simulators import validation
from simulators.async_server import AsyncServerSystem
from simulators.latency import LatencyModel, WorkerTiming
from simulators.schedule import Schedule


@dataclass(frozen=True)
class SystemSettings:
    """The page's controls; names as in :meth:`AsyncServerSystem.describe`."""

    n_workers: int = 4
    n_servers: int = 1
    latency: str = "exponential"
    latency_mean: float = 1.0
    latency_shape: float = 1.0
    speed_factors: tuple[float, ...] | None = None
    straggler_probability: float = 0.0
    straggler_slowdown: float = 5.0
    server_update_time: float = 0.05
    network_delay: float = 0.0
    staleness_bound: int | None = None
    n_updates: int = 200
    seed: int = 2016

    def system(self) -> AsyncServerSystem:
        """The simulated system; invalid settings raise ``InvalidParameter``."""
        timing = WorkerTiming(LatencyModel(self.latency, self.latency_mean, self.latency_shape),
                              self.speed_factors, self.straggler_probability,
                              self.straggler_slowdown)
        return AsyncServerSystem(self.n_workers, timing, self.n_servers,
                                 self.server_update_time, self.network_delay,
                                 self.staleness_bound)


@dataclass(frozen=True)
class Timeline:
    """Bars of the Gantt chart, one row per worker and per server.

    worker_bars: ``(worker, start, duration, applied)`` per computed gradient;
    server_bars: ``(server, start, duration)`` per applied update (duration
    ``server_update_time``, which may be 0: the page then draws ticks).
    """

    worker: np.ndarray
    worker_start: np.ndarray
    worker_duration: np.ndarray
    applied: np.ndarray
    server: np.ndarray
    server_start: np.ndarray
    server_duration: np.ndarray


@dataclass(frozen=True)
class SystemView:
    settings: SystemSettings
    schedule: Schedule
    timeline: Timeline
    staleness_histogram: xr.DataArray
    utilisation: xr.DataArray
    wall_clock_per_update: xr.DataArray  # over dim ``server``
    makespan: float
    mean_staleness: float
    max_staleness: int
    n_dropped: int

    def summary(self) -> dict[str, float | int]:
        """The headline numbers, as shown on the page."""
        return {
            "events": self.schedule.n_events,
            "applied updates": int(np.count_nonzero(self.schedule.applied)),
            "dropped gradients": self.n_dropped,
            "mean staleness": self.mean_staleness,
            "max staleness": self.max_staleness,
            "makespan": self.makespan,
            "wall-clock per update": float(self.wall_clock_per_update.mean()),
            "mean utilisation": float(self.utilisation.mean()),
        }


def timeline(schedule: Schedule, server_update_time: float) -> Timeline:
    """The Gantt chart's bars from the schedule's start, finish and processing times."""
    applied = schedule.applied
    return Timeline(
        worker=schedule.worker.copy(),
        worker_start=schedule.start_time.copy(),
        worker_duration=schedule.finish_time - schedule.start_time,
        applied=applied.copy(),
        server=schedule.server[applied],
        server_start=schedule.time[applied] - server_update_time,
        server_duration=np.full(int(applied.sum()), float(server_update_time)),
    )


def wall_clock_per_update(schedule: Schedule, n_updates: int) -> xr.DataArray:
    """Simulated time until each server's last applied update, divided by ``n_updates``."""
    last = schedule.update_times(n_updates)[-1]
    return xr.DataArray(last / n_updates, dims="server",
                        coords={"server": np.arange(last.size)}, name="wall_clock_per_update")


def simulate(settings: SystemSettings) -> SystemView:
    """Run the system until every server has applied ``n_updates`` updates."""
    n_updates = validation.integer("n_updates", settings.n_updates, minimum=1)
    seed = validation.integer("seed", settings.seed, minimum=0)
    system = settings.system()
    schedule = system.simulate(n_updates, seed)
    applied_staleness = schedule.staleness[schedule.applied]
    return SystemView(
        settings=settings,
        schedule=schedule,
        timeline=timeline(schedule, system.server_update_time),
        staleness_histogram=schedule.staleness_histogram(),
        utilisation=schedule.utilisation(),
        wall_clock_per_update=wall_clock_per_update(schedule, n_updates),
        makespan=float(schedule.time.max()),
        mean_staleness=float(applied_staleness.mean()),
        max_staleness=int(applied_staleness.max()),
        n_dropped=int(np.count_nonzero(~schedule.applied)),
    )
