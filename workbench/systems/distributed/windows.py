"""Window averages of θ and θθᵀ: measured from a replay, exact from the sharded oracle, and
the verdicts comparing them.

The engine accumulates running averages of θ and of θθᵀ (:data:`THETA_OUTER`) at checkpoints;
the average over samples ``first + 1 .. last`` of one chain is then
(last·avg_last - first·avg_first)/(last - first). The second moment about a reference r,
M_r = avg (θ - r)(θ - r)ᵀ, is linear in those averages, so its exact expectation follows from
the oracle's exact window moments (:meth:`ConditionalMoments.window`) and its Monte Carlo
estimate is unbiased per replicate: no sample-mean subtraction, no finite-window bias.

Two ways of judging a measurement (each an ``oracle`` verdict):

- :func:`conditional_check`: against the exact expectation *given each chain's schedule*.
  Replicates are independent given the schedule, so the residuals measured - exact over all
  (replicate, chain) pairs are independent with mean zero and give the Monte Carlo error;
  the critical value is Student's t with one degree of freedom fewer than residuals, which
  matters when there are few (coupled chains form few independent groups).
- :func:`chain_level_check`: against a value that averages over schedules too (the
  posterior, a stationary ensemble value). Chains carry independent schedules, so chain means
  are the independent units; with few chains the critical value is Student's t with C - 1
  degrees of freedom at the stated false-failure rate, not the normal z.
"""

from __future__ import annotations

import dataclasses
import math

import numba
import numpy as np
from scipy import stats

from bounds.checks import oracle_check
from bounds.verdict import Verdict, student_z_for_family
from workbench.core.phi import THETA, TestFunction
from workbench.engine.replay_setup import Replay
from workbench.oracles.sharded_gaussian import ConditionalMoments, conditional_moments


@numba.njit(cache=True)
def _products(flat, out):
    """out[r, i d + j] = flat[r, i] flat[r, j]: one IEEE multiplication each (no fastmath), so
    the same bits as numpy's broadcast product, without its short inner loops."""
    n, d = flat.shape
    for r in range(n):
        for i in range(d):
            for j in range(d):
                out[r, i * d + j] = flat[r, i] * flat[r, j]


def _outer(position: np.ndarray) -> np.ndarray:
    """θθᵀ flattened to ``(..., d²)``, row-major (``θ_i θ_j`` at ``i d + j``)."""
    position = np.asarray(position, dtype=np.float64)
    dim = position.shape[-1]
    flat = np.ascontiguousarray(position).reshape(-1, dim)
    out = np.empty((flat.shape[0], dim * dim))
    _products(flat, out)
    return out.reshape(position.shape[:-1] + (dim * dim,))


THETA_OUTER = TestFunction("theta_outer", _outer)
TEST_FUNCTIONS = (THETA, THETA_OUTER)


def measured_window(run: Replay, first: int, last: int) -> tuple[np.ndarray, np.ndarray]:
    """Per replicate and chain: the window averages of θ ``(R, C, d)`` and θθᵀ ``(R, C, d, d)``.

    ``first`` = 0 starts at the first sample; otherwise it must be a checkpoint of the run.
    """
    checkpoints = run.checkpoints.tolist()

    def total(name: str, count: int) -> np.ndarray:
        if count == 0:
            return 0.0
        return run.averages[name][checkpoints.index(count)] * count

    width = last - first
    mean = (total("theta", last) - total("theta", first)) / width
    second = (total("theta_outer", last) - total("theta_outer", first)) / width
    dim = mean.shape[-1]
    return mean, second.reshape(second.shape[:-1] + (dim, dim))


def exact_moments(oracle, schedule, n_updates: int, step_size: float, initial,
                  checkpoints, groups=None, noise_correction: bool = True) -> ConditionalMoments:
    """The oracle's exact moments for the schedule's first ``n_updates`` updates."""
    maps = oracle.step_maps(schedule.update_shards(n_updates),
                            schedule.update_column("shard_frequency", n_updates), step_size,
                            groups=groups, noise_correction=noise_correction)
    return conditional_moments(maps, initial, checkpoints)


