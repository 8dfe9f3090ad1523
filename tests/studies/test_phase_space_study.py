"""A study of SGHMC's phase space (``[run] phase_space``): the shipped ``integrator-order``
file read whole, its bounds deferred when built in, and each new key refused where it means
nothing or is out of range, naming its line (``workbench/studies/schema.py``,
``check_kinds.py``)."""

from __future__ import annotations

import pytest
import xarray as xr

from simulators.validation import InvalidParameter
from tests.studies.blocks import split_point
from tests.studies.refusals import refused_when_read
from workbench.run.runner import run_experiment
from workbench.studies import library
from workbench.studies.experiment import StudyExperiment
from workbench.studies.files import built_in, load, loads
from workbench.studies.study import DeferredBounds

SHIPPED = library.path("integrator-order").read_text()
# the figure line names the workbench's own code, which only a shipped file may do
BASE = SHIPPED.replace('figure = "integrator_order:figure_order"', "")
SEED = 5
EULER_RATE = 'where = { integrator = "euler" }\nname = "rate/{integrator}/{test_function}"'


def _broken(old: str, new: str, base: str = BASE) -> str:
    assert old in base, old
    return base.replace(old, new, 1)


def test_the_shipped_file_reads_whole_and_its_built_in_bounds_wait_for_a_judgement():
    whole = load(library.path("integrator-order"))
    assert {name: spec.bound.name for name, spec in whole.bounds.items()} == {
        "k1": "chen2015-mse-fixed-k1", "k2": "chen2015-mse-fixed-k2"}
    deferred = built_in("integrator-order")
    assert isinstance(deferred.bounds, DeferredBounds) and list(deferred.bounds) == ["k1", "k2"]
    assert deferred.bounds["k2"].bound.name == "chen2015-mse-fixed-k2"
    assert [c.options for c in deferred.checks] == [c.options for c in whole.checks]


def test_the_study_sweeps_the_integrator_and_keeps_the_optimal_step_for_the_point():
    experiment = StudyExperiment(loads(BASE))
    config = experiment.configure(quick=True)
    points = experiment.points(config)
    assert points[:2] == [{"integrator": "euler", "iterations": 64},
                          {"integrator": "euler", "iterations": 256}]
    resolved = experiment.resolve(config, points[-1])
    assert (resolved["integrator"], resolved["n_iterations"], resolved["step_size"],
            resolved["batch_size"], resolved["replicate_block"]) == (
        "splitting", 4096, "optimal", 1, 3000)
    assert experiment.replicate_blocks(config, points[0]) == 1


def test_a_point_split_into_its_seeding_blocks_is_the_whole_point():
    """Issue 35, every point splittable: with ``replicate_block`` below the replicates, a
    phase-space point runs as blocks that separate tasks finish into exactly the unsplit point
    (the shipped study keeps one block, so its numbers stay those of one). Negative control:
    another seed's blocks finish into another point."""
    experiment = StudyExperiment(loads(BASE))
    config = experiment.configure({"n_replicates": 300, "replicate_block": "100"}, quick=True)
    point = experiment.points(config)[-1]  # the splitting integrator at its optimal step
    assert experiment.replicate_blocks(config, point) == 3
    whole = experiment.run_point(config, point, SEED)
    xr.testing.assert_identical(split_point(experiment, config, point, SEED, ([0], [1, 2])),
                                whole)
    assert not split_point(experiment, config, point, SEED + 1, ([0, 1, 2],)).equals(whole)


