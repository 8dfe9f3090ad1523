"""The researcher's own model in a study (issue 29): the consent to run it, refusals naming the key
and the line, the example's quick run, and a negative control whose deliberate bug the
``reference`` check must catch while the correct model holds."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from bounds.verdict import HOLDS, VIOLATED
from workbench.cli import main as cli
from workbench.run.runner import run_experiment
from workbench.studies.document import StudyError
from workbench.studies.experiment import StudyExperiment
from workbench.studies.study import load, loads

ROOT = Path(__file__).resolve().parents[2]
MY_MODEL = ROOT / "examples" / "my-model"
FIXTURES = Path(__file__).parent / "fixtures"

#: a small valid study of the example's probit model; the refusal tests break one line at a time
BASE = """\
[study]
name = "probit-control"

[model]
kind = "python"
python = "my_model.probit:ProbitRegression"

[model.arguments]
n_data = 200
n_test = 200
dim = 4
prior_scale = 0.1
prior_mean = 1.0
drop_prior = false

[system]
kind = "asynchronous"

[sampler]
kind = "sgld"
step_size = 1e-3

[run]
burn_in = 200
n_iterations = 2000
n_replicates = 64
n_evaluations = 200
n_checkpoints = 5
batch_size = 50
test_functions = ["theta[0]"]
reference_chains = 4
reference_draws = 1000
reference_warmup = 300

[[check]]
kind = "reference"
test_function = "theta[0]"
"""


@pytest.fixture
def importable(monkeypatch):
    """The example's module importable, as if the study file lay beside it."""
    monkeypatch.syspath_prepend(str(MY_MODEL))
    monkeypatch.syspath_prepend(str(FIXTURES))


def _line_of(text: str, needle: str) -> int:
    return next(i for i, line in enumerate(text.splitlines(), 1) if needle in line)


def _refused(text: str, needle: str, *words: str, code: bool = False) -> None:
    """``text`` is refused naming the line holding ``needle`` and ``words``; with ``code``, when
    its code is checked (after consent), else when it is read."""
    with pytest.raises(StudyError) as caught:
        experiment = StudyExperiment(loads(text, "<test>"))
        if code:
            experiment.check_code(experiment.configure(quick=True), seed=1)
    message = str(caught.value)
    assert f":{_line_of(text, needle)}:" in message, message
    for word in words:
        assert word in message, message


# ------------------------------------------------------------------------------ consent


def test_without_allow_code_the_example_exits_2_naming_the_object(capsys, tmp_path):
    status = cli.main(["check", str(MY_MODEL / "study.toml"), "--quick", "--out",
                       str(tmp_path)])
    err = capsys.readouterr().err.strip().splitlines()
    assert status == 2
    assert len(err) == 1, err
    assert "my_model.probit:ProbitRegression" in err[0] and "--allow-code" in err[0]
    assert not any(tmp_path.iterdir()), "nothing is written before consent"


def test_reading_and_showing_a_study_with_code_runs_none_of_it(tmp_path):
    text = BASE.replace("my_model.probit:ProbitRegression", "no_such_module:Model")
    path = tmp_path / "study.toml"
    path.write_text(text)
    experiment = StudyExperiment(load(path))
    experiment.configure(quick=True)  # neither imports nor calls the factory
    assert cli.main(["show", str(path)]) == 0


# ----------------------------------------------------------------------------- refusals


def test_an_unknown_model_kind_is_refused_naming_the_entries():
    _refused(BASE.replace('kind = "python"', 'kind = "probit"'), 'kind = "probit"',
             "[model] kind", "'gaussian-mean'", "'python'")


def test_an_oracle_check_on_a_model_without_one_is_refused_naming_both():
    text = BASE.replace('kind = "reference"\ntest_function = "theta[0]"', 'kind = "oracle"')
    _refused(text, 'kind = "oracle"', "[[check]] #1 kind",
             "an 'oracle' check needs a model with an exact oracle; python has none",
             "use 'reference'")


def test_a_system_the_model_does_not_run_on_is_refused():
    _refused(BASE.replace('kind = "asynchronous"', 'kind = "traveling-chains"'),
             'kind = "traveling-chains"', "[system] kind", "a python study runs on asynchronous")


def test_a_gaussian_only_key_in_a_python_study_is_refused():
    _refused(BASE.replace("[system]\n", "[system]\nstaleness = 3\n"), "staleness = 3",
             "[system] staleness", "means nothing in a study of")


def test_a_python_path_that_is_not_an_object_path_is_refused_when_read():
    _refused(BASE.replace("my_model.probit:ProbitRegression", "os.system('ls')"),
             "os.system", "[model] python", "module:attribute")


