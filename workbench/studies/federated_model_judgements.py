"""The checks of federated rounds on a model without an exact oracle
(:mod:`.federated_model_point`), at the last sample count of every sweep point (or those its
``where`` names):

- ``ordering``: the estimator ``better`` (default fsgld) scores φ better than ``than`` (default
  dsgld) by at least ``by`` — lower for the log-losses, higher for the accuracy — one-sided,
  on the chains' paired differences (both estimators replay the same schedule, minibatches and
  noise), shown beyond −``ordering_margin`` (seed 002 §5.2-5.3: "FSGLD achieves better
  performance than DSGLD", "significantly outperforms DSGLD on the test set" for non-IID
  shards). ``violated`` means the advantage is shown to fall short of ``by``.
- ``spread``: ``better``'s standard deviation of φ̂_L over the chains is smaller than
  ``than``'s, one-sided on log(sd_than/sd_better) with the large-sample error of a log standard
  deviation, √(1/(2(R − 1))) each (seed 002: "FSGLD exhibits overall lower standard
  deviation", Table 1's "smaller standard deviation").
- ``invariance``: the estimators' E φ̂_L agree within ``invariance_margin`` (relative), on
  the chains' paired log-ratio (seed 002 §5.3: for IID shards "both methods perform
  similarly").
- ``reference``: each estimator's E φ̂_L against the reference posterior's (HMC on the pooled
  data, its own Monte Carlo error included).

A chain that diverged is a finding, never left out quietly: where chains of ``better``
diverged (any arm's, for ``invariance``; the arm's own, for ``reference``) the check is
``violated``, saying how many and from which update, since the claim cannot hold of an estimator
whose chains blow up (the divergence threshold is the study's ``divergence_threshold``); chains
of ``than`` that diverged leave their pairs out of the ordering, and the detail says so.

The verdicts are named ``<kind>/<φ>/<estimators>/<point>``; the two-sided kinds use
:meth:`~.gaussian_judgements.Context.z`, the one-sided :meth:`~.gaussian_judgements.Context.
one_sided_z`, each over the check's own comparisons.
"""

from __future__ import annotations

import math

import numpy as np
import xarray as xr

from bounds.checks import invariance_check
from bounds.equivalence import decide, verdict_from
from bounds.verdict import VIOLATED, Verdict, one_sided_rate, two_sided_rate
from workbench.reference import reference_check
from workbench.studies.gaussian_judgements import Context, sweep_points
from workbench.studies.held_out_judgements import functions_judged, reference_view
from workbench.studies.sharded_judgements import label

#: the test functions of which a lower value is better
LOWER_IS_BETTER = ("log_loss", "train_log_loss")


def judge(kind: str, dataset: xr.Dataset, ctx: Context, options: dict) -> list[Verdict]:
    """The verdicts of one ``[[check]]`` of the ``kind`` (module docstring)."""
    return {"ordering": ordering_checks, "spread": spread_checks,
            "invariance": invariance_checks, "reference": reference_checks}[kind](
        dataset, ctx, options)


def _points(dataset: xr.Dataset, ctx: Context, options: dict) -> list[dict]:
    where = options.get("where", {})
    return [p for p in sweep_points(dataset, ctx.dims)
            if all(p[k] == v for k, v in where.items())]


def _judged(dataset: xr.Dataset, ctx: Context, options: dict, one_sided: bool,
            per_point: int = 1) -> tuple[float, list[tuple[dict, str, xr.DataArray]]]:
    """The check's critical z over its comparisons (``per_point`` per point and function),
    and every (point, test function, φ̂_L per estimator and chain at the last sample count)
    it judges."""
    points = _points(dataset, ctx, options)
    functions = functions_judged(dataset, options.get("test_function"))
    size = len(points) * len(functions) * per_point
    z = ctx.one_sided_z(size) if one_sided else ctx.z(size)
    estimate = dataset["estimate"].isel(checkpoint=-1)
    return z, [(point, function, estimate.sel(point).sel(test_function=function))
               for point in points for function in functions]


def _name(kind: str, function: str, arms: str, point: dict, options: dict,
          ctx: Context) -> str:
    """``<kind>/<φ>/<estimators>/<point>``, the point written with the study's ``symbols``
    (``a=0.5`` for ``label_skew``), or the check's ``name`` template filled in."""
    if "name" in options:
        return options["name"].format(**point, test_function=function)
    written = label(point, ctx.symbols)
    return f"{kind}/{function}/{arms}" + (f"/{written}" if written else "")


def ordering_checks(dataset: xr.Dataset, ctx: Context, options: dict) -> list[Verdict]:
    better, than, by = options["better"], options["than"], options["by"]
    z, judged = _judged(dataset, ctx, options, one_sided=True)
    verdicts = []
    for point, function, at in judged:
        name = _name("ordering", function, f"{better}-over-{than}", point, options, ctx)
        blown = _divergence(dataset, point, [better], name, "ordering", z, one_sided=True)
        if blown is not None:
            verdicts.append(blown)
            continue
        sign = 1.0 if function in LOWER_IS_BETTER else -1.0
        gains = sign * (at.sel(estimator=than) - at.sel(estimator=better)).values
        gains = gains[np.isfinite(gains)]
        n = gains.size
        gain = float(gains.mean()) if n else math.nan
        error = float(gains.std(ddof=1) / math.sqrt(n)) if n > 1 else math.nan
        decision = decide(by - gain, error, options["ordering_margin"], z, one_sided=True)
        left_out = _diverged(dataset, point, than)
        verdicts.append(verdict_from(
            name, "ordering", decision, gain, by, z, "absolute", n_replicates=n,
            detail=(f"{better}'s advantage over {than} in E φ̂_L of {function} "
                    f"({'lower' if sign > 0 else 'higher'} is better) is {gain:.4g} ± "
                    f"{error:.2g} over {n} paired chains; the claim is at least {by:g}."
                    + (f" {left_out[0]} chains of {than} diverged and are left out."
                       if left_out[0] else "")),
            evidence={"point": point, "paired_chains": n}))
    return verdicts


