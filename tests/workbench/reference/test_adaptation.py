"""Warm-up step-size adaptation on a known acceptance curve α(h) = exp(-h)."""

import math

import numpy as np
import pytest

from workbench.reference.adaptation import (
    DualAveraging,
    metric_windows,
    regularised_variance,
    starting_step_size,
)


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


def test_metric_windows_follow_stans_schedule():
    # buffers of 75 and 50 steps, windows of 25, 50, 100, 200 and the last stretched to 950
    assert metric_windows(1000) == [(75, 100), (100, 150), (150, 250), (250, 450), (450, 950)]
    assert metric_windows(150) == [(75, 100)]
    # shorter than 150: 15 % buffer, 75 % window, 10 % buffer
    assert metric_windows(100) == [(15, 90)]
    assert metric_windows(12) == [(1, 11)]  # the shortest window is 10 steps
    assert metric_windows(10) == []


def test_regularised_variance_shrinks_towards_stans_constant():
    positions = np.array([[0.0, 10.0], [2.0, 10.0], [4.0, 10.0], [6.0, 10.0], [8.0, 10.0]])
    # variances 10 and 0 from n = 5: (5/10)·v + 1e-3·(5/10)
    np.testing.assert_allclose(regularised_variance(positions), [5.0005, 0.0005])
