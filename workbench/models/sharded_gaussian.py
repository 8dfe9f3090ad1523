"""The Gaussian mean on sharded data (seed 002 §5.1 Eq. 9; seed 004 §4.1).

Model as in :mod:`workbench.models.gaussian`: x_i ~ N(θ, σ_x² I), prior N(m₀, σ₀² I); the data
are arranged shard after shard (:meth:`workbench.data.sharding.Sharding.arrange`), shard s holding
N_s points with mean x̄_s and per-coordinate variance S_s² (divisor N_s).

As a function of θ, shard s's likelihood is exactly Gaussian, p(X_s | θ) ∝ N(θ | x̄_s,
σ_x²/N_s I): the analytic surrogate of seed 002 §5.1 ("q_s here is exactly the likelihood
function induced by the shard"). Local posteriors p(θ) p(X_s | θ)^w are Gaussian too.

Estimators (Chen convention, minibatch B from shard s, n points):

- :class:`ShardLocalGradient`: -∇log p(θ) - N ḡ(θ; B) = (θ - m₀)/σ₀² + (N/σ_x²)(θ - x̄_B),
  SGLD's estimator applied to a shard-local minibatch, wrapped by
  :mod:`workbench.gradients.sharded` for D-SGLD and FSGLD, and (its likelihood term alone,
  :class:`~workbench.gradients.sharded.ShardLikelihood`) for the local SGLD of the flat-prior
  local targets p_s ∝ p(X_s | θ) that surrogates are fitted to (seed 002 §3.1).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from simulators import validation
from workbench.gradients.sharded import ShardBatches
from workbench.models.gaussian import GaussianMeanModel


@dataclass(frozen=True, eq=False)
class ShardedGaussianMean:
    """A :class:`GaussianMeanModel` whose rows are shard after shard, with the shard sizes."""

    model: GaussianMeanModel
    shard_sizes: tuple[int, ...]

    def __post_init__(self) -> None:
        sizes = validation.sizes("shard_sizes", self.shard_sizes, total=self.model.n_data)
        object.__setattr__(self, "shard_sizes", tuple(sizes))

    # ------------------------------------------------------------------ shards
    @property
    def n_shards(self) -> int:
        return len(self.shard_sizes)

    @property
    def offsets(self) -> np.ndarray:
        return np.concatenate(([0], np.cumsum(self.shard_sizes)[:-1])).astype(np.int64)

    def shard_data(self, shard: int) -> np.ndarray:
        start = int(self.offsets[shard])
        return self.model.data[start:start + self.shard_sizes[shard]]

    @property
    def shard_means(self) -> np.ndarray:
        """x̄_s, shape ``(S, d)``."""
        return np.stack([self.shard_data(s).mean(axis=0) for s in range(self.n_shards)])

    @property
    def shard_variances(self) -> np.ndarray:
        """S_s² per coordinate (divisor N_s), shape ``(S, d)``."""
        return np.stack([self.shard_data(s).var(axis=0) for s in range(self.n_shards)])

    @property
    def shard_covariances(self) -> np.ndarray:
        """Empirical covariance matrix of each shard (divisor N_s), shape ``(S, d, d)``."""
        return np.stack([np.atleast_2d(np.cov(self.shard_data(s), rowvar=False, ddof=0))
                         for s in range(self.n_shards)])

    def point_scores(self, theta: np.ndarray, shard: int) -> np.ndarray:
        """∇_θ log p(x_i | θ) = (x_i - θ)/σ_x² for every point of the shard, ``(..., N_s, d)``."""
        theta = np.asarray(theta, dtype=float)
        scores = self.shard_data(shard) - theta[..., None, :]  # a fresh array: divided in place
        scores /= self.model.noise_scale**2
        return scores

    # ------------------------------------------------------------------ local targets
    def likelihood_precision(self, shard: int) -> float:
        """N_s/σ_x²: the precision of p(X_s | θ) as a Gaussian in θ."""
        return self.shard_sizes[shard] / self.model.noise_scale**2

    def local_posterior(self, shard: int, likelihood_power: float = 1.0) -> tuple[np.ndarray,
                                                                                   float]:
        """Mean and per-coordinate variance of p(θ) p(X_s | θ)^w (w = ``likelihood_power``)."""
        model = self.model
        precision = 1 / model.prior_scale**2 + likelihood_power * self.likelihood_precision(shard)
        natural = (model.prior_mean / model.prior_scale**2
                   + likelihood_power * self.likelihood_precision(shard)
                   * self.shard_data(shard).mean(axis=0))
        return natural / precision, 1.0 / precision

    def shard_negative_log_likelihood(self, shard: int):
        """-log p(X_s | θ) up to a constant, its gradient and Hessian, as functions of θ."""
        data = self.shard_data(shard)
        variance = self.model.noise_scale**2
        precision = self.likelihood_precision(shard)

        def value(theta):
            return 0.5 * float(np.sum((data - theta) ** 2)) / variance

        def gradient(theta):
            return precision * (np.asarray(theta) - data.mean(axis=0))

        def hessian(theta):
            return precision * np.eye(data.shape[1])

        return value, gradient, hessian

    # ------------------------------------------------------------------ estimators
    def shard_gradient(self) -> ShardLocalGradient:
        return ShardLocalGradient(self)


class ShardLocalGradient:
    """(θ - m₀)/σ₀² + (N/σ_x²)(θ - x̄_B) with B drawn from one shard (module docstring)."""

    def __init__(self, sharded: ShardedGaussianMean):
        model = sharded.model
        self.n_data, self.dim = model.n_data, model.dim
        self.shard_sizes = sharded.shard_sizes
        self._offsets = sharded.offsets
        self._sizes = np.asarray(sharded.shard_sizes, dtype=np.int64)
        self._data = model.data
        self._prior_precision = 1 / model.prior_scale**2
        self._prior_term = model.prior_mean / model.prior_scale**2
        self._data_precision = model.n_data / model.noise_scale**2

    def prepare(self, indices: np.ndarray, shards: np.ndarray,
                frequencies: np.ndarray) -> ShardBatches:
        """Batch means x̄_B from local indices ``(update, replicate, server, n)``, compiled
        (:func:`workbench.engine.compiled.shard_batch_means`: the additions of
        :func:`~workbench.gradients.minibatch.batch_means` on the global rows, bit for bit)."""
        from workbench.gradients.gathered_sums import shard_batch_means

        means = shard_batch_means(self._data, self._offsets, self._sizes, shards, indices)
        return ShardBatches(shards, frequencies, means)

    def prior_gradient(self, position: np.ndarray) -> np.ndarray:
        return self._prior_precision * position - self._prior_term

    def likelihood_gradient(self, position: np.ndarray, batch: np.ndarray) -> np.ndarray:
        return self._data_precision * (position - batch)

    def __call__(self, position: np.ndarray, minibatch) -> np.ndarray:
        return self.prior_gradient(position) + self.likelihood_gradient(position, minibatch.batch)

    def kernel_spec(self):
        """(θ - m₀)/σ₀² + (N/σ_x²)(θ - x̄_B) for the engine's compiled path
        (:mod:`workbench.engine.compiled`), with the constants of ``prior_gradient`` and
        ``likelihood_gradient``; no shard weight (:class:`~workbench.gradients.sharded.ShardScaled`
        adds it)."""
        from workbench.core.specs import ShardLinearSpec

        return ShardLinearSpec(self._data, self._offsets, self._prior_precision,
                               self._prior_term, self._data_precision)
