"""A federated study's envelope check: a registered bound over its step grid.

Seed 002 (el Mekkaoui et al. 2021) Theorem 1 bounds DSGLD's MSE by
C((Σ_s N_s²γ_s²/f_s + 1)/(mT) + h²), Theorem 2 FSGLD's by
C((1/(mT))Σ_s (N_s²/f_s)ε_s² + 1/(hT) + h²) (Welling–Teh step h; records in
:mod:`bounds.library.seed002`). A ``kind = "envelope"`` check names such a bound and the
estimator it bounds; its symbols take the data's own values (γ_s² or ε_s² computed on the grid
of Figure 4, the shard sizes, a uniform client choice) and ``bound_mse`` of the step grid
(:mod:`workbench.studies.step_grid_point`). The bound is judged where it makes a claim a run
can test, its dependence on the step size: one non-negative constant per term is fitted at the
study's own step (factor 1, every local-update count and window length) and the fitted envelope
must stay above the measurements at the other factors (:func:`bounds.checks.fit_envelope`,
:func:`~bounds.checks.envelope_check`). Theorem 2's 1/(hT) term carries the Langevin chain's
own Monte Carlo variance, which grows as h shrinks; Theorem 1 as printed has no such term (seed
002's Remark 2, its serial special case, does), so at a smaller step DSGLD's measured MSE can
outgrow the envelope fitted at h.
"""

from __future__ import annotations

import numpy as np
import xarray as xr

from bounds import registry
from bounds.checks import envelope_check, fit_envelope
from bounds.envelope import unjudged_envelope
from bounds.verdict import Verdict, one_sided_z_for_family
from workbench.studies.schema import STEP_FACTORS

#: an estimator's per-shard symbol in its bound and the study's variable that holds it
PER_SHARD = {"dsgld": ("shard_gradient_bound_sq", "gamma_squared"),
             "fsgld": ("surrogate_error_sq", "epsilon_squared")}


def grid_values(dataset: xr.Dataset, config: dict, method: str) -> dict:
    """The bound's symbols on the step grid, by name (per-shard values along ``shard``)."""
    n_shards = dataset.sizes["shard"]
    symbol, variable = PER_SHARD[method]
    step = float(dataset["step_size"]) * 2  # Welling–Teh h of seed 002
    return {
        "shard_size": dataset["shard_size"].astype(float),
        "selection_probability": xr.full_like(dataset["shard_size"], 1.0 / n_shards,
                                              dtype=float),
        symbol: dataset[variable],
        "batch_size": float(config["batch_size"]),
        "n_iterations": dataset["iterations"].astype(float),
        "step_size_wt": step * dataset["step_factor"],
    }


def fitted(dataset: xr.Dataset, config: dict, method: str, name: str, label: str = ""):
    """The bound ``name``'s envelope for ``method`` fitted at the study's own step, with the
    symbols' values it was fitted on."""
    values = grid_values(dataset, config, method)
    observed = dataset["bound_mse"].sel(estimator=method)
    return fit_envelope(registry.get(name), values, observed, dataset["step_factor"] == 1.0,
                        label=label), values


def envelope_checks(dataset: xr.Dataset, study: str, config: dict,
                    options: dict) -> list[Verdict]:
    """One verdict: the bound ``options["bound"]`` on estimator ``options["estimator"]``,
    named after the bound without its source (``seed002-theorem-1-dsgld``:
    ``envelope/theorem-1-dsgld``)."""
    method, name = options["estimator"], options["bound"]
    bound = registry.get(name)
    check, evidence = f"envelope/{name.split('-', 1)[1]}", {"estimator": method, "bound": name}
    if not config[STEP_FACTORS]:  # the sweep alone: nothing beside h to judge the bound at
        return [unjudged_envelope(
            check, "not judged: the run has no steps beside h, bound_step_factors is empty",
            one_sided_z_for_family(config["false_failure_rate"], 1),
            detail=f"{bound.title} [{bound.provenance}]", evidence=evidence)]
    envelope, values = fitted(dataset, config, method, name,
                              f"{study} {method} at the study's step")
    observed = dataset["bound_mse"].sel(estimator=method)
    held_out = (dataset["step_factor"] != 1.0) & np.isfinite(observed)
    n_held_out = int(held_out.broadcast_like(observed).sum())
    z = one_sided_z_for_family(config["false_failure_rate"], max(n_held_out, 1))
    return [envelope_check(
        check, envelope, values, observed,
        dataset["bound_mse_se"].sel(estimator=method), z, held_out,
        detail=(f"{bound.title} [{bound.provenance}], γ_s²/ε_s² from the data: constants "
                f"fitted at the study's own step (Welling–Teh h = "
                f"{2 * float(dataset['step_size']):.3g}) for every local-update count, "
                f"judged at step factors {config[STEP_FACTORS]}"),
        evidence=evidence)]
