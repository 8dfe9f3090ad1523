"""The exact variance of φ̂_L(θ²): fourth moments of the stacked state and the noise cumulants.

Three layers: the recursions against a brute-force unrolling (exact to rounding); the
minibatch-sum cumulants against enumeration of every minibatch; and the oracle against 20,000
replicates of the engine. The Monte Carlo comparisons are two-sided z-tests on the sample
variance of φ̂_L(θ²) (its standard error from the fourth central moment), at a Bonferroni z
for a family-wise false-failure rate of 1e-3 per test over the comparisons it makes.
"""

import itertools
import math

import numpy as np
import pytest

from bounds.verdict import z_for_family
from simulators.async_server import AsyncServerSystem
from simulators.latency import LatencyModel, WorkerTiming
from simulators.seeding import generator
from simulators.static import constant_staleness, iid_staleness
from workbench.engine.replay import replay
from workbench.gradients.minibatch_moments import sum_cumulants
from workbench.models.gaussian import GaussianMeanModel
from workbench.oracles.linear_gaussian import (
    StackedSystem,
    dynamics_for,
    estimator_moments,
    finite_moments,
    sghmc_euler_dynamics,
    sghmc_splitting_dynamics,
    sgld_dynamics,
)
from workbench.samplers import SGHMC, SGLD

FAMILY_RATE = 1e-3
REPLICATES = 20_000


def _unrolled_variance(dynamics, precision, staleness, length, mu, e0, vz, third, fourth):
    """Var φ̂_L(θ²) from the explicit L×2L noise-coefficient matrix (no recursion)."""
    system = StackedSystem(dynamics, precision, int(staleness.max()))
    coefficients = np.zeros((system.size, 2 * length))
    mean = system.initial_mean() * e0
    rows, means = np.zeros((length, 2 * length)), np.zeros(length)
    for update in range(length):
        a = system.transition(int(staleness[update]))
        mean, coefficients = a @ mean, a @ coefficients
        coefficients[:, 2 * update] += system.gradient_vector * math.sqrt(vz)
        coefficients[:, 2 * update + 1] += system.thermal_vector
        rows[update], means[update] = coefficients[0], mu + mean[0]
    covariance = rows @ rows.T
    gram, linear = rows.T @ rows, rows.T @ means
    skewness, kurtosis = np.zeros(2 * length), np.zeros(2 * length)
    skewness[0::2], kurtosis[0::2] = third / vz**1.5, fourth / vz**2
    variance = (2 * np.trace(covariance @ covariance) + 4 * means @ covariance @ means
                + np.sum(kurtosis * np.diag(gram) ** 2)
                + 4 * np.sum(skewness * np.diag(gram) * linear))
    return variance / length**2


@pytest.mark.parametrize("dynamics", [sgld_dynamics(0.08), sghmc_euler_dynamics(0.1, 1.5),
                                      sghmc_splitting_dynamics(0.1, 1.5)],
                         ids=["sgld", "sghmc-euler", "sghmc-splitting"])
@pytest.mark.parametrize("schedule", [constant_staleness(60, 3),
                                      iid_staleness(60, [0.2, 0.3, 0.5], seed=1)],
                         ids=["constant", "iid"])
def test_recursion_equals_the_unrolled_quadratic_form(dynamics, schedule):
    staleness = schedule.update_staleness(60)[:, 0]
    lengths = [1, 7, 33, 60]
    mu, e0, vz, third, fourth = 0.3, 1.2, 0.7, -0.4, 0.9
    exact = estimator_moments(finite_moments(dynamics, 2.0, staleness, lengths), mu, e0, vz,
                              (third, fourth))["theta_squared"]["variance"][:, 0]
    unrolled = [_unrolled_variance(dynamics, 2.0, staleness, n, mu, e0, vz, third, fourth)
                for n in lengths]
    np.testing.assert_allclose(exact, unrolled, rtol=1e-11)


