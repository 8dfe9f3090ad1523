"""Every built-in experiment's declared headline view draws from its own quick result: the
names it gives exist in what ``workbench check --all --quick`` writes, the chart has points, its
axes are the declared ones (log where declared) and its dashed reference is there where one is
declared. Negative controls: a headline naming a variable, a dim or a reference the result
lacks is refused by the function the Experiment browser draws it with."""

from __future__ import annotations

import time

import numpy as np
import pandas as pd
import pytest
import xarray as xr

from workbench.cli.main import EXIT_VIOLATED, main
from workbench.core.headline import Headline
from workbench.explore.charts import (
    DASHES,
    averaged,
    default_selection,
    headline_frame,
    line_chart,
)
from workbench.studies.library import ORDER, header

DECLARED = [name for name in ORDER if header(name).headline is not None]


@pytest.fixture(scope="session")
def quick_results(tmp_path_factory):
    """The main job's quick results, once per session: ``workbench check --all --quick``, in
    one process (the numbers are the same in any number; the test suite already runs a test
    process per core, and from a fresh checkout every pool process would compile numba's
    kernels again: the file took 368 s in a clean-clone run with the default two, 182 s with
    numba's cache warm)."""
    directory = tmp_path_factory.mktemp("quick-results")
    started = time.perf_counter()
    status = main(["check", "--all", "--quick", "--processes", "1", "--out", str(directory),
                   "--quiet"])
    seconds = time.perf_counter() - started
    # violated claims are findings (exit status 1), not failures of the runs
    assert status in (0, EXIT_VIOLATED), f"check --all --quick: exit status {status}"
    print(f"\nworkbench check --all --quick: {seconds:.0f} s")
    return directory


def dataset_of(directory, name: str) -> xr.Dataset:
    path = directory / f"{name}.nc"
    assert path.is_file(), f"check --all --quick wrote no {path.name}"
    return xr.load_dataset(path)


def drawn(headline: Headline, dataset: xr.Dataset):
    """The chart as the Experiment browser draws it (app/views/experiments.py), its frame,
    its Vega-Lite specification and the rows it holds."""
    frame = headline_frame(dataset, headline)
    chart = line_chart(frame, x_title=headline.x or headline.along, y_title=headline.variable,
                       log_x=headline.log_x, log_y=headline.log_y,
                       reference_title=headline.reference)
    spec = chart.to_dict()
    [rows] = spec["datasets"].values()
    return frame, spec, pd.DataFrame(rows)


def test_the_headline_list_is_not_empty():
    assert DECLARED, "no built-in experiment declares a headline"


@pytest.mark.parametrize("name", DECLARED)
def test_the_headline_draws_from_the_quick_result(name, quick_results):
    headline = header(name).headline
    dataset = dataset_of(quick_results, name)
    frame, spec, rows = drawn(headline, dataset)

    # data points: what the chart keeps (finite, positive on a log axis) is not empty
    shown = rows[np.isfinite(rows["value"].astype(float))]
    assert len(shown) > 0, f"{name}: the headline chart has no point to draw"
    if headline.log_y:
        assert (shown["value"] > 0).all()

    # the declared y: the values are the variable's at the selection (its mean over the
    # declared draws, where the headline averages them)
    source = averaged(dataset, headline.variable, headline.average) if headline.average \
        else dataset
    keep = {headline.along} | ({headline.series} if headline.series else set())
    selection = default_selection(source, headline.variable, keep, headline.select)
    expected = source[headline.variable].sel(selection)
    assert np.allclose(np.sort(frame["value"].to_numpy(dtype=float)),
                       np.sort(expected.values.astype(float).ravel()), equal_nan=True)
    # the declared x: the along dim's coordinate, or the variable aligned with it
    x_source = dataset[headline.x or headline.along]
    assert set(frame["x"].dropna()) <= set(np.asarray(x_source.values, dtype=float).ravel())
    if headline.series:
        assert frame["curve"].nunique() == dataset.sizes[headline.series]

    measured = spec["layer"][0]
    assert measured["encoding"]["x"]["field"] == "x"
    assert measured["encoding"]["y"]["field"] == "value"
    assert measured["encoding"]["x"]["title"] == (headline.x or headline.along)
    assert measured["encoding"]["y"]["title"] == headline.variable
    assert measured["encoding"]["x"]["scale"]["type"] == ("log" if headline.log_x else "linear")
    assert measured["encoding"]["y"]["scale"]["type"] == ("log" if headline.log_y else "linear")

    # the reference dashed beside it where declared, and only there
    dashed = [layer for layer in spec["layer"]
              if layer.get("encoding", {}).get("y", {}).get("field") == "reference"]
    if headline.reference:
        assert len(dashed) == 1 and dashed[0]["mark"]["strokeDash"] == DASHES["dashed"]
        assert np.isfinite(shown["reference"].astype(float)).any()
    else:
        assert not dashed
    assert headline.caption, f"{name}: the headline says nothing of what it draws"


def test_an_averaged_headline_draws_the_mean_of_the_draws_with_its_standard_error():
    draws = np.array([[1.0, 3.0, 5.0], [2.0, 2.0, 2.0]])  # (group_size, gradient_draw)
    dataset = xr.Dataset({"error": (("group_size", "gradient_draw"), draws),
                          "error_lower": (("group_size", "gradient_draw"), draws - 1)},
                         coords={"group_size": [1, 2], "gradient_draw": [0, 1, 2]})
    headline = Headline.from_table({"variable": "error", "along": "group_size",
                                    "average": "gradient_draw"})
    frame = headline_frame(dataset, headline)
    assert frame["value"].tolist() == [3.0, 2.0]
    half = 1.96 * 2.0 / np.sqrt(3)  # sd 2 over three draws; none for equal draws
    np.testing.assert_allclose(frame["upper"] - frame["value"], [half, 0.0])
    with pytest.raises(KeyError, match="no dim replicate"):
        headline_frame(dataset, Headline.from_table({"variable": "error",
                                                     "along": "group_size",
                                                     "average": "replicate"}))


@pytest.mark.parametrize("change, missing", [
    ({"variable": "no_such_variable"}, "no_such_variable"),
    ({"series": "no_such_dim"}, "no_such_dim"),
    ({"reference": "no_such_reference"}, "no_such_reference"),
])
def test_a_headline_naming_what_the_result_lacks_is_refused(change, missing, quick_results):
    name = DECLARED[0]
    dataset = dataset_of(quick_results, name)
    declared = header(name).headline
    table = {key: getattr(declared, key) for key in
             ("variable", "along", "x", "series", "select", "reference")}
    headline = Headline.from_table({**table, **change})
    with pytest.raises(KeyError, match=missing):
        headline_frame(dataset, headline)
