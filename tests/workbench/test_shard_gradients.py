"""D-SGLD scaling, conducive gradients, surrogates and coupled chains: exact one-step values,
unbiasedness, the noise correction, and refusal of non-positive-definite surrogates."""

import math

import numpy as np
import pytest

from simulators.seeding import generator
from simulators.static import constant_staleness
from simulators.validation import InvalidParameter
from workbench.data.sharding import gaussian_blobs
from workbench.engine.local_samples import local_sgld_samples
from workbench.engine.replay import replay
from workbench.gradients import surrogates
from workbench.gradients.sharded import Conducive, ShardBatch, ShardScaled
from workbench.models.gaussian import GaussianMeanModel
from workbench.models.sharded_gaussian import ShardedGaussianMean
from workbench.samplers import SGLD
from workbench.samplers.coupled import CoupledSGLD

SIZES = [30, 50, 120]


@pytest.fixture(scope="module")
def sharded():
    data, sharding = gaussian_blobs(generator(5, "blobs"), [[-2.0, 1.0], [0.5, 0.0], [3.0, -1.0]],
                                    SIZES, 1.5)
    return ShardedGaussianMean(GaussianMeanModel(data, noise_scale=1.5, prior_scale=2.0,
                                                 prior_mean=0.3), tuple(sharding.sizes))


def _batch(shard, frequency, batch_mean):
    return ShardBatch(np.array([[shard]]), np.array([[frequency]]), np.array([[batch_mean]]))


def test_dsgld_is_prior_plus_shard_likelihood_scaled_by_ns_over_q(sharded):
    model = sharded.model
    theta = np.array([[[0.7, -0.4]]])
    batch_mean = np.array([0.2, 0.9])
    estimator = ShardScaled(sharded.shard_gradient())
    value = estimator(theta, _batch(1, 0.25, batch_mean))
    # -∇log p(θ) + (N_s/(N q)) N (θ - x̄_B)/σ_x²  with N_s = 50, q = 1/4
    expected = ((theta - 0.3) / 4.0 + (50 / 0.25) * (theta - batch_mean) / 2.25)
    np.testing.assert_allclose(value, expected, rtol=1e-14)
    uncorrected = sharded.shard_gradient()(theta, _batch(1, 0.25, batch_mean))
    np.testing.assert_allclose(uncorrected, (theta - 0.3) / 4.0
                               + model.n_data * (theta - batch_mean) / 2.25, rtol=1e-14)


@pytest.mark.parametrize("frequencies", [[0.2, 0.3, 0.5], [1 / 3] * 3])
def test_dsgld_averaged_over_the_scheduler_is_the_full_gradient(sharded, frequencies):
    """Seed 004 Proposition 3.1: Σ_s q_s E[ĝ_s] = ∇U, with full-shard batches."""
    theta = np.array([[[1.1, -0.6]]])
    estimator = ShardScaled(sharded.shard_gradient())
    average = sum(q * estimator(theta, _batch(s, q, sharded.shard_means[s]))
                  for s, q in enumerate(frequencies))
    np.testing.assert_allclose(average, sharded.model.potential_gradient(theta), rtol=1e-12)


def test_fsgld_with_exact_surrogates_leaves_only_minibatch_noise(sharded):
    """With q_s the exact shard likelihoods, v_s + g_s = ∇log p(θ|X) + (N_s/f_s)(x̄_B - x̄_s)/σ²."""
    theta = np.array([[[-0.8, 2.0]]])
    estimator = Conducive(ShardScaled(sharded.shard_gradient()), surrogates.analytic(sharded))
    for s, f in enumerate([0.2, 0.3, 0.5]):
        exact = estimator(theta, _batch(s, f, sharded.shard_means[s]))
        np.testing.assert_allclose(exact, sharded.model.potential_gradient(theta), rtol=1e-10)
        shifted = sharded.shard_means[s] + np.array([0.1, -0.2])
        noisy = estimator(theta, _batch(s, f, shifted))
        np.testing.assert_allclose(noisy[0, 0] - exact[0, 0],
                                   -(SIZES[s] / f) * np.array([0.1, -0.2]) / 2.25, rtol=1e-9)


