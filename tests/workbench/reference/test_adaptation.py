"""Warm-up step-size adaptation on a known acceptance curve α(h) = exp(-h)."""

import math

import numpy as np
import pytest

from workbench.reference.adaptation import DualAveraging, starting_step_size


def test_starting_step_halves_until_acceptance_crosses_one_half():
    # α(1) = 0.37 < 1/2, so halve: α(0.5) = 0.61 > 1/2 stops the search
    assert starting_step_size(lambda h: math.exp(-h)) == 0.5
    # α(0.01) = 0.99 > 1/2, so double until α < 1/2: 0.01 · 2⁷ = 1.28 (α = 0.28)
    assert starting_step_size(lambda h: math.exp(-h), initial=0.01) == pytest.approx(1.28)


def test_starting_step_search_gives_up_with_a_reason():
    with pytest.raises(RuntimeError, match="no starting step size"):
        starting_step_size(lambda h: 0.0)


def test_dual_averaging_reaches_the_target_acceptance():
    """With α(h) = exp(-h) the target 0.574 is reached at h* = -log 0.574 = 0.555."""
    adaptation = DualAveraging(2.0, 0.574)
    step = 2.0
    for _ in range(3000):
        step = adaptation.update(math.exp(-step))
    assert adaptation.final == pytest.approx(-math.log(0.574), rel=0.02)


def test_dual_averaging_treats_a_nan_acceptance_as_zero():
    assert DualAveraging(1.0, 0.574).update(np.nan) == DualAveraging(1.0, 0.574).update(0.0)
