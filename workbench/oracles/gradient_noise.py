"""How far D-SGLD and FSGLD gradient estimates are from the full gradient (docs/math.md §5, §11).

Exact identity at a fixed θ, minibatches of m drawn with replacement within shard s (without
replacement the minibatch term carries (N_s - m)/(N_s - 1)), shard s
chosen with probability f_s: with m_s the shard-mean score, Var_s the within-shard score
variance (trace, divisor N_s) and b_s = N_s m_s - α ∇log q_s(θ),

    E‖ĝ - ∇log p(X | θ)‖² = Σ_s N_s² Var_s/(f_s m) + [Σ_s ‖b_s‖²/f_s - ‖Σ_s b_s‖²]

(ĝ: the likelihood part of the estimator; the prior cancels). α = 0 is DSGLD (seed 002 Eq. 4);
α = 1 is FSGLD, where b_s is the approximation error a_s of the surrogate (seed 002 Eq. 5).
For α ≠ 1 (seed 002 Eq. 7) the same derivation holds with b_s as written.

A coupled group averages R such estimates from R distinct shards (seed 004 Eq. 6). When its
shards are a uniformly random R-subset of S equally likely shards (f_s = 1/S), the average
has E‖ĝ_R - ∇‖² = W/R + B (S - R)/(R (S - 1)), with W = mean_s N² Var_s/m the minibatch part
and B = mean_s ‖S b_s - Σ_z b_z‖² the between-shard part (sampling without replacement):
the minibatch part falls exactly by R, the shard part by a little more.

The constants of seed 002's bounds, evaluated on a grid of θ (seed 002 Figure 4):
γ_s² = max over θ and x_i ∈ X_s of ‖∇log p(x_i | θ)‖² (Assumption 1) and
ε_s² = max over θ of the shard average of ‖∇log p(x_i | θ) - N_s⁻¹ ∇log q_s(θ)‖² (Lemma 2).
"""

from __future__ import annotations

import numpy as np

from simulators import validation


def _shard_parts(scores: list[np.ndarray], surrogate_scores, alpha: float,
                 batch_size: int, replacement: bool):
    """N_s² Var_s (times the finite-population factor (N_s - m)/(N_s - 1) for minibatches
    drawn without replacement) and b_s per shard, from per-point scores ``(N_s, d)``."""
    sizes = np.array([s.shape[0] for s in scores], dtype=float)
    means = np.stack([s.mean(axis=0) for s in scores])
    within = np.array([np.sum(s.var(axis=0)) for s in scores]) * sizes**2
    if not replacement:
        within = within * (sizes - batch_size) / np.maximum(sizes - 1, 1)
    b = sizes[:, None] * means
    if surrogate_scores is not None:
        b = b - alpha * np.asarray(surrogate_scores, dtype=float)
    return within, b


def gradient_noise(scores: list[np.ndarray], probabilities, batch_size: int,
                   surrogate_scores=None, alpha: float = 1.0,
                   replacement: bool = True) -> dict[str, float]:
    """The identity's two parts and their total at one θ (module docstring).

    ``scores[s]``: ∇log p(x_i | θ) for the points of shard s; ``surrogate_scores``: ``(S, d)``
    values of ∇log q_s(θ), or None for DSGLD.
    """
    f = np.asarray(validation.frequencies("shard_probabilities", probabilities))
    batch_size = validation.integer("batch_size", batch_size, minimum=1)
    within, b = _shard_parts(scores, surrogate_scores, alpha, batch_size, replacement)
    minibatch = float(np.sum(within / (f * batch_size)))
    shard = float(np.sum(np.sum(b**2, axis=1) / f) - np.sum(b.sum(axis=0) ** 2))
    return {"minibatch": minibatch, "shard": shard, "total": minibatch + shard}


def coupled_gradient_noise(scores: list[np.ndarray], batch_size: int, group_size: int,
                           surrogate_scores=None, alpha: float = 1.0,
                           replacement: bool = True) -> dict[str, float]:
    """E‖ĝ_R - ∇‖² for a group of R chains on a uniformly random R-subset of S shards."""
    n_shards = len(scores)
    group_size = validation.integer("group_size", group_size, minimum=1)
    if group_size > n_shards:
        raise validation.InvalidParameter("group_size", group_size,
                                          f"must be <= the number of shards ({n_shards})")
    within, b = _shard_parts(scores, surrogate_scores, alpha, batch_size, replacement)
    minibatch = float(np.mean(within * n_shards**2 / batch_size)) / group_size
    deviations = n_shards * b - b.sum(axis=0)
    between = float(np.mean(np.sum(deviations**2, axis=1)))
    if n_shards > 1:
        shard = between * (n_shards - group_size) / (group_size * (n_shards - 1))
    else:
        shard = 0.0
    return {"minibatch": minibatch, "shard": shard, "total": minibatch + shard}


def theta_grid(half_width: float, points: int, dim: int = 2) -> np.ndarray:
    """A regular grid over [-half_width, half_width]^dim, shape ``(points^dim, dim)``."""
    half_width = validation.positive("grid_half_width", half_width)
    points = validation.integer("grid_points", points, minimum=2)
    axes = np.meshgrid(*[np.linspace(-half_width, half_width, points)] * dim, indexing="ij")
    return np.stack([axis.ravel() for axis in axes], axis=1)


def gamma_squared(point_scores, n_shards: int, grid: np.ndarray) -> np.ndarray:
    """γ_s² on the grid: ``point_scores(θ_grid, s)`` gives ``(G, N_s, d)`` scores."""
    return np.array([float(np.max(_squared_norms(point_scores(grid, s))))
                     for s in range(n_shards)])


def epsilon_squared(point_scores, shard_sizes, grid: np.ndarray, surrogates) -> np.ndarray:
    """ε_s² on the grid for surrogates with ``score(θ, shard)`` (module docstring)."""
    values = []
    for s, size in enumerate(shard_sizes):
        residual = point_scores(grid, s) - surrogates.score(grid, s)[:, None, :] / size
        values.append(float(np.max(np.mean(_squared_norms(residual), axis=-1))))
    return np.array(values)


def _squared_norms(vectors: np.ndarray) -> np.ndarray:
    """‖v‖² over the last axis, bit for bit ``np.sum(v**2, axis=-1)``: numpy adds fewer than
    8 contiguous terms in sequence, so for such d the squares are added column by column in
    that order, without the reduction's inner loops of d elements (as slow as the arithmetic
    at d = 2; tests/workbench/test_gradient_noise.py compares the two for d = 1 .. 9)."""
    squares = np.square(vectors)
    dim = squares.shape[-1]
    if not 0 < dim < 8:
        return np.sum(squares, axis=-1)
    total = squares[..., 0].copy()
    for k in range(1, dim):
        total += squares[..., k]
    return total