def test_the_conducive_gradient_averages_to_zero_and_scales_with_alpha(sharded):
    theta = np.array([[[0.4, 0.1]]])
    fitted = surrogates.GaussianSurrogates(
        sharded.shard_means + 0.3,
        np.array([[[0.05, 0.01], [0.01, 0.04]]] * 3))
    inner = ShardScaled(sharded.shard_gradient())
    half = Conducive(inner, fitted, alpha=0.5)
    f = [0.2, 0.3, 0.5]
    batches = [_batch(s, f[s], sharded.shard_means[s]) for s in range(3)]
    total = sum(f[s] * half.conducive_gradient(theta, batches[s]) for s in range(3))
    np.testing.assert_allclose(total, 0.0, atol=1e-9)
    for s in range(3):
        np.testing.assert_allclose(inner(theta, batches[s]) - half(theta, batches[s]),
                                   0.5 * half.conducive_gradient(theta, batches[s]), rtol=1e-12)


def test_laplace_and_analytic_surrogates_agree_on_the_gaussian_mean(sharded):
    analytic = surrogates.analytic(sharded)
    for s in range(sharded.n_shards):
        value, gradient, hessian = sharded.shard_negative_log_likelihood(s)
        for mode, covariance in (surrogates.laplace(value, gradient, np.zeros(2), hessian),
                                 surrogates.laplace(value, gradient, np.zeros(2))):
            np.testing.assert_allclose(mode, analytic.means[s], rtol=1e-6, atol=1e-8)
            np.testing.assert_allclose(covariance, analytic.covariances[s], rtol=1e-5,
                                       atol=1e-12)
    assert analytic.diagonal


@pytest.mark.parametrize("kind", ["full", "diagonal"])
def test_surrogates_fitted_to_local_sgld_samples_find_the_shard_likelihood(sharded, kind):
    """Local SGLD on p_s ∝ p(X_s|θ) (flat prior), every shard's chain in one replay at one step
    h: each fitted mean is within z = 4.4 (Bonferroni over 3 shards × 2 coordinates, family rate
    1e-4) of x̄_s, using the draws' spread and an effective sample size from the exact AR(1)
    autocorrelation of SGLD at this step."""
    precisions = np.array([sharded.likelihood_precision(s) for s in range(sharded.n_shards)])
    h = 0.1 / precisions.max()
    draws = local_sgld_samples(sharded.shard_gradient(), 0.0, h, n_samples=2000, burn_in=400,
                               thin=10, batch_size=10, seed=6)
    assert draws.shape == (sharded.n_shards, 2000, 2)
    fitted = []
    for s, samples in enumerate(draws):
        fitted.append(surrogates.fit_to_samples(samples, kind))
        rho = (1 - h * precisions[s]) ** 10
        effective = 2000 * (1 - rho) / (1 + rho)
        error = samples.std(axis=0, ddof=1) / math.sqrt(effective)
        assert np.all(np.abs(fitted[-1][0] - sharded.shard_means[s]) <= 4.4 * error)
    family = surrogates.stack(fitted)
    assert family.diagonal == (kind == "diagonal")


@pytest.mark.parametrize("covariance, field", [
    ([[1.0, 0.0], [0.0, -0.1]], "surrogate_covariance[1]"),
    ([[1.0, 2.0], [2.0, 1.0]], "surrogate_covariance[1]"),
    ([[1.0, 0.1], [0.0, 1.0]], "surrogate_covariance[1]"),
    ([[0.0, 0.0], [0.0, 0.0]], "surrogate_covariance[1]"),
])
def test_a_surrogate_without_positive_definite_covariance_is_refused(covariance, field):
    with pytest.raises(InvalidParameter) as error:
        surrogates.GaussianSurrogates(np.zeros((2, 2)), np.array([np.eye(2), covariance]))
    assert error.value.field == field


def test_groups_of_one_are_plain_sgld_bit_for_bit(sharded):
    schedule = constant_staleness(300, 0, n_servers=3)
    model = GaussianMeanModel.generate(generator(7), 500, 2)
    options = dict(n_updates=300, n_replicates=6, initial_position=0.5, seed=3, batch_size=10,
                   thin=1)
    plain = replay(schedule, SGLD(1e-3), model.minibatch_gradient(), **options)
    coupled = replay(schedule, CoupledSGLD(1e-3, (1, 1, 1)), model.minibatch_gradient(),
                     **options)
    np.testing.assert_array_equal(coupled.draws, plain.draws)


