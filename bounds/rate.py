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
recomputes the statistic and the slope. The bootstrap standard error enters the one-sided
three-way test of :mod:`bounds.equivalence` on d = slope − p against a margin (default 0.1):
``holds`` when d + z_holds·se ≤ margin, ``violated`` when d − z·se > margin. The delta-method
error of a weighted fit is reported beside it, with a 95% percentile interval. Replicates
with a non-finite value at some x (diverged chains) are left out, and counted.

A comparison target with its own error (a reference posterior's estimate in place of an exact
value, docs/verdicts.md) enters through ``target_error``: at each x, the statistic's
derivative with respect to the target times the target's standard error (signed). The target
is one estimate shared by every x, so its error moves all the statistics together: each
resample adds ε·target_error with one ε ~ N(0, 1) per resample (a parametric bootstrap of the
target beside the resampling of the replicates).
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
from scipy import stats

from bounds.equivalence import DEFAULT_MARGINS, decide, verdict_from
from bounds.sequential import GROWTH
from bounds.verdict import Verdict

STATISTICS = {
    "mean": lambda values: values.mean(axis=-1),
    "variance": lambda values: values.var(axis=-1, ddof=1),
}
_RESAMPLE_CHUNK = 250


def ols_slopes(log_x: np.ndarray, log_y: np.ndarray) -> np.ndarray:
    """Least-squares slopes of log_y (..., n) on log_x (n,), vectorised over leading axes; NaN
    where log_x does not vary (one grid value: no slope to fit)."""
    centred = log_x - log_x.mean()
    spread = centred @ centred
    products = (log_y - log_y.mean(axis=-1, keepdims=True)) @ centred
    if spread == 0:
        return np.full(np.shape(products), np.nan)[()]
    return products / spread


def bootstrap_statistics(samples, statistic: str, rng: np.random.Generator, n_resamples: int,
                         paired: bool) -> np.ndarray:
    """Resampled statistics ``(n_resamples, n_x)`` of ``samples`` ``(n_x, R)`` (module
    docstring: ``paired`` draws the same replicates at every x)."""
    measure = STATISTICS[statistic]
    samples = np.asarray(samples, dtype=float)
    n_x, n_replicates = samples.shape
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
    return np.concatenate(statistics)


def bootstrap_slopes(x, samples, statistic: str, rng: np.random.Generator, n_resamples: int,
                     paired: bool, target_error=None) -> tuple[float, np.ndarray, np.ndarray]:
    """(slope, resampled slopes, resampled statistics (n_resamples, n_x)); ``target_error``
    (n_x,) as in the module docstring."""
    log_x = np.log(np.asarray(x, dtype=float))
    samples = np.asarray(samples, dtype=float)
    slope = float(ols_slopes(log_x, np.log(STATISTICS[statistic](samples))))
    statistics = bootstrap_statistics(samples, statistic, rng, n_resamples, paired)
    if target_error is not None:
        shift = rng.standard_normal(n_resamples)[:, None] * np.asarray(target_error, float)
        statistics = statistics + shift
    with np.errstate(divide="ignore", invalid="ignore"):
        slopes = ols_slopes(log_x, np.log(statistics))
    return slope, slopes, statistics


def _not_positive(x, samples, values, statistic: str, z: float, rng: np.random.Generator,
                  n_resamples: int, paired: bool, target_error, evidence: dict
                  ) -> tuple[str, float]:
    """Why no slope is fitted where the statistic is not positive at some x (a power of x is
    positive everywhere), and the replicate factor that would decide it: where some value is
    shown negative (its upper end at ``z`` below 0), none, and ``evidence["cannot_decide"]``
    says so (a power law cannot describe the quantity there, so more replicates cannot
    decide the check as stated); otherwise the factor that would show the sign of every
    value not shown positive, after which the check either fits a slope or is shown
    undecidable. The values' errors are the bootstrap's (with the target's error, module
    docstring)."""
    statistics = bootstrap_statistics(samples, statistic, rng, n_resamples, paired)
    if target_error is not None:
        statistics = statistics + rng.standard_normal(n_resamples)[:, None] * target_error
    errors = statistics.std(axis=0, ddof=1)
    evidence.update({"values": values.tolist(), "value_errors": errors.tolist()})
    at = list(np.flatnonzero(values <= 0))
    where = "; ".join(f"x = {x[i]:.4g}: {values[i]:.3g} ± {errors[i]:.2g}" for i in at)
    negative = [i for i in at if values[i] + z * errors[i] < 0]
    if negative:
        shown = ", ".join(f"{x[i]:.4g}" for i in negative)
        evidence["cannot_decide"] = (
            f"the {statistic} is shown negative at x = {shown} (z = {z:.3g}): no power of x "
            "describes it there, so no slope is fitted, whatever the replicates")
        return (f"the {statistic} is not positive everywhere ({where}); "
                f"{evidence['cannot_decide']}", math.inf)
    factor = _sign_factor(values, errors, z)
    return (f"the {statistic} is not positive everywhere ({where}), its sign not shown; about "
            f"{factor:.3g} times the replicates would show the sign of every value not shown "
            "positive", factor)


