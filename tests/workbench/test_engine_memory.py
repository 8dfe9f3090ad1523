"""The engine's memory budget (issue 15): a replay's peak stays under ``memory_budget``, and
a run that cannot fit is refused before it starts, naming the field.

Peak memory is what ``tracemalloc`` sees (numpy reports its buffers to it): 2,000 replicates
in d = 50 with a per-replicate result of three checkpoints, on the generic and the compiled
path (:mod:`workbench.engine.compiled`). Negative control: the same run in one group on the
generic path (the engine before issue 15) peaks well above the budgets the test sets, so the
bound is the grouping's doing and not the workload's size.
"""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest

from simulators.downpour import DownpourSystem
from simulators.elastic import ElasticSystem
from simulators.latency import LatencyModel, WorkerTiming
from simulators.seeding import generator
from simulators.static import constant_staleness
from simulators.validation import InvalidParameter
from workbench.core import memory_budget
from workbench.core.phi import THETA, THETA_SQUARED
from workbench.engine import compiled as engine_kernel
from workbench.engine import replay as engine
from workbench.engine.protocols import ProtocolReplayer
from workbench.models.gaussian import GaussianMeanModel
from workbench.samplers import SGHMC, SGLD

MIB = 1 << 20


@pytest.fixture(scope="module")
def wide_model():
    return GaussianMeanModel.generate(generator(0, "memory"), 1000, 50)


def _traced(replay, n_replicates: int, **kwargs):
    """``replay(n_replicates, progress, **kwargs)`` and its peak traced memory, after a
    one-replicate run of the same call outside the trace: what the first call of a path
    imports or loads (numba's cached kernels) is not the replay's memory, and it would count
    only when the test runs first."""
    replay(1, None, **{**kwargs, "memory_budget": 1 << 40})
    ticks = []
    tracemalloc.start()
    try:
        run = replay(n_replicates, ticks.append, **kwargs)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return run, peak, sum(ticks)


def _peak(model, **kwargs):
    def replay(n_replicates, progress, **options):
        return engine.replay(constant_staleness(256, 10), SGLD(1e-4), model.minibatch_gradient(),
                             n_updates=256, n_replicates=n_replicates, initial_position=0.0,
                             seed=1, batch_size=10, checkpoints=[10, 100, 256],
                             progress=progress, **options)

    run, peak, updates = _traced(replay, 2000, **kwargs)
    assert updates == 256
    return run, peak


@pytest.mark.parametrize("compiled", [False, True], ids=["generic", "compiled"])
@pytest.mark.parametrize("budget", [48 * MIB, 64 * MIB])
def test_peak_memory_stays_under_the_budget(wide_model, budget, monkeypatch, compiled):
    monkeypatch.setattr(engine_kernel, "ENABLED", compiled)
    run, peak = _peak(wide_model, memory_budget=budget)
    assert peak <= budget
    reference, _ = _peak(wide_model)  # default budget: larger groups, the same numbers
    np.testing.assert_array_equal(run.averages["theta_squared"],
                                  reference.averages["theta_squared"])
    np.testing.assert_array_equal(run.final_position, reference.final_position)


def test_one_group_would_exceed_those_budgets(wide_model, monkeypatch):
    # negative control: without groups the same run needs several times the budgets above on
    # the generic path (the compiled path holds no noise or positions arrays: it fits anyway)
    monkeypatch.setattr(engine_kernel, "ENABLED", False)
    monkeypatch.setattr(engine, "GROUP_ELEMENTS", 1 << 62)
    _, peak = _peak(wide_model, memory_budget=1 << 40)
    assert peak > 3 * 64 * MIB


def test_a_run_that_cannot_fit_is_refused_before_it_starts(wide_model):
    ticks = []
    with pytest.raises(InvalidParameter) as error:
        engine.replay(constant_staleness(256, 10), SGLD(1e-4), wide_model.minibatch_gradient(),
                      n_updates=256, n_replicates=2000, initial_position=0.0, seed=1,
                      batch_size=10, checkpoints=[10, 100, 256], progress=ticks.append,
                      memory_budget=8 * MIB)
    assert error.value.field == "memory_budget"
    assert "MiB of results for 2000 replicates" in str(error.value)
    assert ticks == []  # nothing ran


def test_the_budget_is_validated(wide_model):
    with pytest.raises(InvalidParameter, match="memory_budget"):
        engine.replay(constant_staleness(64, 1), SGLD(1e-4), wide_model.minibatch_gradient(),
                      n_updates=64, n_replicates=2, initial_position=0.0, seed=1,
                      batch_size=10, memory_budget=0)


def test_the_enclosing_budget_is_the_default_and_an_explicit_one_wins(wide_model):
    # what `--memory-budget` sets around every task (workbench.run.sweep_tasks._run_task)
    with memory_budget.replay_memory_budget(8 * MIB), pytest.raises(InvalidParameter) as error:
        _peak(wide_model)
    assert "MiB of results for 2000 replicates" in str(error.value)
    with memory_budget.replay_memory_budget(8 * MIB):
        run, peak = _peak(wide_model, memory_budget=64 * MIB)
    assert peak <= 64 * MIB
    run, _ = _peak(wide_model)  # outside the block: the default budget again
    with pytest.raises(InvalidParameter, match="memory_budget"):
        with memory_budget.replay_memory_budget(0):
            pass


