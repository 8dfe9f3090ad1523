"""Convolution and max pooling by im2col, batched over replicates (for :mod:`workbench.models.cnn`).

Images are channel-last, ``(..., H, W, C)``. A "same" convolution with an odd k × k kernel pads
by k // 2 and gathers every k × k × C patch into a row (im2col), so the layer is one batched
matrix product with the replicate's weights ``(R, C·k·k, F)``:

    columns: (R, n·H·W, C·k·k)  (or shared (N·H·W, C·k·k) for a data set every replicate sees)
    output = columns @ weight → (R, n, H, W, F); the bias is added where the output is pooled.

Each convolution of the CNN is followed by 2 × 2 max pooling (stride 2) and a ReLU (seed 001
§5.2's LeNet); :func:`pool_activate` does bias, pooling and ReLU in one pass and records, per
window, its arg-max and whether the ReLU passed it (its "route"). Tied windows (blank image
areas give identical outputs) are differentiated as a single winner, as finite differences
see them. The backward pass is the transpose: :func:`pool_backward` routes ∂/∂activation to
the winners (zero where the ReLU was off) and sums it into the bias gradient; the weight
gradient is columnsᵀ · δ (summed over examples and pixels in the product) and the input
gradient δ · weightᵀ scattered back onto the padded image (col2im: each input pixel sums its
k² patch entries, kernel row by row).

Bit for bit: the matrix products are numpy's, with the operands and shapes they always had
(those fix the BLAS summation order). Everything else is a compiled loop (numba,
``cache=True``, no fastmath) writing its result once, in place of numpy's padded copies,
strided-view reshapes, masks and ``take``/``put_along_axis`` temporaries, and computing every
number as numpy did: im2col and pooling only copy numbers; the bias is added by the same
single addition before the comparison; the ReLU keeps ``np.maximum(p, 0.0)``'s values (+0.0
for both zeros, a NaN passed on); the routed gradient is the product ``δ · 1.0`` or ``δ · 0.0``
of ``δ * (pooled > 0)``; the bias gradient adds, from +0.0, the pixels in order, as numpy's
``sum(axis=1)`` of an ``(R, M, F)`` array does when F > 1 (with F = 1 numpy sums the
contiguous axis pairwise, so that case is left to numpy); col2im adds from zero the kernel
offsets (0, 0), (0, 1), … as the shifted slice additions did. The tests compare every kernel
with those numpy formulations.
"""

from __future__ import annotations

import math

import numba
import numpy as np

_INACTIVE = 4  # added to a window's route when the ReLU after it is off


def image_columns(images: np.ndarray, kernel_size: int) -> np.ndarray:
    """im2col: ``(..., H, W, C)`` → ``(..., H·W, C·k·k)`` patches of a same-padded image,
    column ``(c·k + i)·k + j`` holding channel c at kernel offset (i, j)."""
    *leading, height, width, channels = images.shape
    flat = np.ascontiguousarray(images, dtype=float).reshape(-1, height, width, channels)
    columns = np.empty((len(flat), height * width, channels * kernel_size**2))
    _image_columns(flat, kernel_size, columns)
    return columns.reshape(*leading, height * width, channels * kernel_size**2)


@numba.njit(cache=True)
def _image_columns(images, kernel_size, columns):
    """Fills ``columns`` ``(B, H·W, C·k·k)``: each image is copied once into a zero-bordered
    channel-major scratch, from which every patch row is read in column order."""
    n_images, height, width, channels = images.shape
    pad = kernel_size // 2
    padded = np.zeros((channels, height + 2 * pad, width + 2 * pad))
    for b in range(n_images):
        for y in range(height):
            for x in range(width):
                for c in range(channels):
                    padded[c, y + pad, x + pad] = images[b, y, x, c]
        for y in range(height):
            for x in range(width):
                row = columns[b, y * width + x]
                for c in range(channels):
                    for i in range(kernel_size):
                        start = (c * kernel_size + i) * kernel_size
                        for j in range(kernel_size):
                            row[start + j] = padded[c, y + i, x + j]


def convolve(columns: np.ndarray, weight: np.ndarray, image_shape: tuple[int, int]) -> np.ndarray:
    """Convolution output without the bias, ``(R, n, H, W, F)``, from im2col ``columns``
    ``(..., n, H·W, Ckk)`` and weights ``(R, Ckk, F)``."""
    n_examples = columns.shape[-3]
    flat = columns.reshape(*columns.shape[:-3], n_examples * columns.shape[-2], columns.shape[-1])
    output = np.matmul(flat, weight)
    return output.reshape(len(weight), n_examples, *image_shape, weight.shape[-1])


