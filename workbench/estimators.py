"""Bias, MSE and variance of φ̂ over replicates, with confidence intervals (math.md §1).

For R independent replicates φ̂⁽ʳ⁾ and the posterior value φ̄:

- bias = mean(φ̂) - φ̄, standard error s/√R (s the sample standard deviation);
- MSE = mean((φ̂ - φ̄)²), standard error sd((φ̂ - φ̄)²)/√R;
- variance = s² (divisor R - 1), standard error √((m₄ - s⁴ (R - 3)/(R - 1)) / R) with m₄ the
  fourth central sample moment: the distribution-free large-sample error of a sample
  variance, which stays right when φ̂ is not Gaussian (φ = θ², minibatch noise).

Intervals are value ± z·SE with z for the stated confidence (normal approximation, justified by
the central limit theorem over replicates; R is in the hundreds). MSE and variance intervals
are clipped at 0. Replicates that diverged are NaN and excluded; ``n_valid`` counts the rest.
"""

from __future__ import annotations

import warnings

import numpy as np
import xarray as xr
from scipy import stats


def summarize(estimates: xr.DataArray, truth, dim: str = "replicate",
              confidence: float = 0.95) -> xr.Dataset:
    """Bias, MSE and variance of ``estimates`` along ``dim`` with their errors and intervals."""
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must lie in (0, 1), got {confidence}")
    z = float(stats.norm.isf((1 - confidence) / 2))
    with np.errstate(all="ignore"), warnings.catch_warnings():
        # All-NaN slices (every replicate diverged) give NaN summaries, which is the answer.
        warnings.simplefilter("ignore", RuntimeWarning)
        return _summarize(estimates, truth, dim, confidence, z)


def _summarize(estimates: xr.DataArray, truth, dim: str, confidence: float,
               z: float) -> xr.Dataset:
    n_valid = estimates.count(dim)
    n = n_valid.where(n_valid > 0)
    mean = estimates.mean(dim)
    spread = estimates.std(dim, ddof=1)
    error = estimates - truth
    squared = error**2
    centred = estimates - mean
    variance = estimates.var(dim, ddof=1)
    fourth = (centred**4).mean(dim)
    variance_se = np.sqrt(np.maximum(fourth - variance**2 * (n - 3) / (n - 1), 0.0) / n)
    bias = mean - truth
    bias_se = spread / np.sqrt(n)
    mse = squared.mean(dim)
    mse_se = squared.std(dim, ddof=1) / np.sqrt(n)
    out = xr.Dataset({
        "mean": mean,
        "bias": bias, "bias_se": bias_se,
        "bias_lower": bias - z * bias_se, "bias_upper": bias + z * bias_se,
        "mse": mse, "mse_se": mse_se,
        "mse_lower": np.maximum(mse - z * mse_se, 0.0), "mse_upper": mse + z * mse_se,
        "variance": variance, "variance_se": variance_se,
        "variance_lower": np.maximum(variance - z * variance_se, 0.0),
        "variance_upper": variance + z * variance_se,
        "n_valid": n_valid,
    })
    out.attrs["confidence"] = confidence
    out.attrs["interval_method"] = "normal approximation, value ± z·SE (see workbench.estimators)"
    return out
