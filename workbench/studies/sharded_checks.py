"""Which judgement each check kind of a sharded study runs (:mod:`.sharded_point`: traveling
chains or federated rounds): :mod:`.sharded_judgements` for most, :mod:`.limit_judgements`,
:mod:`.time_to_target` and :mod:`.step_envelope_judgements` for theirs (which read the shared
helpers of :mod:`.sharded_judgements`, so the choice among them lives above all of them)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from workbench.studies import sharded_judgements as judgements

if TYPE_CHECKING:
    import xarray as xr

    from bounds.verdict import Verdict
    from workbench.studies.gaussian_judgements import Context


def judge(kind: str, dataset: xr.Dataset, ctx: Context, options: dict) -> list[Verdict]:
    """The verdicts of one ``[[check]]`` of a sharded study (:mod:`.sharded_point`): traveling
    chains or federated rounds."""
    rate = ctx.config["false_failure_rate"]
    args = (dataset, ctx.dims, ctx.symbols)
    if kind == "oracle":
        return judgements.oracle_checks(*args, rate)
    if kind == "stationary":
        return judgements.stationary_checks(*args, options, rate)
    if kind == "gradient-noise":
        return judgements.gradient_checks(*args, rate)
    if kind == "limit":
        from workbench.studies.limit_judgements import limit_family

        return limit_family(*args, rate, ctx.kinds())
    if kind == "time-to-target":
        from workbench.studies.time_to_target import time_to_target_checks

        return time_to_target_checks(*args, options, rate, ctx.config)
    if kind == "envelope":
        from workbench.studies.step_envelope_judgements import envelope_checks

        return envelope_checks(dataset, ctx.name, ctx.config, options)
    if kind == "posterior":
        return judgements.posterior_checks(*args, options, rate, ctx.kinds())
    judged = {"distance": judgements.distance_checks,
              "invariance": judgements.invariance_checks,
              "growth": judgements.growth_checks}[kind]
    return judged(*args, options, rate)
