"""The engine on sharded schedules: per-update shards, local indices, refusal of bad setups."""

import numpy as np
import pytest
from scipy import stats

from simulators.schedule import Schedule
from simulators.seeding import generator
from simulators.static import constant_staleness
from simulators.validation import InvalidParameter
from workbench.engine.replay import replay
from workbench.engine.replay_setup import DRAW_STEPS
from workbench.gradients.minibatch import draw_indices
from workbench.samplers import SGLD

SIZES = (7, 30, 300)


def _sharded(n_updates: int, n_servers: int = 2) -> Schedule:
    """Constant-staleness-0 schedule whose updates cycle through shards with a period of 5."""
    base = constant_staleness(n_updates, 0, n_servers=n_servers)
    columns = {name: getattr(base, name) for name in
               ("server", "worker", "kind", "version_read", "staleness", "applied",
                "start_time", "finish_time", "time")}
    pattern = np.array([0, 1, 1, 2, 2])
    shard = pattern[(base.version_read + 2 * base.server) % 5]
    frequency = np.array([0.2, 0.4, 0.4])[shard]
    return Schedule(**columns, shard=shard, shard_frequency=frequency, attrs=base.attrs)


class Recorder:
    """A shard-aware estimator that keeps what the engine hands it and returns zero."""

    def __init__(self, sizes=SIZES):
        self.shard_sizes = sizes
        self.n_data = sum(sizes)
        self.dim = 1
        self.seen = []

    def prepare(self, indices, shards, frequencies):
        self.seen.append((indices, shards, frequencies))
        return np.zeros(indices.shape[:-1] + (1,))

    def __call__(self, position, minibatch):
        return np.zeros_like(position)


def _reassemble(seen, n_updates: int, chunk_size: int, block_sizes) -> tuple[np.ndarray, ...]:
    """Indices, shards and frequencies per update and replicate from the recorded prepare
    calls, in the engine's order: chunk by chunk, in each chunk block by block, in each block
    call by call (DRAW_STEPS updates each)."""
    calls = iter(seen)
    chunks = []
    for first in range(0, n_updates, chunk_size):
        length = min(chunk_size, n_updates - first)
        blocks = []
        for _ in block_sizes:
            pieces = [next(calls) for _ in range(0, length, DRAW_STEPS)]
            blocks.append(tuple(np.concatenate([p[k] for p in pieces]) for k in range(3)))
        chunks.append((np.concatenate([b[0] for b in blocks], axis=1), blocks[0][1],
                       blocks[0][2]))
    return tuple(np.concatenate([c[k] for c in chunks]) for k in range(3))


@pytest.mark.parametrize("replacement, batch_size", [(True, 5), (False, 2), (False, 6)])
def test_each_update_draws_from_the_shard_the_schedule_names(replacement, batch_size):
    n_updates = 3 * DRAW_STEPS + 10
    schedule = _sharded(n_updates)
    recorder = Recorder()
    replay(schedule, SGLD(0.01), recorder, n_updates=n_updates, n_replicates=9,
           initial_position=0.0, seed=1, batch_size=batch_size, replacement=replacement,
           replicate_block=4, chunk_size=2 * DRAW_STEPS)
    indices, shards, frequencies = _reassemble(recorder.seen, n_updates, 2 * DRAW_STEPS,
                                               (4, 4, 1))
    shards, frequencies = shards[:, 0, :], frequencies[:, 0, :]
    np.testing.assert_array_equal(shards, schedule.update_shards(n_updates))
    np.testing.assert_array_equal(frequencies, schedule.update_column("shard_frequency"))
    sizes = np.asarray(SIZES)[shards][:, None, :, None]
    assert indices.shape == (n_updates, 9, 2, batch_size)
    assert np.all((indices >= 0) & (indices < sizes))
    if not replacement:
        ordered = np.sort(indices, axis=-1)
        assert np.all(np.diff(ordered, axis=-1) > 0)  # distinct within each batch


def test_sharded_results_do_not_depend_on_chunking_or_on_the_other_blocks():
    n_updates = 300
    schedule = _sharded(n_updates)

    def run(chunk_size, blocks=None):
        recorder = Recorder()
        replay(schedule, SGLD(0.01), recorder, n_updates=n_updates, n_replicates=10,
               initial_position=0.0, seed=4, batch_size=3, replicate_block=5,
               chunk_size=chunk_size, blocks=blocks)
        sizes = (5, 5) if blocks is None else (5,) * len(blocks)
        return _reassemble(recorder.seen, n_updates, chunk_size, sizes)[0]

    whole = run(4 * DRAW_STEPS)
    np.testing.assert_array_equal(run(DRAW_STEPS), whole)
    np.testing.assert_array_equal(run(3 * DRAW_STEPS, blocks=[1]), whole[:, 5:])


