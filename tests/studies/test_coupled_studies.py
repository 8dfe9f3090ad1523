"""Coupled traveling chains in a study (seed 004 §3.2.3): ``[sampler] kind = "coupled-sgld"``
with ``group_size``, the ``gradient-noise`` and ``posterior`` check kinds, their refusals and
their negative controls."""

from __future__ import annotations

import numpy as np
import pytest

from bounds.verdict import HOLDS, VIOLATED
from tests.studies.refusals import line_of
from workbench.run.runner import run_experiment
from workbench.studies.document import StudyError
from workbench.studies.experiment import StudyExperiment
from workbench.studies.files import loads

COUPLED = """\
[study]
name = "tiny-coupled"
symbols = { group_size = "R" }

[model]
kind = "sharded-gaussian"
shard_sizes = [60, 60, 60, 60]
dim = 2

[system]
kind = "traveling-chains"
assignment = "permutation"
trajectory_length = 5
coupling_time = 1.0

[sampler]
kind = "coupled-sgld"
welling_teh_step_size = 2e-5
noise_correction = true

[run]
burn_in = 300
n_iterations = 900
n_replicates = 3
thin = 10
batch_size = 10
initial_position = 0.0
gradient_draws = 2000

[sweep]
group_size = [1, 2, 4]

[[check]]
kind = "gradient-noise"

[[check]]
kind = "posterior"
unit = "run"
"""


def _run(text: str, **overrides):
    experiment = StudyExperiment(loads(text, "tiny-coupled.toml"))
    dataset = run_experiment(experiment, experiment.configure(overrides), seed=5)
    return experiment, dataset


@pytest.fixture(scope="module")
def coupled():
    return _run(COUPLED)


REFUSALS = [
    # (replace, with, key named, line fragment)
    ('kind = "coupled-sgld"', 'kind = "sgld"', "[sweep] group_size",
     "group_size = [1, 2, 4]"),
    ('kind = "traveling-chains"', 'kind = "federated-rounds"', "[sampler] kind",
     'kind = "coupled-sgld"'),
    ('kind = "posterior"\nunit = "run"', 'kind = "posterior"\nunit = "replicate"',
     "[[check]] #2 unit", 'unit = "replicate"'),
    ('kind = "gradient-noise"', 'kind = "posterior"', "[run] gradient_draws",
     "gradient_draws = 2000"),
    ("group_size = [1, 2, 4]", "group_size = [0, 2]", "[sweep] group_size",
     "group_size = [0, 2]"),
]


def test_coupling_fields_are_refused_without_the_coupled_sampler_and_named_why():
    text = (COUPLED.replace('kind = "coupled-sgld"', 'kind = "sgld"')
            .replace("group_size = [1, 2, 4]", "trajectory_length = [5, 10]")
            .replace("trajectory_length = 5\n", "").replace("group_size", "trajectory_length"))
    for key, line in (("[system] coupling_time", "coupling_time = 1.0\n"),
                      ("[sampler] noise_correction", "noise_correction = true\n")):
        with pytest.raises(StudyError) as caught:
            loads(text, "broken.toml")
        assert caught.value.key == key
        assert 'unless [sampler] kind = "coupled-sgld"' in str(caught.value)
        text = text.replace(line, "")
    assert loads(text, "fixed.toml").swept == ("trajectory_length",)


def test_coupled_groups_divide_the_gradient_noise_and_keep_the_posterior(coupled):
    experiment, dataset = coupled
    verdicts = {v.check: v for v in experiment.checks(dataset)}
    gradient = [name for name in verdicts if name.startswith("gradient")]
    assert gradient == ["gradient/R=1", "gradient/minibatch/R=1", "gradient/R=2",
                        "gradient/minibatch/R=2", "gradient/R=4", "gradient/minibatch/R=4"]
    assert all(verdicts[name].verdict == HOLDS for name in gradient)
    slope = verdicts["slope/gradient-minibatch-vs-R"]
    assert slope.verdict == HOLDS and abs(slope.observed + 1) < 0.1
    # one chain per group stands for it: 4, 2 and 1 groups, every (replicate, group) a unit
    posterior = [v for name, v in verdicts.items() if name.startswith("posterior/")]
    assert len(posterior) == 3 * (2 + 3)
    assert {v.evidence["n_chains"] for v in posterior if "/R=4/" in v.check} == {3}
    assert {v.evidence["n_chains"] for v in posterior if "/R=1/" in v.check} == {12}
    assert all(v.verdict != VIOLATED for v in posterior)


