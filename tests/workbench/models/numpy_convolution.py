"""The CNN's layers as straightforward numpy, the formulations the compiled loops replaced.

:mod:`workbench.models.convolution` must give these values bit for bit (the tests compare
them; ``benchmarks/diagnostics_cost.py`` times them): im2col by ``np.pad`` and a strided view
copied by ``reshape``; the bias added in place; pooling by window reshapes, ``argmax`` and
``take_along_axis``; the ReLU by ``np.maximum``; its gradient by the mask ``pooled > 0``;
routing by ``put_along_axis``; the bias gradient by ``sum(axis=1)``; col2im by shifted slice
additions onto a zero padded image. :class:`NumpyNetwork` is the CNN computed with them.
"""

from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from workbench.models.cnn import _DENSE, ConvolutionalNetwork
from workbench.models.network import dense_backward, dense_forward


def numpy_image_columns(images, kernel_size):
    pad = kernel_size // 2
    *leading, height, width, channels = images.shape
    padded = np.pad(images, [(0, 0)] * len(leading) + [(pad, pad), (pad, pad), (0, 0)])
    patches = sliding_window_view(padded, (kernel_size, kernel_size), axis=(-3, -2))
    return patches.reshape(*leading, height * width, channels * kernel_size**2)


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


def numpy_convolve(columns, weight, bias, image_shape):
    n_examples = columns.shape[-3]
    flat = columns.reshape(*columns.shape[:-3], n_examples * columns.shape[-2], columns.shape[-1])
    output = np.matmul(flat, weight)
    output += bias[:, None, :]
    return output.reshape(len(weight), n_examples, *image_shape, weight.shape[-1])


def numpy_pool_activate(output_with_bias):
    """ReLU(pool(·)), the pooled values and the winners."""
    pooled, winner = numpy_max_pool(output_with_bias)
    return np.maximum(pooled, 0.0), pooled, winner


def numpy_pool_backward(delta, pooled, winner):
    """∂/∂(convolution output) and the bias gradient."""
    routed = numpy_max_pool_gradient(delta * (pooled > 0), winner)
    return routed, routed.reshape(len(routed), -1, routed.shape[-1]).sum(axis=1)


def numpy_convolution_gradients(columns, weight, delta, kernel_size, input_gradient):
    n_rows, n_examples, height, width, n_filters = delta.shape
    flat_delta = delta.reshape(n_rows, -1, n_filters)
    flat_columns = columns.reshape(*columns.shape[:-3], -1, columns.shape[-1])
    weight_gradient = np.matmul(np.swapaxes(flat_columns, -1, -2), flat_delta)
    if not input_gradient:
        return weight_gradient, None
    channels = weight.shape[1] // kernel_size**2
    column_delta = np.matmul(flat_delta, np.swapaxes(weight, -1, -2))
    input_delta = numpy_col2im(column_delta.reshape(-1, height, width, column_delta.shape[-1]),
                               kernel_size, channels)
    return weight_gradient, input_delta.reshape(n_rows, n_examples, height, width, channels)


class NumpyNetwork(ConvolutionalNetwork):
    """The CNN with every layer in the numpy formulations above (nothing kept between calls)."""

    def _forward(self, weights, images):
        height, width = images.shape[-3:-1]
        k = self.kernel_size
        columns0 = numpy_image_columns(images, k)
        active0, pooled0, winner0 = numpy_pool_activate(numpy_convolve(
            columns0, weights["conv0.weight"], weights["conv0.bias"], (height, width)))
        columns1 = numpy_image_columns(active0, k)
        active1, pooled1, winner1 = numpy_pool_activate(numpy_convolve(
            columns1, weights["conv1.weight"], weights["conv1.bias"], (height // 2, width // 2)))
        logits, dense_inputs = dense_forward(weights, _DENSE,
                                             active1.reshape(*active1.shape[:2], -1))
        return logits, (columns0, winner0, pooled0, columns1, winner1, pooled1, dense_inputs)

    def _backward(self, weights, cache, delta):
        columns0, winner0, pooled0, columns1, winner1, pooled1, dense_inputs = cache
        gradients: dict[str, np.ndarray] = {}
        delta = dense_backward(weights, _DENSE, dense_inputs, delta, gradients,
                               input_gradient=True)
        delta, gradients["conv1.bias"] = numpy_pool_backward(delta.reshape(pooled1.shape),
                                                             pooled1, winner1)
        gradients["conv1.weight"], delta = numpy_convolution_gradients(
            columns1, weights["conv1.weight"], delta, self.kernel_size, input_gradient=True)
        delta, gradients["conv0.bias"] = numpy_pool_backward(delta, pooled0, winner0)
        gradients["conv0.weight"], _ = numpy_convolution_gradients(
            columns0, weights["conv0.weight"], delta, self.kernel_size, input_gradient=False)
        return gradients