@pytest.mark.parametrize("sizes", [(40,), (5, 17, 100)])
def test_without_replacement_subsets_are_uniform_for_every_shard_size(sizes):
    """Each index of shard s appears in a batch with probability p = n/N_s. The counts have
    the covariance p(1 - p) N/(N - 1) (I - 11ᵀ/N) per batch, so the Pearson statistic divided
    by (1 - p) N/(N - 1) is chi-square with N - 1 degrees of freedom; one test per shard at a
    false-failure rate of 1e-4 each."""
    n = 3
    shape = (4000, len(sizes))
    drawn = draw_indices(generator(9, "floyd"), np.asarray(sizes), n, shape, replacement=False)
    for s, size in enumerate(sizes):
        counts = np.bincount(drawn[:, s].ravel(), minlength=size)
        assert counts.size == size
        expected = shape[0] * n / size
        scale = (1 - n / size) * size / (size - 1)
        statistic = np.sum((counts - expected) ** 2 / expected) / scale
        assert stats.chi2.sf(statistic, size - 1) > 1e-4


def test_a_plain_estimator_on_a_sharded_schedule_is_refused(gaussian_model):
    with pytest.raises(InvalidParameter) as error:
        replay(_sharded(100), SGLD(1e-4), gaussian_model.minibatch_gradient(), n_updates=100,
               n_replicates=2, initial_position=0.0, seed=0, batch_size=2)
    assert error.value.field == "gradient"


def test_a_shard_the_estimator_does_not_have_is_refused():
    with pytest.raises(InvalidParameter) as error:
        replay(_sharded(100), SGLD(1e-4), Recorder(sizes=(7, 30)), n_updates=100,
               n_replicates=2, initial_position=0.0, seed=0, batch_size=2)
    assert error.value.field == "shard"


def test_a_batch_larger_than_a_used_shard_is_refused_without_replacement():
    with pytest.raises(InvalidParameter) as error:
        replay(_sharded(100), SGLD(1e-4), Recorder(), n_updates=100, n_replicates=2,
               initial_position=0.0, seed=0, batch_size=8, replacement=False)
    assert error.value.field == "batch_size"


def test_stale_sharded_updates_take_the_window_path_bit_for_bit():
    """Stale gradients on a sharded schedule: SGLD's windows (several stale reads evaluated
    together, one running sum) give exactly what stepping one update at a time gives, for the
    D-SGLD and the conducive (FSGLD) estimators."""
    from workbench.gradients import surrogates
    from workbench.gradients.sharded import Conducive, ShardScaled
    from workbench.models.gaussian import GaussianMeanModel
    from workbench.models.sharded_gaussian import ShardedGaussianMean

    data = generator(5, "window-data").normal(0.0, 1.0, (sum(SIZES), 2))
    sharded = ShardedGaussianMean(GaussianMeanModel(data, noise_scale=1.0, prior_scale=2.0),
                                  list(SIZES))
    base = constant_staleness(300, 4, n_servers=2)
    sharded_schedule = _sharded(300)
    columns = {name: getattr(base, name) for name in
               ("server", "worker", "kind", "version_read", "staleness", "applied",
                "start_time", "finish_time", "time")}
    schedule = Schedule(**columns, shard=sharded_schedule.shard,
                        shard_frequency=sharded_schedule.shard_frequency, attrs=base.attrs)
    assert schedule.update_staleness().max() == 4

    class Stepwise(SGLD):
        """SGLD with ``step`` overridden: the engine then steps one update at a time."""

        def step(self, state, gradient, noise):
            return super().step(state, gradient, noise)

    dsgld = ShardScaled(sharded.shard_gradient())
    for estimator in (dsgld, Conducive(dsgld, surrogates.analytic(sharded))):
        runs = [replay(schedule, sampler, estimator, n_updates=300, n_replicates=6,
                       initial_position=0.3, seed=2, batch_size=3, checkpoints=[50, 300])
                for sampler in (SGLD(1e-4), Stepwise(1e-4))]
        np.testing.assert_array_equal(runs[0].final_position, runs[1].final_position)
        np.testing.assert_array_equal(runs[0].averages["theta"], runs[1].averages["theta"])
