"""The ``limit`` check of a traveling-chains study: what a D-SGLD chain targets as ε → 0
(seed 004 §3.1-3.2).

At any fixed ε a D-SGLD chain's covariance exceeds the posterior's s² by O(ε): minibatch noise,
and the trajectories' drift towards the local posteriors (seed 004 §3.2.1). That excess
relative to s² scales as ε N / σ_x², with σ_x a data scale the paper does not give. The
N_s/(N q_s) correction is a claim about the target, so it is judged in the limit: the exact
oracle's window mean and second moment about μ at ε and at ε/k for each ``step_divisor`` k, on
the same schedule and the same simulated time (:mod:`.sharded_point`), extrapolated to ε → 0
chain by chain (Richardson extrapolation), against μ and s² I. The chains are the units of the
test, those of the run's schedule and of its ``limit_schedules`` − 1 other schedules of the
same system (each simulated from its own seed, with its own chains): the chains of one
schedule are taken as independent, which on traveling chains overstates the error (chains
moved by permutation share out the shards, so their average varies less than independent
chains' would), and more schedules add chains as a sequential check asks for them. The
verdicts come from the exact oracle alone (no sampler run enters them): their kind is
:data:`LIMIT_KIND`. An uncorrected arm fails them (a negative control), and so would the run's own
ε taken as the limit.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence

import numpy as np
import xarray as xr

from bounds.equivalence import CHAINS_FROM
from bounds.verdict import Verdict
from workbench.store.netcdf import config_of
from workbench.studies.schema import LIMIT_SCHEDULES, RANDOM_ASSIGNMENT
from workbench.studies.sharded_judgements import point_notes, selections, target_family
from workbench.systems.distributed.windows import about, chain_level_check, window_statistics

LIMIT_KIND = "limit (exact oracle)"
#: the step ladder on the point's other schedules (``limit_schedules``,
#: :func:`workbench.studies.sharded_point._other_schedules`)
OTHER_SCHEDULES = "exact_window_mean_other_schedules"


def richardson_weights(fractions) -> np.ndarray:
    """Weights w with Σ_i w_i f(c_i ε) = f(0) for every polynomial f of degree < len(c): the
    Lagrange basis of the points c_i = ``fractions`` evaluated at 0 (Richardson
    extrapolation; for c = 1, 1/2, 1/4 the weights are 1/3, -2, 8/3)."""
    c = np.asarray(fractions, dtype=float)
    if c.size < 2 or np.any(c <= 0) or np.unique(c).size != c.size:
        raise ValueError(f"need at least two distinct positive step fractions, got {fractions}")
    return np.array([np.prod([c[j] / (c[j] - c[i]) for j in range(c.size) if j != i])
                     for i in range(c.size)])


def step_ladder(dataset: xr.Dataset, selection: dict) -> tuple[list[int], np.ndarray,
                                                                np.ndarray]:
    """The exact window mean ``(K, C, d)`` and second moment about μ ``(K, C, d, d)`` of one
    point at ε and at ε/k for each ``step_divisor`` k (divisor 1 first), the chains of the
    run's schedule first, then those of its other schedules (``limit_schedules``) in order."""
    at = dataset.sel(selection)
    mu = dataset["posterior_mean"].values
    divisors = [1] + at["step_divisor"].values.tolist()
    means = np.concatenate([at["exact_window_mean"].values[None],
                            at["exact_window_mean_smaller_steps"].values])
    seconds = np.concatenate([at["exact_window_second"].values[None],
                              at["exact_window_second_smaller_steps"].values])
    if OTHER_SCHEDULES in at:
        def along_chains(name: str, run: np.ndarray) -> np.ndarray:
            other = at[name].transpose("ladder_divisor", "limit_schedule", "chain", ...).values
            return np.concatenate([run, other.reshape((len(divisors), -1) + other.shape[3:])],
                                  axis=1)

        means = along_chains(OTHER_SCHEDULES, means)
        seconds = along_chains("exact_window_second_other_schedules", seconds)
    return divisors, means, about(mu, means, seconds)


def step_limit(values: np.ndarray, divisors) -> np.ndarray:
    """``values`` at steps ε/k (first axis, one per divisor k) extrapolated to ε → 0."""
    weights = richardson_weights([1 / k for k in divisors])
    return np.tensordot(weights, values, axes=1)


