"""Convolution and max pooling by im2col, batched over replicates (for :mod:`workbench.models.cnn`).

Images are channel-last, ``(..., H, W, C)``. A "same" convolution with an odd k × k kernel pads
by k // 2 and gathers every k × k × C patch into a row (im2col), so the layer is one batched
matrix product with the replicate's weights ``(R, C·k·k, F)``:

    columns: (R, n·H·W, C·k·k)  (or shared (N·H·W, C·k·k) for a data set every replicate sees)
    output = columns @ weight + bias → (R, n, H, W, F).

The backward pass is the transpose: weight gradient columnsᵀ · δ (summed over examples and
pixels in the product), input gradient δ · weightᵀ scattered back onto the padded image
(col2im: each input pixel sums its k² patch entries, kernel row by row). Max pooling uses 2 × 2
windows with stride 2 and routes the gradient to one arg-max per window, so tied windows
(blank image areas give identical outputs) are differentiated as a single winner, as finite
differences see them.

The matrix products are numpy's (their operands and shapes fix the BLAS summation order), and
so is im2col (a strided view copied once by ``reshape``, as fast as a loop). col2im, pooling
and its gradient are compiled loops over the pixels (numba, ``cache=True``, no fastmath)
writing their results once, instead of numpy's padded copies, window reshapes and
``take``/``put_along_axis`` temporaries; they copy the same numbers and add col2im's terms in
the same order (zero, then kernel offset (0, 0), (0, 1), … as the shifted slice additions
did), so every value is unchanged bit for bit (the tests compare with those numpy
formulations).
"""

from __future__ import annotations

import math

import numba
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
    output = np.matmul(flat, weight)
    output += bias[:, None, :]
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
    column_delta = np.matmul(flat_delta, np.swapaxes(weight, -1, -2))
    input_delta = _column_image(column_delta.reshape(-1, height, width, column_delta.shape[-1]),
                                kernel_size, channels)
    return weight_gradient, bias_gradient, input_delta.reshape(n_rows, n_examples, height,
                                                               width, channels)


@numba.njit(cache=True)
def _column_image(column_delta, kernel_size, channels):
    """col2im: ∂/∂input ``(B, H, W, C)`` from ∂/∂columns ``(B, H, W, C·k·k)``; every pixel
    adds, from zero, the entries of the patches that cover it, kernel offset (i, j) in row-major
    order (the order of the shifted slice additions onto a zero padded image)."""
    n_images, height, width, _ = column_delta.shape
    pad = kernel_size // 2
    image = np.zeros((n_images, height, width, channels))
    for b in range(n_images):
        for y in range(height):
            for x in range(width):
                pixel = image[b, y, x]
                for i in range(kernel_size):
                    h = y + pad - i
                    if 0 <= h < height:
                        for j in range(kernel_size):
                            w = x + pad - j
                            if 0 <= w < width:
                                patch = column_delta[b, h, w]
                                for c in range(channels):
                                    pixel[c] += patch[(c * kernel_size + i) * kernel_size + j]
    return image


def max_pool(images: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """2 × 2 max pooling of ``(..., H, W, F)`` (H, W even) and the arg-max of each window
    (0..3 = row-major offset in the window; the first maximum, or the first NaN, as numpy's
    ``argmax`` picks it)."""
    *leading, height, width, n_filters = images.shape
    flat = np.ascontiguousarray(images, dtype=float).reshape(-1, height, width, n_filters)
    pooled, winner = _max_pool(flat)
    shape = (*leading, height // 2, width // 2, n_filters)
    return pooled.reshape(shape), winner.reshape(shape)


@numba.njit(cache=True)
def _max_pool(images):
    n_images, height, width, n_filters = images.shape
    pooled = np.empty((n_images, height // 2, width // 2, n_filters))
    winner = np.empty((n_images, height // 2, width // 2, n_filters), dtype=np.int64)
    for b in range(n_images):
        for y in range(height // 2):
            for x in range(width // 2):
                for f in range(n_filters):
                    best = images[b, 2 * y, 2 * x, f]
                    index = 0
                    if not math.isnan(best):
                        for q in range(1, 4):
                            value = images[b, 2 * y + q // 2, 2 * x + q % 2, f]
                            if not value <= best:  # larger, or NaN (which then wins)
                                best = value
                                index = q
                                if math.isnan(value):
                                    break
                    pooled[b, y, x, f] = best
                    winner[b, y, x, f] = index
    return pooled, winner


def max_pool_gradient(delta: np.ndarray, winner: np.ndarray) -> np.ndarray:
    """Route ∂/∂pooled ``(..., H/2, W/2, F)`` to each window's arg-max: ``(..., H, W, F)``."""
    *leading, half_height, half_width, n_filters = delta.shape
    flat = np.ascontiguousarray(delta, dtype=float).reshape(-1, half_height, half_width,
                                                            n_filters)
    routed = _max_pool_gradient(flat, np.ascontiguousarray(winner).reshape(flat.shape))
    return routed.reshape(*leading, 2 * half_height, 2 * half_width, n_filters)


@numba.njit(cache=True)
def _max_pool_gradient(delta, winner):
    n_images, half_height, half_width, n_filters = delta.shape
    routed = np.empty((n_images, 2 * half_height, 2 * half_width, n_filters))
    for b in range(n_images):
        for y in range(2 * half_height):
            for x in range(2 * half_width):
                q = 2 * (y % 2) + x % 2  # this pixel's place in its window
                for f in range(n_filters):
                    chosen = winner[b, y // 2, x // 2, f] == q
                    routed[b, y, x, f] = delta[b, y // 2, x // 2, f] if chosen else 0.0
    return routed
