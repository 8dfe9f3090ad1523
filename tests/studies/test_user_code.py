"""The researcher's own model and sampler in a study (issue 29): the consent to run them,
refusals naming the key and the line, the example's quick run, a sampler of the user's that
reduces to the built-in SGLD bit for bit, and negative controls whose deliberate bugs (a dropped
prior term, noise at the wrong temperature) the ``reference`` check must catch while the correct
code holds."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from bounds.verdict import HOLDS, VIOLATED
from tests.studies.refusals import assert_names
from workbench.cli import main as cli
from workbench.run.runner import run_experiment
from workbench.studies.document import StudyError
from workbench.studies.experiment import StudyExperiment
from workbench.studies.files import load, loads

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
reference_draws = 4000
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


def _refused(text: str, needle: str, *words: str, code: bool = False) -> None:
    """``text`` is refused naming the line holding ``needle`` and ``words``; with ``code``, when
    its code is checked (after consent), else when it is read."""
    with pytest.raises(StudyError) as caught:
        experiment = StudyExperiment(loads(text, "<test>"))
        if code:
            experiment.check_code(experiment.configure(quick=True), seed=1)
    assert_names(str(caught.value), text, needle, *words)


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


# ------------------------------------------------------------------- the user's sampler

MY_SAMPLER = 'kind = "python"\npython = "user_samplers:MyLangevin"\nstep_size = 1e-3'


def _with_sampler(text: str, sampler: str = MY_SAMPLER) -> str:
    return text.replace('kind = "sgld"\nstep_size = 1e-3', sampler)


def test_a_sampler_of_the_users_needs_consent_naming_it(capsys, tmp_path):
    path = tmp_path / "study.toml"
    path.write_text(_with_sampler(BASE))
    status = cli.main(["check", str(path), "--quick", "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err.strip().splitlines()
    assert status == 2 and len(err) == 1, err
    assert "the sampler factory user_samplers:MyLangevin" in err[0], err
    assert "the model factory my_model.probit:ProbitRegression" in err[0], err


def test_a_sampler_of_the_users_on_the_gaussian_mean_is_refused_naming_both():
    text = """[study]\nname = "g"\n[model]\nkind = "gaussian-mean"\n[sampler]\n""" + MY_SAMPLER
    _refused(text, 'kind = "python"', "[sampler] kind", "gaussian-mean runs sgld",
             "exact oracle covers",
             "model without an oracle: logistic-regression / network / language-model / python")


@pytest.mark.parametrize("factory, what", [
    ("user_samplers:without_step", "the sampler has no step"),
    ("user_samplers:flat_position", "position(step(state, ∇ = 0, ξ = 0)) has shape (4,), "
                                    "expected (1, 1, 4)"),
    ("user_samplers:Nowhere", "does not import: AttributeError"),
])
def test_a_sampler_that_breaks_the_protocol_is_refused_naming_it(importable, factory, what):
    text = _with_sampler(BASE, MY_SAMPLER.replace("user_samplers:MyLangevin", factory))
    _refused(text, factory, "[sampler] python", factory, what, code=True)


def test_the_users_sgld_reduces_to_the_built_in_one_bit_for_bit(importable):
    """The same schedule, minibatches and noise streams (keyed by the point, not the
    sampler): the user's SGLD, stepped one update at a time, gives the built-in SGLD's
    estimates exactly."""
    estimates = []
    for text in (BASE, _with_sampler(BASE)):
        experiment = StudyExperiment(loads(text.replace("n_replicates = 64",
                                                        "n_replicates = 8"), "<reduce>"))
        config = experiment.configure()
        experiment.check_code(config, seed=3)
        estimates.append(run_experiment(experiment, config, seed=3)["estimate"].values)
    np.testing.assert_array_equal(estimates[0], estimates[1])
    assert np.isfinite(estimates[0]).all()


@pytest.fixture(scope="module")
def temperature_runs():
    """The user's SGLD at temperature 1 and at 1/2 (a deliberate bug: noise √h·ξ where SGLD
    injects √(2h)·ξ), judged on E[θ₀²] against the reference posterior; 50 data points and a
    longer chain, so that the posterior's spread is large against the margin."""
    import sys

    sys.path[:0] = [str(MY_MODEL), str(FIXTURES)]
    try:
        runs = {}
        for temperature in (1.0, 0.5):
            text = _with_sampler(BASE, MY_SAMPLER + f"\n[sampler.arguments]\n"
                                 f"temperature = {temperature}")
            for old, new in (('"theta[0]"', '"theta[0]**2"'), ("n_data = 200", "n_data = 50"),
                             ("prior_scale = 0.1", "prior_scale = 0.5"),
                             ("n_iterations = 2000", "n_iterations = 4000")):
                text = text.replace(old, new)
            experiment = StudyExperiment(loads(text, "<temperature>"))
            config = experiment.configure()
            experiment.check_code(config, seed=7)
            runs[temperature] = experiment.checks(run_experiment(experiment, config, seed=7))
        return runs
    finally:
        sys.path.remove(str(MY_MODEL))
        sys.path.remove(str(FIXTURES))


