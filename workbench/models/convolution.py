"""Convolution and max pooling by im2col, batched over replicates (for :mod:`workbench.models.cnn`).

Images are channel-last, ``(..., H, W, C)``. A "same" convolution with an odd k × k kernel pads
by k // 2 and gathers every k × k × C patch into a row (im2col), so the layer is one batched
matrix product with the replicate's weights ``(R, C·k·k, F)``:

    columns: (R, n·H·W, C·k·k)  (or shared (N·H·W, C·k·k) for a data set every replicate sees)
    output = columns @ weight + bias → (R, n, H, W, F).

The backward pass is the transpose: weight gradient columnsᵀ · δ (summed over examples and
pixels in the product), input gradient δ · weightᵀ scattered back onto the padded image
(col2im: k² shifted slice additions). Max pooling uses 2 × 2 windows with stride 2 and routes
the gradient to one arg-max per window, so tied windows (blank image areas give identical
outputs) are differentiated as a single winner, as finite differences see them.
"""

from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view


def image_columns(images: np.ndarray, kernel_size: int) -> np.ndarray:
    """im2col: ``(..., H, W, C)`` → ``(..., H·W, C·k·k)`` patches of a same-padded image."""
    pad = kernel_size // 2
    *leading, height, width, channels = images.shape
    padded = np.pad(images, [(0, 0)] * len(leading) + [(pad, pad), (pad, pad), (0, 0)])
    patches = sliding_window_view(padded, (kernel_size, kernel_size), axis=(-3, -2))
    return patches.reshape(*leading, height * width, channels * kernel_size**2)


def convolve(columns: np.ndarray, weight: np.ndarray, bias: np.ndarray,
             image_shape: tuple[int, int]) -> np.ndarray:
    """Convolution output ``(R, n, H, W, F)`` from im2col ``columns`` ``(..., n, H·W, Ckk)``."""
    n_examples = columns.shape[-3]
    flat = columns.reshape(*columns.shape[:-3], n_examples * columns.shape[-2], columns.shape[-1])
    output = np.matmul(flat, weight) + bias[:, None, :]
    return output.reshape(len(weight), n_examples, *image_shape, weight.shape[-1])


def convolution_gradients(columns: np.ndarray, weight: np.ndarray, delta: np.ndarray,
                          kernel_size: int, input_gradient: bool):
    """Weight and bias gradients ``(R, Ckk, F)``, ``(R, F)``, and ∂/∂input ``(R, n, H, W, C)``.

    ``delta``: ∂/∂output ``(R, n, H, W, F)``. The input gradient (col2im) is computed only
    when asked for: the first layer's input is the data.
    """
    n_rows, n_examples, height, width, n_filters = delta.shape
    flat_delta = delta.reshape(n_rows, -1, n_filters)
    flat_columns = columns.reshape(*columns.shape[:-3], -1, columns.shape[-1])
    weight_gradient = np.matmul(np.swapaxes(flat_columns, -1, -2), flat_delta)
    bias_gradient = flat_delta.sum(axis=1)
    if not input_gradient:
        return weight_gradient, bias_gradient, None
    channels = weight.shape[1] // kernel_size**2
    column_delta = np.matmul(flat_delta, np.swapaxes(weight, -1, -2)).reshape(
        n_rows, n_examples, height, width, channels, kernel_size, kernel_size)
    pad = kernel_size // 2
    padded = np.zeros((n_rows, n_examples, height + 2 * pad, width + 2 * pad, channels))
    for i in range(kernel_size):
        for j in range(kernel_size):
            padded[:, :, i:i + height, j:j + width] += column_delta[..., i, j]
    return weight_gradient, bias_gradient, padded[:, :, pad:pad + height, pad:pad + width]


def max_pool(images: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """2 × 2 max pooling of ``(..., H, W, F)`` (H, W even) and the arg-max of each window."""
    *leading, height, width, n_filters = images.shape
    windows = images.reshape(*leading, height // 2, 2, width // 2, 2, n_filters)
    windows = np.moveaxis(windows, (-4, -2), (-2, -1)).reshape(
        *leading, height // 2, width // 2, n_filters, 4)
    winner = windows.argmax(axis=-1)
    return np.take_along_axis(windows, winner[..., None], axis=-1)[..., 0], winner


def max_pool_gradient(delta: np.ndarray, winner: np.ndarray) -> np.ndarray:
    """Route ∂/∂pooled ``(..., H/2, W/2, F)`` to each window's arg-max: ``(..., H, W, F)``."""
    *leading, half_height, half_width, n_filters = delta.shape
    windows = np.zeros(delta.shape + (4,))
    np.put_along_axis(windows, winner[..., None], delta[..., None], axis=-1)
    windows = np.moveaxis(windows.reshape(*delta.shape, 2, 2), (-2, -1), (-4, -2))
    return windows.reshape(*leading, 2 * half_height, 2 * half_width, n_filters)
