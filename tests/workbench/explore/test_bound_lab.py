"""The Bound lab's logic (:mod:`workbench.explore.bound_lab`): a typed bound analysed like a
registered one, fitted to a stored stale-gaussian result exactly as the experiment's own
Theorem 3 envelope check is, refused by name where it cannot be; the chart of the fit."""

import numpy as np
import pytest

from bounds.parse import BoundSyntaxError
from bounds.verdict import one_sided_z_for_family
from simulators.validation import InvalidParameter
from workbench import experiments
from workbench.explore import bound_lab
from workbench.store.netcdf import config_of, read_netcdf

from .test_charts import layer_of, legend_fields, spec_and_rows, tooltip_fields


@pytest.fixture(scope="module")
def stored(small_run):
    quick, _ = small_run
    return read_netcdf(quick.path)


def test_analysis_of_the_example_is_theorem_3s_optimum():
    found = bound_lab.analyse(bound_lab.parse(bound_lab.EXAMPLE))
    assert (found.method, found.rate) == ("exact", "-2/3")
    assert "L**(1/3)" in found.optimal_step
    # a user symbol with its assumption; a bound monotone in h has no optimal step
    own = bound_lab.analyse(bound_lab.parse("C1/(n_chains*L)", "n_chains=positive integer"))
    assert own.optimal_step_latex == "" and own.method == ""


def test_the_typed_theorem_3_form_reproduces_the_experiments_envelope_verdicts(stored):
    """Typed by hand, Theorem 3's K = 1 form gives the verdicts of the registered bound's
    envelope check on the same result (same fit, same held-out points). The lab judges one
    test function, so its Bonferroni family is the held-out points of that one; the
    experiment's spans both test functions."""
    verdicts = {v.check: v for v in experiments.get("stale-gaussian").checks(stored)}
    config = config_of(stored)
    for function in stored["test_function"].values.tolist():
        fit = bound_lab.fit(bound_lab.parse(bound_lab.EXAMPLE), stored, function,
                            config["envelope_split"])
        registered = verdicts[f"envelope/theorem-3/{function}"]
        assert fit.verdict.verdict == registered.verdict
        assert fit.verdict.observed == pytest.approx(registered.observed, rel=1e-9)
        n_held_out = int((~fit.calibration).sum())
        assert fit.verdict.z_threshold == pytest.approx(
            one_sided_z_for_family(config["false_failure_rate"], n_held_out))
        assert registered.z_threshold == pytest.approx(one_sided_z_for_family(
            config["false_failure_rate"], n_held_out * stored.sizes["test_function"]))
        assert fit.fitted.dims == fit.measured.dims
        assert bool(fit.calibration.any()) and not bool(fit.calibration.all())


def test_a_too_fast_rate_is_violated_on_the_longer_runs(stored):
    """Negative control: L^(-2) extrapolated from the shorter runs to the longer ones."""
    fit = bound_lab.fit(bound_lab.parse("C1/(L**2*h)"), stored, "theta_squared", "extrapolate")
    assert fit.verdict.verdict == "violated"
    held_out = ~fit.calibration
    assert float((fit.measured / fit.fitted).where(held_out).max()) > 1


@pytest.mark.parametrize("text, assumptions, field", [
    ("C1/(n_chains*h)", "n_chains=positive integer", "bound"),
    ("C1/(L*h)", "", "test_function"),
    ("C1/(L*h)", "", "split"),
])
def test_refusals_name_the_field(stored, text, assumptions, field):
    function = "nope" if field == "test_function" else "theta"
    split = "nope" if field == "split" else "checkerboard"
    with pytest.raises(InvalidParameter, match=field):
        bound_lab.fit(bound_lab.parse(text, assumptions), stored, function, split)


def test_results_without_an_envelope_grid_and_bad_strings_are_refused(stored):
    without = stored.drop_vars([n for n in stored.data_vars if n.startswith("envelope_")])
    assert not bound_lab.fittable(without)
    with pytest.raises(InvalidParameter, match="result"):
        bound_lab.fit(bound_lab.parse("C1/(L*h)"), without, "theta", "checkerboard")
    with pytest.raises(BoundSyntaxError, match="NAME=ASSUMPTION"):
        bound_lab.parse("C1/(L*h)", "n_chains positive")
    assert np.isfinite(bound_lab.fit(bound_lab.parse("C1/(L*h)"), stored, "theta",
                                     "checkerboard").envelope.coefficients).all()


def test_the_fit_chart_sets_measured_against_fitted_with_intervals_and_the_diagonal(stored):
    fit = bound_lab.fit(bound_lab.parse(bound_lab.EXAMPLE), stored, "theta", "checkerboard")
    spec, drawn = spec_and_rows(bound_lab.fit_chart(fit, "theta"))
    points = layer_of(spec, "points")
    assert points["encoding"]["x"]["scale"]["type"] == "log"
    assert points["encoding"]["y"]["scale"]["type"] == "log"
    assert tooltip_fields(points) == ["curve", "point", "x", "value", "lower", "upper"]
    assert layer_of(spec, "dashed")["mark"]["strokeDash"] == [5, 4]
    assert legend_fields(spec) == [["curve"]]
    held_out = drawn[drawn["curve"] == "held out"]
    assert len(held_out) == int((~fit.calibration).sum())
    at = dict(envelope_staleness=4, envelope_relative_step=0.1, envelope_iterations=1000)
    [row] = drawn[drawn["point"] == ", ".join(f"{k} = {v:g}" for k, v in at.items())
                  ].to_dict("records")
    assert row["value"] == pytest.approx(float(fit.measured.sel(at)))
    assert row["x"] == pytest.approx(float(fit.fitted.sel(at)))
    assert row["upper"] - row["value"] == pytest.approx(1.96 * float(fit.error.sel(at)))
    diagonal = drawn[drawn["style"] == "dashed"]
    assert diagonal["x"].tolist() == diagonal["value"].tolist()
