"""Every page opened headless (streamlit.testing.v1.AppTest): the numbers it shows are the
ones :mod:`workbench.explore` computes, a changed control changes them accordingly, and bad
input is an error message, never an exception."""

import json
import math
from pathlib import Path

import pyarrow
import pytest
from streamlit.testing.v1 import AppTest

from app.ui import RESULTS_ENV
from workbench import experiments
from workbench.explore import (
    bound_lab,
    bounds_view,
    playground,
    results_browser,
    study_editor,
    system,
)
from workbench.explore.lessons import local_updates, speedup, staleness_step
from workbench.explore.overlays import overlays_of
from workbench.studies.experiment import StudyExperiment

from .conftest import ENTRY

TIMEOUT = 120  # seconds per script run; the lessons compute their grids on first use


def open_page(page: str) -> AppTest:
    at = AppTest.from_file(str(ENTRY), default_timeout=TIMEOUT)
    at.switch_page(page).run()
    return at


def no_exception(at: AppTest) -> None:
    assert not at.exception, [e.value for e in at.exception]


def metrics(at: AppTest) -> dict[str, str]:
    return {m.label: m.value for m in at.metric}


def formatted(value) -> str:
    return f"{value:.4g}" if isinstance(value, float) else str(value)


def chart_rows(at: AppTest) -> list:
    """The rows of each interactive (Vega-Lite) chart on the page, as Streamlit sends them
    (Arrow); the page draws no PNG."""
    assert not at.get("image")
    tables = []
    for chart in at.get("vega_lite_chart"):
        [data] = chart.proto.datasets
        tables.append(pyarrow.ipc.open_stream(data.data.data).read_all().to_pandas())
    return tables


@pytest.fixture
def results_env(default_results, monkeypatch):
    monkeypatch.setenv(RESULTS_ENV, str(default_results))
    return default_results


# ---------------------------------------------------------------------------- System
def test_system_page_shows_the_simulated_numbers_and_follows_its_controls():
    at = open_page("views/system.py")
    no_exception(at)
    expected = system.simulate(system.SystemSettings()).summary()
    assert metrics(at) == {k: formatted(v) for k, v in expected.items()}
    at.number_input(key="n_workers").set_value(8).run()
    at.checkbox(key="bounded").check().run()
    no_exception(at)
    expected = system.simulate(system.SystemSettings(n_workers=8, staleness_bound=8)).summary()
    assert metrics(at) == {k: formatted(v) for k, v in expected.items()}
    assert expected["dropped gradients"] > 0  # the bound bites at 8 workers
    rows = at.dataframe[0].value
    assert rows["wall-clock per update"].iloc[0] == pytest.approx(
        expected["wall-clock per update"])
    # the timeline, the staleness histogram, the utilisation, the protocols' timelines
    timeline, staleness, utilisation, _ = chart_rows(at)
    view = system.simulate(system.SystemSettings(n_workers=8, staleness_bound=8))
    dropped = timeline[timeline["curve"] == "dropped (too stale)"]
    assert len(dropped) == expected["dropped gradients"]
    assert (timeline["curve"] == "update").sum() == expected["applied updates"]
    assert staleness["value"].tolist() == view.staleness_histogram.values.tolist()
    assert utilisation["value"].tolist() == pytest.approx(view.utilisation.values.tolist())


def same_protocol_rows(table, settings: system.SystemSettings) -> list[dict]:
    """Assert that the page's protocol table is compare_protocols' (numbers to 1e-6)."""
    expected = [view.summary() for view in system.compare_protocols(settings)]
    shown = table.to_dict("records")
    assert [row.pop("protocol") for row in shown] == [row["protocol"] for row in expected]
    assert shown == [pytest.approx({k: v for k, v in row.items() if k != "protocol"})
                     for row in expected]
    return expected


