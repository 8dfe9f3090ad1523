"""Studies of parts (``[study] parts``, :mod:`workbench.studies.parts`) and the Gaussian mean
with S servers pooled (``n_servers`` on its asynchronous system,
:mod:`workbench.studies.pooled_point`): a small study of parts runs, names its keys, dims and
verdicts by part, pickles through its text and draws each part's default figures; refusals
name the key and line as written; negative controls for the pooled checks. multi-server's
datasets and verdicts against the removed module are in ``test_studies.py``."""

from __future__ import annotations

import pickle

import pytest

from bounds.verdict import VIOLATED
from simulators.validation import InvalidParameter
from tests.studies.refusals import refused_when_read
from workbench.run.runner import run_experiment
from workbench.studies import library
from workbench.studies.experiment import StudyExperiment
from workbench.studies.files import loads
from workbench.studies.parts_experiment import PartsExperiment, experiment_of
from workbench.studies.point_kinds import point_kind

#: a small study of two parts on the shared dim servers (multi-server's form, in seconds)
PARTS = """\
[study]
name = "tiny-parts"
parts = ["mean", "blr"]
symbols = { servers = "S" }

[constants]
servers = 1

[sweep]
servers = [1, 2, 4]

[system]
kind = "asynchronous"
n_workers = 2
n_servers = "servers"

[run]
n_checkpoints = 4

[part.mean.model]
kind = "gaussian-mean"
n_data = 200

[part.mean.sampler]
kind = "sgld"
step_size = 2e-4

[part.mean.run]
n_iterations = 200
n_replicates = 100
initial_position = 3.0

[[part.mean.check]]
kind = "oracle"

[[part.mean.check]]
kind = "slope"
expected = -1.0

[part.blr.model]
kind = "logistic-regression"
n_train = 300
n_test = 100
n_test_points = 40

[part.blr.sampler]
kind = "sgld"
step_size = 5e-5

[part.blr.run]
burn_in = 0
n_iterations = 100
n_replicates = 4
n_evaluations = 20

[[part.blr.check]]
kind = "invariance"
test_function = "log_loss"
"""


@pytest.fixture(scope="module")
def tiny():
    experiment = experiment_of(loads(PARTS, "tiny-parts.toml"))
    return experiment, run_experiment(experiment, experiment.configure(), seed=3)


def test_a_study_of_parts_names_its_keys_dims_and_verdicts_by_part(tiny, tmp_path):
    experiment, dataset = tiny
    assert isinstance(experiment, PartsExperiment)
    names = {p.name for p in experiment.parameters}
    assert {"servers", "n_workers", "n_checkpoints", "mean_n_iterations", "blr_n_iterations",
            "blr_n_train"} <= names and "n_iterations" not in names
    assert experiment.points(experiment.configure())[3] == {"part": "blr", "servers": 1}
    assert dict(dataset["estimate"].sizes) == {"servers": 3, "checkpoint": 4, "replicate": 100}
    assert dict(dataset["blr_mean"].sizes) == {"blr_servers": 3, "blr_test_function": 2,
                                               "blr_checkpoint": 4}
    checks = [v.check for v in experiment.checks(dataset)]
    assert checks == ["mean/oracle/variance/S=1", "mean/oracle/bias/S=1",
                      "mean/oracle/variance/S=2", "mean/oracle/bias/S=2",
                      "mean/oracle/variance/S=4", "mean/oracle/bias/S=4",
                      "mean/slope/variance-vs-servers",
                      "blr/invariance/mean-vs-servers/log_loss"]
    assert [p.name for p in experiment.figures(dataset, tmp_path)] == [
        "tiny-parts-mean-oracle.png", "tiny-parts-mean-slope.png",
        "tiny-parts-blr-invariance.png"]
    again = pickle.loads(pickle.dumps(experiment))
    assert isinstance(again, PartsExperiment)
    assert again.points(again.configure()) == experiment.points(experiment.configure())


def test_a_part_refuses_a_value_naming_the_studys_key():
    experiment = experiment_of(loads(PARTS, "tiny-parts.toml"))
    with pytest.raises(InvalidParameter) as caught:
        experiment.configure({"blr_n_iterations": 10})  # fewer than n_evaluations
    assert caught.value.field == "blr_n_iterations"
    with pytest.raises(InvalidParameter) as caught:
        experiment.configure({"mean_n_iterations": 2})  # fewer than n_checkpoints
    assert caught.value.field == "n_checkpoints"  # shared by both parts


