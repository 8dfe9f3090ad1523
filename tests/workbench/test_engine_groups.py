"""Replicate groups (issue 15): stepping the blocks in cache-sized groups changes nothing.

Each block draws from its own streams, so a run split into groups of blocks must equal the
same run stepped all together, bit for bit, in every output (averages, divergence flags,
thinned draws, final positions), with per-replicate starting positions and with a subset of
the blocks; progress reports the same total of updates. Negative control: the same
comparison tells apart two runs that differ in one block's seed stream.
"""

from __future__ import annotations

import numpy as np
import pytest

from simulators.static import iid_staleness
from workbench.engine import replay as engine
from workbench.samplers import SGHMC, SGLD


def _run(model, sampler, **kwargs):
    options = dict(n_updates=300, n_replicates=23, initial_position=0.5, seed=9,
                   batch_size=5, replicate_block=4, checkpoints=[1, 9, 150, 300], thin=25,
                   divergence_threshold=1e3)
    options.update(kwargs)
    ticks = []
    result = engine.replay(iid_staleness(300, [0.3, 0.3, 0.4], seed=2), sampler,
                           model.minibatch_gradient(), progress=ticks.append, **options)
    return result, sum(ticks)


def _assert_same(a, b):
    np.testing.assert_array_equal(a.checkpoints, b.checkpoints)
    for name in a.averages:
        np.testing.assert_array_equal(a.averages[name], b.averages[name])
    np.testing.assert_array_equal(a.diverged_at, b.diverged_at)
    np.testing.assert_array_equal(a.draws, b.draws)
    np.testing.assert_array_equal(a.draw_iterations, b.draw_iterations)
    np.testing.assert_array_equal(a.final_position, b.final_position)


@pytest.mark.parametrize("sampler", [SGLD(0.02), SGHMC(0.05, 2.0, "splitting"),
                                     SGLD(2.5)],  # the last one diverges
                         ids=["sgld", "sghmc", "diverging-sgld"])
@pytest.mark.parametrize("kwargs", [{}, {"blocks": [5, 1, 2]},
                                    {"initial_position": np.linspace(-1, 1, 46).reshape(23, 1, 2)}],
                         ids=["all-blocks", "some-blocks", "per-replicate-start"])
def test_groups_of_one_block_equal_one_group(gaussian_model, monkeypatch, sampler, kwargs):
    together, together_updates = _run(gaussian_model, sampler, **kwargs)
    # one block (4 replicates × 2 coordinates) per group, and two blocks per group
    for elements in (8, 16):
        monkeypatch.setattr(engine, "GROUP_ELEMENTS", elements)
        grouped, grouped_updates = _run(gaussian_model, sampler, **kwargs)
        _assert_same(grouped, together)
        assert grouped_updates == together_updates == 300


def test_the_comparison_sees_a_different_stream(gaussian_model, monkeypatch):
    # negative control: another seed changes every block, and the comparison fails
    reference, _ = _run(gaussian_model, SGLD(0.02))
    monkeypatch.setattr(engine, "GROUP_ELEMENTS", 8)
    other, _ = _run(gaussian_model, SGLD(0.02), seed=10)
    with pytest.raises(AssertionError):
        _assert_same(other, reference)
