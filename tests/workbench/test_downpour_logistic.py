"""The logistic-regression half of ``downpour-period`` (issue 16): the reduction to stale SGLD
bit for bit, the reference posterior's error in every comparison, and negative controls."""

import numpy as np
import pytest
import xarray as xr

from bounds.checks import ordering_check, rate_check
from bounds.verdict import HOLDS, INCONCLUSIVE, VIOLATED
from simulators.async_server import AsyncServerSystem
from simulators.seeding import derive, generator
from simulators.validation import InvalidParameter
from workbench import experiments
from workbench.experiments.downpour_period.checks import logistic_checks, logistic_excess
from workbench.experiments.downpour_period.logistic import (
    PREFIX,
    logistic_setup,
    replay_logistic,
)
from workbench.experiments.protocols.run import make_protocol
from workbench.runner import run_experiment

NAME = "downpour-period"
SEED = 7
SMALL = {"iterations": 200, "n_replicates": 50, "period": [1, 2, 4], "workers": [1, 2, 4]}


@pytest.fixture(scope="module")
def config():
    return experiments.get(NAME).configure(SMALL, quick=True)


@pytest.fixture(scope="module")
def dataset(config):
    return run_experiment(experiments.get(NAME), config, seed=SEED)


def test_downpour_with_one_worker_and_period_one_is_sgld_with_staleness_zero_bit_for_bit(config):
    """P = 1, π = 1: the master adds the single worker's one SGLD move from the current version
    (staleness 0), which is plain SGLD: the same numbers as the engine's replay of a
    one-worker asynchronous server under the same seeds."""
    model, function, _, starts = logistic_setup(NAME, config, SEED)
    downpour = make_protocol(config, "downpour", 1, 1).simulate(
        config["logistic_iterations"], derive(SEED, "schedule"))
    plain = AsyncServerSystem(1, make_protocol(config, "downpour", 1, 1).timing).simulate(
        config["logistic_iterations"], derive(SEED, "schedule"))
    assert downpour.update_staleness(config["logistic_iterations"]).max() == 0
    assert plain.attrs.get("protocol") is None  # the plain engine path, not the protocol one
    engine = derive(SEED, "engine")
    a = replay_logistic(downpour, model, function, starts, config, engine)
    b = replay_logistic(plain, model, function, starts, config, engine)
    assert np.all(np.isfinite(a))
    np.testing.assert_array_equal(a, b)
    # negative control: a longer period is another chain
    longer = make_protocol(config, "downpour", 1, 2).simulate(
        config["logistic_iterations"], derive(SEED, "schedule"))
    assert not np.array_equal(replay_logistic(longer, model, function, starts, config, engine),
                              a)


def test_reference_error_enters_the_excess_exactly(dataset):
    """The mean excess is linear in the reference mean m: moving m by its standard error moves
    every point's mean excess by exactly the ``target_error`` the rate check is given."""
    x, samples, target_error = logistic_excess(dataset)
    error = float(dataset[f"{PREFIX}reference_mc_error"].max())
    assert error > 0 and np.all(target_error != 0)
    shifted = dataset.copy()
    moved = float(dataset[f"{PREFIX}reference"].max()) + error
    shifted[f"{PREFIX}squared_error"] = (dataset[f"{PREFIX}estimate"] - moved) ** 2
    _, again, _ = logistic_excess(shifted)
    np.testing.assert_allclose(again.mean(axis=1) - samples.mean(axis=1), target_error,
                               rtol=1e-9, atol=1e-15)


def test_logistic_verdicts(dataset):
    verdicts = experiments.get(NAME).checks(dataset)
    by_name = {v.check: v for v in verdicts}
    assert len(verdicts) == 3 * 9 + 2 + 3 + 2
    reference = [v for v in verdicts if v.kind == "reference"]
    assert len(reference) == 3 and all(v.verdict != VIOLATED for v in reference)
    assert all(v.evidence["reference_mc_error"] > 0 for v in reference)
    # more staleness, more excess: π(P − 1) = 12 against 1
    ordering = by_name["ordering/downpour-e3/log_loss"]
    assert ordering.verdict == HOLDS and ordering.evidence["reference_part"] > 0
    rate = by_name["rate/downpour-e3/log_loss"]
    assert rate.evidence["target_error"] and rate.verdict in (HOLDS, VIOLATED, INCONCLUSIVE)


def test_logistic_negative_controls(dataset, config):
    """Wrong claims are caught: a reference moved by ten times the run's spread, and the
    excess claimed to fall with π(P − 1) (the ordering reversed)."""
    wrong = dataset.copy()
    spread = float(dataset[f"{PREFIX}estimate"].std())
    wrong[f"{PREFIX}reference"] = dataset[f"{PREFIX}reference"] + 10 * spread
    reference = [v for v in logistic_checks(wrong, 4.0, 4.0) if v.kind == "reference"]
    assert all(v.verdict == VIOLATED for v in reference)
    ordering = {v.check: v for v in logistic_checks(dataset, 4.0, 4.0)}[
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
    assert spanning.verdict == INCONCLUSIVE and "interval reaches 0" in spanning.detail
    with pytest.raises(ValueError, match="target_error"):
        rate_check("r", x, samples, 2.0, 4.0, generator(1, "t"), target_error=[1.0])


@pytest.mark.parametrize(("overrides", "field"), [
    ({"logistic_step_size": 0.0}, "logistic_step_size"),
    ({"logistic_replicates": 1}, "logistic_replicates"),
    ({"reference_draws": 50}, "reference_draws"),
    ({"reference_chains": 1}, "reference_chains"),
    ({"n_train": 0}, "n_train"),
])
def test_bad_logistic_configuration_names_the_field(overrides, field):
    with pytest.raises(InvalidParameter) as error:
        experiments.get(NAME).configure(overrides)
    assert error.value.field == field


def test_logistic_figure_panel(dataset, tmp_path):
    [path] = experiments.get(NAME).figures(dataset, tmp_path)
    assert path.stat().st_size > 10_000
    assert isinstance(dataset[f"{PREFIX}mse"], xr.DataArray)
