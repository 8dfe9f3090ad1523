"""The logistic-regression part of ``downpour-period`` (issue 16), a point of seed 003's
protocols with paired replicates (:mod:`workbench.studies.paired_protocol_point`) judged by
:mod:`workbench.studies.paired_protocol_judgements`: the reduction to stale SGLD bit for bit,
the reference posterior's error in every comparison, and negative controls."""

import numpy as np
import pytest
import xarray as xr

from bounds.checks import ordering_check, rate_check
from bounds.verdict import HOLDS, INCONCLUSIVE, VIOLATED
from simulators.async_server import AsyncServerSystem
from simulators.seeding import derive, generator
from simulators.validation import InvalidParameter
from workbench import experiments
from workbench.engine.replay import replay
from workbench.run.runner import run_experiment
from workbench.samplers.sgld import SGLD
from workbench.studies.paired_protocol_judgements import deviation, excess
from workbench.studies.paired_protocol_point import setup
from workbench.systems.protocols.run import make_protocol

NAME = "downpour-period"
SEED = 7
SMALL = {"gaussian_n_iterations": 200, "gaussian_n_replicates": 50, "period": [1, 2, 4],
         "workers": [1, 2, 4]}


@pytest.fixture(scope="module")
def experiment():
    return experiments.get(NAME)


@pytest.fixture(scope="module")
def config(experiment):
    """The logistic part's own configuration (its keys without the prefix)."""
    study = experiment.study
    return study.part_config(experiment.configure(SMALL, quick=True), study.parts[1])


@pytest.fixture(scope="module")
def combined(experiment):
    return run_experiment(experiment, experiment.configure(SMALL, quick=True), seed=SEED)


@pytest.fixture(scope="module")
def dataset(experiment, combined):
    """The logistic part's slice, under its own names."""
    return experiment.part_dataset(combined, experiment.study.parts[1])


def judge(experiment, dataset):
    """The logistic part's verdicts on ``dataset`` (its slice, perhaps planted)."""
    return experiment.experiments["logistic"].verdicts(dataset)


def excess_option(experiment, dataset, of: str = "excess"):
    """(context, options) of the logistic part's ``rate`` check of ``of``."""
    part = experiment.study.parts[1]
    options = next(c.options for c in part.study.checks
                   if c.kind == "rate" and c.options["of"] == of)
    return experiment.experiments[part.name].context(dataset), options


def replay_logistic(schedule, model, function, starts, config, seed):
    """φ̂_L per replicate of SGLD replaying ``schedule`` from ``starts``, as the point does."""
    n_updates = config["n_iterations"]
    run = replay(schedule, SGLD(config["step_size"]), model.minibatch_gradient(),
                 n_updates=n_updates, n_replicates=starts.shape[0],
                 initial_position=starts[:, None, :], seed=seed,
                 batch_size=config["batch_size"], test_functions=(function,),
                 checkpoints=[n_updates], replicate_block=starts.shape[0])
    return run.averages[function.name][-1, :, 0, 0]


def test_downpour_with_one_worker_and_period_one_is_sgld_with_staleness_zero_bit_for_bit(config):
    """P = 1, π = 1: the master adds the single worker's one SGLD move from the current version
    (staleness 0), which is plain SGLD: the same numbers as the engine's replay of a
    one-worker asynchronous server under the same seeds."""
    model, function, _, starts = setup(NAME, config, SEED)
    downpour = make_protocol(config, "downpour", 1, 1).simulate(
        config["n_iterations"], derive(SEED, "schedule"))
    plain = AsyncServerSystem(1, make_protocol(config, "downpour", 1, 1).timing).simulate(
        config["n_iterations"], derive(SEED, "schedule"))
    assert downpour.update_staleness(config["n_iterations"]).max() == 0
    assert plain.attrs.get("protocol") is None  # the plain engine path, not the protocol one
    engine = derive(SEED, "engine")
    a = replay_logistic(downpour, model, function, starts, config, engine)
    b = replay_logistic(plain, model, function, starts, config, engine)
    assert np.all(np.isfinite(a))
    np.testing.assert_array_equal(a, b)
    # negative control: a longer period is another chain
    longer = make_protocol(config, "downpour", 1, 2).simulate(
        config["n_iterations"], derive(SEED, "schedule"))
    assert not np.array_equal(replay_logistic(longer, model, function, starts, config, engine),
                              a)


