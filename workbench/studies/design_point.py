"""One point of a study's ``[[design]]`` (:mod:`.designs`), and the designs' points combined.

A design's point reuses the seed design's per-point run (:mod:`.gaussian_point`, the same
engine and exact oracle) at the design's own L, step size and read-out sample counts, and keeps
what its checks need (:data:`KEPT`): per-replicate estimates at the read-out L, the exact
oracle's mean and variance there, and divergence flags. Its variables and dims carry the
design's name as a prefix (``rate_estimate`` over ``rate_staleness``, ``rate_iterations``), so
every design lies beside the seed design in one dataset. A ``paired`` design's runs share
their random numbers along its paired keys (:meth:`.designs.Design.streams`): seed 001's
Theorem 4 compares variances across τ, which common random numbers measure far more precisely
than independent runs.
"""

from __future__ import annotations

import numpy as np
import xarray as xr

from bounds.expressions import evaluate
from workbench.studies import gaussian_point
from workbench.studies.designs import ITERATIONS, POSTERIOR_VARIANCE, Design
from workbench.studies.gaussian_point import make_model

KEPT = ("estimate", "exact_mean", "exact_variance", "exact_stationary_variance", "diverged_at",
        "stable")


def step_size(experiment: str, design: Design, config: dict, seed) -> float:
    """The design's step size at a resolved point: its ``step_size`` expression over the
    point's numbers and the model's posterior variance, else the study's."""
    if design.step_size is None:
        return config["step_size"]
    numbers = {k: v for k, v in config.items()
               if isinstance(v, int | float) and not isinstance(v, bool)}
    numbers[POSTERIOR_VARIANCE] = make_model(experiment, config, seed).posterior_variance
    return float(evaluate(design.step_size, numbers))


def read_out(design: Design, config: dict, point: dict) -> list[int]:
    """The sample counts a design's point reads its estimates at, in order: the last is the
    run's L."""
    if not design.read_out:
        return [int(point["n_iterations"])]
    return sorted(config[design.parameter(ITERATIONS)])


def _plan(experiment: str, design: Design, config: dict, point: dict,
          seed) -> gaussian_point.Design:
    """(L, h, checkpoints) of a design's point: its read-out sample counts are the run's
    checkpoints."""
    counts = read_out(design, config, point)
    return counts[-1], step_size(experiment, design, config, seed), np.array(counts)


def run_blocks(experiment: str, design: Design, config: dict, point: dict, seed,
               blocks) -> xr.Dataset:
    """Raw results of some replicate blocks of a design's point
    (:func:`.gaussian_point.run_blocks` at the design's L and step size, on its streams)."""
    return gaussian_point.run_blocks(experiment, config, point, seed, blocks,
                                     _plan(experiment, design, config, point, seed),
                                     design.streams(point))


def finish(experiment: str, design: Design, config: dict, point: dict, seed,
           raw: xr.Dataset) -> xr.Dataset:
    """A design's point from the raw results of all its blocks (module docstring)."""
    plan = _plan(experiment, design, config, point, seed)
    result = gaussian_point.finish_point(experiment, config, point, seed, raw, plan, dims=())
    counts, h = read_out(design, config, point), plan[1]
    # the run's checkpoints are exactly the read-out sample counts
    part = result[list(KEPT)].rename(checkpoint=ITERATIONS)
    part["step_size"] = xr.DataArray(h)
    part = part.rename({name: design.parameter(name) for name in part.data_vars})
    if design.read_out:  # the read-out L, a dim of the design's own
        part = part.assign_coords({ITERATIONS: counts}).rename(
            {ITERATIONS: design.parameter(ITERATIONS)})
    else:  # the run's own L, one of its sweep values
        part = part.isel({ITERATIONS: 0}, drop=True)
    return part.expand_dims({design.parameter(k): [point["n_iterations" if k == ITERATIONS
                                                         else k]] for k in design.sweep})


def combine(designs: tuple[Design, ...], datasets: list[xr.Dataset]) -> xr.Dataset:
    """The designs' points, each design's arranged on its grid, merged into one Dataset."""
    parts = []
    for design in designs:
        mine = [d for d in datasets if design.parameter("estimate") in d]
        if mine:
            parts.append(xr.combine_by_coords(mine, combine_attrs="drop_conflicts"))
    return xr.merge(parts, combine_attrs="drop_conflicts") if parts else xr.Dataset()
