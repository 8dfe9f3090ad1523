"""Bayesian probit regression (Albert & Chib 1993) on a generated design: a user-side model.

This module is what a researcher writes to plug a model of their own into the workbench. It
depends only on numpy, scipy and :class:`workbench.core.phi.TestFunction`; the workbench finds
the model by structure (``workbench.models.protocol``: ``Model``, ``GradientEstimator``,
``HeldOutModel``), not by inheritance.

Factory protocol
----------------
A study names a callable (here the class :class:`ProbitRegression`, either by the module beside
the study file, ``my_model.probit:ProbitRegression``, or by the entry point ``probit`` in the
group ``sgmcmc_workbench.models``). The workbench calls it as

    ProbitRegression(rng, **arguments)

with ``rng`` a :class:`numpy.random.Generator` (all the data are drawn from it, so the same
seed gives the same data) and ``arguments`` the study's ``[model.arguments]`` table.

Model
-----
Features x_i ~ N(0, I_d/d) (rows of unit expected squared norm, so that margins are O(1) and
probabilities are not saturated; no intercept column), true weights w* ~ N(0, τ² I) with
τ = ``true_scale``, labels y_i = 1{x_iᵀw* + ε_i > 0}, ε_i ~ N(0, 1), i.e.
p(y_i = 1 | x_i, θ) = Φ(x_iᵀθ). Prior θ ~ N(m₀ 1, σ₀² I) with m₀ = ``prior_mean``,
σ₀ = ``prior_scale``. The held-out set is drawn the same way from the same ``rng``, after the
training set.

With signs s_i = 2y_i − 1 (so that log p(y_i | x_i, θ) = log Φ(s_i x_iᵀθ)), in the Chen
convention

    U(θ)  = ‖θ − m₀‖²/(2σ₀²) − Σ_i log Φ(s_i x_iᵀθ),
    ∇U(θ) = (θ − m₀)/σ₀² − Σ_i s_i λ(s_i x_iᵀθ) x_i,      λ(z) = φ(z)/Φ(z),
    ∇Ũ(θ) = (θ − m₀)/σ₀² − (N/n) Σ_{i∈B} s_i λ(s_i x_iᵀθ) x_i   (minibatch B of n indices).

log Φ is :func:`scipy.special.log_ndtr` and the inverse Mills ratio λ is
exp(log φ(z) − log Φ(z)), both stable far into either tail.

Negative control
----------------
``drop_prior=True`` is a DELIBERATE BUG: the minibatch estimator the sampler uses then omits
the prior term (θ − m₀)/σ₀², while :meth:`ProbitRegression.potential` and
:meth:`ProbitRegression.potential_gradient` (which the reference posterior uses) keep it. The
sampler then targets the likelihood alone; under a strong prior away from the data's mode
(e.g. ``prior_scale = 0.1``, ``prior_mean = 1.0``, ``n_data = 200``) the sampled mean moves far
from the reference posterior's, which the workbench's checks must detect.
"""

from __future__ import annotations

import numbers
from collections.abc import Callable

import numpy as np
from scipy.special import log_ndtr

from workbench.core.phi import TestFunction

# float64 elements of the largest intermediate built per block of positions (32 MiB): the
# engine may pass thousands of positions (updates × replicates × servers) in one call.
BLOCK_BUDGET = 1 << 22
LOG_SQRT_2PI = 0.5 * np.log(2 * np.pi)


def inverse_mills(z: np.ndarray) -> np.ndarray:
    """λ(z) = φ(z)/Φ(z), computed as exp(log φ(z) − log Φ(z)) (no 0/0 in the lower tail)."""
    return np.exp(-0.5 * z * z - LOG_SQRT_2PI - log_ndtr(z))


