"""Seed 001 (Chen, Ding, Li, Zhang & Carin, *SG-MCMC with Stale Gradients*, NIPS 2016).

The seed text lost the inline symbols of Theorems 2–7, so their forms are [recon] (docs/math.md
§2): reconstructed from the prose and the rates the paper derives from them, and shown as
hypotheses under test. What the text does state is kept [seed] in the provenance notes: the
bias and MSE depend on the staleness, the variance does not, and the variance speeds up
linearly in the number of workers. The Section 4 forms are [derived] from Theorems 2–3 with
K = 1 and match the paper's prose. Every hidden constant is its own symbol (C₁, C₂, C₃, M,
D₁ ...), so envelope checks can fit one non-negative coefficient per term.
"""

from __future__ import annotations

import sympy as sp

from bounds.record import Bound
from bounds.symbols import (
    C_1,
    C_2,
    C_3,
    D_1,
    D_2,
    D_3,
    C,
    integrator_order,
    iterations_per_worker,
    n_iterations,
    n_servers,
    n_workers,
    staleness,
    staleness_constant,
    step_size,
)

SOURCE = ("seed 001: Chen, Ding, Li, Zhang & Carin, Stochastic Gradient MCMC with Stale "
          "Gradients, NIPS 2016")
L, h, tau, K, M = n_iterations, step_size, staleness, integrator_order, staleness_constant
S, P = n_servers, n_workers

ASSUMPTIONS = ("Assumptions 1–4 of seed 001: unbiased stochastic gradients with bounded "
               "variance, Lipschitz gradient (constant M), (hypo)elliptic diffusion, smooth "
               "and bounded solution of the Poisson equation")
STALENESS = "bounded staleness: every update l uses a gradient with τ_l ≤ τ"
FIXED = "fixed step size h for all L iterations"
ORDER = "a K-th order integrator (Euler K = 1, symmetric splitting K = 2)"
RECON = ("[recon] the symbols of the statement were lost in the seed text; this form is "
         "reconstructed from the prose and the derived rates (docs/math.md §2)")
CONDITIONS = (ASSUMPTIONS, STALENESS, FIXED, ORDER)

BIAS = C_1 / (L * h) + C_2 * M * tau * h + C_3 * h**K
MSE = C_1 / (L * h) + C_2 * M**2 * tau**2 * h**2 + C_3 * h ** (2 * K)
VARIANCE = C_1 / (L * h) + C_2 * h ** (2 * K)

