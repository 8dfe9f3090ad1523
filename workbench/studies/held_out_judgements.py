"""The check kinds of a study on a model without an exact oracle (:mod:`.held_out_point`), judged
against its reference posterior, whose own Monte Carlo error enters every comparison.

- ``reference``: at every sweep point and for every test function (or the one named), the
  replicates' mean of φ̂_L at the last checkpoint against the reference's E_π φ
  (:func:`workbench.reference.reference_check`): the difference's error combines the run's
  σ_run = sd/√R and the reference's σ_ref; the margin is half a replicate's standard deviation
  (the ``oracle`` default of :data:`bounds.equivalence.DEFAULT_MARGINS`) unless the check gives
  ``margin`` in φ's units. One family over all of them (Bonferroni at the run's
  ``false_failure_rate``).
- ``envelope``: a bound's terms with non-negative constants, fitted on a calibration part of
  the grid (as for the Gaussian mean, :func:`.gaussian_judgements.envelope_fit`), stay above the
  held-out excess error E(φ̂_L − E_π φ)², measured against the reference mean m: the replicates'
  mean of (φ̂_L − m)² estimates it plus σ_ref² (the reference's own error, independent of the
  run), so σ_ref² is subtracted, and its error is the run's standard error combined with
  2·√(excess)·σ_ref, the first-order effect of the reference's error on the squared distance.
- ``speed-up``: seed 001's claims on the variance over replicates of φ̂_L across the swept
  worker counts (``n_workers``, or the dim ``over`` names; §5.1, Theorem 4, Corollary 5), for
  every test function (or the one named) and every value of the other sweep dims, through
  :func:`workbench.systems.asynchronous.speedup.speedup_family`: the iteration speed-up S_P
  within ``speedup_margin`` of P, its log-log slope within ``slope_margin`` of 1, the time
  speed-up within ``bend_margin`` of min(P, P*) with P* from the system's latencies, and the
  variance at the common L the same for every P within ``invariance_margin``. No reference is
  needed: these compare the study's own runs with each other. One family over all of them.
  Named ``speed-up/<φ>/iteration`` (``slope``, ``time-bend``) and
  ``theorem4/variance-at-L/<φ>`` with the other dims after, or by the check's ``name`` and
  ``invariance_name`` templates.
- ``slope``: the log-log slope of the variance over replicates of φ̂_L at the last checkpoint
  against the sweep dim ``over`` equals ``expected`` within ``slope_margin``, for every test
  function (or the one named) and every value of the other dims (seed 001 Theorem 7: −1
  against the servers ``n_servers`` pooled at test time; Theorem 4: 0 against the workers at
  a fixed L). One family over all of them.
- ``invariance``: the replicates' mean of φ̂_L at the last checkpoint is the same at every
  value of the sweep dim ``over`` within ``invariance_margin`` (a ratio), for every test
  function (or the one named) and every value of the other dims (seed 001 Theorem 6: pooling
  S servers at test time does not move the expectation of φ̂_L). One family over all of them.

Along a ``[study] paired`` dim (the points share the engine's noise and minibatches, their
starts drawn from one stream for every point), and along any dim whose points draw the same
start for replicate r (:func:`.held_out_point.common_start_dims`: the workers of an
asynchronous server or of downpour, a step size, a latency; not the servers or elastic's
workers, whose chains are as many as they), the ``slope``, ``invariance`` and ``ordering``
checks, and the ``speed-up`` family's Theorem 4 invariance, judge the points' values jointly:
from the replicates finite at every point, with the covariance of the per-replicate values
(means) or of their squared deviations (variances) over R, so that an ordering's pair has the
error of its paired difference (:func:`paired_moments`); their evidence says
``common_random_numbers`` (``paired across`` the dim, or ``starts common across`` it). Random
starts shared alone correlate a replicate's values across the points strongly: on
stale-blr-speedup the final log-loss 0.98 across its worker counts, where errors taken as
independent were 4 to 5.5 times the spread of log S_P over 30 groups of replicates and the
paired bootstrap's 0.88 to 1.13 times it (benchmarks/README.md, *Common starts*). The
speed-ups themselves (crossings of each worker count's variance curve with a target) take
the covariance of the crossings' log L* from a paired bootstrap of the procedure over the
replicates (:data:`SPEEDUP_RESAMPLES` resamples from the check's own stream), each speed-up
the error of its paired log-ratio and the slope its sandwich error.

A ``slope`` or ``invariance`` check's ``name`` template names its verdicts
(``"theorem7/variance-vs-servers"``), as an ``ordering``'s does. The two-sided kinds take
their critical z from :meth:`.gaussian_judgements.Context.z` (the check's family, or the
study's).
- ``ordering``: E φ̂_L at the last checkpoint falls (or, with ``direction = "rises"``, rises)
  between consecutive values of the dim ``over``, for every test function (or the one named)
  and every value of the other sweep dims, by at least ``by`` (φ's units, default 0), shown
  beyond −``ordering_margin`` (:func:`bounds.checks.ordering_sequence`; seed 001 §5.2: the
  test loss falls with the number of workers at a common budget per worker until staleness
  costs more than the extra samples win); every verdict names where the order stops. One
  family (one-sided) over all pairs.
  The verdicts are named ``ordering/<φ>/<direction>/<over>=a->b`` with the other dims after,
  or by the check's ``name`` template (``"{network}/loss-falls"``) before the pair; the
  study's ``symbols`` write the dim (``{ workers = "P" }``: ``P=1->2``).
"""

