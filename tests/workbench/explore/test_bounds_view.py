"""The Bounds explorer's numbers: controls, values and optima from the registered records, and
the chart of a bound along one symbol."""

import math

import numpy as np
import pytest

from bounds import registry
from workbench.explore import bounds_view

from .test_charts import layer_of, legend_fields, spec_and_rows, tooltip_fields

# The exact-Gaussian finite-L records compile long sums (seconds each); the rest cover every
# kind of control and form.
QUICK = [n for n in registry.names() if not n.startswith(("exact-sgld-finite",
                                                          "exact-dsgld"))]


@pytest.mark.parametrize("name", QUICK)
def test_every_bound_has_controls_a_finite_value_and_a_curve(name):
    controls = bounds_view.controls(name)
    values = {c.name: c.default for c in controls}
    assert all(c.default in c.options for c in controls)
    assert sorted(values) == sorted(s.name for s in bounds_view.form(name).expression
                                    .free_symbols)
    assert np.isfinite(float(bounds_view.evaluate(name, values)))
    axis = bounds_view.default_axis(name)
    control = next(c for c in controls if c.name == axis)
    curve = bounds_view.curve(name, axis, values, min(control.options), max(control.options))
    assert curve.x.size > 1 and np.isfinite(curve.y).any()


def test_section_4_optimum_is_the_closed_form_and_the_curve_minimum():
    """h* = (D₁/(2(D₂τ² + D₃)L))^(1/3) for D₁/(Lh) + (D₂τ² + D₃)h² (seed 001 §4)."""
    name = "seed001-section-4-mse"
    values = {"D_1": 2.0, "D_2": 0.5, "D_3": 1.5, "staleness": 4, "n_iterations": 1000,
              "step_size": 0.01}
    optimum = bounds_view.optimum(name, values)
    expected = (2.0 / (2 * (0.5 * 16 + 1.5) * 1000)) ** (1 / 3)
    assert optimum.method == "exact"
    assert optimum.step_size == pytest.approx(expected, rel=1e-12)
    assert optimum.value == pytest.approx(2.0 / (1000 * expected) + 9.5 * expected**2)
    curve = bounds_view.curve(name, "step_size", values, 1e-3, 1.0)
    ratio = curve.x[1] / curve.x[0]
    assert abs(math.log(curve.grid_minimum / expected)) <= math.log(ratio)
    # a wrong exponent would put the minimum elsewhere
    assert abs(math.log(curve.grid_minimum / expected ** 0.5)) > math.log(ratio)


def test_integrator_order_enters_the_optimum():
    name = "seed001-theorem-4-variance"  # C₁/(Lh) + C₂h^(2K): h* ∝ L^(−1/(2K+1))
    base = {"C_1": 1.0, "C_2": 1.0, "n_iterations": 1000, "step_size": 0.1}
    for order in (1, 2):
        optimum = bounds_view.optimum(name, {**base, "integrator_order": order})
        expected = (1 / (2 * order * 1000)) ** (1 / (2 * order + 1))
        assert optimum.step_size == pytest.approx(expected, rel=1e-12)
    assert bounds_view.rate(name) == "-2*K/(2*K + 1)"


def test_records_without_a_step_have_no_optimum_and_a_sensible_axis():
    assert bounds_view.optimum("seed001-corollary-5-variance", {}) is None
    assert bounds_view.default_axis("seed001-corollary-5-variance") == "n_iterations"
    assert bounds_view.default_axis("exact-sgld-stationary-variance") == "step_size"
    assert bounds_view.default_axis("seed002-theorem-2-fsgld") == "step_size_wt"


def test_a_monotone_bound_reports_no_interior_optimum():
    optimum = bounds_view.optimum("seed002-theorem-1-dsgld",
                                  {c.name: c.default
                                   for c in bounds_view.controls("seed002-theorem-1-dsgld")})
    assert optimum.method == "boundary" and math.isnan(optimum.step_size)


def test_sequence_forms_are_shown_with_a_fixed_step():
    form = bounds_view.form("chen2015-mse-decreasing-k1")
    assert {s.name for s in form.expression.free_symbols} >= {"step_size", "n_iterations"}
    assert bounds_view.form("seed001-theorem-3-mse") is registry.get("seed001-theorem-3-mse")


def test_the_curve_chart_draws_the_bound_the_slider_and_the_optimal_step():
    name = "seed001-section-4-mse"
    values = {c.name: c.default for c in bounds_view.controls(name)}
    spec, drawn = spec_and_rows(bounds_view.curve_chart(name, "step_size", values))
    line = layer_of(spec, "line")
    assert line["encoding"]["x"]["scale"]["type"] == "log"
    assert line["encoding"]["y"]["scale"]["type"] == "log"  # a positive bound
    assert tooltip_fields(line) == ["curve", "point", "x", "value"]
    control = next(c for c in bounds_view.controls(name) if c.name == "step_size")
    expected = bounds_view.curve(name, "step_size", values, min(control.options),
                                 max(control.options))
    assert drawn[drawn["style"] == "line"]["value"].tolist() == pytest.approx(
        expected.y.tolist())
    rules = drawn[drawn["style"] == "vrule"]
    optimum = bounds_view.optimum(name, values)
    assert rules["curve"].tolist() == ["slider value", f"h* ({optimum.method})"]
    assert rules["x"].tolist() == pytest.approx([values["step_size"], optimum.step_size])
    assert legend_fields(spec) == [["curve"]]
    # along another symbol there is no h* to mark
    _, drawn = spec_and_rows(bounds_view.curve_chart(name, "staleness", values))
    assert drawn[drawn["style"] == "vrule"]["curve"].tolist() == ["slider value"]