def test_a_gradient_noise_check_against_the_wrong_group_size_is_violated(coupled):
    """Negative control: the R = 4 draws judged against R = 1's exact minibatch noise (four
    times larger) come out violated, as does the slope against a flat line."""
    experiment, dataset = coupled
    wrong = dataset.copy()
    exact = wrong["exact_gradient_minibatch_error"].values.copy()
    wrong["exact_gradient_minibatch_error"].values[:] = exact[0]
    verdicts = {v.check: v for v in experiment.checks(wrong)}
    assert verdicts["gradient/minibatch/R=1"].verdict == HOLDS
    assert verdicts["gradient/minibatch/R=4"].verdict == VIOLATED
    flat = wrong.copy()
    draws = flat["gradient_minibatch_error"]
    flat["gradient_minibatch_error"] = draws * flat["group_size"]
    assert {v.check: v for v in experiment.checks(flat)}[
        "slope/gradient-minibatch-vs-R"].verdict == VIOLATED


def test_coupling_without_the_noise_correction_is_caught_by_the_posterior_check():
    """Seed 004's LDA practice (no extra noise) samples at temperature 1/R: the covariance
    checks against the posterior at R = 4 come out violated (a quarter of s², measured)."""
    experiment, dataset = _run(COUPLED.replace("noise_correction = true",
                                               "noise_correction = false"),
                               group_size=[4], n_replicates=20, n_iterations=3000)
    verdicts = experiment.checks(dataset)
    assert any(v.verdict == VIOLATED and v.check.startswith("posterior/R=4/covariance")
               for v in verdicts)
    experiment, dataset = _run(COUPLED, group_size=[4], n_replicates=20, n_iterations=3000)
    assert not any(v.verdict == VIOLATED for v in experiment.checks(dataset)
                   if v.check.startswith("posterior/"))


def test_an_uncoupled_traveling_study_draws_gradients_for_its_one_chain_groups():
    """``gradient-noise`` on plain SGLD: groups of one, no coupled chains stored."""
    text = (COUPLED.replace('kind = "coupled-sgld"', 'kind = "sgld"')
            .replace("noise_correction = true\n", "").replace("coupling_time = 1.0\n", "")
            .replace("group_size = [1, 2, 4]", "trajectory_length = [5, 50]")
            .replace('symbols = { group_size = "R" }', 'symbols = { trajectory_length = "T" }')
            .replace("trajectory_length = 5\n", ""))
    experiment, dataset = _run(text)
    assert "first_member" not in dataset and "reference_mean" not in dataset
    names = [v.check for v in experiment.checks(dataset)]
    assert names[:4] == ["gradient/T=5", "gradient/minibatch/T=5", "gradient/T=50",
                         "gradient/minibatch/T=50"]
    assert not any(name.startswith("slope/") for name in names)
    np.testing.assert_array_equal(dataset["exact_gradient_error"].values[0],
                                  dataset["exact_gradient_error"].values[1])


#: two arms on imbalanced shards (seed 004 §4.1), broken one line at a time below
ARMS = """\
[study]
name = "tiny-arms"
symbols = { correction = "" }

[model]
kind = "sharded-gaussian"
shard_sizes = [40, 40, 120, 120]

[system]
kind = "traveling-chains"
trajectory_lengths = [9, 9, 3, 3]

[sampler]
kind = "sgld"
welling_teh_step_size = 2e-5

[run]
burn_in = 200
n_iterations = 400
n_replicates = 2
thin = 10
batch_size = 10
step_divisor = [2]

[sweep]
correction = ["corrected", "uncorrected"]

[[check]]
kind = "limit"
"""

