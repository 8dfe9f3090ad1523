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
(non-negative least squares, :func:`bounds.checks.fit_envelope`) and labelled so.
"""

from __future__ import annotations

import numpy as np
import xarray as xr

from bounds import registry
from bounds.checks import fit_envelope
from bounds.envelope import Envelope
from workbench.experiments.overlay import Overlay
from workbench.experiments.stale_gaussian.bound_checks import (
    envelope_data,
    fit_theorem_3,
    grid_values,
    squared_errors,
)
from workbench.experiments.stale_gaussian.bound_design import (
    INTEGRATOR_ORDER,
    MSE_BOUND,
    VARIANCE_BOUND,
)
from workbench.stats.estimators import summarize
from workbench.store.netcdf import config_of

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
    config = config_of(dataset)
    order = {"integrator_order": INTEGRATOR_ORDER[config["sampler"]]}
    overlays = []
    functions = dataset["test_function"].values.tolist()
    if "envelope_estimate" in dataset:
        grid = grid_values(dataset)
        final = dataset.isel(envelope_iterations=-1)
        for function in functions:
            label = _LABELS[function]
            measured, error = envelope_data(dataset, function)
            overlays.append(Overlay(
                MSE_BOUND, f"MSE of φ̂({label}) on the envelope grid (τ, h, L)", measured,
                error, grid, "envelope_iterations", "n_iterations", order,
                fit_theorem_3(dataset, function, config), (f"envelope/theorem-3/{function}",)))
            summary = summarize(dataset["envelope_estimate"], final["posterior_value"],
                                confidence=config["confidence"]).sel(test_function=function)
            variance, variance_error = _summed(summary, "variance")
            overlays.append(Overlay(
                VARIANCE_BOUND, f"variance of φ̂({label}) across τ on the envelope grid",
                variance, variance_error, grid, "envelope_staleness", "staleness", order,
                _fitted(VARIANCE_BOUND, grid, variance, order, "the envelope grid"),
                (f"invariance/variance-vs-staleness/{function}/",)))
    if "rate_estimate" in dataset:
        grid = {"staleness": dataset["rate_staleness"], "step_size": dataset["rate_step_size"],
                "n_iterations": dataset["rate_iterations"]}
        for function in functions:
            squared = squared_errors(dataset, "rate", function)
            measured = squared.mean("replicate")
            error = squared.std("replicate", ddof=1) / np.sqrt(squared.count("replicate"))
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
