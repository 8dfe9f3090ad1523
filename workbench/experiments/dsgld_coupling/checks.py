"""Checks of ``dsgld-coupling``.

Chains of a group are identical, so every statistic of the sampler uses one chain per group
(its first member) and, with few groups, (replicate, group) runs as units.

- ``gradient/R=<R>`` and ``gradient/minibatch/R=<R>``: the measured E‖ĝ_R - ∇U(μ)‖² and its
  within-shard (minibatch) part against docs/math.md §11.2's identity for R distinct uniformly
  random shards (:func:`workbench.oracles.gradient_noise.coupled_gradient_noise`).
- ``slope/gradient-minibatch-vs-R``: log of the minibatch part against log R has slope -1
  (seed 004 §3.2.3: Cov/n → Cov/(Rn)).
- ``oracle/R=<R>/...``: the window mean and second moment about μ against the exact oracle,
  coupled groups moving as one chain with averaged gradients (and the noise correction, when on).
- ``posterior/R=<R>/...``: the same against the posterior (mean μ, covariance s² I), with the
  exact oracle's values as evidence; each R a family at the rate divided by the number of R.
"""

from __future__ import annotations

import math

import numpy as np
import xarray as xr

from bounds.checks import oracle_check, slope_check
from bounds.verdict import Verdict, z_for_family
from workbench.store.netcdf import config_of
from workbench.systems.distributed.windows import posterior_checks, window_oracle_checks


def group_selection(dataset: xr.Dataset, group_size: int) -> dict:
    first = dataset["first_member"].sel(group_size=group_size).values
    return {"group_size": group_size, "chain": np.flatnonzero(first).tolist()}


def _mean_and_error(values: np.ndarray) -> tuple[float, float]:
    return float(values.mean()), float(values.std(ddof=1) / math.sqrt(values.size))


def gradient_checks(dataset: xr.Dataset, rate: float) -> list[Verdict]:
    sizes = dataset["group_size"].values.tolist()
    z = z_for_family(rate, 2 * len(sizes))
    verdicts, minibatch = [], []
    for r in sizes:
        at = dataset.sel(group_size=r)
        for label, name in (("", "gradient_error"), ("/minibatch", "gradient_minibatch_error")):
            mean, error = _mean_and_error(at[name].values)
            exact = float(at[f"exact_{name}"])
            if label:
                minibatch.append((mean, error))
            verdicts.append(oracle_check(
                f"gradient{label}/R={r}", mean, error, exact, z,
                detail=("E‖ĝ_R - ∇U(μ)‖²" if not label else
                        "minibatch part E‖ĝ_R - E[ĝ_R | shards]‖²")
                + f" over {at[name].size} groups on random distinct shards, "
                "against docs/math.md §11.2",
                evidence={"group_size": r, "relative_to_R1": None},
                n_replicates=int(at[name].size), relative=True))
    if len(sizes) >= 3:
        values, errors = np.array(minibatch).T
        verdicts.append(slope_check(
            "slope/gradient-minibatch-vs-R", sizes, values, errors, -1.0,
            z_for_family(rate, 1),
            detail="seed 004 §3.2.3: averaging R chains' gradients divides the minibatch "
                   "variance by R (slope -1 in log-log)",
            evidence={"group_sizes": sizes},
            n_replicates=int(dataset["gradient_minibatch_error"].sel(
                group_size=sizes[0]).size)))
    return verdicts


def coupling_checks(dataset: xr.Dataset) -> list[Verdict]:
    rate = config_of(dataset)["false_failure_rate"]
    sizes = dataset["group_size"].values.tolist()
    verdicts = gradient_checks(dataset, rate)
    verdicts += window_oracle_checks(
        dataset, [(f"R={r}", group_selection(dataset, r)) for r in sizes], rate)
    for r in sizes:
        verdicts += posterior_checks(dataset, f"R={r}", group_selection(dataset, r),
                                     rate / len(sizes), per_run=True)
    return verdicts
