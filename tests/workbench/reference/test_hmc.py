"""HMC: one leapfrog step is MALA, long trajectories conserve energy, and the reference built
with it reproduces the Gaussian mean's exact posterior."""

import numpy as np
import pytest

from bounds.checks import oracle_check
from bounds.verdict import VIOLATED
from simulators.seeding import generator
from workbench.core.phi import THETA
from workbench.models.gaussian import GaussianMeanModel
from workbench.reference import ReferenceSettings
from workbench.reference.hmc import hmc_step
from workbench.reference.mala import evaluate, mala_step
from workbench.reference.stored import compute_reference


def model():
    return GaussianMeanModel.generate(generator(61, "test-data"), 40, dim=3, true_mean=0.4)


def test_one_leapfrog_step_is_mala_with_h_equal_half_epsilon_squared():
    gaussian = model()
    rng = generator(61, "test-numbers")
    state = evaluate(gaussian, rng.standard_normal((5, 3)))
    metric = np.array([0.5, 1.0, 2.0]) / gaussian.precision
    noise, log_uniform = rng.standard_normal((5, 3)), np.log(rng.random(5))
    epsilon = 0.9
    hmc = hmc_step(gaussian, state, epsilon, metric, noise, log_uniform, leapfrog_steps=1)
    mala = mala_step(gaussian, state, epsilon**2 / 2, metric, noise, log_uniform)
    np.testing.assert_allclose(hmc.acceptance_probability, mala.acceptance_probability,
                               rtol=1e-9)
    np.testing.assert_array_equal(hmc.accepted, mala.accepted)
    np.testing.assert_allclose(hmc.state.position, mala.state.position, rtol=1e-12)


def test_a_step_size_per_chain_is_each_chains_own_step():
    """The chain jitters HMC's ε per chain: an array of steps acts chain by chain."""
    gaussian = model()
    rng = generator(64, "test-numbers")
    state = evaluate(gaussian, gaussian.posterior_mean + 0.1 * rng.standard_normal((3, 3)))
    noise, log_uniform, metric = rng.standard_normal((3, 3)), np.log(rng.random(3)), np.ones(3)
    steps = np.array([0.05, 0.1, 0.15])
    together = hmc_step(gaussian, state, steps, metric, noise, log_uniform, leapfrog_steps=3)
    for chain, step_size in enumerate(steps):
        alone = hmc_step(gaussian, state, step_size, metric, noise, log_uniform,
                         leapfrog_steps=3)
        np.testing.assert_allclose(together.state.position[chain], alone.state.position[chain],
                                   rtol=1e-14)
        assert together.acceptance_probability[chain] == pytest.approx(
            alone.acceptance_probability[chain], rel=1e-12)


def test_a_fine_trajectory_conserves_energy():
    """Leapfrog's energy error is O(ε²): with ε = 0.01/√k over 50 steps α stays near 1."""
    gaussian = model()
    rng = generator(62, "test-numbers")
    state = evaluate(gaussian, gaussian.posterior_mean + rng.standard_normal((4, 3)) * 0.1)
    step = hmc_step(gaussian, state, 0.01 / np.sqrt(gaussian.precision), np.ones(3),
                    rng.standard_normal((4, 3)), np.zeros(4), leapfrog_steps=50)
    assert np.all(step.acceptance_probability > 0.999)
    assert not np.allclose(step.state.position, state.position)


def test_hmc_reference_reproduces_the_exact_posterior():
    """z = 4 per comparison, six comparisons: false-failure rate below 4e-4."""
    gaussian = model()
    settings = ReferenceSettings(method="hmc", leapfrog_steps=5, chains=8, draws=2_000,
                                 warmup=500)
    reference = compute_reference(gaussian, [THETA], settings, seed=63)
    assert reference.attrs["method"].startswith("HMC")
    for statistic, exact in (("mean", gaussian.posterior_mean),
                             ("variance", np.full(3, gaussian.posterior_variance))):
        values = reference[statistic].sel(test_function="theta").values
        errors = reference[f"{statistic}_mc_error"].sel(test_function="theta").values
        for value, error, target in zip(values, errors, exact, strict=True):
            assert oracle_check(statistic, value, error, target, 4.0,
                                margin=0.0).verdict != VIOLATED, (statistic, value, target)
    assert float(reference["rhat"].max()) < 1.01
