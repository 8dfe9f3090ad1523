"""The checks of a study's ``[[design]]`` tables (:mod:`.designs`), on each design's view.

A design's view (:func:`view`) is its part of the dataset with the prefix taken off
(``envelope_estimate`` over ``envelope_staleness`` reads as ``estimate`` over ``staleness``).
Seed 001 (Chen et al. 2016) §4 states what the kinds test:

- ``oracle/divergence/<design>-design``: replicates of a design that diverged (or an unstable
  exact recursion) are a ``violated`` finding; the other checks use the rest. Reported first.
- ``rate``, ``rate/mse/<φ>/<point>``: at each point of the design's other keys the MSE of φ̂_L
  decays against the swept L at least like the bound's rate at its optimal step (Theorem 3:
  L^(−2/3) for K = 1 and K = 2, derived from the bound, :func:`.gaussian_judgements.bound_rate`);
  the slope's interval comes from resampling replicates. One-sided Bonferroni over the points
  and test functions.
- ``envelope``, ``envelope/<bound>/<φ>``: the bound's terms with non-negative constants fitted
  on the calibration runs of the grid (``<design>_split``: checkerboard over the sweep, or
  extrapolate from the shorter half of the read-out L) stay above the MSE of the held-out runs.
  One-sided Bonferroni over every held-out point of every test function.
- ``invariance``, ``invariance/variance-vs-<over>/<φ>/<point>``: Theorem 4's variance does not
  depend on ``over`` (τ): at each point of the other keys and the largest L the variances of φ̂
  across ``over`` agree pairwise within the invariance margin. Their log covariance comes from a
  paired bootstrap over replicates (the same replicate draw at every value of ``over``), which
  carries the correlation of a ``paired`` design's runs. Two-sided Bonferroni over the points
  and test functions.

The exact oracle sharpens each: the rate evidence carries the exact MSE's slope, the envelope
evidence whether the fitted envelope also lies above the exact MSE, the invariance evidence the
exact variances across ``over``. Bootstrap generators come from the seed tree, keyed by the
check's name. A bound's ``integrator_order`` is the sampler's K
(:func:`.schema.integrator_order`).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import xarray as xr

from bounds.checks import Envelope, envelope_check, fit_envelope, invariance_check, rate_check
from bounds.rate import ols_slopes
from bounds.record import Bound
from bounds.symbols import SYMBOLS
from bounds.verdict import VIOLATED, Verdict, one_sided_z_for_family, two_sided_rate, z_for_family
from simulators.seeding import generator
from workbench.studies.designs import ITERATIONS, Design, DesignCheck
from workbench.studies.gaussian_judgements import (
    Context,
    bound_hypothesis,
    bound_rate,
    calibration_mask,
    fixed_symbols,
    paired_statistics,
    point_label,
    squared_errors,
    sweep_points,
)


def view(dataset: xr.Dataset, design: Design) -> xr.Dataset:
    """The design's part of the dataset, its prefix taken off, with the posterior's values."""
    prefix = design.parameter("")
    mine = [name for name in dataset.data_vars if name.startswith(prefix)]
    part = dataset[mine]
    part = part.rename({name: name[len(prefix):] for name in [*mine, *part.dims]
                        if name.startswith(prefix)})
    return part.assign(posterior_value=dataset["posterior_value"])


def on_dataset_dims(design: Design, *arrays: xr.DataArray) -> list[xr.DataArray]:
    """Arrays over a design's view put back on the dataset's dims (``envelope_staleness``), as
    the dashboard shows them."""
    names = {key: design.parameter(key) for key in design.grid}
    return [a.rename({k: v for k, v in names.items() if k in a.dims}) for a in arrays]


def exact_error(data: xr.Dataset, function: str) -> xr.DataArray:
    """Exact MSE of φ̂(φ) summed over components (bias² alone where the variance is not finite,
    e.g. an unstable recursion)."""
    at = data.sel(test_function=function)
    bias = at["exact_mean"] - at["posterior_value"]
    with np.errstate(over="ignore", invalid="ignore"):
        if bool(np.all(np.isfinite(at["exact_variance"]))):
            return (bias**2 + at["exact_variance"]).sum("component")
        return (bias**2).sum("component")


def divergence_check(data: xr.Dataset, design: Design, z: float) -> Verdict | None:
    """A ``violated`` finding where the design's replicates diverged (module docstring)."""
    diverged_at = data["diverged_at"]
    stable = data["stable"].broadcast_like(diverged_at)
    hit = (diverged_at >= 0).values
    if not hit.any() and bool(stable.all()):
        return None
    count, total = int(hit.sum()), int(hit.size)
    first = int(diverged_at.values[hit].min()) if count else None
    unstable = int((~stable.values.astype(bool)).any())
    why = (f"{count} of {total} replicate runs of the {design.name} design diverged"
           + (f" (the first at sample {first})" if count else "")
           + (" where the exact recursion is unstable: the design leaves the stable region"
              if unstable else " although the exact recursion is stable")
           + "; the design's other checks use the remaining replicates.")
    return Verdict(f"oracle/divergence/{design.name}-design", "oracle", VIOLATED, float(count),
                   0.0, 0.0, 0.0, z, two_sided_rate(z), why,
                   {"n_diverged": count, "n_runs": total, "first_divergence": first},
                   scale="count", difference=float(count))


