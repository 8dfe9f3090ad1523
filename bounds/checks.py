"""The check engine: every kind of check that judges Monte Carlo measurements against theory.

- oracle: an estimate agrees with an exact value within ``z`` Monte Carlo standard errors;
- invariance: values the theory says are equal agree with their precision-weighted mean;
- slope: a fitted log-log slope (with its standard error) against a predicted exponent;
- rate (:mod:`bounds.rate`): a log-log slope, with a CI from resampling replicates, is at
  least as steep as a bound's exponent;
- envelope (:mod:`bounds.envelope`): a bound's terms with constants fitted on part of a grid
  stay above the measurements on the rest;
- speed-up (:mod:`bounds.speedup`): iteration speed-up ≈ number of workers, time speed-up
  reported beside it.

Every check returns :class:`bounds.verdict.Verdict`; non-finite inputs (a diverged chain, an
unstable recursion) make it ``inconclusive`` with the reason, never a crash or a silent pass.
"""

from __future__ import annotations

import math

import numpy as np

from bounds.envelope import Envelope, envelope_check, fit_envelope
from bounds.rate import loglog_slope, rate_check
from bounds.speedup import speedup_check
from bounds.verdict import HOLDS, INCONCLUSIVE, VIOLATED, Verdict, two_sided_rate

__all__ = ["Envelope", "envelope_check", "fit_envelope", "invariance_check", "loglog_slope",
           "oracle_check", "rate_check", "slope_check", "speedup_check"]


def oracle_check(check: str, observed: float, mc_error: float, expected: float, z: float,
                 detail: str = "", evidence: dict | None = None) -> Verdict:
    """Holds when |observed - expected| <= z · mc_error."""
    observed, mc_error, expected = float(observed), float(mc_error), float(expected)
    evidence = dict(evidence or {})
    rate = two_sided_rate(z)
    if not all(math.isfinite(v) for v in (observed, mc_error, expected)):
        return Verdict(check, "oracle", INCONCLUSIVE, observed, expected, mc_error, math.nan,
                       z, rate, detail or "non-finite estimate or exact value", evidence)
    gap = abs(observed - expected)
    margin = z * mc_error - gap
    evidence["z_score"] = gap / mc_error if mc_error > 0 else (0.0 if gap == 0 else math.inf)
    verdict = HOLDS if margin >= 0 else VIOLATED
    return Verdict(check, "oracle", verdict, observed, expected, mc_error, margin, z, rate,
                   detail, evidence)


def invariance_check(check: str, values, errors, labels, z: float, detail: str = "",
                     evidence: dict | None = None) -> Verdict:
    """Holds when every value agrees with the precision-weighted mean within z errors.

    The deviation of value i from the weighted mean v̄ has variance e_i² - 1/Σ_j e_j⁻², which
    is what each deviation is scaled by. Observed is the largest deviation, expected 0.
    """
    values = np.asarray(values, dtype=float)
    errors = np.asarray(errors, dtype=float)
    evidence = dict(evidence or {})
    evidence.update({"labels": list(labels), "values": values.tolist(),
                     "errors": errors.tolist()})
    rate = two_sided_rate(z)
    usable = np.isfinite(values) & np.isfinite(errors) & (errors > 0)
    if values.size < 2 or not np.all(usable):
        return Verdict(check, "invariance", INCONCLUSIVE, math.nan, 0.0, math.nan, math.nan, z,
                       rate, detail or "needs two or more finite values with positive errors",
                       evidence)
    weights = errors**-2
    pooled = float(np.sum(weights * values) / np.sum(weights))
    deviation_error = np.sqrt(np.maximum(errors**2 - 1 / np.sum(weights), 0.0))
    deviations = values - pooled
    with np.errstate(divide="ignore", invalid="ignore"):
        scores = np.abs(deviations) / deviation_error
    worst = int(np.nanargmax(scores))
    chi2 = float(np.sum(weights * deviations**2))
    evidence.update({"pooled": pooled, "z_scores": scores.tolist(), "chi2": chi2,
                     "dof": int(values.size - 1), "worst": labels[worst],
                     "ratio_max_min": float(values.max() / values.min()) if values.min() > 0
                     else math.nan})
    margin = z * float(deviation_error[worst]) - abs(float(deviations[worst]))
    verdict = HOLDS if scores[worst] <= z else VIOLATED
    return Verdict(check, "invariance", verdict, float(deviations[worst]), 0.0,
                   float(deviation_error[worst]), margin, z, rate, detail, evidence)


def slope_check(check: str, x, y, y_errors, expected_slope: float, z: float, detail: str = "",
                evidence: dict | None = None) -> Verdict:
    """Holds when the fitted log-log slope equals ``expected_slope`` within z standard errors."""
    x, y, y_errors = (np.asarray(a, dtype=float) for a in (x, y, y_errors))
    evidence = dict(evidence or {})
    evidence.update({"x": x.tolist(), "y": y.tolist(), "y_errors": y_errors.tolist()})
    rate = two_sided_rate(z)
    usable = np.isfinite(y) & np.isfinite(y_errors) & (y > 0) & (y_errors > 0)
    if usable.sum() < 3:
        return Verdict(check, "slope", INCONCLUSIVE, math.nan, expected_slope, math.nan,
                       math.nan, z, rate, detail or "needs three or more positive finite values",
                       evidence)
    slope, error, intercept = loglog_slope(x[usable], y[usable], y_errors[usable])
    evidence.update({"intercept": intercept, "slope_ci": [slope - z * error, slope + z * error]})
    margin = z * error - abs(slope - expected_slope)
    verdict = HOLDS if margin >= 0 else VIOLATED
    return Verdict(check, "slope", verdict, slope, expected_slope, error, margin, z, rate,
                   detail, evidence)
