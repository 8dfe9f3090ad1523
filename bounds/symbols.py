"""The symbols bounds are written in: one sympy symbol per concept, with meaning and assumptions.

A symbol's *name* is the workbench's name for the quantity (``step_size``, ``n_iterations``,
``staleness``), so the keyword that evaluates a bound is the same as the config key and the
xarray dim (the naming convention of docs/architecture.md). Its *display* (``h``, ``L``, ``τ``) is
how the papers write it; a record may override the display where a paper uses another letter (seed
002 writes the number of iterations T). The sympy assumptions (positive, integer, non-negative) are
what the symbolic operations of :mod:`bounds.symbolic` reason with, e.g. ∂MSE/∂τ ≥ 0 because τ ≥ 0.

``samples`` are a few admissible values used to test numeric evaluation against ``evalf``.
"""

from __future__ import annotations

from dataclasses import dataclass

import sympy as sp


@dataclass(frozen=True)
class SymbolInfo:
    symbol: sp.Symbol
    display: str  # plain-text form, e.g. "τ"
    latex: str  # LaTeX form, e.g. r"\tau"
    meaning: str
    samples: tuple[float, ...]
    hidden_constant: bool = False  # a constant an O(·) form hides (fitted by envelope checks)

    @property
    def name(self) -> str:
        return self.symbol.name

    @property
    def assumptions(self) -> str:
        """The sympy assumptions in words, e.g. 'positive integer'."""
        facts = self.symbol.assumptions0
        if facts.get("integer"):
            kind = "integer"
        elif facts.get("real") or facts.get("positive") or facts.get("nonnegative"):
            kind = "real"
        else:
            kind = "complex"
        if facts.get("positive"):
            return f"positive {kind}"
        if facts.get("nonnegative"):
            return f"non-negative {kind}"
        return kind


SYMBOLS: dict[sp.Symbol, SymbolInfo] = {}


def declare(name: str, display: str, latex: str, meaning: str, samples, *,
            hidden_constant: bool = False, **assumptions) -> sp.Symbol:
    symbol = sp.Symbol(name, **assumptions)
    if symbol in SYMBOLS:
        raise ValueError(f"symbol {name!r} declared twice")
    SYMBOLS[symbol] = SymbolInfo(symbol, display, latex, meaning, tuple(samples), hidden_constant)
    return symbol


def constant(name: str, meaning: str = "constant independent of the number of iterations "
                                       "and the step size") -> sp.Symbol:
    """A positive constant hidden by an O(·) statement (C, C₁, D₁, M, ...)."""
    display = name.replace("_", "")
    subscript = name.partition("_")[2]
    latex = f"{name.partition('_')[0]}_{{{subscript}}}" if subscript else name
    return declare(name, display, latex, meaning, (0.5, 1.0, 2.0, 3.0, 0.25),
                   hidden_constant=True, positive=True)


def info(symbol: sp.Symbol) -> SymbolInfo:
    if symbol not in SYMBOLS:
        raise KeyError(f"symbol {symbol} is not declared in bounds.symbols")
    return SYMBOLS[symbol]


# ---------------------------------------------------------------- runs and step sizes (§1)
n_iterations = declare(
    "n_iterations", "L", "L", "number of iterations L, i.e. of samples averaged in φ̂_L",
    (10, 100, 1000, 2000, 50), integer=True, positive=True)
step_size = declare(
    "step_size", "h", "h", "step size h, Chen convention θ ← θ − h∇Ũ(θ) + √(2h)ξ",
    (1e-3, 0.01, 0.05, 0.1, 0.003), positive=True)
step_size_wt = declare(
    "step_size_wt", "ε", r"\epsilon",
    "step size in the Welling–Teh convention θ ← θ + (ε/2)∇log p + N(0, ε) (ε = 2h); seed "
    "002 writes it h", (2e-3, 0.02, 0.1, 0.2, 0.006), positive=True)
staleness = declare(
    "staleness", "τ", r"\tau", "staleness bound τ: every gradient is at most τ updates old",
    (0, 1, 2, 5, 10), integer=True, nonnegative=True)
integrator_order = declare(
    "integrator_order", "K", "K", "integrator order K (1: Euler; 2: symmetric splitting)",
    (1, 2, 1, 2, 3), integer=True, positive=True)
staleness_constant = constant(
    "M", "constant of the staleness terms (Lipschitz constant of the gradient, seed 001 "
         "Assumption 1)")
n_servers = declare(
    "n_servers", "S", "S", "number of servers, i.e. independent chains averaged at test time "
    "(seed 001 §3.3)", (1, 2, 4, 8, 3), integer=True, positive=True)
n_workers = declare(
    "n_workers", "P", "P", "number of workers sending gradients to one server",
    (1, 2, 4, 9, 3), integer=True, positive=True)
communication_period = declare(
    "communication_period", "π", r"\pi", "communication period π: local steps between a "
    "worker's pushes (seed 003)", (1, 2, 5, 10, 3), integer=True, positive=True)
