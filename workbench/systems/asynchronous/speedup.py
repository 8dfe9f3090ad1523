"""Iteration and time speed-ups of P workers (seed 001 §5.1, Figure 2), judged three ways.

From curves of the variance of φ̂ over replicates against iterations per worker (one curve per
worker count P, with Monte Carlo errors):

- ``iteration``: each S_P within the speed-up margin of P (:func:`bounds.speedup.speedup_check`,
  two-sided on log(S_P/P));
- ``slope``: the log-log slope of S_P against P, fitted by weighted least squares with each
  curve's own crossing error (the one-worker baseline is a common offset in log S_P and does
  not move the slope), against 1: Theorem 4 makes the variance free of τ ≈ P, so Corollary
  5's rate in L gives a linear iteration speed-up;
- ``time-bend``: the time speed-up T_P (time to the same target) against the latency model's
  prediction min(P, P*) (:mod:`.system`), every P judged on log(T_P/min(P, P*)) against the
  bend margin; the bend is also located by fitting min(P, c) to T_P (reported, not judged
  alone: a plateau needs points beyond the bend).

:func:`speedup_family` adds Theorem 4's claim at the common L (the variance is the same for
every P although τ̄ ≈ P − 1: its bound has no τ), pairwise ratios within the invariance margin,
and reads all four from one test function's summaries; ``stale-blr-speedup`` and a study's
``speed-up`` check (:mod:`workbench.studies.held_out_judgements`) both judge through it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from workbench.core.parameters import Parameter
from workbench.core.validators import positive

# the checks (sympy, scipy.stats) are imported by the functions that judge: experiments and
# studies read TIME_BEND_MARGIN for their parameters, which `workbench show` prints without
# them (issue 15)
if TYPE_CHECKING:
    import xarray as xr

    from bounds.verdict import Verdict

#: the time-bend check's margin: T_P within this fraction of min(P, P*)
TIME_BEND_MARGIN = Parameter("bend_margin", 0.25,
                             "time speed-up: within this fraction of min(P, P*)", positive)
BEND_MARGIN = TIME_BEND_MARGIN.default


def fitted_bend(workers, time_speedups, log_errors) -> float:
    """c minimising Σ_P (log T_P − log min(P, c))²/σ_P² over P > 1 (a log-spaced grid up to
    3·max P; the top of the grid means no bend was seen)."""
    workers, time_speedups, log_errors = (np.asarray(a, dtype=float)
                                          for a in (workers, time_speedups, log_errors))
    use = (workers > 1) & np.isfinite(time_speedups) & (log_errors > 0)
    if not use.any():
        return math.nan
    grid = np.geomspace(1.0, 3.0 * workers.max(), 2000)
    residuals = (np.log(time_speedups[use])[None, :]
                 - np.log(np.minimum(workers[use][None, :], grid[:, None])))
    loss = ((residuals / log_errors[use][None, :]) ** 2).sum(axis=1)
    return float(grid[int(np.argmin(loss))])


def speedup_verdicts(prefix: str, workers, iterations_per_worker, variance, variance_se, times,
                     z: float, *, bend: float, expected_slope: float = 1.0,
                     speedup_margin: float | None = None, slope_margin: float | None = None,
                     bend_margin: float = BEND_MARGIN,
                     crossing_covariance=None) -> list[Verdict]:
    """The three speed-up verdicts (module docstring) of curves ``(worker, checkpoint)``.

    ``bend``: the predicted P* (∞ for none); ``expected_slope``: 1 in theory, another value
    only for negative controls; ``crossing_covariance``: the covariance of log L* across the
    worker counts where they share their random numbers
    (:func:`bounds.speedup.paired_crossing_covariance`): the speed-ups' errors, and through
    them the slope's (a sandwich, :func:`bounds.rate.loglog_slope`) and the bend's, are then
    those of the paired log-ratios.
    """
    from bounds.checks import slope_check
    from bounds.speedup import crossing, speedup_check

    workers = np.asarray(workers, dtype=float)
    curves = [np.asarray(a, dtype=float) for a in (iterations_per_worker, variance,
                                                   variance_se, times)]
    iteration = speedup_check(f"{prefix}/iteration", workers, *curves[:3], z, times=curves[3],
                              relative_tolerance=speedup_margin,
                              detail="Iteration speed-up ≈ P (Theorem 4, Corollary 5).",
                              log_covariance=crossing_covariance)
    evidence = iteration.evidence
    target = evidence["target"]
    needed = [crossing(i, v, e, target) for i, v, e in zip(*curves[:3], strict=True)]
    counts = np.array([n[0] for n in needed])
    own_errors = np.array([n[1] for n in needed])
    base = int(np.flatnonzero(workers == 1)[0])
    speedups = counts[base] / counts
    log_covariance = None
    if crossing_covariance is not None:  # log S_P = log L*_1 − log L*_P
        difference = np.eye(workers.size)[[base]] - np.eye(workers.size)
        log_covariance = difference @ np.asarray(crossing_covariance, float) @ difference.T
    slope = slope_check(f"{prefix}/slope", workers, speedups, speedups * own_errors,
                        expected_slope, z, margin=slope_margin,
                        detail="Log-log slope of the iteration speed-up against workers "
                        "(Corollary 5: 1, linear).",
                        evidence={"iteration_speedup": speedups.tolist(),
                                  "log_errors": own_errors.tolist()},
                        log_covariance=log_covariance)
    return [iteration, slope, _bend_verdict(prefix, workers, evidence, z, bend, bend_margin)]


#: the margins :func:`speedup_family` reads, by their configuration names
MARGINS = ("speedup_margin", "slope_margin", "bend_margin", "invariance_margin")
#: the verdicts of one :func:`speedup_family`: three speed-ups and Theorem 4's invariance
FAMILY_SIZE = 4


class Paired(NamedTuple):
    """The worker counts judged jointly where they share their random numbers (a study's
    ``[study] paired``): the last checkpoint's variances, their errors and the covariance of
    their logs, the replicates used, the sentence a detail adds and the evidence that records
    the pairing; and the covariance of the crossings' log L* from a paired bootstrap
    (:func:`bounds.speedup.paired_crossing_covariance`) with the resamples it used."""

    values: np.ndarray
    errors: np.ndarray
    log_covariance: np.ndarray
    n_replicates: int
    note: str
    evidence: dict
    crossing_covariance: np.ndarray
    crossing_resamples: int


def speedup_family(prefix: str, invariance_name: str, curves: xr.Dataset, over: str, z: float,
                   *, bend: float, margins: Mapping[str, float], n_replicates: int,
                   detail: str, paired: Paired | None = None) -> list[Verdict]:
    """The three speed-up verdicts of :func:`speedup_verdicts` (named ``prefix/...``) and
    Theorem 4's variance invariance at the last checkpoint (named ``invariance_name``), from
    ``curves``: one test function's ``variance``, ``variance_se``, ``iterations_per_worker``,
    ``time``, ``mean_staleness`` and ``n_valid`` along the worker counts ``over`` (which must
    include 1) and ``checkpoint``; ``margins``: :data:`MARGINS`; ``detail``: the invariance
    verdict's. ``paired``: the worker counts are judged jointly, the invariance every pair with
    the error of its paired log-ratio, the speed-ups with the paired crossings' covariance."""
    from dataclasses import replace

    from bounds.checks import invariance_check

    curves = curves.transpose(over, "checkpoint", ...)
    workers = curves[over].values
    if 1 not in workers.tolist():
        raise ValueError(f"a speed-up is relative to one worker: {over} must include 1, "
                         f"got {workers.tolist()}")
    verdicts = speedup_verdicts(
        prefix, workers, curves["iterations_per_worker"].values, curves["variance"].values,
        curves["variance_se"].values, curves["time"].values, z, bend=bend,
        speedup_margin=margins["speedup_margin"], slope_margin=margins["slope_margin"],
        bend_margin=margins["bend_margin"],
        crossing_covariance=None if paired is None else paired.crossing_covariance)
    final = curves.isel(checkpoint=-1)
    labels = [f"P={p} (τ̄={s:.2g})" for p, s in zip(workers, curves["mean_staleness"].values,
                                                    strict=True)]
    evidence = {"n_valid": final["n_valid"].values.tolist()}
    values, errors, log_covariance = final["variance"].values, final["variance_se"].values, None
    if paired is not None:
        crossings = (" The worker counts share their random numbers: the crossings' errors "
                     f"come from a paired bootstrap over their {paired.n_replicates} "
                     f"replicates ({paired.crossing_resamples} resamples; "
                     "crossing_log_covariance), not independent ones.")
        verdicts = [replace(v, detail=v.detail + crossings,
                            evidence={**v.evidence, **{key: paired.evidence[key] for key in
                                                       ("common_random_numbers",
                                                        "paired_replicates")},
                                      "crossing_resamples": paired.crossing_resamples})
                    for v in verdicts]
        values, errors, log_covariance = paired.values, paired.errors, paired.log_covariance
        n_replicates, detail = paired.n_replicates, detail + paired.note
        evidence.update(paired.evidence)
    verdicts.append(invariance_check(
        invariance_name, values, errors, labels, z, margin=margins["invariance_margin"],
        n_replicates=n_replicates, detail=detail, evidence=evidence,
        log_covariance=log_covariance))
    return verdicts