def resampled_reach(z: float, n_resamples: int) -> float:
    """How many errors above 0 a value must lie for none of ``n_resamples`` bootstrap
    resamples to cross 0 more often than not: the chance that none does is about
    exp(−n Φ(−r)), one half at r = Φ⁻¹(1 − ln 2 / n) (3.39 for 2000 resamples); at least the
    check's ``z``."""
    return max(float(z), float(stats.norm.isf(math.log(2) / n_resamples)))


def undefined_error(values: np.ndarray, errors: np.ndarray, reach: float) -> tuple[str, float]:
    """Why a slope whose resamples cross 0 has no error yet, and the replicate factor that
    would give it one: the factor that keeps every value above 0 by ``reach`` errors
    (:func:`resampled_reach`); where every value already is, the crossing is chance and the
    next look's replicates (:data:`bounds.sequential.GROWTH`) are asked."""
    factor = _sign_factor(values, errors, reach)
    if factor > 1:
        return (f"about {factor:.3g} times the replicates would keep every value above 0 by "
                f"{reach:.3g} errors, where a resample crosses 0 less often than not", factor)
    return (f"every value is above 0 by {reach:.3g} errors, so the crossing is chance and a "
            "larger run would likely define it", float(GROWTH))


def _sign_factor(values: np.ndarray, errors: np.ndarray, z: float) -> float:
    """The replicate factor that would show the sign of every value not shown positive at
    ``z`` (its lower end at or below 0): the largest (z·error/|value|)² among them (infinite
    for a value of exactly 0; 1 where every value is shown positive)."""
    unsure = np.flatnonzero(values - z * errors <= 0)
    return float(max(((z * errors[i] / abs(values[i])) ** 2 if values[i] != 0 else math.inf)
                     for i in unsure)) if unsure.size else 1.0


def loglog_slope(x, y, y_errors, log_covariance=None) -> tuple[float, float, float]:
    """Weighted least-squares slope of log y on log x, its standard error and intercept.

    The error of log y_i is taken as y_errors_i / y_i (delta method), and the weights are its
    inverse squares. Its standard error assumes the errors independent; given
    ``log_covariance`` (the covariance matrix of log y, e.g. from a paired bootstrap when the
    values share random numbers) it is the sandwich A Σ Aᵀ of the same weighted fit
    (A = (XᵀWX)⁻¹XᵀW), which counts the correlation without fitting weights to an estimated
    covariance (generalised least squares with a covariance estimated from the same
    replicates understates its own error).
    """
    x, y, y_errors = (np.asarray(a, dtype=float) for a in (x, y, y_errors))
    log_x, log_y = np.log(x), np.log(y)
    with np.errstate(divide="ignore"):  # an error of 0 only beside a covariance
        weights = (y / y_errors) ** 2
    if log_covariance is not None and not np.all(np.isfinite(weights)):
        weights = np.ones_like(log_y)  # values without error of their own: equal weights
    design = np.stack([np.ones_like(log_x), log_x], axis=1)
    normal = design.T @ (weights[:, None] * design)
    covariance = np.linalg.inv(normal)
    intercept, slope = covariance @ design.T @ (weights * log_y)
    if log_covariance is not None:
        fit = covariance @ design.T * weights  # (intercept, slope) = fit @ log y
        covariance = fit @ np.asarray(log_covariance, dtype=float) @ fit.T
    return float(slope), float(math.sqrt(max(covariance[1, 1], 0.0))), float(intercept)


