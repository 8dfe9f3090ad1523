"""The System page: simulate the asynchronous parameter-server system and summarise it, and
set the communication protocols of seed 003 beside it.

Seed 001 Appendix A (Algorithm 2) as built by :class:`simulators.async_server.AsyncServerSystem`:
workers compute gradients with latencies from a :class:`~simulators.latency.LatencyModel`,
scaled by per-worker speed factors and stragglers; servers apply them in arrival order, each
taking ``server_update_time``; gradients staler than ``staleness_bound`` are dropped.

:func:`simulate` returns the schedule and what the page draws: the timeline (one bar per
gradient computation, one per server update), the staleness histogram, each worker's
utilisation and the simulated wall-clock time per applied update.

:func:`compare_protocols` runs the same workers (latencies, speeds, stragglers, network and
server times, seed) under three protocols with one server, at the same number of local steps
L = ``n_updates`` (the budget of the ``elastic-vs-downpour`` experiment):

- ``single-server``: seed 001's parameter server, one gradient per message, L updates;
- ``downpour`` (seed 003 Algorithm 1, :mod:`simulators.downpour`): ⌈L/π⌉ pushes of π local
  steps each, every push answered by a pull;
- ``elastic`` (seed 003 Appendix B, :mod:`simulators.elastic`): P chains of ⌈L/P⌉ local steps,
  coupled to the centre with strength α every π steps.

Their timelines carry the messages as well as the bars: pushes and couplings from a worker to
the master or centre, pulls and coupling replies back, each from when it is sent to when it
arrives (``network_delay`` later).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np
import xarray as xr

from simulators import validation
from simulators.async_server import AsyncServerSystem
from simulators.downpour import DownpourSystem
from simulators.elastic import ElasticSystem
from simulators.latency import LatencyModel, WorkerTiming
from simulators.schedule import COUPLING, EVENT_KINDS, GRADIENT, PULL, PUSH, Schedule
from workbench.systems.protocols.run import message_count

PROTOCOLS = ("single-server", "downpour", "elastic")
KIND_NAMES = np.array(EVENT_KINDS)


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
    period: int = 4
    coupling_strength: float = 1.0

    def timing(self) -> WorkerTiming:
        return WorkerTiming(LatencyModel(self.latency, self.latency_mean, self.latency_shape),
                            self.speed_factors, self.straggler_probability,
                            self.straggler_slowdown)

    def system(self) -> AsyncServerSystem:
        """The simulated system; invalid settings raise ``InvalidParameter``."""
        return AsyncServerSystem(self.n_workers, self.timing(), self.n_servers,
                                 self.server_update_time, self.network_delay,
                                 self.staleness_bound)

    def protocol_system(self, protocol: str):
        """(system, how many updates to simulate) of ``protocol`` with one server, at
        ``n_updates`` local steps (module docstring)."""
        validation.one_of("protocol", protocol, PROTOCOLS)
        steps = validation.integer("n_updates", self.n_updates, minimum=1)
        if protocol == "single-server":
            return replace(self, n_servers=1).system(), steps
        period = validation.integer("period", self.period, minimum=1)
        if protocol == "downpour":
            return DownpourSystem(self.n_workers, self.timing(), 1, self.server_update_time,
                                  self.network_delay, self.staleness_bound,
                                  period=period), math.ceil(steps / period)
        workers = validation.integer("n_workers", self.n_workers, minimum=1)
        return ElasticSystem(workers, period, self.coupling_strength, self.timing(),
                             self.server_update_time,
                             self.network_delay), math.ceil(steps / workers)


@dataclass(frozen=True)
class Timeline:
    """Bars and arrows of the Gantt chart, one row per worker and per server.

    worker bars: ``(worker, start, duration, applied)`` per computation (a gradient, or the π
    local steps of a downpour push; for elastic, one local step of a chain);
    server bars: ``(server, start, duration)`` per update the server applies, or per coupling
    the elastic centre processes (duration ``server_update_time``, which may be 0: the page
    then draws ticks);
    messages: ``(message_kind, message_worker, message_server, sent, received, to_server)``
    per push, pull and coupling (both ways), none for the single server.
    """

    worker: np.ndarray
    worker_start: np.ndarray
    worker_duration: np.ndarray
    applied: np.ndarray
    server: np.ndarray
    server_start: np.ndarray
    server_duration: np.ndarray
    message_kind: np.ndarray
    message_worker: np.ndarray
    message_server: np.ndarray
    message_sent: np.ndarray
    message_received: np.ndarray
    message_to_server: np.ndarray


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


def timeline(schedule: Schedule, server_update_time: float,
             network_delay: float = 0.0) -> Timeline:
    """The Gantt chart from the schedule's start, finish and processing times (the row
    semantics of each event kind are in :mod:`simulators.schedule`)."""
    kind = schedule.kind
    computed = (kind == GRADIENT) | (kind == PUSH)
    elastic = schedule.attrs.get("protocol") == "elastic"
    processed = kind == COUPLING if elastic else schedule.applied
    # arrows: worker → server when the computation (or a chain's round) ends; server → worker
    # when the server answers (a pull, or the centre's coupling reply)
    up = (kind == PUSH) | (kind == COUPLING)
    down = (kind == PULL) | (kind == COUPLING)
    sent = np.concatenate([schedule.finish_time[up], schedule.time[down]])
    return Timeline(
        worker=schedule.worker[computed],
        worker_start=schedule.start_time[computed],
        worker_duration=(schedule.finish_time - schedule.start_time)[computed],
        applied=schedule.applied[computed],
        server=np.zeros(int(processed.sum()), np.int64) if elastic else schedule.server[processed],
        server_start=schedule.time[processed] - server_update_time,
        server_duration=np.full(int(processed.sum()), float(server_update_time)),
        message_kind=np.concatenate([KIND_NAMES[kind[up]], KIND_NAMES[kind[down]]]),
        message_worker=np.concatenate([schedule.worker[up], schedule.worker[down]]),
        message_server=np.zeros(sent.size, np.int64) if elastic else np.concatenate(
            [schedule.server[up], schedule.server[down]]),
        message_sent=sent,
        message_received=sent + network_delay,
        message_to_server=np.arange(sent.size) < int(up.sum()),
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
        timeline=timeline(schedule, system.server_update_time, system.network_delay),
        staleness_histogram=schedule.staleness_histogram(),
        utilisation=schedule.utilisation(),
        wall_clock_per_update=wall_clock_per_update(schedule, n_updates),
        makespan=float(schedule.time.max()),
        mean_staleness=float(applied_staleness.mean()),
        max_staleness=int(applied_staleness.max()),
        n_dropped=int(np.count_nonzero(~schedule.applied)),
    )


@dataclass(frozen=True)
class ProtocolView:
    """One protocol's run for :func:`compare_protocols`."""

    protocol: str
    schedule: Schedule
    timeline: Timeline
    local_steps: int
    messages: int
    makespan: float

    def summary(self) -> dict[str, str | int | float]:
        """One row of the page's protocol table. Messages: a gradient and its reply for the
        single server, a push and its pull for downpour, a state and its reply per coupling
        (:func:`workbench.systems.protocols.run.message_count`)."""
        kind = self.schedule.kind
        return {
            "protocol": self.protocol,
            "local steps": self.local_steps,
            "pushes": int(np.count_nonzero(kind == PUSH)),
            "pulls": int(np.count_nonzero(kind == PULL)),
            "couplings": int(np.count_nonzero(kind == COUPLING)),
            "messages": self.messages,
            "makespan": self.makespan,
            "time per local step": self.makespan / self.local_steps,
        }


def simulate_protocol(settings: SystemSettings, protocol: str) -> ProtocolView:
    """``protocol`` on the settings' workers at ``n_updates`` local steps (module docstring)."""
    seed = validation.integer("seed", settings.seed, minimum=0)
    system, n_updates = settings.protocol_system(protocol)
    schedule = system.simulate(n_updates, seed)
    computed = schedule.kind == (PUSH if protocol == "downpour" else GRADIENT)
    steps = int(computed.sum()) * (system.period if protocol == "downpour" else 1)
    messages = (2 * int(computed.sum()) if protocol == "single-server"
                else message_count(schedule, n_updates))
    return ProtocolView(protocol, schedule,
                        timeline(schedule, system.server_update_time, system.network_delay),
                        steps, messages, float(schedule.time.max()))


def compare_protocols(settings: SystemSettings) -> list[ProtocolView]:
    """The three protocols of :data:`PROTOCOLS` on the same workers and seed."""
    return [simulate_protocol(settings, protocol) for protocol in PROTOCOLS]