ARMS_REFUSALS = [
    ("trajectory_lengths = [9, 9, 3, 3]", "trajectory_lengths = [9, 9, 3, 3]\n"
     "trajectory_length = 5", "[system] trajectory_lengths", "trajectory_lengths = [9"),
    ('kind = "limit"', 'kind = "posterior"', "[run] step_divisor", "step_divisor = [2]"),
    ("step_divisor = [2]", "step_divisor = [1, 2]", "[run] step_divisor",
     "step_divisor = [1, 2]"),
    ('correction = ["corrected", "uncorrected"]', 'correction = ["corrected", "halfway"]',
     "[sweep] correction", 'correction = ["corrected", "halfway"]'),
    ('symbols = { correction = "" }', 'symbols = { correction = " " }',
     "[study.symbols] correction", 'symbols = { correction = " " }'),
    ('kind = "limit"', 'kind = "limit"\n\n[[check]]\nkind = "posterior"\ncontrol_variate = "yes"',
     "[[check]] #2 control_variate", 'control_variate = "yes"'),
    ('kind = "limit"', 'kind = "limit"\ncontrol_variate = false',
     "[[check]] #1 control_variate", "control_variate = false"),
]


def test_arms_share_one_schedule_are_named_by_their_value_and_need_a_length_per_shard():
    """Points that differ only in a [sampler] field replay one schedule (the exact oracle of
    both arms sees the same shard visits); an empty symbol names checks by the value alone;
    trajectory lengths must match the shards, refused when configured."""
    experiment, dataset = _run(ARMS)
    names = [v.check for v in experiment.checks(dataset)]
    assert names[0] == "limit/corrected/mean/component=0" and \
        "limit/uncorrected/covariance/(0,0)" in names
    np.testing.assert_array_equal(dataset["shard_frequency"].values,
                                  [0.375, 0.375, 0.125, 0.125])
    from simulators.validation import InvalidParameter

    with pytest.raises(InvalidParameter) as caught:
        experiment.configure({"trajectory_lengths": [9, 9, 3]})
    assert caught.value.field == "trajectory_lengths"


def test_posterior_checks_take_the_exact_oracle_as_control_variate_unless_told_not_to():
    """By default a posterior check's estimate is the exact oracle given each chain's schedule
    (its evidence says so, with the samples' own average beside it); ``control_variate =
    false`` judges the samples' average, on the same data, with the same margin."""
    with_cv = ARMS + '\n[[check]]\nkind = "posterior"\n'
    experiment, dataset = _run(with_cv)
    without = StudyExperiment(loads(with_cv + "control_variate = false\n", "plain.toml"))
    name = "posterior/corrected/mean/component=0"
    on = {v.check: v for v in experiment.checks(dataset)}[name]
    off = {v.check: v for v in without.checks(dataset)}[name]
    exact = dataset["exact_window_mean"].sel(correction="corrected").values[:, 0]
    assert on.observed == pytest.approx(exact.mean())
    assert "β = 1" in on.evidence["control_variate"]
    assert on.evidence["without_control_variate"]["estimate"] == pytest.approx(off.observed)
    assert "control_variate" not in off.evidence
    measured = dataset["window_mean"].sel(correction="corrected").values[..., 0]
    assert off.observed == pytest.approx(measured.mean())
    assert on.margin == off.margin == pytest.approx(0.5 * measured.std(ddof=1))


def test_a_schedule_is_keyed_by_what_shapes_the_system_and_not_by_the_sampler():
    """The arms of a sweep over a [sampler] field replay one schedule; a swept system field
    (or a constant, which may feed one) gives each point its own."""
    from workbench.studies.sharded_point import _schedule_seed

    def key(point):
        return _schedule_seed("x", point, 3).spawn_key

    assert key({"correction": "corrected"}) == key({"correction": "uncorrected"})
    assert key({"correction": "corrected", "noise_correction": True}) == key({})
    assert key({"trajectory_length": 5}) != key({"trajectory_length": 50})
    assert key({"trajectory_length": 5, "correction": "corrected"}) == \
        key({"trajectory_length": 5, "correction": "uncorrected"})
    assert key({"c": 1}) != key({"c": 2})


#: paired arms of a balancing plan on slow workers (seed 004 §3.2.2), broken below
BALANCED = """\
[study]
name = "tiny-balancing"
symbols = { slowdown = "D", balancing = "" }
paired = ["balancing"]

[model]
kind = "sharded-gaussian"
shard_sizes = [50, 50, 50, 50]

[system]
kind = "traveling-chains"
assignment = "permutation"
n_slow_workers = 2
slow_trajectory_length = 3

[sampler]
kind = "sgld"
welling_teh_step_size = 2e-5

[run]
burn_in = 3000
n_iterations = 1000
n_replicates = 2
thin = 10
batch_size = 10
initial_offset = 5.0

[sweep]
slowdown = [4.0]
balancing = ["fixed", "adaptive"]

[[check]]
kind = "time-to-target"
over = "balancing"
"""

