"""Logistic regression: gradients against finite differences, dense = sparse, bad input."""

import numpy as np
import pytest
from scipy import sparse

from simulators.seeding import generator
from simulators.validation import InvalidParameter
from workbench.models.logistic import LogisticRegression
from workbench.models.protocol import GradientEstimator, HeldOutModel, Model

from .checks import assert_estimator_matches, assert_gradient_matches


def _data(rng, n=40, p=7, density=0.3):
    features = (rng.random((n, p)) < density) * rng.standard_normal((n, p))
    labels = rng.integers(0, 2, n)
    return features, labels


@pytest.fixture(scope="module")
def models():
    rng = generator(13, "logistic")
    features, labels = _data(rng)
    test_features, test_labels = _data(rng, n=25)
    dense = LogisticRegression(features, labels, 2.0, test_features, 2 * test_labels - 1)
    csr = LogisticRegression(sparse.csr_matrix(features), 2 * labels - 1, 2.0,
                             sparse.csr_matrix(test_features), test_labels)
    return dense, csr


def test_satisfies_the_protocol(models):
    for model in models:
        assert isinstance(model, Model) and isinstance(model, HeldOutModel)
        assert isinstance(model.minibatch_gradient(), GradientEstimator)


def test_full_gradient_matches_finite_differences(models):
    theta = generator(1, "theta").standard_normal((3, 7))
    for model in models:
        assert_gradient_matches(model, theta)


def test_dense_and_sparse_agree(models):
    dense, csr = models
    rng = generator(2, "theta")
    theta = rng.standard_normal((2, 3, 7))
    np.testing.assert_allclose(dense.potential(theta), csr.potential(theta), rtol=1e-12)
    np.testing.assert_allclose(dense.potential_gradient(theta), csr.potential_gradient(theta),
                               rtol=1e-12, atol=1e-12)
    rows = rng.integers(0, 40, (2, 3, 5))
    estimators = [m.minibatch_gradient() for m in models]
    dense_value, csr_value = (e(theta, e.prepare(rows)) for e in estimators)
    np.testing.assert_allclose(dense_value, csr_value, rtol=1e-12, atol=1e-12)


def test_minibatch_estimator_matches_the_batch_potential(models):
    rng = generator(3, "theta")
    theta = rng.standard_normal((4, 2, 7))  # (window, replicate, d)
    rows = rng.integers(0, 40, (4, 2, 6))
    for model in models:
        assert_estimator_matches(model, theta, rows)


def test_full_batch_estimator_is_the_full_gradient(models):
    theta = generator(4, "theta").standard_normal((3, 7))
    rows = np.broadcast_to(np.arange(40), (3, 40))
    for model in models:
        estimator = model.minibatch_gradient()
        np.testing.assert_allclose(estimator(theta, estimator.prepare(rows)),
                                   model.potential_gradient(theta), rtol=1e-10, atol=1e-10)


def test_prepared_minibatches_are_compact_indices(models):
    estimator = models[1].minibatch_gradient()
    prepared = estimator.prepare(np.zeros((64, 50, 1, 10), dtype=np.int64))
    assert prepared.dtype == np.int32 and prepared.shape == (64, 50, 1, 10)
    with pytest.raises(InvalidParameter, match="indices"):
        estimator.prepare(np.array([[0, 40]]))


def test_held_out_functions(models):
    dense, csr = models
    theta = generator(5, "theta").standard_normal((2, 3, 7))
    for model in models:
        log_loss, accuracy = model.test_functions()
        assert log_loss(theta).shape == accuracy(theta).shape == (2, 3, 1)
    signs = dense.test_labels
    margins = theta @ dense.test_features.T
    np.testing.assert_allclose(dense.test_functions()[0](theta)[..., 0],
                               np.logaddexp(0, -signs * margins).mean(axis=-1), rtol=1e-12)
    np.testing.assert_allclose(csr.test_functions()[1](theta)[..., 0],
                               ((margins > 0) == (signs > 0)).mean(axis=-1))


