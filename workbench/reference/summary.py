"""Posterior expectations from a reference run, with their own Monte Carlo error and R-hat.

For each test function φ and component the reference states

- ``mean``: the estimate of E[φ(θ)] over all chains' kept draws, and ``mean_mc_error``, its
  Monte Carlo standard error: the larger of two estimates of it, because an error that is too
  small turns reference noise into false ``violated`` verdicts downstream:
  ``mean_mc_error_ess``, sd/√ESS with the ESS of Vehtari et al. (2021, "Rank-normalization,
  folding, and localization: an improved R-hat", Bayesian Analysis 16(2); computed by
  arviz-stats), and ``mean_mc_error_batch_means``, non-overlapping batch means with batch size
  ⌊√n⌋ per chain (Flegal & Jones 2010, "Batch means and spectral variance estimators in MCMC",
  Annals of Statistics 38(2));
- ``variance``: the posterior variance of φ, with ``variance_mc_error`` the larger of the
  delta-method 2·sd·MCSE(sd) (arviz-stats) and the batch-means error of (φ - mean)²;
- ``ess`` (of the mean) and ``rhat``, the rank-normalised split R-hat across chains (Vehtari
  et al. 2021; values above 1.01 say the chains disagree).

Test functions with fewer components than the widest are padded with NaN along ``component``.
"""

from __future__ import annotations

import json

import numpy as np
import xarray as xr
from arviz_stats.base import array_stats

from workbench.reference.chain import ChainRun
from workbench.reference.settings import ReferenceSettings
from workbench.stats.diagnostics import RHAT_LIMIT

METHOD_NAMES = {"mala": "MALA (Roberts & Tweedie 1996)",
                "hmc": "HMC with a fixed number of leapfrog steps (Neal 2011)"}


def batch_means_error(values: np.ndarray) -> np.ndarray:
    """Batch-means standard error of the mean of ``values`` ``(chains, draws, m)``: each chain
    cut into batches of ⌊√draws⌋ (a trailing remainder is left out), σ = sd(batch means) /
    √(number of batches)."""
    chains, draws, m = values.shape
    size = int(np.sqrt(draws))
    count = draws // size
    means = values[:, :count * size].reshape(chains, count, size, m).mean(axis=2)
    means = means.reshape(chains * count, m)
    return means.std(axis=0, ddof=1) / np.sqrt(chains * count)


def _moments(values: np.ndarray) -> dict[str, np.ndarray]:
    """Every per-component statistic of one test function's draws ``(chains, draws, m)``."""
    axes = {"chain_axis": 0, "draw_axis": 1}
    mean = values.mean(axis=(0, 1))
    sd = values.std(axis=(0, 1), ddof=1)
    variance = sd**2
    ess_error = array_stats.mcse(values, method="mean", **axes)
    batch_error = batch_means_error(values)
    sd_error = array_stats.mcse(values, method="sd", **axes)
    variance_batch_error = batch_means_error((values - mean) ** 2)
    return {
        "mean": mean,
        "mean_mc_error": np.maximum(ess_error, batch_error),
        "mean_mc_error_ess": ess_error,
        "mean_mc_error_batch_means": batch_error,
        "ess": array_stats.ess(values, method="mean", **axes),
        "rhat": array_stats.rhat(values, method="rank", **axes),
        "variance": variance,
        "variance_mc_error": np.maximum(2 * sd * sd_error, variance_batch_error),
    }


def summarise(run: ChainRun, settings: ReferenceSettings) -> xr.Dataset:
    """The reference Dataset of a run: statistics over ``(test_function, component)``, the
    acceptance rate and divergent proposals per ``chain``, the adapted inverse metric per
    ``parameter``, and the settings and adapted step size as attributes."""
    names = list(run.values)
    width = max(v.shape[2] for v in run.values.values())
    stats = {name: _moments(values) for name, values in run.values.items()}
    variables = {}
    for key in stats[names[0]]:
        table = np.full((len(names), width), np.nan)
        for row, name in enumerate(names):
            table[row, :stats[name][key].size] = stats[name][key]
        variables[key] = (("test_function", "component"), table)
    variables["acceptance_rate"] = (("chain",), run.acceptance_rate)
    variables["divergent_proposals"] = (("chain",), run.divergent_proposals)
    variables["inverse_metric"] = (("parameter",), run.inverse_metric)
    draws = settings.chains * settings.draws
    attrs = {
        "method": f"{METHOD_NAMES[settings.method]}; step adapted in warm-up by dual "
                  "averaging (Hoffman & Gelman 2014), then fixed; "
                  + ("diagonal metric from Stan's warm-up windows" if settings.metric == "diagonal"
                     else "identity metric"),
        "settings": json.dumps(settings.to_dict(), sort_keys=True),
        "step_size": run.step_size,
        "mean_acceptance_rate": float(run.acceptance_rate.mean()),
        "warmup_acceptance_rate": run.warmup_acceptance_rate,
        "total_draws": draws,
        "batch_size": int(np.sqrt(settings.draws)),
        "rhat_limit": RHAT_LIMIT,
        "max_rhat": float(np.nanmax(variables["rhat"][1])),
    }
    return xr.Dataset(variables, coords={"test_function": names,
                                         "component": np.arange(width),
                                         "chain": np.arange(settings.chains),
                                         "parameter": np.arange(run.inverse_metric.size)},
                      attrs=attrs)