def rate_check(check: str, x, samples, expected_exponent: float, z: float,
               rng: np.random.Generator, *, statistic: str = "mean", paired: bool = False,
               n_resamples: int = 2000, margin: float | None = None,
               z_holds: float | None = None, detail: str = "",
               evidence: dict | None = None, target_error=None) -> Verdict:
    """The slope is at most ``margin`` shallower than ``expected_exponent`` (module docstring).

    samples: ``(n_x, R)`` per-replicate values at each x; replicates with a non-finite value
    anywhere (diverged) are left out and counted in the evidence.
    target_error: ``(n_x,)`` signed error of the statistic through the comparison target's own
    error (module docstring), or None for an exact target.
    """
    if statistic not in STATISTICS:
        raise ValueError(f"statistic must be one of {list(STATISTICS)}, got {statistic!r}")
    x = np.asarray(x, dtype=float)
    samples = np.asarray(samples, dtype=float)
    if samples.ndim != 2 or samples.shape[0] != x.size:
        raise ValueError(f"samples must have shape (len(x), replicates), got {samples.shape}")
    width = DEFAULT_MARGINS["rate"].size if margin is None else margin
    kept = np.all(np.isfinite(samples), axis=0)
    left_out = int(samples.shape[1] - kept.sum())
    samples = samples[:, kept]
    evidence = dict(evidence or {})
    evidence.update({"x": x.tolist(), "statistic": statistic, "paired": paired,
                     "n_resamples": n_resamples, "n_replicates": int(samples.shape[1]),
                     "replicates_left_out": left_out})
    if target_error is not None:
        target_error = np.asarray(target_error, dtype=float)
        if target_error.shape != x.shape or not np.all(np.isfinite(target_error)):
            raise ValueError(f"target_error must be {x.size} finite values, got {target_error}")
        evidence["target_error"] = target_error.tolist()
    if left_out:
        detail = f"{detail} ({left_out} diverged replicates left out)".strip()
    expected_exponent = float(expected_exponent)
    values = STATISTICS[statistic](samples) if samples.shape[1] > 1 else np.full(x.size, np.nan)
    problem = ("needs three or more grid points" if x.size < 3 else
               "fewer than two finite replicates" if samples.shape[1] < 2 else "")
    decision = decide(np.nan, np.nan, width, z, one_sided=True)
    if not problem and not np.all(values > 0):
        problem, factor = _not_positive(x, samples, values, statistic, z, rng, n_resamples,
                                        paired, target_error, evidence)
        decision = replace(decision, replicate_factor=factor)
    if problem:
        return verdict_from(check, "rate", decision, np.nan, expected_exponent, z, "slope",
                            n_replicates=int(samples.shape[1]),
                            detail=f"{detail} ({problem})".strip(), evidence=evidence)
    slope, slopes, statistics = bootstrap_slopes(x, samples, statistic, rng, n_resamples,
                                                 paired, target_error)
    error = float(np.std(slopes, ddof=1))
    undefined = int(np.count_nonzero(~np.isfinite(slopes)))
    statistic_errors = statistics.std(axis=0, ddof=1)
    evidence.update({
        "values": values.tolist(), "value_errors": statistic_errors.tolist(),
        "bootstrap_se": error,
        "delta_method_se": loglog_slope(x, values, statistic_errors)[1],
        "percentile_interval_95": np.percentile(slopes, [2.5, 97.5]).tolist(),
        "slope_upper_limit": slope + z * error,
    })
    decision = decide(slope - expected_exponent, error, width, z, z_holds=z_holds,
                      one_sided=True)
    if undefined:
        why, factor = undefined_error(values, statistic_errors, resampled_reach(z, n_resamples))
        decision = replace(decision, replicate_factor=factor)
        detail = (f"{detail} ({undefined} of {n_resamples} resamples give a statistic <= 0 "
                  f"somewhere: the slope's error is undefined; {why})").strip()
    return verdict_from(check, "rate", decision, slope, expected_exponent, z, "slope",
                        n_replicates=int(samples.shape[1]), detail=detail, evidence=evidence)
