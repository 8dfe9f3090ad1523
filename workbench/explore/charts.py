"""Interactive charts of stored results (Vega-Lite, through Altair): a value you can read by
hovering, its Monte Carlo interval, the exact or reference value beside it, curves you toggle
from the legend, log axes where the quantity spans decades.

:func:`slice_frame` turns one slice of a result into a long table (one row per plotted point:
x, value, its interval, the curve it belongs to, the grid point it is, and the reference value
there); :func:`line_chart` draws it. The Experiment browser uses both for its headline view
(:class:`workbench.core.headline.Headline`) and for any variable the user picks. The other
pages build the same table from arrays with :func:`rows`, whose ``style`` also draws exact
curves and bounds as lines beside the measured points, and reference values as rules or
bands; :func:`bar_chart` draws counts and fractions; :func:`legend_toggle` is the legend's
click for charts of their own (timelines, sample clouds). Paper-style PNG figures stay with
``workbench run`` and ``report``.
"""

from __future__ import annotations

import math
import threading

import altair as alt
import numpy as np
import pandas as pd
import xarray as xr

from workbench.core.headline import Headline

#: interval half-width in standard errors where a result stores ``<variable>_se`` only
Z_INTERVAL = 1.96
#: Altair's theme and data transformer are process-wide: one conversion at a time sets them
_CONVERSION = threading.Lock()


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


def along(dataset: xr.Dataset, variable: str, x_dim: str, selection: dict,
          series_dim: str | None = None) -> xr.DataArray:
    """``variable`` along ``x_dim`` (and ``series_dim``), other dims at ``selection``."""
    array = dataset[variable]
    keep = {x_dim} | ({series_dim} if series_dim else set())
    unknown = keep - set(array.dims)
    if unknown:
        raise KeyError(f"{variable} has no dim {', '.join(sorted(unknown))}")
    missing = [d for d in array.dims if d not in keep and d not in selection]
    if missing:
        raise KeyError(f"select a value for {', '.join(missing)}")
    picked = array.sel({d: selection[d] for d in array.dims if d not in keep})
    return picked.transpose(x_dim, *([series_dim] if series_dim else []))