def test_system_page_sets_downpour_and_elastic_beside_the_single_server():
    """The protocol table is :func:`system.compare_protocols`'s, and follows π and α."""
    at = open_page("views/system.py")
    no_exception(at)
    table = at.dataframe[1].value
    same_protocol_rows(table, system.SystemSettings())
    assert table["protocol"].tolist() == list(system.PROTOCOLS)
    at.number_input(key="period").set_value(8).run()
    at.number_input(key="coupling_strength").set_value(0.5).run()
    no_exception(at)
    expected = same_protocol_rows(at.dataframe[1].value,
                                  system.SystemSettings(period=8, coupling_strength=0.5))
    assert expected[1]["pushes"] == 25  # 200 local steps in pushes of 8
    protocols = chart_rows(at)[3]
    downpour = protocols[protocols["point"].str.startswith("downpour: ")]
    assert (downpour["curve"] == "push").sum() == 25 == (downpour["curve"] == "pull").sum()
    elastic = protocols[protocols["point"].str.startswith("elastic: ")]
    assert (elastic["curve"] == "coupling").sum() == 2 * expected[2]["couplings"]


@pytest.mark.parametrize("key, value, field", [("n_workers", 0, "n_workers"),
                                                ("n_updates", 0, "n_updates"),
                                                ("period", 0, "period"),
                                                ("coupling_strength", 1.5, "coupling_strength"),
                                                ("speed_factors", "1, 2", "speed_factors"),
                                                ("speed_factors", "1, fast", "speed_factors[1]")])
def test_system_page_bad_input_is_an_error_message(key, value, field):
    at = open_page("views/system.py")
    widget = at.text_input(key=key) if key == "speed_factors" else at.number_input(key=key)
    widget.set_value(value).run()
    no_exception(at)
    assert len(at.error) == 1 and field in at.error[0].value


# ---------------------------------------------------------------------------- Playground
def test_playground_shows_the_replay_and_the_oracle():
    at = open_page("views/playground.py")
    no_exception(at)
    run = playground.run(playground.PlaygroundSettings())
    shown = metrics(at)
    assert shown["step size h"] == f"{run.step_size:.4g}"
    assert shown["mean staleness"] == f"{run.mean_staleness:.3g}"
    table = at.dataframe[0].value
    expected = run.final_table()
    assert table["estimate"].tolist() == [r["estimate"] for r in expected]
    assert table["exact E φ̂_L"].tolist() == [r["exact E φ̂_L"] for r in expected]
    traces, estimate = chart_rows(at)  # θ: the estimate and its oracle beside it
    measured = estimate[estimate["style"] == "measured"]
    at_theta = run.estimates.sel(test_function="theta", component=0)
    assert measured["value"].tolist() == pytest.approx(at_theta["mean"].values.tolist())
    assert measured["reference"].tolist() == pytest.approx(
        run.exact_mean.sel(test_function="theta", component=0).values.tolist())
    assert (traces["curve"] == "replicate 0").sum() == run.trace_iterations.size

    at.selectbox(key="sampler").set_value("sghmc-splitting").run()
    at.selectbox(key="schedule").set_value("uniform").run()
    no_exception(at)
    run = playground.run(playground.PlaygroundSettings(sampler="sghmc-splitting",
                                                       schedule="uniform"))
    assert at.dataframe[0].value["estimate"].tolist() == [r["estimate"]
                                                          for r in run.final_table()]


def test_playground_runs_dsgld_and_fsgld_on_federated_rounds():
    at = open_page("views/playground.py")
    at.selectbox(key="model").set_value("sharded-gaussian-mean").run()
    at.radio(key="estimator").set_value("fsgld").run()
    at.number_input(key="local_updates").set_value(50).run()
    no_exception(at)
    run = playground.run(playground.PlaygroundSettings(
        model="sharded-gaussian-mean", schedule="federated", estimator="fsgld",
        local_updates=50))
    table = at.dataframe[0].value
    expected = run.final_table()
    assert table["estimate"].tolist() == [r["estimate"] for r in expected]
    assert table["exact E φ̂_L"].tolist() == [r["exact E φ̂_L"] for r in expected]
    assert metrics(at)["mean staleness"] == "0"
    at.number_input(key="n_shards").set_value(0).run()
    no_exception(at)
    assert len(at.error) == 1 and "n_shards" in at.error[0].value


def test_playground_divergence_is_a_message():
    at = open_page("views/playground.py")
    at.number_input(key="relative_step").set_value(1.5).run()
    no_exception(at)
    message = playground.run(playground.PlaygroundSettings(relative_step=1.5))
    assert [e.value for e in at.error] == [message.divergence_message()]
    assert metrics(at)["diverged replicates"] == "20"


