"""MALA's one step against a hand computation with fixed random numbers, and divergences."""

import numpy as np
import pytest
from scipy import stats

from workbench.models.gaussian import GaussianMeanModel
from workbench.reference.mala import evaluate, mala_step


@pytest.mark.parametrize(("dim", "inverse_metric"), [(1, [1.0]), (2, [0.5, 2.0])])
def test_one_step_matches_a_hand_computation(dim, inverse_metric):
    """Proposal θ' = θ - hM∇U(θ) + √(2h)M^{1/2}ξ and α = π(θ')q(θ|θ') / (π(θ)q(θ'|θ)),
    written with scipy's normal densities of the exact posterior N(μ, s²I) (U differs from
    -log π by a constant) and of the proposal, coordinate by coordinate N(θ_j - h m_j k (θ_j -
    μ_j), 2h m_j); accept iff log u < log α."""
    data = np.array([[0.4, -0.2], [1.1, 0.3], [-0.3, 0.0], [0.8, 0.9], [0.5, -0.6]])[:, :dim]
    model = GaussianMeanModel(data, noise_scale=0.9, prior_scale=2.0, prior_mean=0.1)
    mu, sd, k = model.posterior_mean, np.sqrt(model.posterior_variance), model.precision
    metric = np.array(inverse_metric)
    h = 0.08
    theta = np.array([[0.2, -0.4], [0.9, 0.1]])[:, :dim]
    noise = np.array([[-1.3, 1.1], [0.6, -0.8]])[:, :dim]
    proposal = theta - h * metric * k * (theta - mu) + np.sqrt(2 * h * metric) * noise

    def log_q(to, start):
        return stats.norm.logpdf(to, start - h * metric * k * (start - mu),
                                 np.sqrt(2 * h * metric)).sum(-1)

    def log_pi(at):
        return stats.norm.logpdf(at, mu, sd).sum(-1)

    log_alpha = log_pi(proposal) + log_q(theta, proposal) - log_pi(theta) - log_q(proposal, theta)
    assert np.all(log_alpha < 0), "the fixed numbers must give α < 1 for the test to bite"
    log_uniform = log_alpha + np.array([-1e-6, 1e-6])  # chain 0 just accepts, chain 1 not

    step = mala_step(model, evaluate(model, theta), h, metric, noise, log_uniform)

    np.testing.assert_allclose(step.acceptance_probability, np.exp(log_alpha), rtol=1e-9)
    np.testing.assert_array_equal(step.accepted, [True, False])
    np.testing.assert_allclose(step.state.position, [proposal[0], theta[1]], rtol=1e-14)
    expected = evaluate(model, step.state.position)
    np.testing.assert_allclose(step.state.potential, expected.potential, rtol=1e-14)
    np.testing.assert_allclose(step.state.gradient, expected.gradient, rtol=1e-14)


class _CliffModel:
    """U = θ²/2 for θ < 1 and +∞ (or NaN) beyond: proposals past the cliff must be rejected."""

    dim = 1

    def __init__(self, beyond: float):
        self.beyond = beyond

    def potential(self, theta):
        return np.where(theta[..., 0] < 1.0, 0.5 * theta[..., 0] ** 2, self.beyond)

    def potential_gradient(self, theta):
        return np.where(theta < 1.0, theta, self.beyond)


@pytest.mark.parametrize("beyond", [np.inf, np.nan])
def test_a_non_finite_proposal_is_rejected(beyond):
    model = _CliffModel(beyond)
    state = evaluate(model, np.array([[0.5], [0.5]]))
    step = mala_step(model, state, 0.5, np.ones(1), np.array([[3.0], [-0.1]]),
                     np.log([1e-300, 1e-300]))
    assert step.accepted.tolist() == [False, True]
    assert step.divergent.tolist() == [True, False]
    assert step.acceptance_probability[0] == 0.0
    assert step.state.position[0, 0] == 0.5 and np.isfinite(step.state.potential).all()
