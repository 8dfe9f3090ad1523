"""The interactive charts' data (one row per plotted point, with its interval, reference and
grid point) and their Vega-Lite specification (marks per style, tooltips, log axes, legend
toggles; helpers the other pages' chart tests use); the headline record's refusals."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import xarray as xr

from workbench.core.headline import Headline, HeadlineError
from workbench.explore.charts import (
    Z_INTERVAL,
    bar_chart,
    headline_frame,
    line_chart,
    rows,
    slice_frame,
    vega_lite_spec,
)


@pytest.fixture
def result() -> xr.Dataset:
    rng = np.random.default_rng(3)
    shape = (3, 2, 4)  # staleness, test_function, checkpoint
    mse = rng.uniform(0.1, 1.0, shape)
    return xr.Dataset(
        {"mse": (("staleness", "test_function", "checkpoint"), mse),
         "mse_lower": (("staleness", "test_function", "checkpoint"), mse * 0.8),
         "mse_upper": (("staleness", "test_function", "checkpoint"), mse * 1.3),
         "exact_mse": (("staleness", "test_function", "checkpoint"), mse * 1.1),
         "variance": (("staleness", "checkpoint"), mse[:, 0]),
         "variance_se": (("staleness", "checkpoint"), mse[:, 0] / 10),
         "iterations": (("staleness", "checkpoint"), np.outer([1, 2, 5], [10, 20, 40, 80]))},
        coords={"staleness": [1, 2, 5], "test_function": ["theta", "theta_squared"],
                "checkpoint": np.arange(4)})


def test_a_headline_slice_has_its_values_intervals_reference_and_grid_points(result):
    headline = Headline.from_table({"variable": "mse", "along": "checkpoint",
                                    "x": "iterations", "series": "staleness",
                                    "select": {"test_function": "theta_squared"},
                                    "reference": "exact_mse", "log_x": True})
    frame = headline_frame(result, headline)
    assert len(frame) == 12
    at = result.sel(test_function="theta_squared", staleness=5, checkpoint=2)
    [row] = frame[(frame["curve"] == "staleness = 5") &
                  (frame["point"].str.startswith("checkpoint = 2,"))].to_dict("records")
    assert row["value"] == at["mse"] and row["lower"] == at["mse_lower"]
    assert row["upper"] == at["mse_upper"] and row["reference"] == at["exact_mse"]
    assert row["x"] == 5 * 40  # the samples L of that staleness at that checkpoint
    assert row["point"] == "checkpoint = 2, test_function = theta_squared"


def test_unselected_dims_take_their_last_coordinate_and_se_gives_the_interval(result):
    frame = slice_frame(result, "variance", "checkpoint", {"staleness": 5})
    assert frame["value"].tolist() == result["variance"].sel(staleness=5).values.tolist()
    error = result["variance_se"].sel(staleness=5).values
    assert np.allclose(frame["upper"] - frame["value"], Z_INTERVAL * error)
    assert frame["x"].tolist() == [0, 1, 2, 3] and frame["reference"].isna().all()
    headline = Headline("mse", "checkpoint")
    last = headline_frame(result, headline)
    assert last["value"].tolist() == result["mse"].isel(staleness=-1,
                                                        test_function=-1).values.tolist()


def test_named_coordinates_are_drawn_at_their_positions_and_named_in_the_points(result):
    """Along a dim of names (``test_function`` here; ``network = "mlp", "cnn"`` in a result)
    x is the position, and the grid point names the coordinate (was a ValueError: a name is
    not a float)."""
    frame = slice_frame(result, "mse", "test_function", {"checkpoint": 3}, "staleness")
    assert frame["x"].tolist() == [0, 0, 0, 1, 1, 1]
    assert frame["point"].tolist()[::3] == ["test_function = theta, checkpoint = 3",
                                            "test_function = theta_squared, checkpoint = 3"]
    expected = result["mse"].sel(checkpoint=3).transpose("test_function", "staleness")
    assert frame["value"].tolist() == expected.values.ravel().tolist()
    line_chart(frame, x_title="test_function", y_title="mse").to_dict()


def test_the_chart_has_tooltips_log_axes_and_legend_toggles(result):
    headline = Headline("mse", "checkpoint", x="iterations", series="staleness",
                        reference="exact_mse", log_x=True, log_y=True)
    spec = line_chart(headline_frame(result, headline), x_title="samples L", y_title="MSE",
                      log_x=True, log_y=True, reference_title="exact MSE").to_dict()
    measured, bars, reference = spec["layer"]  # the parameters are lifted to the top level
    fields = [t["field"] for t in measured["encoding"]["tooltip"]]
    assert fields == ["curve", "point", "x", "value", "lower", "upper", "reference"]
    assert measured["encoding"]["x"]["scale"]["type"] == "log"
    assert measured["encoding"]["y"]["scale"]["type"] == "log"
    assert bars["mark"]["type"] == "errorbar" and reference["mark"]["strokeDash"] == [5, 4]
    [legend] = [p for p in spec["params"] if p.get("bind") == "legend"]
    assert legend["select"]["fields"] == ["curve"]
    # negative control: without intervals or a reference there is one layer, no error bars
    plain = line_chart(slice_frame(result, "iterations", "checkpoint", {"staleness": 1}),
                       x_title="checkpoint", y_title="iterations").to_dict()
    assert len(plain["layer"]) == 1


def test_the_spec_keeps_each_frame_as_it_is_under_a_name_the_marks_use(result):
    frame = slice_frame(result, "mse", "checkpoint", {"test_function": "theta"}, "staleness")
    chart = line_chart(frame, x_title="checkpoint", y_title="MSE")
    spec = vega_lite_spec(chart)
    [(name, kept)] = spec["datasets"].items()
    assert spec["data"] == {"name": name}
    assert isinstance(kept, pd.DataFrame) and len(kept) == len(frame)
    np.testing.assert_array_equal(kept["value"].to_numpy(), frame["value"].to_numpy())
    assert "config" not in spec  # no theme: Streamlit sizes the chart, not a 300-pixel view
    # the marks, encodings and parameters are the validated conversion's, data aside
    plain = chart.to_dict()
    for key in ("layer", "params", "height"):
        assert spec[key] == plain[key]
    assert plain["config"]["view"]["continuousWidth"] == 300  # negative control: the theme


@pytest.mark.parametrize("table, key", [
    ({"variable": "mse"}, "along"),
    ({"variable": "mse", "along": "checkpoint", "colour": "red"}, "colour"),
    ({"variable": "mse", "along": "checkpoint", "log_x": "yes"}, "log_x"),
    ({"variable": "mse", "along": "checkpoint", "select": {"test_function": True}}, "select"),
    ("mse", "headline"),
])
def test_a_bad_headline_table_is_refused_naming_the_key(table, key):
    with pytest.raises(HeadlineError) as error:
        Headline.from_table(table)
    assert error.value.key == key


# ------------------------------------------------------------ reading a chart's specification
def spec_and_rows(chart) -> tuple[dict, pd.DataFrame]:
    """A chart's Vega-Lite specification and its one table of rows."""
    spec = chart.to_dict()
    [rows] = spec["datasets"].values()
    return spec, pd.DataFrame(rows)