from __future__ import annotations

import numpy as np
import xarray as xr

from bounds.checks import (
    envelope_check,
    fit_envelope,
    invariance_check,
    ordering_sequence,
    slope_check,
)
from bounds.verdict import Verdict, one_sided_z_for_family
from simulators.seeding import generator
from workbench.reference import reference_check
from workbench.studies.gaussian_judgements import (
    Context,
    EnvelopeFit,
    bound_hypothesis,
    calibration_mask,
    fixed_symbols,
    grid_values,
    pairing_note,
    point_label,
    sweep_points,
)
from workbench.systems.asynchronous.speedup import (
    FAMILY_SIZE,
    MARGINS,
    Paired,
    speedup_family,
)
from workbench.systems.asynchronous.system import saturation_workers

#: what the bend P* depends on (:func:`saturation_workers`)
LATENCY_KEYS = ("latency_mean", "network_delay", "server_update_time")


def functions_judged(dataset: xr.Dataset, given: str | None) -> list[str]:
    """The test function a check names, else every one of the study's."""
    names = [str(n) for n in dataset["test_function"].values]
    if given is not None and given not in names:
        raise ValueError(f"test_function {given!r} is not a test function of this study "
                         f"({', '.join(names)})")
    return [given] if given else names


def reference_view(at: xr.Dataset) -> xr.Dataset:
    """The reference values kept with a point, in the form
    :func:`workbench.reference.reference_check` reads."""
    return xr.Dataset({"mean": at["reference_mean"],
                       "mean_mc_error": at["reference_mean_mc_error"],
                       "rhat": at["reference_rhat"]}).expand_dims(component=[0], axis=-1)


def reference_checks(dataset: xr.Dataset, ctx: Context, options: dict) -> list[Verdict]:
    """Every test function with a reference value (an averaged prediction has none)."""
    given = options.get("test_function")
    referenced = dataset["reference_mean"].notnull()
    referenced = referenced.any([d for d in referenced.dims if d != "test_function"])
    functions = [f for f in functions_judged(dataset, given) if bool(referenced.sel(
        test_function=f))]
    if given is not None and not functions:
        raise ValueError(f"test_function {given!r} has no reference value: the reference "
                         "posterior scores the mean of a φ over its draws, not an averaged "
                         "prediction")
    points = sweep_points(dataset, ctx.dims)
    z = ctx.z(len(points) * len(functions))
    verdicts = []
    for point in points:
        at = dataset.sel(point).isel(checkpoint=-1)
        reference = reference_view(at)
        for function in functions:
            one = at.sel(test_function=function)
            n_valid = int(one["n_valid"])
            label = point_label(point)
            name = f"reference/{function}" + (f"/{label}" if label else "")
            detail = (f"E φ̂_L of {function} over {n_valid} replicates at L = "
                      f"{int(at['iterations'])} against the reference posterior's "
                      f"(HMC, {ctx.config['reference_chains']} chains).")
            verdicts.append(reference_check(
                name, float(one["mean"]), float(one["mean_se"]), reference, function, 0, z,
                detail=detail, evidence={"point": point, "test_function": function,
                                         "mean_staleness": float(at["mean_staleness"])},
                n_replicates=n_valid, margin=options.get("margin")))
    return verdicts


def excess_errors(dataset: xr.Dataset, function: str) -> tuple[xr.DataArray, xr.DataArray]:
    """The held-out excess error E(φ̂_L − E_π φ)² at every grid point and its standard error
    (module docstring)."""
    at = dataset.sel(test_function=function)
    squared = (at["estimate"] - at["reference_mean"]) ** 2
    count = squared.count("replicate")
    reference_error = at["reference_mean_mc_error"]
    with np.errstate(invalid="ignore", divide="ignore"):
        observed = squared.mean("replicate") - reference_error**2
        run_error = squared.std("replicate", ddof=1) / np.sqrt(count)
        errors = np.hypot(run_error, 2 * np.sqrt(observed.clip(min=0)) * reference_error)
    return observed, errors


