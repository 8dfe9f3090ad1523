"""The check kinds of a Gaussian-mean study with S servers pooled (:mod:`.pooled_point`), at the
last checkpoint, against the exact pooled oracle (Chen, Ding, Carin et al. 2016, "Stochastic
gradient MCMC with stale gradients", §3.3, Theorems 6-7).

- ``oracle``: at every sweep point, the variance of the pooled φ̂_L(θ) against the exact
  (1/S²) Σ v_s (on the log-ratio scale) and its bias against the exact (1/S) Σ m_s − μ
  (absolute, half a replicate's standard deviation), named ``oracle/variance/<point>`` and
  ``oracle/bias/<point>`` with the study's ``symbols`` (``S=2``); one family over all of them;
- ``slope``: the log-log slope of that variance against the sweep dim ``over`` equals
  ``expected`` within ``slope_margin`` (Theorem 7: −1 against S), at every value of the other
  sweep dims;
- ``invariance``: the bias is the same at every value of ``over`` within ``invariance_margin``
  (a ratio; Theorem 6: pooling does not reduce it).

A check's ``name`` template names its verdicts (``"theorem7/variance-vs-servers"``); the
critical z is the check's own family's, or the study's (:meth:`.gaussian_judgements.Context.z`).
"""

from __future__ import annotations

import xarray as xr

from bounds.checks import invariance_check, oracle_check, slope_check
from bounds.verdict import Verdict
from workbench.studies.gaussian_judgements import Context, point_label, sweep_points
from workbench.studies.held_out_judgements import named, slices_along


def _label(point: dict, ctx: Context) -> str:
    return point_label({ctx.symbols.get(k, k): v for k, v in point.items()})


def oracle_checks(dataset: xr.Dataset, ctx: Context, options: dict) -> list[Verdict]:
    final = dataset.isel(checkpoint=-1)
    points = sweep_points(final, ctx.dims)
    z = ctx.z(2 * len(points))
    replicates = ctx.config["n_replicates"]
    verdicts = []
    for point in points:
        at, label = final.sel(point), _label(point, ctx)
        verdicts.append(oracle_check(
            f"oracle/variance/{label}", at["variance"], at["variance_se"],
            at["exact_variance"], z, "Variance of the pooled φ̂_L(θ) against the exact value.",
            n_replicates=replicates, relative=True))
        verdicts.append(oracle_check(
            f"oracle/bias/{label}", at["bias"], at["bias_se"], at["exact_bias"], z,
            "Bias of the pooled φ̂_L(θ) against the exact value.", n_replicates=replicates))
    return verdicts


def slope_checks(dataset: xr.Dataset, ctx: Context, options: dict) -> list[Verdict]:
    over = options["over"]
    slices = slices_along(dataset, ctx.dims, over)
    z = ctx.z(len(slices))
    verdicts = []
    for point, data, suffix in slices:
        final = data.isel(checkpoint=-1)
        verdicts.append(slope_check(
            named(options, point, f"slope/variance-vs-{over}{suffix}"), final[over].values,
            final["variance"].values, final["variance_se"].values, options["expected"], z,
            f"Variance of the pooled φ̂_L(θ) against {over} (Theorem 7: 1/S).",
            margin=options["slope_margin"], n_replicates=ctx.config["n_replicates"],
            evidence={"exact_variance": final["exact_variance"].values.tolist()}))
    return verdicts


def invariance_checks(dataset: xr.Dataset, ctx: Context, options: dict) -> list[Verdict]:
    over = options["over"]
    slices = slices_along(dataset, ctx.dims, over)
    z = ctx.z(len(slices))
    symbol = ctx.symbols.get(over, over)
    verdicts = []
    for point, data, suffix in slices:
        final = data.isel(checkpoint=-1)
        verdicts.append(invariance_check(
            named(options, point, f"invariance/bias-vs-{over}{suffix}"),
            final["bias"].values, final["bias_se"].values,
            [f"{symbol}={v}" for v in final[over].values], z,
            f"Bias of the pooled φ̂_L(θ) across {over} (Theorem 6: not reduced).",
            margin=options["invariance_margin"], n_replicates=ctx.config["n_replicates"],
            evidence={"exact_bias": final["exact_bias"].values.tolist()}))
    return verdicts


def judge(kind: str, dataset: xr.Dataset, ctx: Context, options: dict) -> list[Verdict]:
    """The verdicts of one ``[[check]]`` of ``kind`` (module docstring)."""
    return {"oracle": oracle_checks, "slope": slope_checks,
            "invariance": invariance_checks}[kind](dataset, ctx, options)