# Protocol replays (workbench/engine/protocols.py) take the same budget: downpour with π = 4
# over 4 workers (its worker states held between pushes) and elastic over 4 chains, 1,000
# replicates in d = 50. One group is what they ran as before the budget reached them.
TIMING = WorkerTiming(LatencyModel("exponential", 1.0), speed_factors=(1.0, 2.0, 0.5, 1.0))
PROTOCOL_SCHEDULES = {
    "downpour": lambda: DownpourSystem(4, TIMING, period=4).simulate(64, seed=3),
    "elastic": lambda: ElasticSystem(4, period=2, coupling_strength=0.5).simulate(128, seed=3),
}


def _protocol_peak(model, protocol, **kwargs):
    schedule = PROTOCOL_SCHEDULES[protocol]()
    n_updates = 64 if protocol == "downpour" else 128

    def replay(n_replicates, progress, **options):
        return engine.replay(schedule, SGHMC(1e-4, 10.0), model.minibatch_gradient(),
                             n_updates=n_updates, n_replicates=n_replicates,
                             initial_position=0.0, seed=1, batch_size=10,
                             checkpoints=[10, n_updates], progress=progress, **options)

    run, peak, updates = _traced(replay, 1000, **kwargs)
    assert updates == n_updates
    return run, peak


@pytest.mark.parametrize("protocol, budget", [("downpour", 96 * MIB), ("elastic", 128 * MIB)])
def test_protocol_replays_stay_under_the_budget_with_the_same_numbers(wide_model, protocol,
                                                                      budget):
    run, peak = _protocol_peak(wide_model, protocol, memory_budget=budget)
    assert peak <= budget
    # negative control: in one group (a budget it fits) the same run peaks above that budget,
    # so the bound is the grouping's doing
    whole, whole_peak = _protocol_peak(wide_model, protocol, memory_budget=1 << 40)
    assert whole_peak > 2 * budget
    assert np.all(np.isfinite(run.averages["theta_squared"]))
    for name in ("theta", "theta_squared"):
        np.testing.assert_array_equal(run.averages[name], whole.averages[name])
    np.testing.assert_array_equal(run.final_position, whole.final_position)


@pytest.mark.parametrize("protocol", ["downpour", "elastic"])
def test_a_protocol_replay_that_cannot_fit_is_refused_before_it_starts(wide_model, protocol):
    with memory_budget.replay_memory_budget(2 * MIB), pytest.raises(InvalidParameter) as error:
        _protocol_peak(wide_model, protocol)  # the enclosing budget (--memory-budget)
    assert error.value.field == "memory_budget"
    assert "MiB of results for 1000 replicates" in str(error.value)


def test_downpour_counts_the_worker_states_it_holds(wide_model):
    """Each of downpour's workers keeps its sampler state between pushes: an SGHMC state
    (position and momentum) per worker, against SGLD's position alone."""
    schedule = PROTOCOL_SCHEDULES["downpour"]()
    layouts = [ProtocolReplayer(schedule, sampler, wide_model.minibatch_gradient(), 64, 10,
                                True).layout for sampler in (SGLD(1e-4), SGHMC(1e-4, 10.0))]
    assert [layout.held_states for layout in layouts] == [4, 8]
    assert all(layout.steps_per_update == 4 and not layout.cache_sized for layout in layouts)


@pytest.fixture(scope="module")
def digits_mlp():
    from workbench.data.digits import digits
    from workbench.models.mlp import MultilayerPerceptron

    data = digits()
    return MultilayerPerceptron(data.train_features, data.train_labels, hidden_sizes=(50,))


