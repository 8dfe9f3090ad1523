"""The ``speed-up`` check kind of a study on a model without an oracle (seed 001 §5.1, Figure 2;
Theorem 4, Corollary 5), on ``examples/logistic-speedup.toml``: what it judges, that it computes
no reference posterior, a negative control, its refusals, and that ``stale-blr-speedup`` judges
through the same function."""

from __future__ import annotations

from pathlib import Path

import pytest

from bounds.verdict import HOLDS, VIOLATED
from simulators.validation import InvalidParameter
from tests.studies.refusals import refused_when_read
from workbench.run.runner import run_experiment
from workbench.studies.document import StudyError
from workbench.studies.experiment import StudyExperiment
from workbench.studies.files import load, loads

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "logistic-speedup.toml"
TEXT = EXAMPLE.read_text()
#: the negative control: h ∝ 1/P at the same L for every P, so L·h, and with it the
#: variance's 1/(L·h), moves with P: the variance at the common L grows about P-fold and the
#: iteration speed-up S_P stays near 1 instead of P (slope 0 instead of 1)
SHRINKING_STEP = TEXT.replace("step_size = 6e-6", 'step_size = "6e-6 / n_workers"')
#: 96 replicates (the quick size otherwise) decide the slope of both runs (seed 5, measured:
#: the example's slope 1.00 holds; the control's −0.07 is violated, and so are its iteration
#: speed-up and Theorem 4's invariance)
REPLICATES = {"n_replicates": 96}


@pytest.fixture(scope="module")
def runs():
    out = {}
    for name, text in (("example", TEXT), ("shrinking step", SHRINKING_STEP)):
        experiment = StudyExperiment(loads(text, str(EXAMPLE)))
        config = experiment.configure(REPLICATES, quick=True)
        dataset = run_experiment(experiment, config, seed=5)
        out[name] = dataset, {v.check: v for v in experiment.checks(dataset)}
    return out


def test_the_example_reads_and_names_the_four_claims():
    study = load(EXAMPLE)
    [check] = study.checks
    assert check.kind == "speed-up"
    assert check.options == {"test_function": "log_loss", "over": "n_workers",
                             "speedup_margin": 0.1,
                             "slope_margin": 0.1, "bend_margin": 0.25,
                             "invariance_margin": 0.25}


def test_the_speed_up_holds_its_slope_and_computes_no_reference(runs):
    dataset, verdicts = runs["example"]
    assert sorted(verdicts) == ["speed-up/log_loss/iteration", "speed-up/log_loss/slope",
                                "speed-up/log_loss/time-bend",
                                "theorem4/variance-at-L/log_loss"]
    assert verdicts["speed-up/log_loss/slope"].verdict == HOLDS, \
        verdicts["speed-up/log_loss/slope"].detail
    assert all(v.verdict != VIOLATED for v in verdicts.values()), \
        [v.detail for v in verdicts.values() if v.verdict == VIOLATED]
    assert not any(name.startswith("reference_") for name in dataset.data_vars)
    # P* = (μ + 2δ + u)/u of the example's latencies, as the time-bend check states it
    assert "P* = 5" in verdicts["speed-up/log_loss/time-bend"].detail


def test_the_speed_up_figure_draws_the_variance_per_worker_count(runs, tmp_path):
    dataset, _ = runs["example"]
    experiment = StudyExperiment(loads(TEXT, str(EXAMPLE)))
    paths = experiment.figures(dataset, tmp_path)
    assert [p.name for p in paths] == ["logistic-speedup-speed-up.png"]
    assert paths[0].stat().st_size > 10_000


def test_a_step_shrinking_with_p_is_violated(runs):
    _, verdicts = runs["shrinking step"]
    for name in ("speed-up/log_loss/iteration", "speed-up/log_loss/slope",
                 "theorem4/variance-at-L/log_loss"):
        assert verdicts[name].verdict == VIOLATED, (name, verdicts[name].detail)
    assert verdicts["speed-up/log_loss/slope"].observed < 0.5


