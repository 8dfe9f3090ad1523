"""The user-side example model ``examples/my-model`` (Bayesian probit regression).

The package is imported from its folder (``examples/my-model`` put on ``sys.path``), not
installed, as the workbench imports the module beside a study file. Checked: the gradient
against finite differences of the potential, Chen's estimator (all indices = the full gradient;
the mean over a partition into disjoint minibatches = the full gradient), the deliberate
``drop_prior`` bug (the estimator loses exactly the prior term, the potential keeps it), the
held-out test functions, determinism of the generated data, and a MAP that classifies.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import numpy as np
import pytest
import scipy.special
from scipy.optimize import minimize

from workbench.models.protocol import GradientEstimator, HeldOutModel

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "my-model"
if str(EXAMPLE) not in sys.path:
    sys.path.insert(0, str(EXAMPLE))
probit = importlib.import_module("my_model.probit")
ProbitRegression = probit.ProbitRegression

N_DATA = 300


def make(seed: int = 7, **arguments) -> ProbitRegression:
    arguments = {"n_data": N_DATA, "n_test": 400, **arguments}
    return ProbitRegression(np.random.default_rng(seed), **arguments)


@pytest.fixture(scope="module")
def model():
    return make(prior_scale=2.0, prior_mean=0.3)


def positions(model, seed: int = 1, shape=(2, 3)) -> np.ndarray:
    return np.random.default_rng(seed).normal(0.0, 1.5, shape + (model.dim,))


def test_the_package_imports_from_its_folder_and_meets_the_protocols(model):
    assert Path(probit.__file__).resolve().parent == EXAMPLE / "my_model"
    assert importlib.import_module("my_model").ProbitRegression is ProbitRegression
    assert isinstance(model, HeldOutModel)
    assert isinstance(model.minibatch_gradient(), GradientEstimator)
    assert (model.n_data, model.dim) == (N_DATA, 4)


def test_defaults_and_toml_style_arguments():
    default = ProbitRegression(np.random.default_rng(0))
    assert (default.n_data, default.n_test, default.dim) == (2000, 1000, 4)
    assert (default.prior_scale, default.prior_mean, default.true_scale) == (1.0, 0.0, 1.0)
    assert default.drop_prior is False
    # a TOML table gives integers where floats are meant
    model = ProbitRegression(np.random.default_rng(0), n_data=50, prior_scale=2, prior_mean=1)
    assert model.prior_scale == 2.0 and model.prior_mean == 1.0
    for bad in ({"n_data": 0}, {"dim": 2.5}, {"n_data": True}, {"prior_scale": 0.0},
                {"true_scale": -1.0}, {"prior_mean": float("nan")}, {"drop_prior": 1}):
        with pytest.raises(ValueError):
            ProbitRegression(np.random.default_rng(0), **bad)
    with pytest.raises(TypeError):
        ProbitRegression(0)
    with pytest.raises(TypeError):
        ProbitRegression(np.random.default_rng(0), unknown=1)


def test_labels_are_not_saturated(model):
    probabilities = scipy.special.ndtr(model.features @ model.true_weights)
    assert 0.2 < model.labels.mean() < 0.8
    assert np.mean((probabilities > 0.01) & (probabilities < 0.99)) > 0.5


def test_gradient_matches_central_finite_differences(model):
    theta = positions(model)
    step = 1e-5
    numeric = np.empty_like(theta)
    for k in range(model.dim):
        shift = np.zeros(model.dim)
        shift[k] = step
        numeric[..., k] = (model.potential(theta + shift)
                           - model.potential(theta - shift)) / (2 * step)
    assert model.potential(theta).shape == (2, 3)
    assert model.potential_gradient(theta).shape == (2, 3, model.dim)
    np.testing.assert_allclose(model.potential_gradient(theta), numeric, rtol=1e-5)


def test_potential_and_gradient_are_finite_deep_in_the_tails(model):
    theta = np.full(model.dim, 200.0)  # margins of tens, on both sides
    assert np.isfinite(model.potential(theta))
    assert np.all(np.isfinite(model.potential_gradient(theta)))


def test_the_estimator_on_all_indices_is_the_full_gradient(model):
    estimator = model.minibatch_gradient()
    theta = positions(model)
    minibatch = estimator.prepare(np.broadcast_to(np.arange(N_DATA), (2, 3, N_DATA)))
    assert minibatch.shape == (2, 3, N_DATA) and np.issubdtype(minibatch.dtype, np.integer)
    estimate = estimator(theta, minibatch)
    assert estimate.shape == theta.shape
    np.testing.assert_allclose(estimate, model.potential_gradient(theta), rtol=1e-10,
                               atol=1e-10)


def test_the_estimator_is_unbiased_over_a_partition(model):
    estimator = model.minibatch_gradient()
    theta = positions(model, seed=2)
    batch_size = 30
    batches = np.random.default_rng(3).permutation(N_DATA).reshape(-1, batch_size)  # (10, n)
    minibatch = estimator.prepare(np.broadcast_to(batches[:, None, None, :],
                                                  (len(batches), 2, 3, batch_size)))
    estimates = estimator(np.broadcast_to(theta, (len(batches),) + theta.shape), minibatch)
    np.testing.assert_allclose(estimates.mean(axis=0), model.potential_gradient(theta),
                               rtol=1e-10, atol=1e-10)
    # and a single minibatch is not the full gradient (the test above is not vacuous)
    assert not np.allclose(estimates[0], model.potential_gradient(theta), rtol=1e-3)


def test_drop_prior_removes_exactly_the_prior_term_from_the_estimator_only():
    honest, buggy = make(prior_scale=0.5, prior_mean=1.0), make(prior_scale=0.5, prior_mean=1.0,
                                                                 drop_prior=True)
    theta = positions(honest)
    minibatch = np.random.default_rng(4).integers(0, N_DATA, (2, 3, 25))
    right = honest.minibatch_gradient()(theta, honest.minibatch_gradient().prepare(minibatch))
    wrong = buggy.minibatch_gradient()(theta, buggy.minibatch_gradient().prepare(minibatch))
    prior_term = (theta - 1.0) / 0.5**2
    np.testing.assert_array_equal(right, prior_term + wrong)
    np.testing.assert_allclose(right - wrong, prior_term, rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(buggy.potential(theta), honest.potential(theta))
    np.testing.assert_array_equal(buggy.potential_gradient(theta),
                                  honest.potential_gradient(theta))


def test_drop_prior_moves_the_target_under_a_strong_prior_away_from_the_data():
    """The negative control's setting: the buggy estimator's zero (the likelihood's mode) lies
    far from the posterior's mode, which the strong prior pulls towards m₀ = 1."""
    model = make(seed=11, n_data=200, prior_scale=0.1, prior_mean=1.0, drop_prior=True)
    everything = model.minibatch_gradient().prepare(np.arange(model.n_data))
    start = np.full(model.dim, 1.0)
    posterior_mode = minimize(model.potential, start, jac=model.potential_gradient,
                              method="BFGS").x
    likelihood = minimize(lambda t: model.potential(t) - np.sum((t - 1.0) ** 2) / (2 * 0.01),
                          start, jac=lambda t: model.minibatch_gradient()(t, everything),
                          method="BFGS")
    assert likelihood.success
    np.testing.assert_allclose(model.potential_gradient(posterior_mode), 0.0, atol=1e-4)
    # the probit likelihood is log-concave, so the posterior's standard deviations are at most
    # the prior's σ₀ = 0.1: the buggy target lies many of them away from the right one
    assert np.abs(likelihood.x - posterior_mode).max() > 5 * model.prior_scale


def test_test_functions_shapes_and_ranges(model):
    log_loss, accuracy = model.test_functions()
    assert (log_loss.name, accuracy.name) == ("log_loss", "accuracy")
    theta = positions(model)
    for function in (log_loss, accuracy):
        assert function(theta).shape == (2, 3, 1)
        assert function(theta[0, 0]).shape == (1,)
        assert function(theta[None]).shape == (1, 2, 3, 1)
    assert np.all((accuracy(theta) >= 0) & (accuracy(theta) <= 1))
    assert np.all(log_loss(theta) > 0)
    # at θ = 0 every held-out point has probability 1/2; sign agreement is then label 0
    zero = np.zeros(model.dim)
    np.testing.assert_allclose(log_loss(zero), [np.log(2.0)])
    np.testing.assert_allclose(accuracy(zero), [np.mean(model.test_labels == 0)])
    # the true weights classify the held-out set better than chance
    assert accuracy(model.true_weights)[0] > 0.6


def test_blocks_give_the_same_values(model, monkeypatch):
    theta = positions(model, shape=(5, 7))
    whole = [model.potential(theta), model.potential_gradient(theta)]
    whole += [f(theta) for f in model.test_functions()]
    estimator = model.minibatch_gradient()
    minibatch = np.random.default_rng(5).integers(0, N_DATA, (5, 7, 20))
    whole.append(estimator(theta, minibatch))
    monkeypatch.setattr(probit, "BLOCK_BUDGET", 1000)  # a few positions a block
    blocked = [model.potential(theta), model.potential_gradient(theta)]
    blocked += [f(theta) for f in model.test_functions()]
    blocked.append(estimator(theta, minibatch))
    for a, b in zip(whole, blocked, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


def test_estimator_refuses_bad_shapes_and_indices(model):
    estimator = model.minibatch_gradient()
    with pytest.raises(ValueError):
        estimator.prepare(np.array([0, N_DATA]))
    with pytest.raises(ValueError):
        estimator.prepare(np.array([-1]))
    with pytest.raises(ValueError):
        estimator.prepare(np.zeros((3, 0), dtype=int))
    with pytest.raises(ValueError):
        estimator(np.zeros((2, model.dim)), estimator.prepare(np.zeros((3, 5), dtype=int)))


def test_same_seed_same_data():
    first, second, other = make(seed=21), make(seed=21), make(seed=22)
    for name in ("features", "labels", "test_features", "test_labels", "true_weights"):
        np.testing.assert_array_equal(getattr(first, name), getattr(second, name))
    assert not np.array_equal(first.features, other.features)
    # training data are drawn before held-out data: a larger held-out set keeps the training set
    longer = make(seed=21, n_test=900)
    np.testing.assert_array_equal(longer.features, first.features)
    np.testing.assert_array_equal(longer.test_features[:400], first.test_features)


def test_initial_positions_are_dispersed_around_the_prior_mean():
    model = make(prior_mean=2.0)
    starts = model.initial_position(np.random.default_rng(0), (500, 3))
    assert starts.shape == (500, 3, model.dim)
    assert abs(starts.mean() - 2.0) < 0.05 and abs(starts.std() - 1.0) < 0.05
    assert model.initial_position(np.random.default_rng(0), ()).shape == (model.dim,)
    np.testing.assert_array_equal(model.initial_position(np.random.default_rng(1), (2,)),
                                  model.initial_position(np.random.default_rng(1), (2,)))


def test_map_classifies_the_held_out_set():
    model = ProbitRegression(np.random.default_rng(31))  # the defaults: N = 2000, d = 4
    result = minimize(model.potential, np.zeros(model.dim), jac=model.potential_gradient,
                      method="BFGS")
    assert result.success
    np.testing.assert_allclose(model.potential_gradient(result.x), 0.0, atol=1e-3)
    log_loss, accuracy = model.test_functions()
    assert accuracy(result.x)[0] > 0.6
    assert log_loss(result.x)[0] < log_loss(np.zeros(model.dim))[0]
