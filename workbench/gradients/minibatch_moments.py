"""Cumulants of a minibatch sum drawn from a finite data set (the law of the gradient noise;
docs/math.md §10).

A minibatch of n indices from N points, with or without replacement, sums y_i = x_i - x̄ over
its members: T = Σ_{i∈B} y_i. Its second, third and fourth cumulants, from the power sums
p_r = Σ_i y_i^r (p₁ = 0):

- with replacement (n independent draws): κ_r(T) = n κ_r(y), with κ₂(y) = p₂/N,
  κ₃(y) = p₃/N, κ₄(y) = p₄/N - 3 (p₂/N)²;
- without replacement (a uniformly random n-subset), from the inclusion probabilities
  π_r = n(n-1)…(n-r+1) / (N(N-1)…(N-r+1)) of any r distinct points, summing the moments of
  T over the patterns of repeated indices:
  E T² = (π₁ - π₂) p₂,  E T³ = (π₁ - 3π₂ + 2π₃) p₃,
  E T⁴ = π₁ p₄ + π₂ (3p₂² - 7p₄) + 6π₃ (2p₄ - p₂²) + π₄ (3p₂² - 6p₄),
  κ₃ = E T³ and κ₄ = E T⁴ - 3 (E T²)² (T has mean 0).

The exact oracle needs κ₃ and κ₄ of the gradient noise for the variance of φ̂(θ²)
(:mod:`workbench.oracles.square_variance`); κ₂ is the familiar V_ζ.
"""

from __future__ import annotations

import numpy as np

from workbench.gradients.minibatch import check_batch


def _inclusion(n_data: int, batch_size: int, order: int) -> float:
    """π_r: the probability that r given distinct points are all in the minibatch."""
    value = 1.0
    for i in range(order):
        value *= max(batch_size - i, 0) / max(n_data - i, 1)
    return value


def sum_cumulants(data: np.ndarray, batch_size: int,
                  replacement: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(κ₂, κ₃, κ₄) of the minibatch sum of ``data`` ``(N, d)`` per column (module docstring)."""
    data = np.asarray(data, dtype=float)
    n_data = data.shape[0]
    check_batch(n_data, batch_size, replacement)
    centred = data - data.mean(axis=0)
    p2, p3, p4 = (np.sum(centred**r, axis=0) for r in (2, 3, 4))
    if replacement:
        k2, k3 = batch_size * p2 / n_data, batch_size * p3 / n_data
        return k2, k3, batch_size * (p4 / n_data - 3 * (p2 / n_data) ** 2)
    pi = [_inclusion(n_data, batch_size, r) for r in (1, 2, 3, 4)]
    second = (pi[0] - pi[1]) * p2
    third = (pi[0] - 3 * pi[1] + 2 * pi[2]) * p3
    fourth = (pi[0] * p4 + pi[1] * (3 * p2**2 - 7 * p4) + 6 * pi[2] * (2 * p4 - p2**2)
              + pi[3] * (3 * p2**2 - 6 * p4))
    return second, third, fourth - 3 * second**2