def test_a_speed_up_check_without_a_worker_sweep_is_refused_naming_the_line():
    text = TEXT.replace("n_workers = [1, 2, 4, 6, 9]", "").replace(
        "[sweep]", '[sweep]\nstep_size = [6e-6, 1e-5]')
    refused_when_read(text, 'kind = "speed-up"', "sweep n_workers")


def test_a_margin_out_of_range_is_refused_naming_the_key():
    refused_when_read(TEXT.replace('kind = "speed-up"', 'kind = "speed-up"\nslope_margin = -1'),
             "slope_margin", "slope_margin")


def test_reference_settings_without_a_check_that_needs_them_are_refused():
    """No check of the example is judged against a reference posterior, so its points compute
    none and its settings are not parameters of the study: written, they are refused."""
    assert not any(p.name.startswith("reference_") for p in load(EXAMPLE).parameters)
    refused_when_read(TEXT.replace("batch_size = 50", "batch_size = 50\nreference_draws = 500"),
             "reference_draws", "without a check judged against the reference posterior")


def test_a_sampler_factory_beside_a_built_in_sampler_is_refused():
    """The example's sampler is SGLD: the keys naming a sampler of one's own are not its
    parameters, and writing one is refused rather than silently ignored."""
    assert not any(p.name.startswith("sampler_") for p in load(EXAMPLE).parameters)
    refused_when_read(TEXT.replace('kind = "sgld"', 'kind = "sgld"\npython = "mine:Sampler"'),
             'python = "mine:Sampler"', 'unless [sampler] kind = "python"')


def test_a_speed_up_check_on_the_gaussian_mean_is_refused_naming_both_kinds():
    text = ('[study]\nname = "g"\n[model]\nkind = "gaussian-mean"\n[system]\n'
            'kind = "asynchronous"\n[sweep]\nn_workers = [1, 2]\n[[check]]\nkind = "speed-up"\n')
    with pytest.raises(StudyError) as caught:
        loads(text, "<test>")
    message = str(caught.value)
    assert ("'speed-up' is a check of logistic-regression / network / language-model / python "
            "studies, not of asynchronous / gaussian-mean") in message, message


def test_a_worker_grid_without_one_worker_is_refused_when_read():
    refused_when_read(TEXT.replace("n_workers = [1, 2, 4, 6, 9]", "n_workers = [2, 4, 6, 9]"),
             'kind = "speed-up"', "relative to one worker", "must include 1")


def test_a_worker_grid_set_without_one_worker_is_refused_when_configured():
    experiment = StudyExperiment(loads(TEXT, str(EXAMPLE)))
    with pytest.raises(InvalidParameter, match="n_workers .* must include 1: the study's "
                                               "speed-up check"):
        experiment.configure({"n_workers": [2, 4]}, quick=True)
    assert experiment.configure({"n_workers": [1, 2, 4]}, quick=True)["n_workers"] == [1, 2, 4]


@pytest.mark.parametrize("overrides, words", [
    ({"n_workers": [1, 4]}, "n_workers .* needs at least two counts besides 1: the study's "
                            "speed-up check fits its slope through three or more"),
    ({"n_replicates": 9}, "n_replicates = 9 .* at least 10: the study's speed-up check divides "
                          "variances over replicates"),
])
def test_a_grid_or_replicates_the_speed_up_check_cannot_use_are_refused_when_configured(
        overrides, words):
    """Two worker counts leave the fitted slope undefined (``slope_check`` needs three) and
    fewer than 10 replicates leave the variance the speed-ups divide too rough: any study with
    a speed-up check refuses them, naming the field."""
    experiment = StudyExperiment(loads(TEXT, str(EXAMPLE)))
    with pytest.raises(InvalidParameter, match=words):
        experiment.configure(overrides, quick=True)
    assert experiment.configure({"n_replicates": 10}, quick=True)["n_replicates"] == 10


def test_a_worker_grid_without_one_worker_is_refused_when_judged(runs):
    dataset, _ = runs["example"]
    experiment = StudyExperiment(loads(TEXT, str(EXAMPLE)))
    with pytest.raises(ValueError, match="must include 1"):
        experiment.checks(dataset.sel(n_workers=[2, 4, 6, 9]))
