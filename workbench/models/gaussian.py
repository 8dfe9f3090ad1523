"""The d-dimensional Gaussian mean with a conjugate prior (seed 001 §5.1; docs/math.md §7).

Model: x_i ~ N(θ, σ_x² I), prior θ ~ N(m₀, σ₀² I). Posterior N(μ, s² I) with
1/s² = 1/σ₀² + N/σ_x² and μ = s² (m₀/σ₀² + N x̄/σ_x²).

In the Chen convention (docs/math.md §1), U(θ) = -log p(θ) - Σ log p(x_i | θ) and the minibatch
gradient over a batch B of size n is

    ∇Ũ(θ) = (θ - m₀)/σ₀² + (N/n) Σ_{i∈B} (θ - x_i)/σ_x² = k θ - b_B,
    k = 1/s²,  b_B = m₀/σ₀² + N x̄_B / σ_x².

So a minibatch enters only through its mean, and the gradient noise ζ = ∇Ũ - ∇U is independent
of θ with variance V_ζ = N² S_x² / (n σ_x⁴) per coordinate (S_x² the empirical variance), times
(N - n)/(N - 1) without replacement.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from simulators import validation
from workbench.gradients.minibatch import batch_sum, check_batch
from workbench.gradients.minibatch_moments import sum_cumulants


@dataclass(frozen=True, eq=False)
class GaussianMeanModel:
    """A data set ``(N, d)`` with the Gaussian-mean likelihood and conjugate prior."""

    data: np.ndarray
    noise_scale: float = 1.0
    prior_scale: float = 1.0
    prior_mean: float = 0.0

    def __post_init__(self) -> None:
        data = np.asarray(self.data, dtype=float)
        if data.ndim == 1:
            data = data[:, None]
        if data.ndim != 2 or data.shape[0] < 1:
            raise validation.InvalidParameter("data", data.shape, "must be an (N, d) array, N >= 1")
        if not np.all(np.isfinite(data)):
            raise validation.InvalidParameter("data", "non-finite values", "must be finite")
        data.setflags(write=False)
        object.__setattr__(self, "data", data)
        validation.positive("noise_scale", self.noise_scale)
        validation.positive("prior_scale", self.prior_scale)
        validation.finite("prior_mean", self.prior_mean)

    @classmethod
    def generate(cls, rng: np.random.Generator, n_data: int, dim: int = 1,
                 true_mean: float = 0.0, noise_scale: float = 1.0, prior_scale: float = 1.0,
                 prior_mean: float = 0.0) -> GaussianMeanModel:
        """Draw ``n_data`` points from N(true_mean·1, noise_scale² I_dim)."""
        n_data = validation.integer("n_data", n_data, minimum=1)
        dim = validation.integer("dim", dim, minimum=1)
        validation.finite("true_mean", true_mean)
        validation.positive("noise_scale", noise_scale)
        data = true_mean + noise_scale * rng.standard_normal((n_data, dim))
        return cls(data, noise_scale, prior_scale, prior_mean)

    # ------------------------------------------------------------------ data
    @property
    def n_data(self) -> int:
        return int(self.data.shape[0])

    @property
    def dim(self) -> int:
        return int(self.data.shape[1])

    @property
    def data_mean(self) -> np.ndarray:
        return self.data.mean(axis=0)

    @property
    def data_variance(self) -> np.ndarray:
        """Empirical variance S_x² per coordinate (divisor N)."""
        return self.data.var(axis=0)

    # ------------------------------------------------------------------ posterior
    @property
    def precision(self) -> float:
        """k = 1/s², the curvature of U."""
        return 1.0 / self.prior_scale**2 + self.n_data / self.noise_scale**2

    @property
    def posterior_variance(self) -> float:
        return 1.0 / self.precision

    @property
    def posterior_mean(self) -> np.ndarray:
        natural = (self.prior_mean / self.prior_scale**2
                   + self.n_data * self.data_mean / self.noise_scale**2)
        return natural / self.precision

    def gradient_noise_variance(self, batch_size: int, replacement: bool = True) -> np.ndarray:
        """V_ζ per coordinate for minibatches of ``batch_size`` (docs/math.md §7)."""
        check_batch(self.n_data, batch_size, replacement)
        n_data = self.n_data
        variance = n_data**2 * self.data_variance / (batch_size * self.noise_scale**4)
        if not replacement:
            variance = variance * ((n_data - batch_size) / (n_data - 1) if n_data > 1 else 0.0)
        return variance

    def gradient_noise_cumulants(self, batch_size: int,
                                 replacement: bool = True) -> tuple[np.ndarray, np.ndarray]:
        """Third and fourth cumulants (κ₃, κ₄) of ζ per coordinate (docs/math.md §10.3).

        ζ = -(N/(n σ_x²)) T with T the minibatch sum of the centred data
        (:mod:`workbench.gradients.minibatch_moments`), so κ_r(ζ) = (-N/(n σ_x²))^r κ_r(T). They
        enter the exact variance of φ̂(θ²); for Gaussian data they are small but not zero.
        """
        _, third, fourth = sum_cumulants(self.data, batch_size, replacement)
        scale = -self.n_data / (batch_size * self.noise_scale**2)
        return scale**3 * third, scale**4 * fourth

    def potential(self, theta: np.ndarray) -> np.ndarray:
        """U(θ) = -log p(θ) - Σ log p(x_i | θ) with all normalising constants (docs/math.md §1),
        shape ``(...,)`` for θ of shape ``(..., d)``.

        The data enter through their sufficient statistics, Σ_i (x_i - θ)² = N S_x² +
        N (x̄ - θ)² per coordinate, so one evaluation costs O(d), not O(N d).
        """
        theta = np.asarray(theta, dtype=float)
        n_data = self.n_data
        prior = ((theta - self.prior_mean) ** 2 / (2 * self.prior_scale**2)
                 + 0.5 * np.log(2 * np.pi * self.prior_scale**2))
        likelihood = ((n_data * self.data_variance + n_data * (self.data_mean - theta) ** 2)
                      / (2 * self.noise_scale**2)
                      + 0.5 * n_data * np.log(2 * np.pi * self.noise_scale**2))
        return np.sum(prior + likelihood, axis=-1)

    positionwise_gradient = True
    """:meth:`potential_gradient` is elementwise, so a position's value does not depend on the
    others of its call (:mod:`workbench.models.protocol`)."""

    def potential_gradient(self, theta: np.ndarray) -> np.ndarray:
        """The full-data gradient ∇U(θ) = k (θ - μ)."""
        return self.precision * (np.asarray(theta) - self.posterior_mean)

    def sufficient_statistics(self) -> dict[str, float | list[float]]:
        """What a result file records about its data (enough to recompute every exact value)."""
        return {
            "n_data": self.n_data,
            "dim": self.dim,
            "data_mean": self.data_mean.tolist(),
            "data_variance": self.data_variance.tolist(),
            "noise_scale": float(self.noise_scale),
            "prior_scale": float(self.prior_scale),
            "prior_mean": float(self.prior_mean),
            "posterior_mean": self.posterior_mean.tolist(),
            "posterior_variance": self.posterior_variance,
        }

    def minibatch_gradient(self) -> GaussianMeanGradient:
        return GaussianMeanGradient(self)


class GaussianMeanGradient:
    """Stochastic gradient ∇Ũ(θ) = k θ - b_B for the Gaussian mean (module docstring).

    ``prepare`` turns minibatch indices (any leading shape) into b_B, so the per-step work is
    one multiply and one subtract.
    """

    def __init__(self, model: GaussianMeanModel):
        self.model = model
        self.n_data = model.n_data
        self.dim = model.dim
        self._flat = model.data[:, 0].copy()
        self._precision = model.precision
        self._prior_term = model.prior_mean / model.prior_scale**2
        self._data_scale = model.n_data / model.noise_scale**2

    def prepare(self, indices: np.ndarray) -> np.ndarray:
        # Batch members become leading columns, so the sums are vectorised across batches;
        # the additions are those of np.sum over the batch axis (pairwise for d = 1, where
        # it is the contiguous last axis; in sequence for d > 1), so results are unchanged.
        members = np.moveaxis(indices, -1, 0)
        if self.dim == 1:
            batch_total = batch_sum(self._flat.take(members))[..., None]
        else:
            columns = self.model.data.take(members, axis=0)
            batch_total = columns[0].copy()
            for column in columns[1:]:
                batch_total += column
        return self._prior_term + self._data_scale * (batch_total / indices.shape[-1])

    def __call__(self, position: np.ndarray, minibatch: np.ndarray) -> np.ndarray:
        return self._precision * position - minibatch

    def kernel_spec(self):
        """k θ - (m₀/σ₀² + (N/σ_x²) x̄_B) for the engine's compiled path
        (:mod:`workbench.engine.compiled`), with the same constants as ``prepare``."""
        from workbench.core.specs import LinearMeanSpec

        return LinearMeanSpec(self.model.data, self._precision, self._prior_term,
                              self._data_scale)
