"""The bound designs of ``stale-gaussian``: extra sweep points that put seed 001's Theorems 3
and 4 to the test, beside the seed's own L = L0·τ design.

- **rate design** (points ``{"design": "rate", "staleness": τ, "n_iterations": L}``): for each
  τ in ``rate_staleness`` and L in ``rate_iterations``, one run of L iterations at the optimal
  step of Theorem 3, h = C·τ^a·L^b, with the exponents a, b of h* derived symbolically from
  the registered bound (:func:`optimal_design`; a = −2/3, b = −1/3 for K = 1 and K = 2) and
  C = ``step_size_constant``. Theorem 3 then predicts MSE* = O(L^r) with r = −2/3.
- **envelope grid** (points ``{"design": "envelope", "staleness": τ, "relative_step": c}``):
  for each τ in ``envelope_staleness`` and c = h/s² in ``envelope_relative_step``, one run
  read at the sample counts ``envelope_iterations``: MSE and variance on a (τ, h, L) grid for
  Theorem 3's envelope and Theorem 4's independence of τ at fixed h and L. Steps are given
  relative to the posterior variance s² so the grid stays stable when the model changes
  (stale SGLD is stable iff c < 2 sin(π/(2(2τ + 1))), docs/math.md §7). The runs of one c share
  their random numbers across τ (:data:`ENVELOPE_STREAMS`): Theorem 4 compares variances
  across τ, and common random numbers measure their ratios far more precisely than
  independent runs would (a paired bootstrap carries the correlation into the check).

Each point reuses the seed design's per-point run (:mod:`workbench.studies.gaussian_point`,
the same engine and oracle) and keeps what its
checks need: per-replicate estimates at the read-out L,
the exact oracle's mean and variance there, and divergence flags. Both designs are
independent runs of the seed design's points, whose results they leave unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

import numpy as np
import xarray as xr

from bounds import registry, symbolic
from bounds.symbols import integrator_order, n_iterations, staleness, step_size
from workbench.studies.gaussian_point import make_model, run_point

MSE_BOUND = "seed001-theorem-3-mse"
VARIANCE_BOUND = "seed001-theorem-4-variance"
#: integrator order K of each sampler (seed 001: Euler K = 1, symmetric splitting K = 2)
INTEGRATOR_ORDER = {"sgld": 1, "sghmc-euler": 1, "sghmc-splitting": 2}
RATE, ENVELOPE = "rate", "envelope"
#: how envelope points seed their engine: by (design, c) alone, common to every τ
ENVELOPE_STREAMS = "common across staleness"
KEPT = ("estimate", "exact_mean", "exact_variance", "exact_stationary_variance")


@dataclass(frozen=True)
class OptimalDesign:
    """h* ∝ τ^staleness_exponent · L^iterations_exponent and MSE* = O(L^rate)."""

    order: int
    staleness_exponent: float
    iterations_exponent: float
    rate: float
    method: str
    step_size: str  # h* as text


@cache
def optimal_design(order: int) -> OptimalDesign:
    """Exponents of Theorem 3's optimal step and its MSE rate, for integrator order K."""
    bound = registry.get(MSE_BOUND)
    optimum = symbolic.minimise(bound.expression.subs(integrator_order, order), step_size)
    return OptimalDesign(order, float(optimum.exponent(staleness, "argmin")),
                         float(optimum.exponent(n_iterations, "argmin")),
                         float(optimum.exponent(n_iterations)), optimum.method,
                         bound.text(optimum.argmin))


def rate_step_size(config: dict, tau: int, length: int) -> float:
    design = optimal_design(INTEGRATOR_ORDER[config["sampler"]])
    return (config["step_size_constant"] * tau**design.staleness_exponent
            * length**design.iterations_exponent)


def points(config: dict) -> list[dict]:
    rate = [{"design": RATE, "staleness": tau, "n_iterations": length}
            for tau in config["rate_staleness"] for length in config["rate_iterations"]]
    envelope = [{"design": ENVELOPE, "staleness": tau, "relative_step": c}
                for tau in config["envelope_staleness"]
                for c in config["envelope_relative_step"]]
    return rate + envelope


def run(experiment: str, config: dict, point: dict, seed) -> xr.Dataset:
    """One point of a bound design (module docstring)."""
    tau = int(point["staleness"])
    if point["design"] == RATE:
        length = int(point["n_iterations"])
        h = rate_step_size(config, tau, length)
        read_out = [length]
    else:
        read_out = list(config["envelope_iterations"])
        length = read_out[-1]
        h = float(point["relative_step"]) * make_model(experiment, config, seed).posterior_variance
    streams = ({"design": ENVELOPE, "relative_step": point["relative_step"]}
               if point["design"] == ENVELOPE else None)
    result = run_point(experiment, config, point, seed, design=(length, h, np.array(read_out)),
                       streams=streams, dims=("staleness",))
    # the run's checkpoints are exactly the read-out sample counts
    part = result[list(KEPT)].isel(staleness=0, drop=True).rename(checkpoint="iterations")
    part["diverged_at"] = result["diverged_at"].isel(staleness=0, drop=True)
    part["stable"] = result["stable"].isel(staleness=0, drop=True)
    part["step_size"] = xr.DataArray(h)
    if point["design"] == RATE:
        part = part.isel(iterations=0, drop=True)
        index = {"rate_staleness": [tau], "rate_iterations": [length]}
    else:
        part = part.assign_coords(iterations=read_out).rename(iterations="envelope_iterations")
        index = {"envelope_staleness": [tau], "envelope_relative_step": [point["relative_step"]]}
    prefix = f"{point['design']}_"
    part = part.rename({name: prefix + name for name in part.data_vars})
    return part.expand_dims(index)


def is_design_point(point: dict) -> bool:
    return "design" in point


def combine(datasets: list[xr.Dataset]) -> xr.Dataset:
    """The rate and envelope points, each arranged on its grid, merged into one Dataset."""
    parts = []
    for prefix in (RATE, ENVELOPE):
        mine = [d for d in datasets if f"{prefix}_estimate" in d]
        if mine:
            parts.append(xr.combine_by_coords(mine, combine_attrs="drop_conflicts"))
    return xr.merge(parts, combine_attrs="drop_conflicts") if parts else xr.Dataset()
