"""Higher-order integrators (Chen, Ding & Carin, NIPS 2015), cited by seeds 001 and 003.

Bias and MSE of SG-MCMC with a K-th order integrator, for K = 1 (Euler) and K = 2 (symmetric
splitting), with a fixed step h and with decreasing steps h_l (docs/math.md §3, [recon]). With
decreasing steps the estimator is the step-weighted average φ̃ = Σ h_l φ(θ_l)/S_L and the
bounds are written with the step sums S_L = Σ_l h_l, Q_L = Σ_l h_l², R_L = Σ_l h_l³ and the
noise sum G_L = Σ_l h_l² E‖ΔV_l‖² as :class:`~bounds.record.Aggregate` symbols: with a
constant step they close to the fixed-step forms, and with h_l = a·l^(−α) their leading
powers give the rate (h_l ∝ l^(−1/(2K+1)) attains the fixed-step MSE rate L^(−2K/(2K+1))).
"""

from __future__ import annotations

from bounds.record import Aggregate, Bound
from bounds.symbols import (
    C_1,
    C_2,
    C_3,
    n_iterations,
    noise_l,
    noise_level,
    noise_sum,
    step_cube_sum,
    step_decay,
    step_index,
    step_l,
    step_scale,
    step_size,
    step_square_sum,
    step_sum,
)

SOURCE = ("Chen, Ding & Carin, On the convergence of SG-MCMC algorithms with high-order "
          "integrators, NIPS 2015 (cited by seeds 001 and 003); docs/math.md §3")
RECON = ("[recon] reconstructed from the cited paper as restated in docs/math.md §3; a hypothesis "
         "the workbench tests")
L, h = n_iterations, step_size

_STEP = (step_l, step_l.name, step_index)
_NOISE = (noise_l, noise_l.name, step_index)
STEP_SUM = Aggregate(step_sum, step_l, (step_index,), L, "step", (_STEP,))
STEP_SQUARE_SUM = Aggregate(step_square_sum, step_l**2, (step_index,), L, "step", (_STEP,))
STEP_CUBE_SUM = Aggregate(step_cube_sum, step_l**3, (step_index,), L, "step", (_STEP,))
NOISE_SUM = Aggregate(noise_sum, step_l**2 * noise_l, (step_index,), L, "step",
                      (_STEP, _NOISE))
#: Σ_l h_l^(K+1) for K = 1, 2.
POWER_SUM = {1: STEP_SQUARE_SUM, 2: STEP_CUBE_SUM}

FIXED_STEP = {step_l: h, noise_l: noise_level}
DECREASING_STEP = {step_l: step_scale * step_index ** (-step_decay), noise_l: noise_level}

ASSUMPTIONS = ("standard SG-MCMC assumptions of the cited paper: smooth, bounded solution of "
               "the Poisson equation; unbiased stochastic gradients with bounded noise")
NAMES = {1: "Euler", 2: "symmetric splitting"}


def _fixed(order: int) -> tuple[Bound, Bound]:
    conditions = (ASSUMPTIONS, "fixed step size h",
                  f"integrator of order K = {order} ({NAMES[order]})")
    return (
        Bound(f"chen2015-bias-fixed-k{order}",
              f"Bias with a fixed step, K = {order} ({NAMES[order]})", "bias", "upper bound",
              C_1 / (L * h) + C_2 * h**order, SOURCE, "recon", conditions, RECON + ".", h, L),
        Bound(f"chen2015-mse-fixed-k{order}",
              f"MSE with a fixed step, K = {order} ({NAMES[order]})", "mse", "upper bound",
              C_1 / (L * h) + C_2 / L + C_3 * h ** (2 * order), SOURCE, "recon", conditions,
              RECON + ".", h, L,
              notes="C₂/L is the unbiased stochastic-gradient noise term."),
    )


def _decreasing(order: int) -> tuple[Bound, Bound]:
    power = POWER_SUM[order]
    conditions = (ASSUMPTIONS, "decreasing steps h_l with S_L = Σ h_l → ∞ and "
                  "Σ h_l^(K+1)/S_L → 0; step-weighted average φ̃ = Σ h_l φ(θ_l)/S_L",
                  f"integrator of order K = {order} ({NAMES[order]})")
    common = {"fixed_step": FIXED_STEP, "decreasing_step": DECREASING_STEP}
    return (
        Bound(f"chen2015-bias-decreasing-k{order}",
              f"Bias with decreasing steps, K = {order} ({NAMES[order]})", "bias",
              "upper bound", C_1 / step_sum + C_2 * power.symbol / step_sum, SOURCE, "recon",
              conditions, RECON + ".", h, L, aggregates=(STEP_SUM, power), **common),
        Bound(f"chen2015-mse-decreasing-k{order}",
              f"MSE with decreasing steps, K = {order} ({NAMES[order]})", "mse",
              "upper bound",
              C_1 * noise_sum / step_sum**2 + C_2 / step_sum + C_3 * power.symbol**2
              / step_sum**2, SOURCE, "recon", conditions,
              RECON + "; seed 003's E₁ and E₂ are this bound for K = 1.", h, L,
              aggregates=(STEP_SUM, NOISE_SUM, power), **common),
    )


BOUNDS = (*_fixed(1), *_fixed(2), *_decreasing(1), *_decreasing(2))
