"""Chen's minibatch gradient of logistic regression on a CSR design as one compiled call,
bit-identical to the SciPy/numpy code it replaces (issue 15: the main job's time went to
SciPy's row fancy-indexing and to per-call numpy steps).

For θ_r, a batch B_r of rows x_i of the design (``indptr``, ``indices``, ``data``;
duplicates summed, indices sorted) and signs s_i = ±1, :func:`gradient_sums` returns
θ_r/σ₀² - (N/n) Σ_{i∈B_r} s_i σ(-s_i x_iᵀθ_r) x_i (seed 001 §5.1, Eq. 1; docs/math.md §1) with
every operation of the former composition, in its order:

- the margin x_iᵀθ_r is summed, as first with ``np.add.reduceat``, over the products
  ``data_j θ_r[indices_j]`` of the row: numpy's reduceat seeds a segment's sum with its first
  element and adds the pairwise sum of the rest (numpy's ``pairwise_sum``: a running sum
  from -0.0 below 8 terms, 8 interleaved partial sums up to 128, halves above, as
  :func:`workbench.gradients.minibatch.batch_sum` documents). :func:`_row_margin` forms each product
  as it adds it, which is 2.4 times faster than a buffer of products summed by the engine
  kernel's ``pairwise_total`` (kept for rows of more than 129 non-zeros). An empty row's
  margin is +0.0, as the old code left it;
- the weight is ``s * expit(-s * margin)`` with SciPy's expit formula (:func:`_expit`);
- the sum Σ w x_i, formerly ``np.bincount(coordinate, data * w[example])``, adds the
  products into a zero-initialised sum one at a time in the order (batch member, column);
- then ``-(N/n) * sum`` and ``θ/σ₀² + …`` element by element, as
  :class:`workbench.models.per_example.PerExampleGradient` does with numpy.

Each replicate's rows are read in place, one row at a time (margin, weight, then its
products while the row is in cache). Rows drawn at random from a design of a few MB miss the
cache: reading them one after another, a row's heavy arithmetic leaves the processor few
reads in flight (about 240 ns a row of a9a, against 53 ns in cache). The kernel therefore
prefetches the non-zeros of the row :data:`AHEAD` = 8 rows on (and its ``indptr`` entry 16
on), which has no effect on any value. Measured on this 2-core machine (a9a-shaped design,
process time, medians of 30 interleaved rounds): 31/83/219/653 µs a call for 40 × 10,
24 × 50, 64 × 50 and 192 × 50 batch rows, against 42/123/326/867 µs in place without
prefetching, 83/151/314/823 µs with SciPy's row gather first (the former rule from 800
rows) and 51/162/337/873 µs for the former composition; 16 rows ahead was no better.
benchmarks/model_gradients.py measures fused against former in one run.
The full-data passes of ``LogisticRegression`` on a CSR design (:func:`full_gradient`,
:func:`margins`; the section "full-data passes" below) keep SciPy's sparse products' order
instead. No fastmath (no reassociation, no fused multiply-add), as in
:mod:`workbench.engine.compiled`.
Tests (tests/workbench/models/test_csr_kernels.py) compare every entry point with the
replaced code kept there, bit for bit.
"""

from __future__ import annotations

import math

import numba
import numpy as np
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic
from scipy import sparse

from workbench.gradients.gathered_sums import pairwise_total

AHEAD = 8  # batch rows read ahead: their non-zeros prefetched (measured, module docstring)


@intrinsic
def _prefetch(typingctx, array, index):
    """Ask the processor to bring ``array[index]``'s cache line in (LLVM's ``llvm.prefetch``:
    a read, kept in all cache levels); no value, so no effect on any result."""
    def codegen(context, builder, signature, args):
        array_type = signature.args[0]
        view = context.make_array(array_type)(context, builder, args[0])
        pointer = cgutils.get_item_pointer(context, builder, array_type, view, [args[1]],
                                           wraparound=False)
        byte_pointer, int32 = ir.IntType(8).as_pointer(), ir.IntType(32)
        function = builder.module.declare_intrinsic(
            "llvm.prefetch", [byte_pointer],
            ir.FunctionType(ir.VoidType(), [byte_pointer, int32, int32, int32]))
        builder.call(function, [builder.bitcast(pointer, byte_pointer),
                                int32(0), int32(3), int32(1)])  # read, keep, data cache
        return context.get_dummy_value()
    return types.void(array, index), codegen


