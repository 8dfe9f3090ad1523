"""The checks of a topic-model study (:mod:`.topic_point`), at every sweep point (or those its
``where`` names):

- ``perplexity``: each sampler's held-out perplexity at the last evaluation time is at most
  ``perplexity_margin`` (relative) above the true topics' on the same split by the same
  estimator, one-sided on the replicates' log ratios (a generated corpus: its topics are
  known). ``violated`` means the sampler is shown to end further away than that.
- ``time-to-perplexity``: seed 004 Table 1's ordering. The target is the perplexity the
  ``target`` sampler (AD-LDA) ends at, the largest over its replicates (so that every replicate
  of it reaches the target by the horizon, as AD-LDA reaches its own level in the paper); each
  sampler's time to it is the first evaluation time at which a replicate's perplexity is at or
  below it. For each
  consecutive pair (a, b) of ``order`` (the paper's D-SGLD < SGRLD < AD-LDA), a reaches the
  target before b: one-sided on the replicates' log(t_b/t_a), shown above −``time_margin``.
  A replicate that never reaches the target within the horizon counts at the horizon: a lower
  bound on its time, so a censored b can only weaken a ``violated`` and a censored a only a
  ``holds`` (neither is then given).

The verdicts are named ``<kind>/<sampler(s)>/<point>``; their z is
:meth:`~.gaussian_judgements.Context.one_sided_z` over the check's own comparisons. The times
are simulated, under the study's declared cost model (kept in the dataset's attributes and
shown in every verdict's detail).
"""

from __future__ import annotations

import math

import numpy as np
import xarray as xr

from bounds.equivalence import HOLDS, VIOLATED, decide, verdict_from
from bounds.verdict import Verdict
from workbench.studies.gaussian_judgements import Context, point_label, sweep_points


def judge(kind: str, dataset: xr.Dataset, ctx: Context, options: dict) -> list[Verdict]:
    """The verdicts of one ``[[check]]`` of the ``kind`` (module docstring)."""
    return {"perplexity": perplexity_checks,
            "time-to-perplexity": time_checks}[kind](dataset, ctx, options)


def _points(dataset: xr.Dataset, ctx: Context, options: dict) -> list[dict]:
    where = options.get("where", {})
    return [p for p in sweep_points(dataset, ctx.dims)
            if all(p[k] == v for k, v in where.items())]


def _name(kind: str, samplers: str, point: dict, options: dict) -> str:
    if "name" in options:
        return options["name"].format(**point)
    label = point_label(point)
    return f"{kind}/{samplers}" + (f"/{label}" if label else "")


def cost_line(dataset: xr.Dataset) -> str:
    """The cost model the times are simulated under, as a sentence."""
    attrs = dataset.attrs
    return ("Simulated time, in cost-model units: a token's Gibbs update "
            f"{attrs.get('cost_gibbs_token', math.nan):g}, SGRLD's work per minibatch token "
            f"{attrs.get('cost_sgrld_token', math.nan):g}, a topic-word entry's update "
            f"{attrs.get('cost_topic_entry', math.nan):g}, its message "
            f"{attrs.get('cost_message_entry', math.nan):g}.")


