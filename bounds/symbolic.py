"""Symbolic operations on bounds: optimal step sizes, rates, limits, derivative signs, orders.

- :func:`minimise` finds the step size minimising a bound: exactly where ∂/∂h = 0 is a
  binomial equation a·h^n = b (sympy ``solve``, unique positive root, positive curvature),
  which gives h* as a power law; otherwise (three or more powers of h, where a closed form is
  a root of a general polynomial or does not exist) by *dominant balance* — as L → ∞ the
  optimum h* → 0, so the most singular decreasing term (1/(Lh)) balances the lowest-order
  increasing term (τ²h² before h^(2K)) — and it says which it used. A bound monotone in h
  has no interior optimum ("boundary").
- :func:`leading_exponent` is the exponent p of the leading power x^p of an expression as
  x → ∞ (or x → 0), read off its structure: sums take the largest (smallest) exponent, so
  MSE* = O(L^(−2/3)) comes out as −2/3 with a symbolic integrator order K ≥ 1. (sympy's own
  ``limit`` gets max(−2/3, −2K/3) wrong for symbolic K, which is why this is structural.)
- :func:`leading_order_sums` replaces Σ_{l≤L} c·l^(−β) by c·L^(1−β)/(1 − β), its leading term
  for β < 1 (integral comparison), returning the conditions β < 1 it relied on.
- :func:`same_order` decides whether two O(·) forms are equivalent as h → 0 and L → ∞ with
  the other variables fixed: every term of one is dominated by a term of the other.
- :func:`derivative_sign` is the sign of a partial derivative under the symbols' assumptions
  (positive step, non-negative integer staleness, ...) and an optional region substitution.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import sympy as sp


class NotPowerForm(ValueError):
    """The expression is not a sum of powers of the variable (no structural answer)."""


# ---------------------------------------------------------------------- comparisons
def _is_nonnegative(value: sp.Expr) -> bool | None:
    value = sp.simplify(value)
    return value.is_nonnegative


def _extreme(values: Sequence[sp.Expr], largest: bool) -> sp.Expr:
    """The largest (smallest) of symbolic values, decided by their assumptions."""
    values = list(dict.fromkeys(sp.simplify(v) for v in values))
    for candidate in values:
        differences = [(candidate - other) if largest else (other - candidate)
                       for other in values]
        if all(_is_nonnegative(d) for d in differences):
            return candidate
    raise NotPowerForm(f"cannot order the exponents {values} under the symbols' assumptions")


# ---------------------------------------------------------------------- exponents
def leading_exponent(expression: sp.Expr, variable: sp.Symbol, towards=sp.oo) -> sp.Expr:
    """p such that expression ≍ variable^p as variable → ``towards`` (∞ or 0)."""
    if towards not in (sp.oo, 0):
        raise ValueError("towards must be sympy.oo or 0")
    expression = sp.sympify(expression)
    if not expression.has(variable):
        return sp.Integer(0)
    if expression == variable:
        return sp.Integer(1)
    if isinstance(expression, sp.Add):
        exponents = [leading_exponent(t, variable, towards) for t in expression.args]
        return _extreme(exponents, largest=towards == sp.oo)
    if isinstance(expression, sp.Mul):
        return sp.Add(*(leading_exponent(f, variable, towards) for f in expression.args))
    if isinstance(expression, sp.Pow) and not expression.exp.has(variable):
        return sp.simplify(expression.exp * leading_exponent(expression.base, variable, towards))
    if isinstance(expression, sp.log) and towards == sp.oo:
        return sp.Integer(0)  # slowly varying
    raise NotPowerForm(f"{expression} is not a sum of powers of {variable}")


def power_terms(expression: sp.Expr, variable: sp.Symbol) -> dict[sp.Expr, sp.Expr]:
    """{exponent: coefficient} of a sum of monomials c·variable^p."""
    terms: dict[sp.Expr, sp.Expr] = {}
    for term in sp.Add.make_args(sp.expand(expression)):
        term = sp.powsimp(sp.expand_power_base(term, force=False))
        coefficient, exponent = term.as_coeff_exponent(variable)
        if coefficient.has(variable):
            raise NotPowerForm(f"term {term} is not a monomial in {variable}")
        exponent = sp.simplify(exponent)
        terms[exponent] = terms.get(exponent, sp.Integer(0)) + coefficient
    return terms


# ---------------------------------------------------------------------- signs
SIGNS = ("zero", "positive", "negative", "non-negative", "non-positive", "undetermined")


def _sign(expression: sp.Expr) -> str | None:
    if expression.is_zero:
        return "zero"
    for attribute, name in (("is_positive", "positive"), ("is_negative", "negative"),
                            ("is_nonnegative", "non-negative"),
                            ("is_nonpositive", "non-positive")):
        if getattr(expression, attribute):
            return name
    return None


def sign_of(expression: sp.Expr) -> str:
    """Sign of an expression for every value its symbols' assumptions allow."""
    sign = _sign(expression)
    if sign is None:
        sign = _sign(sp.factor(sp.together(expression)))
    if sign is None:
        sign = _sign(sp.simplify(expression))
    return sign or "undetermined"


