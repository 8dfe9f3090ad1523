"""Exact results for linear-Gaussian targets (docs/math.md §7), as [derived] records.

Model: x_i ~ N(θ, σ_x²), prior N(0, σ₀²), posterior N(μ, s²); a minibatch adds gradient
noise ζ independent of θ with variance V_ζ. Everything is linear with additive noise, so
means and variances propagate exactly. Chen convention (θ ← θ − h∇Ũ + √(2h)ξ) except for the
DSGLD/FSGLD results, which are in the Welling–Teh step ε of seed 002. Each formula is checked
against the stacked-state oracle (:mod:`workbench.oracles.linear_gaussian`) in the tests.
"""

from __future__ import annotations

import sympy as sp

from bounds.record import Bound
from bounds.symbols import (
    between_shard_spread,
    contraction,
    friction,
    gradient_noise_variance,
    initial_error,
    local_steps,
    n_iterations,
    posterior_mean,
    posterior_variance,
    relative_step,
    round_index,
    stability_margin,
    staleness,
    step_index,
    step_size,
    step_size_wt,
    within_shard_noise,
)

SOURCE = "docs/math.md §7 (derived here; checked against the stacked-state oracle)"
s2, h, V, D, c, tau = (posterior_variance, step_size, gradient_noise_variance, friction,
                       relative_step, staleness)
L, a, T, eps = n_iterations, contraction, local_steps, step_size_wt
ell = step_index

MODEL = ("linear-Gaussian target: posterior N(μ, s²) per coordinate; minibatch noise ζ "
         "independent of θ with variance V_ζ")
STABLE_SGLD = "stable step: 0 < h < 2s²"
DERIVED = "[derived] here and checked by simulation (docs/math.md §7)."
#: the stable SGLD steps 0 < h < 2s² as h = 2s²u/(1 + u), u > 0
SGLD_REGION = {h: 2 * s2 * stability_margin / (1 + stability_margin)}

# SGLD from θ₀, staleness 0: a = 1 − h/s², q = 2h + h²V_ζ, V = q/(1 − a²), e₀ = θ₀ − μ.
_sgld = {a: 1 - h / s2}
_q = 2 * h + h**2 * V
_v_stationary = _q / (1 - a**2)
FINITE_BIAS = (initial_error * a * (1 - a**L) / (L * (1 - a))).xreplace(_sgld)
FINITE_VARIANCE = (sp.Sum(_v_stationary * (1 - a ** (2 * ell))
                          * (1 + 2 * a * (1 - a ** (L - ell)) / (1 - a)), (ell, 1, L))
                   / L**2).xreplace(_sgld)
FINITE_SQUARE_MEAN = (sp.Sum((posterior_mean + a**ell * initial_error) ** 2
                             + _v_stationary * (1 - a ** (2 * ell)), (ell, 1, L))
                      / L).xreplace(_sgld)

# DSGLD/FSGLD, T local steps per round, Welling–Teh step ε: a = 1 − ε/(2s²).
_wt = {a: 1 - eps / (2 * s2)}
ROUND_FACTOR = sp.Sum(((1 - a ** (round_index + 1)) ** 2
                       + a ** (2 * (round_index + 1)) * (1 - a**T) / (1 + a**T)) / (1 - a) ** 2,
                      (round_index, 0, T - 1)) / T
FSGLD_VARIANCE = ((eps + eps**2 * within_shard_noise / 4) / (1 - a**2)).xreplace(_wt)
DSGLD_VARIANCE = FSGLD_VARIANCE + (eps**2 / 4 * between_shard_spread * ROUND_FACTOR).xreplace(_wt)

