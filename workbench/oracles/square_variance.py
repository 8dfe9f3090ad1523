"""The cumulant terms of Var φ̂_L(θ²): a backward pass over the staleness sequence.

With F_L = Σ_{l<=L} θ_l² and non-Gaussian gradient noise (a minibatch sum), the variance of
F_L gains, beyond the Gaussian fourth moments (module docstring of
:mod:`workbench.oracles.linear_gaussian`),

    κ₄ Σ_j q_j²  +  4 κ₃ Σ_j q_j (μ r_j + e₀ s_j),

κ₃, κ₄ the third and fourth cumulants of ζ, and for the gradient noise of update j, entering
the stacked state as g (a unit noise), c_{lj} = e₁ᵀ Φ(l, j) g its weight in e_l:
q_j = Σ_{l=j}^{L} c_{lj}², r_j = Σ_{l=j}^{L} c_{lj} and s_j = Σ_{l=j}^{L} c_{lj} a_l with a_l
the mean of e_l per unit e₀. These sums look forward in time, so they are built backward:
Y_j = e₁e₁ᵀ + A_{j+1}ᵀ Y_{j+1} A_{j+1} gives q_j = gᵀ Y_j g, and y_j = e₁ x_j + A_{j+1}ᵀ y_{j+1}
gives r_j (x = 1) and s_j (x = a). Every checkpoint L_k has its own sums (they stop at L_k);
the pass carries one Y per checkpoint, the ones with L_k >= j active at step j, so the work
is Σ_k L_k products of S×S matrices.
"""

from __future__ import annotations

import numpy as np


def cumulant_weights(system, staleness: np.ndarray, unit_means: np.ndarray,
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
