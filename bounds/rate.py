"""Rate checks: does a measured quantity decay at least as fast as a bound's exponent?

A bound O(L^p) predicts that the measured quantity falls at least like L^p: the fitted slope
of log(quantity) on log L must not be shallower than p. The quantity at each grid point is a
statistic of per-replicate values — the mean of per-replicate squared errors for an MSE, the
sample variance of per-replicate estimates for a variance — and the slope is the ordinary
least-squares slope of log statistic on log x.

Its uncertainty comes from resampling replicates (the bootstrap over replicates of the
per-replicate values): each of ``n_resamples`` resamples draws the replicates with replacement
— independently at each x when the points are independent runs, with the same draw at every x
when they are checkpoints of the same runs (``paired``), so their correlation is kept — and
recomputes the statistic and the slope. The bootstrap standard error gives the one-sided test
(violated when slope − p > z·se); the delta-method error of a weighted fit is reported beside
it, with a 95% percentile interval.
"""

from __future__ import annotations

import math

import numpy as np

from bounds.verdict import HOLDS, INCONCLUSIVE, VIOLATED, Verdict, one_sided_rate

STATISTICS = {
    "mean": lambda values: values.mean(axis=-1),
    "variance": lambda values: values.var(axis=-1, ddof=1),
}
_RESAMPLE_CHUNK = 250


def ols_slopes(log_x: np.ndarray, log_y: np.ndarray) -> np.ndarray:
    """Least-squares slopes of log_y (..., n) on log_x (n,), vectorised over leading axes."""
    centred = log_x - log_x.mean()
    return ((log_y - log_y.mean(axis=-1, keepdims=True)) @ centred) / (centred @ centred)


def bootstrap_slopes(x, samples, statistic: str, rng: np.random.Generator, n_resamples: int,
                     paired: bool) -> tuple[float, np.ndarray, np.ndarray]:
    """(slope, resampled slopes, resampled statistics (n_resamples, n_x))."""
    measure = STATISTICS[statistic]
    log_x = np.log(np.asarray(x, dtype=float))
    samples = np.asarray(samples, dtype=float)
    n_x, n_replicates = samples.shape
    slope = float(ols_slopes(log_x, np.log(measure(samples))))
    statistics = []
    for start in range(0, n_resamples, _RESAMPLE_CHUNK):
        count = min(_RESAMPLE_CHUNK, n_resamples - start)
        if paired:
            index = rng.integers(0, n_replicates, size=(count, n_replicates))
            drawn = samples[:, index]  # (n_x, count, R)
        else:
            index = rng.integers(0, n_replicates, size=(n_x, count, n_replicates))
            drawn = np.take_along_axis(samples[:, None, :], index, axis=2)
        statistics.append(measure(drawn).T)  # (count, n_x)
    statistics = np.concatenate(statistics)
    with np.errstate(divide="ignore", invalid="ignore"):
        slopes = ols_slopes(log_x, np.log(statistics))
    return slope, slopes, statistics


def loglog_slope(x, y, y_errors) -> tuple[float, float, float]:
    """Weighted least-squares slope of log y on log x, its standard error and intercept.

    The error of log y_i is taken as y_errors_i / y_i (delta method).
    """
    x, y, y_errors = (np.asarray(a, dtype=float) for a in (x, y, y_errors))
    log_x, log_y = np.log(x), np.log(y)
    weights = (y / y_errors) ** 2
    design = np.stack([np.ones_like(log_x), log_x], axis=1)
    normal = design.T @ (weights[:, None] * design)
    covariance = np.linalg.inv(normal)
    intercept, slope = covariance @ design.T @ (weights * log_y)
    return float(slope), float(math.sqrt(covariance[1, 1])), float(intercept)


def rate_check(check: str, x, samples, expected_exponent: float, z: float,
               rng: np.random.Generator, *, statistic: str = "mean", paired: bool = False,
               n_resamples: int = 2000, detail: str = "",
               evidence: dict | None = None) -> Verdict:
    """Holds unless the slope is shallower than ``expected_exponent`` by more than z·se.

    samples: ``(n_x, R)`` per-replicate values at each x (module docstring); a replicate
    with a non-finite value (diverged) makes the check inconclusive.
    """
    if statistic not in STATISTICS:
        raise ValueError(f"statistic must be one of {list(STATISTICS)}, got {statistic!r}")
    x = np.asarray(x, dtype=float)
    samples = np.asarray(samples, dtype=float)
    if samples.ndim != 2 or samples.shape[0] != x.size:
        raise ValueError(f"samples must have shape (len(x), replicates), got {samples.shape}")
    evidence = dict(evidence or {})
    evidence.update({"x": x.tolist(), "statistic": statistic, "paired": paired,
                     "n_resamples": n_resamples, "n_replicates": int(samples.shape[1])})
    rate = one_sided_rate(z)
    expected_exponent = float(expected_exponent)
    values = STATISTICS[statistic](samples)
    problem = ("needs three or more grid points" if x.size < 3 else
               "non-finite replicate values (diverged chains)" if not np.all(np.isfinite(samples))
               else "the statistic is not positive everywhere" if not np.all(values > 0)
               else "")
    if problem:
        return Verdict(check, "rate", INCONCLUSIVE, math.nan, expected_exponent, math.nan,
                       math.nan, z, rate, f"{detail} ({problem})".strip(), evidence)
    slope, slopes, statistics = bootstrap_slopes(x, samples, statistic, rng, n_resamples,
                                                 paired)
    error = float(np.std(slopes, ddof=1))
    statistic_errors = statistics.std(axis=0, ddof=1)
    margin = z * error - (slope - expected_exponent)
    evidence.update({
        "values": values.tolist(), "value_errors": statistic_errors.tolist(),
        "bootstrap_se": error,
        "delta_method_se": loglog_slope(x, values, statistic_errors)[1],
        "percentile_interval_95": np.percentile(slopes, [2.5, 97.5]).tolist(),
        "slope_upper_limit": slope + z * error,
    })
    verdict = HOLDS if margin >= 0 else VIOLATED
    return Verdict(check, "rate", verdict, slope, expected_exponent, error, margin, z, rate,
                   detail, evidence)