def limit_checks(dataset: xr.Dataset, label: str, selection: dict, false_failure_rate: float,
                 n_comparisons: int, note: str = "") -> list[Verdict]:
    """One point's ε → 0 limit (module docstring) against μ and s² I, one chain-level check
    per coordinate of the mean and per entry j <= k of the covariance."""
    divisors, means, seconds = step_ladder(dataset, selection)
    mu = dataset["posterior_mean"].values
    s2 = float(dataset["posterior_variance"])
    sd = math.sqrt(s2)
    limit_mean, limit_second = step_limit(means, divisors), step_limit(seconds, divisors)
    measured_mean, measured_second = window_statistics(dataset, selection)
    n_schedules = 1 + (dataset.sizes["limit_schedule"] if OTHER_SCHEDULES in dataset else 0)
    # more schedules add chains where they are drawn at random (the configuration refuses
    # them otherwise)
    random = config_of(dataset)["assignment"] == RANDOM_ASSIGNMENT
    chains = {**({CHAINS_FROM: LIMIT_SCHEDULES} if random else {}), LIMIT_SCHEDULES: n_schedules}
    steps = ", ".join("ε" if k == 1 else f"ε/{k}" for k in divisors)
    weights = ", ".join(f"{w:.4g}" for w in richardson_weights([1 / k for k in divisors]))
    on = ("the same schedule" if n_schedules == 1 else
          f"the same {n_schedules} schedules (the run's and {n_schedules - 1} more)")
    how = (f"exact oracle on {on} at {steps} (windows of equal simulated time), "
           f"extrapolated to ε → 0 chain by chain (Richardson weights {weights})")
    tail = f". {note}" if note else ""
    dim = mu.size
    verdicts = []
    for j in range(dim):
        ladder = (means[:, :, j].mean(axis=1) - mu[j]) / sd
        verdicts.append(_as_limit(chain_level_check(
            f"limit/{label}/mean/component={j}", None, mu[j],
            false_failure_rate, n_comparisons, exact=limit_mean[:, j],
            detail=(f"window mean in the ε → 0 limit against the posterior mean: {how}; offset "
                    f"in posterior sd along the steps {_listed(ladder)}, measured at ε "
                    f"{(measured_mean[..., j].mean() - mu[j]) / sd:+.3g}{tail}"),
            evidence={**selection, **chains, "step_divisors": divisors,
                      "offset_in_posterior_sd": ladder.tolist()})))
    for j in range(dim):
        for k in range(j, dim):
            target = s2 if j == k else 0.0
            ladder = seconds[:, :, j, k].mean(axis=1) / s2
            verdicts.append(_as_limit(chain_level_check(
                f"limit/{label}/covariance/({j},{k})", None, target,
                false_failure_rate, n_comparisons, exact=limit_second[:, j, k],
                detail=(f"window average of (θ - μ)(θ - μ)ᵀ in the ε → 0 limit against the "
                        f"posterior covariance ({target / s2:.3g} s²): {how}; in s² along the "
                        f"steps {_listed(ladder)}, limit "
                        f"{limit_second[:, j, k].mean() / s2:.4g}; measured at ε "
                        f"{measured_second[..., j, k].mean() / s2:.4g}{tail}"),
                evidence={**selection, **chains, "step_divisors": divisors,
                          "in_posterior_variances": ladder.tolist()})))
    return verdicts


def limit_family(dataset: xr.Dataset, dims, symbols, rate: float,
                 kinds: Sequence[str] = ()) -> list[Verdict]:
    """Every point's limit checks, in the family of
    :func:`~workbench.studies.sharded_judgements.target_family` (``kinds``: the study's check
    kinds)."""
    chosen = selections(dataset, dims, symbols)
    family = target_family(dataset, len(chosen), kinds)
    return [verdict for name, selection in chosen
            for verdict in limit_checks(dataset, name, selection, rate, family,
                                        note=point_notes(dataset, selection))]


def _as_limit(verdict: Verdict) -> Verdict:
    return dataclasses.replace(
        verdict, kind=LIMIT_KIND,
        detail="From the exact oracle alone (no sampler run enters this verdict): "
               + verdict.detail)


def _listed(values) -> str:
    return ", ".join(f"{v:.4g}" for v in values)
