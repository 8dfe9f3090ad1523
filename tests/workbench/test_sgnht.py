"""SGNHT (Ding et al. 2014, Algorithm 1): exact one-step updates, stale replay, and the
stationary variance on the Gaussian mean.

SGNHT is not linear (the thermostat multiplies the momentum), so the exact oracle does not
cover it. Its defining property is checked instead: with gradient noise the sampler is not
told about, the thermostat still brings θ's stationary variance to the posterior's. The check
is a long-run Monte Carlo comparison: each replicate's time average of (θ - μ)² over the second
half of the run (averaged over the coordinates, which share one thermostat), the error from
the spread over replicates, against s² with a relative margin of 10 % (the discretisation at
h√k = 0.02 and hξ ≈ 0.02 is worth a few per cent). Negative control: without the thermostat
the chain is SGHMC with friction A, heated by the gradient noise to about 12 s², and that
number is the exact SGHMC oracle's.
"""

import math

import numpy as np
import pytest

from bounds.checks import oracle_check
from bounds.verdict import HOLDS, VIOLATED, z_for_family
from simulators.seeding import generator
from simulators.static import constant_staleness, iid_staleness
from simulators.validation import InvalidParameter
from workbench.engine.replay import replay
from workbench.models.gaussian import GaussianMeanModel
from workbench.oracles.linear_gaussian import (
    dynamics_for,
    sghmc_euler_dynamics,
    stationary_variance,
)
from workbench.samplers import SGHMC, SGNHT, make_sampler

FAMILY_RATE = 1e-3  # per test: probability that a correct sampler fails it

THETA = np.array([[0.3, -1.2], [1.0, 0.5]])
MOMENTUM = np.array([[0.7, 0.1], [-2.0, 1.5]])
XI = np.array([[1.5], [0.25]])
GRADIENT = np.array([[2.0, -0.5], [0.0, 3.0]])
ZERO = np.zeros_like(THETA)


def test_one_step_without_noise_is_ding_algorithm_1():
    h, a = 0.1, 2.0
    sampler = SGNHT(h, a)
    state = sampler.step(sampler.init(THETA, MOMENTUM, XI), GRADIENT, ZERO)
    for chain in range(2):
        xi = XI[chain, 0]
        p = [MOMENTUM[chain, i] - xi * MOMENTUM[chain, i] * h - GRADIENT[chain, i] * h
             for i in range(2)]
        theta = [THETA[chain, i] + p[i] * h for i in range(2)]
        xi = xi + ((p[0] ** 2 + p[1] ** 2) / 2 - 1) * h
        np.testing.assert_allclose(state.momentum[chain], p, rtol=1e-14)
        np.testing.assert_allclose(state.position[chain], theta, rtol=1e-14)
        np.testing.assert_allclose(state.thermostat[chain], [xi], rtol=1e-14)
    np.testing.assert_array_equal(sampler.gradient_point(state), state.position)


def test_noise_enters_the_momentum_with_scale_root_2ah():
    h, a = 0.1, 2.0
    noise = np.array([[1.0, 0.5], [-0.3, 2.0]])
    sampler = SGNHT(h, a)
    start = sampler.init(THETA, MOMENTUM, XI)
    quiet = sampler.step(start, GRADIENT, ZERO)
    noisy = sampler.step(start, GRADIENT, noise)
    kick = math.sqrt(2 * a * h) * noise
    np.testing.assert_allclose(noisy.momentum - quiet.momentum, kick, atol=1e-14)
    np.testing.assert_allclose(noisy.position - quiet.position, h * kick, atol=1e-14)
    p = noisy.momentum
    np.testing.assert_allclose(noisy.thermostat, XI + h * (np.mean(p * p, -1, keepdims=True) - 1))


def test_thermostat_starts_at_the_diffusion_one_per_chain():
    state = SGNHT(0.01, 3.0).init(np.zeros((4, 2, 5)))
    assert state.thermostat.shape == (4, 2, 1)
    assert np.all(state.thermostat == 3.0) and np.all(state.momentum == 0.0)