def test_the_users_sampler_holds_and_its_wrong_temperature_is_violated(temperature_runs):
    """Halving the injected noise's variance samples the posterior at temperature 1/2: the
    variance of θ₀ about its mean halves, so E[θ₀²] falls by about half the posterior variance
    (here about 0.05, nine times the margin; seed 7, measured)."""
    [right] = temperature_runs[1.0]
    [wrong] = temperature_runs[0.5]
    assert right.check == "reference/theta[0]**2"
    assert right.verdict == HOLDS, right.detail
    assert wrong.verdict == VIOLATED, wrong.detail
    assert wrong.difference < -2 * wrong.margin, (wrong.difference, wrong.margin)


# ------------------------------------------------------------ the user's test functions

def _with_functions(*paths: str) -> str:
    listed = ", ".join(f'"{p}"' for p in paths)
    return BASE.replace('test_functions = ["theta[0]"]',
                        f'test_functions = ["theta[0]", "theta[0]**2"]\n'
                        f'python_test_functions = [{listed}]')


def test_a_test_function_of_the_users_is_scored_as_its_expression_twin(importable):
    """θ₀² as the user's function and as an expression: the same values, draw by draw, so the
    same estimates; P(θ₀ > 1) is scored beside them under its attribute's name."""
    text = _with_functions("user_samplers:first_squared", "user_samplers:tail_indicator")
    text = text.replace("n_replicates = 64", "n_replicates = 8")
    experiment = StudyExperiment(loads(text, "<functions>"))
    config = experiment.configure()
    from workbench.studies.user_code import code_of

    assert "the test function user_samplers:tail_indicator" in code_of(config)
    experiment.check_code(config, seed=5)
    estimate = run_experiment(experiment, config, seed=5)["estimate"]
    names = list(estimate["test_function"].values)
    assert names[-2:] == ["first_squared", "tail_indicator"], names
    np.testing.assert_array_equal(estimate.sel(test_function="first_squared").values,
                                  estimate.sel(test_function="theta[0]**2").values)
    tail = estimate.sel(test_function="tail_indicator").values
    assert np.all((tail >= 0) & (tail <= 1)) and np.ptp(tail) > 0


@pytest.mark.parametrize("path, what", [
    ("user_samplers:scalar_valued", "has shape (1,), expected (1, 1)"),
    ("user_samplers:nowhere", "does not import: AttributeError"),
    ("user_samplers:raising", "the probe failed: ValueError: no θ here"),
])
def test_a_test_function_that_breaks_the_protocol_is_refused_naming_it(importable, path, what):
    _refused(_with_functions(path), "python_test_functions", "[run] python_test_functions",
             path, what, code=True)


def test_a_test_function_path_that_is_not_an_object_path_is_refused_when_read():
    _refused(_with_functions("not a path"), "python_test_functions",
             "python_test_functions[0]", "module:attribute")


# ------------------------------------------------------------------- the negative control


@pytest.fixture(scope="module")
def control_runs():
    """The correct probit model and the same model whose minibatch gradient drops the prior
    term (a deliberate bug), one point each, same seed. The reference is 4 × 4,000 HMC draws:
    with 4 × 1,000 its own error (0.0016 against a margin of 0.0039) decided the correct model's
    check on one machine and left it inconclusive on another, whose BLAS and SIMD functions
    change the reference chains' last bits."""
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
