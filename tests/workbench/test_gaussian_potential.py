"""GaussianMeanModel.potential: U = -log p(θ) - Σ log p(x_i | θ), and ∇U its gradient."""

import numpy as np
from scipy import stats

from simulators.seeding import generator
from workbench.models.gaussian import GaussianMeanModel


def test_potential_is_the_negative_log_joint_density():
    model = GaussianMeanModel.generate(generator(5, "test-data"), 40, dim=2, true_mean=0.7,
                                       noise_scale=1.3, prior_scale=0.8, prior_mean=-0.2)
    theta = generator(5, "test-theta").standard_normal((3, 4, 2))
    direct = -(stats.norm.logpdf(theta, -0.2, 0.8).sum(-1)
               + stats.norm.logpdf(model.data[:, None, None, :], theta, 1.3).sum(axis=(0, -1)))
    assert model.potential(theta).shape == (3, 4)
    np.testing.assert_allclose(model.potential(theta), direct, rtol=1e-12)


def test_potential_gradient_is_the_gradient_of_the_potential():
    model = GaussianMeanModel.generate(generator(6, "test-data"), 25, dim=3, true_mean=0.3)
    theta = generator(6, "test-theta").standard_normal(3)
    step = 1e-6
    finite_difference = np.array([
        (model.potential(theta + step * e) - model.potential(theta - step * e)) / (2 * step)
        for e in np.eye(3)])
    np.testing.assert_allclose(finite_difference, model.potential_gradient(theta), rtol=1e-6)
