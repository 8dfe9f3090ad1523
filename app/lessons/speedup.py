"""Lesson (c): the linear speed-up of the variance, and why the time speed-up bends."""

import numpy as np
import streamlit as st

from app import ui
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


@st.cache_data(show_spinner=False, max_entries=3 * len(lesson_c.SERVER_UPDATE_TIMES))
def variance_plot(u: float, x: str, label: str) -> bytes:
    """The exact variance of every P against ``x`` (iterations per worker or time)."""
    curves = lesson_c.lesson(u).curves
    workers = curves["workers"].values
    figure, axis = ui.subplots(figsize=(4.6, 3.8))
    for p, colour in zip(workers, ui.colours(workers.size), strict=True):
        at = curves.sel(workers=p)
        axis.plot(at[x], at["variance"], color=colour, label=f"P = {p}")
    axis.set_xscale("log")
    axis.set_yscale("log")
    axis.set_xlabel(label)
    axis.set_ylabel("exact Var φ̂(θ)")
    axis.legend(fontsize=7)
    return ui.png(figure)


@st.cache_data(show_spinner=False, max_entries=len(lesson_c.SERVER_UPDATE_TIMES))
def speedup_plot(u: float) -> bytes:
    """Iteration and time speed-ups against P, with the server's ceiling."""
    lesson = lesson_c.lesson(u)
    workers = lesson.curves["workers"].values
    figure, axis = ui.subplots(figsize=(4.6, 3.8))
    axis.plot(workers, workers, ":", color="grey", label="ideal: P")
    axis.plot(workers, lesson.iteration_speedup, "o-", label="iteration speed-up")
    axis.plot(workers, lesson.time_speedup, "s-", label="time speed-up")
    if np.isfinite(lesson.throughput_ceiling):
        ceiling = lesson.throughput_ceiling / float(lesson.throughput.sel(workers=1))
        axis.axhline(ceiling, color="tab:red", linestyle="--", linewidth=1,
                     label="server ceiling (1/u)")
    axis.set_xscale("log", base=2)
    axis.set_yscale("log", base=2)
    axis.set_xlabel("workers P")
    axis.set_ylabel("speed-up to the one-worker variance")
    axis.legend(fontsize=7)
    return ui.png(figure)


left, middle, right = st.columns(3)
with left:
    st.image(variance_plot(u, "iterations_per_worker", "iterations per worker L_w"))
with middle:
    st.image(variance_plot(u, "time", "simulated wall-clock time"))
with right:
    st.image(speedup_plot(u))

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
