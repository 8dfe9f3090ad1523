"""Compiled sharded minibatch means (:func:`workbench.engine.compiled.shard_batch_means`, the
generic path's :meth:`~workbench.models.sharded_gaussian.ShardLocalGradient.prepare`) against
numpy's :func:`workbench.gradients.minibatch.batch_means` on the global rows, bit for bit (issue
15).

Covered: d = 1 (pairwise sum, every branch: below 8, 8 to 128, halves above) and d > 1 (in
sequence); shard ids broadcast over replicates as the engine passes them; unequal shards with
a one-point shard; D-SGLD's gradient at a prepared batch against the hand formula; one
coupled step with the noise off (seed 004 Eq. 6) against the hand average for groups whose
weights are powers of two; and coupled D-SGLD replays (groups of 1, 2, a hybrid mix and the
whole set; with and without replacement) against the same replays with the numpy preparation.

Negative controls: wide-range data on which a plain running sum differs from numpy's pairwise
order (so the comparison is sensitive to the order); a replay whose reference preparation is
one ulp off in its batch means is seen; an index outside its shard is refused.
"""

from __future__ import annotations

import numpy as np
import pytest

from simulators.seeding import generator
from simulators.traveling_chains import TravelingChains
from workbench.engine import replay as engine
from workbench.gradients import gathered_sums
from workbench.gradients.minibatch import batch_means
from workbench.gradients.sharded import ShardBatches, ShardScaled
from workbench.models.gaussian import GaussianMeanModel
from workbench.models.sharded_gaussian import ShardedGaussianMean, ShardLocalGradient
from workbench.samplers.coupled import CoupledSGLD

SIZES = np.array([1, 149, 350, 500])  # one-point shard: only index 0
OFFSETS = np.concatenate(([0], np.cumsum(SIZES)[:-1]))


def _wide_data(rng, dim):
    """Values over 40 orders of magnitude: sums in different orders round differently."""
    return rng.standard_normal((SIZES.sum(), dim)) * np.exp(rng.uniform(-20, 20, (SIZES.sum(),
                                                                                   dim)))


def _local_indices(rng, shards, replicates, n):
    """Shard-local indices ``(update, replicate, server, n)`` for shards ``(update, 1, server)``."""
    bound = SIZES[shards][:, :, :, None]
    shape = (shards.shape[0], replicates, shards.shape[2], n)
    return (rng.random(shape) * bound).astype(np.int64)


def _numpy_means(data, shards, indices):
    """The numpy preparation: batch_means on the global rows ``offsets[shards] + indices``."""
    return batch_means(data, OFFSETS[shards][..., None] + indices)


@pytest.mark.parametrize("dim", [1, 2, 3])
@pytest.mark.parametrize("batch_size", [1, 7, 8, 9, 100, 128, 129, 300])
def test_shard_means_are_numpy_means_of_the_global_rows_bit_for_bit(dim, batch_size):
    rng = generator(11, "shard-means", dim, batch_size)
    data = _wide_data(rng, dim)
    shards = rng.integers(0, SIZES.size, (64, 1, 5))
    indices = _local_indices(rng, shards, 3, batch_size)
    got = gathered_sums.shard_batch_means(data, OFFSETS, SIZES, shards, indices)
    expected = _numpy_means(data, shards, indices)
    assert got.shape == expected.shape == (64, 3, 5, dim)
    np.testing.assert_array_equal(got, expected)
    np.testing.assert_array_equal(expected, data.take(OFFSETS[shards][..., None] + indices,
                                                      axis=0).mean(axis=-2))
    if dim == 1 and batch_size >= 9:
        # negative control: a plain running sum of the same rows rounds differently here
        rows = (OFFSETS[shards][..., None] + indices).reshape(-1, batch_size)
        running = np.array([sum(data[r, 0].tolist()) for r in rows]) / batch_size
        assert not np.array_equal(running, expected.reshape(-1))


def test_an_index_outside_its_shard_is_refused():
    data = np.arange(float(SIZES.sum()))[:, None]
    shards = np.array([[[0, 2]]])
    # shard 0 holds one point: local index 1 would read shard 1's first row; -1 the row before
    for bad in (1, -1):
        with pytest.raises(IndexError, match="outside its shard"):
            gathered_sums.shard_batch_means(data, OFFSETS, SIZES, shards,
                                            np.array([[[[bad], [3]]]]))
    means = gathered_sums.shard_batch_means(data, OFFSETS, SIZES, shards, np.array([[[[0], [3]]]]))
    np.testing.assert_array_equal(means, [[[[0.0], [OFFSETS[2] + 3.0]]]])


@pytest.fixture(scope="module")
def sharded():
    model = GaussianMeanModel.generate(generator(12, "shard-means-data"), int(SIZES.sum()), 2,
                                       0.5)
    return ShardedGaussianMean(model, tuple(int(s) for s in SIZES))


