"""The compiled recursion of the sharded oracle (workbench/oracles/sharded_scan.py) against the
same recursion in numpy (diagonal maps) and plain Python (full maps), bit for bit, on random
maps; against the composition of the maps by a doubling scan, an independent formulation, to
rounding; and a negative control: that doubling scan, the same mathematics with another
rounding, is not bit-identical, so the bit-for-bit comparison can tell.

The references are :mod:`tests.workbench.sharded_reference`.
"""

import numpy as np
import pytest

from simulators.seeding import generator
from simulators.validation import InvalidParameter
from tests.workbench.sharded_reference import FIELDS, doubling_moments, recursion_moments
from workbench.oracles.sharded_gaussian import StepMaps, conditional_moments


def random_maps(n_updates: int, n_chains: int, dim: int, seed: int,
                diagonal: bool = True) -> tuple[StepMaps, np.ndarray]:
    """Contracting maps: a diagonal A with entries in [0.9, 1), or a full A = 0.95 I plus a
    small random part."""
    rng = generator(seed, "sharded-scan")
    if diagonal:
        a = rng.uniform(0.9, 1.0, (n_updates, n_chains, dim))
    else:
        a = 0.95 * np.eye(dim) + 0.02 * rng.standard_normal((n_updates, n_chains, dim, dim))
    b = rng.standard_normal((n_updates, n_chains, dim))
    root = rng.standard_normal((n_updates, n_chains, dim, dim))
    q = root @ np.swapaxes(root, -1, -2)
    return StepMaps(a, b, q, diagonal), rng.standard_normal((n_chains, dim))


def same_bits(x: np.ndarray, y: np.ndarray) -> bool:
    return x.shape == y.shape and x.dtype == y.dtype and x.tobytes() == y.tobytes()


@pytest.mark.parametrize("n_updates, n_chains, dim", [
    (1, 1, 1), (1, 3, 2), (2, 2, 2), (3, 1, 3), (7, 4, 2), (64, 2, 1), (100, 3, 2),
    (1000, 2, 3), (1537, 5, 2)])
def test_the_compiled_recursion_equals_the_numpy_recursion_bit_for_bit(n_updates, n_chains, dim):
    maps, start = random_maps(n_updates, n_chains, dim, n_updates)
    checkpoints = sorted({1, n_updates, max(1, n_updates // 3), max(1, n_updates // 2)})
    moments = conditional_moments(maps, start, checkpoints)
    expected = recursion_moments(maps, start, checkpoints)
    for field in FIELDS:
        assert same_bits(getattr(moments, field), expected[field]), field


@pytest.mark.parametrize("n_updates, n_chains, dim", [
    (1, 1, 1), (1, 2, 2), (5, 3, 2), (40, 2, 3), (120, 2, 2)])
def test_full_maps_equal_the_python_recursion_bit_for_bit(n_updates, n_chains, dim):
    maps, start = random_maps(n_updates, n_chains, dim, 100 + n_updates, diagonal=False)
    checkpoints = sorted({1, n_updates, max(1, n_updates // 2)})
    moments = conditional_moments(maps, start, checkpoints)
    expected = recursion_moments(maps, start, checkpoints)
    for field in FIELDS:
        assert same_bits(getattr(moments, field), expected[field]), field


@pytest.mark.parametrize("diagonal", [True, False])
def test_the_recursion_agrees_with_the_doubling_scan_to_rounding(diagonal):
    """The prefix compositions, an independent formulation of the same moments."""
    maps, start = random_maps(1537, 3, 2, 21, diagonal=diagonal)
    checkpoints = [1, 500, 1537]
    moments = conditional_moments(maps, start, checkpoints)
    composed = doubling_moments(maps, start, checkpoints)
    for field in FIELDS:
        np.testing.assert_allclose(getattr(moments, field), composed[field], rtol=1e-10,
                                   atol=1e-10, err_msg=field)


def test_a_broadcast_start_and_strided_maps_give_the_same_bits():
    maps, _ = random_maps(300, 6, 2, 11)
    strided = StepMaps(maps.transition[:, ::2], maps.offset[:, ::2], maps.noise[:, ::2], True)
    start = np.array([0.5, -1.0])
    moments = conditional_moments(strided, start, [10, 300, 150])
    expected = recursion_moments(strided, np.broadcast_to(start, (3, 2)), [10, 150, 300])
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
        expected = recursion_moments(growing, start, [10, 3000])
    for field in FIELDS:
        assert same_bits(getattr(moments, field), expected[field]), field


def test_negative_control_the_doubling_scan_differs_in_the_last_bits():
    """Same maths, other rounding: a bit-for-bit comparison sees it (so the tests above can
    fail), while the values agree to rounding."""
    maps, start = random_maps(1000, 2, 2, 5)
    moments = conditional_moments(maps, start, [1000])
    composed = doubling_moments(maps, start, [1000])
    assert not same_bits(moments.final_covariance, composed["final_covariance"])
    np.testing.assert_allclose(moments.final_covariance, composed["final_covariance"],
                               rtol=1e-10)
    np.testing.assert_allclose(moments.final_mean, composed["final_mean"], rtol=1e-10,
                               atol=1e-12)


def test_checkpoints_outside_the_run_name_the_field():
    maps, start = random_maps(5, 1, 1, 1)
    with pytest.raises(InvalidParameter, match="checkpoints"):
        conditional_moments(maps, start, [0, 5])
    with pytest.raises(InvalidParameter, match="checkpoints"):
        conditional_moments(maps, start, [6])
