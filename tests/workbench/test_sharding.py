"""Sharding: partitions, the data regimes of seeds 002 and 004, refusal of bad sizes."""

import numpy as np
import pytest

from simulators.seeding import generator
from simulators.validation import InvalidParameter
from workbench.data.sharding import (
    Sharding,
    class_disjoint,
    equal_sizes,
    gaussian_blobs,
    iid_shards,
    label_skew,
    uniform_centres,
)


def test_iid_shards_partition_the_data_with_the_given_sizes():
    sharding = iid_shards(generator(1), 20, [3, 5, 12])
    assert sharding.sizes.tolist() == [3, 5, 12]
    assert sorted(sharding.order.tolist()) == list(range(20))
    assert sharding.offsets.tolist() == [0, 3, 8]
    data = np.arange(20) * 10
    np.testing.assert_array_equal(sharding.arrange(data)[3:8], data[sharding.shards[1]])


def test_gaussian_blobs_are_centred_on_their_centres():
    rng = generator(2)
    centres = uniform_centres(rng, 10, 2, 6.0)
    assert np.all(np.abs(centres) <= 6.0)
    data, sharding = gaussian_blobs(rng, centres, [200] * 10, 1.0)
    assert data.shape == (2000, 2) and sharding.n_shards == 10
    means = np.stack([data[s].mean(axis=0) for s in sharding.shards])
    # each shard mean within z = 5 standard errors (1/√200) of its centre (rate 6e-7 each)
    assert np.all(np.abs(means - centres) <= 5 / np.sqrt(200))


@pytest.mark.parametrize("a, b", [(100.0, 100.0), (0.5, 0.5)])
def test_label_skew_gives_each_shard_its_drawn_proportion_of_positives(a, b):
    labels = np.tile([0, 1], 3000)
    sharding, proportions = label_skew(generator(3), labels, [200] * 12, a, b)
    for shard, proportion in zip(sharding.shards, proportions, strict=True):
        assert shard.size == 200
        assert labels[shard].mean() == proportion
    if a > 1:  # Beta(100, 100): every shard nearly balanced
        assert np.all(np.abs(proportions - 0.5) < 0.2)
    else:  # Beta(0.5, 0.5): shards pushed towards one label
        assert np.mean(np.abs(proportions - 0.5) > 0.3) > 0.3


def test_class_disjoint_shards_share_no_class():
    labels = np.repeat(np.arange(26), 30)
    sharding = class_disjoint(generator(4), labels, 10)
    classes = [set(labels[s].tolist()) for s in sharding.shards]
    assert sum(len(c) for c in classes) == 26
    assert all(not (classes[i] & classes[j]) for i in range(10) for j in range(i + 1, 10))


def test_equal_sizes_spread_the_remainder():
    assert equal_sizes(10, 4) == [3, 3, 2, 2]


@pytest.mark.parametrize("call, field", [
    (lambda: iid_shards(generator(0), 20, [5, 5, 5]), "shard_sizes"),
    (lambda: iid_shards(generator(0), 20, [5, 0, 15]), "shard_sizes[1]"),
    (lambda: gaussian_blobs(generator(0), np.zeros((2, 2)), [3], 1.0), "shard_sizes"),
    (lambda: label_skew(generator(0), np.zeros(50, int), [20, 20], 1.0, 1.0), "shard_sizes"),
    (lambda: label_skew(generator(0), np.zeros(50, int), [20], 0.0, 1.0), "beta_a"),
    (lambda: class_disjoint(generator(0), np.arange(3), 4), "n_shards"),
    (lambda: Sharding((np.array([0, 1]), np.array([1, 2])), 3), "shards"),
    (lambda: equal_sizes(3, 4), "n_shards"),
])
def test_bad_shardings_are_refused_naming_the_field(call, field):
    with pytest.raises(InvalidParameter) as error:
        call()
    assert error.value.field == field


def test_a_sharded_model_refuses_shard_sizes_that_do_not_add_up():
    from workbench.models.gaussian import GaussianMeanModel
    from workbench.models.sharded_gaussian import ShardedGaussianMean

    model = GaussianMeanModel(np.zeros((10, 2)))
    with pytest.raises(InvalidParameter) as error:
        ShardedGaussianMean(model, (4, 5))
    assert error.value.field == "shard_sizes"
    assert "add up to 10" in str(error.value)
