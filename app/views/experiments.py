"""Experiment browser: stored results, their dims, figures, verdicts and configuration."""

from pathlib import Path

import numpy as np
import streamlit as st

from app import ui
from workbench import experiments
from workbench.cli.main import DEFAULT_SEED
from workbench.explore import results_browser

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


@st.cache_data(show_spinner=False, max_entries=64)
def slice_plot(path: str, modified: float, variable: str, x_dim: str, series_dim: str | None,
         selection: tuple, log_x: bool, log_y: bool) -> bytes:
    """The plot of one slice of a stored result, rendered once per choice of controls."""
    data = results_browser.along(ui.load(path, modified), variable, x_dim, dict(selection),
                                 series_dim)
    figure, axis = ui.subplots(figsize=(10, 4))
    x = data[x_dim].values
    if series_dim is None:
        axis.plot(x, data.values, "o-")
    else:
        for value, colour in zip(data[series_dim].values, ui.colours(data.sizes[series_dim]),
                                 strict=True):
            axis.plot(x, data.sel({series_dim: value}).values, "o-", color=colour,
                      label=f"{series_dim} = {value}")
        axis.legend(fontsize=8)
    axis.set_xscale("log" if log_x else "linear")
    axis.set_yscale("log" if log_y else "linear")
    axis.set_xlabel(x_dim)
    axis.set_ylabel(variable)
    return ui.png(figure)


result = st.selectbox("result", readable, format_func=lambda r: r.label, key="result")
dataset = ui.load(str(result.path), result.modified)

columns = st.columns(4)
columns[0].metric("experiment", result.experiment)
columns[1].metric("configuration", result.configuration)
columns[2].metric("seed", result.seed)
columns[3].metric("file size", f"{result.size_bytes / 1e6:.2f} MB")


def plot_view() -> None:
    """One variable of the result along a dim, the other dims at chosen coordinates."""
    variables = results_browser.plottable(dataset)
    variable = st.selectbox("variable", variables,
                            index=variables.index("mse") if "mse" in variables else 0,
                            key="variable")
    dims = list(dataset[variable].dims)
    x_dim = st.selectbox("against", dims, key=f"against-{variable}")
    series_dim = st.selectbox("one curve per", ["(none)", *[d for d in dims if d != x_dim]],
                              key=f"series-{variable}-{x_dim}")
    series_dim = None if series_dim == "(none)" else series_dim
    # other dims start at their last coordinate: the final checkpoint, the longest run
    selection = {d: st.selectbox(d, dataset[d].values.tolist(), key=f"select-{d}",
                                 index=dataset.sizes[d] - 1)
                 for d in dims if d not in (x_dim, series_dim)}
    data = results_browser.along(dataset, variable, x_dim, selection, series_dim)
    numeric_x = np.issubdtype(dataset[x_dim].dtype, np.number)
    log_x = st.checkbox("log x", key=f"log_x-{x_dim}",
                        value=bool(numeric_x and np.all(dataset[x_dim].values > 0)))
    finite = np.isfinite(data.values)
    log_y = st.checkbox("log y", key=f"log_y-{variable}",
                        value=bool(finite.any() and np.nanmin(data.values[finite]) > 0))
    st.image(slice_plot(str(result.path), result.modified, variable, x_dim, series_dim,
                        tuple(sorted(selection.items())), log_x, log_y))


def figures_view() -> None:
    files = results_browser.figure_files(result)
    if not files:
        st.info("No figures beside this result; `workbench run`, `workbench report` and "
                "`workbench check --figures` draw them.")
    for file in files:
        st.image(str(file), caption=file.name)


def verdicts_view() -> None:
    ui.verdicts_with_counts(ui.verdicts(str(result.path), result.modified))


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
VIEWS = {"Plot": plot_view, "Figures": figures_view, "Verdicts": verdicts_view,
         "Diagnostics": diagnostics_view, "Configuration": configuration_view}
for tab, view in zip(st.tabs(list(VIEWS), key="tab", bind="query-params"), VIEWS.values(),
                     strict=True):
    if tab.open:
        with tab:
            view()
