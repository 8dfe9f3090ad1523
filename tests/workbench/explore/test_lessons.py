"""The lessons' curves: staleness shrinks the optimal step like τ^(−2/3); the iteration
speed-up is linear while the time speed-up meets the server's ceiling."""

import numpy as np
import pytest

from bounds import registry
from workbench.explore.lessons import speedup, staleness_step


@pytest.fixture(scope="module")
def lesson_a():
    return staleness_step.lesson()


def test_fitted_constants_reproduce_the_fitted_envelope(lesson_a):
    grid = {"staleness": lesson_a.measurements["staleness"],
            "step_size": lesson_a.measurements["step_size"],
            "n_iterations": staleness_step.N_ITERATIONS}
    bound = registry.get(staleness_step.BOUND).evaluate(**grid, **lesson_a.constants)
    ran = np.isfinite(grid["step_size"].values)
    np.testing.assert_allclose(bound.values[ran] * lesson_a.envelope.scale,
                               lesson_a.envelope(grid).values[ran], rtol=1e-10)
    assert lesson_a.envelope.scale >= 1  # the envelope lies on or above the least squares
    steps = np.geomspace(1e-6, 1e-3, 7)
    curve = lesson_a.curve(4, steps)
    np.testing.assert_allclose(curve["terms"].sum("term").values, curve["bound"].values,
                               rtol=1e-12)


def test_optimal_step_shrinks_like_tau_to_the_minus_two_thirds(lesson_a):
    steps = lesson_a.optimal_step.values
    assert np.all(np.diff(steps) < 0)
    assert lesson_a.constants["D_2"] > 0  # staleness matters in the measurements
    assert -0.75 < lesson_a.slope < -0.55  # −2/3 once D₂τ² dominates D₃
    # the measured best grid step follows the fitted optimum within one grid step
    ratio = staleness_step.RELATIVE_STEPS[1] / staleness_step.RELATIVE_STEPS[0]
    spread = np.abs(np.log(lesson_a.measured_best.values / steps))
    assert np.all(spread <= np.log(ratio) * 1.5)


def test_only_stable_steps_run_and_the_exact_bias_grows_with_staleness(lesson_a):
    measured = lesson_a.measurements
    for tau in staleness_step.STALENESS:
        ran = np.isfinite(measured["mse"].sel(staleness=tau).values)
        allowed = (np.array(staleness_step.RELATIVE_STEPS)
                   <= staleness_step.STABILITY_FRACTION * staleness_step.stability_limit(tau))
        np.testing.assert_array_equal(ran, allowed)
    # from τ = 2 on staleness dominates the discretisation bias, which it partly offsets at τ = 1
    at = measured["exact_bias_squared"].sel(relative_step=staleness_step.RELATIVE_STEPS[3])
    assert np.all(np.diff(at.values[1:]) > 0)


@pytest.mark.parametrize("u", speedup.SERVER_UPDATE_TIMES)
def test_iteration_speedup_is_linear_in_the_workers(u):
    lesson = speedup.lesson(u)
    assert lesson.verdict.verdict == "holds"
    workers = lesson.iteration_speedup["workers"].values
    np.testing.assert_allclose(lesson.iteration_speedup.values, workers, rtol=0.1)


def test_time_speedup_bends_at_the_server_ceiling():
    free, busy = speedup.lesson(0.0), speedup.lesson(0.2)
    np.testing.assert_allclose(free.time_speedup.values, free.iteration_speedup.values,
                               rtol=0.05)
    assert np.all(busy.throughput.values <= 1 / 0.2 + 1e-9)
    ceiling = busy.throughput_ceiling / float(busy.throughput.sel(workers=1))
    assert float(busy.time_speedup.sel(workers=16)) <= ceiling * 1.05
    assert float(busy.time_speedup.sel(workers=16)) < 0.5 * 16  # bent well below linear
    np.testing.assert_allclose(busy.mean_staleness.values, free.mean_staleness.values,
                               atol=1.0)
