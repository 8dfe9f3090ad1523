"""Checks of ``downpour-period`` (seed 003 §B2, downpour), at the last checkpoint L.

- ``oracle/.../period=π,workers=P`` (:mod:`..protocols.checks`): every point's measured bias
  and variance against its exact oracle;
- ``envelope/downpour-e3/theta_squared``: the downpour bound C₁(E₁ + E₂ + E₃) with a fixed step
  (terms h², σ²/L, 1/(Lh), π²(P − 1)²h², registry ``seed003-downpour-mse``), constants fitted
  on the points with π(P − 1) at most its median, must stay above the MSE of φ̂_L(θ²) at the
  larger π(P − 1): at fixed h and L only the E₃ term changes across the grid, so this asks
  whether the MSE grows no faster than E₃ beyond where it was calibrated. φ = θ² because its
  estimate carries the staleness bias (docs/math.md §7: E θ² is biased by about h(τ + ½));
- ``rate/downpour-e3/theta_squared``: the excess MSE over the synchronous run with the same π,
  MSE(π, P) − MSE(π, 1), measured replicate by replicate (common random numbers), against
  x = π(P − 1) over the points with P > 1: its log-log slope at most 2 (E₃ ∝ x²) plus
  ``rate_margin``. A slope well below 2 means E₃ is loose here.

The logistic-regression half (:mod:`.logistic`), φ = held-out log-loss, judged against the
reference posterior's m ± σ_ref (never m alone):

- ``reference/log_loss/period=π,workers=1``: the synchronous runs' φ̂_L against the reference
  (:func:`workbench.reference.reference_check`: run and reference errors combined, margin half
  the per-replicate spread); P = 1 has no staleness, so seed 003's bound is the standard B₀.
  With one worker, period π is SGLD for π·L local steps with every π-th state kept (bit for
  bit, tests), so these checks judge SGLD's average over π·L steps from the Laplace starts,
  not downpour: the start's transient (the slowest mode relaxes in 1/(h·λ_min(H)) steps) and
  SGLD's bias at step h, which grow apart with π. ``benchmarks/downpour_p1.py`` measures them:
  at the quick sizes the Laplace starts sit below the reference, SGLD's stationary value at
  h = 2·10⁻³ with minibatch 10 well above it (the full-gradient chain at the same h agrees
  with it: the minibatch noise makes the bias), and φ̂_L(π) climbs from one to the other;
- ``rate/downpour-e3/log_loss``: the excess of the squared error over the synchronous run with
  the same π, replicate by replicate, against x = π(P − 1): slope at most 2 + ``rate_margin``
  as for the Gaussian half. The excess is linear in the reference mean m,
  ∂/∂m mean((φ̂_P − m)² − (φ̂_1 − m)²) = −2·mean(φ̂_P − φ̂_1), so σ_ref enters each resample as
  one common shift (``target_error`` of :func:`bounds.checks.rate_check`). With
  δ = φ̂_P − φ̂_1 the excess is exactly δ² + 2δ(φ̂_1 − m): the staleness part and a part
  carried by the synchronous run's own error φ̂_1 − m, which changes sign with π (above), so
  the excess can be negative and its slope is not E₃'s alone; both parts are in the evidence;
- ``rate/downpour-e3/log_loss_deviation``: the staleness part alone, the mean of δ² against
  x: slope at most 2 + ``rate_margin``. δ compares runs with the same starts and noise, so it
  needs no reference. Where h·λ_max(H) nears the stability limit of gradient steps delayed
  by about x (2 sin(π/(2(2x + 1))) for a constant delay x, Levin & May 1976), staleness
  amplifies the moves rather than perturbing them and the growth is steeper than E₃'s x²
  (printed by ``benchmarks/downpour_p1.py``);
- ``ordering/downpour-e3/log_loss``: the excess at the largest π(P − 1) is above the excess at
  the smallest (E₃ grows with π(P − 1)); the gap's error combines the replicates' paired
  spread and the reference's error through the same derivative. The excess has the two parts
  above: at the full sizes the synchronous part is 3 to 15 times the staleness part for
  π(P − 1) ≥ 2, so this ordering holds mostly through it.

One family: Bonferroni over the oracle and reference comparisons (two-sided) and the one-sided
envelope points, rates and ordering.
"""

from __future__ import annotations

import numpy as np
import xarray as xr