BALANCED_REFUSALS = [
    ('paired = ["balancing"]', 'paired = ["speed"]', "[study] paired", "paired = "),
    ("slow_trajectory_length = 3", "slow_trajectory_length = 3\ntrajectory_length = 5",
     "[system] slow_trajectory_length", "slow_trajectory_length = 3"),
    ("initial_offset = 5.0", "initial_offset = 5.0\ninitial_position = 1.0",
     "[run] initial_position", "initial_position = 1.0"),
    ('kind = "time-to-target"\nover = "balancing"', 'kind = "oracle"', "[run] initial_offset",
     "initial_offset = 5.0"),
    ('balancing = ["fixed", "adaptive"]', 'balancing = ["fixed"]', "[[check]] #1 over",
     'over = "balancing"'),
    ("slowdown = [4.0]", "slowdown = [0.5]", "[sweep] slowdown", "slowdown = [0.5]"),
]


def test_paired_arms_share_their_random_numbers_and_balancing_is_judged_in_time():
    """The paired arms see the same schedule draws, minibatches and noise: without slow
    workers (D = 1) the two plans coincide, and so do the runs, bit for bit; the adaptive plan
    gives the slow workers their length; the time-to-target verdicts are named by the other
    dims, sooner only where the exact curves say so. A study not paired draws each arm's own
    numbers (negative control)."""
    experiment, dataset = _run(BALANCED, slowdown=[1.0, 4.0])
    error = dataset["squared_error"].sel(slowdown=1.0)
    np.testing.assert_array_equal(error.sel(balancing="fixed").values,
                                  error.sel(balancing="adaptive").values)
    plan = dataset["trajectory_plan"].sel(slowdown=4.0, balancing="adaptive").values
    assert plan[-2:].tolist() == [3, 3] and (plan[:2] > 3).all()
    names = [v.check for v in experiment.checks(dataset)]
    assert names == ["speed-up/D=1", "speed-up/D=4", "sooner/D=4", "accuracy/D=1",
                     "accuracy/D=4"]
    _, unpaired = _run(BALANCED.replace('paired = ["balancing"]\n', ""), slowdown=[1.0])
    error = unpaired["squared_error"].sel(slowdown=1.0)
    assert not np.array_equal(error.sel(balancing="fixed").values,
                              error.sel(balancing="adaptive").values)


