"""Lesson (a): staleness versus step size — why the optimal step shrinks like τ^(−2/3)."""

import streamlit as st

from workbench.explore import charts
from workbench.explore.lessons import staleness_step as lesson_a

st.title("Staleness versus step size")
st.markdown(
    "A stale gradient is computed at a parameter τ updates old. The sampler's step h "
    "decides how far the parameter can have moved in those τ updates — about τh — so the "
    "error staleness adds grows with **τh**, and the mean squared error with **(τh)²**. "
    "Against it stands the Monte Carlo error of the average itself: a chain of L steps of "
    "size h covers a 'time' Lh, and the variance of its average falls like **1/(Lh)**. "
    "Seed 001 (§4) puts the two together:")
st.latex(r"\mathrm{MSE} \le \frac{D_1}{L h} + (D_2 \tau^2 + D_3)\, h^2")
st.markdown(
    "Small steps waste iterations, large steps pay for staleness. Setting the derivative in "
    "h to zero balances the two:")
with st.spinner("Running the lesson's sampler grid (once)…"):
    lesson = lesson_a.lesson()
st.latex(r"h^* = " + lesson.optimal_step_latex + r"\;\propto\; \tau^{-2/3} L^{-1/3}"
         r"\quad\text{once } D_2\tau^2 \gg D_3.")
st.markdown(
    "Below, stale SGLD with full-data gradients runs on a Gaussian posterior for each τ "
    f"over a grid of steps ({lesson_a.N_REPLICATES} replicates of L = "
    f"{lesson_a.N_ITERATIONS} samples each). The points are the measured MSE of the average "
    "of θ²; the curve is the bound with its three constants fitted to every measurement at "
    "once (least squares on relative errors). **Move τ and watch the minimum slide left.**")

tau = st.select_slider("staleness τ", options=list(lesson_a.STALENESS), value=4,
                       key="staleness")


@st.cache_resource(show_spinner=False, max_entries=2 * len(lesson_a.STALENESS))
def chart(kind: str, tau: int):
    """The lesson's ``kind`` chart (``"mse"`` or ``"optimum"``) at τ, as its Vega-Lite spec."""
    draw = lesson_a.mse_chart if kind == "mse" else lesson_a.optimum_chart
    return charts.vega_lite_spec(draw(lesson_a.lesson(), tau).properties(height=360))


s2 = lesson.posterior_variance
left, right = st.columns(2)
with left:
    st.vega_lite_chart(chart("mse", tau), width="stretch")
with right:
    st.vega_lite_chart(chart("optimum", tau), width="stretch")
st.caption("Hover a point for its value, interval and grid point; click a legend entry to "
           "show that line alone; drag and scroll to pan and zoom.")

h_star = float(lesson.optimal_step.sel(staleness=tau))
columns = st.columns(3)
columns[0].metric("h* at this τ", f"{h_star:.3g}", help="minimiser of the fitted bound")
columns[1].metric("h*/s² at this τ", f"{h_star / s2:.3g}",
                  help=f"stability limit c < {lesson_a.stability_limit(tau):.3g}")
columns[2].metric("slope of log h* against log τ (τ ≥ 4)", f"{lesson.slope:.3f}",
                  help="−2/3 = −0.667 when the staleness term dominates")
st.markdown(
    "For small τ the staleness-free term D₃h² (discretisation) still matters and h* "
    "shrinks more slowly; from τ ≈ 4 on the slope is close to −2/3. The step also has a "
    "hard ceiling: stale SGLD is unstable above c = h/s² = 2 sin(π/(2(2τ+1))) ≈ π/(2τ), "
    "which falls like 1/τ — faster than τ^(−2/3), so for very stale systems stability, not "
    "accuracy, sets the step. The exact bias² shows where staleness error starts to "
    "dominate: it grows like h² and rises earlier for larger τ.")
