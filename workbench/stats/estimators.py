"""Bias, MSE and variance of φ̂ over replicates, with calibrated confidence intervals.

For R independent replicates φ̂⁽ʳ⁾ and the posterior value φ̄:

- bias = mean(φ̂) - φ̄, standard error s/√R (s the sample standard deviation);
- MSE = mean((φ̂ - φ̄)²), standard error sd((φ̂ - φ̄)²)/√R;
- variance = s² (divisor R - 1), standard error √((m₄ - s⁴ (R - 3)/(R - 1)) / R) with m₄ the
  fourth central sample moment: the distribution-free large-sample error of a sample
  variance, which stays right when φ̂ is not Gaussian (φ = θ², minibatch noise).

The standard errors are what the checks use (on a log scale for MSEs and variances, see
:mod:`bounds.equivalence`). The stored intervals are built to reach their nominal coverage at
the replicate counts the experiments use (R of 100 to 200), where value ± z·SE does not: the
MSE is a mean of skewed squared errors and a sample variance is skewed, so symmetric
intervals miss mostly on the low side (measured: 90-93 % for a nominal 95 %).

- **bias**: Student's t interval, bias ± t_{R-1}·SE.
- **MSE**: Hall's (1992) skewness-removing transformation of the t statistic of the mean of
  the squared errors q: with γ̂ the sample skewness of q, a = γ̂/(3√R) and b = γ̂/(6√R),
  T(t) = t + a t² + a² t³/3 + b is monotone and its inverse is closed-form,
  T⁻¹(u) = ((1 + 3a(u - b))^(1/3) - 1)/a; the interval is
  [q̄ - T⁻¹(t_{1-α/2}) SE, q̄ - T⁻¹(t_{α/2}) SE] (P. Hall, J. R. Statist. Soc. B 54, 1992).
- **variance**: Bonett's (2006) log-scale interval with a kurtosis estimate:
  exp(ln(c s²) ± z c √((γ̂₄ - (R - 3)/R)/(R - 1))), c = R/(R - z), γ̂₄ = R Σ(φ̂ - m)⁴/(Σ(φ̂ - φ̄̂)²)²
  with m the mean trimmed by 1/(2√(R - 4)) at each end (D. G. Bonett, Comput. Statist. Data
  Anal. 50, 2006). Below R = 5 valid replicates it falls back to the normal-theory χ²
  interval.

``benchmarks/interval_coverage.py`` measures their coverage against the exact oracle of
``stale-gaussian`` over many seeds. MSE and variance intervals are clipped at 0. Replicates
that diverged are NaN and excluded; ``n_valid`` counts the rest.
"""

from __future__ import annotations

import warnings

import numpy as np
import xarray as xr
from scipy import stats

INTERVAL_METHOD = ("bias: Student t; MSE: Hall (1992) transformation of the mean of squared "
                   "errors; variance: Bonett (2006) log-scale with trimmed kurtosis "
                   "(see workbench.stats.estimators)")


def summarize(estimates: xr.DataArray, truth, dim: str = "replicate",
              confidence: float = 0.95) -> xr.Dataset:
    """Bias, MSE and variance of ``estimates`` along ``dim`` with their errors and intervals."""
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must lie in (0, 1), got {confidence}")
    with np.errstate(all="ignore"), warnings.catch_warnings():
        # All-NaN slices (every replicate diverged) give NaN summaries, which is the answer.
        warnings.simplefilter("ignore", RuntimeWarning)
        return _summarize(estimates, truth, dim, confidence)


