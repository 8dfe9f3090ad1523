"""The shift-register kernels of the exact oracle against the dense stacked recursion.

:func:`workbench.oracles.linear_gaussian.finite_moments` propagates the stacked state in ring
order with O(S) work per covariance update; ``tests/workbench/dense_oracle.py`` is the dense
O(S³) recursion it replaced. On random small systems (every sampler family, random
transition and gains, staleness sequences drawn at random under the l >= τ_l constraint,
checkpoints in any order) every field must agree to rounding: rtol 1e-10 relative to each
field's largest magnitude (the dense path multiplies full matrices, the kernels sum only the
nonzero terms, so the two round differently at the 1e-15 level per operation; L <= 80 updates
accumulate that to well below 1e-10). Negative controls: a staleness sequence shifted by one
and a perturbed precision both give fields that differ far beyond that tolerance.
"""

from __future__ import annotations

import numpy as np
import pytest

from tests.workbench.dense_oracle import dense_finite_moments
from workbench.oracles import shift_register
from workbench.oracles.linear_gaussian import (
    FiniteMoments,
    LinearDynamics,
    StackedSystem,
    finite_moments,
    sghmc_euler_dynamics,
    sghmc_splitting_dynamics,
    sgld_dynamics,
)

RTOL = 1e-10
FIELDS = [name for name in FiniteMoments.__dataclass_fields__ if name != "checkpoints"]


def _random_dynamics(rng, size):
    return LinearDynamics(np.eye(size) + 0.1 * rng.standard_normal((size, size)),
                          0.2 * rng.standard_normal(size), 0.3 * rng.standard_normal(size),
                          rng.standard_normal(size),
                          gradient_noise_gain=0.2 * rng.standard_normal(size))


def _random_staleness(rng, length, history):
    staleness = rng.integers(0, history + 1, size=length)
    return np.minimum(staleness, np.arange(length))


def _largest_difference(fast, dense):
    """Largest |fast - dense| over all fields, relative to each field's largest magnitude;
    a field NaN in both (fourth moments not asked for) must be NaN in exactly the same places."""
    worst = 0.0
    for name in FIELDS:
        a, b = getattr(fast, name), getattr(dense, name)
        assert np.array_equal(np.isnan(a), np.isnan(b)), name
        if np.all(np.isnan(b)):
            continue
        scale = max(float(np.nanmax(np.abs(b))), 1e-300)
        worst = max(worst, float(np.nanmax(np.abs(a - b))) / scale)
    return worst


CASES = [(sgld_dynamics(0.05), 1.5), (sghmc_euler_dynamics(0.1, 1.5), 2.0),
         (sghmc_splitting_dynamics(0.1, 1.5), 2.0)]


@pytest.mark.parametrize("case", range(12))
def test_kernels_equal_the_dense_recursion_on_random_systems(case):
    rng = np.random.default_rng(1500 + case)
    if case < 3:
        dynamics, precision = CASES[case]
    else:
        dynamics, precision = _random_dynamics(rng, int(rng.integers(1, 4))), 0.7
        if case % 2:  # a plain gradient-noise gain: the fourth moments apply
            dynamics = LinearDynamics(dynamics.transition, dynamics.gradient_gain,
                                      dynamics.thermal_gain, dynamics.gradient_point)
    fourth = dynamics.gradient_noise_gain is None
    length, history = int(rng.integers(20, 81)), int(rng.integers(0, 9))
    staleness = _random_staleness(rng, length, history)
    checkpoints = rng.permutation(np.arange(1, length + 1))[:int(rng.integers(1, 6))]
    fast = finite_moments(dynamics, precision, staleness, checkpoints, fourth_moments=fourth)
    # the dense path returns its rows in update order: compare in that order
    order = np.argsort(checkpoints)
    fast = FiniteMoments(*(getattr(fast, name)[order]
                           for name in FiniteMoments.__dataclass_fields__))
    dense = dense_finite_moments(dynamics, precision, staleness, checkpoints[order],
                                 fourth_moments=fourth)
    assert _largest_difference(fast, dense) < RTOL


