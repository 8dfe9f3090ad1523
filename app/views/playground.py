"""Sampler playground: a few replicates replayed live against the exact oracle."""

import streamlit as st

from app import ui
from workbench.explore import charts, playground
from workbench.samplers import LINEAR_SAMPLER_NAMES

st.title("Sampler playground")
st.caption("A sampler on the Gaussian-mean posterior, with stale gradients or on non-IID "
           "shards in federated rounds, replayed by the same engine as the experiments. Dashed "
           "lines are exact: the oracle's E φ̂_L for this very schedule, and the posterior "
           "value φ̄.")

d = playground.PlaygroundSettings()
with st.sidebar:
    st.header("Model")
    model = st.selectbox("model", playground.MODELS, key="model")
    sharded = model == playground.SHARDED
    n_data = st.number_input("n_data", min_value=0, value=d.n_data, key="n_data")
    dim = st.number_input("dim", min_value=0, max_value=16, value=d.dim, key="dim")
    n_shards, centre_half_width, gradient = d.n_shards, d.centre_half_width, d.gradient
    if sharded:
        n_shards = st.number_input("n_shards (equal, one per client)", min_value=0,
                                   value=d.n_shards, key="n_shards")
        centre_half_width = st.number_input("centre_half_width (shard centres on [-w, w]^d)",
                                            value=d.centre_half_width, format="%g",
                                            key="centre_half_width")
    else:
        gradient = st.radio("gradient", playground.GRADIENTS, horizontal=True, key="gradient")
    batch_size = st.number_input("batch_size", min_value=0, value=d.batch_size,
                                 disabled=gradient != "minibatch", key="batch_size")
    st.header("Sampler")
    sampler, estimator = d.sampler, d.estimator
    if sharded:
        estimator = st.radio("estimator (SGLD with)", playground.ESTIMATORS, horizontal=True,
                             format_func=str.upper, key="estimator")
    else:
        sampler = st.selectbox("sampler", LINEAR_SAMPLER_NAMES, key="sampler")
    relative_step = st.number_input("relative_step c = h/s²", value=d.relative_step,
                                    format="%g", step=0.01, key="relative_step")
    friction = st.number_input("friction D (SGHMC)", value=d.friction, format="%g",
                               disabled=sampler == "sgld", key="friction")
    st.header("Schedule")
    schedule, staleness, n_workers, local_updates = ("federated", d.staleness, d.n_workers,
                                                     d.local_updates)
    if sharded:
        local_updates = st.number_input("local_updates T (per round)", min_value=0,
                                        value=d.local_updates, key="local_updates")
        st.caption("Federated rounds (seed 002 Algorithm 1): each round a client drawn "
                   "uniformly makes T updates with its own shard.")
    else:
        schedule = st.selectbox("schedule", [s for s in playground.SCHEDULES
                                             if s != "federated"],
                                format_func={"constant": "constant staleness τ",
                                             "uniform": "i.i.d. uniform on 0..τ",
                                             "async": "asynchronous workers"}.get,
                                key="schedule")
        staleness = st.number_input("staleness τ", min_value=0, value=d.staleness,
                                    disabled=schedule == "async", key="staleness")
        n_workers = st.number_input("n_workers", min_value=0, max_value=32, value=d.n_workers,
                                    disabled=schedule != "async", key="n_workers")
    st.header("Run")
    n_updates = st.number_input("n_updates", min_value=0, value=d.n_updates, step=500,
                                key="n_updates")
    n_replicates = st.number_input("n_replicates", min_value=0, value=d.n_replicates,
                                   key="n_replicates")
    initial_position = st.number_input("initial_position θ₀", value=d.initial_position,
                                       format="%g", key="initial_position")
    seed = st.number_input("seed", min_value=0, value=d.seed, key="seed")


@st.cache_data(show_spinner="Replaying…", max_entries=16)
def replay(settings):
    return playground.run(settings)


with ui.user_errors():
    settings = playground.PlaygroundSettings(
        model, int(n_data), int(dim), gradient, int(batch_size), sampler, float(relative_step),
        float(friction), schedule, int(staleness), int(n_workers), int(n_shards),
        float(centre_half_width), estimator, int(local_updates), int(n_updates),
        int(n_replicates), float(initial_position), int(seed))
    run = replay(settings)

message = run.divergence_message()
if message:
    st.error(message)
elif not run.stable:
    st.warning(run.stability_note)
if run.oracle_note:
    st.info(run.oracle_note)

columns = st.columns(4)
columns[0].metric("step size h", f"{run.step_size:.4g}")
columns[1].metric("posterior variance s²", f"{run.posterior_variance:.4g}")
columns[2].metric("mean staleness", f"{run.mean_staleness:.3g}")
columns[3].metric("diverged replicates", run.n_diverged)

component = 0
if run.posterior_mean.size > 1:
    component = st.selectbox("component", list(range(run.posterior_mean.size)), key="component")


@st.cache_resource(show_spinner=False, max_entries=32)
def trace_chart(settings: playground.PlaygroundSettings, component: int):
    return charts.vega_lite_spec(
        playground.trace_chart(replay(settings), component).properties(height=340))


@st.cache_resource(show_spinner=False, max_entries=64)
def estimate_chart(settings: playground.PlaygroundSettings, function: str, component: int):
    return charts.vega_lite_spec(
        playground.estimate_chart(replay(settings), function, component).properties(height=340))


left, right = st.columns(2)
with left:
    st.subheader("Traces")
    st.vega_lite_chart(trace_chart(settings, component), width="stretch")
with right:
    function = st.radio("test function φ", ["theta", "theta_squared"], horizontal=True,
                        format_func={"theta": "θ", "theta_squared": "θ²"}.get, key="test_function")
    st.subheader("Running estimate φ̂_L")
    st.vega_lite_chart(estimate_chart(settings, function, component), width="stretch")

st.subheader("At the last checkpoint")
st.dataframe(run.final_table(), hide_index=True)