def envelope_fit(dataset: xr.Dataset, ctx: Context, options: dict,
                 function: str) -> EnvelopeFit:
    """The bound's envelope fitted to the excess error of ``function`` on the calibration
    part of the grid (module docstring)."""
    spec = ctx.bounds[options["bound"]]
    observed, errors = excess_errors(dataset, function)
    values = grid_values(dataset, spec.bound, spec.symbols)
    fixed = {k: v for k, v in {**fixed_symbols(spec.bound, ctx.config), **spec.fixed,
                               **options["fixed"]}.items() if k not in values}
    calibration = calibration_mask(dataset, ctx.dims, options["split"]).broadcast_like(observed)
    envelope = fit_envelope(spec.bound, values, observed, calibration, fixed=fixed,
                            label=f"{ctx.name} {options['split']} calibration, φ = {function}")
    return EnvelopeFit(envelope, {**values, **fixed}, observed, errors, ~calibration)


def envelope_checks(dataset: xr.Dataset, ctx: Context, options: dict) -> list[Verdict]:
    spec = ctx.bounds[options["bound"]]
    verdicts = []
    for function in functions_judged(dataset, options.get("test_function")):
        fit = envelope_fit(dataset, ctx, options, function)
        z = one_sided_z_for_family(ctx.config["false_failure_rate"],
                                   max(1, int(fit.held_out.sum())))
        detail = (f"{bound_hypothesis(spec.bound)}: its terms {', '.join(fit.envelope.terms)} "
                  f"with non-negative constants fitted on the {options['split']} calibration "
                  f"part must stay above the excess error of φ̂({function}) over the reference "
                  "posterior's mean (its Monte Carlo error removed and included in the error).")
        verdicts.append(envelope_check(
            f"envelope/{options['bound']}/{function}", fit.envelope, fit.values, fit.observed,
            fit.errors, z, fit.held_out, n_replicates=ctx.config["n_replicates"],
            detail=detail, evidence={"test_function": function, "split": options["split"],
                                     "bound": options["bound"],
                                     "expression": spec.bound.text()}))
    return verdicts


def slices_along(dataset: xr.Dataset, dims, over: str) -> list[tuple[dict, xr.Dataset, str]]:
    """(point, the dataset there, its label suffix) at every value of the sweep dims but
    ``over``: what a check along ``over`` judges one curve at a time."""
    return [(point, dataset.sel(point), f"/{point_label(point)}" if point else "")
            for point in sweep_points(dataset, [d for d in dims if d != over])]


def speedup_checks(dataset: xr.Dataset, ctx: Context, options: dict) -> list[Verdict]:
    functions = functions_judged(dataset, options.get("test_function"))
    over = options["over"]
    slices = slices_along(dataset, ctx.dims, over)
    z = ctx.z(FAMILY_SIZE * len(functions) * len(slices))
    margins = {name: options[name] for name in MARGINS}
    verdicts = []
    for point, data, suffix in slices:
        latencies = {k: float(data[k]) if k in ctx.dims else ctx.config[k]
                     for k in LATENCY_KEYS}
        length = int(data["iterations"].isel(checkpoint=-1).max())
        for function in functions:
            names = {key: (options[key].format(**point, test_function=function)
                           if key in options else f"{default}/{function}{suffix}")
                     for key, default in (("name", "speed-up"),
                                          ("invariance_name", "theorem4/variance-at-L"))}
            curves = data.sel(test_function=function)
            verdicts += speedup_family(
                names["name"], names["invariance_name"], curves, over, z,
                bend=saturation_workers(latencies), margins=margins,
                n_replicates=ctx.config["n_replicates"],
                detail=f"Variance of φ̂({function}) at L = {length} across worker counts "
                       "(seed 001 Theorem 4: free of τ).",
                paired=_paired_curves(curves, over, generator(
                    ctx.seed, ctx.name, "check", names["name"]), ctx.starts_only(over))
                if ctx.pairs(over) else None)
    return verdicts


#: resamples of a paired speed-up family's bootstrap of its crossings
SPEEDUP_RESAMPLES = 1000