@pytest.mark.parametrize("protocol", ["elastic", "stale"])
def test_a_network_replay_stays_under_its_estimate(digits_mlp, protocol):
    """A per-example estimator's prepared minibatch is its indices, not d·(n + 1) floats: the
    digits MLP (d = 3,760) with minibatches of 100, 4 replicates × 4 chains of elastic SGHMC
    (or 4 replicates of stale SGLD, whose windows evaluate up to 64 updates in one call), runs
    under a budget of its estimate (a quarter of a GiB) with its traced peak below it, where the
    estimate of an estimator that says nothing of its minibatches, d·(n + 2) floats an
    evaluation, is five times larger or more (3 GiB for the elastic run). The run under that
    budget gives the numbers of an unbounded one."""
    from simulators.async_server import AsyncServerSystem
    from workbench.engine.replay_setup import GroupLayout, memory_need

    gradient = digits_mlp.minibatch_gradient()
    if protocol == "elastic":
        schedule = ElasticSystem(4, period=1, coupling_strength=1.0,
                                 timing=WorkerTiming(LatencyModel("exponential", 1.0))
                                 ).simulate(128, seed=1)
        sampler, chains, layout = SGHMC(1e-3, 10.0, "euler"), 4, GroupLayout(4, 0)
    else:
        schedule = AsyncServerSystem(4, WorkerTiming(LatencyModel("exponential", 1.0))
                                     ).simulate(128, seed=1)
        tau = int(schedule.update_staleness(128).max())
        sampler, chains, layout = SGLD(1e-4), 1, GroupLayout(1, tau)
    start = 0.1 * np.random.default_rng(0).standard_normal((4, chains, digits_mlp.dim))

    def replay(n_replicates, progress, **options):
        return engine.replay(schedule, sampler, gradient, n_updates=128,
                             n_replicates=n_replicates, initial_position=start[:n_replicates],
                             seed=3, batch_size=100, checkpoints=[128], replicate_block=4,
                             progress=progress, **options)

    def estimate(**options):
        return sum(memory_need(4, 4, layout, dim=digits_mlp.dim, n_updates=128,
                               batch_size=100, test_functions=(THETA, THETA_SQUARED),
                               checkpoints=[128], thin=0, chunk_size=None, **options))

    assert estimate(gradient=gradient) < 240 * MIB
    assert estimate() > 5 * estimate(gradient=gradient)
    budget = 256 * MIB
    run, peak, _ = _traced(replay, 4, memory_budget=budget)
    assert peak <= estimate(gradient=gradient), (peak / MIB, estimate(gradient=gradient) / MIB)
    unbounded, _, _ = _traced(replay, 4, memory_budget=1 << 40)
    np.testing.assert_array_equal(run.final_position, unbounded.final_position)


def test_a_sharded_fsgld_replay_counts_its_minibatches_as_indices():
    """D-SGLD's and FSGLD's wrappers (:mod:`workbench.gradients.sharded`) on a per-example
    model count a prepared minibatch as the model does, its indices: FSGLD on a digits MLP
    (d = 760) split into four shards, minibatches of 100, a replicate's four chains on stale
    reads (τ = 2), runs under a budget of its estimate with its traced peak below it, where
    the default count of d·(n + 1) floats an evaluation is five times larger or more; the run
    under that budget gives the numbers of an unbounded one. Negative control: on the
    Gaussian shard base, which counts nothing, the wrappers count nothing either."""
    import dataclasses

    from workbench.data.digits import digits
    from workbench.engine.replay_setup import GroupLayout, memory_need
    from workbench.gradients.sharded import Conducive, ShardScaled
    from workbench.gradients.surrogates import GaussianSurrogates
    from workbench.models.mlp import MultilayerPerceptron
    from workbench.models.sharded_gaussian import ShardedGaussianMean
    from workbench.models.sharded_per_example import ShardedPerExample

    data = digits()
    model = MultilayerPerceptron(data.train_features, data.train_labels, hidden_sizes=(10,))
    n_shards, dim = 4, model.dim
    sizes = np.diff(np.linspace(0, model.n_data, n_shards + 1).astype(int))
    rng = np.random.default_rng(0)
    surrogates = GaussianSurrogates(0.1 * rng.standard_normal((n_shards, dim)),
                                    np.stack([np.diag(rng.uniform(0.5, 2.0, dim))
                                              for _ in range(n_shards)]))
    gradient = Conducive(ShardScaled(ShardedPerExample(model, sizes)), surrogates)
    schedule = constant_staleness(64, 2, n_servers=n_shards)
    schedule = dataclasses.replace(schedule, shard=schedule.server,
                                   shard_frequency=np.ones(schedule.n_events))
    start = 0.1 * rng.standard_normal((4, n_shards, dim))

    def replay(n_replicates, progress, **options):
        return engine.replay(schedule, SGLD(1e-4), gradient, n_updates=64,
                             n_replicates=n_replicates, initial_position=start[:n_replicates],
                             seed=3, batch_size=100, checkpoints=[64], replicate_block=4,
                             progress=progress, **options)

    def estimate(**options):
        return sum(memory_need(4, 4, GroupLayout(n_shards, 2), dim=dim, n_updates=64,
                               batch_size=100, test_functions=(THETA, THETA_SQUARED),
                               checkpoints=[64], thin=0, chunk_size=None, **options))

    assert gradient.prepared_elements(100) == 50  # 100 int32 indices
    assert estimate() > 5 * estimate(gradient=gradient)
    run, peak, _ = _traced(replay, 4, memory_budget=estimate(gradient=gradient))
    assert peak <= estimate(gradient=gradient), (peak / MIB, estimate(gradient=gradient) / MIB)
    unbounded, _, _ = _traced(replay, 4, memory_budget=1 << 40)
    np.testing.assert_array_equal(run.final_position, unbounded.final_position)
    gaussian = ShardedGaussianMean(GaussianMeanModel.generate(generator(0, "shards"), 30, 2),
                                   (10, 20))
    for wrapper in (ShardScaled(gaussian.shard_gradient()),
                    Conducive(ShardScaled(gaussian.shard_gradient()),
                              GaussianSurrogates(np.zeros((2, 2)), np.stack([np.eye(2)] * 2)))):
        assert getattr(wrapper, "prepared_elements", None) is None
