"""System: the simulated asynchronous parameter-server system (seed 001 Appendix A)."""

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


@st.cache_data(show_spinner="Simulating the system…", max_entries=32)
def simulated(settings: system.SystemSettings) -> system.SystemView:
    return system.simulate(settings)


@st.cache_data(show_spinner=False, max_entries=32)
def timeline_plot(settings: system.SystemSettings) -> bytes:
    """The Gantt chart of every gradient computation and server update."""
    view = simulated(settings)
    timeline = view.timeline
    n_rows = view.schedule.n_workers
    figure, axis = ui.subplots(figsize=(12, 0.35 * (n_rows + view.schedule.n_servers) + 1.5))
    for applied, colour, label in ((True, "tab:blue", "gradient applied"),
                                   (False, "tab:red", "gradient dropped (too stale)")):
        keep = timeline.applied == applied
        if keep.any():
            axis.barh(timeline.worker[keep], timeline.worker_duration[keep],
                      left=timeline.worker_start[keep], height=0.6, color=colour, label=label)
    server_rows = n_rows + timeline.server
    if settings.server_update_time > 0:
        axis.barh(server_rows, timeline.server_duration, left=timeline.server_start,
                  height=0.6, color="tab:green", label="server update")
    else:
        axis.scatter(timeline.server_start, server_rows, marker="|", color="tab:green", s=120,
                     label="server update (instant)")
    labels = [f"worker {w}" for w in range(n_rows)]
    labels += [f"server {s}" for s in range(view.schedule.n_servers)]
    axis.set_yticks(np.arange(len(labels)), labels)
    axis.invert_yaxis()
    axis.set_xlabel("simulated time")
    axis.legend(loc="upper center", bbox_to_anchor=(0.5, -0.25), ncol=4, fontsize=8)
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
        int(staleness_bound) if bounded else None, int(n_updates), int(seed))
    view = simulated(settings)

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