def _paired_curves(curves: xr.Dataset, over: str, rng: np.random.Generator,
                   starts_only: bool) -> Paired:
    """A speed-up family's worker counts judged jointly along a paired ``over`` (``starts_only``:
    paired by their replicates' common starts alone, :func:`_jointly`): the last
    checkpoint's variances (:func:`_jointly`) and the covariance of the crossings' log L*
    from a paired bootstrap over the replicates finite everywhere
    (:func:`bounds.speedup.paired_crossing_covariance`)."""
    from bounds.speedup import paired_crossing_covariance

    evidence: dict = {}
    values, errors, log_covariance, kept, note = _jointly(curves.isel(checkpoint=-1), over,
                                                          "variance", evidence, starts_only)
    samples = curves["estimate"].transpose(over, "checkpoint", "replicate").values
    finite = np.all(np.isfinite(samples), axis=(0, 1))
    covariance, resamples = paired_crossing_covariance(
        curves["iterations_per_worker"].transpose(over, "checkpoint").values,
        samples[:, :, finite], rng, SPEEDUP_RESAMPLES)
    return Paired(values, errors, log_covariance, kept, note, evidence, covariance, resamples)


def curves_along(dataset: xr.Dataset, ctx: Context, options: dict):
    """The critical z of a check along ``over`` (one family over every test function judged
    and every value of the other sweep dims), and for each of them (point with the test
    function, the last checkpoint's values along ``over``, label suffix)."""
    functions = functions_judged(dataset, options.get("test_function"))
    slices = slices_along(dataset, ctx.dims, options["over"])
    curves = [({**point, "test_function": function},
               data.isel(checkpoint=-1).sel(test_function=function), f"/{function}{suffix}")
              for point, data, suffix in slices for function in functions]
    return ctx.z(len(curves)), curves


def paired_moments(at: xr.Dataset, over: str, statistic: str):
    """(values, their covariance, replicates kept) of the ``"mean"`` or ``"variance"`` over
    replicates of φ̂_L along ``over`` (``at``: one curve, :func:`curves_along`), where the
    points share the engine's random numbers: from the replicates finite at every point, by
    the delta method (the covariance of the per-replicate values, or of their squared
    deviations, over R), as the independent errors are."""
    samples = at["estimate"].transpose(over, "replicate").values
    kept = np.all(np.isfinite(samples), axis=0)
    samples, n = samples[:, kept], int(kept.sum())
    if n < 2:
        size = samples.shape[0]
        return np.full(size, np.nan), np.full((size, size), np.nan), n
    if statistic == "mean":
        return samples.mean(axis=1), np.atleast_2d(np.cov(samples)) / n, n
    squares = (samples - samples.mean(axis=1, keepdims=True)) ** 2
    return samples.var(axis=1, ddof=1), np.atleast_2d(np.cov(squares)) / n, n


def _jointly(at: xr.Dataset, over: str, statistic: str, evidence: dict, starts_only: bool):
    """A paired curve's (values, their errors, the covariance of their logs, replicates
    kept, the sentence its detail adds), the pairing recorded in ``evidence``
    (:func:`paired_moments`; ``starts_only``: the points share their replicates' starts, not
    the engine's random numbers)."""
    values, covariance, kept = paired_moments(at, over, statistic)
    log_covariance = covariance / np.outer(values, values)
    note = pairing_note(evidence, over, kept, "their paired replicates'", starts_only,
                        log_covariance=log_covariance)
    return values, np.sqrt(np.diag(covariance)), log_covariance, kept, note


def slope_checks(dataset: xr.Dataset, ctx: Context, options: dict) -> list[Verdict]:
    over, expected = options["over"], options["expected"]
    z, curves = curves_along(dataset, ctx, options)
    verdicts = []
    for point, at, suffix in curves:
        evidence = {"test_function": point["test_function"], "over": over}
        detail = (f"The variance over replicates of φ̂_L({point['test_function']}) at the last "
                  f"checkpoint against {over} has log-log slope {expected:g} by the study's "
                  "claim.")
        values, errors, log_covariance = (at["variance"].values, at["variance_se"].values,
                                          None)
        n_replicates = int(at["n_valid"].min())
        if ctx.pairs(over):
            values, errors, log_covariance, n_replicates, note = _jointly(
                at, over, "variance", evidence, ctx.starts_only(over))
            detail += note
        verdicts.append(slope_check(
            named(options, point, f"slope/variance-vs-{over}{suffix}"), at[over].values,
            values, errors, expected, z, detail=detail, evidence=evidence,
            margin=options["slope_margin"], log_covariance=log_covariance,
            n_replicates=n_replicates))
    return verdicts


