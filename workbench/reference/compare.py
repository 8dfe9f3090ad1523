"""A sampler's estimate against a reference posterior's: the ``reference`` kind of check.

Where no exact oracle exists, the comparison target is itself a Monte Carlo estimate, and its
error enters the interval (docs/verdicts.md). Run and reference are
independent, so the difference's standard error is σ = √(σ_run² + σ_ref²) on the absolute
scale, and √((σ_run/observed)² + (σ_ref/reference)²) on the log-ratio scale (delta method).
The decision is then the three-way equivalence test of :mod:`bounds.equivalence` with the
margins of :func:`bounds.checks.oracle_check`: absolute by default, half the per-replicate
standard deviation of the run's estimate (``oracle`` in
:data:`~bounds.equivalence.DEFAULT_MARGINS`); ``relative``, a factor 1.5 (``oracle-relative``).
When the verdict is ``inconclusive``, the replicates that would decide it account for the
reference's error not shrinking with them (:func:`reference_parts`). A reference whose chains
disagree (R-hat above :data:`~workbench.reference.summary.RHAT_LIMIT`) decides nothing: the
verdict is ``inconclusive`` and says so.
"""

from __future__ import annotations

import math

import xarray as xr

from bounds.equivalence import (
    DEFAULT_MARGINS,
    REFERENCE_FACTOR,
    ErrorParts,
    decide,
    sentences,
    verdict_from,
)
from bounds.verdict import Verdict
from simulators import validation
from workbench.reference.summary import RHAT_LIMIT

STATISTICS = ("mean", "variance")


def combined_error(run_error: float, reference_error: float) -> float:
    """σ of a difference of two independent estimates: √(σ_run² + σ_ref²)."""
    return math.hypot(float(run_error), float(reference_error))


#: why more replicates alone cannot decide a comparison with a reference (:class:`ErrorParts`)
LONGER_REFERENCE = ("the reference's own error is too large: a longer reference run would "
                    "decide it, not more replicates alone (about {joint} times both the "
                    "replicates and the reference's draws)")


def reference_parts(run_error: float, reference_error: float) -> ErrorParts:
    """The run's error shrinks as 1/√R with its replicates, the reference's stays."""
    return ErrorParts(run_error, reference_error, LONGER_REFERENCE, REFERENCE_FACTOR)


def reference_value(reference: xr.Dataset, test_function: str, component: int,
                    statistic: str = "mean") -> tuple[float, float]:
    """The reference's estimate of ``statistic`` (``mean`` or ``variance``) of one component
    of a test function, and its Monte Carlo standard error."""
    validation.one_of("statistic", statistic, STATISTICS)
    names = [str(name) for name in reference["test_function"].values]
    validation.one_of("test_function", test_function, tuple(names))
    component = validation.integer("component", component, minimum=0)
    if component >= reference.sizes["component"]:
        raise validation.InvalidParameter("component", component,
                                          f"must be < {reference.sizes['component']}")
    where = {"test_function": test_function, "component": component}
    return (float(reference[statistic].sel(where)),
            float(reference[f"{statistic}_mc_error"].sel(where)))


def reference_check(check: str, observed: float, mc_error: float, reference: xr.Dataset,
                    test_function: str, component: int, z: float, detail: str = "",
                    evidence: dict | None = None, *, statistic: str = "mean",
                    n_replicates: int | None = None, margin: float | None = None,
                    relative: bool = False, z_holds: float | None = None) -> Verdict:
    """A run's estimate ``observed`` ± ``mc_error`` of the reference's ``statistic`` of
    ``test_function``[``component``], three-way against ``margin`` (module docstring; the
    arguments are those of :func:`bounds.checks.oracle_check`)."""
    expected, reference_error = reference_value(reference, test_function, component, statistic)
    observed, mc_error = float(observed), float(mc_error)
    rhat = float(reference["rhat"].sel(test_function=test_function, component=component))
    evidence = dict(evidence or {})
    evidence.update({"run_mc_error": mc_error, "reference_mc_error": reference_error,
                     "reference_rhat": rhat, "reference_key": reference.attrs.get("store_key"),
                     "statistic": statistic})
    if n_replicates is not None:
        evidence["n_replicates"] = int(n_replicates)
    finite = all(math.isfinite(v) for v in (observed, mc_error, expected, reference_error))
    if relative:
        size = DEFAULT_MARGINS["oracle-relative"].size if margin is None else margin
        scale, width = "log-ratio", math.log1p(size)
        positive = finite and observed > 0 and expected > 0
        difference = math.log(observed / expected) if positive else math.nan
        run_part = mc_error / observed if positive else math.nan
        reference_part = reference_error / expected if positive else math.nan
    else:
        if margin is None:
            if n_replicates is None:
                raise ValueError("reference_check needs n_replicates for its default margin")
            margin = DEFAULT_MARGINS["oracle"].size * mc_error * math.sqrt(n_replicates)
        scale, width = "absolute", float(margin)
        difference, run_part, reference_part = observed - expected, mc_error, reference_error
    error = combined_error(run_part, reference_part)
    if not finite:
        detail = detail or "non-finite estimate or reference value"
    elif not rhat <= RHAT_LIMIT:
        detail = sentences(detail, f"The reference is not trusted: its chains disagree "
                                   f"(R-hat {rhat:.4g} > {RHAT_LIMIT}).")
        evidence["cannot_decide"] = f"the reference is not trusted (R-hat {rhat:.4g})"
        error = math.nan
    elif error > 0:
        evidence["z_score"] = abs(difference) / error
    decision = decide(difference, error if finite else math.nan, width, z, z_holds=z_holds)
    decision = reference_parts(run_part, reference_part).applied(decision, z, z_holds)
    return verdict_from(check, "reference", decision, observed, expected, z, scale,
                        n_replicates=n_replicates, detail=detail, evidence=evidence)