def test_a_coupled_step_averages_the_members_and_restores_the_noise():
    h, groups = 0.01, (3, 1, 2)
    sampler = CoupledSGLD(h, groups)
    rng = generator(8)
    start = sampler.init(rng.standard_normal((4, 6, 2)))
    for a, b in ((0, 3), (4, 6)):  # members start at their average
        np.testing.assert_allclose(start.position[:, a:b], start.position[:, a:a + 1]
                                   .repeat(b - a, axis=1), rtol=1e-15)
    gradient = rng.standard_normal((4, 6, 2))
    noise = rng.standard_normal((4, 6, 2))
    after = sampler.step(start, gradient, noise).position
    # θ - h·(mean gradient) + √(2h)·(first member's noise): seed 004 Eq. 6 plus the correction
    for a, b in ((0, 3), (3, 4), (4, 6)):
        expected = (start.position[:, a] - h * gradient[:, a:b].mean(axis=1)
                    + math.sqrt(2 * h) * noise[:, a])
        for c in range(a, b):
            np.testing.assert_allclose(after[:, c], expected, rtol=1e-12, atol=1e-15)


def test_the_corrected_noise_of_a_group_has_the_variance_of_one_chain():
    """Injected noise of a group of R = 4 with zero gradient: variance 2h per coordinate and
    uncorrelated with the averaged noise; z = 4.9 (Bonferroni over 2, family rate 1e-6)."""
    h = 0.5
    sampler = CoupledSGLD(h, (4,))
    noise = generator(9).standard_normal((200_000, 4, 1))
    moved = sampler.step(sampler.init(np.zeros((200_000, 4, 1))), np.zeros_like(noise),
                         noise).position[:, 0, 0]
    n = moved.size
    variance_error = 2 * h * math.sqrt(2 / n)
    assert abs(moved.var() - 2 * h) <= 4.9 * variance_error
    averaged = noise[:, :, 0].mean(axis=1)
    correction = moved / math.sqrt(2 * h) - averaged
    correlation = np.corrcoef(correction, averaged)[0, 1]
    assert abs(correlation) <= 4.9 / math.sqrt(n)
    assert abs(correction.var() - 0.75) <= 4.9 * 0.75 * math.sqrt(2 / n)


def test_a_diagonal_fit_needs_two_draws_and_a_full_one_more_draws_than_coordinates():
    draws = np.random.default_rng(1).normal(size=(3, 5))
    mean, covariance = surrogates.fit_to_samples(draws, "diagonal")
    np.testing.assert_array_equal(mean, draws.mean(axis=0))
    np.testing.assert_array_equal(covariance, np.diag(draws.var(axis=0, ddof=1)))
    with pytest.raises(InvalidParameter, match="n > d"):
        surrogates.fit_to_samples(draws, "full")
    with pytest.raises(InvalidParameter, match="n >= 2"):
        surrogates.fit_to_samples(draws[:1], "diagonal")


def test_diagonal_surrogates_take_no_dense_algebra_and_give_the_same_bits():
    """Diagonal covariances skip the Cholesky inverse and ∇log q skips the d × d product; both
    give exactly the numbers of the dense route (variances over ten decades)."""
    rng = np.random.default_rng(3)
    variances = rng.random((5, 40)) * 10.0 ** rng.uniform(-5, 5, (5, 40))
    means = rng.normal(size=(5, 40))
    fitted = surrogates.GaussianSurrogates(means, variances[:, :, None] * np.eye(40))
    assert fitted.diagonal
    dense = np.stack([surrogates._precision("c", np.diag(v)) for v in variances])
    assert np.array_equal(fitted.precisions, dense)
    theta = 10 * rng.normal(size=(3, 4, 40))
    assert np.array_equal(fitted.total_score(theta),
                          fitted.total_natural - theta @ fitted.total_precision.T)
    # control: one off-diagonal term makes the family dense, scored by the product
    covariances = variances[:, :, None] * np.eye(40)
    covariances[2, 0, 1] = covariances[2, 1, 0] = 1e-3 * np.sqrt(variances[2, 0] * variances[2, 1])
    assert not surrogates.GaussianSurrogates(means, covariances).diagonal
