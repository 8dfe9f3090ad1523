"""Bayesian logistic regression on dense or sparse (CSR) designs (seed 001 §5.1, a9a).

Model: p(y_i = s | x_i, θ) = σ(s x_iᵀθ) for signs s = ±1 (labels given as {0, 1} or
{-1, +1}), prior θ ~ N(0, σ₀² I). In the Chen convention (docs/math.md §1)

    U(θ) = ‖θ‖²/(2σ₀²) + Σ_i log(1 + exp(-s_i x_iᵀθ)),
    ∇_θ log p(y_i | x_i, θ) = s_i σ(-s_i x_iᵀθ) x_i,

with no intercept: a design that wants one carries a column of ones. The minibatch estimator is
:class:`workbench.models.per_example.PerExampleGradient`; its per-batch sums are two matrix
products per replicate on a dense design; on a CSR design the whole estimate (prior term
included) is one compiled loop over the non-zeros of the batch rows (O(non-zeros) work;
:class:`CsrLogisticGradient`, :mod:`workbench.models.csr_kernels`), bit-identical to the
SciPy row gather, ``reduceat``, ``expit`` and ``bincount`` it replaced. On a CSR design the
full-data gradient is one compiled pass and the margins of the potential and held-out
log-probabilities a compiled product, each bit for bit the SciPy sparse products (and numpy
steps) they replaced (:mod:`workbench.models.csr_kernels`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import sparse
from scipy.special import expit

from simulators import validation
from workbench.core.phi import TestFunction
from workbench.models import csr_kernels
from workbench.models.classification import (
    binary_signs,
    held_out_test_functions,
    labelled_examples,
)
from workbench.models.per_example import PerExampleGradient, flat_positions, over_positions


def _design(field: str, features: Any) -> np.ndarray | sparse.csr_matrix:
    """A finite float64 (N, p) design, kept CSR when given sparse."""
    if sparse.issparse(features):
        design = sparse.csr_matrix(features, dtype=float)
        design.sum_duplicates()
        design.sort_indices()
        values = design.data
    else:
        design = np.ascontiguousarray(features, dtype=float)
        values = design
    if design.ndim != 2 or design.shape[0] < 1 or design.shape[1] < 1:
        raise validation.InvalidParameter(field, design.shape,
                                          "must be an (N, p) design with N, p >= 1")
    if not np.all(np.isfinite(values)):
        raise validation.InvalidParameter(field, "non-finite values", "must be finite")
    return design


@dataclass(frozen=True, eq=False)
class LogisticRegression:
    """Logistic regression with prior N(0, σ₀² I) (module docstring); optional held-out set."""

    features: Any
    labels: Any
    prior_scale: float = 1.0
    test_features: Any = None
    test_labels: Any = None

    def __post_init__(self) -> None:
        validation.positive("prior_scale", self.prior_scale)
        examples = labelled_examples(_design, binary_signs, self.features, self.labels,
                                     self.test_features, self.test_labels)
        for name, value in zip(("features", "labels", "test_features", "test_labels"),
                               examples, strict=True):
            object.__setattr__(self, name, value)

    # ------------------------------------------------------------------ sizes
    @property
    def n_data(self) -> int:
        return int(self.features.shape[0])

    @property
    def dim(self) -> int:
        return int(self.features.shape[1])

    @property
    def is_sparse(self) -> bool:
        return sparse.issparse(self.features)

    @property
    def positionwise_gradient(self) -> bool:
        """On a CSR design, :meth:`potential_gradient`'s value at a position does not depend
        on the other positions of its call (the compiled pass, like the SciPy products it
        replaced, sums each position's terms on their own; :mod:`workbench.models.protocol`).
        A dense design's BLAS
        product does: one position alone differs in the last bits from the same position in
        a block (the tests show both)."""
        return self.is_sparse

    @property
    def example_cost(self) -> int:
        """Elements gathered per example: a dense row, or a CSR row's non-zeros (and more)."""
        if self.is_sparse:
            return 4 * (1 + self.features.nnz // self.n_data)
        return self.dim

    # ------------------------------------------------------------------ full data
    def potential(self, theta: np.ndarray) -> np.ndarray:
        """U(θ) without the prior's normaliser, shape ``(...,)``."""
        def block(rows):
            # in place on the fresh (B, N) product: the same operations without a new array
            # each (the layout, on which the sum's order depends, is kept)
            margins = _margins(self.features, rows)
            np.multiply(self.labels, margins, out=margins)
            losses = np.logaddexp(0.0, np.negative(margins, out=margins), out=margins)
            return (np.sum(rows**2, axis=1) / (2 * self.prior_scale**2)
                    + losses.sum(axis=1))
        return over_positions(block, theta, self.dim, self.n_data)

    def potential_gradient(self, theta: np.ndarray) -> np.ndarray:
        """The full-data ∇U(θ), shape ``(..., d)``: on a CSR design one compiled pass for all
        positions (:func:`workbench.models.csr_kernels.full_gradient`, bit for bit the SciPy
        products and numpy steps of the dense path below, memory O(B·d)), else in position
        blocks."""
        if self.is_sparse:
            theta, flat = flat_positions(theta, self.dim)
            return csr_kernels.full_gradient(self.features, self.labels, flat,
                                             self.prior_scale**2).reshape(theta.shape)

        def block(rows):
            weights = _margins(self.features, rows)  # in place, as in potential
            np.multiply(-self.labels, weights, out=weights)
            np.multiply(self.labels, expit(weights, out=weights), out=weights)
            return rows / self.prior_scale**2 - weights @ self.features
        return over_positions(block, theta, self.dim, self.n_data)

    # ------------------------------------------------------------------ minibatches
    def log_likelihood_gradient_sum(self, theta: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """Σ_{i∈rows[r]} s_i σ(-s_i x_iᵀθ_r) x_i for ``theta`` ``(R, d)``, ``rows`` ``(R, n)``."""
        if self.is_sparse:
            return csr_kernels.gradient_sums(self.features, self.labels, theta, rows)
        signs = self.labels[rows]
        batch = self.features[rows]  # (R, n, d)
        margins = np.matmul(batch, theta[:, :, None])[:, :, 0]
        weights = signs * expit(-signs * margins)
        return np.matmul(weights[:, None, :], batch)[:, 0, :]

    def minibatch_gradient(self) -> PerExampleGradient:
        return CsrLogisticGradient(self) if self.is_sparse else PerExampleGradient(self)

    # ------------------------------------------------------------------ held-out data
    def test_functions(self) -> tuple[TestFunction, TestFunction]:
        """Held-out ``log_loss`` (the logistic loss of seed 001 §5.1) and ``accuracy``."""
        if self.test_features is None:
            raise validation.InvalidParameter("test_features", None,
                                              "the model was built without held-out data")
        test, labels = self.test_features, (self.test_labels > 0).astype(np.int64)

        def log_probabilities(rows):
            margins = _margins(test, rows)
            return -np.logaddexp(0.0, np.stack([margins, -margins], axis=-1))

        return held_out_test_functions(log_probabilities, labels, self.dim, 2 * test.shape[0])


class CsrLogisticGradient(PerExampleGradient):
    """Chen's estimator on a CSR design (seed 001 Eq. 1), each call one compiled loop over
    the batch rows' non-zeros (:func:`workbench.models.csr_kernels.gradient_sums`), the
    prefactor -(N/n) and the prior term θ/σ₀² applied inside it in
    :class:`~workbench.models.per_example.PerExampleGradient`'s order: bit for bit its
    values, without the blocks (the kernel's memory is its ``(R, d)`` output) or the numpy
    steps between them."""

    def likelihood_gradient(self, position: np.ndarray, minibatch: np.ndarray) -> np.ndarray:
        return self._estimate(position, minibatch, None)

    def __call__(self, position: np.ndarray, minibatch: np.ndarray) -> np.ndarray:
        return self._estimate(position, minibatch, self._prior_precision)

    def _estimate(self, position, minibatch, precision) -> np.ndarray:
        position, theta, rows = self.flat(position, minibatch)
        return csr_kernels.gradient_sums(self.model.features, self.model.labels, theta, rows,
                                         scale=-(self.n_data / rows.shape[1]),
                                         precision=precision).reshape(position.shape)


def _margins(design, theta: np.ndarray) -> np.ndarray:
    """x_iᵀθ_b for every position b and row i, shape ``(B, N)``; on a CSR design compiled
    (:func:`workbench.models.csr_kernels.margins`: SciPy's ``(design @ theta.T).T`` bit for
    bit, in its layout)."""
    if sparse.issparse(design):
        return csr_kernels.margins(design, theta)
    return theta @ design.T
