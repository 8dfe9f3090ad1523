"""What a check of seed 003's protocols measures along the sweep: an expression x of the sweep
dims (the check's ``against``), and a per-replicate quantity's excess over a baseline value of
one sweep dim (its ``baseline``).

Li, Chen, Pu, Henao & Carin (AAAI 2019) bound downpour SGLD's MSE by C₁(E₁ + E₂ + E₃), where
only E₃ = π²(P − 1)²(Σε²)²/S_L² depends on the workers P: π(P − 1) bounds the staleness in
local steps, and P = 1 is the synchronous run. With ``against = "period * (workers - 1)"`` and
``baseline = { workers = 1 }`` a check reads the MSE's growth with x = π(P − 1) as the excess
over the synchronous run at the same π, replicate by replicate: the points share their
replicates' random numbers, so the difference is measured without their common noise.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import xarray as xr

from bounds.expressions import evaluate
from workbench.studies.gaussian_judgements import sweep_points


def x_values(points: Sequence[Mapping[str, Any]], against: str, config: Mapping) -> np.ndarray:
    """``against`` at each point (a dict of sweep dim values), over the point's values and the
    configuration's numbers."""
    numbers = {k: v for k, v in config.items()
               if isinstance(v, int | float) and not isinstance(v, bool)}
    return np.array([evaluate(against, {**numbers, **point}) for point in points])


def x_grid(dataset: xr.Dataset, dims: Sequence[str], against: str,
           config: Mapping) -> xr.DataArray:
    """``against`` at every sweep point, over the sweep ``dims``."""
    values = x_values(sweep_points(dataset, dims), against, config)
    return xr.DataArray(values.reshape([dataset.sizes[d] for d in dims]), dims=tuple(dims),
                        coords={d: dataset[d] for d in dims})


def over_baseline(values: xr.DataArray, baseline: Mapping[str, Any]) -> xr.DataArray:
    """``values`` at the other values of the baseline's dim minus the same replicate's at the
    baseline value, the other dims the same."""
    [(dim, value)] = baseline.items()
    others = [v for v in values[dim].values.tolist() if v != value]
    return values.sel({dim: others}) - values.sel({dim: value})


def by_point(values: xr.DataArray, dims: Sequence[str]) -> xr.DataArray:
    """``values`` with the sweep ``dims`` stacked into a leading dim ``point``."""
    return values.stack(point=tuple(dims)).transpose("point", ...)


def stacked_x(stacked: xr.DataArray, dims: Sequence[str], against: str,
              config: Mapping) -> np.ndarray:
    """``against`` at every point of a :func:`by_point` array."""
    points = [dict(zip(dims, index, strict=True)) for index in stacked["point"].values]
    return x_values(points, against, config)