BOUNDS = (
    Bound("seed001-theorem-2-bias",
          "Theorem 2: bias of stale SG-MCMC, K-th order integrator", "bias", "upper bound",
          BIAS, f"{SOURCE}, Theorem 2; docs/math.md §2", "recon", CONDITIONS,
          RECON + "; [seed] the bias depends on τ.", h, L),
    Bound("seed001-theorem-3-mse",
          "Theorem 3: MSE of stale SG-MCMC, K-th order integrator", "mse", "upper bound",
          MSE, f"{SOURCE}, Theorem 3; docs/math.md §2", "recon", CONDITIONS,
          RECON + "; [seed] the MSE depends on τ.", h, L,
          notes="The unbiased-noise term O(1/L) of the synchronous bound (docs/math.md §3) is "
                "dominated by 1/(Lh) for h ≤ 1 and is not written."),
    Bound("seed001-theorem-4-variance",
          "Theorem 4: estimation variance of stale SG-MCMC — independent of τ", "variance",
          "upper bound", VARIANCE, f"{SOURCE}, Theorem 4; docs/math.md §2", "recon", CONDITIONS,
          RECON + "; [seed] the variance bound does not depend on the staleness.", h, L),
    Bound("seed001-corollary-5-variance",
          "Corollary 5: optimal variance rate, h ∝ L^(−1/(2K+1))", "variance", "optimal rate",
          C * L ** (-2 * K / (2 * K + 1)), f"{SOURCE}, Corollary 5; docs/math.md §2", "recon",
          CONDITIONS, RECON + ".", None, L),
    Bound("seed001-theorem-6-bias",
          "Theorem 6: bias of S parallel stale chains averaged at test time", "bias",
          "upper bound", BIAS, f"{SOURCE}, Theorem 6, §3.3; docs/math.md §2", "recon",
          (*CONDITIONS, "S chains with the same L and h, averaged with equal weights"),
          RECON + "; [seed] more chains do not reduce the bias bound.", h, L,
          notes="S does not appear: averaging independent chains leaves the bias unchanged."),
    Bound("seed001-theorem-6-mse",
          "Theorem 6: MSE of S parallel stale chains averaged at test time", "mse",
          "upper bound", C_1 / (S * L * h) + C_2 * M**2 * tau**2 * h**2 + C_3 * h ** (2 * K),
          f"{SOURCE}, Theorem 6, §3.3; docs/math.md §2", "recon",
          (*CONDITIONS, "S chains with the same L and h, averaged with equal weights"),
          RECON + "; [seed] only the first term falls with S.", h, L),
    Bound("seed001-theorem-7-variance",
          "Theorem 7: variance of S parallel stale chains — divided by S", "variance",
          "upper bound", (C_1 / (L * h) + C_2 * h ** (2 * K)) / S,
          f"{SOURCE}, Theorem 7, §3.3; docs/math.md §2", "recon",
          (*CONDITIONS, "S chains with the same L and h, averaged with equal weights"),
          RECON + "; [seed] linear speed-up of the variance in S.", h, L),
    Bound("seed001-section-4-bias",
          "Section 4: single-server bias as a function of h (K = 1)", "bias", "upper bound",
          C_1 / (L * h) + (C_2 * tau + C_3) * h, f"{SOURCE}, §4; docs/math.md §2", "derived",
          (ASSUMPTIONS, STALENESS, FIXED, "Euler integrator, K = 1"),
          "[derived] from Theorem 2 with K = 1; matches the seed's prose.", h, L),
    Bound("seed001-section-4-mse",
          "Section 4: single-server MSE as a function of h (K = 1)", "mse", "upper bound",
          D_1 / (L * h) + (D_2 * tau**2 + D_3) * h**2, f"{SOURCE}, §4; docs/math.md §2", "derived",
          (ASSUMPTIONS, STALENESS, FIXED, "Euler integrator, K = 1"),
          "[derived] from Theorem 3 with K = 1; matches the seed's prose.", h, L),
    Bound("seed001-section-4-bias-optimum",
          "Section 4: optimal bias B* = O((τ/L)^(1/2)) at h* = √(C₁/((C₂τ + C₃)L))", "bias",
          "optimal rate", 2 * sp.sqrt(C_1 * (C_2 * tau + C_3) / L),
          f"{SOURCE}, §4; docs/math.md §2", "derived",
          (ASSUMPTIONS, STALENESS, "Euler integrator, K = 1", "the optimal fixed step h*"),
          "[derived] minimum over h of the Section 4 bias; with τ ≈ P and L ∝ P in fixed "
          "wall-clock time, τ/L does not change with P: no gain in the optimal bias [seed].",
          None, L),
    Bound("seed001-section-4-mse-optimum",
          "Section 4: optimal MSE E* = O((τ/L)^(2/3)) at h* = (D₁/(2(D₂τ² + D₃)L))^(1/3)",
          "mse", "optimal rate",
          3 * sp.Rational(1, 2) ** sp.Rational(2, 3) * D_1 ** sp.Rational(2, 3)
          * (D_2 * tau**2 + D_3) ** sp.Rational(1, 3) * L ** sp.Rational(-2, 3),
          f"{SOURCE}, §4 and §5.1; docs/math.md §2", "derived",
          (ASSUMPTIONS, STALENESS, "Euler integrator, K = 1", "the optimal fixed step h*"),
          "[derived] minimum over h of the Section 4 MSE; the §5.1 experiment sets "
          "L = L0·τ so that this is the same for every τ [seed].", None, L),
    Bound("seed001-section-4-variance-workers",
          "Section 4: variance with P workers vs iterations per worker — linear speed-up",
          "variance", "upper bound",
          C_1 / (P * iterations_per_worker * h) + C_2 * h ** (2 * K),
          f"{SOURCE}, §4 and §5.1 (Figure 2); docs/math.md §2", "recon",
          (*CONDITIONS, "one server, P workers, L = P·L_w iterations in total"),
          RECON + " (Theorem 4 with L = P·L_w); [seed] the variance at fixed h falls like "
          "1/P in iterations per worker: the iteration speed-up is linear in P.",
          h, iterations_per_worker),
)
