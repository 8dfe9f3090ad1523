"""Experiment browser: stored results, their headline view, any variable as an interactive
chart, figures, verdicts, the paper beside the workbench and configuration. It opens on the
first experiment of `workbench list` that has a result, on that experiment's headline view;
the address carries the result, the tab and the plotted variable
(``?result=stale-gaussian.nc&tab=Plot&variable=mse``), so a view can be shared and reopened."""

from pathlib import Path

import numpy as np
import streamlit as st

from app import ui
from workbench import experiments
from workbench.cli.main import DEFAULT_SEED
from workbench.explore import charts, paper_view, results_browser

st.title("Experiment browser")

directory = Path(st.text_input("results directory", str(ui.results_directory()),
                               key="results_directory"))

with st.sidebar:
    st.header("Run a quick version")
    name = st.selectbox("experiment", list(experiments.EXPERIMENTS), key="experiment")
    st.caption(experiments.get(name).summary)
    # the browser's largest exact integer, below the CLI's --seed limit
    seed = st.number_input("seed", min_value=0, max_value=2**53 - 1, value=DEFAULT_SEED,
                           key="seed")
    start = st.button(f"Run {name} --quick", type="primary", key="run_quick")

if start:
    ui.quick_run(name, lambda progress: results_browser.run_quick(name, directory, int(seed),
                                                                  progress))

results = ui.stored_results(directory)
if not results:
    st.info(f"No result files (`*.nc`) under `{directory}`. Run one from the sidebar, or "
            f"`workbench run NAME --out {directory}`.")
    st.stop()
for broken in (r for r in results if r.problem):
    st.error(f"{broken.path} is not shown: {broken.problem}")
readable = [r for r in results if not r.problem]
if not readable:
    st.stop()


@st.cache_resource(show_spinner=False, max_entries=64)
def headline_chart(path: str, modified: float, experiment: str):
    """The experiment's declared headline view of one stored result (``None`` when it
    declares none), as its Vega-Lite spec, and what its caption says."""
    headline = getattr(experiments.get(experiment), "headline", None) \
        if experiment in experiments.EXPERIMENTS else None
    if headline is None:
        return None, ""
    frame = charts.headline_frame(ui.load(path, modified), headline)
    chart = charts.line_chart(frame, x_title=headline.x or headline.along,
                              y_title=headline.variable, log_x=headline.log_x,
                              log_y=headline.log_y, reference_title=headline.reference)
    return charts.vega_lite_spec(chart), headline.caption


@st.cache_resource(show_spinner=False, max_entries=64)
def variable_chart(path: str, modified: float, variable: str, x_dim: str, selection: tuple,
                   series_dim: str | None, log_x: bool, log_y: bool) -> dict:
    """``variable`` along ``x_dim`` at ``selection``, one curve per ``series_dim``
    (:func:`charts.slice_frame`), as its Vega-Lite spec."""
    frame = charts.slice_frame(ui.load(path, modified), variable, x_dim, dict(selection),
                               series_dim)
    return charts.vega_lite_spec(charts.line_chart(frame, x_title=x_dim, y_title=variable,
                                                   log_x=log_x, log_y=log_y))


by_name = {r.path.name: r for r in readable}
# the first experiment of `workbench list` with a result, else the newest result
ranked = sorted(readable, key=lambda r: (list(experiments.EXPERIMENTS).index(r.experiment)
                                         if r.experiment in experiments.EXPERIMENTS
                                         else len(experiments.EXPERIMENTS), -r.modified))
chosen = st.selectbox("result", [r.path.name for r in ranked],
                      format_func=lambda name: by_name[name].label, key="result",
                      bind="query-params")
result = by_name[chosen]
dataset = ui.load(str(result.path), result.modified)

columns = st.columns(4)
columns[0].metric("experiment", result.experiment)
columns[1].metric("configuration", result.configuration)
columns[2].metric("seed", result.seed)
columns[3].metric("file size", f"{result.size_bytes / 1e6:.2f} MB")


def headline_view() -> None:
    """What the experiment declares its result is: one chart (``headline`` of its study)."""
    chart, caption = headline_chart(str(result.path), result.modified, result.experiment)
    if chart is None:
        st.info(f"{result.experiment} declares no headline view; pick any variable in the "
                "Plot tab.")
        return
    if caption:
        st.caption(caption)
    st.vega_lite_chart(chart, width="stretch")
    st.caption("Hover a point for its value, its interval and its grid point; click a legend "
               "entry to show that curve alone (shift-click for more); drag to pan, scroll "
               "to zoom, double-click to reset.")


