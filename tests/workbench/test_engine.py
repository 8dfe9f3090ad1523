"""The engine: bit-for-bit equivalences, chunk and block invariance, divergence, checkpoints."""

import math

import numpy as np
import pytest

from simulators.async_server import AsyncServerSystem
from simulators.latency import LatencyModel, WorkerTiming
from simulators.seeding import derive, generator
from simulators.static import constant_staleness, iid_staleness
from simulators.validation import InvalidParameter
from workbench.core.phi import THETA, THETA_SQUARED, TestFunction
from workbench.engine.replay import log_checkpoints, replay
from workbench.engine.replay_setup import DRAW_STEPS
from workbench.gradients.minibatch import draw_indices
from workbench.samplers import SGHMC, SGLD


def _replay(schedule, sampler, model, **kwargs):
    options = dict(n_updates=400, n_replicates=20, initial_position=1.0, seed=5, batch_size=10,
                   replicate_block=8)
    options.update(kwargs)
    return replay(schedule, sampler, model.minibatch_gradient(), **options)


def test_one_worker_without_staleness_equals_plain_sgld_bit_for_bit(scalar_model):
    """Staleness 0 with one worker (event-driven system) is exactly plain SGLD."""
    model, h, n_updates, n_replicates = scalar_model, 2e-4, 300, 6
    schedule = AsyncServerSystem(1, WorkerTiming(LatencyModel("exponential", 1.0))).simulate(
        n_updates, seed=1)
    assert schedule.staleness.max() == 0
    run = replay(schedule, SGLD(h), model.minibatch_gradient(), n_updates=n_updates,
                 n_replicates=n_replicates, initial_position=1.0, seed=9, batch_size=10,
                 checkpoints=[n_updates], replicate_block=n_replicates)

    # Plain SGLD written out, from the same streams (one replicate block: block 0), drawn as
    # the engine documents: calls of DRAW_STEPS updates.
    calls = -(-n_updates // DRAW_STEPS)
    noise_rng, batch_rng = generator(9, "noise", 0), generator(9, "minibatch", 0)
    noise = np.concatenate([noise_rng.standard_normal((DRAW_STEPS, n_replicates, 1, 1))
                            for _ in range(calls)])
    indices = np.concatenate([draw_indices(batch_rng, model.n_data, 10,
                                           (DRAW_STEPS, n_replicates, 1), replacement=True)
                              for _ in range(calls)])
    prior_term = model.prior_mean / model.prior_scale**2
    data_scale = model.n_data / model.noise_scale**2
    theta = np.full((n_replicates, 1, 1), 1.0)
    total = np.zeros_like(theta)
    for step in range(n_updates):
        batch = prior_term + data_scale * model.data[indices[step]].mean(axis=-2)
        gradient = model.precision * theta - batch
        theta = theta - h * gradient + math.sqrt(2 * h) * noise[step]
        total = total + theta
    np.testing.assert_array_equal(run.final_position, theta)
    np.testing.assert_array_equal(run.averages["theta"][-1], total / n_updates)


def test_stale_update_reads_the_right_version_noise_off(scalar_model):
    """With a zero-variance data set and no noise, SGLD is a deterministic delay recursion."""
    from workbench.models.gaussian import GaussianMeanModel

    flat = GaussianMeanModel(np.zeros((50, 1)), noise_scale=1.0, prior_scale=1.0)
    h, tau, n_updates = 0.01, 3, 12

    class Silent(SGLD):
        def step(self, state, gradient, noise):
            return super().step(state, gradient, np.zeros_like(noise))

    run = replay(constant_staleness(n_updates, tau), Silent(h), flat.minibatch_gradient(),
                 n_updates=n_updates, n_replicates=1, initial_position=1.0, seed=0,
                 batch_size=5, checkpoints=range(1, n_updates + 1))
    k = flat.precision
    history = [1.0]
    for step in range(n_updates):
        history.append(history[-1] - h * k * history[max(step - tau, 0)])
    averages = np.cumsum(history[1:]) / np.arange(1, n_updates + 1)
    np.testing.assert_allclose(run.averages["theta"][:, 0, 0, 0], averages, rtol=1e-13)


def test_chunk_size_does_not_change_results(gaussian_model):
    schedule = iid_staleness(400, [0.2, 0.3, 0.5], seed=3)
    runs = [_replay(schedule, SGHMC(0.01, 2.0, "splitting"), gaussian_model, chunk_size=size,
                    checkpoints=[1, 7, 100, 400], replacement=False)
            for size in (None, DRAW_STEPS, 3 * DRAW_STEPS, 7 * DRAW_STEPS)]
    for run in runs[1:]:
        np.testing.assert_array_equal(run.final_position, runs[0].final_position)
        for name in ("theta", "theta_squared"):
            np.testing.assert_array_equal(run.averages[name], runs[0].averages[name])


def test_replicate_blocks_run_alone_equal_the_same_replicates_in_a_larger_run(gaussian_model):
    schedule = constant_staleness(400, 4)
    full = _replay(schedule, SGLD(1e-4), gaussian_model)
    for block, rows in ((1, slice(8, 16)), (2, slice(16, 20))):
        alone = _replay(schedule, SGLD(1e-4), gaussian_model, blocks=[block])
        np.testing.assert_array_equal(alone.final_position, full.final_position[rows])
        np.testing.assert_array_equal(alone.averages["theta"], full.averages["theta"][:, rows])


def test_multiple_servers_with_different_staleness_are_independent_chains(gaussian_model):
    system = AsyncServerSystem(3, WorkerTiming(LatencyModel("exponential", 1.0)), n_servers=2)
    schedule = system.simulate(400, seed=8)
    staleness = schedule.update_staleness(400)
    assert not np.array_equal(staleness[:, 0], staleness[:, 1])
    run = _replay(schedule, SGLD(1e-4), gaussian_model)
    assert run.final_position.shape == (20, 2, 2)
    assert np.all(np.isfinite(run.final_position))


def test_user_test_functions_and_thinned_draws(gaussian_model):
    norm = TestFunction("norm", lambda x: np.linalg.norm(x, axis=-1, keepdims=True))
    run = _replay(constant_staleness(400, 2), SGLD(1e-4), gaussian_model,
                  test_functions=(THETA, THETA_SQUARED, norm), thin=50, checkpoints=[400])
    assert run.averages["norm"].shape == (1, 20, 1, 1)
    assert run.draws.shape == (20, 1, 8, 2)
    np.testing.assert_array_equal(run.draw_iterations, np.arange(50, 401, 50))
    np.testing.assert_array_equal(run.draws[:, :, -1], run.final_position)


def test_unstable_step_size_marks_replicates_diverged_not_nan(scalar_model):
    # c = h k = 2.5 > 2: SGLD is unstable even without staleness.
    h = 2.5 / scalar_model.precision
    run = _replay(constant_staleness(400, 0), SGLD(h), scalar_model,
                  checkpoints=[1, 2, 50, 400], divergence_threshold=1e6)
    assert np.all(run.diverged_at > 0) and np.all(run.diverged_at < 50)
    assert np.all(np.isfinite(run.averages["theta"][0]))  # before the divergence
    assert np.all(np.isnan(run.averages["theta"][2:]))  # at and after it: NaN, and flagged


def test_log_checkpoints_are_distinct_and_end_at_the_run_length():
    for n_updates, count in ((1000, 30), (20_000, 30), (5, 30), (1, 1), (7, 3)):
        points = log_checkpoints(n_updates, count)
        assert points.size == min(count, n_updates)
        assert points[-1] == n_updates and points[0] >= 1
        assert np.all(np.diff(points) > 0)


@pytest.mark.parametrize("kwargs, field", [
    ({"n_replicates": 0}, "n_replicates"),
    ({"batch_size": 0}, "batch_size"),
    ({"checkpoints": [0, 10]}, "checkpoints"),
    ({"checkpoints": [401]}, "checkpoints"),
    ({"blocks": [9]}, "blocks"),
    ({"thin": -1}, "thin"),
    ({"chunk_size": 33}, "chunk_size"),
])
def test_bad_engine_arguments_name_the_field(gaussian_model, kwargs, field):
    with pytest.raises(InvalidParameter) as error:
        _replay(constant_staleness(400, 1), SGLD(1e-4), gaussian_model, **kwargs)
    assert error.value.field == field


def test_streams_are_keyed_by_identity_not_order():
    assert derive(1, "a", 2).spawn_key == derive(derive(1, "a"), 2).spawn_key
    first = generator(1, "noise", 0).standard_normal(3)
    generator(1, "noise", 1).standard_normal(100)
    np.testing.assert_array_equal(generator(1, "noise", 0).standard_normal(3), first)


class SteppedSGLD(SGLD):
    """SGLD whose ``step`` is redefined, so the engine steps it one update at a time."""

    def step(self, state, gradient, noise):
        return super().step(state, gradient, noise)


@pytest.mark.parametrize("schedule", [
    constant_staleness(700, 10),
    constant_staleness(700, 0),
    iid_staleness(700, np.full(6, 1 / 6), seed=3, n_servers=2),
    AsyncServerSystem(8, WorkerTiming(LatencyModel("exponential", 1.0)), n_servers=2).simulate(
        700, seed=4),
])
def test_windows_of_stale_updates_equal_stepping_update_by_update(gaussian_model, schedule):
    """SGLD advancing through windows of already-known reads is bit-identical to stepping."""
    from workbench.engine.replay import _advance_of

    assert _advance_of(SGLD(1.0)) is not None and _advance_of(SteppedSGLD(1.0)) is None
    options = dict(n_updates=700, n_replicates=12, initial_position=0.5, seed=2, batch_size=10,
                   replicate_block=5, checkpoints=[1, 9, 64, 700], thin=7)
    gradient = gaussian_model.minibatch_gradient()
    windowed = replay(schedule, SGLD(3e-4), gradient, **options)
    stepped = replay(schedule, SteppedSGLD(3e-4), gradient, **options)
    for name in windowed.averages:
        np.testing.assert_array_equal(windowed.averages[name], stepped.averages[name])
    np.testing.assert_array_equal(windowed.draws, stepped.draws)
    np.testing.assert_array_equal(windowed.final_position, stepped.final_position)