@pytest.mark.parametrize("key, value, field", [("n_replicates", 1, "n_replicates"),
                                                ("n_data", 0, "n_data"),
                                                ("n_updates", 0, "n_updates")])
def test_playground_bad_input_is_an_error_message(key, value, field):
    at = open_page("views/playground.py")
    at.number_input(key=key).set_value(value).run()
    no_exception(at)
    assert len(at.error) == 1 and field in at.error[0].value


# ---------------------------------------------------------------------------- Bounds
def _bound_metrics(name: str, values: dict) -> dict[str, str]:
    optimum = bounds_view.optimum(name, values)
    out = {"bound at the sliders": f"{float(bounds_view.evaluate(name, values)):.4g}",
           "rate in L": f"L^({bounds_view.rate(name)})"}
    if optimum is not None:
        out["optimal step h*"] = f"{optimum.step_size:.4g}"
        out["bound at h*"] = f"{optimum.value:.4g}"
    return out


def test_bounds_page_shows_the_optimum_and_the_verdicts(results_env):
    at = open_page("views/bounds_explorer.py")
    no_exception(at)
    name = "seed001-theorem-3-mse"
    defaults = {c.name: c.default for c in bounds_view.controls(name)}
    assert metrics(at) == _bound_metrics(name, defaults)
    assert at.latex[0].value.strip("$\n") == bounds_view.report(name)["latex"]
    assert "Hypothesis under test" in at.warning[0].value  # a [recon] form

    [result] = results_browser.list_results(results_env)
    dataset = results_browser.load_result(result.path)
    overlay = overlays_of("stale-gaussian", dataset, name)[0]
    judged = overlay.judged_by(results_browser.checks(dataset))
    table = at.dataframe[-1].value
    assert table["check"].tolist() == [v.check for v in judged]
    assert table["verdict"].tolist() == [v.verdict for v in judged]
    bound_curve, measured = chart_rows(at)
    control = next(c for c in bounds_view.controls(name) if c.name == "step_size")
    expected = bounds_view.curve(name, "step_size", defaults, min(control.options),
                                 max(control.options))
    line = bound_curve[bound_curve["style"] == "line"]
    assert line["value"].tolist() == pytest.approx(expected.y.tolist())
    assert bound_curve[bound_curve["style"] == "vrule"]["x"].tolist() == pytest.approx(
        [defaults["step_size"], bounds_view.optimum(name, defaults).step_size])
    assert (measured["style"] == "points").sum() == overlay.measured.sizes[overlay.x_dim]

    name = "seed001-section-4-mse"
    at.selectbox(key="bound").set_value(name).run()
    at.select_slider(key=f"{name}-staleness").set_value(8.0).run()
    no_exception(at)
    values = {c.name: c.default for c in bounds_view.controls(name)} | {"staleness": 8.0}
    assert metrics(at) == _bound_metrics(name, values)
    h_star = (values["D_1"] / (2 * (values["D_2"] * 64 + values["D_3"])
                               * values["n_iterations"])) ** (1 / 3)
    assert metrics(at)["optimal step h*"] == f"{h_star:.4g}"


def test_bounds_page_without_results_says_how_to_get_some(tmp_path, monkeypatch):
    monkeypatch.setenv(RESULTS_ENV, str(tmp_path))
    at = open_page("views/bounds_explorer.py")
    no_exception(at)
    assert "No stored result" in at.info[-1].value


@pytest.mark.parametrize("name", ["seed002-theorem-1-dsgld", "exact-stale-sgld-stability-limit",
                                  "seed001-corollary-5-variance", "seed003-downpour-mse"])
def test_bounds_page_opens_records_of_every_kind(name, tmp_path, monkeypatch):
    monkeypatch.setenv(RESULTS_ENV, str(tmp_path))
    at = open_page("views/bounds_explorer.py")
    at.selectbox(key="bound").set_value(name).run()
    no_exception(at)
    defaults = {c.name: c.default for c in bounds_view.controls(name)}
    shown = metrics(at)
    assert shown["bound at the sliders"] == f"{float(bounds_view.evaluate(name, defaults)):.4g}"
    optimum = bounds_view.optimum(name, defaults)
    if optimum is not None and math.isnan(optimum.step_size):
        assert shown["optimal step h*"] == "none"