def test_the_pooled_checks_catch_a_wrong_claim(tiny):
    """Negative controls: the variance of S pooled servers does not stay flat in S, and the
    Gaussian mean's bias does not fall like 1/S."""
    experiment, dataset = tiny
    wrong = PARTS.replace("expected = -1.0", "expected = 0.0").replace(
        '[[part.mean.check]]\nkind = "oracle"\n',
        '[[part.mean.check]]\nkind = "invariance"\ninvariance_margin = 0.02\n')
    verdicts = {v.check: v for v in experiment_of(loads(wrong, "wrong.toml")).checks(
        dataset.assign_attrs(study_toml=wrong))}
    assert verdicts["mean/slope/variance-vs-servers"].verdict == VIOLATED
    right = {v.check: v for v in experiment.checks(dataset)}
    assert right["mean/slope/variance-vs-servers"].verdict != VIOLATED
    assert verdicts["mean/invariance/bias-vs-servers"].observed == pytest.approx(
        float(dataset["bias"].isel(checkpoint=-1).max() / dataset["bias"].isel(
            checkpoint=-1).min()))


def test_one_family_over_the_whole_study_widens_every_check():
    """``[study] family = "study"``: every verdict's critical z is the Bonferroni z of all of
    them (an invariance's, over its pairs, from it); without it each check has its own
    family."""
    one = PARTS.replace('parts = ["mean", "blr"]', 'parts = ["mean", "blr"]\nfamily = "study"')
    experiment = experiment_of(loads(PARTS, "tiny-parts.toml"))
    dataset = run_experiment(experiment, experiment.configure(
        {"mean_n_replicates": 20, "blr_n_replicates": 2}), seed=3)
    own = {v.check: v.z_threshold for v in experiment.checks(dataset)}
    joint = {v.check: v.z_threshold for v in experiment_of(loads(one, "one.toml")).checks(
        dataset.assign_attrs(study_toml=one))}
    assert own.keys() == joint.keys()
    assert len({z for name, z in joint.items() if "invariance" not in name}) == 1
    assert all(joint[name] >= own[name] for name in own)
    assert own["mean/slope/variance-vs-servers"] < joint["mean/slope/variance-vs-servers"]


def test_a_gaussian_study_with_servers_pooled_runs_alone(tmp_path):
    """``n_servers`` on the Gaussian mean's asynchronous system is a study of its own too: the
    pooled point, its checks and default figures."""
    alone = """\
[study]
name = "tiny-pooled"
[model]
kind = "gaussian-mean"
n_data = 200
[system]
kind = "asynchronous"
n_workers = 2
[sampler]
kind = "sgld"
step_size = 2e-4
[run]
n_iterations = 200
n_replicates = 100
n_checkpoints = 4
[sweep]
n_servers = [1, 2, 4]
[[check]]
kind = "oracle"
[[check]]
kind = "slope"
expected = -1.0
"""
    study = loads(alone, "pooled.toml")
    experiment = experiment_of(study)
    assert isinstance(experiment, StudyExperiment)
    assert point_kind(experiment.configure()).name == "pooled-servers"
    dataset = run_experiment(experiment, experiment.configure({"n_replicates": 30}), seed=3)
    own = experiment.checks(dataset)
    assert own[-1].check == "slope/variance-vs-n_servers"
    one = experiment_of(loads(alone.replace("[model]", 'family = "study"\n[model]'), "one.toml"))
    joint = one.checks(dataset)  # one family of seven: six oracle comparisons and the slope
    assert [v.check for v in joint] == [v.check for v in own]
    assert len({v.z_threshold for v in joint}) == 1
    assert joint[-1].z_threshold > own[-1].z_threshold
    assert [p.name for p in experiment.figures(dataset, tmp_path)] == [
        "tiny-pooled-oracle.png", "tiny-pooled-slope.png"]


