"""The checks of a study of seed 003's protocols on logistic regression with paired replicates
(:mod:`.paired_protocol_point`), φ = the held-out log-loss judged against the reference
posterior's m ± σ_ref (never m alone).

Li, Chen, Pu, Henao & Carin (AAAI 2019), Algorithm 1 and its MSE bound C₁(E₁ + E₂ + E₃):

- ``reference/log_loss/<point>``: φ̂_L at every point that ``where`` keeps against the
  reference (:func:`workbench.reference.reference_check`: run and reference errors combined,
  margin half the per-replicate spread). With ``where = { workers = 1 }`` these are the
  synchronous runs, which seed 003 bounds by the standard B₀ = C(E₁ + E₂); with one worker,
  period π is SGLD for π·L local steps with every π-th state kept, so they judge SGLD's
  average over π·L steps from the Laplace starts (the start's transient and SGLD's bias at
  step h), not downpour;
- ``rate`` with ``of = "excess"``: the excess of the squared error over the ``baseline`` (P = 1
  at the same π), replicate by replicate, against x (``against``, :mod:`.excess`): slope at
  most ``expected`` (E₃ ∝ x²: 2) plus ``rate_margin``. The excess is linear in the reference
  mean m, ∂/∂m mean((φ̂_P − m)² − (φ̂_1 − m)²) = −2·mean(φ̂_P − φ̂_1), so σ_ref enters each
  resample as one common shift (``target_error`` of :func:`bounds.rate.rate_check`). With
  δ = φ̂_P − φ̂_1 the excess is exactly δ² + 2δ(φ̂_1 − m): the staleness part and a part carried
  by the baseline's own error φ̂_1 − m, which can change sign along the sweep, so the excess
  can be negative and its slope is not E₃'s alone; both parts are in the evidence. Its
  bootstrap draws the stream ``rate``;
- ``rate`` with ``of = "deviation"``: the staleness part alone, the mean of δ² against x, slope
  at most ``expected`` plus ``rate_margin``; δ compares runs with the same starts and noise, so
  it needs no reference. Where h·λ_max(H) nears the stability limit of gradient steps delayed
  by about x (2 sin(π/(2(2x + 1))) for a constant delay x, Levin & May 1976), staleness
  amplifies the moves rather than perturbing them and the growth is steeper than E₃'s. Its
  bootstrap draws the stream ``deviation-rate``;
- ``ordering``: the excess at the largest x is above the excess at the smallest (E₃ grows with
  x); the gap's error combines the replicates' paired spread and the reference's error through
  the same derivative.

A later part of a study of shared points prefixes its streams with ``<part>-``. The reference
comparisons are two-sided, the rates and orderings one-sided; each check is a family of its
own, or the study's one (:meth:`~.gaussian_judgements.Context.z`).
"""

from __future__ import annotations

import numpy as np
import xarray as xr

from bounds.checks import ordering_check
from bounds.rate import rate_check
from bounds.verdict import Verdict
from simulators.seeding import generator
from workbench.reference import combined_error, reference_check, reference_value
from workbench.studies.excess import by_point, over_baseline, stacked_x
from workbench.studies.gaussian_judgements import Context, check_name, sweep_points
from workbench.studies.paired_protocol_point import TEST_FUNCTION
from workbench.studies.protocol_judgements import point_label


def judge(kind: str, dataset: xr.Dataset, ctx: Context, options: dict) -> list[Verdict]:
    """The verdicts of one ``[[check]]`` entry (module docstring)."""
    if kind == "reference":
        return reference_checks(dataset, ctx, options)
    if kind == "rate":
        return [rate(dataset, ctx, options)]
    return [ordering(dataset, ctx, options)]


def stored_reference(dataset: xr.Dataset) -> xr.Dataset:
    """The reference's m, σ_ref and R-hat as kept with the points (the same at every point),
    in the form :func:`workbench.reference.reference_check` reads."""
    at = dataset.isel({dim: 0 for dim in dataset["reference"].dims})
    return xr.Dataset({"mean": at["reference"], "mean_mc_error": at["reference_mc_error"],
                       "rhat": at["reference_rhat"]}).reset_coords(drop=True).expand_dims(
        test_function=[TEST_FUNCTION], component=[0])


def reference_checks(dataset: xr.Dataset, ctx: Context, options: dict) -> list[Verdict]:
    reference = stored_reference(dataset)
    points = [point for point in sweep_points(dataset, ctx.dims)
              if all(point[d] == v for d, v in options["where"].items())]
    z = ctx.z(len(points))
    length = ctx.config["n_iterations"]
    verdicts = []
    for point in points:
        at = dataset.sel(point)
        steps = int(point.get("period", ctx.config["period"]) * length)
        verdicts.append(reference_check(
            f"reference/{TEST_FUNCTION}/{point_label(point)}", float(at["estimate"].mean()),
            float(at["bias_se"]), reference, TEST_FUNCTION, 0, z,
            f"φ̂_L of the held-out log-loss at {point_label(point)}, L = {length} master "
            f"versions ({steps} local steps from the Laplace starts), against the reference "
            "posterior's estimate.", n_replicates=ctx.config["n_replicates"],
            evidence={"local_steps": steps}))
    return verdicts


