"""THETA_OUTER's compiled products against the numpy broadcast product they replaced (kept here),
bit for bit, and the input left untouched."""

import numpy as np
import pytest

from workbench.systems.distributed.windows import THETA_OUTER


def _replaced(position):
    with np.errstate(over="ignore", invalid="ignore", under="ignore"):
        return (position[..., :, None] * position[..., None, :]).reshape(
            position.shape[:-1] + (-1,))


def _positions(shape, seed=0):
    position = np.random.default_rng(seed).standard_normal(shape) * 1e150
    flat = position.reshape(-1)
    flat[::5] = -0.0
    flat[1::17] = np.nan
    flat[2::23] = -np.inf
    flat[3::29] *= 1e-300  # subnormal products
    return position


@pytest.mark.parametrize("shape", [(1, 1, 2), (37, 3, 4, 1), (50, 3, 20, 2), (9, 2, 1, 3)])
def test_outer_products_equal_the_broadcast_product_bit_for_bit(shape):
    position = _positions(shape)
    before = position.copy()
    got, expected = THETA_OUTER(position), _replaced(position)
    assert got.shape == expected.shape and got.dtype == expected.dtype
    assert got.tobytes() == expected.tobytes()
    assert position.tobytes() == before.tobytes()
    view = position[::-1, :, ::-1]  # a strided view is read, not written
    assert THETA_OUTER(view).tobytes() == _replaced(view).tobytes()


def test_negative_control_one_ulp_or_another_row_differs():
    position = np.random.default_rng(1).standard_normal((4, 2, 1, 3))
    nudged = position.copy()
    nudged[2, 1, 0, 1] = np.nextafter(nudged[2, 1, 0, 1], np.inf)
    assert THETA_OUTER(position).tobytes() == _replaced(position).tobytes()
    assert THETA_OUTER(position).tobytes() != _replaced(nudged).tobytes()
    assert THETA_OUTER(position).tobytes() != _replaced(position[::-1]).tobytes()