def test_downpour_with_one_worker_is_sgld_thinned_by_the_period_bit_for_bit(config):
    """P = 1, period π, L pushes: the master versions are every π-th state of the P = 1,
    π = 1 run with π·L pushes under the same engine seed (local step j of push l is gradient
    evaluation lπ + j). So the synchronous φ̂_L(π) of the experiment average one SGLD
    trajectory over π·L steps (benchmarks/downpour_p1.py)."""
    model, function, _, starts = setup(NAME, config, SEED)
    period, pushes = 4, 30

    def draws(n_workers, period, n_updates, thin):
        schedule = make_protocol(config, "downpour", n_workers, period).simulate(
            n_updates, derive(SEED, "schedule", n_workers, period))
        run = replay(schedule, SGLD(config["step_size"]), model.minibatch_gradient(),
                     n_updates=n_updates, n_replicates=starts.shape[0],
                     initial_position=starts[:, None, :], seed=derive(SEED, "engine"),
                     batch_size=config["batch_size"], test_functions=(function,),
                     thin=thin, replicate_block=starts.shape[0])
        return run.draws

    thinned = draws(1, period, pushes, 1)
    assert thinned.shape[2] == pushes and np.all(np.isfinite(thinned))
    np.testing.assert_array_equal(thinned, draws(1, 1, period * pushes, period))
    # negative control: with a second worker the pushes are stale, another chain
    assert not np.array_equal(draws(2, period, pushes, 1), thinned)


def test_excess_splits_into_staleness_and_synchronous_parts(experiment, dataset):
    """mean((φ̂_P − m)² − (φ̂_1 − m)²) = mean δ² + mean 2δ(φ̂_1 − m), δ = φ̂_P − φ̂_1, and the
    deviation samples are δ² of the same replicates."""
    ctx, options = excess_option(experiment, dataset)
    x, samples, _ = excess(dataset, ctx, options)
    deviations, parts = deviation(dataset, ctx, options)
    np.testing.assert_allclose(np.add(parts["staleness_part"], parts["synchronous_part"]),
                               samples.mean(axis=1), rtol=1e-9, atol=1e-15)
    estimate = dataset["estimate"]
    delta = (estimate.sel(period=4, workers=4) - estimate.sel(period=4, workers=1)).values
    [row] = np.flatnonzero(x == 12)
    np.testing.assert_array_equal(deviations[row], delta**2)
    assert np.any(np.asarray(parts["synchronous_part"]) != 0)


@pytest.mark.parametrize(("power", "expected"), [(1.0, HOLDS), (1.5, VIOLATED)])
def test_deviation_rate_tells_quadratic_from_faster_growth(experiment, dataset, power,
                                                           expected):
    """Negative control: a staleness deviation δ = c·x^power·(1 + 0.1ξ) (ξ per replicate) has
    mean δ² ∝ x^(2·power): slope 2 holds, slope 3 is violated, whatever the synchronous
    runs' own error."""
    planted = dataset.copy(deep=True)
    estimate = planted["estimate"]
    noise = 1 + 0.1 * np.random.default_rng(5).standard_normal(estimate.sizes["replicate"])
    for period in planted["period"].values:
        for workers in planted["workers"].values[planted["workers"].values > 1]:
            x = period * (workers - 1)
            estimate.loc[{"period": period, "workers": workers}] = (
                estimate.sel(period=period, workers=1) + 1e-3 * x**power * noise)
    verdicts = {v.check: v for v in judge(experiment, planted)}
    deviation = verdicts["rate/downpour-e3/log_loss_deviation"]
    np.testing.assert_allclose(deviation.observed, 2 * power, rtol=1e-9)
    assert deviation.verdict == expected


def test_reference_error_enters_the_excess_exactly(experiment, dataset):
    """The mean excess is linear in the reference mean m: moving m by its standard error moves
    every point's mean excess by exactly the ``target_error`` the rate check is given."""
    ctx, options = excess_option(experiment, dataset)
    x, samples, target_error = excess(dataset, ctx, options)
    error = float(dataset["reference_mc_error"].max())
    assert error > 0 and np.all(target_error != 0)
    shifted = dataset.copy()
    moved = float(dataset["reference"].max()) + error
    shifted["squared_error"] = (dataset["estimate"] - moved) ** 2
    _, again, _ = excess(shifted, ctx, options)
    np.testing.assert_allclose(again.mean(axis=1) - samples.mean(axis=1), target_error,
                               rtol=1e-9, atol=1e-15)


