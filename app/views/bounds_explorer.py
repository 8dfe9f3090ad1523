"""Bounds explorer: every registered bound, its optimum, and stored measurements beneath it."""

import math

import streamlit as st

from app import ui
from bounds import registry
from workbench.explore import bounds_view, charts, overlays, results_browser

st.title("Bounds explorer")
names = registry.names()


def _label(name: str) -> str:
    bound = registry.get(name)
    return f"{name} [{bound.provenance}] — {bound.title}"


name = st.selectbox("bound", names, index=names.index(bounds_view.DEFAULT_BOUND),
                    format_func=_label, key="bound")
bound = registry.get(name)
report = bounds_view.report(name)

tag = f"`[{bound.provenance}]` {report['provenance_meaning']}"
if bound.is_hypothesis:
    st.warning(f"**Hypothesis under test.** {tag}")
else:
    st.info(tag)
st.markdown(f"**{bound.title}** — {report['quantity_meaning']}; {bound.relation}.  \n"
            f"Source: {bound.source}")
if bound.provenance_note:
    st.caption(bound.provenance_note)
st.latex(report["latex"])
for where in report["where"]:
    st.latex(r"\text{where } " + where["latex"])
form = bounds_view.form(name)
if form is not bound:
    st.markdown("Fixed-step form, as evaluated and optimised here:")
    st.latex(form.latex())
with st.expander("Symbols, conditions, relations"):
    st.dataframe([{"symbol": s["display"], "name": s["name"], "meaning": s["meaning"],
                   "role": "hidden constant" if s["hidden_constant"] else s["assumptions"]}
                  for s in report["symbols"]], hide_index=True)
    for condition in report["conditions"]:
        st.markdown(f"- {condition}")
    for relation in report["relations"]:
        mark = "holds" if relation["holds"] else "FAILS"
        st.markdown(f"- **{mark}**: {relation['claim']} — {relation['detail']}")
    if report["notes"]:
        st.caption(report["notes"])

controls = bounds_view.controls(name)
variables = [c.name for c in controls if not c.hidden_constant]
default_axis = bounds_view.default_axis(name)
axis_name = st.selectbox("horizontal axis", variables, index=variables.index(default_axis),
                         key=f"axis-{name}")
values = {}
with st.sidebar:
    for header, hidden in (("Symbols", False), ("Hidden constants", True)):
        group = [c for c in controls if c.hidden_constant == hidden]
        if group:
            st.header(header)
        for control in group:
            values[control.name] = st.select_slider(
                f"{control.display} ({control.name})", control.options, value=control.default,
                help=control.meaning, format_func=lambda v: f"{v:g}",
                key=f"{name}-{control.name}")

optimum = bounds_view.optimum(name, values)
rate = bounds_view.rate(name)
columns = st.columns(4)
columns[0].metric("bound at the sliders", f"{float(bounds_view.evaluate(name, values)):.4g}")
if optimum is not None:
    columns[1].metric("optimal step h*", "none" if math.isnan(optimum.step_size)
                      else f"{optimum.step_size:.4g}", help=optimum.detail)
    columns[2].metric("bound at h*", "—" if math.isnan(optimum.value)
                      else f"{optimum.value:.4g}")
columns[3].metric("rate in L", "—" if rate is None else f"L^({rate})")
if optimum is not None and optimum.argmin_latex:
    st.markdown(f"Optimal step by **{optimum.method}**:")
    st.latex(r"h^* = " + optimum.argmin_latex)


@st.cache_resource(show_spinner=False, max_entries=256)
def curve_chart(name: str, axis_name: str, chosen: tuple):
    return charts.vega_lite_spec(
        bounds_view.curve_chart(name, axis_name, dict(chosen)).properties(height=320))


st.vega_lite_chart(curve_chart(name, axis_name, tuple(sorted(values.items()))), width="stretch")

st.subheader("Over stored measurements")
directory = ui.results_directory()
results = [r for r in ui.stored_results(directory) if not r.problem]
offers = []
for result in results:
    for overlay in ui.overlays_of(str(result.path), result.modified):
        if overlay.bound == name:
            offers.append((result, overlay))
if not offers:
    st.info(f"No stored result under `{directory}` measures this bound. Run an experiment "
            "(for example `workbench run stale-gaussian --out results`, or from the "
            "Experiment browser) to draw the bound over its measurements.")
    st.stop()

choice = st.selectbox("measurements", range(len(offers)),
                      format_func=lambda i: f"{offers[i][0].label}: {offers[i][1].title}",
                      key=f"measurements-{name}")
result, overlay = offers[choice]
series_dim = st.selectbox("one curve per", ["(none)", *overlay.other_dims],
                          key=f"series-{name}-{choice}")
selection = {}
for dim in overlay.other_dims:
    if dim != series_dim:
        selection[dim] = st.selectbox(dim, overlay.measured[dim].values.tolist(),
                                      key=f"select-{name}-{choice}-{dim}")


@st.cache_resource(show_spinner=False, max_entries=64)
def overlay_chart(path: str, modified: float, name: str, title: str, series_dim: str,
                  selection: tuple, chosen: tuple):
    overlay = next(o for o in ui.overlays_of(path, modified)
                   if o.bound == name and o.title == title)
    return charts.vega_lite_spec(overlays.overlay_chart(
        overlay, None if series_dim == "(none)" else series_dim, dict(selection), dict(chosen)))


st.vega_lite_chart(overlay_chart(str(result.path), result.modified, name, overlay.title,
                              series_dim, tuple(sorted(selection.items())),
                              tuple(sorted(values.items()))), width="stretch")
st.caption("Points: measured, with their 95% intervals; solid: the bound with the "
           "experiment's fitted constants; dotted: with the slider constants. Hover for the "
           "values and grid point; click a legend entry to show that line alone.")
if overlay.envelope is not None:
    fitted = overlay.envelope
    st.caption(f"Fitted ({fitted.label}): " + " + ".join(
        f"{c:.3g}·{t}" for c, t in zip(fitted.coefficients, fitted.terms, strict=True)))
judged = overlay.judged_by(ui.verdicts(str(result.path), result.modified))
if judged:
    st.markdown("**Verdicts of the experiment's checks on this bound**")
    ui.verdict_table(results_browser.verdict_rows(judged))
else:
    st.caption("No check of this experiment judges these measurements against this bound.")