def _bend_verdict(prefix: str, workers: np.ndarray, evidence: dict, z: float, bend: float,
                  margin: float) -> Verdict:
    from bounds.equivalence import decide_all, verdict_from

    check = f"{prefix}/time-bend"
    time_speedups = np.asarray(evidence.get("time_speedup", [math.nan] * workers.size))
    log_errors = np.asarray(evidence.get("iteration_speedup_log_se",
                                         [math.nan] * workers.size))
    predicted = np.minimum(workers, bend)
    others = np.flatnonzero(workers != 1)
    found = fitted_bend(workers, time_speedups, log_errors)
    where = "no bend within the grid" if found >= 3 * workers.max() * 0.999 else f"{found:.3g}"
    detail = (f"Time speed-up against min(P, P*) with P* = {bend:.3g} predicted by the latency "
              f"model; fitted bend {where}; measured T_P = "
              + ", ".join(f"{t:.3g}" for t in time_speedups) + ".")
    decision, k = decide_all(np.log(time_speedups[others] / predicted[others]),
                             log_errors[others], math.log1p(margin), z)
    worst = others[k]
    return verdict_from(check, "speed-up", decision, float(time_speedups[worst]),
                        float(predicted[worst]), z, "log-ratio", detail=detail,
                        evidence={"workers": workers.tolist(),
                                  "time_speedup": time_speedups.tolist(),
                                  "predicted_time_speedup": predicted.tolist(),
                                  "predicted_bend": bend, "fitted_bend": found,
                                  "relative_margin": margin})