def pool_activate(output: np.ndarray, bias: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """ReLU(2 × 2 max pool(output + bias)) of ``output`` ``(R, n, H, W, F)`` (H, W even),
    bias ``(R, F)``, and each window's route (int8): the arg-max 0..3 (row-major offset in the
    window; the first maximum, or the first NaN, as numpy's ``argmax`` picks it), plus 4 where
    the ReLU is off (the pooled value is not > 0)."""
    output = np.ascontiguousarray(output, dtype=float)
    n_rows, n_examples, height, width, n_filters = output.shape
    shape = (n_rows, n_examples, height // 2, width // 2, n_filters)
    active, route = np.empty(shape), np.empty(shape, dtype=np.int8)
    _pool_activate(output, np.ascontiguousarray(bias, dtype=float), active, route)
    return active, route


@numba.njit(cache=True)
def _pool_activate(output, bias, active, route):
    n_rows, n_examples, height, width, n_filters = output.shape
    for r in range(n_rows):
        for n in range(n_examples):
            for y in range(height // 2):
                for x in range(width // 2):
                    for f in range(n_filters):
                        best = output[r, n, 2 * y, 2 * x, f] + bias[r, f]
                        index = 0
                        unordered = math.isnan(best)
                        for q in range(1, 4):
                            value = output[r, n, 2 * y + q // 2, 2 * x + q % 2, f] + bias[r, f]
                            unordered |= math.isnan(value)
                            larger = value > best  # strict: a tie keeps the first
                            best = value if larger else best  # selects, not branches
                            index = q if larger else index
                        if unordered:  # a NaN wins, the first one, as argmax picks it
                            for q in range(4):
                                value = (output[r, n, 2 * y + q // 2, 2 * x + q % 2, f]
                                         + bias[r, f])
                                if math.isnan(value):
                                    best, index = value, q
                                    break
                        on = best > 0.0  # np.maximum(best, 0.0): +0.0 for both zeros, NaN kept
                        active[r, n, y, x, f] = best if on or math.isnan(best) else 0.0
                        route[r, n, y, x, f] = index if on else index + _INACTIVE


def pool_backward(delta: np.ndarray, route: np.ndarray,
                  out: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """∂/∂(convolution output) ``(R, n, H, W, F)`` and the bias gradient ``(R, F)`` from
    ∂/∂activation ``delta`` ``(R, n, H/2, W/2, F)`` and :func:`pool_activate`'s ``route``;
    written into ``out`` if given (C-contiguous, as many elements: the convolution output,
    no longer needed, saves allocating and faulting in a new array as large)."""
    delta = np.ascontiguousarray(delta, dtype=float)
    n_rows, n_examples, half_height, half_width, n_filters = delta.shape
    shape = (n_rows, n_examples, 2 * half_height, 2 * half_width, n_filters)
    routed = np.empty(shape) if out is None else out.reshape(shape)
    bias_gradient = np.zeros((n_rows, n_filters))
    _pool_backward(delta, route, routed, bias_gradient)
    if delta.shape[-1] == 1:  # numpy's pairwise sum over the (then contiguous) pixel axis
        bias_gradient = routed.reshape(len(routed), -1, 1).sum(axis=1)
    return routed, bias_gradient


@numba.njit(cache=True)
def _pool_backward(delta, route, routed, bias_gradient):
    """Writes ``routed`` and adds its pixels, in order, to ``bias_gradient`` (zeros)."""
    n_rows, n_examples, half_height, half_width, n_filters = delta.shape
    for r in range(n_rows):
        for n in range(n_examples):
            for y in range(2 * half_height):
                for x in range(2 * half_width):
                    q = 2 * (y % 2) + x % 2  # this pixel's place in its window
                    for f in range(n_filters):
                        window = route[r, n, y // 2, x // 2, f]
                        gate = 1.0 if window < _INACTIVE else 0.0
                        chosen = (window & 3) == q  # the arg-max, whether or not inactive
                        value = delta[r, n, y // 2, x // 2, f] * gate if chosen else 0.0  # a select
                        routed[r, n, y, x, f] = value
                        bias_gradient[r, f] += value


def convolution_gradients(columns: np.ndarray, weight: np.ndarray, delta: np.ndarray,
                          kernel_size: int, input_gradient: bool,
                          overwrite_columns: bool = False):
    """Weight gradient ``(R, Ckk, F)`` and ∂/∂input ``(R, n, H, W, C)`` of a convolution.

    ``delta``: ∂/∂output ``(R, n, H, W, F)`` (the bias gradient comes with it from
    :func:`pool_backward`). The input gradient (col2im) is computed only when asked for: the
    first layer's input is the data. With ``overwrite_columns`` (per-replicate ``columns``
    no longer needed), ∂/∂columns, of their shape, is written over them instead of into a
    new array as large.
    """
    n_rows, n_examples, height, width, n_filters = delta.shape
    flat_delta = delta.reshape(n_rows, -1, n_filters)
    flat_columns = columns.reshape(*columns.shape[:-3], -1, columns.shape[-1])
    weight_gradient = np.matmul(np.swapaxes(flat_columns, -1, -2), flat_delta)
    if not input_gradient:
        return weight_gradient, None
    channels = weight.shape[1] // kernel_size**2
    column_delta = np.matmul(flat_delta, np.swapaxes(weight, -1, -2),
                             out=flat_columns if overwrite_columns else None)
    input_delta = np.empty((n_rows * n_examples, height, width, channels))
    _column_image(column_delta.reshape(-1, height, width, column_delta.shape[-1]), kernel_size,
                  input_delta)
    return weight_gradient, input_delta.reshape(n_rows, n_examples, height, width, channels)


@numba.njit(cache=True)
def _column_image(column_delta, kernel_size, image):
    """col2im: ∂/∂input ``image`` ``(B, H, W, C)`` from ∂/∂columns ``(B, H, W, C·k·k)``; every
    pixel adds, from zero, the entries of the patches that cover it, kernel offset (i, j) in
    row-major order (the order of the shifted slice additions onto a zero padded image)."""
    n_images, height, width, channels = image.shape
    pad = kernel_size // 2
    total = np.empty(channels)  # one running sum a channel, side by side
    for b in range(n_images):
        for y in range(height):
            rows = max(0, y + pad - height + 1), min(kernel_size, y + pad + 1)  # i inside
            for x in range(width):
                cols = max(0, x + pad - width + 1), min(kernel_size, x + pad + 1)  # j inside
                total[:] = 0.0
                for i in range(rows[0], rows[1]):
                    for j in range(cols[0], cols[1]):
                        patch = column_delta[b, y + pad - i, x + pad - j]
                        for c in range(channels):
                            total[c] += patch[(c * kernel_size + i) * kernel_size + j]
                image[b, y, x] = total
