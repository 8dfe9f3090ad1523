"""The sharded oracle's doubling scan for diagonal maps, compiled and fused with the moments
(issue 15, item 3).

:func:`workbench.oracles.sharded_gaussian.conditional_moments` composes the per-update maps
θ ↦ A θ + b (+ noise of covariance Q) of SGLD on the sharded Gaussian mean (math.md §7) into
all L prefixes by a doubling (Hillis-Steele) scan: at level ``shift`` = 1, 2, 4, ... every
element l >= shift becomes the composition of element l after element l - shift,

    Q_l ← (a_l,i Q_{l-shift},ij) a_l,j + Q_l,   b_l ← a_l b_{l-shift} + b_l,   a_l ← a_l a_{l-shift},

all from the values of the previous level. With A = diag(a) every product is elementwise.
This kernel performs that scan with the same floating-point operations in the same order per
element, so its bits are those of the numpy formulation (array operations over l for each
level): within a level it walks l downwards, so element l - shift still holds the previous
level's value when element l reads it, and the scan runs in place on one chain's copy of the
maps at a time, without temporaries. It then forms, in the same pass, E θ_l = a_l θ_0 + b_l,
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
    a = np.empty((n_updates, dim))
    b = np.empty((n_updates, dim))
    q = np.empty((n_updates, dim, dim))
    mean = np.empty(dim)
    running_mean = np.empty(dim)
    running_second = np.empty((dim, dim))
    for c in range(n_chains):
        a[:] = transition[:, c]
        b[:] = offset[:, c]
        q[:] = noise[:, c]
        shift = 1
        while shift < n_updates:
            for later in range(n_updates - 1, shift - 1, -1):
                earlier = later - shift
                for i in range(dim):
                    for j in range(dim):
                        q[later, i, j] = a[later, i] * q[earlier, i, j] * a[later, j] \
                            + q[later, i, j]
                for i in range(dim):
                    b[later, i] = a[later, i] * b[earlier, i] + b[later, i]
                    a[later, i] = a[later, i] * a[earlier, i]
            shift *= 2
        k = 0
        for step in range(n_updates):
            for i in range(dim):
                mean[i] = a[step, i] * start[c, i] + b[step, i]
                running_mean[i] = mean[i] if step == 0 else running_mean[i] + mean[i]
            for i in range(dim):
                for j in range(dim):
                    second = q[step, i, j] + mean[i] * mean[j]
                    running_second[i, j] = (second if step == 0
                                            else running_second[i, j] + second)
            while k < n_checkpoints and index[k] == step:
                for i in range(dim):
                    sum_mean[k, c, i] = running_mean[i]
                    mean_at[k, c, i] = mean[i]
                    for j in range(dim):
                        sum_second[k, c, i, j] = running_second[i, j]
                        second_at[k, c, i, j] = q[step, i, j] + mean[i] * mean[j]
                k += 1
        final_mean[c] = mean
        final_covariance[c] = q[n_updates - 1]
    return sum_mean, sum_second, mean_at, second_at, final_mean, final_covariance


def diagonal_moments(transition: np.ndarray, offset: np.ndarray, noise: np.ndarray,
                     start: np.ndarray, index: np.ndarray):
    """Running sums of E θ_l and E θ_l θ_lᵀ at the updates ``index`` (0-based, increasing),
    the moments there, and θ's mean and covariance after the last update, from diagonal maps
    ``transition`` ``(L, C, d)``, ``offset`` ``(L, C, d)``, ``noise`` ``(L, C, d, d)`` and the
    deterministic start ``start`` ``(C, d)``: the arrays of
    :class:`~workbench.oracles.sharded_gaussian.ConditionalMoments` (module docstring)."""
    arrays = (np.ascontiguousarray(x, dtype=np.float64)
              for x in (transition, offset, noise, start))
    return _diagonal_moments(*arrays, np.ascontiguousarray(index, dtype=np.int64))
