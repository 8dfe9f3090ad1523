"""A study's ``[[design]]`` tables (:mod:`workbench.studies.designs`): what they declare, how
they run beside the sweep, and each malformed key refused naming the key and its line.

Bit-for-bit agreement with the plug-in they replaced is ``test_studies.py``'s fixture test
(``stale_gaussian_bound_designs.json``); the negative controls of their checks are in
``tests/workbench/test_bound_checks.py``."""

from __future__ import annotations

import numpy as np
import pytest

from tests.studies.refusals import line_of
from tests.studies.test_studies import BASE, SHARDED
from workbench.run.runner import run_experiment
from workbench.studies.document import StudyError
from workbench.studies.experiment import StudyExperiment
from workbench.studies.files import loads

DESIGNED = BASE + """
[[design]]
name = "rate"
sweep = { staleness = [2], iterations = [100, 200, 400] }

[[design.check]]
kind = "rate"
bound = "mine"

[[design]]
name = "grid"
sweep = { staleness = [1, 2], relative_step = [0.05, 0.1] }
iterations = [50, 100]
step_size = "relative_step * posterior_variance"
paired = ["staleness"]
split = "extrapolate"

[[design.check]]
kind = "envelope"
bound = "mine"

[[design.check]]
kind = "invariance"
bound = "mine"
over = "staleness"
"""
GRID_SWEEP = "sweep = { staleness = [1, 2], relative_step = [0.05, 0.1] }"


def test_designs_are_parameters_named_as_their_dims():
    study = loads(DESIGNED, "designed.toml")
    assert [d.name for d in study.designs] == ["rate", "grid"]
    names = [p.name for p in study.parameters]
    assert names[-8:] == ["designs", "bootstrap_resamples", "rate_staleness", "rate_iterations",
                          "grid_staleness", "grid_relative_step", "grid_iterations",
                          "grid_split"]
    rate, grid = study.designs
    assert rate.points({"rate_staleness": [2], "rate_iterations": [100, 200]}) == [
        {"design": "rate", "staleness": 2, "n_iterations": 100},
        {"design": "rate", "staleness": 2, "n_iterations": 200}]
    # the runs of one step share their random numbers across staleness
    assert grid.streams({"design": "grid", "staleness": 2, "relative_step": 0.1}) == {
        "design": "grid", "relative_step": 0.1}
    assert rate.streams({"design": "rate", "staleness": 2, "n_iterations": 100}) is None


def test_designs_run_beside_the_sweep_and_are_judged():
    experiment = StudyExperiment(loads(DESIGNED, "designed.toml"))
    config = experiment.configure({"n_replicates": 20})
    dataset = run_experiment(experiment, config, seed=3)
    assert dataset["rate_estimate"].dims == ("rate_staleness", "rate_iterations",
                                             "test_function", "replicate", "component")
    assert dataset["grid_estimate"].dims == ("grid_staleness", "grid_relative_step",
                                             "test_function", "grid_iterations", "replicate",
                                             "component")
    s2 = 1 / (1 + 200)  # the posterior variance: prior N(0, 1), 200 data of unit variance
    np.testing.assert_allclose(dataset["grid_step_size"].sel(grid_staleness=1).values,
                               np.array([0.05, 0.1]) * s2, rtol=1e-12)
    checks = [v.check for v in experiment.checks(dataset)]
    designed = [c for c in checks if not c.startswith(("oracle/theta", "oracle/divergence/st"))]
    assert designed == [
        *[c for c in designed if c.startswith("oracle/divergence/")],
        "rate/mse/theta/staleness=2", "rate/mse/theta_squared/staleness=2",
        "envelope/mine/theta", "envelope/mine/theta_squared",
        "invariance/variance-vs-staleness/theta/relative_step=0.05",
        "invariance/variance-vs-staleness/theta_squared/relative_step=0.05",
        "invariance/variance-vs-staleness/theta/relative_step=0.1",
        "invariance/variance-vs-staleness/theta_squared/relative_step=0.1"]
    alone = experiment.configure({"n_replicates": 20, "designs": False})
    assert experiment.points(alone) == experiment.points(config)[:2]