# ---------------------------------------------------------------------------- Bound lab
def _lab_fit(directory, text: str, split: str | None = None):
    """The fit the page must show: the stored result's default test function and split."""
    [result] = results_browser.list_results(directory)
    dataset = results_browser.load_result(result.path)
    config = results_browser.config_of(dataset)
    return bound_lab.fit(bound_lab.parse(text), dataset, config["test_function"],
                         split or config["envelope_split"])


def test_bound_lab_shows_the_analysis_and_the_fit_of_the_typed_bound(results_env):
    at = open_page("views/bound_lab.py")
    no_exception(at)
    found = bound_lab.analyse(bound_lab.parse(bound_lab.EXAMPLE))
    assert at.latex[0].value.strip("$\n") == found.latex
    assert at.latex[1].value.strip("$\n") == r"h^{*} = " + found.optimal_step_latex
    shown = metrics(at)
    assert shown["rate in L"] == "L^(-2/3)" and shown["h* found by"] == "exact"
    assert shown["constants to fit"] == "3"
    fit = _lab_fit(results_env, bound_lab.EXAMPLE)
    assert shown["verdict"] == fit.verdict.verdict == "holds"
    table = at.dataframe[0].value
    assert table["check"].tolist() == [fit.verdict.check]
    assert table["observed"].tolist() == pytest.approx([fit.verdict.observed])
    constants = at.dataframe[1].value
    assert constants["fitted constant"].tolist() == pytest.approx(
        fit.envelope.coefficients.tolist())
    [points] = chart_rows(at)
    calibration = points[points["curve"] == "calibration"]
    assert len(calibration) == int(fit.calibration.sum())
    assert sorted(calibration["value"]) == pytest.approx(
        sorted(fit.measured.values[fit.calibration.values]))

    # negative control: a rate in L too fast for the data, extrapolated to the longer runs
    wrong = "C1/(L**2*h)"
    at.text_input(key="bound").set_value(wrong).run()
    at.selectbox(key="envelope_split").set_value("extrapolate").run()
    no_exception(at)
    assert metrics(at)["rate in L"] == "none"  # decreasing in h: no optimal step
    assert at.info[0].value.startswith("Optimal step: ")
    assert metrics(at)["verdict"] == _lab_fit(results_env, wrong, "extrapolate").verdict.verdict
    assert metrics(at)["verdict"] == "violated"


@pytest.mark.parametrize("text", ["__import__('os').system('true')", "h.__class__", "C1/(L*q)",
                                  "eval('1')", "lambda: 1", "[h for h in (1,)]"])
def test_bound_lab_refuses_hostile_or_unknown_strings_with_a_message(text, results_env):
    at = open_page("views/bound_lab.py")
    at.text_input(key="bound").set_value(text).run()
    no_exception(at)
    assert at.error[0].value.startswith("Invalid bound — ")
    assert not at.latex


def test_bound_lab_names_a_symbol_the_result_does_not_vary(results_env):
    at = open_page("views/bound_lab.py")
    at.text_input(key="bound").set_value("C1/(n_chains*L*h)").run()
    at.text_input(key="assumptions").set_value("n_chains=positive integer").run()
    no_exception(at)
    assert at.latex  # the bound itself is fine
    assert "n_chains" in at.error[0].value and "does not vary" in at.error[0].value


def test_bound_lab_without_results_says_how_to_get_some(tmp_path, monkeypatch):
    monkeypatch.setenv(RESULTS_ENV, str(tmp_path))
    at = open_page("views/bound_lab.py")
    no_exception(at)
    assert "workbench run stale-gaussian" in at.info[-1].value


# ---------------------------------------------------------------------------- Study editor
def _line_of(text: str, fragment: str) -> int:
    return next(n for n, line in enumerate(text.splitlines(), start=1) if fragment in line)


