"""Exact moments of D-SGLD, FSGLD and coupled D-SGLD on the sharded Gaussian mean, given the
schedule (docs/math.md §4, §5, §12).

On the Gaussian mean every estimator of :mod:`workbench.gradients.sharded` is affine in θ with
shard-dependent coefficients (Chen convention, shard s, frequency q, minibatch of n):

    ∇Ũ_s(θ) = K_s θ - β_s + ζ,
    K_s = I/σ₀² + w (N/σ_x²) I + α (Σ_z P_z - P_s/q),
    β_s = m₀/σ₀² + w (N/σ_x²) x̄_s + α (Σ_z P_z m_z - P_s m_s/q),
    Cov ζ = w² (N/σ_x²)² Σ_s / n  (× (N_s - n)/(N_s - 1) without replacement),

with w = N_s/(N q) for D-SGLD (w = 1 uncorrected, seed 004 Eq. 2), (m_z, P_z) the surrogates'
means and precisions and α their scale (α = 0: no conducive gradient; seed 002 Eq. 5, 7), and
Σ_s the shard's empirical covariance. These are written from the mathematics, independently
of the estimator code they are used to test. A coupled group of R chains (seed 004 Eq. 6, with
its noise correction) moves as one chain with the members' K, β averaged and Cov ζ divided by
R² after summing.

SGLD then gives θ' = A θ + b + noise, A = I - hK, b = hβ, noise covariance Q = h² Cov ζ + 2h I:
for any given sequence of shards (a schedule) the mean and covariance propagate exactly,
m' = A m + b, P' = A P Aᵀ + Q, update by update in O(L) operations whatever the pattern of
shards (one compiled pass, :mod:`workbench.oracles.sharded_scan`). This yields E θ_l and
E θ_l θ_lᵀ for every l, and their running sums at the checkpoints give the exact expectation
of any window average of θ and θθᵀ: how far D-SGLD with long trajectories drifts towards the
mixture of local posteriors, conditional on the realised schedule, is then an exact number.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from simulators import validation


@dataclass(frozen=True)
class ShardedGaussianOracle:
    """The linear-Gaussian description of an estimator on sharded Gaussian-mean data."""

    n_data: int
    prior_precision: float  # 1/σ₀²
    prior_mean: float  # m₀
    data_precision: float  # 1/σ_x²
    shard_sizes: np.ndarray  # (S,)
    shard_means: np.ndarray  # (S, d)
    shard_covariances: np.ndarray  # (S, d, d), divisor N_s
    batch_size: int
    replacement: bool = True
    correction: bool = True
    alpha: float = 0.0
    surrogate_means: np.ndarray | None = None  # (S, d)
    surrogate_precisions: np.ndarray | None = None  # (S, d, d)

    @classmethod
    def for_model(cls, sharded, batch_size: int, replacement: bool = True,
                  correction: bool = True, surrogates=None,
                  alpha: float = 1.0) -> ShardedGaussianOracle:
        """From a :class:`~workbench.models.sharded_gaussian.ShardedGaussianMean`; with
        ``surrogates`` (:class:`~workbench.gradients.surrogates.GaussianSurrogates`) it
        describes FSGLD."""
        model = sharded.model
        return cls(
            n_data=model.n_data, prior_precision=1 / model.prior_scale**2,
            prior_mean=model.prior_mean, data_precision=1 / model.noise_scale**2,
            shard_sizes=np.asarray(sharded.shard_sizes, dtype=float),
            shard_means=sharded.shard_means, shard_covariances=sharded.shard_covariances,
            batch_size=batch_size, replacement=replacement, correction=correction,
            alpha=alpha if surrogates is not None else 0.0,
            surrogate_means=None if surrogates is None else surrogates.means,
            surrogate_precisions=None if surrogates is None else surrogates.precisions)

    @property
    def dim(self) -> int:
        return int(self.shard_means.shape[1])

    @property
    def diagonal(self) -> bool:
        """Whether every K_s is diagonal (coordinates then evolve elementwise)."""
        if self.alpha == 0 or self.surrogate_precisions is None:
            return True
        precisions = self.surrogate_precisions
        return bool(np.all(precisions * (1 - np.eye(self.dim)) == 0))

    def coefficients(self, shard: np.ndarray, frequency: np.ndarray):
        """K (diagonal ``(..., d)`` or ``(..., d, d)``), β ``(..., d)``, Cov ζ ``(..., d, d)``."""
        shard = np.asarray(shard)
        frequency = np.asarray(frequency, dtype=float)
        dim = self.dim
        scale = self.n_data * self.data_precision
        weight = (self.shard_sizes[shard] / (self.n_data * frequency) if self.correction
                  else np.ones(frequency.shape))
        diagonal_k = np.repeat((self.prior_precision + weight * scale)[..., None], dim, axis=-1)
        beta = self.prior_precision * self.prior_mean + (weight * scale)[..., None] \
            * np.take(self.shard_means, shard, axis=0)
        batch = self.batch_size
        sizes = self.shard_sizes[shard]
        finite = (sizes - batch) / np.maximum(sizes - 1, 1) if not self.replacement else 1.0
        # the (..., d, d) product formed in place in the gathered covariances (same bits)
        noise = np.take(np.asarray(self.shard_covariances, dtype=float), shard, axis=0)
        noise *= ((weight * scale) ** 2 * finite / batch)[..., None, None]
        if self.alpha == 0 or self.surrogate_precisions is None:
            return diagonal_k, beta, noise
        precisions, means = self.surrogate_precisions, self.surrogate_means
        own = np.take(precisions, shard, axis=0) / frequency[..., None, None]
        extra_k = self.alpha * (precisions.sum(axis=0) - own)
        natural = np.einsum("sij,sj->i", precisions, means)
        beta = beta + self.alpha * (natural - np.einsum("...ij,...j->...i", own,
                                                        np.take(means, shard, axis=0)))
        if self.diagonal:
            return diagonal_k + np.diagonal(extra_k, axis1=-2, axis2=-1), beta, noise
        return diagonal_k[..., None] * np.eye(dim) + extra_k, beta, noise

    def step_maps(self, shards: np.ndarray, frequencies: np.ndarray, step_size: float,
                  groups=None, noise_correction: bool = True) -> StepMaps:
        """The per-update maps (A, b, Q) of every chain, or of every coupled group.

        ``shards``, ``frequencies``: ``(update, chain)`` from the schedule; ``groups``:
        consecutive group sizes of coupled chains (None: every chain on its own);
        ``noise_correction=False``: a group of R injects only its averaged noise, 2h/R.
        """
        h = validation.positive("step_size", step_size)
        k, beta, noise = self.coefficients(shards, frequencies)
        sizes = [1] * shards.shape[1] if groups is None else list(groups)
        if sum(sizes) != shards.shape[1]:
            raise validation.InvalidParameter("coupling_groups", sizes,
                                              f"must add up to {shards.shape[1]} chains")
        thermal = np.ones(len(sizes))
        if max(sizes) > 1:
            if not noise_correction:
                thermal = 1.0 / np.asarray(sizes, dtype=float)
            starts = np.cumsum([0] + sizes[:-1])
            k = np.stack([k[:, a:a + r].mean(axis=1) for a, r in zip(starts, sizes,
                                                                        strict=True)], axis=1)
            beta = np.stack([beta[:, a:a + r].mean(axis=1)
                             for a, r in zip(starts, sizes, strict=True)], axis=1)
            noise = np.stack([noise[:, a:a + r].sum(axis=1) / r**2
                              for a, r in zip(starts, sizes, strict=True)], axis=1)
        identity = np.eye(self.dim)
        diagonal = k.ndim == beta.ndim
        a = 1.0 - h * k if diagonal else identity - h * k
        injected = (2 * h * thermal)[:, None, None] * identity
        noise *= h * h  # Q = h² Cov ζ + 2h I, in place in the array built above
        noise += injected
        return StepMaps(a, h * beta, noise, diagonal)


@dataclass(frozen=True)
class StepMaps:
    """θ ↦ A θ + b with added noise of covariance Q, per ``(update, chain)``.

    ``transition`` is ``(L, C, d)`` when ``diagonal`` (A = diag(a)), else ``(L, C, d, d)``;
    ``offset`` ``(L, C, d)``; ``noise`` ``(L, C, d, d)``.
    """

    transition: np.ndarray
    offset: np.ndarray
    noise: np.ndarray
    diagonal: bool


@dataclass(frozen=True)
class ConditionalMoments:
    """Running sums over samples 1..L of E θ_l and E θ_l θ_lᵀ, at each checkpoint L, and the
    moments of θ_L itself there.

    sum_mean, mean ``(checkpoint, chain, d)``; sum_second, second ``(checkpoint, chain, d, d)``;
    final_mean, final_covariance: the moments of θ at the last update.
    """

    checkpoints: np.ndarray
    sum_mean: np.ndarray
    sum_second: np.ndarray
    mean: np.ndarray
    second: np.ndarray
    final_mean: np.ndarray
    final_covariance: np.ndarray

    def window(self, first: int, last: int) -> tuple[np.ndarray, np.ndarray]:
        """Exact E of the averages of θ and θθᵀ over samples first+1..last (checkpoints)."""
        i, j = (int(np.flatnonzero(self.checkpoints == c)[0]) if c else None
                for c in (first, last))
        if j is None:
            raise validation.InvalidParameter("window", (first, last), "needs last >= 1")
        mean, second = self.sum_mean[j], self.sum_second[j]
        if i is not None:
            mean, second = mean - self.sum_mean[i], second - self.sum_second[i]
        return mean / (last - first), second / (last - first)


def conditional_moments(maps: StepMaps, initial, checkpoints) -> ConditionalMoments:
    """Exact moments from a deterministic start ``initial`` (broadcast to ``(chain, d)``), by
    the compiled recursion of :mod:`workbench.oracles.sharded_scan` (diagonal or full maps)."""
    n_updates, n_chains, dim = maps.offset.shape
    checkpoints = np.unique(np.asarray(checkpoints, dtype=np.int64))
    if checkpoints.size == 0 or checkpoints[0] < 1 or checkpoints[-1] > n_updates:
        raise validation.InvalidParameter("checkpoints", checkpoints.tolist(),
                                          f"must lie in [1, {n_updates}]")
    start = np.broadcast_to(np.asarray(initial, dtype=float), (n_chains, dim))
    # numba loads with the first oracle, not with the experiments' metadata (issue 15)
    from workbench.oracles.sharded_scan import propagated_moments

    return ConditionalMoments(checkpoints, *propagated_moments(
        maps.transition, maps.offset, maps.noise, start, checkpoints - 1, maps.diagonal))
