"""The Sampler playground: live replays agree with the exact oracle; divergence is a message;
the charts draw the traces, the estimate with its interval and the oracle beside it."""

import numpy as np
import pytest
from scipy import stats

from simulators.seeding import generator
from simulators.validation import InvalidParameter
from workbench.explore.playground import (
    PlaygroundSettings,
    estimate_chart,
    interval,
    run,
    trace_chart,
)
from workbench.models.full_data import FullDataGradient
from workbench.models.gaussian import GaussianMeanModel

from .test_charts import layer_of, legend_fields, spec_and_rows, tooltip_fields

# Two comparisons per run (φ = θ and θ²), two-sided, family-wise false-failure rate 1e-3.
FALSE_FAILURE_RATE = 1e-3
Z = float(stats.norm.isf(FALSE_FAILURE_RATE / 4))  # 3.48


@pytest.mark.parametrize("sampler, schedule", [("sgld", "constant"),
                                               ("sghmc-splitting", "uniform"),
                                               ("sgld", "async")])
def test_estimates_agree_with_the_exact_oracle(sampler, schedule):
    result = run(PlaygroundSettings(sampler=sampler, schedule=schedule, n_replicates=200,
                                    n_updates=2000, n_workers=3))
    assert result.exact_mean is not None and result.n_diverged == 0
    last = result.estimates.isel(checkpoint=-1)
    exact = result.exact_mean.isel(checkpoint=-1)
    scores = np.abs(last["mean"] - exact) / last["bias_se"]
    assert float(scores.max()) <= Z, scores.values


SHARDED = {"model": "sharded-gaussian-mean", "schedule": "federated"}


@pytest.mark.parametrize("estimator", ["dsgld", "fsgld"])
def test_federated_estimates_agree_with_the_exact_oracle_given_the_schedule(estimator):
    """Replicates share the schedule and are independent given it: the sharded oracle's
    conditional E φ̂_L is what their mean estimates."""
    result = run(PlaygroundSettings(**SHARDED, estimator=estimator, n_replicates=200, dim=2,
                                    n_updates=3000, local_updates=20))
    assert result.exact_mean is not None and result.n_diverged == 0 and result.stable
    assert result.mean_staleness == 0.0
    last = result.estimates.isel(checkpoint=-1)
    exact = result.exact_mean.isel(checkpoint=-1)
    scores = np.abs(last["mean"] - exact) / last["bias_se"]
    # two test functions × two coordinates: Bonferroni over four comparisons
    z = float(stats.norm.isf(FALSE_FAILURE_RATE / 8))
    assert float(scores.max()) <= z, scores.values
    if estimator == "dsgld":  # negative control: DSGLD is not sampling the posterior
        posterior = np.abs(last["mean"] - result.posterior_value) / last["bias_se"]
        assert float(posterior.max()) > z, posterior.values


