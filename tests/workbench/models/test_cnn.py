"""The CNN: im2col against a direct convolution, gradients against finite differences."""

import numpy as np
import pytest

from simulators.seeding import generator
from simulators.validation import InvalidParameter
from workbench.data.digits import digits
from workbench.models.cnn import ConvolutionalNetwork
from workbench.models.convolution import (
    convolution_gradients,
    convolve,
    image_columns,
    pool_activate,
    pool_backward,
)
from workbench.models.protocol import HeldOutModel

from .checks import assert_estimator_matches, assert_gradient_matches
from .numpy_convolution import (
    NumpyNetwork,
    numpy_col2im,
    numpy_convolution_gradients,
    numpy_image_columns,
    numpy_max_pool,
    numpy_pool_activate,
    numpy_pool_backward,
)


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
    output = convolve(image_columns(images, 3), weight, (8, 8)) + bias[:, None, None, None]
    padded = np.pad(images, [(0, 0), (0, 0), (1, 1), (1, 1), (0, 0)])
    kernel = weight.reshape(2, 2, 3, 3, 4)  # (replicate, C, k, k, F)
    direct = np.zeros((2, 3, 8, 8, 4))
    for y in range(8):
        for x in range(8):
            patch = padded[:, :, y:y + 3, x:x + 3, :]  # (r, n, k, k, C)
            direct[:, :, y, x] = np.einsum("rnijc,rcijf->rnf", patch, kernel) + bias[:, None]
    np.testing.assert_allclose(output, direct, rtol=1e-12, atol=1e-12)


def test_max_pool_relu_and_its_gradient():
    images = generator(2, "pool").standard_normal((1, 2, 4, 6, 3))
    active, route = pool_activate(images, np.zeros((1, 3)))
    expected = images.reshape(1, 2, 2, 2, 3, 2, 3).max(axis=(3, 5))
    np.testing.assert_array_equal(active, np.maximum(expected, 0.0))
    routed, _ = pool_backward(np.ones_like(active), route)
    spread = np.repeat(np.repeat(expected, 2, 2), 2, 3)
    np.testing.assert_array_equal(routed, (images == spread) & (spread > 0))
    tied, route = pool_activate(np.ones((1, 1, 2, 2, 1)), np.zeros((1, 1)))
    assert pool_backward(np.ones_like(tied), route)[0].sum() == 1.0


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
# The compiled loops must give the numpy formulations of ``numpy_convolution.py`` (what the CNN
# computed before the loops replaced them) bit for bit: every number's bytes, so that even the
# sign of a zero counts, and NaN in the same places (IEEE 754 leaves which NaN an operation on
# NaNs returns open, and LLVM may swap an addition's operands: a NaN is a diverged value, its
# sign and payload carry nothing). Inputs are rounded to one decimal, so that windows tie, and
# carry blank (zero) areas, signed zeros and non-finite values.

def _same_bytes(a, b):
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if a.dtype.kind != "f":
        return np.array_equal(a, b)
    nan = np.isnan(a)
    return np.array_equal(nan, np.isnan(b)) and a[~nan].tobytes() == b[~nan].tobytes()


