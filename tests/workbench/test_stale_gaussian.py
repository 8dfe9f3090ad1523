"""The stale-gaussian experiment end to end: verdicts, determinism, storage, divergence."""

import json

import numpy as np
import pytest
import xarray as xr

from bounds.verdict import HOLDS, INCONCLUSIVE, VIOLATED
from simulators.validation import InvalidParameter
from workbench import experiments
from workbench.run.runner import run_experiment
from workbench.store.netcdf import config_of, read_netcdf, write_netcdf

SMALL = {"staleness": [1, 5, 10], "base_iterations": 200, "n_replicates": 60,
         "replicate_block": 20, "n_checkpoints": 8, "rate_staleness": [2],
         "rate_iterations": [500, 1000, 2000], "envelope_staleness": [1, 4],
         "envelope_relative_step": [0.05, 0.1], "envelope_iterations": [250, 500, 1000],
         "bootstrap_resamples": 200}


@pytest.fixture(scope="module")
def experiment():
    return experiments.get("stale-gaussian")


@pytest.fixture(scope="module")
def small_result(experiment):
    config = experiment.configure(SMALL)
    return run_experiment(experiment, config, seed=4)


def test_dataset_layout_and_provenance(small_result):
    ds = small_result
    assert set(ds.sizes) >= {"staleness", "checkpoint", "replicate", "test_function",
                             "component", "error_source"}
    assert ds["staleness"].values.tolist() == [1, 5, 10]
    for name in ("bias", "bias_lower", "bias_upper", "mse", "mse_lower", "mse_upper",
                 "variance", "variance_lower", "variance_upper", "exact_mean", "exact_variance",
                 "exact_bias_by_source", "estimate", "step_size", "diverged_at"):
        assert name in ds, name
    assert ds["iterations"].sel(staleness=5).values[-1] == 1000
    config = config_of(ds)
    assert config["staleness"] == [1, 5, 10] and ds.attrs["seed"] == 4
    assert "data_variance" in " ".join(ds.attrs)
    # the bound designs sit beside the seed design on their own grids
    assert ds["rate_estimate"].sizes["rate_iterations"] == 3
    assert dict(ds["envelope_estimate"].sizes) == {
        "envelope_staleness": 2, "envelope_relative_step": 2, "envelope_iterations": 3,
        "test_function": 2, "replicate": 60, "component": 1}
    np.testing.assert_allclose(ds["envelope_step_size"].isel(envelope_staleness=0),
                               ds["envelope_relative_step"]
                               * float(ds.attrs["data_posterior_variance"]))
    rate_h = ds["rate_step_size"].sel(rate_staleness=2)
    np.testing.assert_allclose(rate_h, config["step_size_constant"] * 2 ** (-2 / 3)
                               * ds["rate_iterations"] ** (-1 / 3))
    # the error sources add up to the exact bias
    parts = ds["exact_bias_by_source"].sum("error_source")
    np.testing.assert_allclose(parts, ds["exact_bias"], rtol=1e-9, atol=1e-15)
    # h = C τ^(-2/3) L^(-1/3)
    tau, length = ds["staleness"], ds["n_iterations"]
    np.testing.assert_allclose(ds["step_size"],
                               config["step_size_constant"] * tau ** (-2 / 3) * length ** (-1 / 3))


def test_oracle_checks_hold_for_every_staleness(experiment, small_result):
    """With 60 replicates the means are shown within their margin; a variance may be too
    noisy to show within a factor 1.5 (inconclusive, with the replicates that would decide
    it), but no correct check is violated."""
    verdicts = experiment.checks(small_result)
    oracle = [v for v in verdicts if v.kind == "oracle"]
    exact_squared = small_result["exact_variance"].sel(test_function="theta_squared")
    per_tau = 5 if bool(np.all(np.isfinite(exact_squared))) else 3
    assert len(oracle) == per_tau * 3
    assert not [v.check for v in oracle if v.verdict == VIOLATED]
    means = [v for v in oracle if "/mean/" in v.check]
    assert all(v.verdict == HOLDS for v in means), [(v.check, v.detail) for v in means]
    for v in oracle:
        if v.verdict == INCONCLUSIVE:
            assert v.replicates_needed > 60 and "replicates" in v.detail
    kinds = {v.check.split("/")[0] for v in verdicts}
    assert kinds == {"oracle", "invariance", "slope", "rate", "envelope"}
    invariance = next(v for v in verdicts if v.kind == "invariance")
    assert invariance.verdict in (HOLDS, VIOLATED)
    assert "minibatch noise" in invariance.detail and "staleness" in invariance.detail