def spread_checks(dataset: xr.Dataset, ctx: Context, options: dict) -> list[Verdict]:
    better, than = options["better"], options["than"]
    z, judged = _judged(dataset, ctx, options, one_sided=True)
    verdicts = []
    for point, function, at in judged:
        name = _name("spread", function, f"{better}-below-{than}", point, options, ctx)
        blown = _divergence(dataset, point, [better], name, "spread", z, one_sided=True)
        if blown is not None:
            verdicts.append(blown)
            continue
        spreads = {arm: at.sel(estimator=arm).values for arm in (better, than)}
        counts = {arm: int(np.isfinite(v).sum()) for arm, v in spreads.items()}
        sd = {arm: float(np.nanstd(v, ddof=1)) for arm, v in spreads.items()}
        usable = all(c > 1 and sd[a] > 0 for a, c in counts.items())
        gap = math.log(sd[than] / sd[better]) if usable else math.nan
        error = (math.sqrt(sum(1 / (2 * (c - 1)) for c in counts.values())) if usable
                 else math.nan)
        decision = decide(-gap, error, options["spread_margin"], z, one_sided=True)
        verdicts.append(verdict_from(
            name, "spread", decision, gap, 0.0, z, "log-ratio", n_replicates=min(counts.values()),
            detail=(f"sd over chains of φ̂_L of {function}: {better} {sd[better]:.3g}, "
                    f"{than} {sd[than]:.3g}; log({than}/{better}) = {gap:.3g} ± "
                    f"{error:.2g}, claimed > 0."),
            evidence={"point": point, "sd": sd, "chains": counts}))
    return verdicts


def invariance_checks(dataset: xr.Dataset, ctx: Context, options: dict) -> list[Verdict]:
    arms = dataset["estimator"].values.tolist()
    z, judged = _judged(dataset, ctx, options, one_sided=False)
    verdicts = []
    for point, function, at in judged:
        name = _name("invariance", function, "-".join(arms), point, options, ctx)
        blown = _divergence(dataset, point, arms, name, "invariance", z, one_sided=False)
        if blown is not None:
            verdicts.append(blown)
            continue
        values = at.mean("replicate", skipna=True).values
        logs = np.log(at.values)
        covariance = np.ma.cov(np.ma.masked_invalid(logs)).filled(np.nan) / logs.shape[1]
        verdicts.append(invariance_check(
            name, values,
            at.std("replicate", ddof=1).values / math.sqrt(logs.shape[1]), arms, z,
            detail=f"E φ̂_L of {function} per estimator, paired over the chains.",
            evidence={"point": point}, margin=options["invariance_margin"],
            log_covariance=np.atleast_2d(covariance), n_replicates=logs.shape[1]))
    return verdicts


def reference_checks(dataset: xr.Dataset, ctx: Context, options: dict) -> list[Verdict]:
    arms = dataset["estimator"].values.tolist()
    z, judged = _judged(dataset, ctx, options, one_sided=False, per_point=len(arms))
    verdicts = []
    for point, function, at in judged:
        reference = reference_view(dataset.sel(point).isel(checkpoint=-1))
        for arm in arms:
            name = _name("reference", function, arm, point, options, ctx)
            blown = _divergence(dataset, point, [arm], name, "reference", z, one_sided=False)
            if blown is not None:
                verdicts.append(blown)
                continue
            values = at.sel(estimator=arm).values
            values = values[np.isfinite(values)]
            verdicts.append(reference_check(
                name, float(values.mean()),
                float(values.std(ddof=1) / math.sqrt(values.size)), reference, function, 0,
                z, detail=f"{arm}'s E φ̂_L of {function} over {values.size} chains against "
                          "the reference posterior's (HMC on the pooled data).",
                evidence={"point": point, "estimator": arm}, n_replicates=values.size,
                margin=options.get("margin")))
    return verdicts


def _diverged(dataset: xr.Dataset, point: dict, arm: str) -> tuple[int, int]:
    """(chains of ``arm`` that diverged at ``point``, chains)."""
    flags = dataset["diverged"].sel(point).sel(estimator=arm).values
    return int(flags.sum()), int(flags.size)


def _divergence(dataset: xr.Dataset, point: dict, arms: list[str], name: str, kind: str,
                z: float, one_sided: bool) -> Verdict | None:
    """``violated`` where chains of ``arms`` diverged at ``point`` (module docstring), with
    the counts and the first update at which one did; None where none did."""
    counts = {arm: _diverged(dataset, point, arm) for arm in arms}
    if not any(count for count, _ in counts.values()):
        return None
    at = dataset.sel(point)
    first = (int(at["diverged_at"].where(at["diverged_at"] >= 0).min())
             if "diverged_at" in at else None)
    said = ", ".join(f"{count} of {total} chains of {arm}" for arm, (count, total)
                     in counts.items() if count)
    when = f" (the first at update {first})" if first is not None else ""
    diverged = sum(count for count, _ in counts.values())
    return Verdict(name, kind, VIOLATED, float(diverged), 0.0, 0.0, 0.0, z,
                   one_sided_rate(z) if one_sided else two_sided_rate(z),
                   f"{said} diverged{when}: an estimator whose chains blow up cannot bear out "
                   "the claim, so it fails here (a finding, not a failure of the run).",
                   {"point": point, "diverged": {arm: c for arm, (c, _) in counts.items()},
                    "chains": next(iter(counts.values()))[1], "first_divergence": first},
                   scale="count", difference=float(diverged))
