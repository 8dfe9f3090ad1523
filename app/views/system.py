"""System: the simulated asynchronous parameter-server system (seed 001 Appendix A), and the
downpour and elastic protocols of seed 003 on the same workers."""

import numpy as np
import streamlit as st

from app import ui
from simulators.latency import LATENCY_KINDS
from workbench.explore import system
from workbench.explore.inputs import parse_numbers

st.title("System")
st.caption("Workers compute gradients and send them to their server, which applies them in "
           "arrival order (seed 001 Appendix A, Algorithm 2). The schedule it produces is what "
           "the samplers replay: which version each gradient read, its staleness, and when "
           "it was applied.")

defaults = system.SystemSettings()
with st.sidebar:
    st.header("System")
    n_workers = st.number_input("n_workers (per server)", min_value=0, max_value=256,
                                value=defaults.n_workers, key="n_workers")
    n_servers = st.number_input("n_servers", min_value=0, max_value=16,
                                value=defaults.n_servers, key="n_servers")
    latency = st.selectbox("latency", LATENCY_KINDS, key="latency",
                           index=LATENCY_KINDS.index(defaults.latency))
    latency_mean = st.number_input("latency_mean", value=defaults.latency_mean, format="%g",
                                   key="latency_mean")
    latency_shape = st.number_input("latency_shape (lognormal σ, gamma shape)", key="latency_shape",
                                    value=defaults.latency_shape, format="%g",
                                    disabled=latency in ("constant", "exponential"))
    speed_text = st.text_input("speed_factors (one per worker; blank: all 1)", "",
                               key="speed_factors")
    straggler_probability = st.slider("straggler_probability", 0.0, 1.0,
                                      defaults.straggler_probability, 0.01,
                                      key="straggler_probability")
    straggler_slowdown = st.number_input("straggler_slowdown", value=defaults.straggler_slowdown,
                                         format="%g", key="straggler_slowdown")
    server_update_time = st.number_input("server_update_time", value=defaults.server_update_time,
                                         format="%g", key="server_update_time")
    network_delay = st.number_input("network_delay", value=defaults.network_delay, format="%g",
                                    key="network_delay")
    bounded = st.checkbox("bound the staleness (drop staler gradients)", key="bounded")
    staleness_bound = st.number_input("staleness_bound", min_value=0, value=8,
                                      disabled=not bounded, key="staleness_bound")
    n_updates = st.number_input("n_updates (per server)", min_value=0, max_value=20_000,
                                value=defaults.n_updates, key="n_updates")
    seed = st.number_input("seed", min_value=0, value=defaults.seed, key="seed")
    st.header("Protocols")
    period = st.number_input("period π (local steps per message)", min_value=0, max_value=1000,
                             value=defaults.period, key="period")
    coupling_strength = st.number_input("coupling_strength α (elastic)", format="%g",
                                        value=defaults.coupling_strength,
                                        key="coupling_strength")


@st.cache_data(show_spinner="Simulating the system…", max_entries=32)
def simulated(settings: system.SystemSettings) -> system.SystemView:
    return system.simulate(settings)


@st.cache_data(show_spinner="Simulating the protocols…", max_entries=32)
def protocols(settings: system.SystemSettings) -> list[system.ProtocolView]:
    return system.compare_protocols(settings)


MESSAGE_COLOURS = {"push": "tab:orange", "pull": "tab:cyan", "coupling": "tab:olive"}


def draw_timeline(axis, timeline: system.Timeline, n_workers: int, n_servers: int,
                  server_kind: str, server_update_time: float) -> None:
    """Bars per computation and per server update, arrows per message (module
    :mod:`workbench.explore.system`)."""
    for applied, colour, label in ((True, "tab:blue", "computation applied"),
                                   (False, "tab:red", "dropped (too stale)")):
        keep = timeline.applied == applied
        if keep.any():
            axis.barh(timeline.worker[keep], timeline.worker_duration[keep],
                      left=timeline.worker_start[keep], height=0.6, color=colour, label=label)
    server_rows = n_workers + timeline.server
    if server_update_time > 0:
        axis.barh(server_rows, timeline.server_duration, left=timeline.server_start,
                  height=0.6, color="tab:green", label=f"{server_kind} update")
    else:
        axis.scatter(timeline.server_start, server_rows, marker="|", color="tab:green", s=120,
                     label=f"{server_kind} update (instant)")
    for kind, colour in MESSAGE_COLOURS.items():
        keep = timeline.message_kind == kind
        if not keep.any():
            continue
        worker, server = timeline.message_worker[keep], n_workers + timeline.message_server[keep]
        up = timeline.message_to_server[keep]
        rows = np.where(up, worker, server), np.where(up, server, worker)
        axis.plot(np.stack([timeline.message_sent[keep], timeline.message_received[keep]]),
                  np.stack(rows), color=colour, linewidth=0.8)
        axis.plot([], [], color=colour, label=kind)  # one legend entry per kind
    labels = [f"worker {w}" for w in range(n_workers)]
    labels += [f"{server_kind} {s}" for s in range(n_servers)] if n_servers > 1 else [server_kind]
    axis.set_yticks(np.arange(len(labels)), labels)
    axis.set_ylim(len(labels) - 0.5, -0.5)