def about(reference, mean: np.ndarray, second: np.ndarray) -> np.ndarray:
    """M_r = E(θ - r)(θ - r)ᵀ from E θ and E θθᵀ (any leading axes)."""
    r = np.asarray(reference, dtype=float)
    return (second - mean[..., :, None] * r[..., None, :] - r[..., :, None] * mean[..., None, :]
            + r[..., :, None] * r[..., None, :])


def conditional_check(name: str, measured: np.ndarray, exact: np.ndarray,
                      false_failure_rate: float, n_comparisons: int, detail: str = "",
                      evidence: dict | None = None, *, margin: float | None = None,
                      relative: bool = False) -> Verdict:
    """``measured`` ``(replicate, chain)`` against ``exact`` ``(chain,)`` (module docstring),
    one of a Bonferroni family of ``n_comparisons`` at ``false_failure_rate``; ``margin`` and
    ``relative`` as in :func:`bounds.checks.oracle_check`."""
    measured = np.asarray(measured, dtype=float)
    exact = np.broadcast_to(np.asarray(exact, dtype=float), measured.shape[1:])
    residual = measured - exact
    valid = residual[np.isfinite(residual)]
    error = valid.std(ddof=1) / math.sqrt(valid.size) if valid.size > 1 else math.nan
    evidence = dict(evidence or {}, n_values=int(valid.size))
    threshold = student_z_for_family(false_failure_rate, n_comparisons, max(valid.size, 2))
    return with_student_rate(oracle_check(name, float(np.nanmean(measured)), error,
                                          float(np.mean(exact)), threshold, detail=detail,
                                          evidence=evidence, n_replicates=max(valid.size, 2),
                                          margin=margin, relative=relative),
                             max(valid.size, 2))


def with_student_rate(verdict: Verdict, n_units: int) -> Verdict:
    """The verdict with its false-failure rate read from Student's t (``n_units - 1`` dof)
    instead of the normal tail the generic checks assume."""
    dof = max(n_units - 1, 1)
    evidence = dict(verdict.evidence, critical_value=f"Student t, {dof} degrees of freedom")
    return dataclasses.replace(verdict, evidence=evidence,
                               false_failure_rate=2 * float(stats.t.sf(verdict.z_threshold,
                                                                       dof)))


def chain_level_check(name: str, measured: np.ndarray, expected: float,
                      false_failure_rate: float, n_comparisons: int, detail: str = "",
                      evidence: dict | None = None, per_run: bool = False) -> Verdict:
    """``measured`` ``(replicate, chain)`` averaged per chain, against ``expected``; Student
    critical value for a family of ``n_comparisons`` at ``false_failure_rate``.

    ``per_run``: every (replicate, chain) is a unit instead, for designs with too few
    independent chains (the check is then conditional on the realised schedules).
    """
    measured = np.asarray(measured, dtype=float)
    per_chain = measured.ravel() if per_run else np.nanmean(measured, axis=0)
    error = per_chain.std(ddof=1) / math.sqrt(per_chain.size)
    threshold = student_z_for_family(false_failure_rate, n_comparisons, per_chain.size)
    evidence = dict(evidence or {}, n_chains=int(per_chain.size))
    return with_student_rate(oracle_check(name, float(per_chain.mean()), error, float(expected),
                                          threshold, detail=detail, evidence=evidence,
                                          n_replicates=per_chain.size),
                             per_chain.size)


def _entries(dim: int) -> list[tuple[int, int]]:
    return [(j, k) for j in range(dim) for k in range(j, dim)]


def window_statistics(dataset, selection: dict, prefix: str = "") -> tuple[np.ndarray, ...]:
    """Window mean and second moment about the posterior mean, measured (``(R, C, ...)``)
    or exact (``prefix="exact_"``, ``(C, ...)``), at one selection of the dataset."""
    mu = dataset["posterior_mean"].values
    mean = dataset[f"{prefix}window_mean"].sel(selection).values
    second = dataset[f"{prefix}window_second"].sel(selection).values
    return mean, about(mu, mean, second)