def test_study_editor_runs_the_quick_study_and_shows_its_verdicts_and_figures(
        tmp_path, monkeypatch):
    monkeypatch.setenv(RESULTS_ENV, str(tmp_path))
    at = open_page("views/study_editor.py")
    no_exception(at)
    assert at.text_area(key="study").value == study_editor.example()
    study = study_editor.validate(study_editor.example())
    shown = metrics(at)
    assert shown["study"] == "my-stale-gaussian" and shown["sweep dims"] == "staleness"
    quick = StudyExperiment(study).configure(quick=True)
    # its sweep's points, and its [[design]] tables' (rate: 2 τ × 3 L; envelope: 3 τ × 3 c)
    assert shown["quick sweep points"] == str(len(StudyExperiment(study).points(quick))) == "21"
    assert len(quick["staleness"]) == 6
    assert shown["checks"] == "3"
    assert not at.error and "Run the quick version" in at.info[0].value

    at.button(key="run_study").click().run()
    no_exception(at)
    assert at.get("progress")[0].proto.value == 100
    written = tmp_path / study_editor.EDITOR_DIRECTORY / "my-stale-gaussian.nc"
    assert at.success[0].value.startswith(f"wrote {written}")
    assert results_browser.list_results(tmp_path) == []  # the browser's results untouched
    # the verdicts shown are the study's own checks on the stored result
    dataset = results_browser.load_result(written)
    expected = experiments.for_dataset(dataset).checks(dataset)
    table = at.dataframe[0].value
    assert table["check"].tolist() == [v.check for v in expected]
    assert table["verdict"].tolist() == [v.verdict for v in expected]
    assert {"oracle", "invariance", "slope"} <= {v.kind.split()[0] for v in expected}
    figures = sorted(written.parent.glob("my-stale-gaussian*.png"))
    assert figures and len(at.get("image")) == len(figures)
    assert at.dataframe[1].value["rhat"].notna().all()  # the run's diagnostics
    assert not at.warning

    # an edit after the run: the shown verdicts are marked as those of the previous text
    edited = study_editor.example().replace("n_replicates = 100", "n_replicates = 60")
    at.text_area(key="study").set_value(edited).run()
    no_exception(at)
    assert "changed since the run" in at.warning[0].value


@pytest.mark.parametrize("fragment, replacement, key", [
    ("batch_size = 10", "batch_sise = 10", "[run] batch_sise"),
    ("staleness = [1, 2", "stalenes = [1, 2", "[sweep] stalenes"),
    ('name = "my-stale-gaussian"', 'name = "stale-gaussian"', "[study] name"),
])
def test_study_editor_names_the_key_and_line_of_a_broken_study(fragment, replacement, key,
                                                               tmp_path, monkeypatch):
    monkeypatch.setenv(RESULTS_ENV, str(tmp_path))
    text = study_editor.example().replace(fragment, replacement)
    line = _line_of(text, replacement)
    at = open_page("views/study_editor.py")
    at.text_area(key="study").set_value(text).run()
    no_exception(at)
    assert at.error[0].value.startswith(f"Invalid study at line {line}, "
                                        f"{ui_literal(key)} — ")
    assert at.code[0].value == f"{line}: {text.splitlines()[line - 1]}"
    assert replacement in at.code[0].value
    assert not at.button  # nothing to run
    # negative control: the shipped text is accepted
    at.text_area(key="study").set_value(study_editor.example()).run()
    assert not at.error and at.button(key="run_study")


def ui_literal(text: str) -> str:
    from app.ui import literal

    return literal(text)


HOSTILE = "__import__('os').system('touch SENTINEL')"


@pytest.mark.parametrize("expression", [HOSTILE, "C1.__class__", "eval('C1')",
                                        "C1/(L*h) + open('SENTINEL', 'w')"])
def test_study_editor_refuses_a_hostile_bound_and_runs_nothing(expression, tmp_path,
                                                               monkeypatch):
    monkeypatch.setenv(RESULTS_ENV, str(tmp_path))
    monkeypatch.chdir(tmp_path)
    bound = f'\n[[bound]]\nname = "mine"\nexpression = "{expression}"\n'
    text = study_editor.example() + bound
    at = open_page("views/study_editor.py")
    at.text_area(key="study").set_value(text).run()
    no_exception(at)
    line = _line_of(text, "expression = ")
    index = text.count("[[bound]]")  # after the shipped study's own bounds
    assert at.error[0].value.startswith(f"Invalid study at line {line}, "
                                        f"{ui_literal(f'[[bound]] #{index} expression')} — ")
    assert not (tmp_path / "SENTINEL").exists()
    assert not at.button and not list(tmp_path.iterdir())