def test_one_shard_fsgld_is_dsgld():
    """With a single client the conducive gradient ∇log q - ∇log q_1/1 vanishes."""
    dsgld, fsgld = (run(PlaygroundSettings(**SHARDED, estimator=e, n_shards=1))
                    for e in ("dsgld", "fsgld"))
    np.testing.assert_allclose(fsgld.traces, dsgld.traces, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(fsgld.exact_mean, dsgld.exact_mean, rtol=1e-9)


def test_federated_instability_is_a_message():
    result = run(PlaygroundSettings(**SHARDED, relative_step=2.5))
    assert not result.stable and result.n_diverged == 20
    assert "SGLD needs c < 2" in result.divergence_message()


def test_final_table_reports_the_summaries():
    result = run(PlaygroundSettings())
    rows = result.final_table()
    assert [r["test function"] for r in rows] == ["theta", "theta_squared"]
    theta = rows[0]
    last = result.estimates.sel(test_function="theta", component=0).isel(checkpoint=-1)
    assert theta["estimate"] == float(last["mean"])
    assert theta["interval low"] < theta["estimate"] < theta["interval high"]
    assert theta["posterior φ̄"] == pytest.approx(float(result.posterior_mean[0]))
    assert result.traces.shape == (20, 400, 1)


def test_zero_staleness_reduces_to_a_single_worker():
    """Constant staleness 0 and one asynchronous worker are the same fresh-gradient chain."""
    serial = run(PlaygroundSettings(schedule="constant", staleness=0))
    single = run(PlaygroundSettings(schedule="async", n_workers=1))
    np.testing.assert_array_equal(serial.traces, single.traces)
    assert serial.mean_staleness == single.mean_staleness == 0.0


def test_full_data_gradient_is_the_exact_gradient(scalar_model):
    gradient = FullDataGradient(scalar_model)
    position = np.linspace(-1, 1, 6).reshape(2, 3, 1)
    prepared = gradient.prepare(np.zeros((2, 3, 1), dtype=np.int64))
    np.testing.assert_allclose(gradient(position, prepared),
                               scalar_model.precision * (position - scalar_model.posterior_mean))
    every = scalar_model.minibatch_gradient()
    batch = every.prepare(np.arange(scalar_model.n_data)[None])
    np.testing.assert_allclose(every(position, batch[0]), gradient(position, prepared),
                               rtol=1e-12, atol=1e-9)


def test_full_data_runs_have_no_gradient_noise():
    result = run(PlaygroundSettings(gradient="full-data"))
    assert np.all(result.gradient_noise_variance == 0)


def test_divergence_is_a_message_not_an_exception():
    result = run(PlaygroundSettings(relative_step=1.5))
    assert result.n_diverged == 20 and not result.stable
    message = result.divergence_message()
    assert "20 of 20 replicates diverged" in message
    assert "2 sin(π/(2(2τ+1))) = 0.347" in message
    assert run(PlaygroundSettings()).divergence_message() == ""


def test_the_oracle_is_skipped_when_the_stacked_state_is_too_large():
    result = run(PlaygroundSettings(schedule="async", n_workers=12, n_updates=20_000,
                                    n_replicates=2))
    assert result.exact_mean is None
    assert "too large" in result.oracle_note
    assert np.isnan(result.final_table()[0]["exact E φ̂_L"])


@pytest.mark.parametrize("settings, field", [
    (PlaygroundSettings(n_replicates=1), "n_replicates"),
    (PlaygroundSettings(n_replicates=500), "n_replicates"),
    (PlaygroundSettings(n_updates=0), "n_updates"),
    (PlaygroundSettings(relative_step=0.0), "relative_step"),
    (PlaygroundSettings(staleness=64), "staleness"),
    (PlaygroundSettings(n_workers=0, schedule="async"), "n_workers"),
    (PlaygroundSettings(batch_size=0), "batch_size"),
    (PlaygroundSettings(sampler="hmc"), "sampler"),
    (PlaygroundSettings(schedule="federated"), "schedule"),
    (PlaygroundSettings(**SHARDED, sampler="sghmc-euler"), "sampler"),
    (PlaygroundSettings(**SHARDED, gradient="full-data"), "gradient"),
    (PlaygroundSettings(model="sharded-gaussian-mean", schedule="async"), "schedule"),
    (PlaygroundSettings(**SHARDED, n_shards=101), "n_shards"),
    (PlaygroundSettings(**SHARDED, estimator="sgld"), "estimator"),
    (PlaygroundSettings(**SHARDED, local_updates=0), "local_updates"),
])
def test_bad_settings_name_their_field(settings, field):
    with pytest.raises(InvalidParameter) as error:
        run(settings)
    assert error.value.field == field


def test_model_data_come_from_the_seed_tree():
    settings = PlaygroundSettings()
    expected = GaussianMeanModel.generate(generator(settings.seed, "playground", "data"),
                                          settings.n_data)
    result = run(settings)
    np.testing.assert_array_equal(result.posterior_mean, expected.posterior_mean)


def test_the_charts_draw_traces_the_estimate_its_interval_and_the_oracle():
    result = run(PlaygroundSettings(n_replicates=20, n_updates=500))
    spec, drawn = spec_and_rows(trace_chart(result, 0))
    assert (drawn["curve"] == "replicate 4").sum() == result.trace_iterations.size
    assert "replicate 5" not in set(drawn["curve"])  # the first five replicates only
    mean, sd = result.posterior_mean[0], np.sqrt(result.posterior_variance)
    [band] = drawn[drawn["style"] == "hband"].to_dict("records")
    assert (band["lower"], band["upper"]) == pytest.approx((mean - 2 * sd, mean + 2 * sd))
    assert drawn[drawn["style"] == "hrule"]["value"].tolist() == pytest.approx([mean])
    assert layer_of(spec, "line")["mark"]["type"] == "line" and legend_fields(spec)

    spec, drawn = spec_and_rows(estimate_chart(result, "theta_squared", 0))
    measured = layer_of(spec, "measured")
    assert measured["encoding"]["x"]["scale"]["type"] == "log"
    assert tooltip_fields(measured) == ["curve", "point", "x", "value", "lower", "upper",
                                        "reference"]
    assert "errorbar" in [layer["mark"]["type"] for layer in spec["layer"]]
    at = result.estimates.sel(test_function="theta_squared", component=0)
    rows = drawn[drawn["style"] == "measured"]
    assert rows["value"].tolist() == pytest.approx(at["mean"].values.tolist())
    assert rows["reference"].tolist() == pytest.approx(
        result.exact_mean.sel(test_function="theta_squared", component=0).values.tolist())
    low, high = interval(at)
    assert rows["lower"].tolist() == pytest.approx(low.values.tolist())
    assert rows["upper"].tolist() == pytest.approx(high.values.tolist())
    assert rows["point"].iloc[-1] == f"L = {result.iterations[-1]}"
    assert drawn[drawn["style"] == "hrule"]["value"].tolist() == pytest.approx(
        [float(result.posterior_value.sel(test_function="theta_squared", component=0))])
    assert legend_fields(spec) == [["curve"]]
