"""System: the simulated asynchronous parameter-server system (seed 001 Appendix A), and the
downpour and elastic protocols of seed 003 on the same workers."""

import streamlit as st

from app import ui
from simulators.latency import LATENCY_KINDS
from workbench.explore import charts, system
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


@st.cache_resource(show_spinner=False, max_entries=32)
def chart(settings: system.SystemSettings, what: str):
    """The page's ``what`` chart: ``"timeline"``, ``"protocols"``, ``"staleness"`` or
    ``"utilisation"``, as its Vega-Lite spec."""
    if what == "timeline":
        drawn = system.timeline_chart(simulated(settings))
    elif what == "protocols":
        drawn = system.protocols_chart(protocols(settings), settings.n_workers)
    else:
        drawn = system.bars_chart(simulated(settings), what)
    return charts.vega_lite_spec(drawn)


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
st.vega_lite_chart(chart(settings, "timeline"), width="stretch")
st.caption("Hover a bar or line for what it is, where, and when; click a legend entry to show "
           "that kind alone; drag and scroll to pan and zoom the time axis.")

left, right = st.columns(2)
with left:
    st.subheader("Staleness of applied updates")
    st.vega_lite_chart(chart(settings, "staleness"), width="stretch")
with right:
    st.subheader("Utilisation")
    st.vega_lite_chart(chart(settings, "utilisation"), width="stretch")

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
st.vega_lite_chart(chart(settings, "protocols"), width="stretch")
