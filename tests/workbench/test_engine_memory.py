"""The engine's memory budget (issue 15): a replay's peak stays under ``memory_budget``, and
a run that cannot fit is refused before it starts, naming the field.

Peak memory is what ``tracemalloc`` sees (numpy reports its buffers to it): 2,000 replicates
in d = 50 with a per-replicate result of three checkpoints, on the generic and the compiled
path (:mod:`workbench.engine_kernel`). Negative control: the same run in one group on the
generic path (the engine before issue 15) peaks well above the budgets the test sets, so the
bound is the grouping's doing and not the workload's size.
"""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest

from simulators.seeding import generator
from simulators.static import constant_staleness
from simulators.validation import InvalidParameter
from workbench import engine, engine_kernel
from workbench.models.gaussian import GaussianMeanModel
from workbench.samplers import SGLD

MIB = 1 << 20


@pytest.fixture(scope="module")
def wide_model():
    return GaussianMeanModel.generate(generator(0, "memory"), 1000, 50)


def _peak(model, **kwargs):
    ticks = []
    tracemalloc.start()
    try:
        run = engine.replay(constant_staleness(256, 10), SGLD(1e-4), model.minibatch_gradient(),
                            n_updates=256, n_replicates=2000, initial_position=0.0, seed=1,
                            batch_size=10, checkpoints=[10, 100, 256], progress=ticks.append,
                            **kwargs)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert sum(ticks) == 256
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
    # what `--memory-budget` sets around every task (workbench.runner._run_task)
    with engine.replay_memory_budget(8 * MIB), pytest.raises(InvalidParameter) as error:
        _peak(wide_model)
    assert "MiB of results for 2000 replicates" in str(error.value)
    with engine.replay_memory_budget(8 * MIB):
        run, peak = _peak(wide_model, memory_budget=64 * MIB)
    assert peak <= 64 * MIB
    run, _ = _peak(wide_model)  # outside the block: the default budget again
    with pytest.raises(InvalidParameter, match="memory_budget"):
        with engine.replay_memory_budget(0):
            pass
