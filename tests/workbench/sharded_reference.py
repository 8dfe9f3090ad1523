"""Two references for the sharded oracle's compiled recursion
(:mod:`workbench.oracles.sharded_scan`; tests/workbench/test_sharded_scan.py,
benchmarks/sharded_oracle_cost.py).

- :func:`recursion_moments`: the same recursion, m_l = A_l m_{l-1} + b_l and
  P_l = A_l P_{l-1} A_lᵀ + Q_l, in numpy over the chains for diagonal maps and in plain Python
  loops for full ones, with the kernel's order of operations: the kernel must equal it bit
  for bit.
- :func:`doubling_moments`: the maps composed into all prefixes by a doubling (Hillis-Steele)
  scan, O(L log L), as the package computed the moments before the recursion: the same
  mathematics with another rounding, so it agrees to rounding, not in the last bits.
"""

import numpy as np

from workbench.oracles.sharded_gaussian import StepMaps

FIELDS = ("sum_mean", "sum_second", "mean", "second", "final_mean", "final_covariance")
"""The arrays of :class:`~workbench.oracles.sharded_gaussian.ConditionalMoments` compared."""


def _gathered(means: list, covariances: list, checkpoints) -> dict:
    """FIELDS from the moments after every update: ``means`` ``(C, d)`` and covariances
    ``(C, d, d)`` per update; running sums one addition per update in update order."""
    mean = np.stack(means)
    second = np.stack(covariances) + mean[..., :, None] * mean[..., None, :]
    index = np.unique(checkpoints) - 1
    return dict(sum_mean=np.cumsum(mean, axis=0)[index],
                sum_second=np.cumsum(second, axis=0)[index], mean=mean[index],
                second=second[index], final_mean=mean[-1], final_covariance=covariances[-1])


def recursion_moments(maps: StepMaps, start: np.ndarray, checkpoints) -> dict:
    """The moments of :func:`~workbench.oracles.sharded_gaussian.conditional_moments` from
    ``start`` ``(chain, d)``, by FIELDS, with the compiled kernel's operations (module
    docstring)."""
    a, b, q = maps.transition, maps.offset, maps.noise
    n_chains, dim = b.shape[1:]
    mean = np.array(start, dtype=float)
    covariance = np.zeros((n_chains, dim, dim))
    means, covariances = [], []
    for step in range(b.shape[0]):
        if maps.diagonal:
            mean = a[step] * mean + b[step]
            covariance = (a[step][..., :, None] * covariance * a[step][..., None, :]
                          + q[step])
        else:
            mean, covariance = _full_step(a[step], b[step], q[step], mean, covariance)
        means.append(mean)
        covariances.append(covariance)
    return _gathered(means, covariances, checkpoints)


def _full_step(a, b, q, mean, covariance):
    """One update of full maps, chain by chain, as plain Python sums in index order."""
    n_chains, dim = b.shape
    new_mean, new_covariance = np.empty_like(mean), np.empty_like(covariance)
    for c in range(n_chains):
        half = [[sum_in_order(float(a[c, i, m]) * float(covariance[c, m, j])
                              for m in range(dim)) for j in range(dim)] for i in range(dim)]
        for i in range(dim):
            new_mean[c, i] = sum_in_order(float(a[c, i, m]) * float(mean[c, m])
                                          for m in range(dim)) + float(b[c, i])
            for j in range(dim):
                new_covariance[c, i, j] = sum_in_order(half[i][m] * float(a[c, j, m])
                                                       for m in range(dim)) + float(q[c, i, j])
    return new_mean, new_covariance


def sum_in_order(terms) -> float:
    """The terms added left to right (Python's ``sum`` starts from 0, which can change the
    sign of a zero)."""
    terms = iter(terms)
    total = next(terms)
    for term in terms:
        total += term
    return total


class _Diagonal:
    @staticmethod
    def apply(a, x):
        return a * x

    @staticmethod
    def compose(later, earlier):
        return later * earlier

    @staticmethod
    def sandwich(a, q):
        return a[..., :, None] * q * a[..., None, :]


class _Full:
    @staticmethod
    def apply(a, x):
        return np.einsum("...ij,...j->...i", a, x)

    @staticmethod
    def compose(later, earlier):
        return later @ earlier

    @staticmethod
    def sandwich(a, q):
        return a @ q @ np.swapaxes(a, -1, -2)


def doubling_moments(maps: StepMaps, start: np.ndarray, checkpoints) -> dict:
    """The same moments from the maps' prefix compositions (module docstring): at level
    ``shift`` = 1, 2, 4, ... element l becomes the composition of element l after element
    l - shift."""
    ops = _Diagonal if maps.diagonal else _Full
    transition, offset, noise = (maps.transition.copy(), maps.offset.copy(),
                                 maps.noise.copy())
    shift = 1
    while shift < offset.shape[0]:
        later = transition[shift:]
        new_offset = ops.apply(later, offset[:-shift]) + offset[shift:]
        new_noise = ops.sandwich(later, noise[:-shift]) + noise[shift:]
        transition[shift:] = ops.compose(later, transition[:-shift])
        offset[shift:], noise[shift:] = new_offset, new_noise
        shift *= 2
    mean = ops.apply(transition, np.asarray(start, dtype=float)) + offset
    return _gathered(list(mean), list(noise), checkpoints)
