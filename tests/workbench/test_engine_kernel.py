"""The engine's compiled path (issue 15, item 1) against the generic numpy path, bit for bit.

``workbench.engine.compiled.ENABLED = False`` forces the generic path; every other input is the
same, so every output (checkpoint averages, divergence flags, thinned draws, final positions)
must be equal to the last bit: constant, i.i.d. and simulated asynchronous multi-server
schedules, τ = 0 to τ_max = 9, d = 1 and d = 2, with and without replacement (both index
methods), batches that take every branch of the pairwise sum, several chunk sizes and replicate
groupings, SGLD and both SGHMC integrators, and a diverging run.

Negative controls: the kernel really runs (its ``advance`` is called) when enabled and not
when disabled or when a sampler or estimator does not opt in; the comparison
tells apart two runs whose step sizes differ by one ulp; and the kernel's pairwise minibatch
sum equals :func:`workbench.gradients.minibatch.batch_sum` where a plain running sum does not.

Sharded schedules (D-SGLD's :class:`~workbench.gradients.sharded.ShardScaled` over
:class:`~workbench.models.sharded_gaussian.ShardLocalGradient`, and the latter alone): traveling
chains (several chains, uneven trajectories, random hops) and a stale two-server schedule
cycling through shards, equal shard sizes (numpy's scalar-bound index draw) and unequal ones
(per-element bounds, including a one-point shard), d = 1 and 2, with and without replacement,
chunkings, groupings and thinned draws; FSGLD's :class:`~workbench.gradients.sharded.Conducive`
over either with diagonal Gaussian surrogates (analytic, and fitted ones with unequal
variances and α ≠ 1). Negative controls: a shard weight one ulp off, and a surrogate precision
one ulp off, are seen; full-covariance surrogates and an undescribed base estimator stay on
the generic path.
"""

from __future__ import annotations

import numpy as np
import pytest

from simulators.async_server import AsyncServerSystem
from simulators.latency import LatencyModel, WorkerTiming
from simulators.schedule import Schedule
from simulators.seeding import generator
from simulators.static import constant_staleness, iid_staleness
from simulators.traveling_chains import TravelingChains
from workbench.core.phi import THETA, THETA_SQUARED, TestFunction
from workbench.engine import compiled as engine_kernel
from workbench.engine import replay as engine
from workbench.gradients import gathered_sums, surrogates
from workbench.gradients.minibatch import batch_sum
from workbench.gradients.sharded import Conducive, ShardScaled
from workbench.models.sharded_gaussian import ShardedGaussianMean
from workbench.samplers import PSGLD, SGHMC, SGLD

N_UPDATES = 300
CUBE = TestFunction("theta_cubed", lambda position: position**3)

SCHEDULES = {
    "constant-0": lambda: constant_staleness(N_UPDATES, 0),
    "constant-1": lambda: constant_staleness(N_UPDATES, 1),
    "constant-7-two-servers": lambda: constant_staleness(N_UPDATES, 7, n_servers=2),
    "iid-0-to-9": lambda: iid_staleness(N_UPDATES, np.full(10, 0.1), seed=4),
    "async-two-servers": lambda: AsyncServerSystem(
        5, WorkerTiming(LatencyModel("exponential", 1.0)), n_servers=2).simulate(
            N_UPDATES, seed=6),
}
SAMPLERS = {
    "sgld": lambda: SGLD(2e-4),
    "sghmc-euler": lambda: SGHMC(1e-3, 3.0, "euler"),
    "sghmc-splitting": lambda: SGHMC(1e-3, 3.0, "splitting"),
}


class _Spy:
    """Counts the kernel's chunk calls (the negative control that it ran at all)."""

    def __init__(self, monkeypatch):
        self.calls = 0
        original = engine_kernel.KernelReplay.advance

        def advance(kernel, *args):
            self.calls += 1
            return original(kernel, *args)

        monkeypatch.setattr(engine_kernel.KernelReplay, "advance", advance)


def _run(schedule, sampler, model, **kwargs):
    options = dict(n_updates=N_UPDATES, n_replicates=13, initial_position=0.4, seed=8,
                   batch_size=10, replicate_block=4, checkpoints=[1, 7, 64, 200, N_UPDATES],
                   thin=9, divergence_threshold=1e4)
    options.update(kwargs)
    return engine.replay(schedule, sampler, model.minibatch_gradient(), **options)


