"""Exact one-step updates with the noise switched off, the noise scale with it on, and the
registry: every sampler selectable by name and driven by the engine with stale gradients."""

import math

import numpy as np
import pytest

from simulators.static import iid_staleness
from simulators.validation import InvalidParameter
from workbench.engine.replay import replay
from workbench.oracles.linear_gaussian import dynamics_for
from workbench.samplers import (
    LINEAR_SAMPLER_NAMES,
    PSGLD,
    SAMPLER_NAMES,
    SGHMC,
    SGLD,
    SGNHT,
    make_sampler,
)

THETA = np.array([[0.3, -1.2]])
MOMENTUM = np.array([[0.7, 0.1]])
GRADIENT = np.array([[2.0, -0.5]])
ZERO = np.zeros_like(THETA)


def test_sgld_one_step_without_noise():
    h = 0.01
    state = SGLD(h).step(SGLD(h).init(THETA), GRADIENT, ZERO)
    np.testing.assert_array_equal(state.position, THETA - h * GRADIENT)


def test_sgld_noise_is_scaled_by_root_two_h():
    h = 0.01
    noise = np.array([[1.0, -2.0]])
    sampler = SGLD(h)
    state = sampler.step(sampler.init(THETA), ZERO, noise)
    np.testing.assert_allclose(state.position, THETA + math.sqrt(2 * h) * noise, rtol=1e-15)


def test_sghmc_euler_one_step_is_seed_001_algorithm_1():
    h, d = 0.1, 2.0
    sampler = SGHMC(h, d, "euler")
    state = sampler.step(sampler.init(THETA, MOMENTUM), GRADIENT, ZERO)
    momentum = (1 - d * h) * MOMENTUM - h * GRADIENT
    np.testing.assert_allclose(state.momentum, momentum, rtol=1e-15)
    np.testing.assert_allclose(state.position, THETA + h * momentum, rtol=1e-15)
    np.testing.assert_array_equal(sampler.gradient_point(sampler.init(THETA, MOMENTUM)), THETA)


def test_sghmc_euler_noise_enters_the_momentum_with_scale_root_2dh():
    h, d = 0.1, 2.0
    noise = np.array([[1.0, 0.5]])
    sampler = SGHMC(h, d, "euler")
    quiet = sampler.step(sampler.init(THETA, MOMENTUM), GRADIENT, ZERO)
    noisy = sampler.step(sampler.init(THETA, MOMENTUM), GRADIENT, noise)
    np.testing.assert_allclose(noisy.momentum - quiet.momentum, math.sqrt(2 * d * h) * noise)


def test_sghmc_splitting_one_step_is_a_b_o_b_a():
    h, d = 0.1, 2.0
    sampler = SGHMC(h, d, "splitting")
    start = sampler.init(THETA, MOMENTUM)
    # the gradient is evaluated at the half step θ + p h/2
    np.testing.assert_allclose(sampler.gradient_point(start), THETA + 0.5 * h * MOMENTUM)
    state = sampler.step(start, GRADIENT, ZERO)
    half = THETA + 0.5 * h * MOMENTUM
    p = math.exp(-d * h / 2) * MOMENTUM
    p = p - h * GRADIENT
    p = math.exp(-d * h / 2) * p
    np.testing.assert_allclose(state.momentum, p, rtol=1e-14)
    np.testing.assert_allclose(state.position, half + 0.5 * h * p, rtol=1e-14)
    assert sampler.order == 2 and SGHMC(h, d, "euler").order == 1


@pytest.mark.parametrize("bad", [0.0, -1e-3, float("nan"), float("inf")])
def test_step_size_must_be_positive_and_finite(bad):
    for build in (lambda: SGLD(bad), lambda: SGHMC(bad, 1.0), lambda: make_sampler("sgld", bad)):
        with pytest.raises(InvalidParameter) as error:
            build()
        assert error.value.field == "step_size"


def test_unknown_sampler_and_integrator_are_refused():
    with pytest.raises(InvalidParameter, match="sampler"):
        make_sampler("langevin", 0.1)
    with pytest.raises(InvalidParameter, match="integrator"):
        SGHMC(0.1, 1.0, "leapfrog")
    with pytest.raises(InvalidParameter, match="friction"):
        SGHMC(0.1, 0.0)


def test_sgld_advance_is_bit_identical_to_repeated_steps():
    rng = np.random.default_rng(3)
    sampler = SGLD(0.0137)
    gradients = rng.standard_normal((9, 5, 2, 3)) * 40
    noise = rng.standard_normal((9, 5, 2, 3))
    start = sampler.init(rng.standard_normal((5, 2, 3)))
    state, positions, points = sampler.advance(start, gradients, noise)
    stepped = start
    for j in range(9):
        stepped = sampler.step(stepped, gradients[j], noise[j])
        np.testing.assert_array_equal(positions[j], stepped.position)
    np.testing.assert_array_equal(state.position, stepped.position)
    np.testing.assert_array_equal(points, positions)


@pytest.mark.parametrize("name", SAMPLER_NAMES)
def test_every_registered_sampler_replays_stale_gradients(name, gaussian_model):
    """Selectable by name, driven by the engine on a three-server stale schedule: shapes,
    the same seed gives the same run, another seed or fresh gradients another."""
    sampler = make_sampler(name, 0.002, friction=2.0)
    assert sampler.describe()["sampler"] == name
    schedule = iid_staleness(200, [0.25, 0.25, 0.5], seed=2, n_servers=3)

    def run(seed, schedule=schedule):
        return replay(schedule, sampler, gaussian_model.minibatch_gradient(), n_updates=200,
                      n_replicates=6, initial_position=0.5, seed=seed, batch_size=10,
                      checkpoints=[20, 200], replicate_block=4)

    first, again, other = run(1), run(1), run(2)
    assert first.final_position.shape == (6, 3, 2)
    assert first.averages["theta_squared"].shape == (2, 6, 3, 2)
    assert np.all(np.isfinite(first.final_position)) and np.all(first.diverged_at < 0)
    np.testing.assert_array_equal(first.final_position, again.final_position)
    assert not np.array_equal(first.final_position, other.final_position)
    fresh = run(1, schedule.without_staleness())
    assert not np.array_equal(first.final_position, fresh.final_position)


def test_registry_names_and_which_have_an_exact_oracle():
    assert isinstance(make_sampler("psgld", 0.01), PSGLD)
    assert isinstance(make_sampler("sgnht", 0.01, friction=3.0), SGNHT)
    assert make_sampler("sgnht", 0.01, friction=3.0).diffusion == 3.0
    for name in SAMPLER_NAMES:
        description = make_sampler(name, 0.01).describe()
        if name in LINEAR_SAMPLER_NAMES:
            dynamics_for(description)
        else:
            with pytest.raises(InvalidParameter, match="no exact linear-Gaussian oracle"):
                dynamics_for(description)
    with pytest.raises(InvalidParameter) as error:
        make_sampler("sgld", 0.01, decay=0.9)
    assert error.value.field == "decay"
