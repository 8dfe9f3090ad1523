"""Per-element bounded integers drawn exactly as numpy draws them
(workbench.gradients.bounded_draws)."""

from __future__ import annotations

import numpy as np
import pytest

from workbench.gradients.bounded_draws import bounded_integers
from workbench.gradients.minibatch import draw_indices


def _bounds(rng, kind):
    if kind == "shards":  # D-SGLD minibatches over unequal shards
        return np.broadcast_to(rng.integers(2, 3000, (64, 5, 3, 1)), (64, 5, 3, 10))
    if kind == "wide":  # the whole 32-bit range
        return rng.integers(2, 2**32 - 1, (7, 9))
    if kind == "rejections":  # bounds where Lemire rejects about half the words
        return np.full(500, 2**31 + 5)
    return rng.integers(2, 50, (1,))


@pytest.mark.parametrize("kind", ["shards", "wide", "rejections", "one"])
@pytest.mark.parametrize("spare_half", [0, 1, 2])
def test_the_draws_and_the_generator_state_are_numpy_s_bit_for_bit(kind, spare_half):
    """Same integers, same final state (incl. the spare 32-bit half), same later draws."""
    picker = np.random.default_rng(hash((kind, spare_half)) % 2**32)
    for _ in range(20):
        bounds = _bounds(picker, kind)
        seed = int(picker.integers(2**62))
        ours, theirs = (np.random.Generator(np.random.PCG64(seed)) for _ in range(2))
        for _ in range(spare_half):  # a 32-bit draw before leaves half an output spare
            ours.integers(0, 7)
            theirs.integers(0, 7)
        np.testing.assert_array_equal(bounded_integers(ours, bounds), theirs.integers(0, bounds))
        assert ours.bit_generator.state == theirs.bit_generator.state
        assert ours.integers(0, 1000, 9).tolist() == theirs.integers(0, 1000, 9).tolist()


def test_what_the_fast_path_does_not_cover_goes_to_numpy():
    for bounds in (np.array([1, 5, 7]), np.array([3, 2**32]), np.zeros(0, np.int64)):
        ours, theirs = np.random.default_rng(4), np.random.default_rng(4)
        np.testing.assert_array_equal(bounded_integers(ours, bounds), theirs.integers(0, bounds))
        assert ours.bit_generator.state == theirs.bit_generator.state
    ours = np.random.Generator(np.random.Philox(4))
    theirs = np.random.Generator(np.random.Philox(4))
    np.testing.assert_array_equal(bounded_integers(ours, np.array([9, 300])),
                                  theirs.integers(0, np.array([9, 300])))


def test_unequal_shard_minibatches_are_the_per_element_draws():
    sizes = np.array([3, 1000, 57])[None, None, :]
    ours, theirs = np.random.default_rng(8), np.random.default_rng(8)
    drawn = draw_indices(ours, sizes, 10, (64, 4, 3), replacement=True)
    expected = theirs.integers(0, np.broadcast_to(sizes, (64, 4, 3))[..., None], (64, 4, 3, 10))
    np.testing.assert_array_equal(drawn, expected)
    assert ours.bit_generator.state == theirs.bit_generator.state


@pytest.mark.parametrize("bound", [1, 2, 7, 1000, 2**31 + 5, 2**32 - 1, 2**32, 2**40])
@pytest.mark.parametrize("spare_half", [0, 1])
def test_one_bound_for_all_draws_numpy_s_integers_and_state(bound, spare_half):
    """uniform_integers is Generator.integers(0, N, shape) bit for bit (compiled up to
    N = 2³² - 1, numpy's own call above), with the same final state and later draws."""
    from workbench.gradients.bounded_draws import uniform_integers

    ours, theirs = np.random.default_rng(bound + spare_half), np.random.default_rng(
        bound + spare_half)
    for _ in range(spare_half):
        ours.integers(0, 7)
        theirs.integers(0, 7)
    drawn = uniform_integers(ours, bound, (64, 3, 5, 10))
    expected = theirs.integers(0, bound, (64, 3, 5, 10))
    assert drawn.dtype == expected.dtype and drawn.shape == expected.shape
    np.testing.assert_array_equal(drawn, expected)
    assert ours.bit_generator.state == theirs.bit_generator.state
    assert ours.integers(0, 1000, 9).tolist() == theirs.integers(0, 1000, 9).tolist()
    if bound > 2:
        # negative control: the bound one lower draws other numbers from the same state
        lower = uniform_integers(np.random.default_rng(bound), bound - 1, (64, 3, 5, 10))
        assert not np.array_equal(lower, np.random.default_rng(bound).integers(
            0, bound, (64, 3, 5, 10)))


def test_minibatches_of_one_data_set_and_of_equal_shards_are_numpy_s_integers():
    for sizes in (1000, np.full((1, 1, 3), 250)):
        ours, theirs = np.random.default_rng(9), np.random.default_rng(9)
        drawn = draw_indices(ours, sizes, 10, (64, 4, 3), replacement=True)
        np.testing.assert_array_equal(drawn, theirs.integers(0, int(np.max(sizes)),
                                                             (64, 4, 3, 10)))
        assert ours.bit_generator.state == theirs.bit_generator.state
