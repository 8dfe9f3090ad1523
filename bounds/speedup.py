"""Speed-up checks: iteration speed-up ≈ number of workers, time speed-up reported beside it.

Seed 001 §5 measures the *iteration speed-up* of P workers as the ratio of the iterations one
worker needs to reach a precision to the iterations per worker that P workers need, and the
*time speed-up* as the same ratio of wall-clock times. Theorem 4 (the variance is free of the
staleness) predicts an iteration speed-up of P; the time speed-up depends on the system's
latencies and is reported, not judged.

Each system gives a curve of a decreasing precision measure (e.g. the variance of φ̂) against
iterations per worker, with Monte Carlo errors. The iterations needed to reach ``target`` are
found by log-log interpolation between the checkpoints on either side of the first crossing;
the error of log L* is the relative error of the measure there divided by the curve's local
log-log slope (delta method). Speed-ups are ratios to the one-worker curve, each judged on
d_P = log(S_P/P) against the margin log(1 + relative_tolerance) (default 0.1) by
:func:`bounds.equivalence.decide_all`: ``violated`` when some P is shown beyond it
(two-sided: a super-linear speed-up contradicts the theory too), ``holds`` when every P is
shown within it.
"""

from __future__ import annotations

import math

import numpy as np

from bounds.equivalence import DEFAULT_MARGINS, decide, decide_all, verdict_from
from bounds.rate import bootstrap_statistics
from bounds.verdict import Verdict


def crossing(iterations, values, errors, target: float) -> tuple[float, float, int]:
    """(L*, standard error of log L*, index of the checkpoint after the crossing).

    NaN when the curve never reaches ``target`` or starts below it (censored).
    """
    iterations, values, errors = (np.asarray(a, dtype=float) for a in (iterations, values,
                                                                         errors))
    below = np.flatnonzero(values <= target)
    if below.size == 0 or below[0] == 0:
        return math.nan, math.nan, -1
    k = int(below[0])
    log_l = np.log(iterations[k - 1:k + 1])
    log_v = np.log(values[k - 1:k + 1])
    slope = (log_v[1] - log_v[0]) / (log_l[1] - log_l[0])
    fraction = (math.log(target) - log_v[0]) / (log_v[1] - log_v[0])
    log_crossing = log_l[0] + fraction * (log_l[1] - log_l[0])
    relative = errors[k - 1:k + 1] / values[k - 1:k + 1]
    relative_error = (1 - fraction) * relative[0] + fraction * relative[1]
    return float(math.exp(log_crossing)), float(relative_error / abs(slope)), k


def paired_crossing_covariance(iterations, samples, rng: np.random.Generator,
                               n_resamples: int = 1000) -> tuple[np.ndarray, int]:
    """(covariance of log L* across variance curves whose replicates share their random
    numbers (common random numbers), resamples used): a paired bootstrap of
    :func:`speedup_check`'s procedure, each resample drawing the same replicates for every
    curve and recomputing every curve's variance over replicates at each checkpoint, the
    target (the largest final variance) and each curve's crossing of it. The target and the
    interpolation segment move with the data, which a delta method misses: over 30 groups of
    paired replicates the spread of log S_P was 1.32 to 1.39 times the errors a delta method
    stated on stale-blr-speedup (quick), against 1.07 to 1.13 times this bootstrap's, and
    0.38 to 0.57 times (conservative) on a small logistic study (benchmarks/README.md,
    *Paired speed-ups*). ``iterations``:
    ``(curve, checkpoint)``; ``samples``: per-replicate estimates ``(curve, checkpoint,
    replicate)``, finite. A resample in which some curve starts below the target is left out
    (counted); with fewer than two left the covariance is NaN."""
    iterations = np.atleast_2d(np.asarray(iterations, dtype=float))
    samples = np.asarray(samples, dtype=float)
    n_curves, n_checkpoints, n_replicates = samples.shape
    unused = np.zeros(n_checkpoints)
    resampled = bootstrap_statistics(samples.reshape(-1, n_replicates), "variance", rng,
                                     n_resamples, paired=True)
    logs = []
    for variances in resampled.reshape(n_resamples, n_curves, n_checkpoints):
        target = float(variances[:, -1].max())
        logs.append([math.log(crossing(iterations[i], variances[i], unused, target)[0])
                     for i in range(n_curves)])
    logs = np.asarray(logs)
    usable = logs[np.all(np.isfinite(logs), axis=1)]
    if usable.shape[0] < 2:
        return np.full((n_curves, n_curves), np.nan), int(usable.shape[0])
    return np.atleast_2d(np.cov(usable, rowvar=False)), int(usable.shape[0])