def _count(name: str, value, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return int(value)


def _real(name: str, value, *, positive: bool = False) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not np.isfinite(value):
        raise ValueError(f"{name} must be a finite number, got {value!r}")
    if positive and value <= 0:
        raise ValueError(f"{name} must be > 0, got {value!r}")
    return float(value)


def _positions(theta, dim: int) -> tuple[np.ndarray, np.ndarray]:
    """``theta`` as float64 ``(..., d)`` and its ``(B, d)`` view."""
    theta = np.asarray(theta, dtype=float)
    if theta.shape[-1:] != (dim,):
        raise ValueError(f"theta must have shape (..., {dim}), got {theta.shape}")
    return theta, theta.reshape(-1, dim)


def _in_blocks(function: Callable[[np.ndarray], np.ndarray], flat: np.ndarray,
               cost_per_position: int) -> np.ndarray:
    """``function`` (``(B, d) -> (B, ...)``) over the rows of ``flat`` in memory-bounded blocks."""
    block = max(1, BLOCK_BUDGET // max(1, cost_per_position))
    if len(flat) <= block:
        return function(flat)
    return np.concatenate([function(flat[start:start + block])
                           for start in range(0, len(flat), block)])


class ProbitRegression:
    """Bayesian probit regression on generated data (module docstring).

    Called by the workbench as ``ProbitRegression(rng, **arguments)``.

    rng: the :class:`numpy.random.Generator` all data are drawn from (w*, then the training
        set, then the held-out set).
    n_data: N, training points. n_test: M, held-out points. dim: d.
    prior_scale: σ₀ of the prior N(m₀ 1, σ₀² I). prior_mean: m₀, the prior mean of every weight.
    true_scale: τ, the scale of the true weights w* ~ N(0, τ² I).
    drop_prior: DELIBERATE BUG for the workbench's negative control: the minibatch estimator
        omits the prior term (the potential and its full gradient keep it).
    """

    def __init__(self, rng: np.random.Generator, *, n_data: int = 2000, n_test: int = 1000,
                 dim: int = 4, prior_scale: float = 1.0, prior_mean: float = 0.0,
                 true_scale: float = 1.0, drop_prior: bool = False) -> None:
        if not isinstance(rng, np.random.Generator):
            raise TypeError(f"rng must be a numpy.random.Generator, got {type(rng).__name__}")
        if not isinstance(drop_prior, bool):
            raise ValueError(f"drop_prior must be true or false, got {drop_prior!r}")
        self._n_data = _count("n_data", n_data, 1)
        self.n_test = _count("n_test", n_test, 1)
        self._dim = _count("dim", dim, 1)
        self.prior_scale = _real("prior_scale", prior_scale, positive=True)
        self.prior_mean = _real("prior_mean", prior_mean)
        self.true_scale = _real("true_scale", true_scale, positive=True)
        self.drop_prior = drop_prior

        self.true_weights = self.true_scale * rng.standard_normal(self._dim)
        self.features, self.labels = self._draw(rng, self._n_data)
        self.test_features, self.test_labels = self._draw(rng, self.n_test)
        self.signs = 2.0 * self.labels - 1.0
        self.test_signs = 2.0 * self.test_labels - 1.0

    def _draw(self, rng: np.random.Generator, count: int) -> tuple[np.ndarray, np.ndarray]:
        """(X, y): X rows N(0, I_d/d), y = 1{Xw* + ε > 0} as int64 in {0, 1}."""
        features = rng.standard_normal((count, self._dim)) / np.sqrt(self._dim)
        noise = rng.standard_normal(count)
        labels = (features @ self.true_weights + noise > 0).astype(np.int64)
        return features, labels

    # ------------------------------------------------------------------ sizes
    @property
    def n_data(self) -> int:
        """N, the number of training points (likelihood terms)."""
        return self._n_data

    @property
    def dim(self) -> int:
        """d, the dimension of θ."""
        return self._dim

    # ------------------------------------------------------------------ prior
    def prior_gradient(self, theta: np.ndarray) -> np.ndarray:
        """−∇log p(θ) = (θ − m₀)/σ₀², shape ``(..., d)``."""
        return (np.asarray(theta, dtype=float) - self.prior_mean) / self.prior_scale**2

    # ------------------------------------------------------------------ full data
    def potential(self, theta: np.ndarray) -> np.ndarray:
        """U(θ) without the prior's normaliser, shape ``(...,)`` for ``theta`` ``(..., d)``."""
        theta, flat = _positions(theta, self._dim)

        def block(rows):
            margins = self.signs * (rows @ self.features.T)  # (B, N)
            prior = np.sum((rows - self.prior_mean) ** 2, axis=1) / (2 * self.prior_scale**2)
            return prior - log_ndtr(margins).sum(axis=1)

        return _in_blocks(block, flat, self._n_data).reshape(theta.shape[:-1])

    def potential_gradient(self, theta: np.ndarray) -> np.ndarray:
        """The full-data ∇U(θ), shape ``(..., d)`` (always with the prior term)."""
        theta, flat = _positions(theta, self._dim)

        def block(rows):
            weights = self.signs * inverse_mills(self.signs * (rows @ self.features.T))
            return self.prior_gradient(rows) - weights @ self.features

        return _in_blocks(block, flat, self._n_data).reshape(theta.shape)

    def log_likelihood_gradient_sum(self, theta: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """Σ_{i∈rows[r]} ∇log p(y_i | x_i, θ_r) for ``theta`` ``(R, d)``, ``rows`` ``(R, n)``."""
        batch = self.features[rows]  # (R, n, d)
        signs = self.signs[rows]  # (R, n)
        margins = np.einsum("rnd,rd->rn", batch, theta)
        weights = signs * inverse_mills(signs * margins)
        return np.einsum("rn,rnd->rd", weights, batch)

    # ------------------------------------------------------------------ minibatches
    def minibatch_gradient(self) -> ProbitMinibatchGradient:
        """Chen's estimator ∇Ũ, replayed by the engine (honours ``drop_prior``)."""
        return ProbitMinibatchGradient(self)

    # ------------------------------------------------------------------ held-out data
    def test_functions(self) -> tuple[TestFunction, TestFunction]:
        """Held-out ``log_loss`` −(1/M) Σ_j log p(y_j | x_j, θ) and ``accuracy`` (the fraction
        of held-out points whose label is 1{x_jᵀθ > 0}), each ``(..., d) -> (..., 1)``."""
        features, signs, labels = self.test_features, self.test_signs, self.test_labels
        cost = features.shape[0]

        def log_loss(theta: np.ndarray) -> np.ndarray:
            theta, flat = _positions(theta, self._dim)

            def block(rows):
                return -log_ndtr(signs * (rows @ features.T)).mean(axis=1)

            return _in_blocks(block, flat, cost).reshape(theta.shape[:-1] + (1,))

        def accuracy(theta: np.ndarray) -> np.ndarray:
            theta, flat = _positions(theta, self._dim)

            def block(rows):
                return ((rows @ features.T > 0) == (labels == 1)).mean(axis=1)

            return _in_blocks(block, flat, cost).reshape(theta.shape[:-1] + (1,))

        return TestFunction("log_loss", log_loss), TestFunction("accuracy", accuracy)

    # ------------------------------------------------------------------ starts
    def initial_position(self, rng: np.random.Generator, shape=()) -> np.ndarray:
        """Dispersed starts m₀ + N(0, I), shape ``shape + (d,)``."""
        shape = (shape,) if isinstance(shape, numbers.Integral) else tuple(shape)
        return self.prior_mean + rng.standard_normal(shape + (self._dim,))


class ProbitMinibatchGradient:
    """``(position, indices) -> ∇Ũ(position)`` for :class:`ProbitRegression`.

    :meth:`prepare` keeps only the indices (int32 when N allows: the engine stores prepared
    minibatches for many updates); :meth:`__call__` gathers the rows X[minibatch] itself.
    """

    def __init__(self, model: ProbitRegression) -> None:
        self.model = model
        self.n_data = int(model.n_data)
        self.dim = int(model.dim)
        self.drop_prior = bool(model.drop_prior)
        self._index_type = np.int32 if self.n_data <= np.iinfo(np.int32).max else np.int64

    def prepare(self, indices: np.ndarray) -> np.ndarray:
        """The minibatch indices ``(..., n)`` themselves, checked and compactly typed."""
        indices = np.asarray(indices)
        if indices.ndim < 1 or indices.shape[-1] < 1:
            raise ValueError(f"indices must have shape (..., n) with n >= 1, got {indices.shape}")
        if not np.issubdtype(indices.dtype, np.integer):
            raise ValueError(f"indices must be integers, got {indices.dtype}")
        if indices.min() < 0 or indices.max() >= self.n_data:
            raise ValueError(f"indices must lie in [0, {self.n_data}), got "
                             f"[{indices.min()}, {indices.max()}]")
        return indices.astype(self._index_type, copy=False)

    def __call__(self, position: np.ndarray, minibatch: np.ndarray) -> np.ndarray:
        """∇Ũ at ``position`` ``(..., d)`` for ``minibatch`` ``(..., n)`` (same ``...``)."""
        position = np.asarray(position, dtype=float)
        minibatch = np.asarray(minibatch)
        if position.shape[-1:] != (self.dim,) or minibatch.shape[:-1] != position.shape[:-1]:
            raise ValueError(f"position must be (..., {self.dim}) and minibatch (..., n) with "
                             f"the same leading shape, got {position.shape} and "
                             f"{minibatch.shape}")
        batch_size = minibatch.shape[-1]
        theta = position.reshape(-1, self.dim)
        rows = minibatch.reshape(-1, batch_size)
        block = max(1, BLOCK_BUDGET // (batch_size * self.dim))
        sums = np.concatenate([
            self.model.log_likelihood_gradient_sum(theta[start:start + block],
                                                   rows[start:start + block])
            for start in range(0, len(theta), block)] or [np.zeros((0, self.dim))])
        estimate = (-(self.n_data / batch_size) * sums).reshape(position.shape)
        if self.drop_prior:  # the deliberate bug of the negative control
            return estimate
        return self.model.prior_gradient(position) + estimate
