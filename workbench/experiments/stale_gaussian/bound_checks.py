"""Checks of ``stale-gaussian``'s bound designs against seed 001's Theorems 3 and 4.

- ``rate/mse/<φ>/staleness=<τ>``: at Theorem 3's optimal step for fixed τ the MSE of φ̂_L
  decays at least like L^r, r = −2/3 derived from the registered bound; the slope's interval
  comes from resampling replicates (:func:`bounds.checks.rate_check`). One-sided Bonferroni
  over the τ values and test functions.
- ``envelope/theorem-3/<φ>``: Theorem 3's terms 1/(Lh), τ²h², h^(2K) with non-negative
  constants fitted on the calibration runs of the (τ, h, L) grid stay above the MSE of the
  held-out runs (:func:`bounds.checks.fit_envelope`, :func:`~bounds.checks.envelope_check`).
  One-sided Bonferroni over every held-out point of both test functions.
- ``invariance/variance-vs-staleness/<φ>/relative_step=<c>``: Theorem 4's variance does not
  depend on τ; at each fixed h and the largest L the variances of φ̂ across τ must agree
  pairwise within a factor 1.25 (the invariance margin). The runs of one h share their random
  numbers across τ, so the covariance of the log variances comes from a paired bootstrap over
  replicates. Two-sided Bonferroni over the step sizes and test functions (and the pairs).
- ``oracle/divergence/<design>``: a replicate of a design that diverged where the exact
  recursion is stable is a ``violated`` finding; the other checks use the rest.

The exact oracle sharpens each: the rate evidence carries the exact MSE's slope, the envelope
evidence whether the fitted envelope also lies above the exact MSE, and the invariance
evidence the exact variances across τ (for φ̂(θ²) from the fourth moments of
:mod:`workbench.oracles.square_variance`). Bootstrap
generators come from the seed tree, keyed by the check's name.
"""

from __future__ import annotations

import numpy as np
import xarray as xr

from bounds import registry
from bounds.checks import Envelope, envelope_check, fit_envelope, invariance_check, rate_check
from bounds.rate import bootstrap_statistics, ols_slopes
from bounds.verdict import VIOLATED, Verdict, one_sided_z_for_family, two_sided_rate, z_for_family
from simulators.seeding import generator
from workbench.experiments.stale_gaussian.bound_design import (
    INTEGRATOR_ORDER,
    MSE_BOUND,
    VARIANCE_BOUND,
    optimal_design,
)
from workbench.store.netcdf import config_of
from workbench.studies.check_kinds import SPLITS


def _hypothesis(name: str) -> str:
    bound = registry.get(name)
    tag = (f"[{bound.provenance}], a hypothesis under test" if bound.is_hypothesis
           else f"[{bound.provenance}]")
    return f"{bound.title} ({bound.source}; {tag})"


def squared_errors(dataset: xr.Dataset, prefix: str, function: str) -> xr.DataArray:
    """Per-replicate (φ̂_L − φ̄)², summed over coordinates."""
    estimate = dataset[f"{prefix}_estimate"].sel(test_function=function)
    truth = dataset["posterior_value"].sel(test_function=function)
    with np.errstate(over="ignore", invalid="ignore"):
        return ((estimate - truth) ** 2).sum("component", min_count=1)


def exact_error(dataset: xr.Dataset, prefix: str, function: str) -> xr.DataArray:
    """Exact MSE of φ̂(φ) summed over components (bias² alone where the variance is not
    finite, e.g. an unstable recursion)."""
    bias = (dataset[f"{prefix}_exact_mean"].sel(test_function=function)
            - dataset["posterior_value"].sel(test_function=function))
    variance = dataset[f"{prefix}_exact_variance"].sel(test_function=function)
    with np.errstate(over="ignore", invalid="ignore"):
        if bool(np.all(np.isfinite(variance))):
            return (bias**2 + variance).sum("component")
        return (bias**2).sum("component")


def design_divergence_checks(dataset: xr.Dataset, config: dict) -> list[Verdict]:
    """A ``violated`` finding per design where replicates diverged (module docstring)."""
    z = z_for_family(config["false_failure_rate"], 1)
    verdicts = []
    for prefix in ("rate", "envelope"):
        if f"{prefix}_diverged_at" not in dataset:
            continue
        diverged_at = dataset[f"{prefix}_diverged_at"]
        stable = dataset[f"{prefix}_stable"].broadcast_like(diverged_at)
        hit = (diverged_at >= 0).values
        if not hit.any() and bool(stable.all()):
            continue
        count, total = int(hit.sum()), int(hit.size)
        first = int(diverged_at.values[hit].min()) if count else None
        unstable = int((~stable.values.astype(bool)).any())
        why = (f"{count} of {total} replicate runs of the {prefix} design diverged"
               + (f" (the first at sample {first})" if count else "")
               + (" where the exact recursion is unstable: the design leaves the stable "
                  "region" if unstable else " although the exact recursion is stable")
               + "; the design's other checks use the remaining replicates.")
        verdicts.append(Verdict(f"oracle/divergence/{prefix}-design", "oracle", VIOLATED,
                                float(count), 0.0, 0.0, 0.0, z, two_sided_rate(z), why,
                                {"n_diverged": count, "n_runs": total,
                                 "first_divergence": first}, scale="count",
                                difference=float(count)))
    return verdicts