_x = D * h / 2
BOUNDS = (
    Bound("exact-sgld-stationary-variance", "SGLD stationary variance (Chen convention)",
          "stationary_variance", "exact", s2 * (1 + h * V / 2) / (1 - h / (2 * s2)), SOURCE,
          "derived", (MODEL, STABLE_SGLD), DERIVED, region=SGLD_REGION),
    Bound("exact-sghmc-euler-stationary-variance",
          "SGHMC stationary variance, Euler integrator of seed 001 Algorithm 1 (unit mass)",
          "stationary_variance", "exact",
          s2 * (2 + h * V / D) * (2 - D * h) / (4 - 2 * D * h - h**2 / s2), SOURCE, "derived",
          (MODEL, "stable step"), DERIVED),
    Bound("exact-sghmc-splitting-stationary-variance",
          "SGHMC stationary variance, symmetric splitting (gradient at the half step)",
          "stationary_variance", "exact", s2 * (_x / sp.sinh(_x)) * (1 + h * V / (2 * D)),
          SOURCE, "derived", (MODEL, "stable step"), DERIVED,
          notes="With V_ζ = 0 it differs from s² by O(h²): a second-order integrator."),
    Bound("exact-stale-sgld-second-order",
          "Stale SGLD, constant staleness τ: 2cG = 1 + c(τ + ½) + c²(2τ² + 2τ + 1)/4 + O(c³)",
          "normalised_stationary_variance", "expansion",
          1 + c * (tau + sp.Rational(1, 2)) + c**2 * (2 * tau**2 + 2 * tau + 1) / 4, SOURCE,
          "derived", (MODEL, "constant staleness τ", "c = h/s² small (error O(c³))"), DERIVED,
          notes="Var_∞ = q·G(c, τ), q = 2h + h²V_ζ, G the (0, 0) entry of the Lyapunov "
                "solution; the c(τ + ½) term is seed 001's Mτh bias of E θ²."),
    Bound("exact-stale-sgld-stability-limit",
          "Stale SGLD, constant staleness τ: stable iff 0 < c < 2 sin(π/(2(2τ + 1)))",
          "stability_limit", "exact", 2 * sp.sin(sp.pi / (2 * (2 * tau + 1))), SOURCE,
          "derived", (MODEL, "constant staleness τ"), DERIVED),
    Bound("exact-sgld-finite-bias",
          "SGLD from θ₀, L samples: exact bias of φ̂_L for φ = θ", "bias", "exact",
          FINITE_BIAS, SOURCE, "derived", (MODEL, STABLE_SGLD, "staleness 0"), DERIVED,
          region=SGLD_REGION),
    Bound("exact-sgld-finite-variance",
          "SGLD from θ₀, L samples: exact variance of φ̂_L for φ = θ", "variance", "exact",
          FINITE_VARIANCE, SOURCE, "derived", (MODEL, STABLE_SGLD, "staleness 0"), DERIVED,
          region=SGLD_REGION),
    Bound("exact-sgld-finite-square-mean",
          "SGLD from θ₀, L samples: exact E φ̂_L for φ = θ²", "mean", "exact",
          FINITE_SQUARE_MEAN, SOURCE, "derived", (MODEL, STABLE_SGLD, "staleness 0"),
          DERIVED, region=SGLD_REGION),
    Bound("exact-dsgld-round-factor",
          "Round factor Φ(a, T) of DSGLD with T local steps per round", "round_factor",
          "exact", ROUND_FACTOR, SOURCE, "derived",
          ("S equal shards chosen uniformly, T local steps per round", "0 < a < 1"), DERIVED,
          notes="Φ(a, 1) = 1/(1 − a²) and Φ(a, T → ∞) = 1/(1 − a)²: long rounds sit at the "
                "local posteriors."),
    Bound("exact-fsgld-stationary-variance",
          "FSGLD with exact local Gaussian surrogates: stationary variance, any T",
          "stationary_variance", "exact", FSGLD_VARIANCE, SOURCE, "derived",
          (MODEL, "S equal shards chosen uniformly, T local steps per round",
           "Welling–Teh step ε, 0 < ε < 2s²"), DERIVED),
    Bound("exact-dsgld-stationary-variance",
          "DSGLD with T local steps per round: stationary variance", "stationary_variance",
          "exact", DSGLD_VARIANCE, SOURCE, "derived",
          (MODEL, "S equal shards chosen uniformly, T local steps per round",
           "Welling–Teh step ε, 0 < ε < 2s²"), DERIVED),
)
