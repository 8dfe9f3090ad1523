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
  degrees of freedom at the stated false-failure rate, not the normal z. More replicates
  shrink only the sampler's noise in a chain's mean, not the schedules' spread, and the exact
  oracle given each schedule can stand in for the samples' noise as a control variate
  (:func:`chain_estimate`).
"""

from __future__ import annotations

import dataclasses
import math

import numba
import numpy as np
from scipy import stats

from bounds.checks import oracle_check
from bounds.equivalence import CHAIN_FACTOR, DEFAULT_MARGINS, ErrorParts
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


#: why more replicates cannot decide a check whose units are a fixed number of chains
#: (:class:`~bounds.equivalence.ErrorParts`): measured on them, or from the exact oracle alone
MORE_CHAINS = ("the chains' schedules spread too much: with the sampler's noise averaged out "
               "(every replicate), their exact oracle's spread alone leaves an error of "
               "{fixed}; about {joint} times the chains (independent schedules) would decide it")
ORACLE_ONLY = ("no replicate enters it (the exact oracle on each chain's schedule), and the "
               "chains' spread leaves an error of {fixed}; about {joint} times the chains "
               "(independent schedules) would decide it")


@dataclasses.dataclass(frozen=True)
class ChainEstimate:
    """A chain-level estimate (module docstring): the independent ``units`` it averages, the
    standard deviation of one replicate of one chain (``spread``, the default margin's unit:
    a property of the quantity, not of the replicates averaged), how its error would change
    with more replicates (``parts``) and what the evidence says of it."""

    units: np.ndarray
    spread: float
    parts: ErrorParts
    n_replicates: int | None
    evidence: dict

    @property
    def mean(self) -> float:
        return float(self.units.mean())

    @property
    def error(self) -> float:
        return _standard_error(self.units)


def _standard_error(values: np.ndarray) -> float:
    """The standard error of the mean of independent ``values``."""
    return float(np.std(values, ddof=1) / math.sqrt(np.size(values)))


def chain_estimate(measured: np.ndarray | None, exact: np.ndarray, *,
                   per_run: bool = False, control_variate: bool = False,
                   z: float = math.inf) -> ChainEstimate:
    """The estimate of a value averaged over schedules from ``measured`` ``(replicate,
    chain)`` window averages (None: there are none) and ``exact`` ``(chain,)``, the exact
    oracle given each chain's schedule.

    - Each chain averaged over its replicates is a unit. Its variance is the schedules' spread
      σ_b² (that of ``exact``) plus the sampler's noise σ_w²/R, so more replicates shrink only
      the second part (:class:`ErrorParts`: the error's floor is σ_b/√C, the rest shrinks):
      past a point only more chains decide the check.
    - ``control_variate``: the units are the exact oracle's values themselves. measured −
      exact has known mean zero when the sampler is exact, so the estimate
      mean(measured) − β·mean(measured − exact) is unbiased for every β; β = 1, the
      variance-minimising choice (Cov(exact, measured − exact) = 0 given the schedules), leaves
      the schedules' spread alone (Rao–Blackwell). Only where the residual's mean is not shown
      nonzero at ``z``: a sampler that departs from its oracle would otherwise be hidden, and
      the plain estimate is judged instead.
    - ``measured`` None: the units are ``exact`` (a value from the exact oracle alone, such as
      the ε → 0 limit): no replicate enters it.
    - ``per_run``: every (replicate, chain) is a unit, conditional on the realised schedules.
    """
    if measured is None:
        units = np.asarray(exact, dtype=float).ravel()
        return ChainEstimate(units, float(units.std(ddof=1)),
                             ErrorParts(0.0, _standard_error(units), ORACLE_ONLY,
                                        CHAIN_FACTOR), None, {"n_chains": int(units.size)})
    measured = np.asarray(measured, dtype=float)
    n_replicates = measured.shape[0]
    spread = float(np.nanstd(measured, ddof=1))
    if per_run:
        units = measured.ravel()
        return ChainEstimate(units, spread, ErrorParts(_standard_error(units), 0.0), n_replicates,
                             {"n_chains": int(units.size), "unit": "run"})
    plain = np.nanmean(measured, axis=0)
    n_chains = plain.size
    evidence = {"n_chains": int(n_chains)}
    exact = np.asarray(exact, dtype=float)
    plain_error = _standard_error(plain)
    floor = min(_standard_error(exact), plain_error)
    parts = ErrorParts(math.sqrt(plain_error**2 - floor**2), floor, MORE_CHAINS,
                       CHAIN_FACTOR)
    if not control_variate:
        return ChainEstimate(plain, spread, parts, n_replicates, evidence)
    residual = measured - exact[None]
    residual_error = (float(np.nanstd(residual, ddof=1))
                      / math.sqrt(np.isfinite(residual).sum()))
    residual_mean = float(np.nanmean(residual))
    residual_z = abs(residual_mean) / residual_error if residual_error > 0 else math.inf
    evidence.update(without_control_variate={"estimate": float(plain.mean()),
                                             "mc_error": float(plain_error)},
                    residual_mean=residual_mean, residual_z=residual_z)
    if not residual_z <= z:
        evidence["control_variate"] = (
            f"off: the samples depart from the exact oracle given their schedules (residual z "
            f"{residual_z:.3g} > {z:.3g}), which the control variate would hide")
        return ChainEstimate(plain, spread, parts, n_replicates, evidence)
    evidence["control_variate"] = (
        "the exact oracle given each chain's schedule, β = 1: the estimate is its average "
        "over the chains, the samples' residual from it (mean zero) subtracted")
    return ChainEstimate(exact, spread,
                         ErrorParts(0.0, _standard_error(exact), MORE_CHAINS, CHAIN_FACTOR),
                         n_replicates, evidence)


def chain_level_check(name: str, measured: np.ndarray | None, expected: float,
                      false_failure_rate: float, n_comparisons: int, detail: str = "",
                      evidence: dict | None = None, per_run: bool = False, *,
                      exact: np.ndarray, control_variate: bool = False) -> Verdict:
    """The :func:`chain_estimate` of ``measured`` ``(replicate, chain)`` (and ``exact``, the
    exact oracle given each chain's schedule) against ``expected``; Student critical value for
    a family of ``n_comparisons`` at ``false_failure_rate`` over the units; margin half the
    standard deviation of one replicate of one chain."""
    # the units: every (replicate, chain) run, else every chain (one exact value each)
    n_units = np.asarray(measured).size if per_run else np.asarray(exact).size
    threshold = student_z_for_family(false_failure_rate, n_comparisons, n_units)
    estimate = chain_estimate(measured, exact, per_run=per_run,
                              control_variate=control_variate, z=threshold)
    return with_student_rate(oracle_check(
        name, estimate.mean, estimate.error, float(expected), threshold, detail=detail,
        evidence={**(evidence or {}), **estimate.evidence},
        n_replicates=estimate.n_replicates,
        margin=DEFAULT_MARGINS["oracle"].size * estimate.spread, parts=estimate.parts),
        n_units)


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
                     n_comparisons: int | None = None,
                     control_variate: bool = False, evidence: dict | None = None
                     ) -> list[Verdict]:
    """Chain-level checks of the window mean against μ and (``covariance``) of the second
    moment about μ against the posterior covariance s² I; the exact oracle's values are the
    evidence, and with ``control_variate`` the estimate (:func:`chain_estimate`).
    ``n_comparisons``: the Bonferroni family, by default these checks alone; ``evidence``:
    more of it for every check."""
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
            n_family, per_run=per_run, exact=exact_mean[..., j],
            control_variate=control_variate,
            detail=f"window mean against the posterior mean; the exact oracle puts it "
                   f"{(predicted - mu[j]) / sd:+.3g} posterior sd away{note}",
            evidence={**selection, **(evidence or {}), "exact_oracle": predicted,
                      "exact_shift_in_posterior_sd": (predicted - mu[j]) / sd}))
    for j, k in entries:
        target = s2 if j == k else 0.0
        predicted = float(exact_second[..., j, k].mean())
        verdicts.append(chain_level_check(
            f"posterior/{label}/covariance/({j},{k})", second[..., j, k], target,
            false_failure_rate, n_family, per_run=per_run, exact=exact_second[..., j, k],
            control_variate=control_variate,
            detail=f"window average of (θ - μ)(θ - μ)ᵀ against the posterior covariance; the "
                   f"exact oracle predicts {predicted / s2:.4g} s² (target "
                   f"{target / s2:.4g} s²){note}",
            evidence={**selection, **(evidence or {}), "exact_oracle": predicted,
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