def _summarize(estimates: xr.DataArray, truth, dim: str, confidence: float) -> xr.Dataset:
    """The work of :func:`summarize`, on the arrays' variables.

    ``truth`` is aligned with ``estimates`` once (as their difference would align them); every
    later operation is on :class:`xarray.Variable` objects, which broadcast by dimension name
    and reduce with the same functions a DataArray does, without a DataArray's index
    alignment on each of the ~80 operations (most of the time here, issue 15).
    """
    coords = {name: coord for name, coord in estimates.coords.items() if dim not in coord.dims}
    if isinstance(truth, xr.DataArray):
        estimates, truth = xr.align(estimates, truth, join="inner")
        coords.update(truth.coords)
        coords = {name: estimates.coords[name] if name in estimates.coords else coord
                  for name, coord in coords.items() if dim not in coord.dims}
        truth = truth.variable
    values = estimates.variable
    n_valid = values.count(dim)
    n = n_valid.where(n_valid > 0)
    mean = values.mean(dim)
    spread = values.std(dim, ddof=1)
    error = values - truth
    squared = error**2
    centred = values - mean
    variance = values.var(dim, ddof=1)
    fourth = (centred**4).mean(dim)
    variance_se = np.sqrt(np.maximum(fourth - variance**2 * (n - 3) / (n - 1), 0.0) / n)
    bias = mean - truth
    bias_se = spread / np.sqrt(n)
    mse = squared.mean(dim)
    mse_se = squared.std(dim, ddof=1) / np.sqrt(n)
    t = xr.apply_ufunc(stats.t.isf, (1 - confidence) / 2, n - 1)
    mse_lower, mse_upper = _hall_interval(squared, dim, mse, mse_se, n, t)
    variance_lower, variance_upper = _bonett_interval(values, dim, variance, n, confidence)
    out = xr.Dataset({
        "mean": mean,
        "bias": bias, "bias_se": bias_se,
        "bias_lower": bias - t * bias_se, "bias_upper": bias + t * bias_se,
        "mse": mse, "mse_se": mse_se,
        "mse_lower": np.maximum(mse_lower, 0.0), "mse_upper": mse_upper,
        "variance": variance, "variance_se": variance_se,
        "variance_lower": variance_lower, "variance_upper": variance_upper,
        "n_valid": n_valid,
    }, coords=coords)
    out.attrs["confidence"] = confidence
    out.attrs["interval_method"] = INTERVAL_METHOD
    return out


def _hall_interval(values: xr.Variable, dim: str, mean, standard_error, n, t):
    """Hall's transformation interval for the mean of ``values`` (module docstring)."""
    spread = values.std(dim, ddof=1)
    skewness = ((values - mean) ** 3).mean(dim) / spread**3
    a = (skewness / (3 * np.sqrt(n))).fillna(0.0)
    b = (skewness / (6 * np.sqrt(n))).fillna(0.0)
    # a → 0 is the plain t interval; keep a away from 0 so the closed form stays finite
    a = xr.where(np.abs(a) < 1e-12, 1e-12, a)

    def inverse(u):
        return (np.cbrt(1 + 3 * a * (u - b)) - 1) / a

    return mean - inverse(t) * standard_error, mean - inverse(-t) * standard_error


def _bonett_interval(estimates: xr.Variable, dim: str, variance, n, confidence: float):
    """Bonett's log-scale interval for a variance (module docstring)."""
    z = float(stats.norm.isf((1 - confidence) / 2))
    trimmed = xr.apply_ufunc(_trimmed_mean, estimates, input_core_dims=[[dim]])
    squares = ((estimates - estimates.mean(dim)) ** 2).sum(dim)
    kurtosis = n * ((estimates - trimmed) ** 4).sum(dim) / squares**2
    c = n / (n - z)
    half_width = z * c * np.sqrt(np.maximum(kurtosis - (n - 3) / n, 0.0) / (n - 1))
    centre = np.log(c * variance)
    lower, upper = np.exp(centre - half_width), np.exp(centre + half_width)
    # fewer than 5 valid replicates: the trimming is undefined; normal-theory χ² interval
    dof = n - 1
    chi_lower = dof * variance / xr.apply_ufunc(stats.chi2.isf, (1 - confidence) / 2, dof)
    chi_upper = dof * variance / xr.apply_ufunc(stats.chi2.ppf, (1 - confidence) / 2, dof)
    few = n < 5
    return xr.where(few, chi_lower, lower), xr.where(few, chi_upper, upper)


def _trimmed_mean(values: np.ndarray) -> np.ndarray:
    """Mean of the last axis without NaNs, trimmed by ⌊p n⌋ values at each end,
    p = 1/(2√(n - 4)) for the n valid values (Bonett 2006); NaN where n < 5."""
    ordered = np.sort(values, axis=-1)  # NaNs last
    n = np.sum(~np.isnan(values), axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        cut = np.floor(n / (2 * np.sqrt(np.maximum(n - 4, 0)))).astype(np.int64)
    rank = np.arange(values.shape[-1])
    keep = (rank >= cut[..., None]) & (rank < (n - cut)[..., None])
    total = np.where(keep, ordered, 0.0).sum(axis=-1)
    count = keep.sum(axis=-1)
    return np.where((n >= 5) & (count > 0), total / np.maximum(count, 1), np.nan)
