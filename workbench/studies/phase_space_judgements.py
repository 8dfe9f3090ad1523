"""The checks of a phase-space study (:mod:`.phase_space_point`), judged as one family.

- ``oracle``: at every point the measurement against the exact moments of φ̂_L at the point's
  own step (:mod:`workbench.oracles.phase_space`, docs/math.md §15): the MSE of φ̂_L(p²) on a
  log-ratio scale, the biases of φ̂_L(p²) and φ̂_L(θ²) on an absolute one (:data:`COMPARISONS`;
  the bias of φ̂_L(θ²) is the stationary variance of θ minus the posterior's, up to the
  transient from rest), each with the stationary bias as evidence;
- ``rate``: the MSE of φ̂_L(φ) against ``over`` (the swept L), at least as steep as the rate a
  bound gives at its optimal step (registry ``chen2015-mse-fixed-k1``: L^(−2/3) for Euler,
  ``-k2``: L^(−4/5) for splitting; :func:`.gaussian_judgements.bound_rate`) within
  ``rate_margin``, one verdict per kept value of the other sweep dims, bootstrapped over the
  replicates (``paired``: jointly across L, the points sharing their random numbers). Judging
  Euler against L^(−4/5) is the negative control a study can declare: it must be violated.

Every comparison of the study's checks is one Bonferroni family (:func:`family_size`): the
rate verdicts are the claim, and the oracle verdicts are what makes them trustworthy.
"""

from __future__ import annotations

import numpy as np
import xarray as xr

from bounds.checks import oracle_check
from bounds.rate import ols_slopes, rate_check
from bounds.verdict import Verdict, one_sided_z_for_family, z_for_family
from simulators.seeding import generator
from workbench.studies.gaussian_judgements import (
    Context,
    bound_hypothesis,
    bound_rate,
    check_name,
    point_label,
    rate_slices,
    sweep_points,
)

#: (test function, quantity, judged relative) of the oracle check at every point
COMPARISONS = (("momentum_squared", "mse", True), ("momentum_squared", "bias", False),
               ("theta_squared", "bias", False))
_SYMBOL = {"theta_squared": "θ²", "momentum_squared": "p²"}


def judge(kind: str, dataset: xr.Dataset, ctx: Context, options: dict) -> list[Verdict]:
    """The verdicts of one ``[[check]]`` of the ``kind`` oracle or rate."""
    size = family_size(dataset, ctx)
    if kind == "oracle":
        return oracle_checks(dataset, ctx, options, size)
    return rate_checks(dataset, ctx, options, size)


def family_size(dataset: xr.Dataset, ctx: Context) -> int:
    """Comparisons of all the study's checks: :data:`COMPARISONS` at every point per oracle
    check, one per judged slice per rate check."""
    size = 0
    for spec in ctx.checks:
        if spec.kind == "oracle":
            size += len(COMPARISONS) * len(sweep_points(dataset, ctx.dims))
        else:
            size += len(list(rate_slices(dataset, ctx.dims, spec.options["over"],
                                         spec.options["where"])))
    return size


def oracle_checks(dataset: xr.Dataset, ctx: Context, options: dict,
                  size: int) -> list[Verdict]:
    z = z_for_family(ctx.config["false_failure_rate"], size)
    n = ctx.config["n_replicates"]
    verdicts = []
    for point in sweep_points(dataset, ctx.dims):
        at = dataset.sel(point)
        label = point_label(point, options.get("label"))
        for function, quantity, relative in COMPARISONS:
            data = at.sel(test_function=function)
            evidence = None if relative else {"stationary_bias": float(data["stationary_bias"])}
            verdicts.append(oracle_check(
                f"oracle/{quantity}/{function}/{label}", data[quantity],
                data[f"{quantity}_se"], data[f"exact_{quantity}"], z,
                f"{quantity} of φ̂_L({_SYMBOL[function]}) at h = {float(at['step_size']):.4g} "
                "against the exact phase-space oracle.", n_replicates=n, relative=relative,
                evidence=evidence))
    return verdicts


def rate_checks(dataset: xr.Dataset, ctx: Context, options: dict,
                size: int) -> list[Verdict]:
    spec = ctx.bounds[options["bound"]]
    function, over = options["test_function"], options["over"]
    expected, optimal_step = bound_rate(spec.bound, spec.fixed)
    expected = options.get("expected", expected)
    z = one_sided_z_for_family(ctx.config["false_failure_rate"], size)
    lengths = dataset[over].values
    verdicts = []
    for suffix, point, data in rate_slices(dataset, ctx.dims, over, options["where"]):
        at = data.sel(test_function=function)
        name = check_name(options, point, function,
                          f"rate/mse/{function}/{options['bound']}{suffix}")
        exact_slope = float(ols_slopes(np.log(lengths), np.log(at["exact_mse"].values)))
        detail = (f"{bound_hypothesis(spec.bound)}: at its optimal step"
                  + (f" h* = {optimal_step}" if optimal_step else "")
                  + f" the MSE is O(L^({expected:.3g})); the measured slope of the MSE of "
                  f"φ̂_L({_SYMBOL[function]}) at {point_label(point) or 'the study'} against "
                  f"{over} must not be shallower. The exact oracle's slope on this grid is "
                  f"{exact_slope:.3g}.")
        verdicts.append(rate_check(
            name, lengths, at["squared_error"].transpose(over, "replicate").values,
            float(expected), z, generator(ctx.seed, ctx.name, "check", name),
            statistic="mean", paired=options["paired"],
            n_resamples=options["bootstrap_resamples"], margin=options["rate_margin"],
            detail=detail,
            evidence={"test_function": function, "bound": options["bound"],
                      "exact_slope": exact_slope, "step_size": at["step_size"].values.tolist(),
                      "exact_mse": at["exact_mse"].values.tolist()}))
    return verdicts