def test_constant_staleness_at_the_largest_lag_reads_the_slot_being_overwritten():
    # τ = H everywhere after warm-up: the read slot is the head the new point overwrites
    staleness = np.minimum(np.full(60, 5), np.arange(60))
    dynamics = sghmc_splitting_dynamics(0.1, 1.5)
    fast = finite_moments(dynamics, 2.0, staleness, [7, 31, 60])
    dense = dense_finite_moments(dynamics, 2.0, staleness, [7, 31, 60])
    assert _largest_difference(fast, dense) < RTOL


@pytest.mark.parametrize("perturbation", ["shifted staleness", "precision"])
def test_a_different_system_is_told_apart(perturbation):
    # negative control: the comparison detects a change of one step of staleness or precision
    rng = np.random.default_rng(7)
    staleness = _random_staleness(rng, 60, 4)
    dynamics = sghmc_euler_dynamics(0.1, 1.5)
    dense = dense_finite_moments(dynamics, 2.0, staleness, [10, 60])
    if perturbation == "shifted staleness":
        other = np.minimum(np.maximum(staleness - 1, 0) + (staleness == 0), np.arange(60))
        fast = finite_moments(dynamics, 2.0, other, [10, 60])
    else:
        fast = finite_moments(dynamics, 2.0 * (1 + 1e-6), staleness, [10, 60])
    assert _largest_difference(fast, dense) > 1e3 * RTOL


def _ring_transition(system, staleness, head):
    """A_τ in ring order, built column by column by the row kernel from the identity."""
    args = system.kernel_arguments()
    ax, ar = shift_register._coefficients(*args[:4], staleness)
    k, history = system.dynamics.size, system.history
    read = shift_register._read_position(k, history, head, staleness)
    where = (read, k + head if history else -1, system.size - 1)
    matrix = np.eye(system.size)
    scratch = np.zeros((k + 1, system.size))
    shift_register.apply_rows(matrix, ax, ar, args[2], *where, scratch)
    return matrix, (ax, ar, args[2], *where, scratch)


@pytest.mark.parametrize("staleness, head", [(0, 2), (1, 0), (3, 1), (4, 3), (4, 0)])
def test_each_kernel_is_its_product_with_the_permuted_dense_transition(staleness, head):
    rng = np.random.default_rng(11)
    system = StackedSystem(_random_dynamics(rng, 2), 0.8, 4)
    ring, arguments = _ring_transition(system, staleness, head)
    # ring position of dense index: x and S stay, lag i sits at k + (head - i) mod H
    k, history = 2, 4
    position = np.arange(system.size)
    position[k:k + history] = k + (head - np.arange(1, history + 1)) % history
    permutation = np.zeros((system.size, system.size))
    permutation[position, np.arange(system.size)] = 1.0
    dense = system.transition(staleness)
    # the dense transition maps lag i to lag i + 1: in ring order, at the next head
    next_position = position.copy()
    next_position[k:k + history] = k + (head + 1 - np.arange(1, history + 1)) % history
    after = np.zeros_like(permutation)
    after[next_position, np.arange(system.size)] = 1.0
    np.testing.assert_allclose(ring, after @ dense @ permutation.T, rtol=0, atol=1e-15)
    x = rng.standard_normal((system.size, system.size))
    for kernel, expected in ((shift_register.apply_rows, ring @ x),
                             (shift_register.apply_columns, x @ ring.T),
                             (shift_register.adjoint_rows, ring.T @ x),
                             (shift_register.adjoint_columns, x @ ring)):
        out = x.copy()
        scratch = arguments[-1] if kernel in (shift_register.apply_rows,
                                              shift_register.adjoint_rows) else arguments[-1][0]
        kernel(out, *arguments[:-1], scratch)
        np.testing.assert_allclose(out, expected, rtol=1e-13, atol=1e-13, err_msg=kernel.__name__)