def _broken(old: str, new: str) -> str:
    assert old in DESIGNED
    return DESIGNED.replace(old, new, 1)


REFUSALS = [
    ('paired = ["staleness"]', 'paired = ["staleness"]\nshared = 1', "[[design]] #2 shared",
     "shared = 1", "unknown key"),
    ('name = "grid"', 'name = "Grid-1"', "[[design]] #2 name", 'name = "Grid-1"',
     "lower-case"),
    ('name = "grid"', 'name = "rate"  # twice', "[[design]] #2 name", "# twice",
     "declared twice"),
    (GRID_SWEEP, GRID_SWEEP.replace(" }", ", foo = [1] }"), "[[design]] #2 sweep.foo",
     "foo = [1]", "neither a value of the study"),
    ("sweep = { staleness = [2], iterations", "sweep = { iterations", "[[design]] #1 sweep",
     "sweep = { iterations", "must give staleness"),
    ("iterations = [100, 200, 400] }", "n_iterations = [100, 200, 400] }",
     "[[design]] #1 sweep.n_iterations", "n_iterations = [100", "write the sample counts"),
    ("iterations = [50, 100]", "iterations = [50, 0]", "[[design]] #2 iterations",
     "iterations = [50, 0]", "grid_iterations[1]"),
    ('step_size = "relative_step * posterior_variance"', 'step_size = "relative_step * s2"',
     "[[design]] #2 step_size", "relative_step * s2", "unknown name s2"),
    ('paired = ["staleness"]', 'paired = ["n_data"]', "[[design]] #2 paired",
     'paired = ["n_data"]', "sweep keys"),
    ('split = "extrapolate"', 'split = "halves"', "[[design]] #2 split", 'split = "halves"',
     "checkerboard"),
    ('kind = "invariance"', 'kind = "slope"', "[[design]] #2 check.1.kind", 'kind = "slope"',
     "rate, envelope, invariance"),
    ('over = "staleness"', 'over = "iterations"', "[[design]] #2 check.1.over",
     'over = "iterations"', "sweep keys"),
    ('bound = "mine"\n', 'bound = "theirs"\n', "[[design]] #1 check.0.bound",
     'bound = "theirs"', "names no [[bound]]"),
    ('bound = "mine"\n', 'bound = "mine"\nover = "staleness"\n', "[[design]] #1 check.0.over",
     'over = "staleness"', "unknown key"),
    # values of the wrong type are refused in words, never a TypeError
    ('kind = "invariance"', "kind = []", "[[design]] #2 check.1.kind", "kind = []",
     "must be one of"),
    ('bound = "mine"\n', "bound = [1]\n", "[[design]] #1 check.0.bound", "bound = [1]",
     "names no [[bound]]"),
    ('over = "staleness"', "over = [1]", "[[design]] #2 check.1.over", "over = [1]",
     "sweep keys"),
]


@pytest.mark.parametrize("old, new, key, fragment, why", REFUSALS,
                         ids=[r[2] + ":" + r[1][-16:] for r in REFUSALS])
def test_a_malformed_design_is_refused_naming_the_key_and_its_line(old, new, key, fragment,
                                                                    why):
    text = _broken(old, new)
    with pytest.raises(StudyError) as caught:
        loads(text, "broken.toml")
    error = caught.value
    assert error.line == line_of(text, fragment), str(error)
    assert f"broken.toml:{error.line}" in str(error) and key in str(error) and why in str(error)


def test_a_rate_check_needs_the_sample_counts_swept():
    text = _broken('kind = "envelope"', 'kind = "rate"  # on read-out L')
    with pytest.raises(StudyError, match=r"\[\[design\]\] #2 check.0.kind: a rate check "
                                         "compares runs of different L") as caught:
        loads(text, "broken.toml")
    assert caught.value.line == line_of(text, "# on read-out L")


def test_a_design_is_refused_in_a_study_of_other_points():
    text = SHARDED + '\n[[design]]\nname = "more"\nsweep = { local_updates = [1] }\n'
    with pytest.raises(StudyError, match="a design runs the points of a Gaussian-mean study"):
        loads(text, "broken.toml")