def kept(layer: dict) -> tuple:
    """What a layer draws: the styles (or shape, or curves) its filter keeps."""
    [step] = [t for t in layer.get("transform", []) if "filter" in t]
    found = step["filter"]
    return tuple(found["oneOf"]) if isinstance(found, dict) else (found,)


def layer_of(spec: dict, style: str) -> dict:
    """The layer that draws rows of ``style`` (the first, where error bars share it)."""
    return next(layer for layer in spec["layer"] if style in kept(layer))


def tooltip_fields(layer: dict) -> list[str]:
    return [t["field"] for t in layer["encoding"]["tooltip"]]


def legend_fields(spec: dict) -> list[list[str]]:
    """The fields of every selection bound to the legend."""
    params = spec.get("params", []) + [p for layer in spec.get("layer", [])
                                       for p in layer.get("params", [])]
    return [p["select"]["fields"] for p in params if p.get("bind") == "legend"]


def test_rows_of_every_style_are_drawn_as_their_marks_with_their_tooltips():
    frame = pd.concat([
        rows([1.0, 2.0, 4.0], [3.0, 2.0, 1.0], "measured", ["n = 1", "n = 2", "n = 4"],
             style="points", lower=[2.5, 1.5, 0.5], upper=[3.5, 2.5, 1.5]),
        rows([1.0, 4.0], [3.0, 1.5], "bound", "exact", style="dotted"),
        rows(2.0, None, "h*", "optimum", style="vrule"),
        rows(None, 1.2, "posterior", "exact", style="hrule"),
        rows(None, None, "± 2 s", "exact", style="hband", lower=0.7, upper=1.7)],
        ignore_index=True)
    spec, drawn = spec_and_rows(line_chart(frame, x_title="n", y_title="error", log_x=True,
                                           log_y=True))
    assert len(drawn) == 8  # the rules and the band, without an x, survive the log axis
    points = layer_of(spec, "points")
    assert points["mark"]["type"] == "point"
    assert tooltip_fields(points) == ["curve", "point", "x", "value", "lower", "upper"]
    assert points["encoding"]["x"]["scale"]["type"] == "log"
    bars = next(layer for layer in spec["layer"] if layer["mark"]["type"] == "errorbar")
    assert bars["encoding"]["y2"]["field"] == "upper"
    assert layer_of(spec, "dotted")["mark"]["strokeDash"] == [1, 3]
    vertical = layer_of(spec, "vrule")
    assert vertical["mark"]["type"] == "rule" and "y" not in vertical["encoding"]
    assert tooltip_fields(vertical) == ["curve", "point", "x"]
    horizontal = layer_of(spec, "hrule")
    assert horizontal["encoding"]["y"]["field"] == "value" and "x" not in horizontal["encoding"]
    band = layer_of(spec, "hband")
    assert band["mark"]["type"] == "rect" and band["encoding"]["y2"]["field"] == "upper"
    assert legend_fields(spec) == [["curve"]]
    # negative control: a value that cannot be drawn on the log axis is left out
    frame.loc[0, "value"] = -1.0
    _, drawn = spec_and_rows(line_chart(frame, x_title="n", y_title="error", log_y=True))
    assert len(drawn) == 7


def test_rows_refuse_an_unknown_style():
    with pytest.raises(ValueError, match="style"):
        rows([1.0], [1.0], "c", "p", style="wavy")


def test_a_bar_chart_has_one_bar_per_row_with_its_value_in_the_tooltip():
    frame = pd.DataFrame({"x": [0, 1], "value": [0.5, 0.25], "point": ["w 0", "w 1"]})
    spec = bar_chart(frame, x_title="worker", y_title="fraction", y_domain=(0, 1)).to_dict()
    assert spec["mark"]["type"] == "bar" and spec["encoding"]["x"]["type"] == "ordinal"
    assert spec["encoding"]["y"]["scale"]["domain"] == [0, 1]
    assert [t["field"] for t in spec["encoding"]["tooltip"]] == ["point", "value"]
