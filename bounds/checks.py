"""The check engine: every kind of check that judges Monte Carlo measurements against theory.

- oracle: an estimate agrees with an exact value within a margin;
- invariance: values the theory says are equal agree pairwise within a ratio margin;
- slope: a fitted log-log slope (with its standard error) against a predicted exponent;
- rate (:mod:`bounds.rate`): a log-log slope, with a CI from resampling replicates, is at
  least as steep as a bound's exponent;
- envelope (:mod:`bounds.envelope`): a bound's terms with constants fitted on part of a grid
  stay above the measurements on the rest;
- speed-up (:mod:`bounds.speedup`): iteration speed-up ≈ number of workers, time speed-up
  reported beside it;
- ordering: a predicted order between two measurements (one is larger); along a grid, one
  ordering per consecutive pair and where the order stops (:func:`ordering_sequence`).

Every check decides by the three-way equivalence test of :mod:`bounds.equivalence` against a
margin (a parameter; defaults per kind in :data:`bounds.equivalence.DEFAULT_MARGINS`) and
returns :class:`bounds.verdict.Verdict`. Non-finite inputs make it ``inconclusive`` with the
reason; callers that know *why* (a chain diverged where the recursion is stable) report that
as a ``violated`` finding of its own.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import replace

import numpy as np
from scipy import stats

from bounds.envelope import Envelope, envelope_check, fit_envelope
from bounds.equivalence import (
    DEFAULT_MARGINS,
    ErrorParts,
    decide,
    decide_all,
    sentences,
    verdict_from,
)
from bounds.rate import loglog_slope, rate_check
from bounds.speedup import speedup_check
from bounds.verdict import HOLDS, INCONCLUSIVE, Verdict, two_sided_rate

__all__ = ["Envelope", "envelope_check", "fit_envelope", "invariance_check", "loglog_slope",
           "oracle_check", "ordering_check", "rate_check", "slope_check", "speedup_check"]


def oracle_check(check: str, observed: float, mc_error: float, expected: float, z: float,
                 detail: str = "", evidence: dict | None = None, *,
                 n_replicates: int | None = None, margin: float | None = None,
                 relative: bool = False, z_holds: float | None = None,
                 parts: ErrorParts | None = None) -> Verdict:
    """An estimate against an exact value, three-way against a margin.

    Absolute (default): d = observed − expected; ``margin`` in the quantity's units, by
    default :data:`~bounds.equivalence.DEFAULT_MARGINS` ``oracle`` (half the per-replicate
    standard deviation, mc_error·√n_replicates — ``n_replicates`` then required).
    ``relative``: d = log(observed/expected) with error mc_error/observed, margin a relative
    size (default ``oracle-relative``: 0.5, a factor 1.5), for positive quantities.
    ``parts``: where not all of ``mc_error`` shrinks with the replicates, how it would change
    (:class:`~bounds.equivalence.ErrorParts`): the replicates that would decide it, or why none
    would.
    """
    observed, mc_error, expected = float(observed), float(mc_error), float(expected)
    evidence = dict(evidence or {})
    if n_replicates is not None:
        evidence["n_replicates"] = int(n_replicates)
    finite = all(math.isfinite(v) for v in (observed, mc_error, expected))
    if relative:
        size = DEFAULT_MARGINS["oracle-relative"].size if margin is None else margin
        scale, width = "log-ratio", math.log1p(size)
        positive = finite and observed > 0 and expected > 0
        difference = math.log(observed / expected) if positive else math.nan
        error = mc_error / observed if positive else math.nan
    else:
        if margin is None:
            if n_replicates is None:
                raise ValueError("oracle_check needs n_replicates for its default margin")
            margin = DEFAULT_MARGINS["oracle"].size * mc_error * math.sqrt(n_replicates)
        scale, width = "absolute", float(margin)
        difference, error = observed - expected, mc_error
    if finite and error > 0:
        evidence["z_score"] = abs(difference) / error
    decision = decide(difference, error if finite else math.nan,
                      width if math.isfinite(width) else 0.0, z, z_holds=z_holds)
    if parts is not None:
        decision = parts.applied(decision, z, z_holds)
    if not finite:
        detail = detail or "non-finite estimate or exact value"
    return verdict_from(check, "oracle", decision, observed, expected, z, scale,
                        n_replicates=n_replicates, detail=detail, evidence=evidence)


def pair_z(z: float, n_pairs: int) -> float:
    """The two-sided critical z of one of ``n_pairs`` comparisons that together keep the
    false-failure rate of a single comparison at ``z``."""
    return float(stats.norm.isf(two_sided_rate(z) / (2 * n_pairs)))


def invariance_check(check: str, values, errors, labels, z: float, detail: str = "",
                     evidence: dict | None = None, *, margin: float | None = None,
                     log_covariance=None, n_replicates: int | None = None,
                     z_holds: float | None = None, fixed_errors=None,
                     cannot: str = "", grows: str = "") -> Verdict:
    """Positive values the theory says are equal agree pairwise within a ratio margin.

    Every pair (i, j) is judged on d_ij = log(v_i/v_j) with standard error from
    ``log_covariance`` (the covariance matrix of log v, e.g. from a paired bootstrap when the
    values share random numbers) or, by default, from independent errors e_i/v_i. The claim
    holds when every pair is shown within ±log(1 + margin) and is violated when some pair is
    shown beyond it (Bonferroni over the pairs inside ``z``'s false-failure rate).
    Observed is the largest ratio v_max/v_min, expected 1. ``fixed_errors``: the part of each
    error that more replicates do not reduce (a fixed number of chains' spread; independent
    errors only), with ``cannot`` saying why and ``grows`` the evidence key of the factor on
    what else would grow, as :class:`~bounds.equivalence.ErrorParts` does.
    """
    values = np.asarray(values, dtype=float)
    errors = np.asarray(errors, dtype=float)
    size = DEFAULT_MARGINS["invariance"].size if margin is None else margin
    evidence = dict(evidence or {})
    evidence.update({"labels": list(labels), "values": values.tolist(),
                     "errors": errors.tolist()})
    usable = np.isfinite(values) & (values > 0)
    if values.size < 2 or not np.all(usable):
        decision = decide(math.nan, math.nan, math.log1p(size), z)
        return verdict_from(check, "invariance", decision, math.nan, 1.0, z, "log-ratio",
                            detail=detail or "needs two or more finite positive values",
                            evidence=evidence)
    logs = np.log(values)
    if log_covariance is None:
        log_covariance = np.diag((errors / values) ** 2)
    log_covariance = np.asarray(log_covariance, dtype=float)
    pairs = [(i, j) for i in range(values.size) for j in range(i + 1, values.size)]
    differences = [logs[i] - logs[j] for i, j in pairs]
    pair_errors = [math.sqrt(max(log_covariance[i, i] + log_covariance[j, j]
                                 - 2 * log_covariance[i, j], 0.0)) for i, j in pairs]
    z_pairs = pair_z(z, len(pairs))
    decision, worst = decide_all(differences, pair_errors, math.log1p(size), z_pairs,
                                 z_holds=z_holds)
    i, j = pairs[worst]
    if fixed_errors is not None:
        fixed = np.asarray(fixed_errors, dtype=float) / values
        stays = math.hypot(fixed[i], fixed[j])
        shrinks = math.sqrt(max(pair_errors[worst]**2 - stays**2, 0.0))
        decision = ErrorParts(shrinks, stays, cannot, grows).applied(decision, z_pairs, z_holds)
    evidence.update({"deciding_pair": [labels[i], labels[j]], "pair_z": z_pairs,
                     "ratio_max_min": float(values.max() / values.min()),
                     "relative_margin": size,
                     "pair_log_ratios": {f"{labels[a]}/{labels[b]}": d for (a, b), d
                                         in zip(pairs, differences, strict=True)}})
    detail = sentences(detail, f"Deciding pair {labels[i]} / {labels[j]}: ratio "
                               f"{math.exp(decision.difference):.4g}, margin a factor "
                               f"{1 + size:.3g}.")
    return verdict_from(check, "invariance", decision, float(values.max() / values.min()), 1.0,
                        z_pairs, "log-ratio", n_replicates=n_replicates, detail=detail,
                        evidence=evidence)


def slope_check(check: str, x, y, y_errors, expected_slope: float, z: float, detail: str = "",
                evidence: dict | None = None, *, margin: float | None = None,
                log_covariance=None, n_replicates: int | None = None,
                z_holds: float | None = None) -> Verdict:
    """The fitted log-log slope equals ``expected_slope`` within ``margin`` (slope units).

    The values' errors are independent (``y_errors``), or their logs have the covariance
    matrix ``log_covariance`` (values that share random numbers: a paired bootstrap), which
    the weighted fit's error then counts (a sandwich, :func:`~bounds.rate.loglog_slope`)."""
    x, y, y_errors = (np.asarray(a, dtype=float) for a in (x, y, y_errors))
    width = DEFAULT_MARGINS["slope"].size if margin is None else margin
    evidence = dict(evidence or {})
    evidence.update({"x": x.tolist(), "y": y.tolist(), "y_errors": y_errors.tolist()})
    usable = np.isfinite(y) & np.isfinite(y_errors) & (y > 0) & (y_errors > 0)
    if log_covariance is not None:  # shared errors: every value needs its covariances
        log_covariance = np.asarray(log_covariance, dtype=float)
        finite = np.all(np.isfinite(log_covariance))
        usable = np.isfinite(y) & (y > 0) & finite & (np.diag(log_covariance) >= 0)
    if usable.sum() < 3:
        decision = decide(math.nan, math.nan, width, z)
        return verdict_from(check, "slope", decision, math.nan, expected_slope, z, "slope",
                            detail=detail or "needs three or more positive finite values",
                            evidence=evidence)
    covariance = None if log_covariance is None else log_covariance[np.ix_(usable, usable)]
    slope, error, intercept = loglog_slope(x[usable], y[usable], y_errors[usable], covariance)
    evidence.update({"intercept": intercept, "slope_ci": [slope - z * error, slope + z * error]})
    decision = decide(slope - expected_slope, error, width, z, z_holds=z_holds)
    return verdict_from(check, "slope", decision, slope, expected_slope, z, "slope",
                        n_replicates=n_replicates, detail=detail, evidence=evidence)


def inconclusive(check: str, kind: str, z: float, detail: str, scale: str = "absolute",
                 evidence: dict | None = None) -> Verdict:
    """A verdict the data cannot give at all (no usable values), with the reason."""
    nan = math.nan
    return Verdict(check, kind, INCONCLUSIVE, nan, nan, nan, nan, z, two_sided_rate(z),
                   detail, dict(evidence or {}), scale=scale)


def ordering_check(check: str, gap: float, error: float, expected_gap: float, z: float,
                   detail: str = "", evidence: dict | None = None, *,
                   margin: float | None = None, n_replicates: int | None = None,
                   z_holds: float | None = None, at_least: float = 0.0) -> Verdict:
    """A predicted order: ``gap`` (positive when the order is as predicted) shown above
    ``at_least`` − margin. One-sided on d = at_least − gap: ``holds`` when gap ≥ at_least +
    z_holds·σ − margin, ``violated`` when gap < at_least − margin − z·σ (a gap below the claimed
    one is shown), else ``inconclusive``. The margin (default 0,
    :data:`~bounds.equivalence.DEFAULT_MARGINS` ``ordering``) is in gap units; ``expected_gap``
    is reported beside the gap."""
    width = DEFAULT_MARGINS["ordering"].size if margin is None else margin
    decision = decide(float(at_least) - float(gap), error, width, z, z_holds=z_holds,
                      one_sided=True)
    return verdict_from(check, "ordering", decision, float(gap), float(expected_gap), z,
                        "absolute", n_replicates=n_replicates, detail=detail,
                        evidence=evidence)


def ordering_sequence(names: Sequence[str], points: Sequence, values, errors, z: float, *,
                      margin: float, n_replicates: int, evidence: Sequence[dict],
                      where: Callable[[int | None, list[Verdict]], str],
                      by: float = 0.0, pair_errors: Sequence[float] | None = None
                      ) -> list[Verdict]:
    """The predicted order along a grid: for each consecutive pair of ``points`` an
    :func:`ordering_check` named ``names[k]`` on gap = values[k] − values[k+1] (positive when
    the values fall, as predicted), claimed at least ``by``, with the two measurements'
    independent ``errors``, or the pair's own error ``pair_errors[k]`` where the measurements
    share random numbers (a paired difference). Every
    verdict's detail starts with ``where(stop, verdicts)``, ``stop`` the first pair whose fall
    is not shown (None: every pair holds), and its evidence adds ``turning_point``: the point
    the fall is shown up to (None when it is shown everywhere)."""
    pairs = [ordering_check(names[k], float(values[k] - values[k + 1]),
                            math.hypot(errors[k], errors[k + 1]) if pair_errors is None
                            else float(pair_errors[k]), by, z, margin=margin,
                            n_replicates=n_replicates, evidence=evidence[k], at_least=by)
             for k in range(len(points) - 1)]
    stop = next((k for k, v in enumerate(pairs) if v.verdict != HOLDS), None)
    sentence = where(stop, pairs)
    turning = None if stop is None else points[stop]
    return [replace(v, detail=f"{sentence} {v.detail}",
                    evidence={**v.evidence, "turning_point": turning}) for v in pairs]
