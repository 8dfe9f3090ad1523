"""The sharded oracle's doubling scan for diagonal maps, compiled and fused with the moments
(issue 15, item 3).

:func:`workbench.oracles.sharded_gaussian.conditional_moments` composes the per-update maps
θ ↦ A θ + b (+ noise of covariance Q) of SGLD on the sharded Gaussian mean (docs/math.md §12.3) into
all L prefixes by a doubling (Hillis-Steele) scan: at level ``shift`` = 1, 2, 4, ... every
element l >= shift becomes the composition of element l after element l - shift,

    Q_l,ij ← (a_l,i Q_{l-shift},ij) a_l,j + Q_l,ij,
    b_l ← a_l b_{l-shift} + b_l,
    a_l ← a_l a_{l-shift},

all from the values of the previous level. With A = diag(a) every product is elementwise.
This kernel performs that scan with the same floating-point operations in the same order per
element, so its bits are those of the numpy formulation (array operations over l for each
level): within a level it walks l downwards, so element l - shift still holds the previous
level's value when element l reads it, and the scan runs in place on one chain's copy of the
maps at a time (one record of a, b and Q per update, so that each element reads two places),
without temporaries. It then forms, in the same pass, E θ_l = a_l θ_0 + b_l,
E θ_l θ_lᵀ = Q_l + (E θ_l)(E θ_l)ᵀ and their running sums, one addition per update in update
order (the order of ``np.cumsum`` along the updates), keeping only the checkpoints' values: no
(L, C, d, d) array beyond the input is made. No fastmath: no reassociation, no fused
multiply-add. tests/workbench/test_sharded_scan.py compares it with the numpy scan bit for
bit.

Full (non-diagonal) maps keep the numpy scan: their matrix products go through BLAS, whose
order of summation and use of fused multiply-add depend on the machine's kernels, so no
compiled loop could promise the same bits.
"""

from __future__ import annotations

import numba
import numpy as np

from workbench.core.kernel_arrays import kernel_array


@numba.njit(cache=True)
def _diagonal_moments(transition, offset, noise, start, index):  # pragma: no cover - compiled
    n_updates, n_chains, dim = offset.shape
    n_checkpoints = index.size
    sum_mean = np.empty((n_checkpoints, n_chains, dim))
    sum_second = np.empty((n_checkpoints, n_chains, dim, dim))
    mean_at = np.empty((n_checkpoints, n_chains, dim))
    second_at = np.empty((n_checkpoints, n_chains, dim, dim))
    final_mean = np.empty((n_chains, dim))
    final_covariance = np.empty((n_chains, dim, dim))
    # one chain's maps, a record per update: a (d), b (d), Q (d × d, row-major)
    b0, q0 = dim, 2 * dim
    maps = np.empty((n_updates, q0 + dim * dim))
    mean = np.empty(dim)
    second = np.empty((dim, dim))
    running_mean = np.empty(dim)
    running_second = np.empty((dim, dim))
    for c in range(n_chains):
        for step in range(n_updates):
            for i in range(dim):
                maps[step, i] = transition[step, c, i]
                maps[step, b0 + i] = offset[step, c, i]
                for j in range(dim):
                    maps[step, q0 + i * dim + j] = noise[step, c, i, j]
        shift = 1
        while shift < n_updates:
            for later in range(n_updates - 1, shift - 1, -1):
                x, y = maps[later], maps[later - shift]  # x after y
                for i in range(dim):
                    for j in range(dim):
                        k = q0 + i * dim + j
                        x[k] = x[i] * y[k] * x[j] + x[k]
                for i in range(dim):
                    x[b0 + i] = x[i] * y[b0 + i] + x[b0 + i]
                    x[i] = x[i] * y[i]
            shift *= 2
        k = 0
        for step in range(n_updates):
            x = maps[step]
            for i in range(dim):
                mean[i] = x[i] * start[c, i] + x[b0 + i]
                running_mean[i] = mean[i] if step == 0 else running_mean[i] + mean[i]
            for i in range(dim):
                for j in range(dim):
                    second[i, j] = x[q0 + i * dim + j] + mean[i] * mean[j]
                    running_second[i, j] = (second[i, j] if step == 0
                                            else running_second[i, j] + second[i, j])
            while k < n_checkpoints and index[k] == step:
                # element by element here and below: an array assigned to a subarray
                # compiles numba's formatted shape error, seconds of a cold start
                for i in range(dim):
                    sum_mean[k, c, i] = running_mean[i]
                    mean_at[k, c, i] = mean[i]
                    for j in range(dim):
                        sum_second[k, c, i, j] = running_second[i, j]
                        second_at[k, c, i, j] = second[i, j]
                k += 1
        for i in range(dim):
            final_mean[c, i] = mean[i]
            for j in range(dim):
                final_covariance[c, i, j] = maps[n_updates - 1, q0 + i * dim + j]
    return sum_mean, sum_second, mean_at, second_at, final_mean, final_covariance


def diagonal_moments(transition: np.ndarray, offset: np.ndarray, noise: np.ndarray,
                     start: np.ndarray, index: np.ndarray):
    """Running sums of E θ_l and E θ_l θ_lᵀ at the updates ``index`` (0-based, increasing),
    the moments there, and θ's mean and covariance after the last update, from diagonal maps
    ``transition`` ``(L, C, d)``, ``offset`` ``(L, C, d)``, ``noise`` ``(L, C, d, d)`` and the
    deterministic start ``start`` ``(C, d)``: the arrays of
    :class:`~workbench.oracles.sharded_gaussian.ConditionalMoments` (module docstring)."""
    arrays = (kernel_array(x, np.float64) for x in (transition, offset, noise, start))
    return _diagonal_moments(*arrays, kernel_array(index, np.int64))