def derivative_sign(expression: sp.Expr, variable: sp.Symbol,
                    region: dict | None = None) -> str:
    """Sign of ∂expression/∂variable for all values allowed by the assumptions.

    ``region`` substitutes a parametrisation of the admissible region (e.g. the stable steps
    h = 2s²u/(1 + u), u > 0) after differentiating.
    """
    derivative = sp.diff(expression, variable)
    if region:
        derivative = derivative.subs(region)
    return sign_of(derivative)


# ---------------------------------------------------------------------- optimisation
@dataclass(frozen=True)
class Optimum:
    """The step size minimising a bound and the bound there.

    method: "exact" (unique positive root of ∂/∂h = 0), "dominant balance" (of ``balanced``
    as L → ∞) or "boundary" (the bound is monotone in h; no interior minimum).
    """

    variable: sp.Symbol
    argmin: sp.Expr | None
    value: sp.Expr | None
    method: str
    detail: str
    balanced: tuple[sp.Expr, ...] = ()

    def exponent(self, variable: sp.Symbol, of: str = "value", towards=sp.oo) -> sp.Expr:
        """Leading exponent of h* (``of="argmin"``) or of the optimal bound in ``variable``."""
        target = self.argmin if of == "argmin" else self.value
        if target is None:
            raise ValueError(f"no interior optimum ({self.detail})")
        return leading_exponent(target, variable, towards)


def _exact_minimiser(expression: sp.Expr, variable: sp.Symbol) -> sp.Expr | None:
    """The unique positive root of ∂/∂h = 0 when the stationarity condition is a binomial
    equation a·h^n = b (closed form with a readable power law); None otherwise."""
    numerator = sp.fraction(sp.together(sp.diff(expression, variable)))[0]
    try:
        if len(power_terms(numerator, variable)) > 2:
            return None
        roots = sp.solve(numerator, variable)
    except (NotPowerForm, NotImplementedError):
        return None
    roots = [r for r in roots if r.is_positive is not False and r.is_real is not False
             and not r.has(sp.I)]
    if len(roots) != 1:
        return None
    curvature = sp.diff(expression, variable, 2).subs(variable, roots[0])
    return roots[0] if sign_of(curvature) in ("positive", "undetermined") else None


def minimise(expression: sp.Expr, variable: sp.Symbol) -> Optimum:
    """Minimise a bound over a step size (module docstring)."""
    slope = sign_of(sp.diff(expression, variable))
    if slope in ("positive", "non-negative", "zero"):
        return Optimum(variable, None, None, "boundary",
                       "the bound does not decrease with the step size: no interior minimum, "
                       "the smallest step is best within the bound")
    if slope in ("negative", "non-positive"):
        return Optimum(variable, None, None, "boundary",
                       "the bound decreases with the step size: no interior minimum within "
                       "the bound (the step is limited by stability instead)")
    argmin = _exact_minimiser(expression, variable)
    if argmin is not None:
        value = sp.simplify(sp.powsimp(expression.subs(variable, argmin)))
        return Optimum(variable, sp.simplify(argmin), value, "exact",
                       f"∂/∂{variable} = 0 is a binomial equation with a unique positive root "
                       "(sympy solve)")
    return _dominant_balance(expression, variable)


def _dominant_balance(expression: sp.Expr, variable: sp.Symbol) -> Optimum:
    terms = power_terms(expression, variable)
    falling = [p for p in terms if p.is_negative]
    rising = [p for p in terms if p.is_positive]
    if not falling or not rising:
        raise NotPowerForm(f"{expression}: needs terms falling and rising in {variable}")
    p = _extreme(falling, largest=False)  # most singular as h → 0
    q = _extreme(rising, largest=False)  # lowest order as h → 0
    a, b = terms[p], terms[q]
    argmin = sp.simplify((-p * a / (q * b)) ** (1 / (q - p)))
    value = sp.simplify(sp.powsimp(expression.subs(variable, argmin)))
    kept = (a * variable**p, b * variable**q)
    return Optimum(variable, argmin, value, "dominant balance",
                   f"∂/∂{variable} = 0 has no closed form with a power law (more than two "
                   f"powers of {variable}); as the number of iterations grows h* → 0, where the "
                   f"term ∝ {variable}^({p}) balances the lowest-order rising term ∝ "
                   f"{variable}^({q}); the other terms are of lower order there",
                   kept)


# ---------------------------------------------------------------------- limits and orders
def limit(expression: sp.Expr, variable: sp.Symbol, value) -> sp.Expr:
    """The limit of an expression (τ → 0, P → 1, T → ∞ ...), simplified."""
    return sp.simplify(sp.limit(expression, variable, value))


