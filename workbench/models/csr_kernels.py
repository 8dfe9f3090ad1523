"""Compiled CSR minibatch products for logistic regression, bit-identical to the SciPy/numpy
code they replace (issue 15: the main job's time went to SciPy's row fancy-indexing and
per-call overhead).

Logistic regression (seed 001 §5.1; :mod:`workbench.models.logistic`) needs, on a CSR design
with rows x_i (``indptr``, ``indices``, ``data``; duplicates summed, indices sorted):

- minibatch margins x_iᵀθ_r for the rows i of replicate r's batch (:func:`batch_margins`),
  summed, as before with ``np.add.reduceat``, over the products ``data_j θ_r[indices_j]``
  of each row. The rows are read in place for small batches and gathered by SciPy first
  for large ones (:func:`batch_rows`; benchmarks/model_gradients.py: reading rows scattered
  over a 32,561-row design costs more than SciPy's gather from about 1,000 rows on, and
  less than its fixed cost below). Numpy's reduceat seeds a segment's sum with
  its first element and adds the pairwise sum of the rest (numpy's ``pairwise_sum``: a
  running sum from -0.0 below 8 terms, 8 interleaved partial sums up to 128, halves above,
  as :func:`workbench.minibatch.batch_sum` documents): :func:`_row_margin` forms each product
  as it adds it, which is 2.4 times faster than a buffer of products summed by the engine
  kernel's ``_pairwise_total`` (kept for rows of more than 129 non-zeros). An empty row's
  margin is 0.0, as the old code left it;
- minibatch gradient sums Σ_{i∈B_r} w_ri x_i (:func:`batch_weighted_rows`), formerly
  ``np.bincount(coordinate, data * w[example])``: products formed first, then added into a
  zero-initialised sum one at a time in the order of the gathered non-zeros (replicate,
  batch member, column), which is this loop's order.

No fastmath (no reassociation, no fused multiply-add), as in :mod:`workbench.engine_kernel`.
The transcendental functions (``expit``, ``logaddexp``) stay in numpy/SciPy between the
kernels, so their bits are the library's. Tests (tests/workbench/models/test_csr_kernels.py)
compare each kernel with the replaced code kept there, bit for bit.
"""

from __future__ import annotations

from typing import NamedTuple

import numba
import numpy as np
from scipy import sparse

from workbench.engine_kernel import _pairwise_total

GATHER_FROM = 800  # batch rows from which they are gathered first (measured, module docstring)


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
        return head + _pairwise_total(products, np.arange(rest), 0, rest)
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
def _batch_margins(indptr, indices, data, rows, theta):
    n_rows, batch_size = rows.shape
    out = np.zeros((n_rows, batch_size))
    for r in range(n_rows):
        for k in range(batch_size):
            first = indptr[rows[r, k]]
            count = indptr[rows[r, k] + 1] - first
            if count:
                out[r, k] = _row_margin(data, indices, theta[r], first, count)
    return out


@numba.njit(cache=True)
def _batch_weighted_rows(indptr, indices, data, rows, weights, dim):
    n_rows, batch_size = rows.shape
    out = np.zeros((n_rows, dim))
    for r in range(n_rows):
        for k in range(batch_size):
            w = weights[r, k]
            for j in range(indptr[rows[r, k]], indptr[rows[r, k] + 1]):
                out[r, indices[j]] += data[j] * w
    return out


class BatchRows(NamedTuple):
    """A minibatch's rows for the kernels: ``rows[r, k]`` indexes ``design``'s rows."""

    design: sparse.csr_matrix
    rows: np.ndarray


def batch_rows(design: sparse.csr_matrix, rows: np.ndarray) -> BatchRows:
    """The kernels' view of the rows ``rows`` ``(R, n)`` of ``design``: from
    :data:`GATHER_FROM` rows on, gathered by SciPy into one block read in sequence (SciPy's
    row copy pulls rows scattered over a large design three times faster than a compiled
    element-by-element copy or ``take``); below it, read in place (the gather's fixed cost
    is then larger than the scattered reads it saves)."""
    rows = np.ascontiguousarray(rows)
    if rows.size < GATHER_FROM:
        return BatchRows(design, rows)
    return BatchRows(design[rows.ravel()], np.arange(rows.size).reshape(rows.shape))


def batch_margins(batch: BatchRows, theta: np.ndarray) -> np.ndarray:
    """x_iᵀθ_r for i = ``batch.rows[r, k]``, shape ``(R, n)``, for ``theta`` ``(R, d)``
    (module docstring: reduceat's additions)."""
    design = batch.design
    return _batch_margins(design.indptr, design.indices, design.data, batch.rows,
                          np.ascontiguousarray(theta, dtype=float))


def batch_weighted_rows(batch: BatchRows, weights: np.ndarray) -> np.ndarray:
    """Σ_k ``weights[r, k]`` x_{rows[r, k]}, shape ``(R, d)`` (module docstring: bincount's
    additions)."""
    design = batch.design
    return _batch_weighted_rows(design.indptr, design.indices, design.data, batch.rows,
                                np.ascontiguousarray(weights, dtype=float), design.shape[1])
