"""Checks of ``elastic-vs-downpour``, at the last checkpoint (same local steps, same messages):

- ``oracle/.../protocol=...,period=π`` (:mod:`..protocols.checks`): every run against the exact
  oracle of its own schedule;
- ``oracle/mse-difference/theta/period=π``: MSE(elastic) − MSE(downpour) of φ̂(θ) against the
  exact difference (the runs are independent schedules on common random numbers, so the error
  of the difference is taken from the per-replicate differences of squared errors).

One family, Bonferroni over all comparisons.
"""

from __future__ import annotations

import numpy as np
import xarray as xr

from bounds.checks import oracle_check
from bounds.verdict import Verdict, z_for_family
from workbench.store.netcdf import config_of
from workbench.systems.protocols.checks import ORACLE_CHECKS, oracle_checks


def mse_difference(dataset: xr.Dataset, period: int) -> tuple[float, float, float]:
    """(measured, its standard error, exact) MSE(elastic) − MSE(downpour) of φ̂_L(θ)."""
    final = dataset.sel(period=period, test_function="theta").isel(checkpoint=-1)
    errors = final["squared_error"]
    difference = (errors.sel(protocol="elastic") - errors.sel(protocol="downpour")).values
    difference = difference[np.isfinite(difference)]
    exact = final["exact_mse"]
    return (float(difference.mean()), float(difference.std(ddof=1) / np.sqrt(difference.size)),
            float(exact.sel(protocol="elastic") - exact.sel(protocol="downpour")))


def elastic_vs_downpour_checks(dataset: xr.Dataset) -> list[Verdict]:
    config = config_of(dataset)
    n = config["n_replicates"]
    periods = dataset["period"].values
    n_points = dataset.sizes["protocol"] * periods.size
    z = z_for_family(config["false_failure_rate"], ORACLE_CHECKS * n_points + periods.size)
    verdicts = []
    for protocol in dataset["protocol"].values:
        for period in periods:
            final = dataset.sel(protocol=protocol, period=period).isel(checkpoint=-1)
            verdicts += oracle_checks(final, f"protocol={protocol},period={period}", z, n)
    for period in periods:
        observed, error, exact = mse_difference(dataset, period)
        messages = dataset["messages"].sel(period=period).isel(checkpoint=-1).values.tolist()
        verdicts.append(oracle_check(
            f"oracle/mse-difference/theta/period={period}", observed, error, exact, z,
            "MSE of φ̂_L(θ), elastic minus downpour, at the same local steps and messages, "
            "against the exact difference.", n_replicates=n,
            evidence={"messages": dict(zip(dataset["protocol"].values.tolist(), messages,
                                           strict=True))}))
    return verdicts