def _awkward(rng, shape):
    """Values with ties, a blank area, signed zeros, NaN and infinities."""
    values = np.round(rng.standard_normal(shape), 1)
    values[..., : shape[-3] // 2, : shape[-2] // 2, :] = 0.0  # a blank corner: tied windows
    flat = values.reshape(-1)
    flat[rng.choice(flat.size, 4 + flat.size // 50, replace=False)] = -0.0
    flat[rng.choice(flat.size, 3, replace=False)] = [np.nan, np.inf, -np.inf]
    return values


SHAPES = [  # (R, n, H, W, C), kernel size: the quick config's layers, LeNet's 28 × 28 and more
    ((2, 3, 8, 8, 1), 3), ((2, 3, 4, 4, 4), 3), ((1, 2, 28, 28, 2), 5), ((2, 2, 14, 14, 20), 5),
    ((3, 2, 6, 10, 3), 1), ((1, 1, 4, 4, 2), 7),
]


@pytest.mark.parametrize(("shape", "kernel_size"), SHAPES)
def test_compiled_im2col_is_the_numpy_one_bit_for_bit(shape, kernel_size):
    images = _awkward(generator(2, "im2col", kernel_size), shape)
    for batch in (images, images[0]):  # per-replicate images, or a data set's
        assert _same_bytes(image_columns(batch, kernel_size),
                           numpy_image_columns(batch, kernel_size))
    # negative control: the kernel offsets (i, j) transposed put other pixels in the columns
    pad = kernel_size // 2
    padded = np.pad(images, [(0, 0), (0, 0), (pad, pad), (pad, pad), (0, 0)])
    transposed = np.lib.stride_tricks.sliding_window_view(
        padded, (kernel_size, kernel_size), axis=(-3, -2)).swapaxes(-1, -2)
    if kernel_size > 1:
        assert not np.array_equal(image_columns(images, kernel_size),
                                  transposed.reshape(image_columns(images, kernel_size).shape),
                                  equal_nan=True)


@pytest.mark.parametrize(("shape", "kernel_size"), SHAPES)
def test_compiled_col2im_is_the_numpy_one_bit_for_bit(shape, kernel_size):
    from workbench.models.convolution import _column_image

    rng = generator(3, "columns", kernel_size)
    n_images, (height, width, channels) = shape[0] * shape[1], shape[2:]
    column_delta = rng.standard_normal((n_images, height, width, channels * kernel_size**2))
    column_delta.reshape(-1)[rng.choice(column_delta.size, 20)] = -0.0
    compiled = np.empty((n_images, height, width, channels))
    _column_image(column_delta, kernel_size, compiled)
    assert _same_bytes(compiled, numpy_col2im(column_delta, kernel_size, channels))
    if kernel_size > 1:  # negative control: the kernel offsets added in reverse order
        reverse = np.zeros_like(compiled)
        shaped = column_delta.reshape(n_images, height, width, channels, kernel_size,
                                      kernel_size)
        pad = kernel_size // 2
        for y in range(height):
            for x in range(width):
                for i in reversed(range(kernel_size)):
                    for j in reversed(range(kernel_size)):
                        h, w = y + pad - i, x + pad - j
                        if 0 <= h < height and 0 <= w < width:
                            reverse[:, y, x] += shaped[:, h, w, :, i, j]
        assert np.allclose(reverse, compiled, rtol=1e-12)
        assert not np.array_equal(reverse, compiled)


def test_compiled_pooling_is_numpys_with_ties_and_nan():
    rng = generator(4, "pooling")
    images = np.round(rng.standard_normal((3, 2, 6, 8, 5)), 1)  # rounding makes ties
    images[0, 0, 0, 0, 0] = np.nan  # a NaN wins its window, as argmax picks it
    images[1, 1, 2:4, 2:4, 1] = [[1.0, np.nan], [np.nan, 2.0]]  # the first NaN wins
    images[2, 0, 0:2, 0:2, 2] = [[-0.0, 0.0], [0.0, -0.0]]  # signed zeros tie: the first
    images[2, 1, 0:2, 0:2, 3] = [[-0.0, -0.0], [-0.0, -0.0]]  # the ReLU of -0.0 is +0.0
    active, route = pool_activate(images, np.zeros((3, 5)))
    expected, pooled, winner = numpy_pool_activate(images)
    assert _same_bytes(active, expected)
    assert np.array_equal(route % 4, winner) and np.array_equal(route >= 4, ~(pooled > 0))
    assert np.isnan(active[1, 1, 1, 1, 1]) and route[1, 1, 1, 1, 1] == 1 + 4
    assert np.signbit(pooled[2, 1, 0, 0, 3]) and not np.signbit(active[2, 1, 0, 0, 3])
    # negative control: the last maximum instead of the first moves tied gradients
    last = 3 - numpy_max_pool(images[..., ::-1, ::-1, :])[1][..., ::-1, ::-1, :]
    assert not np.array_equal(last, winner)


@pytest.mark.parametrize(("shape", "kernel_size"), SHAPES)
def test_compiled_pool_activate_and_backward_are_numpys_bit_for_bit(shape, kernel_size):
    """Bias, pooling and ReLU forward; routing, mask and bias gradient backward."""
    rng = generator(5, "pool", *shape)
    height, width = shape[2] // 2 * 2, shape[3] // 2 * 2
    output = _awkward(rng, shape[:2] + (height, width, shape[4]))
    bias = np.round(rng.standard_normal((shape[0], shape[4])), 1)
    bias[0, 0] = -0.0
    active, route = pool_activate(output, bias)
    expected, pooled, winner = numpy_pool_activate(output + bias[:, None, None, None])
    assert _same_bytes(active, expected)
    delta = _awkward(rng, active.shape)  # inf · 0 = NaN where the ReLU is off
    for out in (None, np.empty(output.size)):
        routed, bias_gradient = pool_backward(delta, route, out=out)
        expected_routed, expected_bias = numpy_pool_backward(delta, pooled, winner)
        assert _same_bytes(routed, expected_routed)
        assert _same_bytes(bias_gradient, expected_bias)


@pytest.mark.parametrize("n_filters", [1, 2, 3, 8, 16, 50])
def test_the_bias_gradient_adds_in_numpys_order(n_filters):
    """numpy's ``sum(axis=1)`` of ``(R, M, F)`` adds the M pixels in order when F > 1, pairwise
    when F = 1 (the axis is then contiguous); both orders are kept, in the model's sizes."""
    rng = generator(6, "bias", n_filters)
    delta = rng.standard_normal((2, 700, 4, 4, n_filters))
    route = rng.integers(0, 8, delta.shape).astype(np.int8)
    routed, bias_gradient = pool_backward(delta, route)
    flat = routed.reshape(2, -1, n_filters)
    assert _same_bytes(bias_gradient, flat.sum(axis=1))
    # negative control: the other order differs in the last bits at this length
    other = (np.cumsum(flat, axis=1)[:, -1] if n_filters == 1
             else np.ascontiguousarray(flat.transpose(0, 2, 1)).sum(axis=-1))
    assert np.allclose(other, bias_gradient, rtol=1e-12) and not _same_bytes(other,
                                                                           bias_gradient)


def test_overwriting_the_columns_changes_no_gradient():
    rng = generator(7, "overwrite")
    columns = rng.standard_normal((2, 3, 16, 4 * 9))
    weight, delta = rng.standard_normal((2, 36, 5)), rng.standard_normal((2, 3, 4, 4, 5))
    fresh = convolution_gradients(columns.copy(), weight, delta, 3, input_gradient=True)
    kept = columns.copy()
    overwritten = convolution_gradients(kept, weight, delta, 3, input_gradient=True,
                                        overwrite_columns=True)
    reference = numpy_convolution_gradients(columns, weight, delta, 3, input_gradient=True)
    for a, b, c in zip(fresh, overwritten, reference, strict=True):
        assert _same_bytes(a, b) and _same_bytes(a, c)
    assert not np.array_equal(kept, columns)  # control: the memory was indeed reused


@pytest.mark.parametrize("config", ["digits", "28x28"])
def test_network_gradient_equals_the_numpy_reference(config):
    """The CNN's full-data potential and gradient, its minibatch estimator (per-replicate
    images) and held-out log loss, bit for bit those of the numpy formulations."""
    if config == "digits":
        data = digits()
        images, labels = data.train_features[:300].reshape(-1, 8, 8), data.train_labels[:300]
        options, shape = dict(n_classes=10, filters=(4, 8)), (7,)
    else:
        rng = generator(8, "28x28")
        images = np.round(rng.standard_normal((6, 28, 28, 2)), 1)
        images[:, :10] = 0.0  # blank rows
        labels, options, shape = rng.integers(0, 3, 6), dict(
            n_classes=3, kernel_size=5, filters=(3, 4), hidden_size=5), (2,)
    options.update(test_features=images[:50], test_labels=labels[:50])
    network = ConvolutionalNetwork(images, labels, **options)
    reference = NumpyNetwork(images, labels, **options)
    rng = generator(5, "reference", config)
    theta = _random_position(network, rng, shape)
    rows = rng.integers(0, len(images), shape + (5,))
    for name, compute in [
            ("gradient", lambda model: model.potential_gradient(theta)),
            ("potential", lambda model: model.potential(theta)),
            ("minibatch", lambda model: model.minibatch_gradient()(theta, rows)),
            ("log loss", lambda model: model.test_functions()[0](theta))]:
        assert _same_bytes(compute(network), compute(reference)), name
    # negative control: a perturbed position changes the gradient
    assert not np.array_equal(reference.potential_gradient(theta + 1e-9),
                              network.potential_gradient(theta))
