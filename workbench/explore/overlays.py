"""Which stored measurements a registered bound can be drawn over, per experiment.

An :class:`~workbench.experiments.overlay.Overlay` pairs one bound of :mod:`bounds.registry` with
measurements of a stored result: the measured quantity and its Monte Carlo standard error on a
grid, the grid's values by the bound's symbol names (so ``bound.evaluate(**grid)`` lines up
with the measurements point by point), the symbols the experiment holds fixed, the constants
fitted the way the experiment's own checks fit them (or None), and the names of the
experiment's checks that judge this bound. Experiments register a function
``dataset -> list[Overlay]`` in :data:`OVERLAYS`; an experiment without one offers none.
"""

from __future__ import annotations

from collections.abc import Callable

import xarray as xr

from workbench.experiments.overlay import Overlay
from workbench.experiments.stale_gaussian.overlays import stale_gaussian_overlays

OVERLAYS: dict[str, Callable[[xr.Dataset], list[Overlay]]] = {
    "stale-gaussian": stale_gaussian_overlays,
}


def overlays_of(experiment: str, dataset: xr.Dataset, bound: str | None = None) -> list[Overlay]:
    """The overlays a stored result offers (for one bound, if named)."""
    make = OVERLAYS.get(experiment)
    found = make(dataset) if make is not None else []
    return [o for o in found if bound is None or o.bound == bound]
