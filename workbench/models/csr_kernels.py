"""Compiled CSR minibatch products for logistic regression, bit-identical to the SciPy/numpy
code they replace (issue 15: the main job's time went to SciPy's row fancy-indexing and
per-call overhead).

Logistic regression (seed 001 §5.1; :mod:`workbench.models.logistic`) needs, on a CSR design
with rows x_i (``indptr``, ``indices``, ``data``; duplicates summed, indices sorted):

- minibatch margins x_iᵀθ_r for the rows i of replicate r's batch (:func:`batch_margins`),
  formerly gathered with ``design[rows.ravel()]`` and summed with ``np.add.reduceat`` over the
  products ``data_j θ_r[indices_j]`` of each row. Numpy's reduceat seeds a segment's sum with
  its first element and adds the pairwise sum of the rest (numpy's ``pairwise_sum``: a
  running sum from -0.0 below 8 terms, 8 interleaved partial sums up to 128, halves above,
  as :func:`workbench.minibatch.batch_sum` documents), which the engine kernel's
  ``_pairwise_total`` computes (-0.0 + x is x, so starting from the first term is the same).
  An empty row's margin is 0.0, as the old code left it;
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

import numba
import numpy as np
from scipy import sparse

from workbench.engine_kernel import _pairwise_total


@numba.njit(cache=True)
def _batch_margins(indptr, indices, data, rows, theta):
    n_rows, batch_size = rows.shape
    out = np.zeros((n_rows, batch_size))
    longest = 0
    for r in range(n_rows):
        for k in range(batch_size):
            longest = max(longest, indptr[rows[r, k] + 1] - indptr[rows[r, k]])
    products = np.empty((longest, 1))
    order = np.arange(longest)
    for r in range(n_rows):
        for k in range(batch_size):
            i = rows[r, k]
            first = indptr[i]
            count = indptr[i + 1] - first
            if count == 0:
                continue
            for j in range(count):
                products[j, 0] = data[first + j] * theta[r, indices[first + j]]
            # reduceat's segment: the first product + the pairwise sum of the others
            out[r, k] = products[0, 0]
            if count > 1:
                out[r, k] += _pairwise_total(products, order, 1, count - 1)
    return out


@numba.njit(cache=True)
def _batch_weighted_rows(indptr, indices, data, rows, weights, dim):
    n_rows, batch_size = rows.shape
    out = np.zeros((n_rows, dim))
    for r in range(n_rows):
        for k in range(batch_size):
            i = rows[r, k]
            w = weights[r, k]
            for j in range(indptr[i], indptr[i + 1]):
                out[r, indices[j]] += data[j] * w
    return out


def _parts(design: sparse.csr_matrix):
    return design.indptr, design.indices, design.data


def batch_margins(design: sparse.csr_matrix, theta: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """x_iᵀθ_r for i = ``rows[r, k]``, shape ``(R, n)``, for ``theta`` ``(R, d)`` (module
    docstring: reduceat's additions)."""
    return _batch_margins(*_parts(design), np.ascontiguousarray(rows),
                          np.ascontiguousarray(theta, dtype=float))


def batch_weighted_rows(design: sparse.csr_matrix, weights: np.ndarray,
                        rows: np.ndarray) -> np.ndarray:
    """Σ_k ``weights[r, k]`` x_{rows[r, k]}, shape ``(R, d)`` (module docstring: bincount's
    additions)."""
    return _batch_weighted_rows(*_parts(design), np.ascontiguousarray(rows),
                                np.ascontiguousarray(weights, dtype=float), design.shape[1])

