"""The engine's replay of downpour and elastic schedules: reductions bit for bit (issue 16)."""

import numpy as np
import pytest

from simulators.async_server import AsyncServerSystem
from simulators.downpour import DownpourSystem
from simulators.elastic import ElasticSystem
from simulators.latency import LatencyModel, WorkerTiming
from simulators.schedule import GRADIENT, Schedule
from simulators.validation import InvalidParameter
from workbench.engine.replay import replay
from workbench.samplers.psgld import PSGLD
from workbench.samplers.sghmc import SGHMC
from workbench.samplers.sgld import SGLD, SGLDState

TIMING = WorkerTiming(LatencyModel("exponential", 1.0), speed_factors=(1.0, 2.0, 0.5, 1.0))
RUN = dict(n_replicates=60, initial_position=0.8, seed=12, batch_size=10,
           checkpoints=[7, 100, 300], replicate_block=25)


def _run(schedule, sampler, model, **options):
    return replay(schedule, sampler, model.minibatch_gradient(), n_updates=300,
                  **{**RUN, **options})


def _assert_same(a, b):
    assert np.all(np.isfinite(a.averages["theta_squared"]))  # a NaN would equal a NaN
    np.testing.assert_array_equal(a.final_position, b.final_position)
    for name in ("theta", "theta_squared"):
        np.testing.assert_array_equal(a.averages[name], b.averages[name])


def test_downpour_period_one_is_stale_sgld_under_the_same_schedule_bit_for_bit(scalar_model):
    """Seed 003 Algorithm 1 with π = 1 is seed 001's stale SGLD: the master adds one local
    SGLD move computed at the version the worker pulled."""
    downpour = DownpourSystem(4, TIMING, period=1).simulate(300, seed=3)
    plain = AsyncServerSystem(4, TIMING).simulate(300, seed=3)
    np.testing.assert_array_equal(downpour.update_staleness(), plain.update_staleness())
    assert plain.update_staleness().max() >= 3
    _assert_same(_run(downpour, SGLD(1e-4), scalar_model),
                 _run(plain, SGLD(1e-4), scalar_model))
    # also with a chunk size that splits the run differently
    _assert_same(_run(downpour, SGLD(1e-4), scalar_model, chunk_size=64),
                 _run(plain, SGLD(1e-4), scalar_model))


def test_downpour_with_a_longer_period_differs_and_is_deterministic(scalar_model):
    """Negative control for the reduction: π = 4 is another chain; and chunking, replicate
    blocks and reruns do not change it."""
    longer = DownpourSystem(4, TIMING, period=4).simulate(300, seed=3)
    plain = AsyncServerSystem(4, TIMING).simulate(300, seed=3)
    a = _run(longer, SGLD(1e-4), scalar_model)
    assert not np.array_equal(a.averages["theta"], _run(plain, SGLD(1e-4),
                                                        scalar_model).averages["theta"])
    _assert_same(a, _run(longer, SGLD(1e-4), scalar_model, chunk_size=16))
    part = _run(longer, SGLD(1e-4), scalar_model, blocks=[1])
    np.testing.assert_array_equal(part.averages["theta"], a.averages["theta"][:, 25:50])


class _GradientDescent(SGLD):
    """SGLD with the noise off (θ ← θ - h∇Ũ): the protocols' exact one-step arithmetic."""

    def step(self, state, gradient, noise):
        return SGLDState(state.position - self.step_size * gradient)

    advance = None


def test_downpour_noise_off_is_algorithm_1_by_hand(scalar_model):
    """Full-data gradients (batch = N without replacement) and no noise: every push adds to
    the master the move of π local gradient steps started from the version its worker read."""
    schedule = DownpourSystem(3, WorkerTiming(LatencyModel("exponential", 1.0)),
                              period=3).simulate(40, seed=0)
    h, k, mu = 1e-4, scalar_model.precision, float(scalar_model.posterior_mean[0])
    run = replay(schedule, _GradientDescent(h), scalar_model.minibatch_gradient(),
                 n_updates=40, n_replicates=1, initial_position=2.0, seed=1,
                 batch_size=scalar_model.n_data, replacement=False, checkpoints=range(1, 41))
    staleness = schedule.update_staleness(40)[:, 0]
    assert staleness.max() >= 2
    master = [2.0]
    for push, tau in enumerate(staleness):
        local = master[push - tau]
        for _ in range(3):
            local = local - h * k * (local - mu)
        master.append(master[push] + (local - master[push - tau]))
    sums = run.averages["theta"][:, 0, 0, 0] * np.arange(1, 41)
    np.testing.assert_allclose(sums, np.cumsum(master[1:]), rtol=1e-12)
    # negative control: reading the current master (no staleness) gives other numbers
    fresh = [2.0]
    for push in range(40):
        local = fresh[push]
        for _ in range(3):
            local = local - h * k * (local - mu)
        fresh.append(local)
    assert not np.allclose(sums, np.cumsum(fresh[1:]), rtol=1e-6)


def test_elastic_without_coupling_is_independent_chains_bit_for_bit(scalar_model):
    schedule = ElasticSystem(4, period=5, coupling_strength=0.0,
                             timing=TIMING).simulate(300, seed=3)
    independent = AsyncServerSystem(1, n_servers=4).simulate(300, seed=9)
    assert independent.update_staleness().max() == 0
    for sampler in (SGLD(1e-4), SGHMC(1e-3, 30.0, "splitting")):
        _assert_same(_run(schedule, sampler, scalar_model),
                     _run(independent, sampler, scalar_model))


def test_elastic_coupling_moves_chains_towards_each_other(scalar_model):
    """Negative control for the reduction, and the direction of the effect: with α = 1 the
    chains are pulled together, so the spread of the chains' averages shrinks."""
    spreads = []
    for strength in (0.0, 1.0):
        schedule = ElasticSystem(4, period=2, coupling_strength=strength).simulate(300, 3)
        run = _run(schedule, SGLD(1e-4), scalar_model)
        spreads.append(float(np.var(run.averages["theta"][-1], axis=1).mean()))
    assert spreads[1] < 0.5 * spreads[0]


def test_downpour_worker_keeps_its_preconditioner(scalar_model):
    """pSGLD workers keep their second moment across rounds (Algorithm 1 lines 7-8): with a
    frozen preconditioner c the chain is downpour SGLD with step c·h, bit for bit."""
    schedule = DownpourSystem(4, TIMING, period=3).simulate(300, seed=3)
    v0 = 4.0
    frozen = PSGLD(1e-4, regularizer=1.0, adaptation_steps=0, initial_second_moment=v0)
    _assert_same(_run(schedule, frozen, scalar_model),
                 _run(schedule, SGLD(1e-4 / (1.0 + np.sqrt(v0))), scalar_model))


@pytest.mark.parametrize("change, field", [
    ({"period": 0}, "period"),
    ({"protocol": "gossip"}, "protocol"),
    ({"coupling_strength": 1.5}, "coupling_strength"),
])
def test_bad_protocol_attributes_are_refused_by_name(scalar_model, change, field):
    base = ElasticSystem(2, period=2).simulate(50, seed=1)
    bad = Schedule(**{name: getattr(base, name) for name in
                      ("server", "worker", "shard", "kind", "version_read", "staleness",
                       "applied", "start_time", "finish_time", "time")},
                   attrs={**base.attrs, **change})
    with pytest.raises(InvalidParameter) as error:
        replay(bad, SGLD(0.01), scalar_model.minibatch_gradient(), n_updates=50,
               n_replicates=2, initial_position=0.0, seed=1, batch_size=10)
    assert error.value.field == field
    assert GRADIENT in base.kind
