"""The engine's compiled path (issue 15, item 1) against the generic numpy path, bit for bit.

``workbench.engine_kernel.ENABLED = False`` forces the generic path; every other input is the
same, so every output (checkpoint averages, divergence flags, thinned draws, final positions)
must be equal to the last bit: constant, i.i.d. and simulated asynchronous multi-server
schedules, τ = 0 to τ_max = 9, d = 1 and d = 2, with and without replacement (both index
methods), batches that take every branch of the pairwise sum, several chunk sizes and replicate
groupings, SGLD and both SGHMC integrators, and a diverging run.

Negative controls: the kernel really runs (its ``advance`` is called) when enabled and not
when disabled or when a sampler or estimator does not opt in; the comparison
tells apart two runs whose step sizes differ by one ulp; and the kernel's pairwise minibatch
sum equals :func:`workbench.minibatch.batch_sum` where a plain running sum does not.
"""

from __future__ import annotations

import numpy as np
import pytest

from simulators.async_server import AsyncServerSystem
from simulators.latency import LatencyModel, WorkerTiming
from simulators.seeding import generator
from simulators.static import constant_staleness, iid_staleness
from workbench import engine, engine_kernel
from workbench.minibatch import batch_sum
from workbench.samplers import PSGLD, SGHMC, SGLD
from workbench.test_functions import THETA, THETA_SQUARED, TestFunction

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
    spy = _Spy(monkeypatch)
    fast = _run(schedule, sampler, model, **kwargs)
    assert spy.calls > 0
    monkeypatch.setattr(engine_kernel, "ENABLED", False)
    calls = spy.calls
    slow = _run(schedule, sampler, model, **kwargs)
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
    kernel = np.array([engine_kernel._pairwise_total(data, b, 0, count) for b in batches])
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
