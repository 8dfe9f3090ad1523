"""The accumulator's compiled running sums and divergence marks (workbench.engine.running_sums)
against
the numpy formulation they replaced, kept here, bit for bit."""

from __future__ import annotations

import numpy as np
import pytest

from workbench.core.phi import THETA, THETA_SQUARED, TestFunction
from workbench.engine import running_sums
from workbench.engine.replay_setup import Accumulator


class _ReplacedAccumulator:
    """The former Accumulator.add: cumsum of a concatenated copy, abs/compare/any marks."""

    def __init__(self, test_functions, checkpoints, shape, threshold):
        self.test_functions, self.checkpoints = test_functions, checkpoints
        self.threshold = threshold
        self.sums = {f.name: None for f in test_functions}
        self.averages = {f.name: [] for f in test_functions}
        self.diverged_at = np.full(shape, -1, dtype=np.int64)

    def add(self, positions, first):
        length, checkpoints = positions.shape[0], self.checkpoints
        with np.errstate(over="ignore", invalid="ignore"):
            bad = ~(np.abs(positions) <= self.threshold)
            bad = bad.any(axis=-1)
            hit = bad.any(axis=0) & (self.diverged_at < 0)
            if hit.any():
                self.diverged_at[hit] = first + 1 + bad.argmax(axis=0)[hit]
            inside = checkpoints[(checkpoints > first) & (checkpoints <= first + length)]
            for f in self.test_functions:
                values = f(positions)
                previous = self.sums[f.name]
                if previous is None:
                    previous = np.zeros_like(values[0])
                running = np.cumsum(np.concatenate([previous[None], values]), axis=0)[1:]
                self.sums[f.name] = running[-1]
                for count in inside:
                    self.averages[f.name].append(running[count - first - 1] / count)


_CACHE = np.random.default_rng(7).standard_normal((3, 2, 3))


def _view_of_positions(positions):
    return positions[..., ::-1]  # a strided view: must be read, never written


def _cached(positions):
    return np.broadcast_to(_CACHE, positions.shape)  # read-only view of shared data


FUNCTIONS = (THETA, THETA_SQUARED, TestFunction("reversed", _view_of_positions),
             TestFunction("cached", _cached))
#: no thinned draws kept (the updates kept, :func:`workbench.engine.replay_setup.kept_updates`)
NOTHING_KEPT = np.zeros(0, dtype=np.int64)


def _positions(n_updates, seed=3, scale=1e3):
    rng = np.random.default_rng(seed)
    positions = rng.standard_normal((n_updates, 3, 2, 3)) * scale
    positions[::7] *= 1e-300  # tiny values and signed zeros exercise rounding and -0.0
    positions[5, 0, 0, 0] = -0.0
    positions[40, 1, 1, 2] = np.nan
    positions[41, 1, 1, 2] = 1.0  # back inside: the first bad index stays 41
    positions[60, 2, 0, 1] = np.inf
    positions[33, 0, 1, :] = 5e3  # above the threshold below
    return positions


def _feed(accumulator, positions, chunks):
    first = 0
    for length in chunks:
        accumulator.add(positions[first:first + length], first)
        first += length


def _same(a, b):
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


@pytest.mark.parametrize("chunks", [[90], [1] * 90, [7, 30, 1, 52], [45, 45]])
def test_accumulator_equals_replaced_formulation_bit_for_bit(chunks):
    positions = _positions(90)
    original, cache = positions.copy(), _CACHE.copy()
    checkpoints = np.array([1, 2, 7, 33, 34, 41, 45, 46, 89, 90])
    old = _ReplacedAccumulator(FUNCTIONS, checkpoints, (3, 2), 4e3)
    _feed(old, positions, [90])
    new = Accumulator(FUNCTIONS, checkpoints, (3, 2), NOTHING_KEPT, 4e3)
    _feed(new, positions, chunks)
    assert _same(positions, original) and _same(_CACHE, cache)
    assert np.array_equal(new.diverged_at, old.diverged_at)
    assert new.diverged_at.tolist() == [[-1, 34], [-1, 41], [61, -1]]
    for f in FUNCTIONS:
        assert len(new.averages[f.name]) == checkpoints.size
        for a, b in zip(new.averages[f.name], old.averages[f.name], strict=True):
            assert _same(np.asarray(a), b), f.name
        assert _same(new.sums[f.name], old.sums[f.name]), f.name


def test_negative_control_other_summation_orders_change_bits():
    # Bit-for-bit comparison discriminates: the same values summed chunk by chunk and then
    # added (what a per-chunk reduction would do) or pairwise (np.sum) give other bits.
    positions = _positions(90, scale=1.0)
    accumulator = Accumulator((THETA,), np.array([90]), (3, 2), NOTHING_KEPT, np.inf)
    _feed(accumulator, positions, [7, 30, 1, 52])
    sums = accumulator.sums["theta"]
    per_chunk = sum(positions[a:b].sum(axis=0) for a, b in ((0, 7), (7, 37), (37, 38), (38, 90)))
    finite = np.isfinite(sums)
    assert not np.array_equal(sums[finite], per_chunk[finite])
    pairwise = np.ascontiguousarray(np.moveaxis(positions, 0, -1)).sum(axis=-1)
    assert not np.array_equal(sums[finite], pairwise[finite])


def test_negative_control_divergence_marks_see_each_bad_kind():
    for bad in (np.nan, np.inf, -np.inf, 11.0):
        positions = np.zeros((4, 1, 2, 2))
        positions[2, 0, 1, 1] = bad
        flags = np.full((1, 2), -1, dtype=np.int64)
        running_sums.mark_divergence(positions, 10, 10.0, flags)
        assert flags.tolist() == [[-1, 13]], bad
    flags = np.array([[5, -1]])
    running_sums.mark_divergence(np.full((3, 1, 2, 1), np.nan), 10, 1.0, flags)
    assert flags.tolist() == [[5, 11]]  # an earlier flag is kept


def test_values_are_never_written():
    positions = _positions(90)[:20]
    view = positions[:, :, :, ::-1]
    before = positions.copy()
    total = np.zeros(view.shape[1:])
    running_sums.running_sums(view, total, 0, np.array([3, 20]))
    assert _same(positions, before)