from bounds import registry
from bounds.checks import envelope_check, fit_envelope, ordering_check, rate_check
from bounds.verdict import Verdict, one_sided_z_for_family, z_for_family
from simulators.seeding import generator
from workbench.experiments.downpour_period.logistic import (
    PREFIX,
    TEST_FUNCTION,
    stored_reference,
)
from workbench.reference import combined_error, reference_check, reference_value
from workbench.store.netcdf import config_of
from workbench.systems.protocols.checks import ORACLE_CHECKS, oracle_checks

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


def against_synchronous(values: xr.DataArray) -> xr.DataArray:
    """``values`` at the points with P > 1 minus the same replicate's at P = 1 with the same π
    (dims as ``values``, ``workers`` without 1)."""
    stale = values["workers"].values[values["workers"].values > 1]
    return values.sel(workers=stale) - values.sel(workers=1)


def by_point(values: xr.DataArray) -> xr.DataArray:
    """``values`` with (period, workers) stacked into a leading dim ``point``."""
    return values.stack(point=("period", "workers")).transpose("point", ...)


def logistic_excess(dataset: xr.Dataset):
    """(x, samples, target_error) of the logistic half: x = π(P − 1) of the points with P > 1;
    per point, the replicates' squared error of φ̂_L(log-loss) minus the same replicate's at
    P = 1 with the same π; and the signed error of each point's mean excess through the
    reference's own error, −2·mean(φ̂_P − φ̂_1)·σ_ref (module docstring)."""
    excess = by_point(against_synchronous(dataset[f"{PREFIX}squared_error"]))
    shift = by_point(against_synchronous(dataset[f"{PREFIX}estimate"]))
    _, reference_error = reference_value(stored_reference(dataset), TEST_FUNCTION, 0)
    x = (excess["period"] * (excess["workers"] - 1)).values
    target_error = -2 * shift.mean(f"{PREFIX}replicate").values * reference_error
    return x, excess.values, target_error


def logistic_deviation(dataset: xr.Dataset):
    """(x, samples, parts): per point with P > 1, the replicates' squared staleness deviation
    δ² = (φ̂_P − φ̂_1)², φ̂_1 the same replicate's synchronous run with the same π; and the
    exact split of the mean excess squared error, (φ̂_P − m)² − (φ̂_1 − m)² = δ² + 2δ(φ̂_1 − m),
    into its staleness part mean δ² and its synchronous part mean 2δ(φ̂_1 − m) (lists over the
    points; module docstring)."""
    estimate = dataset[f"{PREFIX}estimate"]
    delta = against_synchronous(estimate)
    synchronous_error = (estimate - dataset[f"{PREFIX}reference"]).sel(workers=1)
    squared, cross = by_point(delta**2), by_point(2 * delta * synchronous_error)
    x = (squared["period"] * (squared["workers"] - 1)).values
    dim = f"{PREFIX}replicate"
    parts = {"staleness_part": squared.mean(dim).values.tolist(),
             "synchronous_part": cross.mean(dim).values.tolist()}
    return x, squared.values, parts


def logistic_mse_error(dataset: xr.Dataset) -> xr.DataArray:
    """Standard error of each point's MSE of φ̂_L(log-loss) with the reference's error in it:
    MSE(m) = mean((φ̂ − m)²) has ∂MSE/∂m = −2·bias, so σ = √(σ_run² + (2·bias·σ_ref)²)."""
    reference_part = 2 * dataset[f"{PREFIX}bias"] * dataset[f"{PREFIX}reference_mc_error"]
    return np.hypot(dataset[f"{PREFIX}mse_se"], reference_part)


