"""The cumulant terms of Var φ̂_L(θ²): a backward pass over the staleness sequence
(docs/math.md §9.3).

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
the pass carries one Y per checkpoint, the ones with L_k >= j active at step j. On the
shift-register structure of the stacked state (:mod:`workbench.oracles.shift_register`)
Aᵀ Y A changes O(S) entries, so the work is O(S·Σ_k L_k), compiled.
"""

from __future__ import annotations

import numpy as np

from workbench.oracles.shift_register import backward_pass


def cumulant_weights(system, staleness: np.ndarray, unit_means: np.ndarray,
                     checkpoints: np.ndarray) -> np.ndarray:
    """``(checkpoint, 3)`` sums (Σ_j q_j², Σ_j q_j r_j, Σ_j q_j s_j) of the module docstring.

    ``system``: the :class:`~workbench.oracles.linear_gaussian.StackedSystem` of the run;
    ``staleness[l - 1]`` and ``unit_means[l - 1]``: staleness and mean of e_l per unit e₀ for
    update l = 1..L.
    """
    order = np.argsort(-checkpoints, kind="stable")  # longest first: active ones a prefix
    sums = backward_pass(*system.kernel_arguments(), staleness, system.gradient_vector,
                         np.asarray(unit_means, dtype=float), checkpoints[order])
    out = np.empty_like(sums)
    out[order] = sums
    return out
