"""Lesson (c): the linear speed-up of the variance, and why the time speed-up bends."""

import numpy as np
import streamlit as st
import xarray as xr

from workbench.explore import charts
from workbench.explore.lessons import speedup as lesson_c

st.title("Speed-up of the variance")
st.markdown(
    "With P workers feeding one server, every gradient is P − 1 updates stale on average. "
    "Seed 001's Theorem 4 says the **variance** of the sample average does not care: it "
    "depends on the number of updates and the step, not on the staleness. So P workers, "
    "each doing L_w iterations, give the variance of one chain of P·L_w iterations: the "
    "iteration speed-up is **linear in P**.")
st.latex(r"\mathrm{Var}\,\hat\phi \le \frac{C_1}{P\,L_w\,h} + C_2 h^{2K}")
st.markdown(
    "Wall-clock time is different. The server applies one update at a time, each taking a "
    "time u; it can apply at most 1/u updates per unit time however many workers compute. "
    "Once P workers deliver gradients faster than that, the extra ones wait in the queue. "
    "**Move the server's update time and watch the time speed-up bend** while the iteration "
    "speed-up stays on the diagonal.")

u = st.select_slider("server_update_time u (mean worker latency = 1)",
                     options=list(lesson_c.SERVER_UPDATE_TIMES), value=0.05,
                     key="server_update_time")
with st.spinner("Simulating the systems and propagating the exact variance…"):
    lesson = lesson_c.lesson(u)
workers = lesson.curves["workers"].values


@st.cache_resource(show_spinner=False, max_entries=3 * len(lesson_c.SERVER_UPDATE_TIMES))
def variance_chart(u: float, x: str, label: str):
    """The exact variance of every P against ``x`` (iterations per worker or time), as its
    Vega-Lite spec."""
    frame = charts.slice_frame(lesson_c.lesson(u).curves, "variance", "checkpoint", {},
                               "workers", x_variable=x)
    return charts.vega_lite_spec(charts.line_chart(
        frame, x_title=label, y_title="exact Var φ̂(θ)", log_x=True, log_y=True,
        legend="bottom").properties(height=320))


@st.cache_resource(show_spinner=False, max_entries=len(lesson_c.SERVER_UPDATE_TIMES))
def speedup_chart(u: float):
    """Iteration and time speed-ups against P (the ideal P dashed), with the server's
    ceiling where it has one, as its Vega-Lite spec."""
    lesson = lesson_c.lesson(u)
    kinds = {"iteration speed-up": lesson.iteration_speedup.values,
             "time speed-up": lesson.time_speedup.values}
    if np.isfinite(lesson.throughput_ceiling):
        ceiling = lesson.throughput_ceiling / float(lesson.throughput.sel(workers=1))
        kinds["server ceiling (1/u)"] = np.full(lesson.time_speedup.size, ceiling)
    speedups = xr.Dataset(
        {"speed_up": (("kind", "workers"), np.stack(list(kinds.values()))),
         "ideal": ("workers", lesson.time_speedup["workers"].values.astype(float))},
        coords={"kind": list(kinds), "workers": lesson.time_speedup["workers"].values})
    frame = charts.slice_frame(speedups, "speed_up", "workers", {}, "kind", reference="ideal")
    frame["curve"] = frame["curve"].str.removeprefix("kind = ")
    return charts.vega_lite_spec(charts.line_chart(
        frame, x_title="workers P", y_title="speed-up to the one-worker variance", log_x=True,
        log_y=True, reference_title="ideal: P", legend="bottom").properties(height=320))


left, middle, right = st.columns(3)
with left:
    st.vega_lite_chart(variance_chart(u, "iterations_per_worker", "iterations per worker L_w"),
                    width="stretch")
with middle:
    st.vega_lite_chart(variance_chart(u, "time", "simulated wall-clock time"), width="stretch")
with right:
    st.vega_lite_chart(speedup_chart(u), width="stretch")
st.caption("Exact values (the oracle): no Monte Carlo interval. Hover a point for its value "
           "and grid point; click a legend entry to show that curve alone; drag and scroll to "
           "pan and zoom. Dashed: the ideal speed-up P.")

st.dataframe([{"workers P": int(p), "iteration speed-up": float(i), "time speed-up": float(t),
               "updates per unit time": float(r), "mean staleness": float(s)}
              for p, i, t, r, s in zip(workers, lesson.iteration_speedup.values,
                                       lesson.time_speedup.values, lesson.throughput.values,
                                       lesson.mean_staleness.values, strict=True)],
             hide_index=True)
verdict = lesson.verdict
st.markdown(f"Speed-up check (`bounds.speedup`): **{verdict.verdict}** — worst iteration "
            f"speed-up {verdict.observed:.3g} for P = {verdict.expected:g}. {verdict.detail}.")
st.markdown(
    "Two things to notice. The variance curves against iterations per worker are the "
    "one-worker curve shifted left by P: staleness costs nothing here. Against time they "
    "bunch together once P·u approaches the mean latency: beyond that point the server, "
    "not the workers, sets the pace, and more workers only add staleness. With u = 0 the "
    "two speed-ups coincide.")