def test_logistic_verdicts(experiment, combined):
    verdicts = experiment.checks(combined)
    by_name = {v.check: v for v in verdicts}
    assert len(verdicts) == 3 * 9 + 2 + 3 + 3
    reference = [v for v in verdicts if v.kind == "reference"]
    assert len(reference) == 3 and all(v.verdict != VIOLATED for v in reference)
    assert all(v.evidence["reference_mc_error"] > 0 for v in reference)
    assert [v.evidence["local_steps"] for v in reference] == [200, 400, 800]  # π·L
    deviation = by_name["rate/downpour-e3/log_loss_deviation"]
    assert deviation.kind == "rate" and not deviation.evidence.get("target_error")
    assert len(deviation.evidence["staleness_part"]) == 3 * 2  # π × (P > 1)
    # more staleness, more excess: π(P − 1) = 12 against 1
    ordering = by_name["ordering/downpour-e3/log_loss"]
    assert ordering.verdict == HOLDS and ordering.evidence["reference_part"] > 0
    rate = by_name["rate/downpour-e3/log_loss"]
    assert rate.evidence["target_error"] and rate.verdict in (HOLDS, VIOLATED, INCONCLUSIVE)


def test_logistic_negative_controls(experiment, dataset):
    """Wrong claims are caught: a reference moved by ten times the run's spread, and the
    excess claimed to fall with π(P − 1) (the ordering reversed)."""
    wrong = dataset.copy()
    spread = float(dataset["estimate"].std())
    wrong["reference"] = dataset["reference"] + 10 * spread
    reference = [v for v in judge(experiment, wrong) if v.kind == "reference"]
    assert reference and all(v.verdict == VIOLATED for v in reference)
    ordering = {v.check: v for v in judge(experiment, dataset)}[
        "ordering/downpour-e3/log_loss"]
    reversed_claim = ordering_check("control/ordering", -ordering.observed,
                                    ordering.evidence["run_error"], 0.0, 4.0)
    assert reversed_claim.verdict == VIOLATED


def test_target_error_widens_the_rate_and_none_changes_nothing():
    """The reference's error enters the slope's error; without it the check is unchanged."""
    x = np.array([1.0, 2.0, 4.0, 8.0])
    rng = np.random.default_rng(3)
    samples = x[:, None] ** 2 * rng.gamma(4.0, 0.25, size=(4, 400))
    base = rate_check("r", x, samples, 2.0, 4.0, generator(1, "t"), paired=True)
    same = rate_check("r", x, samples, 2.0, 4.0, generator(1, "t"), paired=True,
                      target_error=None)
    assert (base.observed, base.mc_error, base.verdict) == (same.observed, same.mc_error, HOLDS)
    wide = rate_check("r", x, samples, 2.0, 4.0, generator(1, "t"), paired=True,
                      target_error=[0.1, 0.0, 0.0, -6.4])  # 10 % at both ends, opposed
    assert wide.mc_error > 2 * base.mc_error and wide.verdict != HOLDS
    # a target error that can turn the statistic negative leaves the slope undefined: said
    spanning = rate_check("r", x, samples, 2.0, 4.0, generator(1, "t"), paired=True,
                          target_error=[0.5, 0.0, 0.0, 0.0])
    assert spanning.verdict == INCONCLUSIVE and "the slope's error is undefined" in spanning.detail
    with pytest.raises(ValueError, match="target_error"):
        rate_check("r", x, samples, 2.0, 4.0, generator(1, "t"), target_error=[1.0])


@pytest.mark.parametrize(("overrides", "field"), [
    ({"logistic_step_size": 0.0}, "logistic_step_size"),
    ({"logistic_n_replicates": 1}, "logistic_n_replicates"),
    ({"logistic_reference_draws": 50}, "logistic_reference_draws"),
    ({"logistic_reference_chains": 1}, "logistic_reference_chains"),
    ({"logistic_n_train": 0}, "logistic_n_train"),
])
def test_bad_logistic_configuration_names_the_field(overrides, field):
    with pytest.raises(InvalidParameter) as error:
        experiments.get(NAME).configure(overrides)
    assert error.value.field == field


def test_logistic_figure_panel(experiment, combined, tmp_path):
    [path] = experiment.figures(combined, tmp_path)
    assert path.stat().st_size > 10_000
    assert isinstance(combined["logistic_mse"], xr.DataArray)