def _both(monkeypatch, schedule, sampler, model, **kwargs):
    """(compiled, generic) replays of the same inputs; asserts the kernel ran only once."""
    return _compiled_and_generic(monkeypatch, lambda: _run(schedule, sampler, model, **kwargs))


def _compiled_and_generic(monkeypatch, run):
    """``run()`` with the kernel enabled and disabled; asserts that it ran only the first time."""
    spy = _Spy(monkeypatch)
    fast = run()
    assert spy.calls > 0
    monkeypatch.setattr(engine_kernel, "ENABLED", False)
    calls = spy.calls
    slow = run()
    assert spy.calls == calls
    monkeypatch.setattr(engine_kernel, "ENABLED", True)
    return fast, slow


def _assert_same(a, b):
    np.testing.assert_array_equal(a.checkpoints, b.checkpoints)
    assert a.averages.keys() == b.averages.keys()
    for name in a.averages:
        np.testing.assert_array_equal(a.averages[name], b.averages[name])
    np.testing.assert_array_equal(a.diverged_at, b.diverged_at)
    assert (a.draws is None) == (b.draws is None)
    np.testing.assert_array_equal(a.draws, b.draws)
    np.testing.assert_array_equal(a.draw_iterations, b.draw_iterations)
    np.testing.assert_array_equal(a.final_position, b.final_position)


@pytest.mark.parametrize("schedule", SCHEDULES, ids=list(SCHEDULES))
@pytest.mark.parametrize("sampler", SAMPLERS, ids=list(SAMPLERS))
@pytest.mark.parametrize("model", ["scalar_model", "gaussian_model"], ids=["d1", "d2"])
def test_compiled_equals_generic(monkeypatch, request, schedule, sampler, model):
    model = request.getfixturevalue(model)
    fast, slow = _both(monkeypatch, SCHEDULES[schedule](), SAMPLERS[sampler](), model)
    _assert_same(fast, slow)
    assert np.all(np.isfinite(fast.final_position))


@pytest.mark.parametrize("options", [
    {"replacement": False},  # Floyd's algorithm (n² <= N)
    {"replacement": False, "batch_size": 40},  # the smallest n of N uniform keys
    {"batch_size": 1},
    {"batch_size": 8},  # pairwise: exactly one row of partial sums
    {"batch_size": 131},  # pairwise: partial sums and a tail
    {"batch_size": 300},  # pairwise: halves (n > 128)
    {"chunk_size": 64},
    {"chunk_size": 128, "replicate_block": 5},
    {"replicate_block": 13},
    {"blocks": [3, 0]},
    {"initial_position": np.linspace(-1, 1, 13)[:, None, None]},
    {"test_functions": (THETA_SQUARED,), "thin": 0},  # sums kept in the kernel
    {"test_functions": (THETA, CUBE), "checkpoints": None},  # positions to the accumulator
], ids=["floyd", "keys", "batch-1", "batch-8", "batch-131", "batch-300", "chunk-64",
        "chunk-128-block-5", "one-block", "some-blocks", "per-replicate-start",
        "theta-squared-only", "other-test-function"])
@pytest.mark.parametrize("model", ["scalar_model", "gaussian_model"], ids=["d1", "d2"])
def test_compiled_equals_generic_for_draw_and_chunk_options(monkeypatch, request, options,
                                                            model):
    model = request.getfixturevalue(model)
    fast, slow = _both(monkeypatch, SCHEDULES["iid-0-to-9"](), SGLD(2e-4), model, **options)
    _assert_same(fast, slow)


@pytest.mark.parametrize("elements", [4, 8, 24])
def test_compiled_equals_generic_in_replicate_groups(monkeypatch, gaussian_model, elements):
    # groups of one block (4 replicates × 2 coordinates = 8 elements) or more, or less
    monkeypatch.setattr(engine, "GROUP_ELEMENTS", elements)
    fast, slow = _both(monkeypatch, SCHEDULES["async-two-servers"](),
                       SGHMC(1e-3, 3.0, "splitting"), gaussian_model)
    _assert_same(fast, slow)


