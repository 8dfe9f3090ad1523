"""The sharded oracle's moments, propagated update by update in one compiled pass.

:func:`workbench.oracles.sharded_gaussian.conditional_moments` needs, for every chain and
every update l of a schedule, the exact E θ_l and E θ_l θ_lᵀ of SGLD on the sharded Gaussian
mean, where each update is an affine map with added Gaussian noise, θ ↦ A_l θ + b_l + noise of
covariance Q_l (docs/math.md §12). From a deterministic start θ_0 the mean m and covariance P
propagate exactly (a sequential scan over the updates):

    m_l = A_l m_{l-1} + b_l,        P_l = A_l P_{l-1} A_lᵀ + Q_l,        P_0 = 0,

and E θ_l θ_lᵀ = P_l + m_l m_lᵀ. This kernel runs that recursion, O(d³) a chain and update
(O(d²) for diagonal A = diag(a)), update after update and within an update chain after chain
(the maps' memory order), keeping only every chain's (m, P) and the running sums of both
moments, one addition per update in update order, so that at the checkpoints it stores the
sums, the moments there, and after the last update the final mean and covariance: no array of
the updates' moments is made, whatever L.

Its floating-point operations are fixed: A m and A P Aᵀ are sums in index order (the product
A P first, then its product with Aᵀ), a diagonal A's sandwich is (a_i P_ij) a_j, each sum
adds its terms left to right, and there is no fastmath (no reassociation, no fused
multiply-add); so the bits do not depend on the machine's BLAS. The tests compare it bit for
bit with the same recursion written in numpy (diagonal maps) and in plain Python loops (full
maps), and to rounding with the composition of the maps by a doubling scan, an independent
formulation of the same mathematics (tests/workbench/sharded_reference.py).
"""

from __future__ import annotations

import numba
import numpy as np

from workbench.core.kernel_arrays import kernel_array


@numba.njit(cache=True)
def _propagated_moments(transition, offset, noise, start, index,
                        diagonal):  # pragma: no cover - compiled
    n_updates, n_chains, dim = offset.shape
    n_checkpoints = index.size
    sum_mean = np.empty((n_checkpoints, n_chains, dim))
    sum_second = np.empty((n_checkpoints, n_chains, dim, dim))
    mean_at = np.empty((n_checkpoints, n_chains, dim))
    second_at = np.empty((n_checkpoints, n_chains, dim, dim))
    # every chain's state, updated chain by chain within an update, so that the maps are
    # read in memory order
    mean = np.empty((n_chains, dim))
    covariance = np.zeros((n_chains, dim, dim))
    running_mean = np.zeros((n_chains, dim))
    running_second = np.zeros((n_chains, dim, dim))
    moved = np.empty(dim)
    half = np.empty((dim, dim))  # A P, before its product with Aᵀ
    for c in range(n_chains):
        for i in range(dim):
            mean[c, i] = start[c, i]
    k = 0
    for step in range(n_updates):
        for c in range(n_chains):
            a, m, p = transition[step, c], mean[c], covariance[c]
            if diagonal:
                for i in range(dim):
                    m[i] = a[i, 0] * m[i] + offset[step, c, i]
                    for j in range(dim):
                        p[i, j] = a[i, 0] * p[i, j] * a[j, 0] + noise[step, c, i, j]
            else:
                for i in range(dim):
                    total = a[i, 0] * m[0]
                    for n in range(1, dim):
                        total += a[i, n] * m[n]
                    moved[i] = total + offset[step, c, i]
                    for j in range(dim):
                        total = a[i, 0] * p[0, j]
                        for n in range(1, dim):
                            total += a[i, n] * p[n, j]
                        half[i, j] = total
                for i in range(dim):
                    m[i] = moved[i]
                    for j in range(dim):
                        total = half[i, 0] * a[j, 0]
                        for n in range(1, dim):
                            total += half[i, n] * a[j, n]
                        p[i, j] = total + noise[step, c, i, j]
            for i in range(dim):
                running_mean[c, i] = m[i] if step == 0 else running_mean[c, i] + m[i]
                for j in range(dim):
                    second = p[i, j] + m[i] * m[j]
                    running_second[c, i, j] = (second if step == 0
                                               else running_second[c, i, j] + second)
        while k < n_checkpoints and index[k] == step:
            # element by element here and below: an array assigned to a subarray
            # compiles numba's formatted shape error, seconds of a cold start
            for c in range(n_chains):
                for i in range(dim):
                    sum_mean[k, c, i] = running_mean[c, i]
                    mean_at[k, c, i] = mean[c, i]
                    for j in range(dim):
                        sum_second[k, c, i, j] = running_second[c, i, j]
                        second_at[k, c, i, j] = covariance[c, i, j] + mean[c, i] * mean[c, j]
            k += 1
    return sum_mean, sum_second, mean_at, second_at, mean, covariance


def propagated_moments(transition: np.ndarray, offset: np.ndarray, noise: np.ndarray,
                       start: np.ndarray, index: np.ndarray, diagonal: bool):
    """Running sums of E θ_l and E θ_l θ_lᵀ at the updates ``index`` (0-based, increasing),
    the moments there, and θ's mean and covariance after the last update (module docstring),
    from the maps ``transition`` (``(L, C, d)`` when ``diagonal``, else ``(L, C, d, d)``),
    ``offset`` ``(L, C, d)``, ``noise`` ``(L, C, d, d)`` and the deterministic start ``start``
    ``(C, d)``: the arrays of :class:`~workbench.oracles.sharded_gaussian.ConditionalMoments`.
    A diagonal ``transition`` goes in as ``(L, C, d, 1)``, so that one compiled signature
    serves both kinds of map."""
    transition = kernel_array(transition, np.float64)
    if diagonal:
        transition = transition[..., None]
    arrays = (kernel_array(x, np.float64) for x in (offset, noise, start))
    return _propagated_moments(transition, *arrays, kernel_array(index, np.int64),
                               bool(diagonal))
