"""Checks of ``downpour-period`` (seed 003 §B2, downpour), at the last checkpoint L.

- ``oracle/.../period=π,workers=P`` (:mod:`..protocols.checks`): every point's measured bias
  and variance against its exact oracle;
- ``envelope/downpour-e3/theta_squared``: the downpour bound C₁(E₁ + E₂ + E₃) with a fixed step
  (terms h², σ²/L, 1/(Lh), π²(P − 1)²h², registry ``seed003-downpour-mse``), constants fitted
  on the points with π(P − 1) at most its median, must stay above the MSE of φ̂_L(θ²) at the
  larger π(P − 1): at fixed h and L only the E₃ term changes across the grid, so this asks
  whether the MSE grows no faster than E₃ beyond where it was calibrated. φ = θ² because its
  estimate carries the staleness bias (math.md §7: E θ² is biased by about h(τ + ½));
- ``rate/downpour-e3/theta_squared``: the excess MSE over the synchronous run with the same π,
  MSE(π, P) − MSE(π, 1), measured replicate by replicate (common random numbers), against
  x = π(P − 1) over the points with P > 1: its log-log slope at most 2 (E₃ ∝ x²) plus
  ``rate_margin``. A slope well below 2 means E₃ is loose here.

One family: Bonferroni over the oracle comparisons (two-sided) and the one-sided envelope
points and rate.
"""

from __future__ import annotations

import numpy as np
import xarray as xr

from bounds import registry
from bounds.checks import envelope_check, fit_envelope, rate_check
from bounds.verdict import Verdict, one_sided_z_for_family, z_for_family
from simulators.seeding import generator
from workbench.experiments.protocols.checks import ORACLE_CHECKS, oracle_checks
from workbench.results import config_of

BOUND = "seed003-downpour-mse"
RATE_EXPONENT = 2.0


def staleness_bound(dataset: xr.Dataset) -> xr.DataArray:
    """x = π(P − 1): seed 003's bound on the staleness in local steps."""
    return dataset["period"] * (dataset["workers"] - 1)


def e3_envelope(dataset: xr.Dataset, function: str = "theta_squared"):
    """The bound's envelope fitted on the points with π(P − 1) at most its median, with the
    grid values, the observed MSE and its error, and the held-out mask."""
    config = config_of(dataset)
    final = dataset.sel(test_function=function).isel(checkpoint=-1)
    x = staleness_bound(dataset)
    calibration = x <= float(np.median(x))
    values = {"step_size": config["step_size"], "n_iterations": config["iterations"],
              "communication_period": dataset["period"], "n_workers": dataset["workers"],
              "noise_level": 1.0}
    envelope = fit_envelope(registry.get(BOUND).with_fixed_step(), values, final["mse"],
                            calibration, label=f"downpour-period, π(P − 1) ≤ median, φ = "
                            f"{function}")
    return envelope, values, final["mse"], final["mse_se"], ~calibration


def excess_samples(dataset: xr.Dataset, function: str = "theta_squared"):
    """(x, samples): x = π(P − 1) of the points with P > 1 and, per point, the replicates'
    squared error minus the same replicate's at P = 1 with the same π."""
    errors = dataset["squared_error"].sel(test_function=function).isel(checkpoint=-1)
    baseline = errors.sel(workers=1)
    stale = dataset["workers"].values[dataset["workers"].values > 1]
    excess = (errors.sel(workers=stale) - baseline).stack(point=("period", "workers"))
    x = (excess["period"] * (excess["workers"] - 1)).values
    return x, excess.transpose("point", "replicate").values


def downpour_period_checks(dataset: xr.Dataset) -> list[Verdict]:
    config = config_of(dataset)
    n = config["n_replicates"]
    envelope, values, observed, errors, held_out = e3_envelope(dataset)
    n_held_out = int(held_out.sum())
    n_points = dataset.sizes["period"] * dataset.sizes["workers"]
    z = z_for_family(config["false_failure_rate"], ORACLE_CHECKS * n_points + n_held_out + 1)
    z_one = one_sided_z_for_family(config["false_failure_rate"],
                                   ORACLE_CHECKS * n_points + n_held_out + 1)
    verdicts = []
    for period in dataset["period"].values:
        for workers in dataset["workers"].values:
            final = dataset.sel(period=period, workers=workers).isel(checkpoint=-1)
            verdicts += oracle_checks(final, f"period={period},workers={workers}", z, n)
    verdicts.append(envelope_check(
        "envelope/downpour-e3/theta_squared", envelope, values, observed, errors, z_one,
        held_out, margin=config["envelope_margin"], n_replicates=n,
        detail=(f"Seed 003's downpour bound, terms {', '.join(envelope.terms)}, constants "
                "fitted where π(P − 1) is at most its median, must stay above the MSE of "
                "φ̂_L(θ²) at the larger π(P − 1)."),
        evidence={"exact_mse_theta": dataset["exact_mse"].sel(test_function="theta")
                  .isel(checkpoint=-1).values.tolist()}))
    x, samples = excess_samples(dataset)
    verdicts.append(rate_check(
        "rate/downpour-e3/theta_squared", x, samples, RATE_EXPONENT, z_one,
        generator(int(dataset.attrs["seed"]), "downpour-period", "check", "rate"),
        statistic="mean", paired=True, margin=config["rate_margin"],
        detail=("Excess MSE of φ̂_L(θ²) over the synchronous run (P = 1, same π) against "
                "π(P − 1): E₃ grows like its square, so the slope must not be steeper than 2."),
        evidence={"period": dataset["period"].values.tolist(),
                  "workers": dataset["workers"].values.tolist()}))
    return verdicts