def test_without_thermostat_it_is_stale_sghmc_euler_bit_for_bit(scalar_model):
    """ξ frozen at A: SGHMC (Euler) with friction A under the same stale schedule and seed."""
    h, a = 0.003, 5.0
    schedule = iid_staleness(300, [0.2, 0.3, 0.5], seed=8, n_servers=2)
    runs = [replay(schedule, sampler, scalar_model.minibatch_gradient(), n_updates=300,
                   n_replicates=7, initial_position=0.8, seed=12, batch_size=10,
                   checkpoints=[50, 300])
            for sampler in (SGNHT(h, a, thermostat=False), SGHMC(h, a, "euler"))]
    np.testing.assert_array_equal(runs[0].final_position, runs[1].final_position)
    for name in ("theta", "theta_squared"):
        np.testing.assert_array_equal(runs[0].averages[name], runs[1].averages[name])


def _isotropic_model():
    """100 points in d = 10, each coordinate centred and scaled to empirical variance 1, so
    the gradient noise V_ζ is the same in every coordinate (one scalar thermostat can only
    correct noise of one size; Ding et al. 2014 assume that)."""
    data = generator(7, "sgnht-data").standard_normal((100, 10))
    data = (data - data.mean(axis=0)) / data.std(axis=0)
    return GaussianMeanModel(data)


def test_thermostat_corrects_unknown_gradient_noise():
    """h = 0.002, A = 1, minibatch 1 (V_ζ ≈ 10⁴, so hV_ζ/2 ≈ 10 ≫ A), 100 replicates started
    at μ, 32,000 updates, the second half averaged. Three comparisons (z for family-wise
    false-failure rate 10⁻³), relative margin 10 %: SGNHT vs s² holds; without the thermostat
    vs s² is violated (the negative control), and it matches the exact SGHMC Euler oracle."""
    model, n_updates, h, a = _isotropic_model(), 32000, 0.002, 1.0
    noise_variance = model.gradient_noise_variance(1)
    np.testing.assert_allclose(noise_variance, noise_variance[0])
    z = z_for_family(FAMILY_RATE, 3)
    estimates = {}
    for thermostat in (True, False):
        run = replay(constant_staleness(n_updates, 0), SGNHT(h, a, thermostat=thermostat),
                     model.minibatch_gradient(), n_updates=n_updates, n_replicates=100,
                     initial_position=model.posterior_mean, seed=5, batch_size=1,
                     checkpoints=[n_updates // 2, n_updates])
        assert np.all(run.diverged_at < 0)
        mean_square = run.averages["theta_squared"][:, :, 0, :]
        late = 2 * mean_square[1] - mean_square[0]  # average over updates L/2+1..L
        values = ((late - model.posterior_mean**2) * model.precision).mean(axis=-1)
        estimates[thermostat] = (values.mean(), values.std(ddof=1) / math.sqrt(values.size))
    sghmc = float(np.mean(stationary_variance(sghmc_euler_dynamics(h, a), model.precision,
                                              noise_variance))) * model.precision

    def check(name, thermostat, expected):
        observed, error = estimates[thermostat]
        return oracle_check(name, observed, error, expected, z, relative=True, margin=0.1,
                            n_replicates=100)

    sgnht = check("SGNHT vs posterior", True, 1.0)
    removed = check("no thermostat vs posterior", False, 1.0)
    oracle = check("no thermostat vs SGHMC oracle", False, sghmc)
    assert sgnht.verdict == HOLDS, sgnht
    assert removed.verdict == VIOLATED, removed
    assert oracle.verdict == HOLDS, oracle


@pytest.mark.parametrize("field, build", [
    ("step_size", lambda: SGNHT(0.0)),
    ("step_size", lambda: SGNHT(float("nan"))),
    ("diffusion", lambda: SGNHT(0.01, 0.0)),
    ("diffusion", lambda: SGNHT(0.01, -1.0)),
    ("diffusion", lambda: SGNHT(0.01, float("inf"))),
    ("thermostat", lambda: SGNHT(0.01, 1.0, thermostat="yes")),
    ("diffusion", lambda: make_sampler("sgnht", 0.01, friction=0.0)),
    ("decay", lambda: make_sampler("sgnht", 0.01, decay=0.5)),
])
def test_bad_parameters_are_refused_by_name(field, build):
    with pytest.raises(InvalidParameter) as error:
        build()
    assert error.value.field == field


def test_describe_has_no_exact_oracle():
    description = SGNHT(0.01, 2.0, thermostat=False).describe()
    assert description == {"sampler": "sgnht", "step_size": 0.01, "diffusion": 2.0,
                           "thermostat": 0}
    with pytest.raises(InvalidParameter, match="has no exact linear-Gaussian oracle"):
        dynamics_for(description)
