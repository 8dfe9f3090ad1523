"""Compiled CSR minibatch products for logistic regression, bit-identical to the SciPy/numpy
code they replace (issue 15: the main job's time went to SciPy's row fancy-indexing and
per-call overhead).

Logistic regression (seed 001 §5.1; :mod:`workbench.models.logistic`) needs, on a CSR design
with rows x_i (``indptr``, ``indices``, ``data``; duplicates summed, indices sorted):

- minibatch margins x_iᵀθ_r for the rows i of replicate r's batch (:func:`batch_margins`),
  summed, as before, over the products ``data_j θ_r[indices_j]`` of each row of the batch's
  rows gathered by SciPy (:func:`gather`: ``design[rows.ravel()]``, still the fastest way
  to pull rows scattered over a large design into one contiguous block; a compiled
  element-by-element copy was three times slower from about 3,000 rows on), formerly with
  ``np.add.reduceat``. Numpy's reduceat seeds a segment's sum with
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
def _batch_margins(indptr, indices, data, theta, batch_size):
    n_rows = theta.shape[0]
    out = np.zeros((n_rows, batch_size))
    longest = np.max(indptr[1:] - indptr[:-1]) if n_rows * batch_size else 0
    products = np.empty((longest, 1))
    order = np.arange(longest)
    for r in range(n_rows):
        for k in range(batch_size):
            first = indptr[r * batch_size + k]
            count = indptr[r * batch_size + k + 1] - first
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
def _batch_weighted_rows(indptr, indices, data, weights, dim):
    n_rows, batch_size = weights.shape
    out = np.zeros((n_rows, dim))
    for r in range(n_rows):
        for k in range(batch_size):
            w = weights[r, k]
            for j in range(indptr[r * batch_size + k], indptr[r * batch_size + k + 1]):
                out[r, indices[j]] += data[j] * w
    return out


def gather(design: sparse.csr_matrix, rows: np.ndarray) -> sparse.csr_matrix:
    """The rows ``rows[r, k]`` of ``design`` as one CSR matrix, row r·n + k (SciPy's row
    gather: one pass over the batch's rows in memory order, the kernels then read them in
    sequence)."""
    return design[np.asarray(rows).ravel()]


def batch_margins(gathered: sparse.csr_matrix, theta: np.ndarray, batch_size: int) -> np.ndarray:
    """x_iᵀθ_r for the gathered rows of replicate r's batch, shape ``(R, n)``, for ``theta``
    ``(R, d)`` (module docstring: reduceat's additions)."""
    return _batch_margins(gathered.indptr, gathered.indices, gathered.data,
                          np.ascontiguousarray(theta, dtype=float), batch_size)


def batch_weighted_rows(gathered: sparse.csr_matrix, weights: np.ndarray) -> np.ndarray:
    """Σ_k ``weights[r, k]`` x_{rows[r, k]} over the gathered rows, shape ``(R, d)`` (module
    docstring: bincount's additions)."""
    return _batch_weighted_rows(gathered.indptr, gathered.indices, gathered.data,
                                np.ascontiguousarray(weights, dtype=float), gathered.shape[1])
