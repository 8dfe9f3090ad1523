"""Bounds over stored measurements: the same numbers the experiment's checks judge, drawn with
their intervals beside the bound."""

import numpy as np
import pytest

from bounds import registry
from workbench import experiments
from workbench.explore.charts import Z_INTERVAL
from workbench.explore.overlays import overlay_chart, overlays_of
from workbench.store.netcdf import read_netcdf
from workbench.studies.design_judgements import envelope_data, envelope_fit, view

from .test_charts import layer_of, legend_fields, spec_and_rows, tooltip_fields


@pytest.fixture(scope="module")
def stored(small_run):
    quick, _ = small_run
    return read_netcdf(quick.path), quick.verdicts


def test_theorem_3_envelope_overlay_is_what_the_check_judges(stored):
    dataset, verdicts = stored
    overlay = next(o for o in overlays_of("stale-gaussian", dataset, "seed001-theorem-3-mse")
                   if "envelope grid" in o.title and "(θ)" in o.title)
    experiment = experiments.get("stale-gaussian")
    [envelope] = [d for d in experiment.study.designs if d.name == "envelope"]
    ctx = experiment.context(dataset)
    data = view(dataset, envelope)
    measured, error = envelope_data(data, "theta")
    np.testing.assert_array_equal(overlay.measured.values, measured.values)
    np.testing.assert_array_equal(overlay.error.values, error.values)
    fitted = envelope_fit(data, envelope, ctx, envelope.checks[0], "theta",
                          ctx.config["envelope_split"])
    np.testing.assert_array_equal(overlay.envelope.coefficients, fitted.coefficients)
    judged = overlay.judged_by(verdicts)
    assert [v.check for v in judged] == ["envelope/theorem-3/theta"]  # not theta_squared


def test_along_evaluates_the_bound_at_the_grid_points(stored):
    dataset, _ = stored
    overlay = next(o for o in overlays_of("stale-gaussian", dataset, "seed001-theorem-3-mse")
                   if "envelope grid" in o.title and "(θ)" in o.title)
    constants = {"C_1": 2.0, "C_2": 0.5, "C_3": 3.0, "M": 1.5}
    line = overlay.along({"envelope_staleness": 4, "envelope_relative_step": 0.1}, constants)
    step = float(dataset["envelope_step_size"].sel(envelope_staleness=4,
                                                   envelope_relative_step=0.1))
    lengths = dataset["envelope_iterations"].values
    expected = registry.get("seed001-theorem-3-mse").evaluate(
        staleness=4, step_size=step, n_iterations=lengths, integrator_order=1, **constants)
    np.testing.assert_allclose(line["bound"].values, expected, rtol=1e-12)
    np.testing.assert_array_equal(line["x"].values, lengths)
    assert np.all(line["envelope"].values > 0)
    with pytest.raises(KeyError, match="select a value"):
        overlay.along({"envelope_staleness": 4}, constants)


def test_every_overlay_names_a_registered_bound_and_lines_up(stored):
    dataset, verdicts = stored
    overlays = overlays_of("stale-gaussian", dataset)
    assert {o.bound for o in overlays} == {"seed001-theorem-3-mse", "seed001-theorem-4-variance",
                                           "seed001-section-4-mse"}
    for overlay in overlays:
        registry.get(overlay.bound)
        assert overlay.x_dim in overlay.measured.dims
        selection = {d: overlay.measured[d].values[0] for d in overlay.other_dims}
        line = overlay.along(selection, {"C_1": 1, "C_2": 1, "C_3": 1, "M": 1, "D_1": 1,
                                         "D_2": 1, "D_3": 1})
        assert line["measured"].dims == (overlay.x_dim,)
        assert np.isfinite(line["bound"].values).all()
    judged = {v.check for o in overlays for v in o.judged_by(verdicts)}
    assert {v.check for v in verdicts} - judged == {
        v.check for v in verdicts if v.check.startswith("oracle/")}
    assert overlays_of("no-such-experiment", dataset) == []


def test_the_overlay_chart_draws_measurements_with_intervals_and_both_bounds(stored):
    dataset, _ = stored
    overlay = next(o for o in overlays_of("stale-gaussian", dataset, "seed001-theorem-3-mse")
                   if "envelope grid" in o.title and "(θ)" in o.title)
    constants = {"C_1": 2.0, "C_2": 0.5, "C_3": 3.0, "M": 1.5}
    spec, drawn = spec_and_rows(overlay_chart(overlay, "envelope_staleness",
                                              {"envelope_relative_step": 0.1}, constants))
    points = layer_of(spec, "points")
    assert points["encoding"]["y"]["scale"]["type"] == "log"
    assert points["encoding"]["x"]["scale"]["type"] == "log"  # L > 0
    assert tooltip_fields(points) == ["curve", "point", "x", "value", "lower", "upper"]
    assert layer_of(spec, "line")["mark"]["type"] == "line"  # the fitted constants
    assert layer_of(spec, "dotted")["mark"]["strokeDash"] == [1, 3]  # the slider constants
    assert legend_fields(spec) == [["curve"]]
    line = overlay.along({"envelope_staleness": 4, "envelope_relative_step": 0.1}, constants)
    measured = drawn[drawn["curve"] == "envelope_staleness = 4 (95% interval)"]
    assert measured["value"].tolist() == pytest.approx(line["measured"].values.tolist())
    assert (measured["upper"] - measured["value"]).tolist() == pytest.approx(
        (Z_INTERVAL * line["error"]).values.tolist())
    assert measured["point"].iloc[0] == (f"envelope_iterations = "
                                         f"{dataset['envelope_iterations'].values[0]}, "
                                         "envelope_relative_step = 0.1, envelope_staleness = 4")
    bound = drawn[drawn["curve"] == "envelope_staleness = 4: slider constants"]
    assert bound["value"].tolist() == pytest.approx(line["bound"].values.tolist())
    envelope = drawn[drawn["curve"] == "envelope_staleness = 4: fitted constants"]
    assert envelope["value"].tolist() == pytest.approx(line["envelope"].values.tolist())
