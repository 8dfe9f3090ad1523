"""What ``stale-gaussian`` offers the Bounds explorer: its measurements beside seed 001's bounds.

For each test function φ (θ and θ²):

- Theorem 3 (MSE) over the envelope grid (τ, h, L), constants fitted on the calibration
  runs exactly as ``envelope/theorem-3/<φ>`` fits them;
- Theorem 3 (MSE) along the rate design (L at the optimal step for each τ), judged by
  ``rate/mse/<φ>/...``;
- Theorem 4 (variance) across τ on the envelope grid, judged by
  ``invariance/variance-vs-staleness/<φ>/...``;
- the Section 4 MSE bound along the seed design L = L0·τ (judged by ``invariance/mse``) and
  Theorem 4 along it (judged by ``slope/variance-vs-staleness/<φ>``).

Where the experiment's checks fit no constants, the overlay's are fitted on all its points
(non-negative least squares, :func:`bounds.checks.fit_envelope`) and labelled so. The designs'
measurements are read from their views (:mod:`workbench.studies.design_judgements`); which
bound goes with which measurement is seed 001's, so this stays with the experiment.
"""

from __future__ import annotations

import numpy as np
import xarray as xr

from bounds import registry
from bounds.checks import fit_envelope
from bounds.envelope import Envelope
from workbench import experiments
from workbench.experiments.overlay import Overlay
from workbench.stats.estimators import summarize
from workbench.studies.design_judgements import (
    envelope_data,
    envelope_fit,
    grid_values,
    on_dataset_dims,
    view,
)
from workbench.studies.gaussian_judgements import squared_errors
from workbench.studies.schema import integrator_order

MSE_BOUND = "seed001-theorem-3-mse"
VARIANCE_BOUND = "seed001-theorem-4-variance"
SECTION_4_MSE = "seed001-section-4-mse"
_LABELS = {"theta": "θ", "theta_squared": "θ²"}


def _fitted(name: str, grid: dict, measured: xr.DataArray, fixed: dict,
            what: str) -> Envelope:
    """Constants fitted on every point (where the experiment's checks fit none)."""
    return fit_envelope(registry.get(name), grid, measured, fixed=fixed,
                        label=f"stale-gaussian: fitted on all points of {what}")


def _summed(summary: xr.Dataset, quantity: str) -> tuple[xr.DataArray, xr.DataArray]:
    """A summary quantity summed over coordinates, with its standard error."""
    return (summary[quantity].sum("component"),
            np.sqrt((summary[f"{quantity}_se"] ** 2).sum("component")))


def stale_gaussian_overlays(dataset: xr.Dataset) -> list[Overlay]:
    experiment = experiments.for_dataset(dataset)
    ctx = experiment.context(dataset)
    config = ctx.config
    order = {"integrator_order": integrator_order(config)}
    overlays = []
    functions = dataset["test_function"].values.tolist()
    designs = {d.name: d for d in experiment.study.designs}
    if "envelope_estimate" in dataset:
        design = designs["envelope"]
        data = view(dataset, design)
        check = next(c for c in design.checks if c.kind == "envelope")
        values = grid_values(data, design, ctx.bounds[check.bound].bound)
        grid = dict(zip(values, on_dataset_dims(design, *values.values()), strict=True))
        final = data.isel(iterations=-1)
        for function in functions:
            label = _LABELS[function]
            measured, error = on_dataset_dims(design, *envelope_data(data, function))
            overlays.append(Overlay(
                MSE_BOUND, f"MSE of φ̂({label}) on the envelope grid (τ, h, L)", measured,
                error, grid, "envelope_iterations", "n_iterations", order,
                envelope_fit(data, design, ctx, check, function,
                             config[design.parameter("split")]),
                (f"envelope/{check.bound}/{function}",)))
            summary = summarize(data["estimate"], final["posterior_value"],
                                confidence=config["confidence"]).sel(test_function=function)
            variance, variance_error = on_dataset_dims(design, *_summed(summary, "variance"))
            overlays.append(Overlay(
                VARIANCE_BOUND, f"variance of φ̂({label}) across τ on the envelope grid",
                variance, variance_error, grid, "envelope_staleness", "staleness", order,
                _fitted(VARIANCE_BOUND, grid, variance, order, "the envelope grid"),
                (f"invariance/variance-vs-staleness/{function}/",)))
    if "rate_estimate" in dataset:
        design = designs["rate"]
        data = view(dataset, design)
        grid = dict(zip(("staleness", "step_size", "n_iterations"), on_dataset_dims(
            design, data["staleness"], data["step_size"], data["iterations"]), strict=True))
        for function in functions:
            squared = squared_errors(data, function)
            measured, error = on_dataset_dims(design, squared.mean("replicate"), squared.std(
                "replicate", ddof=1) / np.sqrt(squared.count("replicate")))
            overlays.append(Overlay(
                MSE_BOUND, f"MSE of φ̂({_LABELS[function]}) along the rate design "
                           "(h at Theorem 3's optimum)", measured, error, grid,
                "rate_iterations", "n_iterations", order,
                _fitted(MSE_BOUND, grid, measured, order, "the rate design"),
                (f"rate/mse/{function}/",)))
    final = dataset.isel(checkpoint=-1)
    summary = summarize(final["estimate"], final["posterior_value"],
                        confidence=config["confidence"])
    grid = {"staleness": dataset["staleness"], "step_size": dataset["step_size"],
            "n_iterations": dataset["n_iterations"]}
    for function in functions:
        label = _LABELS[function]
        part = summary.sel(test_function=function)
        mse, mse_error = _summed(part, "mse")
        overlays.append(Overlay(
            SECTION_4_MSE, f"MSE of φ̂({label}) along the seed design L = L0·τ", mse,
            mse_error, grid, "staleness", "staleness", {},
            _fitted(SECTION_4_MSE, grid, mse, {}, "the seed design"),
            ("invariance/mse/",) if function == config["test_function"] else ()))
        variance, variance_error = _summed(part, "variance")
        overlays.append(Overlay(
            VARIANCE_BOUND, f"variance of φ̂({label}) along the seed design L = L0·τ",
            variance, variance_error, grid, "staleness", "staleness", order,
            _fitted(VARIANCE_BOUND, grid, variance, order, "the seed design"),
            (f"slope/variance-vs-staleness/{function}",)))
    return overlays