def bound_of(ctx: Context, check: DesignCheck) -> tuple[Bound, dict]:
    """The check's bound and the values of its symbols the study holds fixed."""
    spec = ctx.bounds[check.bound]
    return spec.bound, {**fixed_symbols(spec.bound, ctx.config), **spec.fixed}


def _slices(data: xr.Dataset, design: Design, along: str) -> list[dict]:
    """The points of the design's sweep keys but ``along`` and the swept L."""
    return sweep_points(data, [k for k in design.sweep if k not in (along, ITERATIONS)])


def rate_checks(data: xr.Dataset, design: Design, check: DesignCheck, ctx: Context
                ) -> list[Verdict]:
    bound, fixed = bound_of(ctx, check)
    expected, optimal_step = bound_rate(bound, fixed)
    functions = data["test_function"].values.tolist()
    points = _slices(data, design, ITERATIONS)
    z = one_sided_z_for_family(ctx.config["false_failure_rate"], len(points) * len(functions))
    lengths = data[ITERATIONS].values
    verdicts = []
    for point in points:
        at = data.sel(point)
        for function in functions:
            name = "/".join(["rate/mse", function, *([point_label(point)] if point else [])])
            exact = exact_error(at, function)
            with np.errstate(divide="ignore", invalid="ignore"):  # beyond stability: ±inf
                exact_slope = float(ols_slopes(np.log(lengths), np.log(exact.values)))
            detail = (f"{bound_hypothesis(bound)}: at its optimal step h* = {optimal_step} the "
                      f"MSE is O(L^({expected:.3g})); the measured slope must not be "
                      f"shallower. The exact oracle's MSE of φ̂({function}) has slope "
                      f"{exact_slope:.3g} on this grid.")
            evidence = {"test_function": function, **point, "bound": check.bound,
                        "step_size": at["step_size"].values.tolist(),
                        "exact_slope": exact_slope, "exact_quantity": "exact MSE",
                        "exact_values": exact.values.tolist(), "optimal_step": optimal_step}
            samples = squared_errors(at, function).transpose(ITERATIONS, "replicate")
            verdicts.append(rate_check(
                name, lengths, samples.values, expected, z,
                generator(ctx.seed, ctx.name, "check", name), statistic="mean",
                n_resamples=ctx.config["bootstrap_resamples"], detail=detail,
                evidence=evidence))
    return verdicts


def grid_values(data: xr.Dataset, design: Design, bound: Bound) -> dict:
    """The bound's symbols on the design's grid, by name (they broadcast): its sweep keys',
    each run's step size, and the read-out L."""
    symbols = {s.name for s in bound.expression.free_symbols if not SYMBOLS[s].hidden_constant}
    values = {key: data[key] for key in design.sweep if key in symbols and key != ITERATIONS}
    values.update({name: data[key] for name, key in (("step_size", "step_size"),
                                                      ("n_iterations", ITERATIONS))
                   if name in symbols})
    return values


def envelope_data(data: xr.Dataset, function: str) -> tuple[xr.DataArray, xr.DataArray]:
    """MSE of φ̂(function) on the design's grid and its Monte Carlo standard error."""
    squared = squared_errors(data, function)
    count = squared.count("replicate")
    with np.errstate(over="ignore", invalid="ignore"):
        return squared.mean("replicate"), squared.std("replicate", ddof=1) / np.sqrt(count)


def held_out(data: xr.Dataset, design: Design, split: str) -> xr.DataArray:
    """True where a grid point is held out from the envelope's calibration."""
    sweep = [k for k in design.sweep if k != ITERATIONS]
    return ~calibration_mask(data, sweep, split)


def count_held_out(data: xr.Dataset, mask: xr.DataArray) -> int:
    """Held-out points of the grid (the comparisons an envelope check of one test function
    makes)."""
    grid = data["estimate"].isel(replicate=0, component=0, test_function=0)
    return int(mask.broadcast_like(grid).sum())


def envelope_fit(data: xr.Dataset, design: Design, ctx: Context, check: DesignCheck,
                 function: str, split: str) -> Envelope:
    """The check's bound fitted on the calibration runs of the design's grid."""
    bound, fixed = bound_of(ctx, check)
    observed, _ = envelope_data(data, function)
    values = grid_values(data, design, bound)
    return fit_envelope(bound, values, observed, ~held_out(data, design, split),
                        fixed={k: v for k, v in fixed.items() if k not in values},
                        label=f"{ctx.name} {split} calibration, φ = {function}")