def test_dsgld_gradient_at_a_prepared_batch_is_the_hand_formula(sharded):
    """∇Ũ = (θ - m₀)/σ₀² + (N_s/(N q_s))·(N/σ_x²)(θ - x̄_B), x̄_B the mean of the listed shard
    rows (seed 004 Eq. 2-3), exactly."""
    model, estimator = sharded.model, ShardScaled(sharded.shard_gradient())
    shards, frequency = np.array([[[3, 1]]]), np.array([[[0.25, 0.5]]])
    local = np.array([[[[4, 4, 499], [0, 148, 7]]]])
    batch = estimator.prepare(local, shards, frequency)[0]
    theta = np.array([[[0.3, -0.2], [1.5, 0.25]]])
    gradient = estimator(theta, batch)
    for q, (shard, q_s) in enumerate(zip((3, 1), (0.25, 0.5), strict=True)):
        rows = sharded.shard_data(shard)[local[0, 0, q]]
        mean = rows.mean(axis=0)  # in sequence over the rows, as the kernel adds them
        np.testing.assert_array_equal(batch.batch[0, q], mean)
        weight = (sharded.shard_sizes[shard] / model.n_data) / q_s
        expected = ((theta[0, q] / model.prior_scale**2 - model.prior_mean / model.prior_scale**2)
                    + weight * ((model.n_data / model.noise_scale**2) * (theta[0, q] - mean)))
        np.testing.assert_array_equal(gradient[0, q], expected)


def test_one_coupled_step_without_noise_is_the_average_of_the_members(sharded):
    """Noise off: θ' = mean over the group of (θ - h ∇Ũ_r) (seed 004 Eq. 6); groups of 1 and 2,
    whose weights 1 and 1/2 make the average exact by hand."""
    h, groups = 1e-4, (1, 2, 1)
    sampler = CoupledSGLD(h, groups)
    estimator = ShardScaled(sharded.shard_gradient())
    rng = generator(13, "coupled-step")
    state = sampler.init(rng.standard_normal((3, 4, 2)))
    shards = np.array([[[0, 1, 2, 3]]])
    local = _local_indices(rng, shards, 3, 10)
    batch = estimator.prepare(local, shards, np.full(shards.shape, 0.25))[0]
    gradient = estimator(state.position, batch)
    after = sampler.step(state, gradient, np.zeros_like(gradient)).position
    members = state.position - h * gradient
    np.testing.assert_array_equal(after[:, 0], members[:, 0])
    np.testing.assert_array_equal(after[:, 3], members[:, 3])
    pair = (members[:, 1] + members[:, 2]) * 0.5
    np.testing.assert_array_equal(after[:, 1], pair)
    np.testing.assert_array_equal(after[:, 2], pair)


GROUPS = {"ones": (1,) * 6, "pairs": (2, 2, 2), "hybrid": (4, 2), "whole": (6,)}


@pytest.fixture(scope="module")
def six_shards():
    """Six unequal shards, one a chain (per-element index bounds; Floyd's algorithm for n = 6)."""
    sizes = (40, 149, 350, 500, 90, 120)
    model = GaussianMeanModel.generate(generator(16, "shard-means-data"), sum(sizes), 2, 0.5)
    return ShardedGaussianMean(model, sizes)


def _coupled_replay(sharded, groups, **options):
    schedule = TravelingChains(6, trajectory_lengths=4, assignment="permutation",
                               coupling_groups=groups, coupling_time=0.5).simulate(300, seed=14)
    settings = dict(n_updates=300, n_replicates=7, initial_position=0.2, seed=15,
                    batch_size=10, replicate_block=3, checkpoints=[1, 64, 300], thin=7)
    settings.update(options)
    return engine.replay(schedule, CoupledSGLD(2e-5, groups), ShardScaled(
        ShardLocalGradient(sharded)), **settings)


def _numpy_prepare(gradient, indices, shards, frequencies):
    return ShardBatches(shards, frequencies, batch_means(
        gradient._data, gradient._offsets[shards][..., None] + indices))


def _assert_same(a, b):
    for name in a.averages:
        np.testing.assert_array_equal(a.averages[name], b.averages[name])
    np.testing.assert_array_equal(a.draws, b.draws)
    np.testing.assert_array_equal(a.diverged_at, b.diverged_at)
    np.testing.assert_array_equal(a.final_position, b.final_position)


@pytest.mark.parametrize("groups", GROUPS, ids=list(GROUPS))
@pytest.mark.parametrize("options", [{}, {"replacement": False, "batch_size": 6}],
                         ids=["replacement", "floyd"])
def test_coupled_replays_are_those_of_the_numpy_preparation(monkeypatch, six_shards, groups,
                                                            options):
    compiled = _coupled_replay(six_shards, GROUPS[groups], **options)
    monkeypatch.setattr(ShardLocalGradient, "prepare", _numpy_prepare)
    reference = _coupled_replay(six_shards, GROUPS[groups], **options)
    _assert_same(compiled, reference)
    assert np.all(np.isfinite(compiled.final_position))


def test_the_replay_comparison_sees_batch_means_one_ulp_off(monkeypatch, six_shards):
    compiled = _coupled_replay(six_shards, GROUPS["hybrid"])

    def nudged(gradient, indices, shards, frequencies):
        prepared = _numpy_prepare(gradient, indices, shards, frequencies)
        prepared.batch[...] = np.nextafter(prepared.batch, np.inf)
        return prepared

    monkeypatch.setattr(ShardLocalGradient, "prepare", nudged)
    with pytest.raises(AssertionError):
        _assert_same(compiled, _coupled_replay(six_shards, GROUPS["hybrid"]))
