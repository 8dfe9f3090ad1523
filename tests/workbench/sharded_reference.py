"""The numpy scan of the sharded oracle for diagonal maps, as the package ran it before the
compiled kernel (:mod:`workbench.oracles.sharded_scan`): the reference that kernel must equal
bit for bit (tests/workbench/test_sharded_scan.py, benchmarks/sharded_oracle_cost.py).

The package's generic doubling scan (``_prefix_compose``, which full maps still use) with
elementwise products for A = diag(a), then E θ_l, E θ_l θ_lᵀ and ``np.cumsum`` over the
updates, indexed at the checkpoints.
"""

import numpy as np

from workbench.oracles.sharded_gaussian import StepMaps, _prefix_compose

FIELDS = ("sum_mean", "sum_second", "mean", "second", "final_mean", "final_covariance")
"""The arrays of :class:`~workbench.oracles.sharded_gaussian.ConditionalMoments` compared."""


class _DiagonalReference:
    """A = diag(a): the numpy products of the scan before it was compiled."""

    @staticmethod
    def apply(a, x):
        return a * x

    @staticmethod
    def compose(later, earlier):
        return later * earlier

    @staticmethod
    def sandwich(a, q):
        return a[..., :, None] * q * a[..., None, :]


def reference_moments(maps: StepMaps, start: np.ndarray, checkpoints) -> dict:
    """The moments of :func:`~workbench.oracles.sharded_gaussian.conditional_moments` for
    diagonal ``maps`` from ``start`` ``(chain, d)``, by FIELDS."""
    transition, offset, noise = _prefix_compose(maps.transition.copy(), maps.offset.copy(),
                                                maps.noise.copy(), _DiagonalReference)
    mean = transition * start + offset
    second = noise + mean[..., :, None] * mean[..., None, :]
    index = np.unique(checkpoints) - 1
    return dict(sum_mean=np.cumsum(mean, axis=0)[index],
                sum_second=np.cumsum(second, axis=0)[index], mean=mean[index],
                second=second[index], final_mean=mean[-1], final_covariance=noise[-1])
