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


# ---------------------------------------------------------------- the numpy formulations
# The compiled col2im and pooling loops must give these straightforward numpy versions' values
# bit for bit (they are what the CNN computed before the loops replaced them).

def numpy_col2im(column_delta, kernel_size, channels):
    *leading, height, width, _ = column_delta.shape
    column_delta = column_delta.reshape(*leading, height, width, channels, kernel_size,
                                        kernel_size)
    pad = kernel_size // 2
    padded = np.zeros((*leading, height + 2 * pad, width + 2 * pad, channels))
    for i in range(kernel_size):
        for j in range(kernel_size):
            padded[..., i:i + height, j:j + width, :] += column_delta[..., i, j]
    return padded[..., pad:pad + height, pad:pad + width, :]


def numpy_max_pool(images):
    *leading, height, width, n_filters = images.shape
    windows = images.reshape(*leading, height // 2, 2, width // 2, 2, n_filters)
    windows = np.moveaxis(windows, (-4, -2), (-2, -1)).reshape(
        *leading, height // 2, width // 2, n_filters, 4)
    winner = windows.argmax(axis=-1)
    return np.take_along_axis(windows, winner[..., None], axis=-1)[..., 0], winner


def numpy_max_pool_gradient(delta, winner):
    *leading, half_height, half_width, n_filters = delta.shape
    windows = np.zeros(delta.shape + (4,))
    np.put_along_axis(windows, winner[..., None], delta[..., None], axis=-1)
    windows = np.moveaxis(windows.reshape(*delta.shape, 2, 2), (-2, -1), (-4, -2))
    return windows.reshape(*leading, 2 * half_height, 2 * half_width, n_filters)


@pytest.mark.parametrize("kernel_size", [1, 3, 5])
def test_compiled_col2im_is_the_numpy_one_bit_for_bit(kernel_size):
    from workbench.models.convolution import _column_image

    rng = generator(3, "columns", kernel_size)
    column_delta = rng.standard_normal((6, 8, 4, 2 * kernel_size**2))
    compiled = _column_image(column_delta, kernel_size, 2)
    assert np.array_equal(compiled, numpy_col2im(column_delta, kernel_size, 2))
    if kernel_size > 1:  # negative control: the kernel offsets added in reverse order
        reverse = np.zeros_like(compiled)
        shaped = column_delta.reshape(6, 8, 4, 2, kernel_size, kernel_size)
        pad = kernel_size // 2
        for y in range(8):
            for x in range(4):
                for i in reversed(range(kernel_size)):
                    for j in reversed(range(kernel_size)):
                        h, w = y + pad - i, x + pad - j
                        if 0 <= h < 8 and 0 <= w < 4:
                            reverse[:, y, x] += shaped[:, h, w, :, i, j]
        assert np.allclose(reverse, compiled, rtol=1e-12)
        assert not np.array_equal(reverse, compiled)


def test_compiled_pooling_is_numpys_with_ties_and_nan():
    rng = generator(4, "pooling")
    images = np.round(rng.standard_normal((3, 2, 6, 8, 5)), 1)  # rounding makes ties
    images[0, 0, 0, 0, 0] = np.nan  # a NaN wins its window, as argmax picks it
    images[1, 1, 2:4, 2:4, 1] = [[1.0, np.nan], [np.nan, 2.0]]  # the first NaN wins
    images[2, 0, 0:2, 0:2, 2] = [[-0.0, 0.0], [0.0, -0.0]]  # signed zeros tie: the first
    pooled, winner = max_pool(images)
    expected, expected_winner = numpy_max_pool(images)
    assert np.array_equal(pooled, expected, equal_nan=True)
    assert np.array_equal(winner, expected_winner)
    assert np.isnan(pooled[1, 1, 1, 1, 1]) and winner[1, 1, 1, 1, 1] == 1
    delta = rng.standard_normal(pooled.shape)
    assert np.array_equal(max_pool_gradient(delta, winner),
                          numpy_max_pool_gradient(delta, winner))
    # negative control: the last maximum instead of the first moves tied gradients
    last = 3 - numpy_max_pool(images[..., ::-1, ::-1, :])[1][..., ::-1, ::-1, :]
    assert not np.array_equal(last, winner)


def test_network_gradient_equals_the_numpy_reference(monkeypatch):
    """The CNN's full-data potential and gradient at 7 positions on 300 digits, bit for bit
    those computed with the numpy formulations above in place of the compiled loops."""
    data = digits()
    images, labels = data.train_features[:300].reshape(-1, 8, 8), data.train_labels[:300]
    network = ConvolutionalNetwork(images, labels, n_classes=10)
    theta = _random_position(network, generator(5, "reference"), (7,))
    gradient, potential = network.potential_gradient(theta), network.potential(theta)
    import workbench.models.cnn as cnn
    import workbench.models.convolution as convolution

    monkeypatch.setattr(cnn, "max_pool", numpy_max_pool)
    monkeypatch.setattr(cnn, "max_pool_gradient", numpy_max_pool_gradient)
    monkeypatch.setattr(convolution, "_column_image",
                        lambda delta, k, c: np.ascontiguousarray(numpy_col2im(delta, k, c)))
    reference = ConvolutionalNetwork(images, labels, n_classes=10)  # nothing kept from above
    assert np.array_equal(reference.potential_gradient(theta), gradient)
    assert np.array_equal(reference.potential(theta), potential)
    # negative control: a perturbed position changes the gradient
    assert not np.array_equal(reference.potential_gradient(theta + 1e-9), gradient)