def test_boolean_labels_are_zero_one():
    model = LogisticRegression(np.eye(3), np.array([True, False, True]))
    np.testing.assert_array_equal(model.labels, [1.0, -1.0, 1.0])


def test_bad_input_is_refused():
    features = np.ones((3, 2))
    with pytest.raises(InvalidParameter, match="labels"):
        LogisticRegression(features, [0, 1, 2])
    with pytest.raises(InvalidParameter, match="labels"):
        LogisticRegression(features, [-1, 0, 1])
    with pytest.raises(InvalidParameter, match="labels"):
        LogisticRegression(features, [0, 1])
    with pytest.raises(InvalidParameter, match="prior_scale"):
        LogisticRegression(features, [0, 1, 1], prior_scale=0.0)
    with pytest.raises(InvalidParameter, match="test_features"):
        LogisticRegression(features, [0, 1, 1], 1.0, np.ones((2, 3)), [0, 1])
    with pytest.raises(InvalidParameter, match="test_features"):
        LogisticRegression(features, [0, 1, 1]).test_functions()
    with pytest.raises(InvalidParameter, match="features"):
        LogisticRegression(np.full((3, 2), np.nan), [0, 1, 1])


def test_sparse_rows_without_non_zeros():
    """Empty CSR rows (a margin of 0) in a batch, first, last and between others."""
    features = np.array([[0, 0, 0], [1, 0, 2], [0, 0, 0], [0, 3, 0], [0, 0, 0]], dtype=float)
    labels = [1, 0, 1, 1, 0]
    dense, csr = (LogisticRegression(f, labels) for f in (features, sparse.csr_matrix(features)))
    theta = generator(6, "theta").standard_normal((3, 3))
    rows = np.array([[0, 1, 2, 3], [2, 2, 0, 4], [4, 3, 2, 1]])
    values = [m.minibatch_gradient()(theta, rows) for m in (dense, csr)]
    np.testing.assert_allclose(values[0], values[1], rtol=1e-13, atol=1e-13)
    empty = np.broadcast_to([[0, 2, 4]], (3, 3))  # x_i = 0: only the prior term θ/σ₀² is left
    np.testing.assert_array_equal(csr.minibatch_gradient()(theta, empty), theta)


def test_full_data_blocks_are_the_out_of_place_formulas_bit_for_bit(models):
    """potential and potential_gradient work in place on the (B, N) margins, and on a CSR
    design in compiled passes (issue 15); the out-of-place formulas on SciPy's sparse products
    that they replaced, kept here, give the same bits and layout, dense and CSR, for one
    position and for many (a layout change would reorder the sums)."""
    from scipy.special import expit

    from workbench.models.per_example import over_positions

    def _margins(design, theta):
        if sparse.issparse(design):
            return np.asarray(design @ theta.T).T
        return theta @ design.T

    def _weighted_rows(design, weights):
        if sparse.issparse(design):
            return np.asarray(design.T @ weights.T).T
        return weights @ design

    def potential(model, theta):
        def block(rows):
            margins = model.labels * _margins(model.features, rows)
            return (np.sum(rows**2, axis=1) / (2 * model.prior_scale**2)
                    + np.logaddexp(0.0, -margins).sum(axis=1))
        return over_positions(block, theta, model.dim, model.n_data)

    def gradient(model, theta):
        def block(rows):
            weights = model.labels * expit(-model.labels * _margins(model.features, rows))
            return rows / model.prior_scale**2 - _weighted_rows(model.features, weights)
        return over_positions(block, theta, model.dim, model.n_data)

    rng = generator(15, "in place")
    for model in models:
        for shape in [(7,), (1, 7), (3, 50, 7)]:
            theta = 3.0 * rng.standard_normal(shape)
            for fast, reference in [(model.potential(theta), potential(model, theta)),
                                    (model.potential_gradient(theta), gradient(model, theta))]:
                assert fast.strides == reference.strides
                assert np.array_equal(fast.view(np.int64), reference.view(np.int64))