def _time_at(iterations, times, level: float) -> float:
    """Wall-clock time at ``level`` iterations (log-log interpolation of the time curve)."""
    return float(np.exp(np.interp(np.log(level), np.log(iterations), np.log(times))))


def speedup_check(check: str, workers, iterations, values, errors, z: float, *,
                  target: float | None = None, times=None,
                  relative_tolerance: float | None = None, z_holds: float | None = None,
                  detail: str = "", evidence: dict | None = None,
                  log_covariance=None) -> Verdict:
    """Iteration speed-up against the number of workers (module docstring).

    workers: ``(n,)`` worker counts including 1; iterations, values, errors (and times):
    ``(n, checkpoints)`` curves, iterations counted per worker. ``target`` defaults to the
    largest final value, the precision every curve reaches. ``log_covariance``: the
    covariance of log L* across the curves where they share their random numbers
    (:func:`paired_crossing_covariance`, with the default target); each speed-up's error is
    then that of its paired log-ratio, var(log L*_1) + var(log L*_P) − 2 cov, instead of the
    curves' independent errors.
    """
    workers = np.asarray(workers, dtype=float)
    iterations, values, errors = (np.atleast_2d(np.asarray(a, dtype=float))
                                  for a in (iterations, values, errors))
    evidence = dict(evidence or {})
    if relative_tolerance is None:
        relative_tolerance = DEFAULT_MARGINS["speed-up"].size
    width = math.log1p(relative_tolerance)
    if 1 not in workers.tolist() or workers.size < 2:
        raise ValueError("workers must include the one-worker baseline and one more count")
    if target is None:
        target = float(np.nanmax(values[:, -1]))
    evidence.update({"workers": workers.tolist(), "target": target})
    needed = [crossing(i, v, e, target) for i, v, e in zip(iterations, values, errors,
                                                          strict=True)]
    counts = np.array([n[0] for n in needed])
    log_errors = np.array([n[1] for n in needed])
    evidence["iterations_to_target"] = counts.tolist()
    if not np.all(np.isfinite(counts)) or not np.all(np.isfinite(log_errors)):
        decision = decide(math.nan, math.nan, width, z)
        return verdict_from(check, "speed-up", decision, math.nan, math.nan, z, "log-ratio",
                            detail=f"{detail} (some curve does not cross the target "
                            f"{target:.3g} between two checkpoints)".strip(), evidence=evidence)
    base = int(np.flatnonzero(workers == 1)[0])
    speedups = counts[base] / counts
    if log_covariance is None:
        speedup_log_errors = np.sqrt(log_errors[base] ** 2 + log_errors**2)
    else:
        covariance = np.asarray(log_covariance, dtype=float)
        evidence["crossing_log_covariance"] = covariance.tolist()
        speedup_log_errors = np.sqrt(np.maximum(
            covariance[base, base] + np.diag(covariance) - 2 * covariance[base], 0.0))
    speedup_log_errors[base] = 0.0
    evidence.update({"iteration_speedup": speedups.tolist(),
                     "iteration_speedup_log_se": speedup_log_errors.tolist(),
                     "efficiency": (speedups / workers).tolist()})
    if times is not None:
        times = np.atleast_2d(np.asarray(times, dtype=float))
        to_target = np.array([_time_at(i, t, n) for i, t, n in zip(iterations, times, counts,
                                                                  strict=True)])
        evidence.update({"time_to_target": to_target.tolist(),
                         "time_speedup": (to_target[base] / to_target).tolist()})
    others = [i for i in range(workers.size) if i != base]
    decision, k = decide_all(np.log(speedups[others] / workers[others]),
                             speedup_log_errors[others], width, z, z_holds=z_holds)
    worst = others[k]
    return verdict_from(check, "speed-up", decision, float(speedups[worst]),
                        float(workers[worst]), z, "log-ratio", detail=detail,
                        evidence=evidence)