def test_a_balanced_arm_made_slow_or_biased_is_caught_by_the_time_to_target_check():
    """Negative controls: the adaptive arm's measured error curve dilated four times in updates
    (its chains converging four times slower than the exact oracle says) makes it later, not
    sooner: speed-up and sooner violated. Its error floor raised by 100 s² breaks the accuracy
    invariance. The untouched run: speed-up and sooner hold, accuracy is not violated."""
    experiment, dataset = _run(BALANCED, n_replicates=8)
    verdicts = {v.check: v.verdict for v in experiment.checks(dataset)}
    assert [verdicts[k] for k in ("speed-up/D=4", "sooner/D=4")] == [HOLDS, HOLDS]
    assert verdicts["accuracy/D=4"] != VIOLATED
    slow = dataset.copy(deep=True)
    error = dataset["squared_error"].sel(balancing="adaptive").values
    slow["squared_error"].loc[{"balancing": "adaptive"}] = \
        error[..., np.arange(error.shape[-1]) // 4]
    verdicts = {v.check: v.verdict for v in experiment.checks(slow)}
    assert verdicts["speed-up/D=4"] == VIOLATED and verdicts["sooner/D=4"] == VIOLATED
    biased = dataset.copy(deep=True)
    extra = 100.0 * float(dataset["posterior_variance"]) * np.eye(dataset.sizes["component"])
    biased["window_second"].loc[{"balancing": "adaptive"}] = \
        dataset["window_second"].sel(balancing="adaptive") + extra
    verdicts = {v.check: v.verdict for v in experiment.checks(biased)}
    assert verdicts["accuracy/D=4"] == VIOLATED


CASES_REFUSED = ([(COUPLED, *r) for r in REFUSALS] + [(ARMS, *r) for r in ARMS_REFUSALS]
                 + [(BALANCED, *r) for r in BALANCED_REFUSALS])


@pytest.mark.parametrize("base, old, new, key, fragment", CASES_REFUSED,
                         ids=[r[3] for r in CASES_REFUSED])
def test_a_traveling_study_that_does_not_fit_is_refused_naming_the_key_and_its_line(
        base, old, new, key, fragment):
    assert old in base
    text = base.replace(old, new)
    with pytest.raises(StudyError) as caught:
        loads(text, "broken.toml")
    assert caught.value.key == key
    assert caught.value.line == line_of(text, fragment)


def test_other_schedules_add_their_chains_to_the_limit_check_and_leave_the_run_as_it_was():
    """``limit_schedules = 3`` runs the exact oracle's step ladder on two more schedules of
    the system (chains permuted over the workers at random), each from its own seed: every
    variable of the one-schedule run is the same,
    the limit check's units are the 4 chains of each of the 3 schedules (its estimate the
    Richardson limit averaged over all 12, by hand below), its evidence names the count that
    adds chains; no replicate block reads the count (the blocks' keys do not change)."""
    from workbench.store.result_store import block_identity, point_identity
    from workbench.studies.limit_judgements import richardson_weights

    permuted = ARMS.replace('[system]\n', '[system]\nassignment = "permutation"\n')
    experiment, one = _run(permuted)
    _, three = _run(permuted, limit_schedules=3)
    for name in one.data_vars:
        np.testing.assert_array_equal(one[name].values, three[name].values)
    other = three["exact_window_mean_other_schedules"].sel(correction="corrected")
    assert other.dims == ("limit_schedule", "ladder_divisor", "chain", "component")
    assert other["limit_schedule"].values.tolist() == [1, 2]
    assert other["ladder_divisor"].values.tolist() == [1, 2]
    run = one.sel(correction="corrected")
    assert not np.allclose(other.values[0, 0], run["exact_window_mean"].values)
    assert not np.allclose(other.values[0, 0], other.values[1, 0])

    weights = richardson_weights([1, 1 / 2])
    ladder = np.concatenate([
        np.stack([run["exact_window_mean"].values,
                  run["exact_window_mean_smaller_steps"].values[0]]),
        other.transpose("ladder_divisor", "limit_schedule", "chain", "component").values
        .reshape(2, 8, -1)], axis=1)
    by_hand = np.tensordot(weights, ladder, axes=1)[:, 0]
    name = "limit/corrected/mean/component=0"
    verdict = {v.check: v for v in experiment.checks(three)}[name]
    assert verdict.observed == pytest.approx(by_hand.mean(), rel=1e-12)
    assert verdict.evidence["n_chains"] == 12
    assert verdict.evidence["chains_from"] == "limit_schedules"
    assert verdict.evidence["limit_schedules"] == 3
    alone = {v.check: v for v in experiment.checks(one)}[name]
    assert alone.evidence["n_chains"] == 4 and alone.evidence["limit_schedules"] == 1

    configs = [experiment.configure(), experiment.configure({"limit_schedules": 3})]
    point = {"correction": "corrected"}
    assert point_identity(experiment, configs[0], point, 5) \
        != point_identity(experiment, configs[1], point, 5)
    assert block_identity(experiment, configs[0], point, 5, range(0, 2)) \
        == block_identity(experiment, configs[1], point, 5, range(0, 2))


def test_other_schedules_are_refused_where_every_seed_gives_the_run_s_schedule():
    """A cyclic rotation with constant delays draws no random number: other schedules would
    be copies of the run's, counted as more chains. ``limit_schedules`` is refused there,
    naming the key and why, and the limit check names no count that adds chains."""
    from simulators.validation import InvalidParameter

    experiment, dataset = _run(ARMS)
    with pytest.raises(InvalidParameter) as caught:
        experiment.configure({"limit_schedules": 2})
    assert caught.value.field == "limit_schedules" and "assignment" in str(caught.value)
    verdict = next(v for v in experiment.checks(dataset) if v.check.startswith("limit/"))
    assert "chains_from" not in verdict.evidence and verdict.evidence["limit_schedules"] == 1