def test_the_hostile_string_would_create_the_sentinel_if_it_were_executed(tmp_path,
                                                                          monkeypatch):
    """Negative control of the test above: executed (as the editor never does), the string
    creates the file that test looks for."""
    monkeypatch.chdir(tmp_path)
    eval(HOSTILE)  # noqa: S307 - the point of the control
    assert (tmp_path / "SENTINEL").exists()


CODE_STUDY = """\
[study]
name = "code-in-the-editor"

[model]
kind = "python"
python = "broken_models:failing_constructor"

[system]
kind = "asynchronous"

[run]
n_iterations = 500
burn_in = 100
n_replicates = 4
n_evaluations = 100
n_checkpoints = 3

[[check]]
kind = "reference"
"""


def test_study_editor_runs_python_only_behind_its_explicit_switch(tmp_path, monkeypatch):
    """A study naming Python shows the switch, its Run button is off until the switch is on,
    and then the code runs (here a factory that raises: its failure is shown, nothing else
    runs and nothing is written)."""
    monkeypatch.setenv(RESULTS_ENV, str(tmp_path))
    monkeypatch.syspath_prepend(str(Path(__file__).parents[1] / "studies" / "fixtures"))
    at = open_page("views/study_editor.py")
    at.text_area(key="study").set_value(CODE_STUDY).run()
    no_exception(at)
    switch = at.checkbox(key="allow_code")
    assert "broken_models:failing_constructor" in switch.label and not switch.value
    assert at.button(key="run_study").disabled
    switch.check().run()
    assert not at.button(key="run_study").disabled
    at.button(key="run_study").click().run()
    no_exception(at)
    shown = at.error[0].value
    assert "no data here" in shown and ui_literal("[model] python") in shown, shown
    assert not (tmp_path / study_editor.EDITOR_DIRECTORY / "code-in-the-editor.nc").exists()
    # negative control: a study without code has no switch
    at.text_area(key="study").set_value(study_editor.example()).run()
    assert not at.checkbox and not at.button(key="run_study").disabled


# ---------------------------------------------------------------------------- Experiments
def test_experiment_browser_shows_the_stored_result(results_env):
    at = open_page("views/experiments.py")
    no_exception(at)
    [result] = results_browser.list_results(results_env)
    assert metrics(at) == {"experiment": "stale-gaussian", "configuration": "default",
                           "seed": str(result.seed),
                           "file size": f"{result.size_bytes / 1e6:.2f} MB"}
    assert [t.label for t in at.tabs] == ["Headline", "Plot", "Figures", "Verdicts", "Paper",
                                          "Diagnostics", "Configuration"]
    # it opens on the headline view that stale-gaussian's study declares, as a Vega-Lite chart
    [chart] = at.get("vega_lite_chart")
    spec = json.loads(chart.proto.spec)
    headline = experiments.get("stale-gaussian").headline
    [measured] = [layer for layer in spec["layer"] if layer["mark"]["type"] == "line"
                  and "strokeDash" not in layer["mark"]]
    assert measured["encoding"]["y"]["title"] == headline.variable == "mse"
    assert measured["encoding"]["x"]["title"] == headline.x == "iterations"
    assert not at.get("image") and not at.dataframe  # only the open tab is drawn
    at.session_state["tab"] = "Verdicts"
    at.run()
    no_exception(at)
    verdicts = results_browser.checks(results_browser.load_result(result.path))
    table = at.dataframe[0].value
    assert table["check"].tolist() == [v.check for v in verdicts]
    assert table["margin"].tolist() == pytest.approx([v.margin for v in verdicts],
                                                     nan_ok=True)
    at.session_state["tab"] = "Figures"
    at.run()
    figures = results_browser.figure_files(result)
    assert len(figures) == 2
    assert [i.proto.imgs[0].caption for i in at.get("image")] == [f.name for f in figures]
    at.session_state["tab"] = "Plot"
    at.run()
    assert len(at.get("vega_lite_chart")) == 1
    at.selectbox(key="variable").set_value("exact_stationary_variance").run()
    no_exception(at)
    against = at.selectbox(key="against-exact_stationary_variance")
    assert against.options == ["staleness", "component"]
    against.set_value("staleness").run()
    no_exception(at)
    assert at.selectbox(key="select-component").value == 0