@st.cache_data(show_spinner=False, max_entries=32)
def timeline_plot(settings: system.SystemSettings) -> bytes:
    """The Gantt chart of every gradient computation and server update."""
    view = simulated(settings)
    n_rows = view.schedule.n_workers
    figure, axis = ui.subplots(figsize=(12, 0.35 * (n_rows + view.schedule.n_servers) + 1.5))
    draw_timeline(axis, view.timeline, n_rows, view.schedule.n_servers, "server",
                  settings.server_update_time)
    axis.set_xlabel("simulated time")
    axis.legend(loc="upper center", bbox_to_anchor=(0.5, -0.25), ncol=4, fontsize=8)
    return ui.png(figure)


@st.cache_data(show_spinner=False, max_entries=32)
def protocols_plot(settings: system.SystemSettings) -> bytes:
    """The three protocols' timelines on one time axis."""
    views = protocols(settings)
    n_rows = settings.n_workers
    figure, axes = ui.subplots(len(views), 1, sharex=True,
                               figsize=(12, len(views) * (0.35 * (n_rows + 1) + 1.2)))
    names = {"single-server": "server", "downpour": "master", "elastic": "centre"}
    for axis, view in zip(axes, views, strict=True):
        draw_timeline(axis, view.timeline, n_rows, 1, names[view.protocol],
                      settings.server_update_time)
        axis.set_title(view.protocol, fontsize=9, loc="left")
        axis.legend(loc="center left", bbox_to_anchor=(1.0, 0.5), fontsize=7)
    axes[-1].set_xlabel("simulated time")
    return ui.png(figure)


@st.cache_data(show_spinner=False, max_entries=32)
def bars_plot(settings: system.SystemSettings, what: str) -> bytes:
    """The staleness histogram (``what="staleness"``) or each worker's utilisation."""
    view = simulated(settings)
    figure, axis = ui.subplots(figsize=(6, 3.2))
    if what == "staleness":
        histogram = view.staleness_histogram
        axis.bar(histogram["staleness"].values, histogram.values, color="tab:blue")
        axis.set_xlabel("staleness τ")
        axis.set_ylabel("updates")
    else:
        utilisation = view.utilisation
        axis.bar(utilisation["worker"].values, utilisation.values, color="tab:purple")
        axis.set_ylim(0, 1)
        axis.set_xlabel("worker")
        axis.set_ylabel("fraction of the makespan computing")
    return ui.png(figure)


with ui.user_errors():
    settings = system.SystemSettings(
        int(n_workers), int(n_servers), latency, float(latency_mean), float(latency_shape),
        parse_numbers("speed_factors", speed_text), float(straggler_probability),
        float(straggler_slowdown), float(server_update_time), float(network_delay),
        int(staleness_bound) if bounded else None, int(n_updates), int(seed), int(period),
        float(coupling_strength))
    view = simulated(settings)
    compared = protocols(settings)

summary = view.summary()
columns = st.columns(4)
for i, (label, value) in enumerate(summary.items()):
    columns[i % 4].metric(label, f"{value:.4g}" if isinstance(value, float) else value)

st.subheader("Timeline")
st.image(timeline_plot(settings))

left, right = st.columns(2)
with left:
    st.subheader("Staleness of applied updates")
    st.image(bars_plot(settings, "staleness"))
with right:
    st.subheader("Utilisation")
    st.image(bars_plot(settings, "utilisation"))

st.subheader("Simulated wall-clock per update")
st.dataframe([{"server": int(s), "wall-clock per update": float(v)}
              for s, v in zip(view.wall_clock_per_update["server"].values,
                              view.wall_clock_per_update.values, strict=True)],
             hide_index=True)

st.subheader("Protocols at the same local steps")
st.caption(f"The same workers and seed with one server: the single server applies every "
           f"gradient (seed 001); downpour pushes every π = {settings.period} local steps and "
           f"pulls the master back (seed 003 Algorithm 1); elastic runs {settings.n_workers} "
           f"chains coupled to a centre with strength α = {settings.coupling_strength:g} every "
           f"π steps (seed 003 Appendix B). Lines are messages, from sending to arrival.")
st.dataframe([view.summary() for view in compared], hide_index=True)
st.image(protocols_plot(settings))