@pytest.mark.parametrize("replacement", [True, False])
@pytest.mark.parametrize("batch_size", [1, 2, 3, 6])
def test_minibatch_sum_cumulants_match_enumeration(batch_size, replacement):
    data = generator(3, "cumulants").exponential(size=(6, 2))
    draw = itertools.product if replacement else itertools.combinations
    kwargs = {"repeat": batch_size} if replacement else {"r": batch_size}
    sums = np.array([data[list(members)].sum(axis=0) - batch_size * data.mean(axis=0)
                     for members in draw(range(6), **kwargs)])
    second, third, fourth = (np.mean(sums**r, axis=0) for r in (2, 3, 4))
    expected = (second, third, fourth - 3 * second**2)
    for got, want in zip(sum_cumulants(data, batch_size, replacement), expected, strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("replacement", [True, False])
def test_the_models_noise_cumulants_extend_its_noise_variance(gaussian_model, replacement):
    second, _, _ = sum_cumulants(gaussian_model.data, 10, replacement)
    scale = gaussian_model.n_data / (10 * gaussian_model.noise_scale**2)
    np.testing.assert_allclose(scale**2 * second,
                               gaussian_model.gradient_noise_variance(10, replacement),
                               rtol=1e-12)


def _sample_variance_z(model, schedule, sampler, n_updates, checkpoints, batch_size,
                       replacement=True, cumulants=True):
    """z-scores (sample - exact)/SE of Var φ̂_L(θ²) at each checkpoint and coordinate."""
    mu = model.posterior_mean
    theta0 = mu + 3 * math.sqrt(model.posterior_variance)
    run = replay(schedule, sampler, model.minibatch_gradient(), n_updates=n_updates,
                 n_replicates=REPLICATES, initial_position=theta0, seed=5,
                 batch_size=batch_size, replacement=replacement, checkpoints=checkpoints,
                 replicate_block=500)
    assert np.all(run.diverged_at < 0)
    estimates = run.averages["theta_squared"][:, :, 0, :]  # (checkpoint, replicate, d)
    sample = estimates.var(axis=1, ddof=1)
    centred = estimates - estimates.mean(axis=1, keepdims=True)
    error = np.sqrt((np.mean(centred**4, axis=1)
                     - sample**2 * (REPLICATES - 3) / (REPLICATES - 1)) / REPLICATES)
    moments = finite_moments(dynamics_for(sampler.describe()), model.precision,
                             schedule.update_staleness(n_updates)[:, 0], np.array(checkpoints))
    noise = model.gradient_noise_cumulants(batch_size, replacement) if cumulants else None
    exact = estimator_moments(moments, mu, theta0 - mu,
                              model.gradient_noise_variance(batch_size, replacement),
                              noise)["theta_squared"]["variance"]
    return (sample - exact) / error


def _assert_agrees(z_scores):
    z = z_for_family(FAMILY_RATE, z_scores.size)
    assert np.all(np.abs(z_scores) < z), (z_scores, z)


def test_constant_staleness_in_two_dimensions(gaussian_model):
    n_updates = 400
    h = 0.1 / gaussian_model.precision
    _assert_agrees(_sample_variance_z(gaussian_model, constant_staleness(n_updates, 3), SGLD(h),
                                      n_updates, [5, 60, n_updates], batch_size=10))


def test_iid_staleness_without_replacement():
    """A small data set (20 points, minibatches of 5), so that sampling without replacement
    changes every cumulant of the noise (the finite-population factor is 15/19)."""
    model = GaussianMeanModel.generate(generator(8, "small-data"), 20, 1, 0.5)
    n_updates = 400
    schedule = iid_staleness(n_updates, [0.1, 0.2, 0.3, 0.4], seed=4)
    h = 0.15 / model.precision
    _assert_agrees(_sample_variance_z(model, schedule, SGLD(h), n_updates, [5, 60, n_updates],
                                      batch_size=5, replacement=False))


def test_simulated_asynchronous_schedule(scalar_model):
    n_updates = 400
    system = AsyncServerSystem(6, WorkerTiming(LatencyModel("exponential", 1.0),
                                               straggler_probability=0.1,
                                               straggler_slowdown=4.0))
    schedule = system.simulate(n_updates, seed=21)
    assert schedule.update_staleness(n_updates).max() > 6
    h = 0.05 / scalar_model.precision
    _assert_agrees(_sample_variance_z(scalar_model, schedule, SGLD(h), n_updates,
                                      [5, 60, n_updates], batch_size=10))


@pytest.mark.parametrize("integrator", ["euler", "splitting"])
def test_stale_sghmc(scalar_model, integrator):
    n_updates = 600
    sampler = SGHMC(0.1 / math.sqrt(scalar_model.precision), 2.0 * math.sqrt(
        scalar_model.precision), integrator)
    _assert_agrees(_sample_variance_z(scalar_model, constant_staleness(n_updates, 2), sampler,
                                      n_updates, [5, 60, n_updates], batch_size=10))


def test_heavy_tailed_data_need_the_noise_cumulants():
    """Negative control: on data with heavy tails and minibatches of one, the Gaussian
    fourth-moment formula misses the gradient noise's kurtosis (about a factor 3 here) and
    is rejected, while the formula with the cumulants agrees."""
    data = generator(1, "heavy-tailed").exponential(size=(50, 1)) ** 3
    model = GaussianMeanModel(data)
    n_updates = 300
    args = (model, constant_staleness(n_updates, 2), SGLD(0.3 / model.precision), n_updates,
            [10, 100, n_updates])
    _assert_agrees(_sample_variance_z(*args, batch_size=1))
    gaussian_only = _sample_variance_z(*args, batch_size=1, cumulants=False)
    assert np.all(gaussian_only > z_for_family(FAMILY_RATE, gaussian_only.size)), gaussian_only


def test_skipping_the_fourth_moments_keeps_every_other_moment_bit_identical():
    staleness = iid_staleness(300, [0.3, 0.3, 0.4], seed=2).update_staleness(300)[:, 0]
    full = finite_moments(sgld_dynamics(0.05), 2.0, staleness, [10, 300])
    lean = finite_moments(sgld_dynamics(0.05), 2.0, staleness, [10, 300], fourth_moments=False)
    for name in ("sum_mean", "sum_variance_gradient", "sum_variance_thermal", "e_mean",
                 "e_mean_sq", "e_variance_gradient", "e_variance_thermal"):
        np.testing.assert_array_equal(getattr(full, name), getattr(lean, name))
    moments = estimator_moments(lean, 0.1, 1.0, 3.0)
    assert np.all(np.isnan(moments["theta_squared"]["variance"]))
    assert np.all(np.isfinite(moments["theta_squared"]["mean"]))