def envelope_checks(data: xr.Dataset, design: Design, check: DesignCheck, ctx: Context
                    ) -> list[Verdict]:
    bound = ctx.bounds[check.bound].bound
    functions = data["test_function"].values.tolist()
    split = ctx.config[design.parameter("split")]
    mask = held_out(data, design, split)
    z = one_sided_z_for_family(ctx.config["false_failure_rate"],
                               max(1, count_held_out(data, mask) * len(functions)))
    values = grid_values(data, design, bound)
    verdicts = []
    for function in functions:
        envelope = envelope_fit(data, design, ctx, check, function, split)
        observed, errors = envelope_data(data, function)
        evidence = {"test_function": function, "split": split, "bound": check.bound}
        if np.all(np.isfinite(envelope.coefficients)):
            ratio = (exact_error(data, function) / envelope(values)).where(mask)
            evidence["exact_ratio_max"] = float(ratio.max())
        detail = (f"{bound_hypothesis(bound)}: its terms {', '.join(envelope.terms)} with "
                  f"non-negative constants fitted on the {split} calibration runs must stay "
                  "above the MSE of the held-out runs.")
        verdicts.append(envelope_check(f"envelope/{check.bound}/{function}", envelope, values,
                                       observed, errors, z, mask,
                                       n_replicates=ctx.config["n_replicates"], detail=detail,
                                       evidence=evidence))
    return verdicts


def invariance_checks(data: xr.Dataset, design: Design, check: DesignCheck, ctx: Context
                      ) -> list[Verdict]:
    over = check.over
    functions = data["test_function"].values.tolist()
    points = _slices(data, design, over)
    z = z_for_family(ctx.config["false_failure_rate"], len(points) * len(functions))
    final = data.isel({ITERATIONS: -1})
    across = final[over].values.tolist()
    labels = [f"{over}={v}" for v in across]
    verdicts = []
    for point in points:
        at = final.sel(point)
        for function in functions:
            name = "/".join([f"invariance/variance-vs-{over}", function,
                             *([point_label(point)] if point else [])])
            samples = at["estimate"].sel(test_function=function).transpose(
                over, "replicate", "component").values
            variance, log_covariance, kept = paired_statistics(
                samples, "variance",
                lambda name=name: generator(ctx.seed, ctx.name, "check", name),
                ctx.config["bootstrap_resamples"])
            error = variance * np.sqrt(np.diag(log_covariance))
            exact = at["exact_variance"].sel(test_function=function).sum("component",
                                                                          min_count=1)
            step = float(at["step_size"].isel({over: 0}))
            length = int(at[ITERATIONS])
            evidence = {"test_function": function, **point, "bound": check.bound,
                        "step_size": step, "n_iterations": length, "n_replicates": kept,
                        "log_covariance": log_covariance.tolist()}
            detail = (f"{bound_hypothesis(ctx.bounds[check.bound].bound)}: at fixed h = "
                      f"{step:.3g} and L = {length} the variance of φ̂({function}) should not "
                      f"depend on {over}.")
            if kept < samples.shape[1]:
                detail += f" {samples.shape[1] - kept} diverged replicates left out."
            if np.all(np.isfinite(exact.values)):
                spread = float(exact.max() / exact.min() - 1)
                evidence.update({"exact_variance": exact.values.tolist(),
                                 "exact_relative_spread": spread})
                detail += f" The exact variances across {over} differ by at most {spread:.2%}."
            stationary = at["exact_stationary_variance"].sum("component")
            stationary_spread = float(stationary.max() / stationary.min() - 1)
            evidence.update({"exact_stationary_variance": stationary.values.tolist(),
                             "exact_stationary_spread": stationary_spread})
            detail += (f" The exact stationary variance of θ grows by {stationary_spread:.0%} "
                       f"from {over} = {across[0]} to {across[-1]}; φ̂(θ) averages it away "
                       "(its long-run variance is free of τ), φ̂(θ²) does not.")
            verdicts.append(invariance_check(name, variance, error, labels, z, detail=detail,
                                             evidence=evidence, log_covariance=log_covariance,
                                             n_replicates=kept))
    return verdicts


JUDGE = {"rate": rate_checks, "envelope": envelope_checks, "invariance": invariance_checks}


def checks(dataset: xr.Dataset, designs: tuple[Design, ...], ctx: Context) -> list[Verdict]:
    """Every design's divergence finding, then each design's checks in the order written."""
    views: Mapping[str, xr.Dataset] = {d.name: view(dataset, d) for d in designs
                                       if d.parameter("estimate") in dataset}
    z = z_for_family(ctx.config["false_failure_rate"], 1)
    verdicts = [finding for d in designs if d.name in views
                if (finding := divergence_check(views[d.name], d, z)) is not None]
    for design in designs:
        if design.name in views:
            for check in design.checks:
                verdicts.extend(JUDGE[check.kind](views[design.name], design, check, ctx))
    return verdicts