@pytest.mark.parametrize("sampler", [SGLD(2.5), SGHMC(0.5, 0.1, "euler")],
                         ids=["sgld", "sghmc-euler"])
def test_compiled_equals_generic_when_chains_diverge(monkeypatch, scalar_model, sampler):
    fast, slow = _both(monkeypatch, SCHEDULES["iid-0-to-9"](), sampler, scalar_model)
    _assert_same(fast, slow)
    assert (fast.diverged_at > 0).all()  # the divergence path is exercised


def test_the_comparison_sees_one_ulp(monkeypatch, scalar_model):
    # negative control: a step size one ulp larger changes the results, and _assert_same fails
    schedule = SCHEDULES["iid-0-to-9"]()
    reference = _run(schedule, SGLD(2e-4), scalar_model)
    other = _run(schedule, SGLD(float(np.nextafter(2e-4, 1.0))), scalar_model)
    with pytest.raises(AssertionError):
        _assert_same(other, reference)


def test_samplers_estimators_and_schedules_that_do_not_opt_in_run_generic(
        monkeypatch, gaussian_model):
    spy = _Spy(monkeypatch)
    schedule = SCHEDULES["constant-1"]()
    _run(schedule, PSGLD(1e-4), gaussian_model)  # no kernel_spec

    class ChangedStep(SGLD):  # changes the step but inherits kernel_spec: not compiled
        def step(self, state, gradient, noise):
            return super().step(state, gradient, 0.5 * noise)

    _run(schedule, ChangedStep(2e-4), gaussian_model)

    class Opaque:  # an estimator without kernel_spec
        def __init__(self, inner):
            self.inner, self.n_data, self.dim = inner, inner.n_data, inner.dim

        def prepare(self, indices):
            return self.inner.prepare(indices)

        def __call__(self, position, minibatch):
            return self.inner(position, minibatch)

    engine.replay(schedule, SGLD(2e-4), Opaque(gaussian_model.minibatch_gradient()),
                  n_updates=100, n_replicates=3, initial_position=0.0, seed=1, batch_size=5)
    assert spy.calls == 0
    _run(schedule, SGLD(2e-4), gaussian_model)
    assert spy.calls > 0  # the same replay with SGLD itself does run compiled


@pytest.mark.parametrize("count", [1, 2, 7, 8, 9, 15, 16, 17, 100, 128, 129, 200, 256, 300,
                                   1000])
def test_pairwise_total_is_batch_sums_order(count):
    rng = generator(3, "pairwise", count)
    data = rng.standard_normal((500, 1)) * np.exp(rng.uniform(-20, 20, (500, 1)))
    batches = rng.integers(0, 500, (50, count))
    expected = batch_sum(data[batches.T, 0])
    kernel = np.array([gathered_sums.pairwise_total(data, b, 0, count) for b in batches])
    np.testing.assert_array_equal(kernel, expected)
    if count >= 9:
        # negative control: a plain running sum rounds differently on this wide-range data
        running = np.array([sum(data[b, 0].tolist()) for b in batches])
        assert not np.array_equal(running, expected)


def test_compiled_equals_generic_on_a_one_point_data_set(monkeypatch):
    # an edge of the in-kernel index draw: N = 1, every index 0 (numpy draws nothing)
    from workbench.models.gaussian import GaussianMeanModel

    model = GaussianMeanModel(np.array([[0.3]]))
    fast, slow = _both(monkeypatch, SCHEDULES["iid-0-to-9"](), SGLD(2e-4), model,
                       batch_size=3)
    _assert_same(fast, slow)


# ---------------------------------------------------------------------- sharded schedules
# "unequal": per-element bounds, one of them 1 (no draw); "unequal-30": every shard large
# enough for the draws without replacement below
SHARD_SIZES = {"equal": (250, 250, 250, 250), "unequal": (1, 149, 350, 500),
               "unequal-30": (30, 120, 350, 500)}


