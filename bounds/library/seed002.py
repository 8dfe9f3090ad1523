"""Seed 002 (el Mekkaoui, Mesquita, Blomstedt & Kaski, *Federated SGLD*, UAI 2021).

Theorem 1 (DSGLD), its serial-SGLD special case (Remark 2) and Theorem 2 (FSGLD) survived as
display formulas, so they are [seed] (docs/math.md §5). The seed writes them in the Welling–Teh
convention with step h (θ ← θ + (h/2)(...) + N(0, h)), which is the workbench's
``step_size_wt`` ε = 2h_Chen; the records display it as the paper does (h) and T for the
number of iterations. The shard sums are aggregates over the dim ``shard``:

    Γ² = Σ_s N_s² γ_s² / f_s   (γ_s² bounds ‖∇log p(x_i|θ)‖² on shard s),
    E² = Σ_s (N_s² / f_s) ε_s²  (ε_s² bounds the shard-average surrogate mismatch),

so a caller with data-derived γ_s² and ε_s² (seed 002 Figure 4 evaluates them on a grid)
evaluates the bounds as ``get("seed002-theorem-2-fsgld").evaluate(shard_size=N_s,
selection_probability=f_s, surrogate_error_sq=eps2_s, batch_size=m, n_iterations=T,
step_size_wt=h, C=1.0)`` with per-shard arrays (or DataArrays with a ``shard`` dim), or
passes ``shard_surrogate_sum`` directly; :func:`bounds.checks.fit_envelope` fits C (one
coefficient per term) the same way.
"""

from __future__ import annotations

from bounds.record import Aggregate, Bound
from bounds.symbols import (
    C,
    batch_size,
    gradient_bound,
    n_data,
    n_iterations,
    n_shards,
    selection_probability,
    shard_gradient_bound_sq,
    shard_gradient_sum,
    shard_index,
    shard_size,
    shard_surrogate_sum,
    step_size_wt,
    surrogate_error_sq,
)

SOURCE = ("seed 002: el Mekkaoui, Mesquita, Blomstedt & Kaski, Federated Stochastic Gradient "
          "Langevin Dynamics, UAI 2021")
T, h, m = n_iterations, step_size_wt, batch_size
DISPLAY = {n_iterations: ("T", "T"), step_size_wt: ("h", "h"), batch_size: ("m", "m")}

_N = (shard_size, shard_size.name, shard_index)
_F = (selection_probability, selection_probability.name, shard_index)
GRADIENT_SUM = Aggregate(
    shard_gradient_sum, shard_size**2 * shard_gradient_bound_sq / selection_probability,
    (shard_index,), n_shards, "shard",
    (_N, (shard_gradient_bound_sq, shard_gradient_bound_sq.name, shard_index), _F))
SURROGATE_SUM = Aggregate(
    shard_surrogate_sum, shard_size**2 * surrogate_error_sq / selection_probability,
    (shard_index,), n_shards, "shard",
    (_N, (surrogate_error_sq, surrogate_error_sq.name, shard_index), _F))

REGULARITY = ("standard regularity conditions of Chen et al. (2015) (seed 002 Appendix A); "
              "smooth test function φ")
FIXED = "fixed step h_t = h for t = 1..T (Welling–Teh convention, h = 2·h_Chen)"
ASSUMPTION_1 = "seed 002 Assumption 1: ‖∇log p(x_i|θ)‖ ≤ γ_s for all θ and x_i on shard s"

BOUNDS = (
    Bound("seed002-theorem-1-dsgld",
          "Theorem 1: MSE of distributed SGLD (DSGLD) on sharded data", "mse", "upper bound",
          C * ((shard_gradient_sum + 1) / (m * T) + h**2),
          f"{SOURCE}, Theorem 1, eq. in §4; docs/math.md §5", "seed",
          (REGULARITY, ASSUMPTION_1, FIXED, "shard s selected with probability f_s"),
          "[seed] display formula of the paper.", h, T, aggregates=(GRADIENT_SUM,),
          display=DISPLAY,
          notes="There is no 1/(hT) term in the paper's statement, so within this bound a "
                "smaller step is always better."),
    Bound("seed002-remark-2-sgld",
          "Remark 2: serial SGLD as the one-shard special case of Theorem 1", "mse",
          "upper bound",
          C * (n_data**2 * gradient_bound**2 / (m * T) + 1 / (h * T) + h**2),
          f"{SOURCE}, Remark 2; docs/math.md §5", "seed",
          (REGULARITY, "all shards combined into one data set of N points; γ ≥ γ_s", FIXED),
          "[seed] display formula of the paper.", h, T, display=DISPLAY),
    Bound("seed002-theorem-2-fsgld",
          "Theorem 2: MSE of federated SGLD (FSGLD) with conducive gradients", "mse",
          "upper bound", C * (shard_surrogate_sum / (m * T) + 1 / (h * T) + h**2),
          f"{SOURCE}, Theorem 2; docs/math.md §5", "seed",
          (REGULARITY, ASSUMPTION_1, FIXED, "log q_1..log q_S differentiable and Lipschitz "
           "(Lemma 2), so ε_s exists", "shard s selected with probability f_s"),
          "[seed] display formula of the paper.", h, T, aggregates=(SURROGATE_SUM,),
          display=DISPLAY,
          notes="Better surrogates q_s shrink ε_s² and with it the first term (seed 002 "
                "Remark 3)."),
)