def perplexity_checks(dataset: xr.Dataset, ctx: Context, options: dict) -> list[Verdict]:
    points = _points(dataset, ctx, options)
    samplers = options.get("samplers") or dataset["topic_sampler"].values.tolist()
    z = ctx.one_sided_z(len(points) * len(samplers))
    margin = options["perplexity_margin"]
    verdicts = []
    for point in points:
        at = dataset.sel(point)
        truth = float(at["true_perplexity"])
        for sampler in samplers:
            final = at["perplexity"].sel(topic_sampler=sampler).isel(time=-1).values
            logs = np.log(final / truth)
            logs = logs[np.isfinite(logs)]
            n = logs.size
            mean = float(logs.mean()) if n else math.nan
            error = float(logs.std(ddof=1) / math.sqrt(n)) if n > 1 else math.nan
            decision = decide(mean, error, math.log1p(margin), z, one_sided=True)
            verdicts.append(verdict_from(
                _name("perplexity", sampler, point, options), "perplexity", decision,
                math.exp(mean) if n else math.nan, 1.0 + margin, z, "log-ratio",
                n_replicates=n,
                detail=(f"{sampler}'s held-out perplexity at the last time "
                        f"{float(at['time'][-1]):.4g}: {np.nanmean(final):.4g} over {n} "
                        f"replicates, {math.exp(mean) if n else math.nan:.4g} times the true "
                        f"topics' {truth:.4g} (random topics: "
                        f"{float(at['random_perplexity']):.4g}); the claim is at most "
                        f"{1 + margin:g} times."),
                evidence={"point": point, "sampler": sampler,
                          "true_perplexity": truth}))
    return verdicts


def times_to_target(perplexity: xr.DataArray, target: float) -> np.ndarray:
    """Per sampler and replicate, the first evaluation time whose perplexity is at or below
    ``target`` (``inf``: never within the horizon); ``perplexity`` is (topic_sampler, time,
    replicate)."""
    values = perplexity.values
    reached = values <= target
    first = np.argmax(reached, axis=1)
    times = perplexity["time"].values[first]
    return np.where(reached.any(axis=1), times, np.inf)


def time_checks(dataset: xr.Dataset, ctx: Context, options: dict) -> list[Verdict]:
    points = _points(dataset, ctx, options)
    order, target_sampler = options["order"], options["target"]
    pairs = list(zip(order[:-1], order[1:], strict=True))
    z = ctx.one_sided_z(len(points) * len(pairs))
    verdicts = []
    for point in points:
        at = dataset.sel(point)
        horizon = float(at["time"][-1])
        curves = at["perplexity"]
        target = float(curves.sel(topic_sampler=target_sampler).isel(time=-1).max())
        times = dict(zip(curves["topic_sampler"].values.tolist(),
                         times_to_target(curves, target), strict=True))
        table = {name: float(np.median(t)) for name, t in times.items()}
        for first, second in pairs:
            sooner, later = times[first], times[second]
            logs = np.log(np.minimum(later, horizon) / np.minimum(sooner, horizon))
            n = logs.size
            gain = float(logs.mean())
            error = float(logs.std(ddof=1) / math.sqrt(n)) if n > 1 else math.nan
            decision = decide(-gain, error, options["time_margin"], z, one_sided=True)
            censored, evidence = "", {}
            short = (first if decision.verdict == HOLDS and not np.isfinite(sooner).all() else
                     second if decision.verdict == VIOLATED and not np.isfinite(later).all()
                     else None)
            if short is not None:
                decision = decide(math.nan, math.nan, options["time_margin"], z, one_sided=True)
                censored = f" {short} did not reach the target in every replicate."
                evidence["cannot_decide"] = (
                    f"{short} did not reach the target by the horizon {horizon:.4g} in every "
                    f"replicate, so its time is only bounded below (censored), which the "
                    f"test of the mean log ratio cannot use: more replicates do not remove the "
                    f"censoring, a longer horizon does")
            verdicts.append(verdict_from(
                _name("time-to-perplexity", f"{first}-before-{second}", point, options),
                "time-to-perplexity", decision, gain, 0.0, z, "log-ratio", n_replicates=n,
                detail=(f"Time to {target_sampler}'s final perplexity {target:.4g} (median "
                        f"over replicates; inf: not reached by {horizon:.4g}): "
                        + ", ".join(f"{k} {v:.4g}" for k, v in table.items())
                        + f". log(t_{second}/t_{first}) = {gain:.3g} ± {error:.2g}, claimed > "
                          f"0.{censored} {cost_line(at)}"),
                evidence={"point": point, "target": target,
                          "times": {k: v if math.isfinite(v) else None
                                    for k, v in table.items()}, **evidence}))
    return verdicts