def _stale_sharded() -> Schedule:
    """Two servers, staleness 0..9, each update on shard (version + server) mod 4, with
    uneven frequencies."""
    base = iid_staleness(N_UPDATES, np.full(10, 0.1), n_servers=2, seed=4)
    columns = {name: getattr(base, name) for name in
               ("server", "worker", "kind", "version_read", "staleness", "applied",
                "start_time", "finish_time", "time")}
    shard = (base.version_read + base.server) % 4
    frequency = np.array([0.1, 0.2, 0.3, 0.4])[shard]
    return Schedule(**columns, shard=shard, shard_frequency=frequency, attrs=base.attrs)


SHARDED_SCHEDULES = {
    "traveling-chains": lambda: TravelingChains(
        4, 3, (3, 5, 2, 7), assignment="permutation",
        timing=WorkerTiming(LatencyModel("exponential", 1.0))).simulate(N_UPDATES, seed=3),
    "adaptive-traveling-chains": lambda: TravelingChains(
        4, 2, balancing="adaptive", mean_trajectory_length=4.0,
        timing=WorkerTiming(LatencyModel("exponential", 1.0), speed_factors=(1, 1, 3, 3)),
    ).simulate(N_UPDATES, seed=5),
    "stale-two-servers": _stale_sharded,
}


def _shard_estimator(model, sizes: str, scaled: bool = True):
    local = ShardedGaussianMean(model, SHARD_SIZES[sizes]).shard_gradient()
    return ShardScaled(local) if scaled else local


def _sharded_both(monkeypatch, schedule, sampler, estimator, **kwargs):
    """(compiled, generic) sharded replays; asserts the kernel ran only in the first."""
    options = dict(n_updates=N_UPDATES, n_replicates=13, initial_position=0.4, seed=8,
                   batch_size=10, replicate_block=4, checkpoints=[1, 7, 64, 200, N_UPDATES],
                   thin=9, divergence_threshold=1e4)
    options.update(kwargs)
    return _compiled_and_generic(
        monkeypatch, lambda: engine.replay(schedule, sampler, estimator, **options))


@pytest.mark.parametrize("schedule", SHARDED_SCHEDULES, ids=list(SHARDED_SCHEDULES))
@pytest.mark.parametrize("sizes", SHARD_SIZES, ids=list(SHARD_SIZES))
@pytest.mark.parametrize("scaled", [True, False], ids=["dsgld", "unscaled"])
@pytest.mark.parametrize("model", ["scalar_model", "gaussian_model"], ids=["d1", "d2"])
def test_compiled_equals_generic_on_sharded_schedules(monkeypatch, request, schedule, sizes,
                                                      scaled, model):
    estimator = _shard_estimator(request.getfixturevalue(model), sizes, scaled)
    fast, slow = _sharded_both(monkeypatch, SHARDED_SCHEDULES[schedule](), SGLD(2e-4),
                               estimator)
    _assert_same(fast, slow)
    assert np.all(np.isfinite(fast.final_position))


@pytest.mark.parametrize("sampler", ["sghmc-euler", "sghmc-splitting"])
@pytest.mark.parametrize("sizes", SHARD_SIZES, ids=list(SHARD_SIZES))
def test_compiled_equals_generic_on_sharded_schedules_with_sghmc(monkeypatch, gaussian_model,
                                                                 sampler, sizes):
    fast, slow = _sharded_both(monkeypatch, SHARDED_SCHEDULES["stale-two-servers"](),
                               SAMPLERS[sampler](), _shard_estimator(gaussian_model, sizes))
    _assert_same(fast, slow)


@pytest.mark.parametrize("options", [
    {"replacement": False, "batch_size": 5},  # Floyd's algorithm (n² <= min N_s)
    {"replacement": False, "batch_size": 20},  # keys over max N_s, +inf beyond each N_s
    {"batch_size": 131},  # pairwise: partial sums and a tail
    {"batch_size": 300},  # pairwise: halves (n > 128)
    {"chunk_size": 64},
    {"chunk_size": 128, "replicate_block": 5},
    {"blocks": [3, 0]},
    {"test_functions": (THETA, CUBE), "checkpoints": None},  # positions to the accumulator
], ids=["floyd", "keys", "batch-131", "batch-300", "chunk-64", "chunk-128-block-5",
        "some-blocks", "other-test-function"])
