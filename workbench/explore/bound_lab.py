"""The Bound lab: a bound typed by the user, its analysis, and its envelope on a stored result.

A bound string goes through the whitelist of :mod:`bounds.parse` (never ``eval``), with
``NAME=ASSUMPTION`` declarations for symbols of the user's own, and is then handled like a
registered bound: :func:`analyse` gives what ``workbench bounds show --expression`` prints (the
LaTeX, the optimal step h* with the method that found it, the rate in L at h*), from
:func:`bounds.analysis.report`.

Fitting (:func:`fit`): a stored ``stale-gaussian`` result carries an envelope grid — runs at
every (staleness τ, step size h) pair read at several sample counts L, the MSE of φ̂ with its
Monte Carlo error at each point. The bound's terms get non-negative constants fitted on the
calibration part of that grid and are checked on the held-out part
(:func:`bounds.envelope.fit_envelope`, :func:`bounds.envelope.envelope_check`; the split, the
measured MSE and the grid come from the envelope check of the study's envelope design,
:mod:`workbench.studies.design_judgements`), with the one-sided Bonferroni z
over the held-out points at the result's ``false_failure_rate``. The bound may use the grid's
symbols (τ, h, L), hidden constants (C1, C_2, ...) and the integrator order K, which is fixed
by the result's sampler; any other symbol is refused by name. :func:`fit_chart` draws the fit
as an interactive chart.
"""

from __future__ import annotations

from dataclasses import dataclass

import altair as alt
import numpy as np
import pandas as pd
import xarray as xr

from bounds import analysis
from bounds.envelope import Envelope, envelope_check, fit_envelope
from bounds.parse import parse_assumptions, user_bound
from bounds.record import Bound
from bounds.symbols import info
from bounds.verdict import Verdict, one_sided_z_for_family
from simulators.validation import InvalidParameter
from workbench import experiments
from workbench.explore import charts
from workbench.store.netcdf import config_of
from workbench.studies.check_kinds import SPLITS
from workbench.studies.design_judgements import (
    count_held_out,
    envelope_data,
    grid_values,
    held_out,
    on_dataset_dims,
    view,
)
from workbench.studies.schema import integrator_order

EXAMPLE = "C1/(L*h) + C2*tau**2*h**2 + C3*h**2"
"""The bound the page opens with: seed 001's Theorem 3 MSE form for K = 1, typed by hand."""
FITTABLE = "stale-gaussian"
"""The experiment whose stored results carry an envelope grid (its design ``envelope``)."""
DESIGN = "envelope"


@dataclass(frozen=True)
class Analysis:
    """What the lab shows of a bound before any fit."""

    bound: Bound
    latex: str
    formula: str
    method: str  # how h* was found ("exact", "dominant balance"), "" when there is no h*
    optimal_step: str  # h* as text, or why there is none
    optimal_step_latex: str
    rate: str | None  # exponent of L at h* (or of the bound when it has no step)


def parse(text: str, assumptions: str = "") -> Bound:
    """The bound of a string, with comma-separated ``NAME=ASSUMPTION`` declarations; a
    refused string is a :class:`bounds.parse.BoundSyntaxError` naming the piece and column."""
    items = [item for item in assumptions.split(",") if item.strip()]
    return user_bound(text, name="bound-lab", assumptions=parse_assumptions(items),
                      source="typed in the Bound lab")


def analyse(bound: Bound) -> Analysis:
    data = analysis.report(bound)
    result = data["analysis"]
    optimum = result.get("optimum", {})
    if "step_size" in optimum:
        step, step_latex = optimum["step_size"], optimum["step_size_latex"]
    else:
        step = optimum.get("detail", "the bound has no step size h to optimise")
        step_latex = ""
    return Analysis(bound, data["latex"], data["formula"], optimum.get("method", ""), step,
                    step_latex, result.get("rate") or optimum.get("rate"))


def fittable(dataset: xr.Dataset) -> bool:
    """Whether a stored result carries an envelope grid to fit a bound to."""
    return dataset.attrs.get("experiment") == FITTABLE and "envelope_estimate" in dataset


@dataclass(frozen=True)
class Fit:
    """A bound's envelope on a stored result: the verdict on the held-out points, and the
    measured and fitted values on the whole grid for the plot."""

    envelope: Envelope
    verdict: Verdict
    measured: xr.DataArray  # MSE of φ̂ on the (τ, h, L) grid
    error: xr.DataArray  # its Monte Carlo standard error
    fitted: xr.DataArray  # the envelope on the same grid
    calibration: xr.DataArray  # True where a point calibrated the constants


