"""The dense stacked recursion as it was before the shift-register kernels (issue 15): the
reference that tests/workbench/test_shift_register.py compares them with. It multiplies the
full S×S transition matrices, O(L·S³); never used by the workbench itself."""

import numpy as np

from workbench.oracles.linear_gaussian import (
    FiniteMoments,
    LinearDynamics,
    StackedSystem,
    _validated_sequence,
)


def dense_finite_moments(dynamics: LinearDynamics, precision: float, staleness: np.ndarray,
                   checkpoints: np.ndarray, fourth_moments: bool = True) -> FiniteMoments:
    """Propagate mean, covariance and the fourth-moment recursions through ``staleness[l]``.

    One forward pass (mean, covariance P, the W and u recursions of the module docstring)
    and one backward pass for the cumulant terms, O(L·S³) time and O(K·S²) memory for K
    checkpoints and stacked size S. ``fourth_moments=False`` skips the W and u recursions and
    the backward pass (about 6 times cheaper) for callers that need only means and Var φ̂(θ);
    the fourth-moment fields are then NaN, and so is the variance of φ̂(θ²).
    """
    staleness, checkpoints = _validated_sequence(staleness, checkpoints)
    system = StackedSystem(dynamics, precision, int(staleness.max()))
    n = system.size
    mean = system.initial_mean()
    # P_ζ, P_ξ, W_ζζ, W_ζξ, W_ξξ propagate by the same A·Aᵀ: one batched product
    stack = np.zeros((5 if fourth_moments else 2, n, n))
    noise = np.stack([system.gradient_noise, system.thermal_noise])
    # u vectors: (ζ, 1), (ζ, a), (ξ, 1), (ξ, a)
    forms = np.zeros((4, n))
    wanted = set(checkpoints.tolist())
    # running sums: Σ m_e, Σ m_e², Σ Pζ_ee, Σ Pξ_ee; then tr(C_ζ²), tr(C_ζC_ξ), tr(C_ξ²); then
    # 1ᵀC1, 1ᵀCa, aᵀCa for C_ζ and for C_ξ
    totals = np.zeros(13)
    if not fourth_moments:
        totals[4:] = np.nan
    left, right = [0, 0, 1], [0, 1, 1]  # the noise pairs of W_ζζ, W_ζξ, W_ξξ
    per_form = [0, 0, 1, 1]  # the noise of each u vector
    unit_means = np.empty(staleness.size)
    rows = []
    with np.errstate(over="ignore", invalid="ignore"):
        for count, tau in enumerate(staleness.tolist(), start=1):
            a = system.transition(tau)
            mean = a @ mean
            stack = a @ stack @ a.T
            stack[:2] += noise
            x = mean[0]
            unit_means[count - 1] = x
            diagonal = stack[:2, 0, 0]  # Var e_l parts
            totals[:4] += (x, x * x, diagonal[0], diagonal[1])
            if fourth_moments:
                v = stack[:2, :, 0].copy()  # Cov(z_l, e_l): ζ and ξ parts
                stack[2:] += v[left, :, None] * v[right, None, :]
                weights = np.array([1.0, x, 1.0, x])
                forms = forms @ a.T + v[per_form] * weights[:, None]
                u = forms[:, 0]
                totals[4:] += np.concatenate((
                    2 * stack[2:, 0, 0] - v[left, 0] * v[right, 0],
                    [2 * u[0] - v[0, 0], u[1] + u[0] * x - v[0, 0] * x,
                     (2 * u[1] - v[0, 0] * x) * x,
                     2 * u[2] - v[1, 0], u[3] + u[2] * x - v[1, 0] * x,
                     (2 * u[3] - v[1, 0] * x) * x]))
            if count in wanted:
                rows.append((mean[-1], stack[0, -1, -1], stack[1, -1, -1], *totals))
    values = np.array(rows).T
    weights = (dense_cumulant_weights(system, staleness, unit_means, checkpoints)
               if fourth_moments
               else np.full((checkpoints.size, 3), np.nan))
    return FiniteMoments(checkpoints, *values[:7], values[7:10].T, values[10:13].T,
                         values[13:16].T, weights)


def dense_cumulant_weights(system, staleness: np.ndarray, unit_means: np.ndarray,
                           checkpoints: np.ndarray) -> np.ndarray:
    """``(checkpoint, 3)`` sums (Σ_j q_j², Σ_j q_j r_j, Σ_j q_j s_j) of the module docstring.

    ``system``: the :class:`~workbench.oracles.linear_gaussian.StackedSystem` of the run;
    ``staleness[l - 1]`` and ``unit_means[l - 1]``: staleness and mean of e_l per unit e₀ for
    update l = 1..L.
    """
    order = np.argsort(-checkpoints, kind="stable")  # longest first: active ones a prefix
    lengths = checkpoints[order]
    n = system.size
    g = system.gradient_vector
    quadratic = np.zeros((lengths.size, n, n))
    linear = np.zeros((lengths.size, 2, n))  # y for x = 1 and x = a
    sums = np.zeros((lengths.size, 3))
    active = 0
    with np.errstate(over="ignore", invalid="ignore"):
        for j in range(int(lengths[0]), 0, -1):
            if active:
                a = system.transition(int(staleness[j]))  # update j + 1
                quadratic[:active] = a.T @ quadratic[:active] @ a
                linear[:active] = linear[:active] @ a
            while active < lengths.size and lengths[active] >= j:
                active += 1
            quadratic[:active, 0, 0] += 1.0
            linear[:active, 0, 0] += 1.0
            linear[:active, 1, 0] += unit_means[j - 1]
            q = np.einsum("i,kij,j->k", g, quadratic[:active], g)
            r = linear[:active] @ g
            sums[:active, 0] += q * q
            sums[:active, 1] += q * r[:, 0]
            sums[:active, 2] += q * r[:, 1]
    out = np.empty_like(sums)
    out[order] = sums
    return out
