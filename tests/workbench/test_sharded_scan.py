"""The compiled doubling scan of the sharded oracle (workbench/oracles/sharded_scan.py) against
the numpy scan it replaced, bit for bit, on random diagonal maps; and a negative control: the
step-by-step recursion, the same mathematics with another rounding, is not bit-identical, so
the comparison can tell.

The numpy reference is :mod:`tests.workbench.sharded_reference`.
"""

import numpy as np
import pytest

from simulators.seeding import generator
from simulators.validation import InvalidParameter
from tests.workbench.sharded_reference import FIELDS, reference_moments
from workbench.oracles.sharded_gaussian import StepMaps, conditional_moments


def random_maps(n_updates: int, n_chains: int, dim: int, seed: int) -> tuple[StepMaps, np.ndarray]:
    rng = generator(seed, "sharded-scan")
    a = rng.uniform(0.9, 1.0, (n_updates, n_chains, dim))
    b = rng.standard_normal((n_updates, n_chains, dim))
    root = rng.standard_normal((n_updates, n_chains, dim, dim))
    q = root @ np.swapaxes(root, -1, -2)
    return StepMaps(a, b, q, True), rng.standard_normal((n_chains, dim))


def same_bits(x: np.ndarray, y: np.ndarray) -> bool:
    return x.shape == y.shape and x.dtype == y.dtype and x.tobytes() == y.tobytes()


@pytest.mark.parametrize("n_updates, n_chains, dim", [
    (1, 1, 1), (1, 3, 2), (2, 2, 2), (3, 1, 3), (7, 4, 2), (64, 2, 1), (100, 3, 2),
    (1000, 2, 3), (1537, 5, 2)])
def test_the_compiled_scan_equals_the_numpy_scan_bit_for_bit(n_updates, n_chains, dim):
    maps, start = random_maps(n_updates, n_chains, dim, n_updates)
    checkpoints = sorted({1, n_updates, max(1, n_updates // 3), max(1, n_updates // 2)})
    moments = conditional_moments(maps, start, checkpoints)
    expected = reference_moments(maps, start, checkpoints)
    for field in FIELDS:
        assert same_bits(getattr(moments, field), expected[field]), field


def test_a_broadcast_start_and_strided_maps_give_the_same_bits():
    maps, _ = random_maps(300, 6, 2, 11)
    strided = StepMaps(maps.transition[:, ::2], maps.offset[:, ::2], maps.noise[:, ::2], True)
    start = np.array([0.5, -1.0])
    moments = conditional_moments(strided, start, [10, 300, 150])
    expected = reference_moments(strided, np.broadcast_to(start, (3, 2)), [10, 150, 300])
    for field in FIELDS:
        assert same_bits(getattr(moments, field), expected[field]), field


def test_maps_that_overflow_give_the_same_infinities_and_nans():
    """Growing maps (|a| > 1) overflow to ±inf and then NaN (inf - inf, 0 · inf) at the same
    places with the same bits."""
    maps, start = random_maps(3000, 3, 2, 7)
    growing = StepMaps(maps.transition + 0.6, maps.offset, maps.noise, True)
    moments = conditional_moments(growing, start, [10, 3000])
    assert not np.isfinite(moments.sum_second).all()
    with np.errstate(over="ignore", invalid="ignore"):
        expected = reference_moments(growing, start, [10, 3000])
    for field in FIELDS:
        assert same_bits(getattr(moments, field), expected[field]), field


def test_negative_control_the_sequential_recursion_differs_in_the_last_bits():
    """Same maths, other rounding: a bit-for-bit comparison sees it (so the test above can
    fail), while the values agree to rounding."""
    maps, start = random_maps(1000, 2, 2, 5)
    moments = conditional_moments(maps, start, [1000])
    a, b, q = maps.transition, maps.offset, maps.noise
    mean, cov = start.copy(), np.zeros((2, 2, 2))
    for step in range(1000):
        mean = a[step] * mean + b[step]
        cov = a[step][..., :, None] * cov * a[step][..., None, :] + q[step]
    assert not same_bits(moments.final_covariance, cov)
    np.testing.assert_allclose(moments.final_covariance, cov, rtol=1e-10)
    np.testing.assert_allclose(moments.final_mean, mean, rtol=1e-10, atol=1e-12)


def test_checkpoints_outside_the_run_name_the_field():
    maps, start = random_maps(5, 1, 1, 1)
    with pytest.raises(InvalidParameter, match="checkpoints"):
        conditional_moments(maps, start, [0, 5])
    with pytest.raises(InvalidParameter, match="checkpoints"):
        conditional_moments(maps, start, [6])