def rate_checks(dataset: xr.Dataset, config: dict, seed: int) -> list[Verdict]:
    design = optimal_design(INTEGRATOR_ORDER[config["sampler"]])
    functions = dataset["test_function"].values.tolist()
    taus = dataset["rate_staleness"].values.tolist()
    z = one_sided_z_for_family(config["false_failure_rate"], len(taus) * len(functions))
    lengths = dataset["rate_iterations"].values
    verdicts = []
    for tau in taus:
        at = dataset.sel(rate_staleness=tau)
        for function in functions:
            name = f"rate/mse/{function}/staleness={tau}"
            exact = exact_error(at, "rate", function)
            exact_slope = float(ols_slopes(np.log(lengths), np.log(exact.values)))
            detail = (
                f"{_hypothesis(MSE_BOUND)}: at the optimal step h* = C·τ^"
                f"({design.staleness_exponent:.3g})·L^({design.iterations_exponent:.3g}) "
                f"(exponents from the bound, {design.method}) the MSE is O(L^"
                f"({design.rate:.3g})); the measured slope must not be shallower. The exact "
                f"oracle's MSE of φ̂({function}) has slope {exact_slope:.3g} on this grid.")
            evidence = {"test_function": function, "staleness": tau, "bound": MSE_BOUND,
                        "step_size": at["rate_step_size"].values.tolist(),
                        "exact_slope": exact_slope, "exact_quantity": "exact MSE",
                        "exact_values": exact.values.tolist(), "optimal_step": design.step_size}
            samples = squared_errors(at, "rate", function).transpose("rate_iterations",
                                                                     "replicate")
            verdicts.append(rate_check(
                name, lengths, samples.values, design.rate, z,
                generator(seed, "stale-gaussian", "check", name), statistic="mean",
                n_resamples=config["bootstrap_resamples"], detail=detail, evidence=evidence))
    return verdicts


def grid_values(dataset: xr.Dataset) -> dict:
    """The (τ, h, L) grid by the bound's symbol names, as DataArrays (they broadcast)."""
    return {"staleness": dataset["envelope_staleness"],
            "step_size": dataset["envelope_step_size"],
            "n_iterations": dataset["envelope_iterations"]}


def calibration_mask(dataset: xr.Dataset, split: str) -> xr.DataArray:
    """True where a grid point calibrates the envelope (the rest is held out).

    checkerboard: alternate (τ, h) runs, so calibration and validation are independent runs;
    extrapolate: the shorter half of the L grid calibrates, the longer half is held out.
    """
    if split == "checkerboard":
        i = xr.DataArray(np.arange(dataset.sizes["envelope_staleness"]),
                         dims="envelope_staleness")
        j = xr.DataArray(np.arange(dataset.sizes["envelope_relative_step"]),
                         dims="envelope_relative_step")
        return (i + j) % 2 == 0
    if split == "extrapolate":
        lengths = dataset["envelope_iterations"]
        return lengths <= float(np.median(lengths))
    raise ValueError(f"split must be one of {SPLITS}, got {split!r}")


def count_held_out(dataset: xr.Dataset, held_out: xr.DataArray) -> int:
    """Held-out points of the envelope grid (the number of comparisons an envelope check of
    one test function makes)."""
    grid = dataset["envelope_estimate"].isel(replicate=0, component=0,
                                              test_function=0).notnull()
    return int((held_out.broadcast_like(grid)).sum())


def envelope_data(dataset: xr.Dataset, function: str) -> tuple[xr.DataArray, xr.DataArray]:
    """MSE of φ̂(function) on the envelope grid and its Monte Carlo standard error."""
    squared = squared_errors(dataset, "envelope", function)
    count = squared.count("replicate")
    with np.errstate(over="ignore", invalid="ignore"):
        return (squared.mean("replicate"),
                squared.std("replicate", ddof=1) / np.sqrt(count))


def fit_theorem_3(dataset: xr.Dataset, function: str, config: dict) -> Envelope:
    """Theorem 3's envelope fitted on the calibration part of the grid."""
    observed, _ = envelope_data(dataset, function)
    return fit_envelope(
        registry.get(MSE_BOUND), grid_values(dataset), observed,
        calibration_mask(dataset, config["envelope_split"]),
        fixed={"integrator_order": INTEGRATOR_ORDER[config["sampler"]]},
        label=f"stale-gaussian {config['envelope_split']} calibration, φ = {function}")