def test_same_seed_gives_identical_dataset_in_one_and_two_processes(experiment, small_result):
    config = experiment.configure(SMALL)
    parallel = run_experiment(experiment, config, seed=4, processes=2)
    xr.testing.assert_identical(parallel, small_result)


def test_result_round_trips_through_netcdf(tmp_path, small_result):
    path = write_netcdf(small_result, tmp_path / "result.nc")
    xr.testing.assert_identical(read_netcdf(path), small_result)
    assert not list(tmp_path.glob(".*.tmp"))


def test_step_size_beyond_stability_marks_replicates_diverged(experiment):
    config = experiment.configure({**SMALL, "step_size_constant": 0.05})
    ds = run_experiment(experiment, config, seed=4)
    assert not bool(ds["stable"].sel(staleness=1))
    assert bool((ds["diverged_at"].sel(staleness=1) > 0).all())
    assert int(ds["n_valid"].sel(staleness=1).min()) == 0  # no silent NaN: counted
    verdicts = experiment.checks(ds)
    # divergence is a finding: violated, with the count and the first divergence time
    finding = next(v for v in verdicts if v.check == "oracle/divergence/staleness=1")
    assert finding.verdict == VIOLATED and finding.observed == 60
    assert "unstable" in finding.detail and "the first at sample" in finding.detail
    # the moment checks at τ = 1 have no replicates left: inconclusive, never a pass
    at_one = [v for v in verdicts if v.check.endswith("staleness=1") and v is not finding]
    assert at_one and all(v.verdict == INCONCLUSIVE for v in at_one)
    # the rate design runs at C τ^(-2/3) L^(-1/3) too: its divergence is a finding as well
    design = next(v for v in verdicts if v.check == "oracle/divergence/rate-design")
    assert design.verdict == VIOLATED and "diverged" in design.detail
    assert not [v for v in verdicts if v.kind == "rate" and v.verdict == HOLDS]
    json.dumps([v.to_dict() for v in verdicts])  # still serialisable


def test_some_diverged_replicates_are_left_out_not_silencing_the_rest(experiment,
                                                                        small_result):
    """One replicate marked diverged where the recursion is stable: a violated divergence
    finding for that τ, and the other checks judge the remaining replicates."""
    ds = small_result.copy(deep=True)
    ds["diverged_at"].loc[{"staleness": 5, "replicate": 3}] = 17
    ds["estimate"].loc[{"staleness": 5, "replicate": 3}] = np.nan
    verdicts = {v.check: v for v in experiment.checks(ds)}
    finding = verdicts["oracle/divergence/staleness=5"]
    assert finding.verdict == VIOLATED and "although the exact recursion is stable" in \
        finding.detail and "the first at sample 17" in finding.detail
    assert verdicts["oracle/theta/mean/staleness=1"].verdict == HOLDS
    assert verdicts["invariance/mse/theta_squared"].verdict != INCONCLUSIVE
    assert "1 at staleness = 5" in verdicts["invariance/mse/theta_squared"].detail


@pytest.mark.parametrize("overrides, field", [
    ({"step_size_constant": 0.0}, "step_size"),  # the derived step, evaluated per point
    ({"step_size_constant": -1.0}, "step_size"),
    ({"staleness": [1, -2]}, "staleness[1]"),
    ({"n_replicates": 1}, "n_replicates"),
    ({"sampler": "hmc"}, "sampler"),
    ({"replacement": "yes"}, "replacement"),
    ({"no_such_key": 1}, "no_such_key"),
])
def test_bad_configuration_names_the_field(experiment, overrides, field):
    with pytest.raises(InvalidParameter) as error:
        experiment.configure(overrides)
    assert error.value.field == field
