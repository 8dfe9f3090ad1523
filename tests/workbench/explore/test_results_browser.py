"""The Experiment browser's interface: stored results, slices, and quick runs."""

import numpy as np
import pytest
import xarray as xr

from workbench import experiments
from workbench.explore import charts, results_browser
from workbench.run.main_job import verdict_counts
from workbench.run.runner import run_experiment
from workbench.store.netcdf import read_netcdf

from .conftest import SEED, SMALL


def test_quick_run_equals_the_runner_and_reports_every_point(small_run):
    quick, calls = small_run
    experiment = experiments.get("stale-gaussian")
    config = experiment.configure(SMALL, quick=True)
    n_points = len(experiment.points(config))
    assert calls == [(i, n_points) for i in range(n_points + 1)]
    expected = run_experiment(experiment, config, SEED)
    stored = read_netcdf(quick.path)
    xr.testing.assert_identical(stored, expected)
    assert [v.check for v in quick.verdicts] == [v.check for v in experiment.checks(expected)]
    assert all(path.exists() for path in quick.figures)


def test_listing_describes_results_and_reports_unreadable_files(small_run, tmp_path):
    quick, _ = small_run
    found = results_browser.list_results(quick.path.parent)
    assert len(found) == 1
    result = found[0]
    assert (result.experiment, result.seed, result.configuration) == ("stale-gaussian", SEED,
                                                                       "custom")
    assert results_browser.figure_files(result) == sorted(quick.figures)
    (tmp_path / "broken.nc").write_bytes(b"not netCDF")
    broken = results_browser.list_results(tmp_path)
    assert len(broken) == 1 and broken[0].problem and "unreadable" in broken[0].label
    assert results_browser.list_results(tmp_path / "missing") == []


def test_configuration_kind_is_read_from_the_stored_configuration(tmp_path, small_run):
    quick, _ = small_run
    dataset = read_netcdf(quick.path)
    experiment = experiments.get("stale-gaussian")
    from workbench.store.netcdf import with_provenance, write_netcdf

    for kind, quick_flag in (("default", False), ("quick", True)):
        relabelled = with_provenance(dataset, "stale-gaussian",
                                     experiment.configure(quick=quick_flag), SEED)
        path = write_netcdf(relabelled, tmp_path / f"{kind}.nc")
        assert results_browser.describe_file(path).configuration == kind


def test_slices_pick_one_coordinate_for_every_other_dim(small_run):
    quick, _ = small_run
    dataset = results_browser.load_result(quick.path)
    assert "mse" in results_browser.plottable(dataset)
    line = charts.along(dataset, "mse", "checkpoint",
                                 {"staleness": 5, "test_function": "theta", "component": 0})
    assert line.dims == ("checkpoint",)
    np.testing.assert_array_equal(line.values, dataset["mse"].sel(
        staleness=5, test_function="theta", component=0).values)
    grid = charts.along(dataset, "mse", "checkpoint",
                                 {"test_function": "theta", "component": 0}, "staleness")
    assert grid.dims == ("checkpoint", "staleness")
    with pytest.raises(KeyError, match="select a value for staleness"):
        charts.along(dataset, "mse", "checkpoint", {"test_function": "theta",
                                                             "component": 0})


def test_verdict_rows_and_counts(small_run):
    quick, _ = small_run
    rows = results_browser.verdict_rows(quick.verdicts)
    assert [r["check"] for r in rows] == [v.check for v in quick.verdicts]
    counts = verdict_counts(quick.verdicts)
    assert sum(counts.values()) == len(quick.verdicts)