def excess(dataset: xr.Dataset, ctx: Context, options: dict):
    """(x, samples ``(points, replicates)``, target_error): per point, the replicates' squared
    error of φ̂_L minus the same replicate's at the ``baseline``, and the signed error of each
    point's mean excess through the reference's own error, −2·mean(φ̂_P − φ̂_1)·σ_ref (module
    docstring)."""
    samples = by_point(over_baseline(dataset["squared_error"], options["baseline"]), ctx.dims)
    shift = by_point(over_baseline(dataset["estimate"], options["baseline"]), ctx.dims)
    _, reference_error = reference_value(stored_reference(dataset), TEST_FUNCTION, 0)
    x = stacked_x(samples, ctx.dims, options["against"], ctx.config)
    return x, samples.values, -2 * shift.mean("replicate").values * reference_error


def deviation(dataset: xr.Dataset, ctx: Context, options: dict):
    """(samples, parts): per point, the replicates' squared staleness deviation δ² =
    (φ̂_P − φ̂_1)², φ̂_1 the same replicate's at the ``baseline``; and the exact split of the mean
    excess, (φ̂_P − m)² − (φ̂_1 − m)² = δ² + 2δ(φ̂_1 − m), into its staleness part mean δ² and
    its baseline part mean 2δ(φ̂_1 − m) (lists over the points)."""
    estimate = dataset["estimate"]
    delta = over_baseline(estimate, options["baseline"])
    baseline_error = (estimate - dataset["reference"]).sel(options["baseline"])
    squared = by_point(delta**2, ctx.dims)
    cross = by_point(2 * delta * baseline_error, ctx.dims)
    return squared.values, {"staleness_part": squared.mean("replicate").values.tolist(),
                            "synchronous_part": cross.mean("replicate").values.tolist()}


def mse_error(dataset: xr.Dataset) -> xr.DataArray:
    """Standard error of each point's MSE of φ̂_L with the reference's error in it:
    MSE(m) = mean((φ̂ − m)²) has ∂MSE/∂m = −2·bias, so σ = √(σ_run² + (2·bias·σ_ref)²)."""
    return np.hypot(dataset["mse_se"], 2 * dataset["bias"] * dataset["reference_mc_error"])


def _evidence(dataset: xr.Dataset, ctx: Context, options: dict, x: np.ndarray) -> dict:
    _, parts = deviation(dataset, ctx, options)
    return {**{d: dataset[d].values.tolist() for d in ctx.dims},
            "reference_mc_error": reference_value(stored_reference(dataset), TEST_FUNCTION,
                                                  0)[1],
            "x": x.tolist(), **parts}


def rate(dataset: xr.Dataset, ctx: Context, options: dict) -> Verdict:
    x, samples, target_error = excess(dataset, ctx, options)
    [(dim, value)] = options["baseline"].items()
    if options["of"] == "deviation":
        samples, target_error = deviation(dataset, ctx, options)[0], None
        measured, stream = f"squared deviation (φ̂_L − φ̂_L at {dim} = {value})²", "deviation-rate"
    else:
        measured, stream = f"excess squared error over {dim} = {value}", "rate"
    return rate_check(
        check_name(options, {}, TEST_FUNCTION, f"rate/{options['of']}/{TEST_FUNCTION}"), x,
        samples, options["expected"], ctx.one_sided_z(1),
        generator(ctx.seed, ctx.name, "check", f"{ctx.streams}{stream}"), statistic="mean",
        paired=True, margin=options["rate_margin"], target_error=target_error,
        detail=(f"The {measured} of φ̂_L(held-out log-loss), replicate by "
                f"replicate, against {options['against']}: seed 003's E₃ grows like its power "
                f"{options['expected']:g}, so the slope must not be steeper. The excess is "
                "δ² + 2δ(φ̂_1 − m), δ the deviation from the baseline (evidence: "
                "staleness_part, synchronous_part)."),
        evidence=_evidence(dataset, ctx, options, x))


def ordering(dataset: xr.Dataset, ctx: Context, options: dict) -> Verdict:
    x, samples, target_error = excess(dataset, ctx, options)
    finite = np.all(np.isfinite(samples), axis=0)
    low, high = int(np.argmin(x)), int(np.argmax(x))
    gaps = samples[high, finite] - samples[low, finite]
    run_error = float(gaps.std(ddof=1) / np.sqrt(gaps.size)) if gaps.size > 1 else np.nan
    error = combined_error(run_error, target_error[high] - target_error[low])
    against = options["against"]
    return ordering_check(
        check_name(options, {}, TEST_FUNCTION, f"ordering/excess/{TEST_FUNCTION}"),
        float(gaps.mean()), error, 0.0, ctx.one_sided_z(1),
        detail=(f"The excess squared error of φ̂_L(held-out log-loss) at {against} = "
                f"{x[high]:g} is above the excess at {against} = {x[low]:g} (E₃ grows with "
                "it); the excess holds the staleness part δ² and the baseline part "
                "2δ(φ̂_1 − m) (evidence: staleness_part, synchronous_part)."),
        n_replicates=int(gaps.size),
        evidence={**_evidence(dataset, ctx, options, x), "run_error": run_error,
                  "reference_part": float(abs(target_error[high] - target_error[low])),
                  "excess": samples[:, finite].mean(axis=1).tolist()})