def order_terms(expression: sp.Expr, constants: Iterable[sp.Symbol]) -> list[sp.Expr]:
    """Additive terms with hidden constants and numeric factors removed."""
    unit = {c: 1 for c in constants}
    out: list[sp.Expr] = []
    for term in sp.Add.make_args(sp.expand(sp.sympify(expression).xreplace(unit))):
        core = term.as_coeff_Mul()[1]
        if core not in out:
            out.append(core)
    return out


def dominated(term: sp.Expr, by: sp.Expr, small: Sequence[sp.Symbol],
              large: Sequence[sp.Symbol]) -> bool:
    """term = O(by) as the ``small`` variables → 0 and the ``large`` ones → ∞."""
    ratio = sp.simplify(term / by)
    try:
        return (all(_is_nonnegative(leading_exponent(ratio, v, 0)) for v in small)
                and all(_is_nonnegative(-leading_exponent(ratio, v, sp.oo)) for v in large))
    except NotPowerForm:
        return False


def same_order(first: sp.Expr, second: sp.Expr, constants: Iterable[sp.Symbol],
               small: Sequence[sp.Symbol], large: Sequence[sp.Symbol],
               render: Callable[[sp.Expr], str] = str) -> tuple[bool, str]:
    """Whether two O(·) forms are equivalent (module docstring), with the reason."""
    constants = list(constants)
    a, b = order_terms(first, constants), order_terms(second, constants)
    notes = []
    for mine, theirs, label in ((a, b, "first"), (b, a, "second")):
        for term in mine:
            if term in theirs:
                continue
            owner = next((t for t in theirs if dominated(term, t, small, large)), None)
            if owner is None:
                return False, (f"the {label} form's term {render(term)} is not dominated by "
                               "any term of the other")
            notes.append(f"{render(term)} = O({render(owner)})")
    return True, "same terms" + (f" up to {', '.join(notes)}" if notes else "")


def leading_order_sums(expression: sp.Expr) -> tuple[sp.Expr, list[sp.Expr]]:
    """Replace each Σ_{l=1}^{L} c·l^(−β) by c·L^(1−β)/(1 − β); return the conditions
    1 − β > 0 under which these are the leading terms (module docstring)."""
    conditions: list[sp.Expr] = []

    def leading(total: sp.Sum) -> sp.Expr:
        (index, lower, upper), = total.limits
        coefficient, exponent = sp.powsimp(
            sp.expand_power_base(total.function)).as_coeff_exponent(index)
        if coefficient.has(index) or lower != 1:
            raise NotPowerForm(f"{total} is not a power sum from 1")
        growth = sp.simplify(1 + exponent)
        conditions.append(growth)
        return coefficient * upper**growth / growth

    replaced = expression.replace(lambda e: isinstance(e, sp.Sum), leading)
    return replaced, conditions


@dataclass(frozen=True)
class DecayOptimum:
    """Best decay exponent α of steps h_l = a·l^(−α) and the resulting rate in L.

    ``logarithmic``: α* lies on the edge of the admissible range, where one power sum grows
    like log L instead of a power; the rate then holds up to that logarithmic factor.
    """

    decay: sp.Symbol
    argmin: sp.Expr
    rate: sp.Expr
    exponents: tuple[sp.Expr, ...]  # of each term, as functions of α
    admissible: sp.Set  # the α-range where every power sum grows like a power of L
    logarithmic: bool


def optimal_decay(expression: sp.Expr, iterations: sp.Symbol, decay: sp.Symbol
                  ) -> DecayOptimum:
    """Minimise the L-exponent of a decreasing-step bound over α.

    Each term's exponent is linear in α, so the worst exponent is piecewise linear and its
    minimum lies where two exponents cross, or on the edge of the admissible range.
    """
    closed, conditions = leading_order_sums(expression)
    exponents = tuple(dict.fromkeys(sp.simplify(leading_exponent(t, iterations))
                                    for t in sp.Add.make_args(sp.expand(closed))))
    admissible = sp.Interval.open(0, sp.oo)
    for growth in conditions:
        admissible = admissible.intersect(sp.solveset(growth > 0, decay, domain=sp.S.Reals))
    closure = admissible.closure
    candidates: dict[sp.Expr, bool] = {}
    for i, first in enumerate(exponents):
        for second in exponents[i + 1:]:
            roots = sp.solveset(sp.Eq(first, second), decay, domain=closure)
            if isinstance(roots, sp.FiniteSet):  # identical exponents never cross
                candidates.update({root: not admissible.contains(root) for root in roots})
    if not candidates:
        raise NotPowerForm("the terms' exponents do not cross for any admissible α")

    def worst(alpha):
        return max((sp.nsimplify(e.subs(decay, alpha)) for e in exponents), key=float)

    best = min(candidates, key=lambda alpha: float(worst(alpha)))
    return DecayOptimum(decay, best, worst(best), exponents, admissible, candidates[best])
