"""Closed-form exact results for linear-Gaussian targets (math.md §7), as sympy expressions.

Symbols: s2 = posterior variance s², h = step size (Chen convention), V = gradient-noise
variance V_ζ, D = friction, c = h/s², tau = staleness. Numeric values come only from
:func:`evaluate`, which lambdifies each expression once and caches it: no formula here is
written a second time in numpy.
"""

from __future__ import annotations

from functools import cache

import sympy as sp

s2, h, V, D, c = sp.symbols("s2 h V D c", positive=True)
tau = sp.Symbol("tau", integer=True, nonnegative=True)

#: SGLD stationary variance, Chen convention; stable iff 0 < h < 2 s².
SGLD_STATIONARY_VARIANCE = s2 * (1 + h * V / 2) / (1 - h / (2 * s2))

#: SGHMC with the Euler integrator of seed 001 Algorithm 1, unit mass, friction D.
SGHMC_EULER_STATIONARY_VARIANCE = (
    s2 * (2 + h * V / D) * (2 - D * h) / (4 - 2 * D * h - h**2 / s2)
)

#: SGHMC with symmetric splitting (gradient at the half step); x = Dh/2. Exact for the
#: splitting; with V = 0 it differs from s² by O(h²), the mark of a second-order integrator.
_x = D * h / 2
SGHMC_SPLITTING_STATIONARY_VARIANCE = s2 * (_x / sp.sinh(_x)) * (1 + h * V / (2 * D))

#: Stale SGLD, constant staleness τ: 2cG = 1 + c(τ + ½) + c²(2τ² + 2τ + 1)/4 + O(c³),
#: where Var_∞ = q·G(c, τ) and q = 2h + h²V.
STALE_SGLD_2CG_SECOND_ORDER = (1 + c * (tau + sp.Rational(1, 2))
                               + c**2 * (2 * tau**2 + 2 * tau + 1) / 4)

#: Stale SGLD is stable iff 0 < c < 2 sin(π / (2(2τ + 1))).
STALE_SGLD_STABILITY_LIMIT = 2 * sp.sin(sp.pi / (2 * (2 * tau + 1)))

EXPRESSIONS = {
    "sgld_stationary_variance": SGLD_STATIONARY_VARIANCE,
    "sghmc_euler_stationary_variance": SGHMC_EULER_STATIONARY_VARIANCE,
    "sghmc_splitting_stationary_variance": SGHMC_SPLITTING_STATIONARY_VARIANCE,
    "stale_sgld_2cG_second_order": STALE_SGLD_2CG_SECOND_ORDER,
    "stale_sgld_stability_limit": STALE_SGLD_STABILITY_LIMIT,
}


@cache
def _compiled(name: str):
    expression = EXPRESSIONS[name]
    symbols = sorted(expression.free_symbols, key=lambda s: s.name)
    return symbols, sp.lambdify(symbols, expression, modules="numpy")


def evaluate(name: str, **values):
    """Evaluate the named expression; keyword names are the symbol names (broadcasts)."""
    if name not in EXPRESSIONS:
        raise KeyError(f"unknown exact result {name!r}; known: {', '.join(EXPRESSIONS)}")
    symbols, function = _compiled(name)
    missing = [s.name for s in symbols if s.name not in values]
    if missing:
        raise TypeError(f"{name} needs values for {', '.join(missing)}")
    return function(*(values[s.name] for s in symbols))