PARTS_REFUSALS = [
    # (replace, with, line fragment, words)
    ('parts = ["mean", "blr"]', 'parts = ["mean"]', 'parts = ["mean"]', "two or more"),
    ('parts = ["mean", "blr"]', 'parts = ["mean", "blr", "third"]', "parts =", "'third'"),
    ("[part.blr.model]", "[part.extra.model]\nkind = \"gaussian-mean\"\n\n[part.blr.model]",
     "[part.extra.model]", "'extra' is not a part"),
    ("[part.blr.run]", "[part.blr.sweep]\nservers = [1, 2]\n\n[part.blr.run]",
     "[part.blr.sweep]", "sweeps its dims once"),
    ("n_train = 300", "n_train = 300\nn_trains = 3", "n_trains = 3",
     "[part.blr.model] n_trains", "unknown key"),
    ("n_evaluations = 20", "n_evaluations = 20\nn_checkpoints = 3", "n_checkpoints = 3",
     "[part.blr.run] n_checkpoints", "shared by every part", "line 18"),
    ('kind = "invariance"\ntest_function = "log_loss"', 'kind = "oracle"  # blr',
     'kind = "oracle"  # blr', "[[part.blr.check]] #1 kind", "has none"),
    ('kind = "invariance"\ntest_function = "log_loss"', 'kind = "invariance"\nover = "speed"',
     'over = "speed"', "[[part.blr.check]] #1 over", "sweep dim"),
    ("[sweep]", "[[check]]\nkind = \"oracle\"\n\n[sweep]", "[[check]]", "unknown section"),
    # the pooled Gaussian mean: what it does not read, and the checks it does not take
    ("n_data = 200", "n_data = 200\ndim = 2", "dim = 2", "n_servers pooled"),
    ("initial_position = 3.0", "initial_position = 3.0\nn_draws = 10", "n_draws = 10",
     "n_servers pooled"),
    ('kind = "slope"\nexpected = -1.0', 'kind = "rate"', 'kind = "rate"',
     "not a check of the Gaussian mean with n_servers pooled"),
    ('kind = "slope"\nexpected = -1.0', 'kind = "slope"\ntest_function = "theta"',
     'test_function = "theta"', "[[part.mean.check]] #2 test_function", "unknown key"),
    # one family: only the kinds that can join it
    ('parts = ["mean", "blr"]', 'parts = ["mean", "blr"]\nfamily = "study"\n', 'kind = "ordering"',
     "family of its own"),
]


@pytest.mark.parametrize("old, new, fragment, words", [
    (old, new, fragment, words) for old, new, fragment, *words in PARTS_REFUSALS],
    ids=[r[2][:24] for r in PARTS_REFUSALS])
def test_a_malformed_study_of_parts_is_refused_naming_the_key_and_its_line(old, new, fragment,
                                                                           words):
    assert old in PARTS
    text = PARTS.replace(old, new, 1)
    if "family" in new:  # an ordering check, which judges in a family of its own
        text = text.replace('kind = "invariance"\ntest_function = "log_loss"',
                            'kind = "ordering"\ntest_function = "log_loss"')
    refused_when_read(text, fragment, *words)


def test_n_servers_means_nothing_on_a_gaussian_mean_without_the_asynchronous_system():
    text = ('[study]\nname = "x"\n[model]\nkind = "gaussian-mean"\n[system]\n'
            'kind = "constant"\nn_servers = 2\n')
    refused_when_read(text, "n_servers = 2", "[system] n_servers", "means nothing")


def test_the_shipped_multi_server_is_a_study_of_parts():
    from workbench.studies.files import built_in

    study = built_in("multi-server")
    assert [part.name for part in study.parts] == ["gaussian", "logistic"]
    assert study.family == "study" and study.sweep_dims == ("servers",)
    assert library.header("multi-server").figure == "multi_server:figure_servers"


def test_a_part_field_that_means_nothing_in_its_part_is_refused_saying_why():
    """``--set`` of a part's field that its kinds leave unused says why, as in a study of one
    part; the part's own fields are still accepted (negative control)."""
    from workbench import experiments

    experiment = experiments.get("protocols-networks")
    with pytest.raises(InvalidParameter, match=r"downpour_reference_draws = 10 is invalid: "
                                               r"means nothing without a check judged against "
                                               r"the reference posterior"):
        experiment.configure({"downpour_reference_draws": 10}, quick=True)
    with pytest.raises(InvalidParameter, match=r"elastic_sampler_python = 'x.py' is invalid: "
                                               r"means nothing unless \[sampler\] kind"):
        experiment.configure({"elastic_sampler_python": "x.py"}, quick=True)
    assert experiment.configure({"downpour_step_size": 2e-3},
                                quick=True)["downpour_step_size"] == 2e-3
    with pytest.raises(InvalidParameter, match="is not a parameter"):
        experiment.configure({"downpour_no_such_field": 1}, quick=True)