def test_a_python_reference_that_does_not_import_is_refused_after_consent(importable):
    _refused(BASE.replace("my_model.probit:ProbitRegression", "my_model.nowhere:Model"),
             "my_model.nowhere", "[model] python", "does not import",
             "ModuleNotFoundError", code=True)
    _refused(BASE.replace("ProbitRegression", "NoSuchClass"), "NoSuchClass",
             "[model] python", "AttributeError", code=True)


@pytest.mark.parametrize("factory, what", [
    ("broken_models:without_gradient", "has no potential_gradient"),
    ("broken_models:wrong_gradient_shape", "potential_gradient(θ) has shape (1, 3), expected "
                                           "(1, 4)"),
    ("broken_models:estimator_of_another_size", "minibatch_gradient() has n_data, dim = 100, 4"),
    ("broken_models:failing_constructor", "failed: RuntimeError: no data here"),
])
def test_an_object_that_breaks_the_protocol_is_refused_naming_it(importable, factory, what):
    text = BASE.replace("my_model.probit:ProbitRegression", factory)
    text = re.sub(r"\[model\.arguments\]\n(?:.+\n)+?\n", "", text)
    _refused(text, factory, "[model] python", factory, what, code=True)


def test_a_test_function_outside_the_whitelist_is_refused():
    _refused(BASE.replace('test_functions = ["theta[0]"]',
                          'test_functions = ["__import__(\'os\')"]'),
             "test_functions", "[run] test_functions", "__import__")
    _refused(BASE.replace('test_functions = ["theta[0]"]', 'test_functions = ["theta.T"]'),
             "test_functions", "[run] test_functions", "theta.T")


def test_a_test_function_reading_a_component_beyond_the_model_is_refused(importable):
    _refused(BASE.replace('"theta[0]"]', '"theta[7]"]'), "test_functions = ",
             "[run] test_functions", "index 7 is out of range for dimension 4", code=True)


def test_an_unknown_entry_point_is_refused_naming_the_group(importable):
    text = BASE.replace('python = "my_model.probit:ProbitRegression"', 'entry_point = "nobody"')
    _refused(text, 'entry_point = "nobody"', "[model] entry_point",
             "group sgmcmc_workbench.models", code=True)


def test_an_installed_entry_point_is_found_by_name_and_runs(importable, monkeypatch):
    """An entry point of the group (as ``pip install examples/my-model`` declares it) builds
    the model; the study names no module."""
    import importlib.metadata

    declared = importlib.metadata.EntryPoint("probit", "my_model.probit:ProbitRegression",
                                             "sgmcmc_workbench.models")
    real = importlib.metadata.entry_points

    def entry_points(**selection):
        if selection.get("group") == "sgmcmc_workbench.models":
            return importlib.metadata.EntryPoints([declared])
        return real(**selection)

    monkeypatch.setattr(importlib.metadata, "entry_points", entry_points)
    text = BASE.replace('python = "my_model.probit:ProbitRegression"', 'entry_point = "probit"')
    experiment = StudyExperiment(loads(text, "<test>"))
    config = experiment.configure(quick=True)
    experiment.check_code(config, seed=1)  # builds and probes it: no refusal
    from workbench.studies.user_code import code_of

    assert code_of(config) == ("the model factory of entry point 'probit' (group "
                               "sgmcmc_workbench.models)")


# ------------------------------------------------------------------- the negative control


@pytest.fixture(scope="module")
def control_runs():
    """The correct probit model and the same model whose minibatch gradient drops the prior
    term (a deliberate bug), one point each, same seed."""
    import sys

    sys.path[:0] = [str(MY_MODEL)]
    try:
        runs = {}
        for bug in ("false", "true"):
            experiment = StudyExperiment(loads(BASE.replace("drop_prior = false",
                                                            f"drop_prior = {bug}"), "<control>"))
            config = experiment.configure()
            experiment.check_code(config, seed=7)
            dataset = run_experiment(experiment, config, seed=7)
            runs[bug] = experiment.checks(dataset)
        return runs
    finally:
        sys.path.remove(str(MY_MODEL))


def test_the_correct_model_holds_its_reference_mean_check(control_runs):
    [verdict] = control_runs["false"]
    assert verdict.check == "reference/theta[0]"
    assert verdict.verdict == HOLDS, verdict.detail


def test_a_dropped_prior_term_is_violated_and_moves_the_mean_by_twice_the_margin(control_runs):
    """The bug: the sampler's minibatch gradient omits (θ − m₀)/σ₀² with σ₀ = 0.1 and m₀ = 1,
    so it samples the likelihood alone; the reference posterior (full potential, prior kept)
    does not move. A gradient merely scaled would leave the mode in place."""
    [verdict] = control_runs["true"]
    assert verdict.verdict == VIOLATED, verdict.detail
    assert abs(verdict.difference) >= 2 * verdict.margin, (verdict.difference, verdict.margin)
    assert np.isfinite(verdict.expected)