iterations_per_worker = declare(
    "iterations_per_worker", "L_w", "L_w", "iterations per worker, L = P·L_w (seed 001 §4)",
    (10, 100, 1000, 10_000, 50), integer=True, positive=True)
step_decay = declare(
    "step_decay", "α", r"\alpha", "decay exponent of decreasing steps h_l = a·l^(−α)",
    (0.2, 1 / 3, 0.25, 0.4, 0.3), positive=True)
step_scale = declare(
    "step_scale", "a", "a", "scale a of decreasing steps h_l = a·l^(−α)",
    (1e-3, 0.01, 0.05, 0.1, 0.003), positive=True)
noise_level = declare(
    "noise_level", "σ²", r"\sigma^2", "bound on the stochastic-gradient noise E‖ΔV_l‖²",
    (0.5, 1.0, 4.0, 10.0, 2.0), positive=True)

# ---------------------------------------------------------------- per-step sequences (§3, §6)
step_index = sp.Symbol("l", integer=True, positive=True)
step_l = declare(
    "step_size_sequence", "h", "h", "step size h_l of iteration l (Chen convention)",
    (1e-3, 0.01, 0.05, 0.1, 0.003), positive=True)
noise_l = declare(
    "gradient_noise_sequence", "g", "g", "E‖ΔV_l‖²: second moment of the stochastic-gradient "
    "error of the generator at iteration l", (0.5, 1.0, 4.0, 10.0, 2.0), positive=True)

# ---------------------------------------------------------------- shards (seed 002)
shard_index = sp.Symbol("s", integer=True, positive=True)
n_shards = declare("n_shards", "S", "S", "number of shards (devices)", (1, 2, 5, 10, 3),
                   integer=True, positive=True)
batch_size = declare("batch_size", "n", "n", "minibatch size", (1, 10, 50, 100, 5),
                     integer=True, positive=True)
n_data = declare("n_data", "N", "N", "number of data points N", (10, 100, 1000, 20_000, 50),
                 integer=True, positive=True)
gradient_bound = declare(
    "gradient_bound", "γ", r"\gamma", "bound γ ≥ ‖∇log p(x_i|θ)‖ over all data points",
    (0.5, 1.0, 2.0, 5.0, 3.0), positive=True)
shard_size = declare("shard_size", "N", "N", "number N_s of data points on shard s",
                     (10, 200, 500, 1500, 50), integer=True, positive=True)
selection_probability = declare(
    "selection_probability", "f", "f", "probability f_s that shard s is selected",
    (0.1, 0.25, 0.5, 1.0, 0.05), positive=True)
shard_gradient_bound_sq = declare(
    "shard_gradient_bound_sq", "γ²", r"\gamma^2",
    "γ_s²: squared bound on ‖∇log p(x_i|θ)‖ for x_i on shard s (seed 002 Assumption 1)",
    (0.25, 1.0, 4.0, 25.0, 9.0), positive=True)
surrogate_error_sq = declare(
    "surrogate_error_sq", "ε²", r"\epsilon^2",
    "ε_s²: bound on the shard-average of ‖∇log p(x_i|θ) − N_s⁻¹∇log q_s(θ)‖² (seed 002 "
    "Lemma 2)", (1e-4, 0.01, 0.25, 1.0, 2.5e-3), positive=True)

# ---------------------------------------------------------------- workers (seed 003 elastic)
worker_index = sp.Symbol("p", integer=True, positive=True)
worker_pair = (sp.Symbol("i", integer=True, positive=True),
               sp.Symbol("j", integer=True, positive=True))
worker_step_sum = declare(
    "worker_step_sum", "S", "S", "S_L^(p) = Σ_l ε_l^(p): total step of worker p's chain",
    (0.5, 1.0, 10.0, 100.0, 3.0), positive=True)
worker_step_square_sum = declare(
    "worker_step_square_sum", "Q", "Q", "Q^(p) = Σ_l (ε_l^(p))²: sum of squared steps of "
    "worker p", (1e-3, 0.01, 0.1, 1.0, 0.05), positive=True)
worker_step_square_sum_j = declare(
    "worker_step_square_sum_j", "Q", "Q", "Q^(j): the second factor of a pair sum over "
    "workers (same values as worker_step_square_sum)", (1e-3, 0.01, 0.1, 1.0, 0.05),
    positive=True)
worker_noise_term = declare(
    "worker_noise_term", "E", "E", "E₁^(p): the gradient-noise term E₁ of worker p's chain",
    (1e-3, 0.01, 0.1, 1.0, 0.05), positive=True)

# ---------------------------------------------------------------- exact Gaussian results (§7)
posterior_variance = declare("posterior_variance", "s²", "s^2", "posterior variance s²",
                             (2e-3, 0.5, 1.0, 2.0, 0.1), positive=True)
