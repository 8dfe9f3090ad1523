"""The checks of a study of seed 003's protocols on the Gaussian mean.

Seed 003 (Li, Chen, Pu, Henao & Carin, AAAI 2019), Algorithm 1 (downpour) and Appendix B
(elastic averaging), at the last checkpoint of every point (:mod:`.protocol_point`):

- ``oracle/.../<dim>=<value>,...``: the bias and variance of φ̂_L(θ) and the bias of φ̂_L(θ²)
  against the exact oracle of the point's own schedule
  (:func:`workbench.systems.protocols.checks.oracle_checks`);
- with ``difference = "<dim>"`` (a dim of two values, ``protocol`` over downpour and elastic,
  say), ``oracle/mse-difference/theta/<the other dims>``: the MSE of φ̂_L(θ) at the second
  value minus the first against the exact difference. The points are independent schedules
  on common random numbers, so the error of the difference is that of the per-replicate
  differences of squared errors;
- ``envelope/<bound>/<φ>``: the ``[[bound]]``'s terms (downpour's C₁(E₁ + E₂ + E₃) with a fixed
  step: h², σ²/L, 1/(Lh), π²(P − 1)²h²) with non-negative constants fitted on the points whose
  ``against`` (x, :mod:`.excess`) is at most its median must stay above the MSE of φ̂_L at the
  larger x, within ``envelope_margin``: at a fixed h and L only E₃ changes across a grid of π
  and P, so this asks whether the MSE grows no faster than E₃ beyond where it was calibrated.
  θ² is the default φ: its estimate carries the staleness bias (docs/math.md §7);
- ``rate`` (``name``): the excess of the squared error of φ̂_L over the ``baseline`` at the same
  other values (P = 1 at the same π), replicate by replicate, against x: its log-log slope at
  most ``expected`` (E₃ ∝ x²: 2) plus ``rate_margin``; a slope well below means E₃ is loose
  there. Its bootstrap draws the stream ``rate``.

The oracle comparisons are two-sided, the envelope (one comparison per held-out point) and
rate one-sided; each check is a family of its own, or the study's one
(:meth:`~.gaussian_judgements.Context.z`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import xarray as xr

from bounds.checks import envelope_check, fit_envelope, oracle_check
from bounds.rate import rate_check
from bounds.verdict import Verdict
from simulators.seeding import generator
from workbench.studies.excess import by_point, over_baseline, stacked_x, x_grid
from workbench.studies.gaussian_judgements import (
    Context,
    EnvelopeFit,
    bound_hypothesis,
    check_name,
    fixed_symbols,
    grid_values,
    sweep_points,
)
from workbench.systems.protocols.checks import ORACLE_CHECKS
from workbench.systems.protocols.checks import oracle_checks as point_checks


def point_label(point: dict) -> str:
    """A point's values as ``dim=value`` joined by commas (seed 003's check names)."""
    return ",".join(f"{k}={v}" for k, v in point.items())


def mse_difference(dataset: xr.Dataset, dim: str, point: dict) -> tuple[float, float, float]:
    """(measured, its standard error, exact) MSE of φ̂_L(θ) at the second value of ``dim``
    minus the first, at ``point`` (a value of every other sweep dim) and the last checkpoint."""
    final = dataset.sel(point).sel(test_function="theta").isel(checkpoint=-1)
    first, second = dataset[dim].values.tolist()
    errors = final["squared_error"]
    difference = (errors.sel({dim: second}) - errors.sel({dim: first})).values
    difference = difference[np.isfinite(difference)]
    exact = final["exact_mse"]
    return (float(difference.mean()), float(difference.std(ddof=1) / np.sqrt(difference.size)),
            float(exact.sel({dim: second}) - exact.sel({dim: first})))


def judge(kind: str, dataset: xr.Dataset, ctx: Context, options: dict) -> list[Verdict]:
    """The verdicts of one ``[[check]]`` entry (module docstring)."""
    if kind == "oracle":
        return oracle_checks(dataset, ctx.dims, ctx.z, options.get("difference"))
    if kind == "envelope":
        return envelope_checks(dataset, ctx, options)
    return rate_checks(dataset, ctx, options)


def oracle_checks(dataset: xr.Dataset, dims: Sequence[str], z_of: Callable[[int], float],
                  difference: str | None = None) -> list[Verdict]:
    """Every point against its oracle, then the ``difference`` checks (module docstring);
    ``z_of``: the critical z of a family of so many comparisons."""
    n = dataset.sizes["replicate"]
    points = sweep_points(dataset, dims)
    others = sweep_points(dataset, [d for d in dims if d != difference]) if difference else []
    z = z_of(ORACLE_CHECKS * len(points) + len(others))
    verdicts = []
    for point in points:
        final = dataset.sel(point).isel(checkpoint=-1)
        verdicts += point_checks(final, point_label(point), z, n)
    for point in others:
        observed, error, exact = mse_difference(dataset, difference, point)
        values = dataset[difference].values.tolist()
        evidence = {}
        if "messages" in dataset:
            messages = dataset["messages"].sel(point).isel(checkpoint=-1).values.tolist()
            evidence["messages"] = dict(zip(values, messages, strict=True))
        name = "/".join(["oracle/mse-difference/theta", point_label(point)]).rstrip("/")
        verdicts.append(oracle_check(
            name, observed, error, exact, z,
            f"MSE of φ̂_L(θ), {difference} = {values[1]} minus {values[0]}, against the exact "
            "difference (per-replicate differences: common random numbers).", n_replicates=n,
            evidence=evidence))
    return verdicts


def envelope_fit(dataset: xr.Dataset, ctx: Context, options: dict) -> EnvelopeFit:
    """The ``[[bound]]`` fitted to the MSE of φ̂_L at the last checkpoint where x is at most
    its median: the bound's symbols a sweep dim's values (under their own names or as its
    ``symbols`` name them), its ``fixed`` ones and the configuration's numbers."""
    spec = ctx.bounds[options["bound"]]
    function = options["test_function"]
    final = dataset.sel(test_function=function).isel(checkpoint=-1)
    x = x_grid(dataset, ctx.dims, options["against"], ctx.config)
    calibration = x <= float(np.median(x))
    values = {**fixed_symbols(spec.bound, ctx.config), **spec.fixed,
              **grid_values(final, spec.bound, spec.symbols)}
    envelope = fit_envelope(spec.bound, values, final["mse"], calibration,
                            label=f"{ctx.name}, {options['against']} ≤ median, φ = {function}")
    return EnvelopeFit(envelope, values, final["mse"], final["mse_se"], ~calibration)