@pytest.mark.parametrize("sizes", ["equal", "unequal-30"])
@pytest.mark.parametrize("model", ["scalar_model", "gaussian_model"], ids=["d1", "d2"])
def test_compiled_equals_generic_on_sharded_schedules_for_draw_and_chunk_options(
        monkeypatch, request, options, sizes, model):
    estimator = _shard_estimator(request.getfixturevalue(model), sizes)
    schedule = SHARDED_SCHEDULES["traveling-chains"]()
    fast, slow = _sharded_both(monkeypatch, schedule, SGLD(2e-4), estimator, **options)
    _assert_same(fast, slow)


def _diagonal_surrogates(sharded, seed: int):
    """Diagonal surrogates with unequal variances and means off the shard means."""
    rng = generator(seed, "surrogates")
    dim = sharded.model.dim
    return surrogates.stack(
        (sharded.shard_means[s] + 0.1 * rng.standard_normal(dim),
         np.diag(rng.uniform(0.5, 2.0, dim)) / sharded.likelihood_precision(s))
        for s in range(sharded.n_shards))


@pytest.mark.parametrize("fitted", [False, True], ids=["analytic", "fitted-diagonal"])
@pytest.mark.parametrize("scaled", [True, False], ids=["dsgld", "unscaled"])
@pytest.mark.parametrize("sizes", ["equal", "unequal"])
@pytest.mark.parametrize("model", ["scalar_model", "gaussian_model"], ids=["d1", "d2"])
def test_compiled_equals_generic_with_conducive_gradients(monkeypatch, request, fitted, scaled,
                                                          sizes, model):
    sharded = ShardedGaussianMean(request.getfixturevalue(model), SHARD_SIZES[sizes])
    inner = _shard_estimator(sharded.model, sizes, scaled)
    fsgld = (Conducive(inner, _diagonal_surrogates(sharded, 2), alpha=0.7) if fitted
             else Conducive(inner, surrogates.analytic(sharded)))
    for schedule in ("traveling-chains", "stale-two-servers"):
        fast, slow = _sharded_both(monkeypatch, SHARDED_SCHEDULES[schedule](), SGLD(2e-4),
                                   fsgld, initial_position=0.0)
        _assert_same(fast, slow)
        assert np.all(np.isfinite(fast.final_position))


def test_compiled_equals_generic_with_conducive_gradients_and_sghmc(monkeypatch,
                                                                    gaussian_model):
    sharded = ShardedGaussianMean(gaussian_model, SHARD_SIZES["unequal-30"])
    fsgld = Conducive(_shard_estimator(gaussian_model, "unequal-30"),
                      _diagonal_surrogates(sharded, 3), alpha=1.3)
    fast, slow = _sharded_both(monkeypatch, SHARDED_SCHEDULES["stale-two-servers"](),
                               SGHMC(1e-3, 3.0, "splitting"), fsgld, replacement=False,
                               batch_size=20, chunk_size=64)
    _assert_same(fast, slow)


def test_compiled_equals_generic_with_conducive_gradients_when_chains_diverge(monkeypatch,
                                                                             gaussian_model):
    # every draw kept: the step at which one coordinate overflows shows whether the other
    # coordinate's surrogate term read the stale point (inf · 0 would make it NaN at once)
    sharded = ShardedGaussianMean(gaussian_model, SHARD_SIZES["equal"])
    fsgld = Conducive(_shard_estimator(gaussian_model, "equal"), surrogates.analytic(sharded))
    fast, slow = _sharded_both(monkeypatch, SHARDED_SCHEDULES["traveling-chains"](),
                               SGLD(2.5), fsgld, thin=1)
    _assert_same(fast, slow)
    assert (fast.diverged_at > 0).all()
    assert (~np.isfinite(fast.draws) & np.isfinite(fast.draws[..., ::-1])).any()


def test_compiled_equals_generic_in_sharded_replicate_groups(monkeypatch, gaussian_model):
    monkeypatch.setattr(engine, "GROUP_ELEMENTS", 8)  # groups of one block
    fast, slow = _sharded_both(monkeypatch, SHARDED_SCHEDULES["traveling-chains"](),
                               SGLD(2e-4), _shard_estimator(gaussian_model, "unequal"))
    _assert_same(fast, slow)


