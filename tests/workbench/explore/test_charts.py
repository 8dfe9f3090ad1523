"""The interactive charts' data (one row per plotted point, with its interval, reference and
grid point) and their Vega-Lite specification; the headline record's refusals."""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr

from workbench.core.headline import Headline, HeadlineError
from workbench.explore.charts import Z_INTERVAL, headline_frame, line_chart, slice_frame


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
