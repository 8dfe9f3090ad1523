"""γ_s² and ε_s² on the grid (workbench.oracles.gradient_noise) against the numpy formulation
they replaced (kept here), bit for bit; the column-by-column squared norms against np.sum."""

import numpy as np
import pytest

from workbench.oracles.gradient_noise import _squared_norms, epsilon_squared, gamma_squared


def _vectors(dim, seed=0):
    rng = np.random.default_rng(seed)
    values = rng.standard_normal((4000, dim)) * 10.0 ** rng.uniform(-150, 150, (4000, dim))
    values[::13, 0] = -0.0
    values[5, -1] = np.nan
    values[6, 0] = np.inf
    return values


@pytest.mark.parametrize("dim", range(1, 10))
def test_squared_norms_equal_numpy_sum_bit_for_bit(dim):
    values = _vectors(dim)
    with np.errstate(over="ignore", under="ignore"):
        expected = np.sum(values**2, axis=-1)
        got = _squared_norms(values)
    assert got.dtype == expected.dtype and got.tobytes() == expected.tobytes()
    strided = np.swapaxes(_vectors(dim, 1).reshape(2000, 2, dim), 0, 1)  # a strided view
    with np.errstate(over="ignore", under="ignore"):
        assert (_squared_norms(strided).tobytes()
                == np.sum(strided**2, axis=-1).tobytes())


@pytest.mark.parametrize("dim", [3, 5])
def test_negative_control_another_order_of_the_squares_differs(dim):
    values = _vectors(dim)
    with np.errstate(over="ignore", under="ignore"):
        backwards = _squared_norms(values[:, ::-1])
        assert backwards.tobytes() != np.sum(values**2, axis=-1).tobytes()


class _Surrogates:
    def __init__(self, seed):
        self.slopes = np.random.default_rng(seed).standard_normal((3, 2)) * 40.0

    def score(self, theta, shard):
        return -self.slopes[shard] * theta


def test_bound_constants_equal_the_replaced_formulation_bit_for_bit():
    rng = np.random.default_rng(4)
    shards = [rng.standard_normal((n, 2)) * 3.0 + 1.0 for n in (17, 40, 9)]

    def point_scores(theta, shard):
        return (shards[shard] - theta[..., None, :]) / 0.7**2

    grid = rng.uniform(-3, 3, (300, 2))
    surrogates, sizes = _Surrogates(5), [s.shape[0] for s in shards]
    replaced_gamma = np.array([float(np.max(np.sum(point_scores(grid, s) ** 2, axis=-1)))
                               for s in range(3)])
    replaced_epsilon = []
    for s, size in enumerate(sizes):
        residual = point_scores(grid, s) - surrogates.score(grid, s)[:, None, :] / size
        replaced_epsilon.append(float(np.max(np.mean(np.sum(residual**2, axis=-1), axis=-1))))
    assert gamma_squared(point_scores, 3, grid).tobytes() == replaced_gamma.tobytes()
    assert (epsilon_squared(point_scores, sizes, grid, surrogates).tobytes()
            == np.array(replaced_epsilon).tobytes())
    # negative control: a surrogate off by one part in 10^12 changes ε² but not γ²
    surrogates.slopes[1] *= 1 + 1e-12
    assert (epsilon_squared(point_scores, sizes, grid, surrogates).tobytes()
            != np.array(replaced_epsilon).tobytes())


def test_model_point_scores_equal_the_replaced_formulation_and_leave_the_data_alone():
    from workbench.models.gaussian import GaussianMeanModel
    from workbench.models.sharded_gaussian import ShardedGaussianMean

    data = np.random.default_rng(6).standard_normal((30, 2)) * 5.0
    sharded = ShardedGaussianMean(GaussianMeanModel(data, noise_scale=0.7), (12, 18))
    before = sharded.model.data.copy()
    theta = np.random.default_rng(7).standard_normal((4, 5, 2))
    for shard in (0, 1):
        got = sharded.point_scores(theta, shard)
        expected = (sharded.shard_data(shard) - theta[..., None, :]) / 0.7**2
        assert got.shape == (4, 5, sharded.shard_sizes[shard], 2)
        assert got.tobytes() == expected.tobytes()
        assert got.tobytes() != ((sharded.shard_data(shard) - theta[..., None, :])
                                 * (1 / 0.7**2)).tobytes()  # negative control: not a product
    assert sharded.model.data.tobytes() == before.tobytes()