def test_the_sharded_comparison_sees_a_weight_one_ulp_off(monkeypatch, scalar_model):
    # negative control: D-SGLD's weight N_s/(N q_s) of one shard one ulp larger changes the
    # compiled results, and _assert_same fails
    schedule = SHARDED_SCHEDULES["traveling-chains"]()
    options = dict(n_updates=N_UPDATES, n_replicates=13, initial_position=0.4, seed=8,
                   batch_size=10, replicate_block=4, checkpoints=[N_UPDATES])
    estimator = _shard_estimator(scalar_model, "unequal")
    reference = engine.replay(schedule, SGLD(2e-4), estimator, **options)
    share = estimator._size_share.copy()
    share[2] = np.nextafter(share[2], 1.0)
    monkeypatch.setattr(estimator, "_size_share", share)
    spy = _Spy(monkeypatch)
    other = engine.replay(schedule, SGLD(2e-4), estimator, **options)
    assert spy.calls > 0
    with pytest.raises(AssertionError):
        _assert_same(other, reference)


def test_the_conducive_comparison_sees_a_surrogate_precision_one_ulp_off(scalar_model):
    # negative control: one shard's surrogate precision one ulp larger changes the results
    sharded = ShardedGaussianMean(scalar_model, SHARD_SIZES["unequal"])
    schedule = SHARDED_SCHEDULES["traveling-chains"]()
    options = dict(n_updates=N_UPDATES, n_replicates=13, initial_position=0.4, seed=8,
                   batch_size=10, replicate_block=4, checkpoints=[N_UPDATES])
    analytic = surrogates.analytic(sharded)
    covariances = analytic.covariances.copy()
    covariances[3] = 1 / np.nextafter(1 / covariances[3], 2 / covariances[3])
    assert not np.array_equal(covariances, analytic.covariances)
    runs = [engine.replay(schedule, SGLD(2e-4), Conducive(
        _shard_estimator(scalar_model, "unequal"), chosen), **options)
        for chosen in (analytic, surrogates.GaussianSurrogates(analytic.means, covariances))]
    with pytest.raises(AssertionError):
        _assert_same(*runs)


def test_sharded_estimators_that_do_not_describe_themselves_run_generic(monkeypatch,
                                                                         scalar_model,
                                                                         gaussian_model):
    spy = _Spy(monkeypatch)
    schedule = SHARDED_SCHEDULES["traveling-chains"]()
    sharded = ShardedGaussianMean(scalar_model, SHARD_SIZES["unequal"])
    dsgld = ShardScaled(sharded.shard_gradient())
    options = dict(n_updates=100, n_replicates=3, initial_position=0.0, seed=1, batch_size=5)
    # FSGLD with full-covariance surrogates: not described to the kernel
    plane = ShardedGaussianMean(gaussian_model, SHARD_SIZES["unequal"])
    full = surrogates.stack((plane.shard_means[s], np.array([[1.0, 0.3], [0.3, 1.0]]))
                            for s in range(plane.n_shards))
    engine.replay(schedule, SGLD(2e-4),
                  Conducive(ShardScaled(plane.shard_gradient()), full), **options)

    class Opaque:  # a shard-local base without kernel_spec, under D-SGLD's weight
        def __init__(self, inner):
            self.inner = inner
            self.n_data, self.dim, self.shard_sizes = inner.n_data, inner.dim, inner.shard_sizes
            self.prepare = inner.prepare
            self.prior_gradient = inner.prior_gradient
            self.likelihood_gradient = inner.likelihood_gradient

    engine.replay(schedule, SGLD(2e-4), ShardScaled(Opaque(sharded.shard_gradient())),
                  **options)
    # an unsharded estimator's description on a sharded schedule is refused by the kernel too
    assert engine_kernel.KernelReplay.plan(
        SGLD(2e-4), scalar_model.minibatch_gradient(), None, object(), None, None,
        True) is None
    assert spy.calls == 0
    engine.replay(schedule, SGLD(2e-4), dsgld, **options)
    assert spy.calls > 0  # D-SGLD itself does run compiled
