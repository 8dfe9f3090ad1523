"""Reference distributions for trajectory sampling (seed 004 §3.2.1) and a distance to them.

- the posterior N(μ, s² I);
- the standard SGLD posterior p_ε(θ | X): the stationary law of SGLD at the same step with
  minibatches from all the data (docs/math.md §7: s² (1 + h V_ζ/2)/(1 - h/(2s²)) per coordinate);
- the mixture of local posteriors Σ_s q_s p_ε(θ | X_s): component s is the stationary law of
  the D-SGLD sampler if it never left shard s (mean β_s/k_s; covariance from the oracle's
  per-shard map), weighted by the shard's share of updates q_s.

Distances are 2-Wasserstein distances between Gaussians with the same mean and covariance
(for the mixture: its moment-matched Gaussian):
W₂² = ‖m₁ - m₂‖² + tr(C₁ + C₂ - 2 (C₂^½ C₁ C₂^½)^½).
"""

from __future__ import annotations

import numpy as np
import scipy.linalg

from workbench.oracles.sharded_gaussian import ShardedGaussianOracle

REFERENCES = ("posterior", "sgld_posterior", "local_mixture")


def wasserstein(mean_a, covariance_a, mean_b, covariance_b) -> float:
    """W₂ between N(mean_a, covariance_a) and N(mean_b, covariance_b)."""
    root_b = scipy.linalg.sqrtm(covariance_b).real
    cross = scipy.linalg.sqrtm(root_b @ covariance_a @ root_b).real
    squared = (np.sum((np.asarray(mean_a) - mean_b) ** 2)
               + np.trace(covariance_a + covariance_b - 2 * cross))
    return float(np.sqrt(max(squared, 0.0)))


def local_components(oracle: ShardedGaussianOracle, frequencies, step_size: float):
    """Means ``(S, d)`` and covariances ``(S, d, d)`` of the per-shard stationary laws."""
    shards = np.arange(len(frequencies))
    k, beta, noise = oracle.coefficients(shards, np.asarray(frequencies, dtype=float))
    if k.ndim != beta.ndim:
        raise ValueError("local components need diagonal dynamics")
    a = 1 - step_size * k
    means = beta / k
    q = step_size**2 * noise + 2 * step_size * np.eye(k.shape[-1])
    covariances = q / (1 - a[:, :, None] * a[:, None, :])
    return means, covariances


def references(sharded, oracle: ShardedGaussianOracle, frequencies, step_size: float,
               batch_size: int) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Mean and covariance of each reference (module docstring)."""
    model = sharded.model
    dim = model.dim
    s2 = model.posterior_variance
    mu = model.posterior_mean
    noise = model.n_data**2 * sharded.model.data_variance / (batch_size * model.noise_scale**4)
    sgld = s2 * (1 + step_size * noise / 2) / (1 - step_size / (2 * s2))
    means, covariances = local_components(oracle, frequencies, step_size)
    weights = np.asarray(frequencies, dtype=float)
    mixture_mean = weights @ means
    spread = means - mixture_mean
    mixture_covariance = (np.einsum("s,sij->ij", weights, covariances)
                          + np.einsum("s,si,sj->ij", weights, spread, spread))
    return {"posterior": (mu, s2 * np.eye(dim)),
            "sgld_posterior": (mu, np.diag(sgld)),
            "local_mixture": (mixture_mean, mixture_covariance)}