def test_experiment_browser_shows_the_run_diagnostics(results_env):
    at = AppTest.from_file(str(ENTRY), default_timeout=TIMEOUT)
    at.query_params["tab"] = "Diagnostics"
    at.switch_page("views/experiments.py").run()
    no_exception(at)
    [result] = results_browser.list_results(results_env)
    dataset = results_browser.load_result(result.path)
    rows = results_browser.diagnostics_rows(dataset)
    # one row per staleness and test function (d = 1), every column from the stored arrays
    assert len(rows) == dataset.sizes["staleness"] * dataset.sizes["test_function"]
    table = at.dataframe[0].value
    assert table["rhat"].tolist() == pytest.approx(dataset["rhat"].values.ravel())
    assert table["ksd_median"].tolist() == pytest.approx(
        dataset["ksd"].median("replicate").values.repeat(dataset.sizes["test_function"]))
    failing = int((dataset["rhat"] > results_browser.RHAT_LIMIT).sum())
    assert at.markdown[-1].value.startswith(f"**{failing} of {len(rows)} rows")
    assert any("Gorham & Mackey" in c.value for c in at.caption)


def test_experiment_browser_opens_the_tab_named_in_the_address(results_env):
    at = AppTest.from_file(str(ENTRY), default_timeout=TIMEOUT)
    at.query_params["tab"] = "Configuration"
    at.switch_page("views/experiments.py").run()
    no_exception(at)
    [result] = results_browser.list_results(results_env)
    config = results_browser.load_result(result.path).attrs["config_toml"]
    assert [c.value for c in at.code] == [config.strip()]  # st.code drops the last newline
    assert not at.get("image")


def test_experiment_browser_runs_a_quick_version_with_progress(tmp_path, monkeypatch):
    monkeypatch.setenv(RESULTS_ENV, str(tmp_path))
    at = open_page("views/experiments.py")
    assert "No result files" in at.info[0].value
    at.button(key="run_quick").click().run()
    no_exception(at)
    assert at.get("progress")[0].proto.value == 100
    assert at.success[0].value.startswith(f"wrote {tmp_path / 'stale-gaussian.nc'}")
    [result] = results_browser.list_results(tmp_path)
    assert result.configuration == "quick"
    assert metrics(at)["configuration"] == "quick"


def test_experiment_browser_shows_a_corrupt_file_as_an_error_and_loads_the_rest(
        default_results, tmp_path, monkeypatch):
    import shutil

    shutil.copy(default_results / "stale-gaussian.nc", tmp_path / "stale-gaussian.nc")
    damaged = bytearray((default_results / "stale-gaussian.nc").read_bytes())
    middle = len(damaged) // 2
    damaged[middle - 2048:middle + 2048] = bytes(4096)  # array data overwritten, same size
    (tmp_path / "damaged.nc").write_bytes(bytes(damaged))
    monkeypatch.setenv(RESULTS_ENV, str(tmp_path))
    at = open_page("views/experiments.py")
    no_exception(at)
    [error] = at.error
    assert "damaged.nc is not shown" in error.value
    assert metrics(at)["configuration"] == "default"  # the intact file is browsed


def test_experiment_browser_missing_directory_is_a_message(tmp_path, monkeypatch):
    monkeypatch.setenv(RESULTS_ENV, str(tmp_path / "nowhere"))
    at = open_page("views/experiments.py")
    no_exception(at)
    assert "No result files" in at.info[0].value


# ---------------------------------------------------------------------------- Lessons
def test_staleness_step_lesson_follows_its_control():
    at = open_page("lessons/staleness_step.py")
    no_exception(at)
    lesson = staleness_step.lesson()
    for tau in (4, 16):
        at.select_slider(key="staleness").set_value(tau).run()
        no_exception(at)
        h_star = float(lesson.optimal_step.sel(staleness=tau))
        shown = metrics(at)
        assert shown["h* at this τ"] == f"{h_star:.3g}"
        assert shown["h*/s² at this τ"] == f"{h_star / lesson.posterior_variance:.3g}"
        assert shown["slope of log h* against log τ (τ ≥ 4)"] == f"{lesson.slope:.3f}"
        mse, optimum = chart_rows(at)
        [marked] = mse[mse["curve"] == "h* of the fitted bound"]["x"]
        assert marked == pytest.approx(h_star)
        measured = mse[mse["curve"] == "measured MSE (95% interval)"]
        assert measured["value"].tolist() == pytest.approx(
            lesson.measurements["mse"].sel(staleness=tau).dropna("relative_step").values.tolist())
        assert optimum[optimum["curve"] == "chosen τ"]["x"].tolist() == [tau]


