"""Bound lab: type a bound, see its LaTeX, optimal step and rate in L, and fit it to a stored
result (:mod:`workbench.explore.bound_lab`)."""

import streamlit as st

from app import ui
from bounds.parse import BoundSyntaxError
from workbench.explore import bound_lab, charts, results_browser
from workbench.store.netcdf import config_of


@st.cache_resource(show_spinner="Analysing the bound…", max_entries=32)
def analysed(text: str, assumptions: str) -> bound_lab.Analysis:
    return bound_lab.analyse(bound_lab.parse(text, assumptions))


@st.cache_resource(show_spinner="Fitting the envelope…", max_entries=32)
def fitted(text: str, assumptions: str, path: str, modified: float, function: str,
           split: str) -> bound_lab.Fit:
    return bound_lab.fit(bound_lab.parse(text, assumptions), ui.load(path, modified),
                         function, split)


@st.cache_resource(show_spinner=False, max_entries=32)
def fit_chart(text: str, assumptions: str, path: str, modified: float, function: str,
              split: str) -> dict:
    """The fitted envelope against the measured MSE (:func:`bound_lab.fit_chart`), as its
    Vega-Lite spec."""
    fit = fitted(text, assumptions, path, modified, function, split)
    return charts.vega_lite_spec(bound_lab.fit_chart(fit, function))


st.title("Bound lab")
st.caption("Write a bound with the papers' letters (h, L, tau, ...) or the workbench's names "
           "(step_size, n_iterations, staleness), hidden constants C1, C2, ... and the "
           "functions sqrt, log, exp, abs, min, max. Nothing you type is executed: the string "
           "is rebuilt through a whitelist.")

text = st.text_input("bound", bound_lab.EXAMPLE, key="bound")
assumptions = st.text_input("assumptions", "", key="assumptions",
                            placeholder="n_chains=positive integer, rho=positive",
                            help="symbols of your own, NAME=ASSUMPTION, comma-separated")
try:
    found = analysed(text, assumptions)
except BoundSyntaxError as error:
    st.error(f"Invalid bound — {ui.literal(str(error))}")
    st.stop()
bound = found.bound
st.latex(found.latex)
columns = st.columns(3)
columns[0].metric("rate in L", f"L^({found.rate})" if found.rate else "none")
columns[1].metric("h* found by", found.method or "none")
columns[2].metric("constants to fit", len(bound.terms()))
if found.optimal_step_latex:
    st.latex(r"h^{*} = " + found.optimal_step_latex)
else:
    st.info(f"Optimal step: {found.optimal_step}")

st.header("Fit to a stored result")
directory = ui.results_directory()
results = [r for r in ui.stored_results(directory)
           if not r.problem and r.experiment == bound_lab.FITTABLE]
if not results:
    st.info(f"No stored {bound_lab.FITTABLE} result under `{directory}`: run "
            f"`workbench run {bound_lab.FITTABLE} --out {directory}` (its envelope grid is what "
            "the bound is fitted to).")
    st.stop()
result = st.selectbox("result", results, format_func=lambda r: r.label, key="result")
dataset = ui.load(str(result.path), result.modified)
if not bound_lab.fittable(dataset):
    st.info("This result has no envelope grid (it was run with designs = false).")
    st.stop()
config = config_of(dataset)
functions = dataset["test_function"].values.tolist()
columns = st.columns(2)
function = columns[0].selectbox("test_function", functions, key="test_function",
                                index=functions.index(config["test_function"]))
split = columns[1].selectbox("envelope_split", list(bound_lab.SPLITS), key="envelope_split",
                             index=list(bound_lab.SPLITS).index(config["envelope_split"]),
                             help="checkerboard: alternate (τ, h) runs calibrate; extrapolate: "
                                  "the shorter half of the L grid calibrates")
with ui.user_errors():
    fit = fitted(text, assumptions, str(result.path), result.modified, function, split)

st.metric("verdict", fit.verdict.verdict)
st.caption(f"Constants fitted on {fit.envelope.n_calibration} calibration points of the "
           f"({', '.join(fit.measured.dims)}) grid, the bound judged on the held-out points.")
ui.verdict_table(results_browser.verdict_rows([fit.verdict]))
st.dataframe([{"term": term, "fitted constant": constant} for term, constant
              in zip(fit.envelope.terms, fit.envelope.coefficients, strict=True)],
             hide_index=True, width="stretch")

st.vega_lite_chart(fit_chart(text, assumptions, str(result.path), result.modified, function,
                             split), width="stretch")
st.caption("Each point is one (τ, h, L) run of the grid: the fitted envelope across, the "
           "measured MSE up, with its 95% interval. Hover for the grid point; click a legend "
           "entry to show calibration or held-out points alone.")