gradient_noise_variance = declare(
    "gradient_noise_variance", "V_ζ", r"V_\zeta",
    "variance V_ζ of the stochastic-gradient noise ζ (independent of θ on this model)",
    (0.0, 0.5, 3.0, 1e5, 10.0), nonnegative=True)
friction = declare("friction", "D", "D", "SGHMC friction D (unit mass)",
                   (0.5, 1.0, 2.0, 10.0, 5.0), positive=True)
relative_step = declare("relative_step", "c", "c", "c = h/s²: step size in posterior units",
                        (0.005, 0.01, 0.02, 0.1, 0.05), positive=True)
posterior_mean = declare("posterior_mean", "μ", r"\mu", "posterior mean μ",
                         (0.0, 0.3, -1.0, 2.0, 0.05), real=True)
initial_error = declare("initial_error", "e₀", "e_0", "e₀ = θ₀ − μ: initial distance from the "
                        "posterior mean", (-1.0, 0.5, 1.0, 2.0, 0.1), real=True)
contraction = declare("contraction", "a", "a", "a = 1 − h/s² (SGLD) or 1 − ε/(2s²) (DSGLD): "
                      "the per-step contraction, 0 < a < 1", (0.1, 0.5, 0.9, 0.99, 0.3),
                      positive=True)
local_steps = declare("local_steps", "T", "T", "local updates per round on one shard",
                      (1, 2, 10, 100, 5), integer=True, positive=True)
within_shard_noise = declare(
    "within_shard_noise", "V_w", "V_w", "V_w = N²·mean_s(S_s²)/n: minibatch-noise variance "
    "within shards", (0.0, 1.0, 10.0, 1e3, 5.0), nonnegative=True)
between_shard_spread = declare(
    "between_shard_spread", "V_b", "V_b", "V_b = N²·Var_s(x̄_s): spread of the shard means",
    (0.0, 1.0, 10.0, 1e3, 5.0), nonnegative=True)
stability_margin = declare(
    "stability_margin", "u", "u", "u > 0 parametrises the stable steps h = 2s²u/(1 + u) < 2s²",
    (0.1, 0.5, 1.0, 5.0, 0.01), positive=True)
round_index = sp.Symbol("r", integer=True, nonnegative=True)

# ---------------------------------------------------------------- sums (aggregates)
step_sum = declare("step_sum", "S_L", "S_L", "S_L = Σ_l h_l: the total step (time) of L steps",
                   (0.1, 1.0, 10.0, 100.0, 3.0), positive=True)
step_square_sum = declare("step_square_sum", "Q_L", "Q_L", "Q_L = Σ_l h_l²",
                          (1e-4, 1e-3, 0.01, 0.1, 0.05), positive=True)
step_cube_sum = declare("step_cube_sum", "R_L", "R_L", "R_L = Σ_l h_l³",
                        (1e-6, 1e-5, 1e-3, 0.01, 0.005), positive=True)
noise_sum = declare("noise_sum", "G_L", "G_L", "G_L = Σ_l h_l² E‖ΔV_l‖²: step-weighted "
                    "stochastic-gradient noise", (1e-4, 1e-3, 0.01, 0.1, 0.05), positive=True)
shard_gradient_sum = declare(
    "shard_gradient_sum", "Γ²", r"\Gamma^2", "Γ² = Σ_s N_s²γ_s²/f_s: heterogeneity-weighted "
    "gradient bound (seed 002 Theorem 1)", (10.0, 1e3, 1e5, 1e7, 50.0), positive=True)
shard_surrogate_sum = declare(
    "shard_surrogate_sum", "E²", r"\mathcal{E}^2", "E² = Σ_s (N_s²/f_s)ε_s²: surrogate-"
    "weighted gradient error (seed 002 Theorem 2)", (1.0, 10.0, 1e3, 1e5, 5.0), positive=True)
total_step_sum = declare(
    "total_step_sum", "ΣS", r"\Sigma_S", "Σ_p S_L^(p): total step over all workers",
    (1.0, 10.0, 100.0, 1e3, 30.0), positive=True)
worker_noise_sum = declare(
    "worker_noise_sum", "A", r"\mathcal{A}", "Σ_p (S_L^(p))² E₁^(p): step-weighted noise of "
    "the workers' chains", (1e-3, 0.1, 1.0, 10.0, 0.5), positive=True)
worker_pair_sum = declare(
    "worker_pair_sum", "B", r"\mathcal{B}", "Σ_{i,j} (Q^(i) + Q^(j))² over pairs of workers",
    (1e-4, 1e-2, 1.0, 10.0, 0.5), positive=True)

# ---------------------------------------------------------------- hidden constants
C, C_1, C_2, C_3 = (constant(n) for n in ("C", "C_1", "C_2", "C_3"))
D_1, D_2, D_3, D_5 = (constant(n) for n in ("D_1", "D_2", "D_3", "D_5"))
V_2 = constant("V_2")