def test_local_updates_lesson_follows_its_control():
    at = open_page("lessons/local_updates.py")
    no_exception(at)
    for local in (10, 100):
        if local != 10:
            at.select_slider(key="local_updates").set_value(local).run()
            no_exception(at)
        lesson = local_updates.lesson(local)
        stationary = {m: f"{float(lesson.stationary.sel(estimator=m)):.4g}"
                      for m in local_updates.METHODS}
        assert metrics(at) == {
            "DSGLD: stationary E(θ − μ)²/s²": stationary["dsgld"],
            "FSGLD: stationary E(θ − μ)²/s²": stationary["fsgld"],
            "mixture of local posteriors: E(θ − μ)²/s²": f"{lesson.setting.mixture:.4g}"}
        table = at.dataframe[0].value
        expected = lesson.table()
        for column in expected[0]:
            assert table[column].tolist() == [row[column] for row in expected]
        assert table["oracle check"].tolist() == [v.verdict for v in lesson.verdicts]
        assert "violated" not in table["oracle check"].tolist()
        cloud, zoom, spread = chart_rows(at)  # the left column, then the right
        assert (cloud["curve"] == "FSGLD samples").sum() == lesson.samples.sel(
            estimator="fsgld")[..., 0].size
        assert len(zoom) < len(cloud)
        [measured] = spread[spread["curve"] == "DSGLD, this run (measured)"]["value"]
        assert measured == pytest.approx(float(lesson.measured.sel(estimator="dsgld")))
        assert any(f"{lesson.window // local} rounds per chain" in c.value for c in at.caption)


def test_speedup_lesson_follows_its_control():
    at = open_page("lessons/speedup.py")
    no_exception(at)
    for u in (0.05, 0.2):
        at.select_slider(key="server_update_time").set_value(u).run()
        no_exception(at)
        lesson = speedup.lesson(u)
        table = at.dataframe[0].value
        assert table["time speed-up"].tolist() == lesson.time_speedup.values.tolist()
        assert table["iteration speed-up"].tolist() == lesson.iteration_speedup.values.tolist()
        # three interactive charts; the speed-up chart carries the lesson's numbers
        charts = at.get("vega_lite_chart")
        assert len(charts) == 3 and not at.get("image")
        [data] = charts[2].proto.datasets  # the chart's rows, as Arrow
        frame = pyarrow.ipc.open_stream(data.data.data).read_all().to_pandas()
        time_rows = frame[frame["curve"] == "time speed-up"]["value"].tolist()
        assert time_rows == pytest.approx(lesson.time_speedup.values.tolist())
        assert (frame["curve"] == "server ceiling (1/u)").any()


def test_experiment_browser_puts_the_paper_beside_the_workbench(results_env, monkeypatch):
    """The Paper tab: stale-gaussian's [[paper]] entries beside its stored verdicts; an
    experiment that declares none gets one line saying so."""
    from workbench.explore import paper_view

    at = AppTest.from_file(str(ENTRY), default_timeout=TIMEOUT)
    at.query_params["tab"] = "Paper"
    at.switch_page("views/experiments.py").run()
    no_exception(at)
    dataset = results_browser.load_result(results_env / "stale-gaussian.nc")
    verdicts = results_browser.checks(dataset)
    entries = experiments.get("stale-gaussian").paper
    rows, named = at.dataframe[0].value, at.dataframe[1].value
    assert rows["section"].tolist() == [e.section for e in entries] == ["seed 001 §5.1"]
    assert rows["verdicts"].tolist() == [r["verdicts"] for r in
                                         paper_view.paper_rows(entries, verdicts, dataset)]
    assert named["check"].tolist() == [v.check for v in verdicts
                                       if v.check.startswith("invariance/mse/")]
    # negative control: the same result, its experiment declaring nothing of its paper
    monkeypatch.setattr(experiments.get("stale-gaussian"), "paper", ())
    at.run()
    no_exception(at)
    assert not at.dataframe
    assert at.info[0].value == paper_view.none_declared("stale-gaussian")