def plot_view() -> None:
    """One variable of the result along a dim, the other dims at chosen coordinates, its
    interval where the result stores one."""
    variables = results_browser.plottable(dataset)
    variable = st.selectbox("variable", variables,
                            index=variables.index("mse") if "mse" in variables else 0,
                            key="variable", bind="query-params")
    dims = list(dataset[variable].dims)
    x_dim = st.selectbox("against", dims, key=f"against-{variable}")
    series_dim = st.selectbox("one curve per", ["(none)", *[d for d in dims if d != x_dim]],
                              key=f"series-{variable}-{x_dim}")
    series_dim = None if series_dim == "(none)" else series_dim
    # other dims start at their last coordinate: the final checkpoint, the longest run
    selection = {d: st.selectbox(d, dataset[d].values.tolist(), key=f"select-{d}",
                                 index=dataset.sizes[d] - 1)
                 for d in dims if d not in (x_dim, series_dim)}
    values = charts.along(dataset, variable, x_dim, selection, series_dim).values
    numeric_x = np.issubdtype(dataset[x_dim].dtype, np.number)  # else drawn at positions
    log_x = st.checkbox("log x", key=f"log_x-{x_dim}",
                        value=bool(numeric_x and np.all(dataset[x_dim].values > 0)))
    finite = np.isfinite(values)
    log_y = st.checkbox("log y", key=f"log_y-{variable}",
                        value=bool(finite.any() and np.min(values[finite]) > 0))
    st.vega_lite_chart(variable_chart(str(result.path), result.modified, variable, x_dim,
                                      tuple(selection.items()), series_dim, log_x, log_y),
                       width="stretch")


def figures_view() -> None:
    files = results_browser.figure_files(result)
    if not files:
        st.info("No figures beside this result; `workbench run`, `workbench report` and "
                "`workbench check --figures` draw them.")
    for file in files:
        st.image(str(file), caption=file.name)


def verdicts_view() -> None:
    ui.verdicts_with_counts(ui.verdicts(str(result.path), result.modified))


def paper_tab() -> None:
    """What the seed paper states (``[[paper]]`` of the study), each citing its section, beside
    the workbench's values and the verdicts that compare them."""
    entries = paper_view.declared(dataset)
    if not entries:
        st.info(paper_view.none_declared(result.experiment))
        return
    verdicts = ui.verdicts(str(result.path), result.modified)
    st.dataframe(paper_view.paper_rows(entries, verdicts, dataset), hide_index=True,
                 width="stretch")
    named = paper_view.paper_verdict_rows(entries, verdicts)
    if named:
        st.caption("The verdicts each entry names, with their reasons:")
        st.dataframe(named, hide_index=True, width="stretch")


def diagnostics_view() -> None:
    rows = results_browser.diagnostics_rows(dataset)
    if not rows:
        st.info("This result has no convergence diagnostics (its runs keep no draws).")
        return
    failing = sum(not row["rhat_ok"] for row in rows)
    st.markdown(f"**{failing} of {len(rows)} rows with R-hat above "
                f"{results_browser.RHAT_LIMIT}**")
    st.caption(dataset.attrs.get("diagnostics", ""))
    st.dataframe(rows, hide_index=True, width="stretch")


def configuration_view() -> None:
    st.code(dataset.attrs.get("config_toml", ""), language="toml")
    st.json({k: str(v) for k, v in dataset.attrs.items() if k != "config_toml"},
            expanded=False)


# Only the open tab is drawn (switching tabs reruns the page from the caches): loading and
# laying out the hidden tabs' code block, JSON viewer, table and images costs a new browser
# tab about as long as the whole visible page. ``?tab=Verdicts`` in the address opens a tab.
VIEWS = {"Headline": headline_view, "Plot": plot_view, "Figures": figures_view,
         "Verdicts": verdicts_view, "Paper": paper_tab,
         "Diagnostics": diagnostics_view, "Configuration": configuration_view}
for tab, view in zip(st.tabs(list(VIEWS), key="tab", bind="query-params"), VIEWS.values(),
                     strict=True):
    if tab.open:
        with tab:
            view()
