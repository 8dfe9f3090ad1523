"""Checks of ``dsgld-imbalance``.

- ``oracle/<arm>/...``: both arms' window mean and second moment about μ at the run's step ε
  against the exact oracle given each chain's schedule (:func:`window_oracle_checks`): the
  sampler does what the mathematics says it does, excess and all.
- ``posterior/<arm>/...``: each arm's measured window mean and second moment about μ at the
  run's ε against the posterior mean μ and covariance s² I (:func:`posterior_checks`). At
  the paper's ε the corrected arm's covariance exceeds s² (below): that ``violated`` verdict
  is a finding, kept in the list with the exact split of the excess by source.
- ``limit/corrected/...``: what the corrected chain targets. The exact oracle's window mean and
  second moment about μ at ε and at ε/k for each ``step_divisor`` k (by default ε/2 and ε/4)
  on the same schedule and the same simulated time, extrapolated to ε → 0 chain by chain
  (:func:`step_limit`), against μ and the posterior covariance s² I; chains carry independent
  schedules and are the units of the test. These verdicts are computed from the exact oracle
  alone (no sampler run enters them): their kind is ``limit (exact oracle)``.
- The uncorrected arm gets the same posterior and limit checks as a visible negative control:
  without the N_s/(N q_s) correction the chain targets the wrong distribution, and its
  verdicts say so.

Why the covariance is judged in the limit and not at the run's ε: at any fixed ε a D-SGLD
chain's covariance exceeds s² by O(ε) (minibatch noise, and the trajectories' drift towards
the local posteriors, seed 004 §3.2.1), and that excess relative to s² scales as ε N / σ_x²,
with σ_x a scale seed 004 does not give (we use 1). At the paper's ε it is about 0.5 s²; the
detail of every ``limit`` verdict states it, split by source, next to the measured value, and
the ``oracle`` checks confirm the sampler has it. The N_s/(N q_s) correction is a claim about
the target, which is what the limit checks test; the uncorrected arm fails them (the
negative control), and so does the run's own ε taken as if it were the limit.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import xarray as xr

from bounds.verdict import Verdict
from workbench.store.netcdf import config_of
from workbench.systems.distributed.windows import (
    about,
    chain_level_check,
    posterior_checks,
    window_oracle_checks,
    window_statistics,
)


def richardson_weights(fractions) -> np.ndarray:
    """Weights w with Σ_i w_i f(c_i ε) = f(0) for every polynomial f of degree < len(c): the
    Lagrange basis of the points c_i = ``fractions`` evaluated at 0 (Richardson
    extrapolation; for c = 1, 1/2, 1/4 the weights are 1/3, -2, 8/3)."""
    c = np.asarray(fractions, dtype=float)
    if c.size < 2 or np.any(c <= 0) or np.unique(c).size != c.size:
        raise ValueError(f"need at least two distinct positive step fractions, got {fractions}")
    return np.array([np.prod([c[j] / (c[j] - c[i]) for j in range(c.size) if j != i])
                     for i in range(c.size)])


def step_ladder(dataset: xr.Dataset, arm: str) -> tuple[list[int], np.ndarray, np.ndarray]:
    """The exact window mean ``(K, C, d)`` and second moment about μ ``(K, C, d, d)`` of one
    arm at ε and at ε/k for each ``step_divisor`` k (divisor 1 first)."""
    at = dataset.sel(correction=arm)
    mu = dataset["posterior_mean"].values
    divisors = [1] + at["step_divisor"].values.tolist()
    means = np.concatenate([at["exact_window_mean"].values[None],
                            at["exact_window_mean_smaller_steps"].values])
    seconds = np.concatenate([at["exact_window_second"].values[None],
                              at["exact_window_second_smaller_steps"].values])
    return divisors, means, about(mu, means, seconds)


def step_limit(values: np.ndarray, divisors) -> np.ndarray:
    """``values`` at steps ε/k (first axis, one per divisor k) extrapolated to ε → 0."""
    weights = richardson_weights([1 / k for k in divisors])
    return np.tensordot(weights, values, axes=1)


def excess_split(dataset: xr.Dataset, arm: str) -> str:
    """The exact excess of tr E(θ - μ)(θ - μ)ᵀ over d s² at the run's ε, with and without
    minibatch noise."""
    at = dataset.sel(correction=arm)
    mu = dataset["posterior_mean"].values
    s2 = float(dataset["posterior_variance"])
    dim = dataset.sizes["component"]

    def trace(mean, second) -> float:
        return float(np.trace(about(mu, mean, second).mean(axis=0))) / (dim * s2)

    total = trace(at["exact_window_mean"].values, at["exact_window_second"].values)
    quiet = trace(at["exact_window_mean_without_minibatch_noise"].values,
                  at["exact_window_second_without_minibatch_noise"].values)
    return (f"At the run's ε the exact oracle, averaged over coordinates, gives {total:.3g} s²: "
            f"{total - quiet:.3g} s² from minibatch noise and {quiet - 1:.3g} s² from the "
            "trajectories' drift towards the local posteriors, both O(ε) and, relative to "
            "s², proportional to ε N/σ_x² for a data scale σ_x that seed 004 does not give")


SHORT_BURN_IN = 3.0  # relaxation times below which a window still carries the start


def relaxation_note(dataset: xr.Dataset) -> str:
    """How many relaxation times of the full-data chain, 1/(h/s²) updates at the run's step,
    the burn-in and the window span: a window compared with the stationary posterior must
    start well after the transient from θ₀ (with ε/k the windows are k times longer, so the
    counts are the same at every step of the ladder)."""
    config = config_of(dataset)
    updates = float(dataset["posterior_variance"]) / float(dataset["step_size"])
    burn_in, window = config["burn_in"] / updates, config["n_iterations"] / updates
    note = (f"Burn-in and window span {burn_in:.3g} and {window:.3g} relaxation times "
            f"(1/(h/s²) = {updates:.3g} updates)")
    if burn_in < SHORT_BURN_IN:
        note += ("; the burn-in is too short for the window to be stationary, so this "
                 "comparison with the posterior also measures the transient from θ₀: "
                 "lengthen burn_in")
    return note


def limit_checks(dataset: xr.Dataset, arm: str, false_failure_rate: float,
                 n_comparisons: int, note: str = "") -> list[Verdict]:
    """The arm's ε → 0 limit (module docstring) against μ and s² I, one chain-level check per
    coordinate of the mean and per entry j <= k of the covariance."""
    divisors, means, seconds = step_ladder(dataset, arm)
    mu = dataset["posterior_mean"].values
    s2 = float(dataset["posterior_variance"])
    sd = math.sqrt(s2)
    limit_mean, limit_second = step_limit(means, divisors), step_limit(seconds, divisors)
    measured_mean, measured_second = window_statistics(dataset, {"correction": arm})
    steps = ", ".join("ε" if k == 1 else f"ε/{k}" for k in divisors)
    weights = ", ".join(f"{w:.4g}" for w in richardson_weights([1 / k for k in divisors]))
    how = (f"exact oracle on the same schedule at {steps} (windows of equal simulated time), "
           f"extrapolated to ε → 0 chain by chain (Richardson weights {weights})")
    tail = f". {note}" if note else ""
    dim = mu.size
    verdicts = []
    for j in range(dim):
        ladder = (means[:, :, j].mean(axis=1) - mu[j]) / sd
        verdicts.append(_as_limit(chain_level_check(
            f"limit/{arm}/mean/component={j}", limit_mean[None, :, j], mu[j],
            false_failure_rate, n_comparisons,
            detail=(f"window mean in the ε → 0 limit against the posterior mean: {how}; offset "
                    f"in posterior sd along the steps {_listed(ladder)}, measured at ε "
                    f"{(measured_mean[..., j].mean() - mu[j]) / sd:+.3g}{tail}"),
            evidence={"correction": arm, "step_divisors": divisors,
                      "offset_in_posterior_sd": ladder.tolist()})))
    for j in range(dim):
        for k in range(j, dim):
            target = s2 if j == k else 0.0
            ladder = seconds[:, :, j, k].mean(axis=1) / s2
            verdicts.append(_as_limit(chain_level_check(
                f"limit/{arm}/covariance/({j},{k})", limit_second[None, :, j, k], target,
                false_failure_rate, n_comparisons,
                detail=(f"window average of (θ - μ)(θ - μ)ᵀ in the ε → 0 limit against the "
                        f"posterior covariance ({target / s2:.3g} s²): {how}; in s² along the "
                        f"steps {_listed(ladder)}, limit "
                        f"{limit_second[:, j, k].mean() / s2:.4g}; measured at ε "
                        f"{measured_second[..., j, k].mean() / s2:.4g}{tail}"),
                evidence={"correction": arm, "step_divisors": divisors,
                          "in_posterior_variances": ladder.tolist()})))
    return verdicts


LIMIT_KIND = "limit (exact oracle)"


def _as_limit(verdict: Verdict) -> Verdict:
    return dataclasses.replace(
        verdict, kind=LIMIT_KIND,
        detail="From the exact oracle alone (no sampler run enters this verdict): "
               + verdict.detail)


def _listed(values) -> str:
    return ", ".join(f"{v:.4g}" for v in values)


NEGATIVE_CONTROL = ("negative control: without the N_s/(N q_s) correction the chain targets "
                    "the wrong distribution, so these comparisons with the posterior are "
                    "expected to be violated")


def imbalance_checks(dataset: xr.Dataset) -> list[Verdict]:
    rate = config_of(dataset)["false_failure_rate"]
    arms = dataset["correction"].values.tolist()
    verdicts = window_oracle_checks(dataset, [(arm, {"correction": arm}) for arm in arms], rate)
    dim = dataset.sizes["component"]
    entries = dim * (dim + 1) // 2
    # per arm: posterior means and covariances, limit means and covariances
    family = len(arms) * 2 * (dim + entries)
    relaxation = relaxation_note(dataset)
    for arm in arms:
        split = excess_split(dataset, arm)
        control = f". {NEGATIVE_CONTROL}" if arm != "corrected" else ""
        verdicts += posterior_checks(dataset, arm, {"correction": arm}, rate,
                                     n_comparisons=family,
                                     note=f". {split}. {relaxation}{control}")
        verdicts += limit_checks(dataset, arm, rate, family,
                                 note=f"{split}. {relaxation}{control}")
    return verdicts
