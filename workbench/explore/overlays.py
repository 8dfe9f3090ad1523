"""Which stored measurements a registered bound can be drawn over, per experiment.

An :class:`~workbench.experiments.overlay.Overlay` pairs one bound of :mod:`bounds.registry` with
measurements of a stored result: the measured quantity and its Monte Carlo standard error on a
grid, the grid's values by the bound's symbol names (so ``bound.evaluate(**grid)`` lines up
with the measurements point by point), the symbols the experiment holds fixed, the constants
fitted the way the experiment's own checks fit them (or None), and the names of the
experiment's checks that judge this bound. Experiments register a function
``dataset -> list[Overlay]`` in :data:`OVERLAYS`; an experiment without one offers none.
:func:`overlay_chart` draws one overlay as an interactive chart.
"""

from __future__ import annotations

from collections.abc import Callable

import altair as alt
import numpy as np
import pandas as pd
import xarray as xr

from workbench.experiments.overlay import Overlay
from workbench.experiments.stale_gaussian.overlays import stale_gaussian_overlays
from workbench.explore import charts

OVERLAYS: dict[str, Callable[[xr.Dataset], list[Overlay]]] = {
    "stale-gaussian": stale_gaussian_overlays,
}


def overlays_of(experiment: str, dataset: xr.Dataset, bound: str | None = None) -> list[Overlay]:
    """The overlays a stored result offers (for one bound, if named)."""
    make = OVERLAYS.get(experiment)
    found = make(dataset) if make is not None else []
    return [o for o in found if bound is None or o.bound == bound]


def overlay_chart(overlay: Overlay, series_dim: str | None, selection: dict,
                  values: dict) -> alt.LayerChart:
    """The measurements along the overlay's axis (one curve per coordinate of
    ``series_dim``, the other dims at ``selection``) with their 95% intervals, the bound
    with the experiment's fitted constants (solid, where it has them) and with the slider
    constants ``values`` (dotted); log axes (the horizontal one where it is positive)."""
    series = overlay.measured[series_dim].values.tolist() if series_dim else [None]
    frame = []
    for value in series:
        picked = dict(selection, **({series_dim: value} if value is not None else {}))
        line = overlay.along(picked, values)
        label = f"{series_dim} = {value}" if value is not None else "measured"
        fixed = "".join(f", {d} = {v}" for d, v in picked.items())
        points = [f"{overlay.x_dim} = {c}{fixed}" for c in overlay.measured[overlay.x_dim].values]
        error = charts.Z_INTERVAL * line["error"].values
        measured = line["measured"].values
        frame.append(charts.rows(line["x"].values, measured, f"{label} (95% interval)", points,
                                 style="points", lower=measured - error, upper=measured + error))
        if "envelope" in line:
            frame.append(charts.rows(line["x"].values, line["envelope"].values,
                                     f"{label}: fitted constants", points, style="line"))
        frame.append(charts.rows(line["x"].values, line["bound"].values,
                                 f"{label}: slider constants", points, style="dotted"))
    frame = pd.concat(frame, ignore_index=True)
    return charts.line_chart(frame, x_title=overlay.x_symbol, y_title=overlay.title,
                             log_x=bool(np.nanmin(frame["x"]) > 0), log_y=True,
                             legend="bottom")