def window_oracle_checks(dataset, selections: list[tuple[str, dict]],
                         false_failure_rate: float) -> list[Verdict]:
    """Conditional oracle checks of the window mean (per coordinate) and of the second moment
    about μ (per entry j <= k), for each labelled selection; one Bonferroni family."""
    dim = dataset.sizes["component"]
    entries = _entries(dim)
    n_family = len(selections) * (dim + len(entries))
    verdicts = []
    for label, selection in selections:
        mean, second = window_statistics(dataset, selection)
        exact_mean, exact_second = window_statistics(dataset, selection, "exact_")
        for j in range(dim):
            verdicts.append(conditional_check(
                f"oracle/{label}/mean/component={j}", mean[..., j], exact_mean[..., j],
                false_failure_rate, n_family,
                detail="window average of θ against the exact oracle given each chain's "
                       "schedule", evidence=dict(selection)))
        for j, k in entries:
            verdicts.append(conditional_check(
                f"oracle/{label}/second_moment/({j},{k})", second[..., j, k],
                exact_second[..., j, k], false_failure_rate, n_family,
                detail="window average of (θ - μ)(θ - μ)ᵀ against the exact oracle given each "
                       "chain's schedule", evidence=dict(selection)))
    return verdicts


def posterior_checks(dataset, label: str, selection: dict, false_failure_rate: float,
                     note: str = "", per_run: bool = False, covariance: bool = True,
                     n_comparisons: int | None = None) -> list[Verdict]:
    """Chain-level checks of the window mean against μ and (``covariance``) of the second
    moment about μ against the posterior covariance s² I; the exact oracle's values are the
    evidence. ``n_comparisons``: the Bonferroni family, by default these checks alone."""
    dim = dataset.sizes["component"]
    entries = _entries(dim) if covariance else []
    n_family = n_comparisons or dim + len(entries)
    mu = dataset["posterior_mean"].values
    s2 = float(dataset["posterior_variance"])
    sd = math.sqrt(s2)
    mean, second = window_statistics(dataset, selection)
    exact_mean, exact_second = window_statistics(dataset, selection, "exact_")
    verdicts = []
    for j in range(dim):
        predicted = float(exact_mean[..., j].mean())
        verdicts.append(chain_level_check(
            f"posterior/{label}/mean/component={j}", mean[..., j], mu[j], false_failure_rate,
            n_family, per_run=per_run,
            detail=f"window mean against the posterior mean; the exact oracle puts it "
                   f"{(predicted - mu[j]) / sd:+.3g} posterior sd away{note}",
            evidence={**selection, "exact_oracle": predicted,
                      "exact_shift_in_posterior_sd": (predicted - mu[j]) / sd}))
    for j, k in entries:
        target = s2 if j == k else 0.0
        predicted = float(exact_second[..., j, k].mean())
        verdicts.append(chain_level_check(
            f"posterior/{label}/covariance/({j},{k})", second[..., j, k], target,
            false_failure_rate, n_family, per_run=per_run,
            detail=f"window average of (θ - μ)(θ - μ)ᵀ against the posterior covariance; the "
                   f"exact oracle predicts {predicted / s2:.4g} s² (target "
                   f"{target / s2:.4g} s²){note}",
            evidence={**selection, "exact_oracle": predicted,
                      "exact_in_posterior_variances": predicted / s2}))
    return verdicts


def pooled(dataset, selection: dict, prefix: str = "",
           keep: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Mean and covariance of all window samples pooled over chains (and replicates): the
    sample distribution the papers' scatter plots show. ``keep``: a boolean mask over the
    leading (replicate, chain) axes of the units to pool."""
    mean = dataset[f"{prefix}window_mean"].sel(selection).values
    second = dataset[f"{prefix}window_second"].sel(selection).values
    mean = mean.reshape(-1, mean.shape[-1])
    second = second.reshape((-1,) + second.shape[-2:])
    if keep is not None:
        mask = np.asarray(keep).ravel()
        mean, second = mean[mask], second[mask]
    centre = mean.mean(axis=0)
    return centre, about(centre, mean, second).mean(axis=0)