@numba.njit(cache=True)
def _prefetch_row(indptr, indices, data, row):
    """Prefetch a CSR row's non-zeros: every cache line of its ``data`` and ``indices``."""
    first, end = indptr[row], indptr[row + 1]
    for j in range(first, end, 8):  # 8 float64 a 64-byte line
        _prefetch(data, j)
    for j in range(first, end, 16):  # 16 int32
        _prefetch(indices, j)
    if end > first:
        _prefetch(data, end - 1)
        _prefetch(indices, end - 1)

@numba.njit(cache=True)
def _product(data, indices, theta, j):
    return data[j] * theta[indices[j]]


@numba.njit(cache=True)
def _row_margin(data, indices, theta, first, count):
    """reduceat's sum of one non-empty row's products: the first + the pairwise sum of the
    rest, in numpy's order (module docstring), the products formed as they are added."""
    head = _product(data, indices, theta, first)
    start, rest = first + 1, count - 1
    if rest < 8:
        total = -0.0
        for j in range(start, start + rest):
            total += _product(data, indices, theta, j)
        return head + total
    if rest > 128:  # the halving: products into a buffer, summed as the engine kernel does
        products = np.empty((rest, 1))
        for j in range(rest):
            products[j, 0] = _product(data, indices, theta, start + j)
        return head + pairwise_total(products, np.arange(rest), np.int64(0), rest)
    p0 = _product(data, indices, theta, start)
    p1 = _product(data, indices, theta, start + 1)
    p2 = _product(data, indices, theta, start + 2)
    p3 = _product(data, indices, theta, start + 3)
    p4 = _product(data, indices, theta, start + 4)
    p5 = _product(data, indices, theta, start + 5)
    p6 = _product(data, indices, theta, start + 6)
    p7 = _product(data, indices, theta, start + 7)
    tail = rest - rest % 8
    for j in range(start + 8, start + tail, 8):
        p0 += _product(data, indices, theta, j)
        p1 += _product(data, indices, theta, j + 1)
        p2 += _product(data, indices, theta, j + 2)
        p3 += _product(data, indices, theta, j + 3)
        p4 += _product(data, indices, theta, j + 4)
        p5 += _product(data, indices, theta, j + 5)
        p6 += _product(data, indices, theta, j + 6)
        p7 += _product(data, indices, theta, j + 7)
    total = (p0 + p1) + (p2 + p3)
    total += (p4 + p5) + (p6 + p7)
    for j in range(start + tail, start + rest):
        total += _product(data, indices, theta, j)
    return head + total


@numba.njit(cache=True)
def _expit(x):
    """scipy.special.expit for float64: SciPy's xsf library computes ``1 / (1 + exp(-x))``
    with the C library's ``exp``, which numba's ``math.exp`` calls too (bit for bit, test
    ``test_expit_is_scipys``)."""
    return 1.0 / (1.0 + math.exp(-x))


@numba.njit(cache=True)
def _gradient_sums(indptr, indices, data, signs, rows, theta, scale, with_prior, precision,
                   out):
    """``out[r] = precision θ_r + scale Σ_k w_rk x_{rows[r, k]}`` (the prior term only
    ``with_prior``), w_rk = s σ(-s x_iᵀθ_r) for i = rows[r, k], s = signs[i]: the
    replaced composition's operations in its order (module docstring), one row at a time,
    the non-zeros of the row :data:`AHEAD` rows on and the ``indptr`` entry twice as far
    on prefetched."""
    n_rows, batch_size = rows.shape
    dim = out.shape[1]
    order = rows.ravel()
    n_total = order.size
    for t in range(min(2 * AHEAD, n_total)):
        _prefetch(indptr, order[t])
    for t in range(min(AHEAD, n_total)):
        _prefetch_row(indptr, indices, data, order[t])
    sums = np.empty(dim)
    for r in range(n_rows):
        position = theta[r]
        sums[:] = 0.0
        for k in range(batch_size):
            t = r * batch_size + k
            if t + 2 * AHEAD < n_total:
                _prefetch(indptr, order[t + 2 * AHEAD])
            if t + AHEAD < n_total:
                _prefetch_row(indptr, indices, data, order[t + AHEAD])
            row = rows[r, k]
            first = indptr[row]
            count = indptr[row + 1] - first
            margin = _row_margin(data, indices, position, first, count) if count else 0.0
            sign = signs[row]
            weight = sign * _expit(-sign * margin)
            for j in range(first, first + count):
                sums[indices[j]] += data[j] * weight
        for c in range(dim):
            if with_prior:
                out[r, c] = precision * position[c] + scale * sums[c]
            else:
                out[r, c] = scale * sums[c]


