"""Bias, MSE and variance estimators and their standard errors."""

import numpy as np
import pytest
import xarray as xr

from workbench.estimators import summarize


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
    # 2,000 repetitions of R = 50 standard normals: the 95% bias interval covers 0 in a
    # binomial(2000, 0.95) number of cases; 4.4 standard errors (false-failure rate 1e-5).
    rng = np.random.default_rng(2)
    draws = xr.DataArray(rng.standard_normal((2000, 50)), dims=("repeat", "replicate"))
    summary = summarize(draws, 0.0, confidence=0.95)
    covered = float(((summary["bias_lower"] <= 0) & (summary["bias_upper"] >= 0)).mean())
    assert abs(covered - 0.95) < 4.4 * np.sqrt(0.95 * 0.05 / 2000) + 0.01  # + t-vs-z at R=50