def slice_frame(dataset: xr.Dataset, variable: str, along_dim: str, selection: dict,
                series_dim: str | None = None, x_variable: str = "",
                reference: str = "") -> pd.DataFrame:
    """One row per plotted point of ``variable`` along ``along_dim`` (one curve per
    coordinate of ``series_dim``), the other dims at ``selection``: columns ``x`` (the dim's
    coordinate, its position where the coordinates are names, or ``x_variable`` aligned with
    it), ``value``, ``lower``, ``upper`` (its
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
    if x_variable:
        columns["x"] = sliced(x_variable)
    elif np.issubdtype(values[along_dim].dtype, np.number):
        columns["x"] = values[along_dim].broadcast_like(values)
    else:  # named coordinates (network = "mlp", "cnn"): drawn at their positions
        positions = xr.DataArray(np.arange(values.sizes[along_dim]), dims=along_dim)
        columns["x"] = positions.broadcast_like(values).transpose(*values.dims)
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


def averaged(dataset: xr.Dataset, variable: str, dim: str) -> xr.Dataset:
    """``dataset`` with ``variable`` replaced by its mean over the repeated draws along
    ``dim`` and ``<variable>_se`` by that mean's standard error (sd/√n, the draws
    independent); its other interval variables are dropped."""
    if dim not in dataset[variable].dims:
        raise KeyError(f"{variable} has no dim {dim} to average over")
    draws = dataset[variable]
    count = draws.count(dim)
    out = dataset.drop_vars([f"{variable}_{s}" for s in ("lower", "upper", "se")
                             if f"{variable}_{s}" in dataset.data_vars])
    out[variable] = draws.mean(dim)
    out[f"{variable}_se"] = draws.std(dim, ddof=1) / np.sqrt(count)
    return out


def headline_frame(dataset: xr.Dataset, headline: Headline) -> pd.DataFrame:
    """:func:`slice_frame` of a result's declared headline view (averaged over its
    ``average`` dim first, where it names one)."""
    if headline.average:
        dataset = averaged(dataset, headline.variable, headline.average)
    keep = {headline.along} | ({headline.series} if headline.series else set())
    selection = default_selection(dataset, headline.variable, keep, headline.select)
    return slice_frame(dataset, headline.variable, headline.along, selection,
                       headline.series or None, headline.x, headline.reference)


def rows(x, value, curve: str, point, *, style: str = "measured", lower=None, upper=None,
         reference=None) -> pd.DataFrame:
    """Rows of a chart frame (the columns of :func:`slice_frame`, and ``style``) for one
    curve, from arrays: ``x`` and ``value`` (either may be a scalar, or None for a rule that
    spans the other axis), ``point`` the grid point of each row in words (one string for
    all), ``lower``/``upper`` its interval and ``reference`` the exact value there, where
    there are any; ``style`` one of :data:`STYLES`."""
    if style not in STYLES:
        raise ValueError(f"style {style!r} is not one of {', '.join(STYLES)}")
    columns = {"x": x, "value": value, "lower": lower, "upper": upper, "reference": reference}
    arrays = {k: np.atleast_1d(np.asarray(math.nan if v is None else v, dtype=float))
              for k, v in columns.items()}
    size = max(a.size for a in arrays.values())
    frame = pd.DataFrame({k: np.broadcast_to(a, size) for k, a in arrays.items()})
    frame["curve"] = curve
    frame["point"] = point if isinstance(point, str) else list(point)
    frame["style"] = style
    return frame


#: how a row of a chart frame is drawn (its column ``style``; without one, ``"measured"``):
#: measured points joined by a line; points alone; a solid, dashed or dotted line without
#: markers (an exact curve, a bound); a vertical rule at ``x`` or a horizontal one at
#: ``value``; a horizontal band from ``lower`` to ``upper``
STYLES = ("measured", "points", "line", "dashed", "dotted", "vrule", "hrule", "hband")
DASHES = {"dashed": [5, 4], "dotted": [1, 3]}
FORMAT = ".4~g"
LABEL_LIMIT = 320  # pixels of a legend label before it is cut


def legend_toggle(field: str = "curve") -> tuple[alt.Parameter, dict]:
    """A click on a legend entry of ``field`` shows its marks alone (shift-click adds more):
    the selection parameter, and the opacity to encode with it."""
    picked = alt.selection_point(fields=[field], bind="legend")
    return picked, alt.condition(picked, alt.value(1.0), alt.value(0.12))


def _tip(field: str, title: str) -> alt.Tooltip:
    return alt.Tooltip(f"{field}:Q", title=title, format=FORMAT)


def line_chart(frame: pd.DataFrame, *, x_title: str, y_title: str, log_x: bool = False,
               log_y: bool = False, reference_title: str = "",
               legend: str = "right") -> alt.LayerChart:
    """Measured points joined per curve, with their intervals as error bars and tooltips
    (value, interval, grid point), the reference dashed; rows with another ``style``
    (:data:`STYLES`) drawn as points, lines, rules or bands of their curve. A click on a
    legend entry shows that curve alone (shift-click adds more). Points without a value (not
    finite, or not positive on a log axis) are left out, so the axes span what is drawn;
    ``legend``: its place, ``"bottom"`` for narrow charts."""
    frame = frame.replace([np.inf, -np.inf], np.nan)
    if "style" not in frame:
        frame["style"] = "measured"
    curves = list(dict.fromkeys(frame["curve"]))  # the legend in the frame's order
    if log_y:  # a log axis cannot show zero or negative values: they are left out
        for name in ("value", "lower", "upper", "reference"):
            frame[name] = frame[name].where(frame[name] > 0)
    if log_x:
        frame = frame[(frame["x"] > 0) | frame["style"].isin(["hrule", "hband"])]
    style = frame["style"]
    frame = frame[frame["value"].notna() | frame["reference"].notna()
                  | ((style == "vrule") & frame["x"].notna())
                  | ((style == "hband") & frame["lower"].notna() & frame["upper"].notna())]
    styles = set(frame["style"])
    x = alt.X("x:Q", title=x_title,
              scale=alt.Scale(type="log", nice=False) if log_x else alt.Scale(type="linear"))
    y_scale = alt.Scale(type="log" if log_y else "linear", zero=False)

    def y(field: str) -> alt.Y:
        return alt.Y(f"{field}:Q", title=y_title, scale=y_scale)

    picked, shown = legend_toggle()
    colour = alt.Color("curve:N", title=None, sort=curves,
                       legend=alt.Legend(orient=legend, columns=2 if legend == "bottom" else 1,
                                         labelLimit=LABEL_LIMIT))
    drawn = frame[frame["style"].isin(["measured", "points", "line", "dashed", "dotted"])]
    tooltip = [alt.Tooltip("curve:N", title="curve"),
               alt.Tooltip("point:N", title="grid point"),
               _tip("x", x_title), _tip("value", y_title)]
    if drawn["lower"].notna().any():
        tooltip += [_tip("lower", "interval from"), _tip("upper", "interval to")]
    if drawn["reference"].notna().any():
        tooltip.append(_tip("reference", reference_title or "reference"))

    def base(*kinds: str) -> alt.Chart:
        chart = alt.Chart(frame).encode(color=colour, opacity=shown)
        return chart.transform_filter(alt.FieldOneOfPredicate(field="style", oneOf=kinds))

    layers = []
    if "measured" in styles:
        layers.append(base("measured").mark_line(point=True).encode(
            x=x, y=y("value"), tooltip=tooltip))
    if "points" in styles:
        layers.append(base("points").mark_point(filled=True, size=60).encode(
            x=x, y=y("value"), tooltip=tooltip))
    for kind in ("line", "dashed", "dotted"):
        if kind in styles:
            layers.append(base(kind).mark_line(strokeDash=DASHES.get(kind, alt.Undefined)).encode(
                x=x, y=y("value"), tooltip=tooltip))
    if drawn["lower"].notna().any():
        layers.append(base("measured", "points").mark_errorbar().encode(
            x=x, y=y("lower"), y2="upper:Q", tooltip=tooltip))
    if drawn["reference"].notna().any():
        layers.append(base("measured", "points", "line").mark_line(strokeDash=DASHES["dashed"])
                      .encode(x=x, y=y("reference"), tooltip=tooltip))
    point = alt.Tooltip("point:N", title="where")
    if "vrule" in styles:
        layers.append(base("vrule").mark_rule(strokeDash=DASHES["dashed"], size=1.5).encode(
            x=x, tooltip=[alt.Tooltip("curve:N", title="line"), point, _tip("x", x_title)]))
    if "hrule" in styles:
        layers.append(base("hrule").mark_rule(strokeDash=DASHES["dotted"], size=1.5).encode(
            y=y("value"),
            tooltip=[alt.Tooltip("curve:N", title="line"), point, _tip("value", y_title)]))
    if "hband" in styles:
        layers.append(base("hband").mark_rect().encode(
            y=y("lower"), y2="upper:Q",
            opacity=alt.condition(picked, alt.value(0.15), alt.value(0.03)),
            tooltip=[alt.Tooltip("curve:N", title="band"), point,
                     _tip("lower", "from"), _tip("upper", "to")]))
    layers[0] = layers[0].add_params(picked)
    return alt.layer(*layers).properties(height=380).interactive()


def bar_chart(frame: pd.DataFrame, *, x_title: str, y_title: str,
              y_domain: tuple[float, float] | None = None) -> alt.Chart:
    """One bar per row of ``frame`` (columns ``x``, a category or integer, and ``value``),
    with its value and ``point`` (the row in words) in the tooltip."""
    scale = alt.Scale(domain=list(y_domain)) if y_domain else alt.Undefined
    return alt.Chart(frame).mark_bar().encode(
        x=alt.X("x:O", title=x_title),
        y=alt.Y("value:Q", title=y_title, scale=scale),
        tooltip=[alt.Tooltip("point:N", title="grid point"), _tip("value", y_title)],
    ).properties(height=260)


def vega_lite_spec(chart: alt.TopLevelMixin) -> dict:
    """``chart`` as the Vega-Lite spec that ``st.vega_lite_chart`` draws, its data frames kept
    as they are under ``datasets`` (Streamlit sends them as Arrow) and without Altair's default
    theme (a fixed 300-pixel view, as Streamlit's own conversion leaves out too). Build it
    where the chart is cached: ``st.altair_chart`` converts the chart and validates it against
    the Vega-Lite schema again on every rerun, 0.05–0.35 s a chart here."""
    frames: dict[str, pd.DataFrame] = {}

    def keep(data: pd.DataFrame) -> dict[str, str]:
        name = f"data-{len(frames)}"
        frames[name] = data
        return {"name": name}

    alt.data_transformers.register("workbench-frames", keep)
    with (_CONVERSION, alt.theme.enable("none"),
          alt.data_transformers.enable("workbench-frames")):
        spec = chart.to_dict()
    spec["datasets"] = {**spec.get("datasets", {}), **frames}
    return spec