def gradient_sums(design: sparse.csr_matrix, signs: np.ndarray, theta: np.ndarray,
                  rows: np.ndarray, scale: float = 1.0, precision: float | None = None
                  ) -> np.ndarray:
    """``precision·θ + scale·Σ_{i∈rows[r]} s_i σ(-s_i x_iᵀθ_r) x_i``, shape ``(R, d)``, for
    ``theta`` ``(R, d)`` and ``rows`` ``(R, n)`` (the prior term only when ``precision`` is
    given): one compiled call on the design's own arrays. Bit for bit the former
    composition ``signs * expit(-signs * margins)`` → weighted row sums → ``scale * sums`` →
    ``precision * θ + …`` (module docstring)."""
    out = np.empty(theta.shape)
    with_prior = precision is not None
    _gradient_sums(design.indptr, design.indices, design.data, signs,
                   np.ascontiguousarray(rows), np.ascontiguousarray(theta, dtype=float),
                   float(scale), with_prior, float(precision) if with_prior else 0.0, out)
    return out


# ------------------------------------------------------------------ full-data passes
# The full-data potential, gradient and held-out log-probabilities (``LogisticRegression``)
# formerly went through SciPy's sparse products, whose order of additions these passes keep:
# ``design @ theta.T`` is sparsetools' ``csr_matvecs`` (``csr_matvec`` for one position):
# for each row i, for each stored entry j of the row in order, y[i, b] += data_j θ_b[col_j],
# from a zero-filled result; ``design.T @ weights.T`` runs on the transpose, a CSC matrix on
# the same three arrays, with ``csc_matvecs`` (``csc_matvec``): for each CSR row i in order,
# for each entry (i, c) in order, out[c, b] += data_j w_b[i], from zeros. Every accumulator
# (one row and position, one column and position) therefore sees its terms in the same order
# whatever the loop over positions, which lets a pass take one position at a time (a sweep of
# the design each, sums in registers) or, from :data:`VECTOR_FROM` positions, all positions
# of a row together as SciPy does (the position loop innermost; the design read once for each
# :data:`POSITION_BLOCK` positions, transposed to ``(d, block)``: per position 66 µs with 524
# positions on a 8,000-row a9a-like design, 85 µs with 4,400 in one sweep).
#
# Indices are unsigned (the design's ``indptr`` and ``indices`` viewed as ``uint32``, loop
# counters ``uint64``): numba then skips the test for negative (wrap-around) indices that it
# otherwise puts on every access, which made a signed loop 1.6-2.3 times slower than SciPy's.

VECTOR_FROM = 8  # positions from which the passes run over positions innermost (measured)
POSITION_BLOCK = 512  # positions a sweep of the design then (their sums stay in cache)


@numba.njit(cache=True)
def _row_margin_of(indptr, indices, data, position, i):
    """x_iᵀθ as csr_matvec sums it: 0.0 + data_j θ[col_j] for the row's entries in order."""
    total = 0.0
    for j in range(np.uint64(indptr[i]), np.uint64(indptr[i + np.uint64(1)])):
        total += data[j] * position[indices[j]]
    return total


@numba.njit(cache=True)
def _row_margins_of(indptr, indices, data, theta_t, i, out):
    """x_iᵀθ_b for every position as csr_matvecs sums them (``theta_t`` ``(d, B)``): 0.0 +
    data_j θ_b[col_j] for the row's entries in order, into ``out`` ``(B,)``."""
    n_positions = np.uint64(out.size)
    for b in range(n_positions):
        out[b] = 0.0
    for j in range(np.uint64(indptr[i]), np.uint64(indptr[i + np.uint64(1)])):
        value, column = data[j], theta_t[indices[j]]
        for b in range(n_positions):
            out[b] += value * column[b]


@numba.njit(cache=True)
def _transposed(theta, start, stop):
    """Positions ``theta[start:stop]`` as a contiguous ``(d, stop - start)`` block."""
    block = np.empty((theta.shape[1], stop - start))
    for b in range(stop - start):
        for c in range(theta.shape[1]):
            block[c, b] = theta[start + b, c]
    return block


