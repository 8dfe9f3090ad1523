"""Gaussian surrogates q_s(θ) of the shard likelihoods p(X_s | θ) for conducive gradients.

Seed 002 §3.1: q_s approximates shard s's likelihood as a function of θ, is computed once per
shard before sampling, and is exponential-family so that ∇log q = Σ_s ∇log q_s costs one
evaluation. Here q_s = N(θ | m_s, C_s), built in one of four ways:

- :func:`analytic` — exact for conjugate models: the Gaussian mean's shard likelihood is
  N(θ | x̄_s, σ_x²/N_s I) (seed 002 §5.1);
- :func:`laplace` — mode and inverse Hessian of -log p(X_s | θ) (seed 002 Appendix F.2);
- :func:`fit_to_samples` — mean and covariance (full or diagonal) of draws from
  p_s ∝ p(X_s | θ), which :func:`workbench.engine.local_samples.local_sgld_samples` produces
  by running SGLD on the shard
  alone (seed 002 §5.2-5.3: "three thousand samples ... running SGLD independently for each
  client").

A covariance must be symmetric positive definite; anything else is refused with the shard
named, since its inverse is the precision the conducive gradient multiplies by.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import scipy.optimize

from simulators import validation

COVARIANCE_KINDS = ("full", "diagonal")


@dataclass(eq=False)
class GaussianSurrogates:
    """q_s = N(m_s, C_s) for every shard: ``means (S, d)``, ``covariances (S, d, d)``."""

    means: np.ndarray
    covariances: np.ndarray
    precisions: np.ndarray = field(init=False)
    total_precision: np.ndarray = field(init=False)  # Σ_s P_s
    total_natural: np.ndarray = field(init=False)  # Σ_s P_s m_s
    diagonal: bool = field(init=False)  # every P_s diagonal: scores are elementwise

    def __post_init__(self) -> None:
        means = np.atleast_2d(np.asarray(self.means, dtype=float))
        covariances = np.asarray(self.covariances, dtype=float)
        n_shards, dim = means.shape
        if covariances.shape != (n_shards, dim, dim):
            raise validation.InvalidParameter(
                "surrogate_covariance", covariances.shape,
                f"must have shape (shards, d, d) = {(n_shards, dim, dim)}")
        if not (np.all(np.isfinite(means)) and np.all(np.isfinite(covariances))):
            raise validation.InvalidParameter("surrogate_mean", "non-finite values",
                                              "means and covariances must be finite")
        variances = np.diagonal(covariances, 0, 1, 2)
        # every C_s diagonal with a positive diagonal: its only non-zeros are its variances
        if np.all(variances > 0) and np.count_nonzero(covariances) == variances.size:
            precisions = _diagonal_precisions(variances)
        else:
            precisions = np.empty_like(covariances)
            for s, covariance in enumerate(covariances):
                precisions[s] = _precision(f"surrogate_covariance[{s}]", covariance)
        for name, value in (("means", means), ("covariances", covariances),
                            ("precisions", precisions)):
            value.setflags(write=False)
            setattr(self, name, value)
        self.diagonal = bool(np.count_nonzero(precisions)
                             == np.count_nonzero(np.diagonal(precisions, 0, 1, 2)))
        self.total_precision = precisions.sum(axis=0)
        self.total_natural = np.einsum("sij,sj->i", precisions, means)
        self._diagonal_precisions = np.ascontiguousarray(np.diagonal(precisions, 0, 1, 2))
        self._total_diagonal = np.diagonal(self.total_precision).copy()

    @property
    def n_shards(self) -> int:
        return int(self.means.shape[0])

    @property
    def dim(self) -> int:
        return int(self.means.shape[1])

    def score(self, theta: np.ndarray, shard) -> np.ndarray:
        """∇log q_s(θ) = -P_s (θ - m_s), ``shard`` an index array broadcasting with θ[..., 0]."""
        difference = theta - self.means[shard]
        if self.diagonal:
            return -self._diagonal_precisions[shard] * difference
        return -np.einsum("...ij,...j->...i", self.precisions[shard], difference)

    def total_score(self, theta: np.ndarray) -> np.ndarray:
        """∇log q(θ) = Σ_s ∇log q_s(θ) = Σ_s P_s m_s - (Σ_s P_s) θ (elementwise when every P_s
        is diagonal: the same numbers as the product, whose other terms are zeros)."""
        if self.diagonal:
            return self.total_natural - theta * self._total_diagonal
        return self.total_natural - theta @ self.total_precision.T

    def describe(self) -> dict:
        return {"surrogate_means": self.means.tolist(),
                "surrogate_covariances": self.covariances.tolist()}


def _precision(field: str, covariance: np.ndarray) -> np.ndarray:
    """The inverse of a symmetric positive-definite matrix; refused naming ``field`` if not."""
    if not np.allclose(covariance, covariance.T, rtol=1e-10, atol=0.0):
        raise validation.InvalidParameter(field, _shown(covariance), "must be symmetric")
    try:
        factor = np.linalg.cholesky(covariance)
    except np.linalg.LinAlgError:
        raise validation.InvalidParameter(
            field, _shown(covariance), "must be positive definite (a Gaussian surrogate)"
        ) from None
    inverse = np.linalg.inv(factor)
    return inverse.T @ inverse


def _shown(matrix: np.ndarray):
    """A refused matrix as its message shows it: whole up to 4 × 4, else its size and its
    smallest eigenvalue (of its symmetric part), never thousands of numbers on one line."""
    if matrix.shape[0] <= 4:
        return matrix.tolist()
    smallest = float(np.linalg.eigvalsh(0.5 * (matrix + matrix.T))[0])
    return f"a {matrix.shape[0]} × {matrix.shape[1]} matrix, smallest eigenvalue {smallest:.3g}"


def _diagonal_precisions(variances: np.ndarray) -> np.ndarray:
    """The inverses of diagonal covariances of positive ``variances`` ``(S, d)``, as
    ``(S, d, d)``: the same numbers as :func:`_precision`'s Cholesky route (1/√v squared),
    without its d³ work."""
    root = 1.0 / np.sqrt(variances)
    precisions = np.zeros(variances.shape + variances.shape[-1:])
    dim = variances.shape[-1]
    precisions[:, np.arange(dim), np.arange(dim)] = root * root
    return precisions


def stack(pairs) -> GaussianSurrogates:
    """Surrogates from a list of per-shard ``(mean, covariance)``."""
    means, covariances = zip(*pairs, strict=True)
    return GaussianSurrogates(np.stack(means), np.stack(covariances))


def analytic(sharded) -> GaussianSurrogates:
    """q_s = N(x̄_s, σ_x²/N_s I): the exact shard likelihood of the Gaussian mean."""
    dim = sharded.model.dim
    return stack((sharded.shard_means[s], np.eye(dim) / sharded.likelihood_precision(s))
                 for s in range(sharded.n_shards))


def laplace(negative_log_likelihood, gradient, start, hessian=None,
            step: float = 1e-5) -> tuple[np.ndarray, np.ndarray]:
    """Mode of -log p(X_s | θ) (BFGS from ``start``) and the inverse Hessian there.

    ``hessian`` may be omitted: it is then taken by central differences of ``gradient`` with
    relative step ``step`` and symmetrised.
    """
    start = np.atleast_1d(np.asarray(start, dtype=float))
    result = scipy.optimize.minimize(negative_log_likelihood, start, jac=gradient,
                                     method="BFGS", options={"gtol": 1e-10})
    mode = result.x
    if hessian is not None:
        curvature = np.atleast_2d(hessian(mode))
    else:
        width = step * np.maximum(1.0, np.abs(mode))
        columns = [(gradient(mode + width[j] * e) - gradient(mode - width[j] * e)) / (2 * width[j])
                   for j, e in enumerate(np.eye(mode.size))]
        curvature = np.stack(columns, axis=1)
        curvature = 0.5 * (curvature + curvature.T)
    covariance = _precision("laplace_hessian", curvature)  # the inverse, once checked PD
    return mode, 0.5 * (covariance + covariance.T)


def fit_to_samples(samples, covariance: str = "full") -> tuple[np.ndarray, np.ndarray]:
    """Sample mean and covariance (ddof 1) of ``samples (n, d)``; diagonal keeps variances
    (which two draws give; a full covariance needs n > d to be positive definite)."""
    validation.one_of("surrogate_covariance", covariance, COVARIANCE_KINDS)
    samples = np.asarray(samples, dtype=float)
    fewest = 2 if covariance == "diagonal" else samples.shape[-1] + 1
    if samples.ndim != 2 or samples.shape[0] < fewest:
        raise validation.InvalidParameter("samples", samples.shape,
                                          "needs (n, d) draws with n > d (full covariance) "
                                          "or n >= 2 (diagonal)")
    mean = samples.mean(axis=0)
    if covariance == "diagonal":  # the variances alone, not the d × d products
        return mean, np.diag(((samples - mean) ** 2).sum(axis=0) / (len(samples) - 1))
    return mean, np.atleast_2d(np.cov(samples, rowvar=False, ddof=1))
