"""Checks of ``dsgld-trajectory``.

- ``oracle/T=<τ>/...``: window mean and second moment about μ against the exact oracle.
- ``distance/T=<τ>``: seed 004 §3.2.1 says long trajectories sample the mixture of local
  posteriors and short ones approach the standard SGLD posterior. For the longest τ of the grid
  the check measures Δ = W₂(samples, SGLD posterior) - W₂(samples, local mixture), for the
  shortest the opposite difference, so Δ > 0 is the claim. Kind ``ordering``: it holds when the
  measured Δ exceeds its critical value times its jackknife error, is violated when it is as
  far below zero, and is inconclusive in between; margin = Δ - z·error. The jackknife leaves
  out one (replicate, chain) unit at a time: given the schedule the units are independent (not
  identically distributed, which makes the estimate conservative). ``expected`` is the exact
  oracle's Δ.
"""

from __future__ import annotations

import math

import numpy as np
import xarray as xr

from bounds.checks import ordering_check
from bounds.verdict import Verdict
from workbench.experiments.distributed.references import wasserstein
from workbench.experiments.distributed.windows import (
    pooled,
    student_threshold,
    window_oracle_checks,
    with_student_rate,
)
from workbench.results import config_of

CLAIMS = {"long": ("local_mixture", "sgld_posterior"), "short": ("sgld_posterior",
                                                                 "local_mixture")}


def distances(dataset: xr.Dataset, length: int, prefix: str = "",
              keep=None) -> dict[str, float]:
    """W₂ from the pooled sample distribution to each reference."""
    mean, covariance = pooled(dataset, {"trajectory_length": length}, prefix, keep)
    return {ref: wasserstein(mean, covariance, dataset["reference_mean"].sel(reference=ref).values,
                             dataset["reference_covariance"].sel(reference=ref).values)
            for ref in dataset["reference"].values.tolist()}


def distance_check(dataset: xr.Dataset, length: int, nearer: str, farther: str,
                   false_failure_rate: float, n_family: int) -> Verdict:
    def gap(values: dict[str, float]) -> float:
        return values[farther] - values[nearer]

    measured = distances(dataset, length)
    exact = distances(dataset, length, "exact_")
    n_units = dataset.sizes["replicate"] * dataset.sizes["chain"]
    leave_one_out = np.array([gap(distances(dataset, length, keep=np.arange(n_units) != u))
                              for u in range(n_units)])
    error = math.sqrt((n_units - 1) * np.mean((leave_one_out - leave_one_out.mean()) ** 2))
    z = student_threshold(false_failure_rate, n_family, n_units)
    observed = gap(measured)
    sd = math.sqrt(float(dataset["posterior_variance"]))
    detail = (f"τ = {length}: W₂ to the {farther.replace('_', ' ')} minus W₂ to the "
              f"{nearer.replace('_', ' ')}, in posterior sd: measured {observed / sd:.3g}, exact "
              f"{gap(exact) / sd:.3g}. Distances (posterior sd): "
              + ", ".join(f"{k.replace('_', ' ')} {v / sd:.3g}" for k, v in measured.items()))
    return with_student_rate(ordering_check(
        f"distance/T={length}", observed, error, gap(exact), z, detail=detail,
        evidence={"measured_distances": measured, "exact_distances": exact,
                  "nearer": nearer, "farther": farther}, n_replicates=n_units), n_units)


def trajectory_checks(dataset: xr.Dataset) -> list[Verdict]:
    rate = config_of(dataset)["false_failure_rate"]
    lengths = dataset["trajectory_length"].values.tolist()
    verdicts = window_oracle_checks(
        dataset, [(f"T={t}", {"trajectory_length": t}) for t in lengths], rate)
    if len(lengths) >= 2:
        claims = [(max(lengths), *CLAIMS["long"]), (min(lengths), *CLAIMS["short"])]
        verdicts += [distance_check(dataset, t, nearer, farther, rate, len(claims))
                     for t, nearer, farther in claims]
    return verdicts
