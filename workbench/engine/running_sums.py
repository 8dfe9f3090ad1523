"""The accumulator's compiled passes over one chunk of recorded positions (issue 15).

:class:`workbench.engine.replay_setup.Accumulator` keeps, per test function φ, the running sum
Σ_{l ≤ L} φ(θ_l) from which the checkpoint averages φ̂_L = (1/L) Σ_{l ≤ L} φ(θ_l) are taken
(seed 001 §3.1, Eq. 4: the sample average of the test function), and, per replicate and
server, the first sample count at which a coordinate left the divergence threshold. The two
kernels here are single passes that do the same floating-point operations as the numpy
formulation they replace, in the same order, so their results are bit-identical to it:

- :func:`running_sums`: ``cumsum(concatenate([previous[None], values]), axis=0)`` is a
  sequential loop, one addition per update in update order starting from the previous total
  (0.0 before the first chunk: 0.0 + φ keeps numpy's signed-zero result); the kernel makes
  those additions into the total in place and divides it by the sample count at each
  checkpoint inside the chunk (the same IEEE division, no fastmath). It never writes into
  ``values``, which may be a view of the positions or of a test function's cached data.
- :func:`mark_divergence`: ``~(|θ| <= threshold)`` on any coordinate (so NaN counts as bad),
  the first such update of each replicate and server not flagged before.
"""

from __future__ import annotations

import numba
import numpy as np


@numba.njit(cache=True)
def _running_sums(values, total, rows, counts, averages):
    """values (length, K); total (K,), advanced in place; averages[c] = total after row
    rows[c] divided by counts[c] (rows increasing)."""
    length, width = values.shape
    c = 0
    for t in range(length):
        for k in range(width):
            total[k] += values[t, k]
        while c < rows.size and rows[c] == t:
            count = counts[c]
            for k in range(width):
                averages[c, k] = total[k] / count
            c += 1


def running_sums(values: np.ndarray, total: np.ndarray, first: int,
                 inside: np.ndarray) -> np.ndarray:
    """Add the chunk's ``values`` (updates ``first + 1 ..``, float64) to ``total`` (float64,
    ``values.shape[1:]``, owned by the caller and advanced in place) update by update, and
    return the averages at the sample counts ``inside`` (increasing, within the chunk),
    ``(len(inside),) + total.shape``."""
    length = values.shape[0]
    flat = np.ascontiguousarray(values).reshape(length, -1)  # a copy only when strided
    counts = np.asarray(inside, dtype=np.int64)
    averages = np.empty((counts.size, flat.shape[1]))
    _running_sums(flat, total.reshape(-1), counts - first - 1, counts, averages)
    return averages.reshape((counts.size,) + total.shape)


@numba.njit(cache=True)
def _mark_divergence(positions, first, threshold, diverged_at):
    """positions (length, M, d); diverged_at (M,), -1 where not yet flagged."""
    length, m, d = positions.shape
    for t in range(length):
        for j in range(m):
            if diverged_at[j] >= 0:
                continue
            for k in range(d):
                if not abs(positions[t, j, k]) <= threshold:  # NaN is bad
                    diverged_at[j] = first + 1 + t
                    break


def mark_divergence(positions: np.ndarray, first: int, threshold: float,
                    diverged_at: np.ndarray) -> None:
    """Record, for replicates and servers not yet flagged (``diverged_at`` -1, shape
    ``positions.shape[1:-1]``, C-contiguous, updated in place), the first sample count
    ``first + 1 + t`` of the chunk with a coordinate outside ``[-threshold, threshold]``."""
    length = positions.shape[0]
    flat = np.ascontiguousarray(positions).reshape(length, diverged_at.size, -1)
    flags = diverged_at.reshape(-1)
    if not np.shares_memory(flags, diverged_at):
        raise ValueError("diverged_at must be C-contiguous (it is updated in place)")
    _mark_divergence(flat, first, float(threshold), flags)
