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

:func:`timeline_chart`, :func:`protocols_chart` and :func:`bars_chart` draw them as
interactive charts.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, replace

import altair as alt
import numpy as np
import pandas as pd
import xarray as xr

from simulators import validation
from simulators.async_server import AsyncServerSystem
from simulators.downpour import DownpourSystem
from simulators.elastic import ElasticSystem
from simulators.latency import LatencyModel, WorkerTiming
from simulators.schedule import COUPLING, EVENT_KINDS, GRADIENT, PULL, PUSH, Schedule
from workbench.explore import charts
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


#: the timeline's kinds of bar and line, with their colours
TIMELINE_COLOURS = {"computation applied": "#1f77b4", "dropped (too stale)": "#d62728",
                    "update": "#2ca02c", "push": "#ff7f0e", "pull": "#17becf",
                    "coupling": "#bcbd22"}
#: what each protocol calls its server
SERVER_NAMES = {"single-server": "server", "downpour": "master", "elastic": "centre"}
BAR = 0.3  # half the height of a bar, in rows


def _timeline_rows(timeline: Timeline, n_workers: int, n_servers: int, server_kind: str,
                   first: int = 0, prefix: str = "") -> tuple[pd.DataFrame, list[str]]:
    """The timeline's bars and lines as rows ``start``, ``end``, ``low``, ``high`` (rows of
    the chart, the first worker at ``first``), ``curve`` (the kind), ``shape`` (bar or line)
    and ``point`` (who, in words); and the rows' labels, each after ``prefix``."""
    labels = [f"worker {w}" for w in range(n_workers)]
    labels += ([f"{server_kind} {s}" for s in range(n_servers)] if n_servers > 1
               else [server_kind])
    parts = []

    def add(start, end, low, high, curve, shape, who) -> None:
        parts.append(pd.DataFrame({"start": start, "end": end, "low": low, "high": high,
                                   "curve": curve, "shape": shape, "point": who}))

    rows = first + timeline.worker
    for applied, curve in ((True, "computation applied"), (False, "dropped (too stale)")):
        keep = timeline.applied == applied
        add(timeline.worker_start[keep], (timeline.worker_start + timeline.worker_duration)[keep],
            rows[keep] - BAR, rows[keep] + BAR, curve, "bar",
            [prefix + labels[w] for w in timeline.worker[keep]])
    server = first + n_workers + timeline.server
    add(timeline.server_start, timeline.server_start + timeline.server_duration, server - BAR,
        server + BAR, "update", "bar" if np.any(timeline.server_duration > 0) else "line",
        [prefix + labels[n_workers + s] for s in timeline.server])
    up = timeline.message_to_server
    worker, server = timeline.message_worker, n_workers + timeline.message_server
    source, target = np.where(up, worker, server), np.where(up, server, worker)
    add(timeline.message_sent, timeline.message_received, first + source, first + target,
        timeline.message_kind, "line",
        [f"{prefix}{labels[a]} → {labels[b]}" for a, b in zip(source, target, strict=True)])
    return pd.concat(parts, ignore_index=True), [prefix + label for label in labels]


def _gantt(frame: pd.DataFrame, labels: list[str]) -> alt.LayerChart:
    """Bars from ``start`` to ``end`` and lines from (start, low) to (end, high) over the
    labelled rows, coloured by kind, with a tooltip each and legend toggles."""
    frame = frame.assign(duration=frame["end"] - frame["start"])
    picked, shown = charts.legend_toggle()
    rows = alt.Scale(domain=[-0.5, len(labels) - 0.5], reverse=True, nice=False, zero=False)
    axis = alt.Axis(values=list(range(len(labels))), labelExpr=f"{json.dumps(labels)}[datum.value]",
                    grid=False, title=None)
    base = alt.Chart(frame).encode(
        x=alt.X("start:Q", title="simulated time"), x2="end:Q",
        y=alt.Y("low:Q", scale=rows, axis=axis), y2="high:Q",
        color=alt.Color("curve:N", title=None, legend=alt.Legend(orient="bottom", columns=3),
                        scale=alt.Scale(domain=list(TIMELINE_COLOURS),
                                        range=list(TIMELINE_COLOURS.values()))),
        opacity=shown,
        tooltip=[alt.Tooltip("curve:N", title="what"), alt.Tooltip("point:N", title="where"),
                 alt.Tooltip("start:Q", title="from", format=charts.FORMAT),
                 alt.Tooltip("end:Q", title="to", format=charts.FORMAT),
                 alt.Tooltip("duration:Q", title="duration", format=charts.FORMAT)])
    layers = [base.transform_filter(alt.datum.shape == "bar").mark_bar().add_params(picked)]
    if (frame["shape"] == "line").any():  # an empty layer would have no time extent
        layers.append(base.transform_filter(alt.datum.shape == "line").mark_rule(
            strokeWidth=1.2))
    return alt.layer(*layers).properties(height=26 * len(labels) + 140).interactive(
        bind_y=False)


def timeline_chart(view: SystemView) -> alt.LayerChart:
    """The Gantt chart of the simulated system (seed 001 Appendix A): a bar per gradient
    computation on its worker's row (dropped ones apart), one per update on its server's row
    (an instant update is a tick), a line per message from sending to arrival."""
    frame, labels = _timeline_rows(view.timeline, view.schedule.n_workers,
                                   view.schedule.n_servers, "server")
    return _gantt(frame, labels)


def protocols_chart(views: list[ProtocolView], n_workers: int) -> alt.LayerChart:
    """The protocols' timelines (:func:`compare_protocols`) on one time axis, one block of
    rows per protocol: bars per computation and per update of the server, master or centre,
    lines per push, pull and coupling message."""
    parts, labels = [], []
    for view in views:
        frame, rows = _timeline_rows(view.timeline, n_workers, 1, SERVER_NAMES[view.protocol],
                                     first=len(labels), prefix=f"{view.protocol}: ")
        parts.append(frame)
        labels += rows
    return _gantt(pd.concat(parts, ignore_index=True), labels)


def bars_chart(view: SystemView, what: str) -> alt.Chart:
    """The staleness histogram of the applied updates (``what="staleness"``) or each
    worker's utilisation, the fraction of the makespan it spends computing."""
    validation.one_of("what", what, ("staleness", "utilisation"))
    if what == "staleness":
        counts = view.staleness_histogram
        frame = pd.DataFrame({"x": counts["staleness"].values, "value": counts.values,
                              "point": [f"τ = {t}" for t in counts["staleness"].values]})
        return charts.bar_chart(frame, x_title="staleness τ", y_title="updates")
    used = view.utilisation
    frame = pd.DataFrame({"x": used["worker"].values, "value": used.values,
                          "point": [f"worker {w}" for w in used["worker"].values]})
    return charts.bar_chart(frame, x_title="worker", y_title="fraction of the makespan computing",
                            y_domain=(0, 1))
