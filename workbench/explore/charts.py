"""Interactive charts of stored results (Vega-Lite, through Altair): a value you can read by
hovering, its Monte Carlo interval, the exact or reference value beside it, curves you toggle
from the legend, log axes where the quantity spans decades.

:func:`slice_frame` turns one slice of a result into a long table (one row per plotted point:
x, value, its interval, the curve it belongs to, the grid point it is, and the reference value
there); :func:`line_chart` draws it. The Experiment browser uses both for its headline view
(:class:`workbench.core.headline.Headline`) and for any variable the user picks; paper-style
PNG figures stay with ``workbench run`` and ``report``.
"""

from __future__ import annotations

import math

import altair as alt
import numpy as np
import pandas as pd
import xarray as xr

from workbench.core.headline import Headline
from workbench.explore.results_browser import along

#: interval half-width in standard errors where a result stores ``<variable>_se`` only
Z_INTERVAL = 1.96


def _interval(dataset: xr.Dataset, variable: str) -> tuple[str, str] | str | None:
    """The result's interval for ``variable``: its ``_lower``/``_upper`` pair, else its
    standard error ``_se``, else none."""
    if {f"{variable}_lower", f"{variable}_upper"} <= set(dataset.data_vars):
        return f"{variable}_lower", f"{variable}_upper"
    if f"{variable}_se" in dataset.data_vars:
        return f"{variable}_se"
    return None


def default_selection(dataset: xr.Dataset, variable: str, keep: set[str],
                      given: dict | None = None) -> dict:
    """A coordinate for every dim of ``variable`` not in ``keep``: the given one, else the
    last (the final checkpoint, the longest run)."""
    given = given or {}
    return {d: given.get(d, dataset[d].values[-1].item())
            for d in dataset[variable].dims if d not in keep}


def slice_frame(dataset: xr.Dataset, variable: str, along_dim: str, selection: dict,
                series_dim: str | None = None, x_variable: str = "",
                reference: str = "") -> pd.DataFrame:
    """One row per plotted point of ``variable`` along ``along_dim`` (one curve per
    coordinate of ``series_dim``), the other dims at ``selection``: columns ``x`` (the dim's
    coordinate, or ``x_variable`` aligned with it), ``value``, ``lower``, ``upper`` (its
    interval where the result has one, else NaN), ``curve``, ``point`` (the grid point, in
    words) and ``reference`` (the ``reference`` variable there, else NaN)."""
    def sliced(name: str) -> xr.DataArray:
        keep = {along_dim} | ({series_dim} if series_dim else set())
        present = {d: v for d, v in selection.items() if d in dataset[name].dims}
        array = dataset[name].sel(present)
        extra = [d for d in array.dims if d not in keep]
        if extra:
            raise KeyError(f"{name}: select a value for {', '.join(extra)}")
        return array.broadcast_like(values).transpose(*values.dims)

    values = along(dataset, variable, along_dim, selection, series_dim)
    columns = {"value": values}
    interval = _interval(dataset, variable)
    if isinstance(interval, tuple):
        columns["lower"], columns["upper"] = sliced(interval[0]), sliced(interval[1])
    elif isinstance(interval, str):
        error = sliced(interval)
        columns["lower"], columns["upper"] = values - Z_INTERVAL * error, \
            values + Z_INTERVAL * error
    if reference:
        columns["reference"] = sliced(reference)
    columns["x"] = sliced(x_variable) if x_variable else values[along_dim].broadcast_like(
        values)
    frame = pd.DataFrame({name: np.asarray(array, dtype=float).ravel()
                          for name, array in columns.items()})
    for name in ("lower", "upper", "reference"):
        if name not in frame:
            frame[name] = math.nan
    if series_dim:
        curves = np.broadcast_to(values[series_dim].values, values.shape)
        frame["curve"] = [f"{series_dim} = {c}" for c in curves.ravel()]
    else:
        frame["curve"] = variable
    coordinates = np.broadcast_to(values[along_dim].values[:, None] if series_dim
                                  else values[along_dim].values, values.shape)
    fixed = ", ".join(f"{d} = {v}" for d, v in selection.items() if d in dataset[variable].dims)
    frame["point"] = [f"{along_dim} = {c}" + (f", {fixed}" if fixed else "")
                      for c in coordinates.ravel()]
    return frame


def headline_frame(dataset: xr.Dataset, headline: Headline) -> pd.DataFrame:
    """:func:`slice_frame` of a result's declared headline view."""
    keep = {headline.along} | ({headline.series} if headline.series else set())
    selection = default_selection(dataset, headline.variable, keep, headline.select)
    return slice_frame(dataset, headline.variable, headline.along, selection,
                       headline.series or None, headline.x, headline.reference)


def line_chart(frame: pd.DataFrame, *, x_title: str, y_title: str, log_x: bool = False,
               log_y: bool = False, reference_title: str = "",
               legend: str = "right") -> alt.Chart:
    """Measured points joined per curve, with their intervals as error bars and tooltips
    (value, interval, grid point), the reference dashed; a click on a legend entry shows
    that curve alone (shift-click adds more). Points without a value (not finite, or not
    positive on a log axis) are left out, so the axes span what is drawn; ``legend``: its
    place, ``"bottom"`` for narrow charts."""
    frame = frame.replace([np.inf, -np.inf], np.nan)
    curves = list(dict.fromkeys(frame["curve"]))  # the legend in the frame's order
    if log_y:  # a log axis cannot show zero or negative values: they are left out
        for name in ("value", "lower", "upper", "reference"):
            frame[name] = frame[name].where(frame[name] > 0)
    if log_x:
        frame = frame[frame["x"] > 0]
    frame = frame[frame["value"].notna() | frame["reference"].notna()]
    x = alt.X("x:Q", title=x_title, scale=alt.Scale(type="log" if log_x else "linear"))
    y_scale = alt.Scale(type="log" if log_y else "linear", zero=False)
    picked = alt.selection_point(fields=["curve"], bind="legend")
    shown = alt.condition(picked, alt.value(1.0), alt.value(0.12))
    colour = alt.Color("curve:N", title=None, sort=curves,
                       legend=alt.Legend(orient=legend, columns=2 if legend == "bottom" else 1))
    tooltip = [alt.Tooltip("curve:N", title="curve"),
               alt.Tooltip("point:N", title="grid point"),
               alt.Tooltip("x:Q", title=x_title, format=".4~g"),
               alt.Tooltip("value:Q", title=y_title, format=".4~g")]
    if frame["lower"].notna().any():
        tooltip += [alt.Tooltip("lower:Q", title="interval from", format=".4~g"),
                    alt.Tooltip("upper:Q", title="interval to", format=".4~g")]
    if frame["reference"].notna().any():
        tooltip.append(alt.Tooltip("reference:Q", title=reference_title or "reference",
                                   format=".4~g"))
    base = alt.Chart(frame).encode(x=x, color=colour, opacity=shown)
    layers = [base.mark_line(point=True).encode(
                  y=alt.Y("value:Q", title=y_title, scale=y_scale), tooltip=tooltip)
              .add_params(picked)]
    if frame["lower"].notna().any():
        layers.append(base.mark_errorbar().encode(
            y=alt.Y("lower:Q", title=y_title, scale=y_scale), y2="upper:Q", tooltip=tooltip))
    if frame["reference"].notna().any():
        layers.append(base.mark_line(strokeDash=[5, 4]).encode(
            y=alt.Y("reference:Q", title=y_title, scale=y_scale),
            tooltip=tooltip))
    return alt.layer(*layers).properties(height=380).interactive()
