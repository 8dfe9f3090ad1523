"""Checks of ``stale-blr-speedup`` (seed 001 §5.1, Figure 2; Theorem 4, Corollary 5).

Four claims on the variance over replicates of the held-out logistic loss φ̂_L, one family
(Bonferroni over four checks at the run's ``false_failure_rate``):

- ``speed-up/iteration``, ``speed-up/slope``, ``speed-up/time-bend``: see
  :mod:`workbench.systems.asynchronous.speedup`; the bend P* comes from the latency
  parameters (:func:`workbench.systems.asynchronous.system.saturation_workers`);
- ``theorem4/variance-at-L``: at the common number of updates L the variance is the same for
  every P although the staleness grows with P (τ̄ ≈ P − 1): Theorem 4's variance bound has no
  τ. Pairwise ratios within ``invariance_margin``.
"""

from __future__ import annotations

import xarray as xr

from bounds.verdict import Verdict, z_for_family
from workbench.store.netcdf import config_of
from workbench.systems.asynchronous.speedup import speedup_family
from workbench.systems.asynchronous.system import saturation_workers

N_CHECKS = 4


def blr_speedup_checks(dataset: xr.Dataset) -> list[Verdict]:
    config = config_of(dataset)
    return speedup_family(
        "speed-up", "theorem4/variance-at-L", dataset.sel(test_function="log_loss"), "workers",
        z_for_family(config["false_failure_rate"], N_CHECKS), bend=saturation_workers(config),
        margins=config, n_replicates=config["n_replicates"],
        detail=f"Variance of the held-out loss at L = {config['n_updates']} across workers "
               "(Theorem 4: free of τ).")
