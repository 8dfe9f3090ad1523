"""Bias, MSE and variance estimators and their standard errors."""

import numpy as np
import pytest
import xarray as xr
from scipy import stats

from workbench.stats.estimators import summarize


def test_summaries_match_their_definitions():
    values = np.array([1.0, 2.0, 4.0, 7.0])
    summary = summarize(xr.DataArray(values, dims="replicate"), 3.0)
    assert summary["bias"] == pytest.approx(values.mean() - 3.0)
    assert summary["mse"] == pytest.approx(np.mean((values - 3.0) ** 2))
    assert summary["variance"] == pytest.approx(values.var(ddof=1))
    assert summary["bias_se"] == pytest.approx(values.std(ddof=1) / 2)
    assert int(summary["n_valid"]) == 4
    # MSE = bias² + (R - 1)/R · variance holds exactly for the plug-in estimates
    assert summary["mse"] == pytest.approx(summary["bias"] ** 2 + 0.75 * summary["variance"])


def test_variance_standard_error_is_right_for_gaussian_samples():
    # For Gaussian data the error of a sample variance is σ² √(2/(R-1)); the distribution-free
    # formula must agree within a few percent at R = 100,000.
    rng = np.random.default_rng(1)
    sample = xr.DataArray(rng.normal(0.0, 2.0, 100_000), dims="replicate")
    summary = summarize(sample, 0.0)
    assert float(summary["variance_se"]) == pytest.approx(4.0 * np.sqrt(2 / 99_999), rel=0.03)


def test_diverged_replicates_are_excluded_and_counted():
    values = xr.DataArray([[1.0, np.nan, 3.0], [np.nan, np.nan, np.nan]],
                          dims=("point", "replicate"))
    summary = summarize(values, 2.0)
    assert summary["n_valid"].values.tolist() == [2, 0]
    assert float(summary["bias"][0]) == pytest.approx(0.0)
    assert np.isnan(summary["mse"][1])


def test_interval_has_the_stated_coverage():
    # 2,000 repetitions of R = 50 standard normals: the 95% Student-t bias interval is exact
    # here, so it covers 0 in a binomial(2000, 0.95) number of cases; 4.4 standard errors
    # (false-failure rate 1e-5).
    rng = np.random.default_rng(2)
    draws = xr.DataArray(rng.standard_normal((2000, 50)), dims=("repeat", "replicate"))
    summary = summarize(draws, 0.0, confidence=0.95)
    covered = float(((summary["bias_lower"] <= 0) & (summary["bias_upper"] >= 0)).mean())
    assert abs(covered - 0.95) < 4.4 * np.sqrt(0.95 * 0.05 / 2000)


def _skewed_replicates():
    """8,000 repetitions of R = 100 skewed values (standardised χ²₂₀, skewness 0.63, excess
    kurtosis 0.6, like φ̂(θ²) over stale-gaussian's replicates) shifted by a bias of 0.5:
    true bias 0.5, variance 1, MSE 1.25."""
    rng = np.random.default_rng(11)
    values = (rng.chisquare(20, (8000, 100)) - 20) / np.sqrt(40) + 0.5
    return summarize(xr.DataArray(values, dims=("repeat", "replicate")), 0.0)


def _coverage(summary, lower, upper, value):
    return float(((summary[lower] <= value) & (value <= summary[upper])).mean())


@pytest.mark.parametrize("quantity, value", [("bias", 0.5), ("mse", 1.25), ("variance", 1.0)])
def test_calibrated_intervals_reach_nominal_coverage_on_skewed_replicates(quantity, value):
    # Target: within 1.5 points of 95 %. The binomial error of 8,000 intervals is 0.0024, so a
    # method at 94.5 % leaves the band with probability about 1e-4 (z = 4.2).
    coverage = _coverage(_skewed_replicates(), f"{quantity}_lower", f"{quantity}_upper", value)
    assert 0.935 <= coverage <= 0.965, coverage


@pytest.mark.parametrize("quantity, value", [("mse", 1.25), ("variance", 1.0)])
def test_symmetric_intervals_undercover_on_the_same_replicates(quantity, value):
    """Negative control: value ± z·SE (the previous method) misses the band on these data
    (about 92 %), so the calibrated-interval test above can tell the methods apart."""
    summary = _skewed_replicates()
    z = 1.959964
    summary["naive_lower"] = summary[quantity] - z * summary[f"{quantity}_se"]
    summary["naive_upper"] = summary[quantity] + z * summary[f"{quantity}_se"]
    assert _coverage(summary, "naive_lower", "naive_upper", value) < 0.935


def test_intervals_ignore_diverged_replicates_and_the_variance_falls_back_below_five():
    values = np.random.default_rng(3).normal(size=40)
    padded = np.concatenate([values, np.full(10, np.nan)])
    clean = summarize(xr.DataArray(values, dims="replicate"), 0.0)
    with_nan = summarize(xr.DataArray(padded, dims="replicate"), 0.0)
    for name in ("variance_lower", "variance_upper", "mse_lower", "mse_upper", "bias_lower"):
        assert float(with_nan[name]) == pytest.approx(float(clean[name]), rel=1e-12)
    few_values = [0.1, -0.4, 0.9, 0.3]
    few = summarize(xr.DataArray(few_values, dims="replicate"), 0.0)
    s2 = np.var(few_values, ddof=1)
    assert float(few["variance_lower"]) == pytest.approx(3 * s2 / stats.chi2.isf(0.025, 3))
    assert float(few["variance_upper"]) == pytest.approx(3 * s2 / stats.chi2.ppf(0.025, 3))