@numba.njit(cache=True)
def _margins(indptr, indices, data, theta, out):
    """``out[i, b] = x_iᵀθ_b``, shape ``(N, B)``: csr_matvecs' sums (above)."""
    n_rows = np.uint64(indptr.size - 1)
    n_positions = theta.shape[0]
    if n_positions < VECTOR_FROM:
        for b in range(n_positions):
            position = theta[b]
            for i in range(n_rows):
                out[i, b] = _row_margin_of(indptr, indices, data, position, i)
        return
    for start in range(0, n_positions, POSITION_BLOCK):
        stop = min(start + POSITION_BLOCK, n_positions)
        theta_t = _transposed(theta, start, stop)
        row = np.empty(stop - start)
        for i in range(n_rows):
            _row_margins_of(indptr, indices, data, theta_t, i, row)
            for b in range(stop - start):  # a loop: an array assigned to a slice compiles
                out[i, start + b] = row[b]  # numba's formatted shape error (seconds)


@numba.njit(cache=True)
def _full_gradient(indptr, indices, data, signs, theta, prior_variance, out):
    """``out[b] = θ_b/σ₀² - Σ_i s_i σ(-s_i x_iᵀθ_b) x_i`` over every row of the design:
    the margin summed as csr_matvecs does, the weight ``s · expit(-s · margin)`` as the numpy
    steps formed it (``-s`` times the margin, :func:`_expit` is SciPy's, times ``s``), the
    weighted rows summed as csc_matvecs does (above), then ``θ / σ₀² - sums`` element by
    element."""
    n_rows = np.uint64(indptr.size - 1)
    n_positions, dim = np.uint64(theta.shape[0]), np.uint64(theta.shape[1])
    if n_positions < VECTOR_FROM:
        sums = np.empty(dim)
        for b in range(n_positions):
            position = theta[b]
            sums[:] = 0.0
            for i in range(n_rows):
                margin = _row_margin_of(indptr, indices, data, position, i)
                sign = signs[i]
                weight = sign * _expit(-sign * margin)
                for j in range(np.uint64(indptr[i]), np.uint64(indptr[i + np.uint64(1)])):
                    sums[indices[j]] += data[j] * weight
            for c in range(dim):
                out[b, c] = position[c] / prior_variance - sums[c]
        return
    for start in range(0, theta.shape[0], POSITION_BLOCK):
        stop = min(start + POSITION_BLOCK, theta.shape[0])
        theta_t = _transposed(theta, start, stop)
        sums_t = np.zeros((dim, np.uint64(stop - start)))
        weights = np.empty(np.uint64(stop - start))
        size = np.uint64(weights.size)
        for i in range(n_rows):
            _row_margins_of(indptr, indices, data, theta_t, i, weights)
            sign = signs[i]
            for b in range(size):
                weights[b] = sign * _expit(-sign * weights[b])
            for j in range(np.uint64(indptr[i]), np.uint64(indptr[i + np.uint64(1)])):
                value, column = data[j], sums_t[indices[j]]
                for b in range(size):
                    column[b] += value * weights[b]
        for b in range(stop - start):
            for c in range(dim):
                out[start + b, c] = theta_t[c, b] / prior_variance - sums_t[c, b]


def _unsigned(design: sparse.csr_matrix) -> tuple[np.ndarray, np.ndarray]:
    """The design's ``indptr`` and ``indices`` as unsigned views (no copy; both are
    non-negative), for the passes' unchecked indexing (above)."""
    return (design.indptr.view(np.uint32 if design.indptr.dtype == np.int32 else np.uint64),
            design.indices.view(np.uint32 if design.indices.dtype == np.int32
                                else np.uint64))


def margins(design: sparse.csr_matrix, theta: np.ndarray) -> np.ndarray:
    """x_iᵀθ_b, shape ``(B, N)`` for ``theta`` ``(B, d)``: SciPy's ``(design @ theta.T).T``
    bit for bit and in its memory layout (the transpose of an ``(N, B)`` array, on which
    numpy's later reductions' order depends)."""
    theta = np.ascontiguousarray(theta, dtype=float)
    out = np.empty((design.shape[0], theta.shape[0]))
    _margins(*_unsigned(design), design.data, theta, out)
    return out.T


def full_gradient(design: sparse.csr_matrix, signs: np.ndarray, theta: np.ndarray,
                  prior_variance: float) -> np.ndarray:
    """θ_b/σ₀² - Σ_i s_i σ(-s_i x_iᵀθ_b) x_i over the whole design, shape ``(B, d)`` for
    ``theta`` ``(B, d)``: one compiled pass, bit for bit the SciPy products and numpy steps
    it replaces (above), its memory the output and ``(d, block)`` positions and sums."""
    theta = np.ascontiguousarray(theta, dtype=float)
    out = np.empty(theta.shape)
    _full_gradient(*_unsigned(design), design.data, signs, theta, float(prior_variance), out)
    return out