def envelope_checks(dataset: xr.Dataset, config: dict) -> list[Verdict]:
    functions = dataset["test_function"].values.tolist()
    held_out = ~calibration_mask(dataset, config["envelope_split"])
    n_held_out = count_held_out(dataset, held_out)
    z = one_sided_z_for_family(config["false_failure_rate"], max(1, n_held_out * len(functions)))
    verdicts = []
    for function in functions:
        name = f"envelope/theorem-3/{function}"
        envelope = fit_theorem_3(dataset, function, config)
        observed, errors = envelope_data(dataset, function)
        values = grid_values(dataset)
        evidence = {"test_function": function, "split": config["envelope_split"]}
        exact = exact_error(dataset, "envelope", function)
        if function == "theta" and np.all(np.isfinite(envelope.coefficients)):
            ratio = (exact / envelope(values)).where(held_out)
            evidence["exact_ratio_max"] = float(ratio.max())
        detail = (f"{_hypothesis(MSE_BOUND)}: its terms {', '.join(envelope.terms)} with "
                  f"non-negative constants fitted on the {config['envelope_split']} "
                  "calibration runs must stay above the MSE of the held-out runs.")
        verdicts.append(envelope_check(name, envelope, values, observed, errors, z, held_out,
                                       n_replicates=config["n_replicates"], detail=detail,
                                       evidence=evidence))
    return verdicts


def paired_variances(samples: np.ndarray, rng_for, n_resamples: int):
    """Variances across τ of ``samples`` ``(n_τ, R, d)`` (summed over d) from runs sharing
    random numbers: (variances, covariance matrix of their logs, replicates kept). Replicates
    non-finite at any τ are dropped; the covariance comes from a paired bootstrap, the same
    replicate draw at every τ (``rng_for()`` gives the same generator for every coordinate)."""
    kept = np.all(np.isfinite(samples), axis=(0, 2))
    samples = samples[:, kept, :]
    variances = samples.var(axis=1, ddof=1).sum(axis=-1)
    resampled = sum(bootstrap_statistics(samples[..., k], "variance", rng_for(), n_resamples,
                                         paired=True) for k in range(samples.shape[-1]))
    return variances, np.cov(np.log(resampled), rowvar=False), int(kept.sum())


def variance_invariance_checks(dataset: xr.Dataset, config: dict) -> list[Verdict]:
    functions = dataset["test_function"].values.tolist()
    steps = dataset["envelope_relative_step"].values.tolist()
    z = z_for_family(config["false_failure_rate"], len(steps) * len(functions))
    final = dataset.isel(envelope_iterations=-1)
    seed = int(dataset.attrs["seed"])
    taus = dataset["envelope_staleness"].values.tolist()
    labels = [f"staleness={t}" for t in taus]
    verdicts = []
    for c in steps:
        at = final.sel(envelope_relative_step=c)
        for function in functions:
            name = f"invariance/variance-vs-staleness/{function}/relative_step={c}"
            samples = at["envelope_estimate"].sel(test_function=function).transpose(
                "envelope_staleness", "replicate", "component").values
            variance, log_covariance, kept = paired_variances(
                samples, lambda name=name: generator(seed, "stale-gaussian", "check", name),
                config["bootstrap_resamples"])
            error = variance * np.sqrt(np.diag(log_covariance))
            exact = at["envelope_exact_variance"].sel(test_function=function).sum(
                "component", min_count=1)
            step = float(at["envelope_step_size"].isel(envelope_staleness=0))
            length = int(at["envelope_iterations"])
            evidence = {"test_function": function, "relative_step": c, "bound": VARIANCE_BOUND,
                        "step_size": step, "n_iterations": length, "n_replicates": kept,
                        "log_covariance": log_covariance.tolist()}
            detail = (f"{_hypothesis(VARIANCE_BOUND)}: at fixed h = {step:.3g} and L = "
                      f"{length} the variance of φ̂({function}) should not depend on τ.")
            if kept < samples.shape[1]:
                detail += f" {samples.shape[1] - kept} diverged replicates left out."
            if np.all(np.isfinite(exact.values)):
                spread = float(exact.max() / exact.min() - 1)
                evidence.update({"exact_variance": exact.values.tolist(),
                                 "exact_relative_spread": spread})
                detail += f" The exact variances across τ differ by at most {spread:.2%}."
            stationary = at["envelope_exact_stationary_variance"].sum("component")
            stationary_spread = float(stationary.max() / stationary.min() - 1)
            evidence.update({"exact_stationary_variance": stationary.values.tolist(),
                             "exact_stationary_spread": stationary_spread})
            detail += (f" The exact stationary variance of θ grows by {stationary_spread:.0%} "
                       f"from τ = {taus[0]} to τ = {taus[-1]} (c·τ up to {c * taus[-1]:.2g}); "
                       "φ̂(θ) averages it away (its long-run variance q/c² is free of τ), "
                       "φ̂(θ²) does not.")
            verdicts.append(invariance_check(name, variance, error, labels, z, detail=detail,
                                             evidence=evidence, log_covariance=log_covariance,
                                             n_replicates=kept))
    return verdicts


def bound_checks(dataset: xr.Dataset) -> list[Verdict]:
    config = config_of(dataset)
    seed = int(dataset.attrs["seed"])
    return [*design_divergence_checks(dataset, config), *rate_checks(dataset, config, seed),
            *envelope_checks(dataset, config), *variance_invariance_checks(dataset, config)]
