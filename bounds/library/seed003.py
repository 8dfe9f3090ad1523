"""Seed 003 (Li, Chen, Pu, Henao & Carin, *Communication-efficient SG-MCMC*, AAAI 2019 suppl.).

The MSE bounds of the supplement survived as display formulas and are [seed] (docs/math.md §6):
the standard SG-MCMC bound B₀ = C(E₁ + E₂) with

    E₁ = Σ_l (ε_l²/S_L²) E‖ΔV_l‖² = G_L/S_L²,   E₂ = 1/S_L + (Σ_l ε_l²)²/S_L² = 1/S_L + Q_L²/S_L²,

the downpour bound C₁(E₁ + E₂ + E₃) with E₃ = π²(P − 1)² Q_L²/S_L² (staleness at most
π(P − 1)), and the elastic bounds (α = 1) over P workers' chains. Steps ε_l are in the Chen
convention (seed 003 follows seed 001). The step sums are the aggregates of
:mod:`bounds.library.integrators` over the dim ``step``; the elastic sums run over the dim
``worker`` (the pair sum over ``worker`` and ``worker_1``).
"""

from __future__ import annotations

from bounds.library.integrators import NOISE_SUM, STEP_SQUARE_SUM, STEP_SUM
from bounds.record import Aggregate, Bound
from bounds.symbols import (
    C_1,
    D_5,
    V_2,
    C,
    communication_period,
    n_iterations,
    n_workers,
    noise_l,
    noise_level,
    noise_sum,
    step_l,
    step_size,
    step_square_sum,
    step_sum,
    total_step_sum,
    worker_index,
    worker_noise_sum,
    worker_noise_term,
    worker_pair,
    worker_pair_sum,
    worker_step_square_sum,
    worker_step_square_sum_j,
    worker_step_sum,
)

SOURCE = ("seed 003: Li, Chen, Pu, Henao & Carin, Communication-Efficient Stochastic Gradient "
          "MCMC for Neural Networks, AAAI 2019 (supplement)")
L, h, P = n_iterations, step_size, n_workers
DISPLAY = {step_l: ("ε", r"\epsilon")}

E_1 = noise_sum / step_sum**2
E_2 = 1 / step_sum + step_square_sum**2 / step_sum**2
E_3 = communication_period**2 * (P - 1) ** 2 * step_square_sum**2 / step_sum**2
SEQUENCES = (STEP_SUM, STEP_SQUARE_SUM, NOISE_SUM)
FIXED_STEP = {step_l: h, noise_l: noise_level}

_i, _j = worker_pair
TOTAL_STEP = Aggregate(total_step_sum, worker_step_sum, (worker_index,), P, "worker",
                       ((worker_step_sum, worker_step_sum.name, worker_index),))
WORKER_NOISE = Aggregate(worker_noise_sum, worker_step_sum**2 * worker_noise_term,
                         (worker_index,), P, "worker",
                         ((worker_step_sum, worker_step_sum.name, worker_index),
                          (worker_noise_term, worker_noise_term.name, worker_index)))
PAIRS = Aggregate(worker_pair_sum, (worker_step_square_sum + worker_step_square_sum_j) ** 2,
                  (_i, _j), P, "worker",
                  ((worker_step_square_sum, worker_step_square_sum.name, _i),
                   (worker_step_square_sum_j, worker_step_square_sum.name, _j)))
#: P identical workers, each running L steps of size h with noise level σ².
ELASTIC_FIXED = {worker_step_sum: L * h, worker_step_square_sum: L * h**2,
                 worker_step_square_sum_j: L * h**2, worker_noise_term: noise_level / L}

ASSUMPTIONS = "the assumptions of Chen et al. (2015), Teh et al. (2016), Vollmer et al. (2015)"
ORDER = "first-order (Euler) integrator, K = 1"

BOUNDS = (
    Bound("seed003-standard-b0",
          "Standard SG-MCMC MSE bound B₀ = C(E₁ + E₂)", "mse", "upper bound",
          C * (E_1 + E_2), f"{SOURCE}, §B eq. (1)–(2); docs/math.md §6", "seed",
          (ASSUMPTIONS, ORDER, "step sequence ε_l, S_L = Σ ε_l"),
          "[seed] display formula of the supplement.", h, L, aggregates=SEQUENCES,
          fixed_step=FIXED_STEP, display=DISPLAY),
    Bound("seed003-downpour-mse",
          "Downpour protocol: MSE ≤ C₁(E₁ + E₂ + E₃), staleness at most π(P − 1)", "mse",
          "upper bound", C_1 * (E_1 + E_2 + E_3), f"{SOURCE}, §B2 (downpour); docs/math.md §6",
          "seed",
          (ASSUMPTIONS, ORDER, "P workers pushing every π local steps: staleness "
           "π_l ≤ π(P − 1)"),
          "[seed] display formula of the supplement; with a fixed step E₃ is seed 001's "
          "M²τ²h² at τ = π(P − 1) [derived].", h, L, aggregates=SEQUENCES,
          fixed_step=FIXED_STEP, display=DISPLAY),
    Bound("seed003-elastic-mse",
          "Elastic protocol (α = 1): MSE over P workers' chains", "mse", "upper bound",
          D_5 * (worker_noise_sum / total_step_sum**2 + 1 / total_step_sum
                 + worker_pair_sum / total_step_sum**2),
          f"{SOURCE}, §B2 (elastic); docs/math.md §6", "seed",
          (ASSUMPTIONS, ORDER, "elastic averaging with α = 1; P workers' chains weighted "
           "by S_L^(p)/Σ_q S_L^(q)"),
          "[seed] last display formula of the elastic proof.", h, L,
          aggregates=(WORKER_NOISE, TOTAL_STEP, PAIRS), fixed_step=ELASTIC_FIXED,
          notes="With P identical workers of L steps h this is D₅(σ²/(PL) + 1/(PLh) + 4h²)."),
    Bound("seed003-elastic-variance",
          "Elastic protocol (α = 1): estimation variance over P workers' chains", "variance",
          "upper bound", V_2 * (1 / total_step_sum + worker_pair_sum / total_step_sum**2),
          f"{SOURCE}, §B2 (elastic, variance); docs/math.md §6", "seed",
          (ASSUMPTIONS, ORDER, "elastic averaging with α = 1"),
          "[seed] second display formula of the variance bound.", h, L,
          aggregates=(TOTAL_STEP, PAIRS), fixed_step=ELASTIC_FIXED),
)
