"""The CNN: im2col against a direct convolution, gradients against finite differences."""

import numpy as np
import pytest

from simulators.seeding import generator
from simulators.validation import InvalidParameter
from workbench.data.digits import digits
from workbench.models.cnn import ConvolutionalNetwork
from workbench.models.convolution import convolve, image_columns, max_pool, max_pool_gradient
from workbench.models.protocol import HeldOutModel

from .checks import assert_estimator_matches, assert_gradient_matches


def _small(images, labels, **kwargs):
    options = dict(n_classes=3, kernel_size=3, filters=(2, 3), hidden_size=4, prior_scale=1.5)
    options.update(kwargs)
    return ConvolutionalNetwork(images, labels, test_features=images[:3], test_labels=labels[:3],
                                **options)


@pytest.fixture(scope="module")
def model():
    rng = generator(13, "cnn")
    return _small(rng.standard_normal((6, 8, 8)), rng.integers(0, 3, 6))


def _random_position(model, rng, shape):
    return model.initial_position(rng, shape) + 0.3 * rng.standard_normal(shape + (model.dim,))


def test_im2col_convolution_equals_a_direct_one():
    rng = generator(1, "conv")
    images = rng.standard_normal((2, 3, 8, 8, 2))  # (replicate, example, H, W, C)
    weight = rng.standard_normal((2, 2 * 9, 4))  # (replicate, C·k·k, F)
    bias = rng.standard_normal((2, 4))
    output = convolve(image_columns(images, 3), weight, bias, (8, 8))
    padded = np.pad(images, [(0, 0), (0, 0), (1, 1), (1, 1), (0, 0)])
    kernel = weight.reshape(2, 2, 3, 3, 4)  # (replicate, C, k, k, F)
    direct = np.zeros((2, 3, 8, 8, 4))
    for y in range(8):
        for x in range(8):
            patch = padded[:, :, y:y + 3, x:x + 3, :]  # (r, n, k, k, C)
            direct[:, :, y, x] = np.einsum("rnijc,rcijf->rnf", patch, kernel) + bias[:, None]
    np.testing.assert_allclose(output, direct, rtol=1e-12, atol=1e-12)


def test_max_pool_and_its_gradient():
    images = generator(2, "pool").standard_normal((2, 4, 6, 3))
    pooled, winner = max_pool(images)
    expected = images.reshape(2, 2, 2, 3, 2, 3).max(axis=(2, 4))
    np.testing.assert_array_equal(pooled, expected)
    routed = max_pool_gradient(np.ones_like(pooled), winner)
    np.testing.assert_array_equal(routed, images == np.repeat(np.repeat(expected, 2, 1), 2, 2))
    tied, winner = max_pool(np.zeros((1, 2, 2, 1)))
    assert max_pool_gradient(np.ones_like(tied), winner).sum() == 1.0


def test_layout_and_protocol(model):
    assert model.dim == (9 * 2 + 2) + (2 * 9 * 3 + 3) + (2 * 2 * 3 * 4 + 4) + (4 * 3 + 3)
    assert isinstance(model, HeldOutModel)
    assert ConvolutionalNetwork(np.zeros((2, 8, 8)), [0, 1]).dim == 6058


def test_full_gradient_matches_finite_differences(model):
    assert_gradient_matches(model, _random_position(model, generator(3, "cnn"), (2,)))


def test_gradient_on_digits_with_blank_areas_matches_finite_differences():
    """Blank pixels give tied pooling windows; a single arg-max differentiates them right."""
    data = digits()
    images = data.train_features[:5].reshape(-1, 8, 8)
    model = _small(images, data.train_labels[:5] % 3)
    assert_gradient_matches(model, _random_position(model, generator(4, "cnn"), (2,)))


def test_minibatch_estimator_matches_the_batch_potential(model):
    rng = generator(5, "cnn")
    theta = _random_position(model, rng, (2, 2))  # (window, replicate, d)
    assert_estimator_matches(model, theta, rng.integers(0, 6, (2, 2, 3)))


def test_28_by_28_images_with_channels(model):
    rng = generator(6, "cnn")
    images = rng.standard_normal((3, 28, 28, 2))
    big = ConvolutionalNetwork(images, [0, 1, 1], n_classes=2, kernel_size=5, filters=(2, 2),
                               hidden_size=3)
    assert big.dim == (2 * 25 * 2 + 2) + (2 * 25 * 2 + 2) + (7 * 7 * 2 * 3 + 3) + (3 * 2 + 2)
    theta = _random_position(big, rng, (1,))
    coordinates = rng.choice(big.dim, 40, replace=False)
    assert_gradient_matches(big, theta, coordinates=coordinates)


def test_held_out_functions(model):
    theta = _random_position(model, generator(7, "cnn"), (2, 3))
    log_loss, accuracy = model.test_functions()
    assert log_loss(theta).shape == (2, 3, 1)
    assert np.all(log_loss(theta) > 0) and np.all((accuracy(theta) >= 0) & (accuracy(theta) <= 1))


@pytest.mark.parametrize(("kwargs", "field"), [
    (dict(filters=(0, 2)), "filters\\[0\\]"),
    (dict(filters=(2,)), "filters"),
    (dict(hidden_size=0), "hidden_size"),
    (dict(kernel_size=4), "kernel_size"),
    (dict(features=np.zeros((3, 6, 6))), "features"),
    (dict(labels=[0, 1, 10]), "labels"),
])
def test_bad_input_is_refused(kwargs, field):
    options = dict(features=np.zeros((3, 8, 8)), labels=[0, 1, 2])
    options.update(kwargs)
    with pytest.raises(InvalidParameter, match=field):
        ConvolutionalNetwork(**options)