@pytest.mark.parametrize(("old", "new", "needle", "words"), [
    ('kind = "sghmc" ', 'kind = "sghmc-euler" ', 'integrator = ["euler", "splitting"]',
     ("[sweep] integrator", '"sghmc"')),
    ('integrator = "euler"', 'integrator = "leapfrog"', 'integrator = "leapfrog"',
     ("[sampler] integrator", "splitting")),
    ("phase_space = true ", "phase_space = false ", 'step_size = "optimal"',
     ("[sampler] step_size", "phase_space")),
    ('kind = "sghmc" ', 'kind = "sgld" ', 'kind = "sgld"', ("[sampler] kind", "momentum")),
    ("staleness = 0 ", "staleness = 2 ", "staleness = 2", ("[system] staleness", "fresh")),
    ("dim = 1", "dim = 2", "dim = 2", ("[model] dim", "must be 1")),
    ("phase_space = true ", "phase_space = true\nn_checkpoints = 10", "n_checkpoints = 10",
     ("[run] n_checkpoints", "phase_space")),
    ('integrator = ["euler", "splitting"]', 'integrator = ["euler", "splitting"]\n'
     "phase_space = [true, false]", "phase_space = [true", ("[sweep] phase_space",)),
    ('label = "{integrator},L={iterations}"', 'label = "{integrator},h={step}"',
     'label = "{integrator},h={step}"', ("[[check]] #1 label", "{step}")),
    ("bootstrap_resamples = 2000\n", 'bootstrap_resamples = 2000\n\n[[check]]\n'
     'kind = "invariance"\nover = "iterations"', 'kind = "invariance"',
     ("[[check]] #3 kind", "oracle / rate")),
    ('test_function = "momentum_squared"\nwhere', 'test_function = "theta"\nwhere',
     'test_function = "theta"', ("[[check]] #2 test_function", "momentum_squared")),
    (EULER_RATE, 'where = { integrator = "leapfrog" }', 'where = { integrator = "leapfrog" }',
     ("[[check]] #2 where", "leapfrog")),
    (EULER_RATE, "where = { iterations = 64 }", "where = { iterations = 64 }",
     ("[[check]] #2 where", "'iterations'")),
    ("paired = true ", 'paired = "yes" ', 'paired = "yes"', ("[[check]] #2 paired",)),
    ("rate_margin = 0.05 ", "rate_margin = -0.05 ", "rate_margin = -0.05",
     ("[[check]] #2 rate_margin",)),
    (EULER_RATE, 'where = { integrator = "euler" }\nname = "rate/{order}"',
     'name = "rate/{order}"', ("[[check]] #2 name", "{order}")),
])
def test_a_phase_space_key_is_refused_naming_its_line(old, new, needle, words):
    refused_when_read(_broken(old, new), needle, *words)


def test_a_phase_space_study_draws_a_default_figure_per_check_kind(tmp_path):
    """The shipped study without its plug-in: the oracle's diagonal and the rates' panels."""
    experiment = StudyExperiment(loads(BASE))
    dataset = run_experiment(experiment, experiment.configure(
        {"iterations": [16, 64, 256], "n_replicates": 50}), seed=3)
    paths = experiment.figures(dataset, tmp_path)
    assert [p.name for p in paths] == ["integrator-order-oracle.png", "integrator-order-rate.png"]
    assert all(p.stat().st_size > 10_000 for p in paths)


def test_an_integrator_means_nothing_unless_the_sampler_is_sghmc():
    text = BASE.split("\n# One family")[0]  # without the checks, which name the sweep dim
    text = _broken('integrator = ["euler", "splitting"]\n', "",
                   _broken('kind = "sghmc" ', 'kind = "sghmc-euler" ', text))
    refused_when_read(text, 'integrator = "euler"', "[sampler] integrator", '"sghmc"')


def test_largest_step_means_nothing_without_the_optimal_step():
    text = _broken('step_size = "optimal" ', "step_size = 0.1 ")
    refused_when_read(text, "largest_step = 1.5", "[sampler] largest_step", '"optimal"')


def test_a_phase_space_function_is_refused_in_another_gaussian_study():
    text = library.path("stale-gaussian").read_text().replace(
        'figure = "stale_gaussian.figures:figures"', "").replace(
        'kind = "invariance"', 'kind = "invariance"\ntest_function = "momentum_squared"', 1)
    refused_when_read(text, 'test_function = "momentum_squared"',
                      "[[check]] #2 test_function", "non-phase_space")


@pytest.mark.parametrize(("overrides", "field"), [
    ({"batch_size": 1, "n_data": 3}, "batch_size"),
    ({"replacement": True}, "batch_size"),
    ({"iterations": [0, 64]}, "n_iterations"),
    ({"largest_step": -1.0}, "largest_step"),
])
def test_a_point_without_full_gradients_is_refused_before_anything_runs(overrides, field):
    with pytest.raises(InvalidParameter) as error:
        StudyExperiment(loads(BASE)).configure(overrides)
    assert error.value.field == field
