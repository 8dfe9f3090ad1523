"""a9a-shaped synthetic data and the bundled digits: shapes, determinism, labels."""

import numpy as np
import pytest
from scipy import sparse

from simulators.seeding import generator
from simulators.validation import InvalidParameter
from workbench.data.a9a_like import A9A_FEATURES, A9A_TEST, A9A_TRAIN, a9a_like
from workbench.data.digits import digits
from workbench.models.logistic import LogisticRegression


def test_a9a_like_has_a9a_shape_and_is_seeded():
    data, weights = a9a_like(generator(1, "a9a"))
    assert (data.n_train, data.n_test, data.n_features) == (A9A_TRAIN, A9A_TEST, A9A_FEATURES)
    assert sparse.isspmatrix_csr(data.train_features) and weights.shape == (123,)
    active = np.diff(data.train_features.indptr)
    assert 13.7 < active.mean() < 14.0 and active.max() == 14
    assert set(np.unique(data.train_features.data)) == {1.0}
    assert set(np.unique(data.train_labels)) == {-1, 1}
    again, _ = a9a_like(generator(1, "a9a"), n_train=A9A_TRAIN, n_test=A9A_TEST)
    assert (again.train_features != data.train_features).nnz == 0
    np.testing.assert_array_equal(again.test_labels, data.test_labels)


def test_a9a_like_labels_follow_the_logistic_link():
    """The known weights score better on held-out data than the zero vector (log-loss log 2)."""
    data, weights = a9a_like(generator(2, "a9a"), n_train=50, n_test=4000)
    model = LogisticRegression(data.train_features, data.train_labels, 1.0,
                               data.test_features, data.test_labels)
    log_loss, accuracy = model.test_functions()
    assert log_loss(weights)[0] < np.log(2) - 0.1
    assert accuracy(weights)[0] > 0.7


def test_a9a_like_refuses_bad_sizes():
    with pytest.raises(InvalidParameter, match="n_fields"):
        a9a_like(generator(1, "a9a"), n_features=5, n_fields=6)
    with pytest.raises(InvalidParameter, match="missing"):
        a9a_like(generator(1, "a9a"), missing=1.5)


def test_digits_split_is_deterministic_and_stratified():
    data = digits()
    assert data.n_train + data.n_test == 1797 and data.n_features == 64
    assert 0.19 < data.n_test / 1797 < 0.21
    assert set(np.unique(data.test_labels)) == set(range(10))
    assert data.train_features.min() == 0 and data.train_features.max() == 1
    np.testing.assert_array_equal(digits().test_features, data.test_features)
    with pytest.raises(InvalidParameter, match="test_fraction"):
        digits(1.0)