def invariance_checks(dataset: xr.Dataset, ctx: Context, options: dict) -> list[Verdict]:
    over = options["over"]
    symbol = ctx.symbols.get(over, over)
    z, curves = curves_along(dataset, ctx, options)
    verdicts = []
    for point, at, suffix in curves:
        detail = (f"The replicates' mean of φ̂_L({point['test_function']}) at the last "
                  f"checkpoint across {over} is the same by the study's claim.")
        evidence: dict = {}
        values, errors, log_covariance = at["mean"].values, at["mean_se"].values, None
        n_replicates = ctx.config["n_replicates"]
        if ctx.pairs(over):
            values, errors, log_covariance, n_replicates, note = _jointly(
                at, over, "mean", evidence, ctx.starts_only(over))
            detail += note
        verdicts.append(invariance_check(
            named(options, point, f"invariance/mean-vs-{over}{suffix}"), values, errors,
            [f"{symbol}={v}" for v in at[over].values], z, detail, evidence,
            margin=options["invariance_margin"], log_covariance=log_covariance,
            n_replicates=n_replicates))
    return verdicts


def named(options: dict, point: dict, default: str) -> str:
    """A verdict's name: the check's ``name`` template filled at ``point``, else
    ``default``."""
    return options["name"].format(**point) if "name" in options else default


def ordering_checks(dataset: xr.Dataset, ctx: Context, options: dict) -> list[Verdict]:
    over, direction = options["over"], options["direction"]
    functions = functions_judged(dataset, options.get("test_function"))
    slices = slices_along(dataset, ctx.dims, over)
    steps = dataset.sizes[over] - 1
    z = one_sided_z_for_family(ctx.config["false_failure_rate"],
                               max(1, steps * len(functions) * len(slices)))
    sign = 1.0 if direction == "falls" else -1.0
    noun = {"falls": "fall", "rises": "rise"}[direction]
    symbol = ctx.symbols.get(over, over)
    verdicts = []
    for point, data, suffix in slices:
        final = data.isel(checkpoint=-1)
        points = data[over].values.tolist()
        for function in functions:
            at = final.sel(test_function=function)
            means, errors, pair_errors = at["mean"].values, at["mean_se"].values, None
            n_replicates, note, sentence = ctx.config["n_replicates"], {}, ""
            if ctx.pairs(over):
                means, covariance, n_replicates = paired_moments(at, over, "mean")
                errors = np.sqrt(np.diag(covariance))
                pair_errors = [np.sqrt(max(covariance[k, k] + covariance[k + 1, k + 1]
                                           - 2 * covariance[k, k + 1], 0.0))
                               for k in range(steps)]
                sentence = pairing_note(note, over, n_replicates, "their paired replicates'",
                                        ctx.starts_only(over),
                                        covariance=covariance)

            at_point = f"{point_label(point)}: " if point else ""

            def where(stop, pairs, function=function, points=points, final=final,
                      at_point=at_point, sentence=sentence):
                if stop is None:
                    return (f"{at_point}E φ̂_L of {function} {direction} over the whole grid "
                            f"({symbol} = {points[0]}..{points[-1]}).{sentence}")
                staleness = float(final["mean_staleness"].isel({over: stop + 1}))
                return (f"{at_point}E φ̂_L of {function} {direction} with {symbol} up to "
                        f"{symbol} = {points[stop]}; from {symbol} = {points[stop]} to "
                        f"{points[stop + 1]} the {noun} is {pairs[stop].verdict} (staleness "
                        f"τ̄ = {staleness:.2g} at {symbol} = {points[stop + 1]}).{sentence}")

            prefix, tail = (f"ordering/{function}/{direction}", suffix)
            if "name" in options:  # the check's own names (check_kinds._name_template)
                prefix, tail = options["name"].format(**point, test_function=function), ""
            verdicts += ordering_sequence(
                [f"{prefix}/{symbol}={points[k]}->{points[k + 1]}{tail}" for k in range(steps)],
                points, sign * means, errors, z,
                margin=options["ordering_margin"], n_replicates=n_replicates,
                evidence=[{"mean": [float(means[k]), float(means[k + 1])],
                           "test_function": function, **note} for k in range(steps)],
                where=where, by=options.get("by", 0.0), pair_errors=pair_errors)
    return verdicts


def judge(kind: str, dataset: xr.Dataset, ctx: Context, options: dict) -> list[Verdict]:
    """The verdicts of one ``[[check]]`` of ``kind`` (module docstring)."""
    return {"reference": reference_checks, "envelope": envelope_checks,
            "speed-up": speedup_checks, "ordering": ordering_checks,
            "slope": slope_checks, "invariance": invariance_checks}[kind](dataset, ctx, options)
