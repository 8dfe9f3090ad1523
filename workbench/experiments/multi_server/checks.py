"""Checks of ``multi-server`` (seed 001 Theorems 6-7), one family (Bonferroni over all).

Gaussian mean, at the last checkpoint L, against the exact oracle of :mod:`.gaussian`:

- ``gaussian/oracle/variance/S=s`` (relative) and ``gaussian/oracle/bias/S=s`` (absolute,
  half a replicate's standard deviation): the pooled estimate matches the exact values;
- ``gaussian/theorem7/variance-vs-servers``: the log-log slope of the variance against S is
  −1 within ``slope_margin``;
- ``gaussian/theorem6/bias-unchanged``: the bias is the same for every S within
  ``invariance_margin`` (a ratio; the bias is positive from θ₀ above the posterior mean).

Logistic regression, on the held-out loss at the last checkpoint:

- ``logistic/theorem7/variance-vs-servers``: the variance's slope against S is −1;
- ``logistic/theorem6/loss-unchanged``: the mean test loss is the same for every S within
  ``loss_margin`` (pooling servers averages φ̂, it does not move its expectation).
"""

from __future__ import annotations

import xarray as xr

from bounds.checks import invariance_check, oracle_check, slope_check
from bounds.verdict import Verdict, z_for_family
from workbench.store.netcdf import config_of


def multi_server_checks(dataset: xr.Dataset) -> list[Verdict]:
    config = config_of(dataset)
    servers = dataset["servers"].values
    z = z_for_family(config["false_failure_rate"], 2 * servers.size + 4)
    final = dataset.isel(checkpoint=-1)
    labels = [f"S={s}" for s in servers]
    n_gaussian = config["gaussian_replicates"]
    verdicts = []
    for s in servers:
        at = final.sel(servers=s)
        verdicts.append(oracle_check(
            f"gaussian/oracle/variance/S={s}", at["variance"], at["variance_se"],
            at["exact_variance"], z, "Variance of the pooled φ̂_L(θ) against the exact value.",
            n_replicates=n_gaussian, relative=True))
        verdicts.append(oracle_check(
            f"gaussian/oracle/bias/S={s}", at["bias"], at["bias_se"], at["exact_bias"], z,
            "Bias of the pooled φ̂_L(θ) against the exact value.", n_replicates=n_gaussian))
    verdicts.append(slope_check(
        "gaussian/theorem7/variance-vs-servers", servers, final["variance"].values,
        final["variance_se"].values, -1.0, z, "Variance of the pooled φ̂_L(θ) against S "
        "(Theorem 7: 1/S).", margin=config["slope_margin"], n_replicates=n_gaussian,
        evidence={"exact_variance": final["exact_variance"].values.tolist()}))
    verdicts.append(invariance_check(
        "gaussian/theorem6/bias-unchanged", final["bias"].values, final["bias_se"].values,
        labels, z, "Bias of the pooled φ̂_L(θ) across S (Theorem 6: not reduced).",
        margin=config["invariance_margin"], n_replicates=n_gaussian,
        evidence={"exact_bias": final["exact_bias"].values.tolist()}))
    loss = dataset.sel(logistic_test_function="log_loss").isel(logistic_checkpoint=-1)
    logistic_servers = dataset["logistic_servers"].values
    verdicts.append(slope_check(
        "logistic/theorem7/variance-vs-servers", logistic_servers,
        loss["logistic_variance"].values, loss["logistic_variance_se"].values, -1.0, z,
        "Variance of the pooled held-out loss against S (Theorem 7: 1/S).",
        margin=config["slope_margin"], n_replicates=config["n_replicates"]))
    verdicts.append(invariance_check(
        "logistic/theorem6/loss-unchanged", loss["logistic_mean"].values,
        loss["logistic_mean_se"].values, [f"S={s}" for s in logistic_servers], z,
        "Mean held-out loss across S (Theorem 6: pooling does not move it).",
        margin=config["loss_margin"], n_replicates=config["n_replicates"]))
    return verdicts