def envelope_checks(dataset: xr.Dataset, ctx: Context, options: dict) -> list[Verdict]:
    spec, function = ctx.bounds[options["bound"]], options["test_function"]
    fit = envelope_fit(dataset, ctx, options)
    z = ctx.one_sided_z(int(fit.held_out.sum()))
    return [envelope_check(
        f"envelope/{options['bound']}/{function}", fit.envelope, fit.values, fit.observed,
        fit.errors, z, fit.held_out, margin=options["envelope_margin"],
        n_replicates=ctx.config["n_replicates"],
        detail=(f"{bound_hypothesis(spec.bound)}: its terms {', '.join(fit.envelope.terms)}, "
                f"constants fitted where {options['against']} is at most its median, must stay "
                f"above the MSE of φ̂_L({function}) at the larger values."),
        evidence={"test_function": function, "against": options["against"],
                  "x": x_grid(dataset, ctx.dims, options["against"], ctx.config).values.tolist(),
                  "exact_mse": final_exact(dataset, function).values.tolist()})]


def final_exact(dataset: xr.Dataset, function: str) -> xr.DataArray:
    """The exact oracle's MSE of φ̂_L(``function``) at the last checkpoint of every point."""
    return dataset["exact_mse"].sel(test_function=function).isel(checkpoint=-1)


def excess_samples(dataset: xr.Dataset, dims: Sequence[str], options: dict,
                   config: dict) -> tuple[np.ndarray, np.ndarray]:
    """(x, samples ``(points, replicates)``): each point's excess of the replicates' squared
    error of φ̂_L over the same replicate's at the ``baseline`` (:mod:`.excess`)."""
    errors = dataset["squared_error"].sel(test_function=options["test_function"]).isel(
        checkpoint=-1)
    excess = by_point(over_baseline(errors, options["baseline"]), dims)
    return stacked_x(excess, dims, options["against"], config), excess.values


def rate_checks(dataset: xr.Dataset, ctx: Context, options: dict) -> list[Verdict]:
    function = options["test_function"]
    x, samples = excess_samples(dataset, ctx.dims, options, ctx.config)
    [(dim, value)] = options["baseline"].items()
    return [rate_check(
        check_name(options, {}, function, f"rate/excess/{function}"), x, samples,
        options["expected"], ctx.one_sided_z(1),
        generator(ctx.seed, ctx.name, "check", f"{ctx.streams}rate"), statistic="mean",
        paired=True, margin=options["rate_margin"],
        detail=(f"Excess MSE of φ̂_L({function}) over the run with {dim} = {value} (the other "
                f"values the same) against {options['against']}: seed 003's E₃ grows like "
                f"its power {options['expected']:g}, so the slope must not be steeper."),
        evidence={d: dataset[d].values.tolist() for d in ctx.dims})]
