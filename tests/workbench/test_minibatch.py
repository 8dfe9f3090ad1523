"""Minibatch draws: uniform subsets, and independence from how a run is chunked."""

import itertools
import math

import numpy as np
import pytest
from scipy import stats

from simulators.validation import InvalidParameter
from workbench.gradients.minibatch import draw_indices


@pytest.mark.parametrize("n_data, batch_size", [(10, 3), (6, 4), (8, 8)])
def test_without_replacement_every_subset_is_equally_likely(n_data, batch_size):
    # (10, 3) uses Floyd's algorithm, (6, 4) and (8, 8) the random-key path.
    rng = np.random.default_rng(0)
    draws = draw_indices(rng, n_data, batch_size, (60_000,), replacement=False)
    assert all(len(set(row)) == batch_size for row in draws[:1000].tolist())
    subsets = list(itertools.combinations(range(n_data), batch_size))
    index = {s: i for i, s in enumerate(subsets)}
    counts = np.bincount([index[tuple(sorted(row))] for row in draws.tolist()],
                         minlength=len(subsets))
    if len(subsets) > 1:
        # chi-square goodness of fit; a correct sampler fails with probability 1e-4
        assert stats.chisquare(counts).pvalue > 1e-4
    assert counts.sum() == 60_000 and math.comb(n_data, batch_size) == len(subsets)


def test_batch_larger_than_data_without_replacement_is_refused():
    from workbench.gradients.minibatch import check_batch

    with pytest.raises(InvalidParameter, match="batch_size"):
        check_batch(10, 11, replacement=False)
    with pytest.raises(InvalidParameter, match="batch_size"):
        check_batch(10, 0, replacement=True)


@pytest.mark.parametrize("batch_size", [*range(1, 20), 31, 64, 100, 128, 129, 200, 300])
def test_batch_sum_adds_exactly_as_numpy_sum_does(batch_size):
    """The engine's column-wise batch sum is bit-identical to np.sum over a contiguous axis."""
    from workbench.gradients.minibatch import batch_sum

    rng = np.random.default_rng(batch_size)
    values = rng.standard_normal((3, 17, batch_size)) * 10.0 ** rng.uniform(-4, 4, (3, 17,
                                                                                     batch_size))
    expected = values.sum(axis=-1)
    np.testing.assert_array_equal(batch_sum(np.moveaxis(values, -1, 0)), expected)


@pytest.mark.parametrize("dim", [1, 2, 10])
@pytest.mark.parametrize("batch_size", [1, 10, 100])
def test_gaussian_minibatch_means_are_numpy_means_bit_for_bit(dim, batch_size):
    from simulators.seeding import generator
    from workbench.models.gaussian import GaussianMeanModel

    model = GaussianMeanModel.generate(generator(5, "data"), 1000, dim, 0.3)
    indices = np.random.default_rng(dim).integers(0, 1000, (7, 5, 2, batch_size))
    prepared = model.minibatch_gradient().prepare(indices)
    batch_mean = model.data.take(indices, axis=0).sum(axis=-2) / batch_size
    expected = (model.prior_mean / model.prior_scale**2
                + model.n_data / model.noise_scale**2 * batch_mean)
    np.testing.assert_array_equal(prepared, expected)


@pytest.mark.parametrize("shard_size", [7, 200, 2000, 3 * 2**30])
def test_equal_shards_draw_exactly_what_per_element_bounds_draw(shard_size):
    """The scalar-bound shortcut for equal shard sizes gives numpy's per-element draws bit for
    bit (and leaves the generator in the same state), so no replicate's path changes."""
    shape, batch = (64, 5, 3), 10
    sizes = np.full((64, 1, 3), shard_size)
    fast, direct = np.random.default_rng(11), np.random.default_rng(11)
    drawn = draw_indices(fast, sizes, batch, shape, replacement=True)
    expected = direct.integers(0, np.broadcast_to(sizes, shape)[..., None], shape + (batch,))
    np.testing.assert_array_equal(drawn, expected)
    assert fast.random() == direct.random()


def test_unequal_shards_keep_their_own_bounds():
    sizes = np.array([3, 1000])[None, None, :]
    drawn = draw_indices(np.random.default_rng(2), sizes, 50, (64, 4, 2), replacement=True)
    assert drawn[..., 0, :].max() < 3 and drawn[..., 1, :].max() >= 3


@pytest.mark.parametrize("dim, batch_size", [(1, 3), (1, 10), (1, 300), (2, 10), (3, 300)])
def test_batch_means_are_numpy_means_bit_for_bit(dim, batch_size):
    """Sharded estimators' minibatch means add in numpy's own order (pairwise along the
    contiguous batch axis for d = 1, in sequence for d > 1): stored results do not move."""
    from workbench.gradients.minibatch import batch_means

    rng = np.random.default_rng(3)
    data = rng.standard_normal((500, dim)) * 1e3 + rng.standard_normal((500, dim))
    indices = rng.integers(0, 500, (64, 7, 2, batch_size))
    np.testing.assert_array_equal(batch_means(data, indices),
                                  data.take(indices, axis=0).mean(axis=-2))