def logistic_checks(dataset: xr.Dataset, z: float, z_one: float) -> list[Verdict]:
    """The logistic half's checks (module docstring)."""
    config = config_of(dataset)
    n = config["logistic_replicates"]
    pushes = config["logistic_iterations"]
    reference = stored_reference(dataset)
    verdicts = []
    for period in dataset["period"].values:
        at = dataset.sel(period=period, workers=1)
        mean = float(at[f"{PREFIX}estimate"].mean())
        verdicts.append(reference_check(
            f"reference/{TEST_FUNCTION}/period={period},workers=1", mean,
            float(at[f"{PREFIX}bias_se"]), reference, TEST_FUNCTION, 0, z,
            f"Synchronous downpour (P = 1) on logistic regression is SGLD for π·L = "
            f"{period * pushes} local steps from the Laplace starts, its master versions every "
            f"π-th state: φ̂_L of the held-out log-loss against the reference posterior's "
            f"estimate judges that SGLD average (the start's transient and SGLD's bias at step "
            f"h, seed 003's B₀), nothing specific to downpour.", n_replicates=n,
            evidence={"local_steps": int(period * pushes)}))
    x, samples, target_error = logistic_excess(dataset)
    _, deviations, parts = logistic_deviation(dataset)
    evidence = {"period": dataset["period"].values.tolist(),
                "workers": dataset["workers"].values.tolist(),
                "reference_mc_error": reference_value(reference, TEST_FUNCTION, 0)[1],
                "x": x.tolist(), **parts}
    verdicts.append(rate_check(
        f"rate/downpour-e3/{TEST_FUNCTION}", x, samples, RATE_EXPONENT, z_one,
        generator(int(dataset.attrs["seed"]), "downpour-period", "check", "logistic-rate"),
        statistic="mean", paired=True, margin=config["rate_margin"],
        target_error=target_error,
        detail=("Logistic regression: excess squared error of φ̂_L(held-out log-loss) over "
                "the synchronous run (P = 1, same π) against π(P − 1), with the reference "
                "posterior's error: E₃ grows like its square, so the slope must not be "
                "steeper than 2. The excess is δ² + 2δ(φ̂_1 − m) with δ = φ̂_P − φ̂_1: beside "
                "the staleness part δ² it holds the synchronous run's own error φ̂_1 − m "
                "(evidence: staleness_part, synchronous_part)."),
        evidence=evidence))
    verdicts.append(rate_check(
        f"rate/downpour-e3/{TEST_FUNCTION}_deviation", x, deviations, RATE_EXPONENT, z_one,
        generator(int(dataset.attrs["seed"]), "downpour-period", "check",
                  "logistic-deviation-rate"),
        statistic="mean", paired=True, margin=config["rate_margin"],
        detail=("Logistic regression: squared staleness deviation (φ̂_P − φ̂_1)² of "
                "φ̂_L(held-out log-loss) from the synchronous run (P = 1, same π, same "
                "starts and noise) against π(P − 1): the part of the excess that staleness "
                "makes, free of the synchronous run's own error and of the reference; E₃ "
                "grows like π²(P − 1)², so the slope must not be steeper than 2. Steeper "
                "growth is expected where h·λ_max(H) nears the stability limit of gradient "
                "steps delayed by about π(P − 1) (benchmarks/downpour_p1.py prints both)."),
        evidence=evidence))
    finite = np.all(np.isfinite(samples), axis=0)
    low, high = int(np.argmin(x)), int(np.argmax(x))
    gaps = samples[high, finite] - samples[low, finite]
    run_error = float(gaps.std(ddof=1) / np.sqrt(gaps.size)) if gaps.size > 1 else np.nan
    error = combined_error(run_error, target_error[high] - target_error[low])
    verdicts.append(ordering_check(
        f"ordering/downpour-e3/{TEST_FUNCTION}", float(gaps.mean()), error, 0.0, z_one,
        detail=(f"Logistic regression: the excess squared error at π(P − 1) = {x[high]:g} is "
                f"above the excess at π(P − 1) = {x[low]:g} (E₃ grows with π(P − 1)); the "
                f"excess holds the staleness part δ² and the synchronous part "
                f"2δ(φ̂_1 − m), δ = φ̂_P − φ̂_1 (evidence: staleness_part, "
                f"synchronous_part)."),
        n_replicates=int(gaps.size),
        evidence={**evidence, "run_error": run_error,
                  "reference_part": float(abs(target_error[high] - target_error[low])),
                  "excess": samples[:, finite].mean(axis=1).tolist()}))
    return verdicts


#: the logistic half's checks beside one reference check per π
LOGISTIC_CHECKS = 3


def downpour_period_checks(dataset: xr.Dataset) -> list[Verdict]:
    config = config_of(dataset)
    n = config["n_replicates"]
    envelope, values, observed, errors, held_out = e3_envelope(dataset)
    n_held_out = int(held_out.sum())
    n_points = dataset.sizes["period"] * dataset.sizes["workers"]
    family = (ORACLE_CHECKS * n_points + n_held_out + 1 + dataset.sizes["period"]
              + LOGISTIC_CHECKS)
    z = z_for_family(config["false_failure_rate"], family)
    z_one = one_sided_z_for_family(config["false_failure_rate"], family)
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
    return verdicts + logistic_checks(dataset, z, z_one)
