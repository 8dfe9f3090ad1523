"""The MLP: gradients against finite differences, batched = looped, bad input refused."""

import numpy as np
import pytest

from simulators.seeding import generator
from simulators.validation import InvalidParameter
from workbench.models.mlp import MultilayerPerceptron
from workbench.models.protocol import HeldOutModel

from .checks import assert_estimator_matches, assert_gradient_matches


@pytest.fixture(scope="module")
def model():
    rng = generator(13, "mlp")
    features = rng.standard_normal((30, 5))
    labels = rng.integers(0, 3, 30)
    return MultilayerPerceptron(features, labels, 1.5, features[:7], labels[:7], n_classes=3,
                                hidden_sizes=(6, 4))


def test_layout_and_protocol(model):
    assert model.dim == (5 + 1) * 6 + (6 + 1) * 4 + (4 + 1) * 3
    assert isinstance(model, HeldOutModel)
    theta = model.initial_position(generator(1, "init"), (2, 3))
    assert theta.shape == (2, 3, model.dim)
    np.testing.assert_array_equal(model.layout.pack(model.layout.unpack(theta[0])), theta[0])


def test_full_gradient_matches_finite_differences(model):
    # Non-zero biases: with the zero biases of initial_position, an example whose previous
    # layer is all dead sits exactly on a ReLU kink, where differences are meaningless.
    rng = generator(2, "init")
    theta = model.initial_position(rng, (3,)) + 0.3 * rng.standard_normal((3, model.dim))
    assert_gradient_matches(model, theta)


def test_minibatch_estimator_matches_the_batch_potential(model):
    rng = generator(3, "batch")
    theta = model.initial_position(rng, (3, 2))  # (window, replicate, d)
    rows = rng.integers(0, 30, (3, 2, 5))
    assert_estimator_matches(model, theta, rows)


def test_estimator_blocks_do_not_change_the_result(model, monkeypatch):
    import workbench.models.per_example as per_example

    rng = generator(4, "batch")
    theta = model.initial_position(rng, (7,))
    rows = rng.integers(0, 30, (7, 4))
    estimator = model.minibatch_gradient()
    whole = estimator(theta, estimator.prepare(rows))
    monkeypatch.setattr(per_example, "BLOCK_BUDGET", 4 * model.example_cost * 2)
    np.testing.assert_allclose(estimator(theta, estimator.prepare(rows)), whole, rtol=1e-13,
                               atol=1e-13)


def test_held_out_functions(model):
    theta = model.initial_position(generator(5, "init"), (4,))
    log_loss, accuracy = model.test_functions()
    logits = []
    for position in theta:
        weights = model.layout.unpack(position[None])
        hidden = np.maximum(model.test_features @ weights["dense0.weight"][0]
                            + weights["dense0.bias"][0], 0)
        hidden = np.maximum(hidden @ weights["dense1.weight"][0] + weights["dense1.bias"][0], 0)
        logits.append(hidden @ weights["dense2.weight"][0] + weights["dense2.bias"][0])
    logits = np.array(logits)
    log_p = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    expected = -log_p[:, np.arange(7), model.test_labels].mean(axis=1)
    np.testing.assert_allclose(log_loss(theta)[:, 0], expected, rtol=1e-12)
    np.testing.assert_allclose(accuracy(theta)[:, 0],
                               (logits.argmax(-1) == model.test_labels).mean(axis=1))


@pytest.mark.parametrize(("kwargs", "field"), [
    (dict(hidden_sizes=(4, 0)), "hidden_sizes\\[1\\]"),
    (dict(hidden_sizes=(-3,)), "hidden_sizes\\[0\\]"),
    (dict(hidden_sizes=5), "hidden_sizes"),
    (dict(labels=[0, 1, 3]), "labels"),
    (dict(labels=[0, 1.5, 2]), "labels"),
    (dict(labels=[0, 1]), "labels"),
    (dict(n_classes=1), "n_classes"),
    (dict(prior_scale=-1.0), "prior_scale"),
    (dict(test_features=np.ones((2, 4)), test_labels=[0, 1]), "test_features"),
    (dict(test_features=np.ones((2, 2)), test_labels=[0, 5]), "test_labels"),
])
def test_bad_input_is_refused(kwargs, field):
    options = dict(features=np.ones((3, 2)), labels=[0, 1, 2], n_classes=3)
    options.update(kwargs)
    with pytest.raises(InvalidParameter, match=field):
        MultilayerPerceptron(**options)


def test_held_out_data_must_come_in_pairs():
    with pytest.raises(InvalidParameter, match="test_labels"):
        MultilayerPerceptron(np.ones((3, 2)), [0, 1, 2], n_classes=3, test_features=np.ones((1, 2)))
    with pytest.raises(InvalidParameter, match="test_features"):
        MultilayerPerceptron(np.ones((3, 2)), [0, 1, 2], n_classes=3, test_labels=[0])