def _grid_symbols(bound: Bound, grid: dict, fixed: dict) -> None:
    """Refuse a bound that uses a symbol the grid does not vary, naming it."""
    known = set(grid) | set(fixed)
    unknown = [s for s in bound.all_symbols()
               if not info(s).hidden_constant and s.name not in known]
    if unknown:
        names = ", ".join(f"{info(s).display} ({s.name})" for s in unknown)
        raise InvalidParameter(
            "bound", bound.text(), f"uses {names}, which this result's grid does not vary "
            "(it varies staleness τ, step_size h and n_iterations L; constants C1, C2, ... "
            "are fitted)")


def fit(bound: Bound, dataset: xr.Dataset, test_function: str, split: str) -> Fit:
    """Fit the bound's constants on the calibration part of the result's envelope grid and
    check the held-out part (module docstring)."""
    if not fittable(dataset):
        raise InvalidParameter("result", dataset.attrs.get("experiment"),
                               f"must be a {FITTABLE} result with its envelope grid "
                               "(designs = true)")
    functions = dataset["test_function"].values.tolist()
    if test_function not in functions:
        raise InvalidParameter("test_function", test_function, f"must be one of {functions}")
    if split not in SPLITS:
        raise InvalidParameter("split", split, f"must be one of {SPLITS}")
    if bound.relation != "upper bound":
        raise InvalidParameter("bound", bound.name, "an envelope needs an upper bound")
    config = config_of(dataset)
    design = next(d for d in experiments.for_dataset(dataset).study.designs if d.name == DESIGN)
    data = view(dataset, design)
    fixed = {"integrator_order": integrator_order(config)}
    values = grid_values(data, design, bound)
    _grid_symbols(bound, values, fixed)
    mask = held_out(data, design, split)
    arrays = on_dataset_dims(design, *values.values(), *envelope_data(data, test_function),
                             mask)
    grid = dict(zip(values, arrays[:len(values)], strict=True))
    measured, errors, held = arrays[len(values):]
    calibration = ~held
    envelope = fit_envelope(bound, grid, measured, calibration, fixed=fixed,
                            label=f"{FITTABLE} {split} calibration, φ = {test_function}")
    z = one_sided_z_for_family(config["false_failure_rate"],
                               max(1, count_held_out(data, mask)))
    verdict = envelope_check(
        f"envelope/{bound.name}/{test_function}", envelope, grid, measured, errors, z,
        held, n_replicates=config["n_replicates"],
        detail=f"{bound.text()}: constants fitted on the {split} calibration runs must keep "
               f"the bound above the MSE of φ̂({test_function}) on the held-out runs.",
        evidence={"test_function": test_function, "split": split})
    fitted = (envelope(grid) if np.all(np.isfinite(envelope.coefficients))
              else xr.full_like(measured, np.nan))
    return Fit(envelope, verdict, measured, errors, fitted.broadcast_like(measured),
               calibration.broadcast_like(measured))


def fit_chart(fit: Fit, test_function: str) -> alt.LayerChart:
    """The measured MSE of φ̂(test_function) against the fitted envelope at every grid point
    (calibration and held-out points apart, each with its 95% interval) and the diagonal
    measured = envelope dashed: held-out points above it are where the bound fails. Log axes,
    and the diagonal, only where every value is positive."""
    dims = fit.measured.dims
    stacked = {k: getattr(fit, k).stack(point=dims).values
               for k in ("measured", "error", "fitted", "calibration")}
    index = fit.measured.stack(point=dims)["point"].values
    points = np.array([", ".join(f"{d} = {v:g}" for d, v in zip(dims, at, strict=True))
                       for at in index])
    frame = []
    for mask, label in ((stacked["calibration"], "calibration"), (~stacked["calibration"],
                                                                   "held out")):
        measured, error = stacked["measured"][mask], charts.Z_INTERVAL * stacked["error"][mask]
        frame.append(charts.rows(stacked["fitted"][mask], measured, label, points[mask],
                                 style="points", lower=measured - error,
                                 upper=measured + error))
    finite = np.concatenate([v[np.isfinite(v)] for v in (stacked["measured"],
                                                         stacked["fitted"])])
    positive = bool(finite.size and np.all(finite > 0))
    if positive:
        span = [finite.min(), finite.max()]
        frame.append(charts.rows(span, span, "measured = envelope", "diagonal",
                                 style="dashed"))
    return charts.line_chart(pd.concat(frame, ignore_index=True), x_title="fitted envelope",
                             y_title=f"measured MSE of φ̂({test_function})", log_x=positive,
                             log_y=positive)
