"""What a bound implies, worked out symbolically: optimal step size, rate, derivative signs.

:func:`analyse` is what ``workbench bounds show`` prints and the dashboard will display:

- for an upper bound with a step size: the minimising step h* (exact or by dominant balance,
  saying which, via :func:`bounds.symbolic.minimise`), its exponents in the number of
  iterations (and in the staleness, as τ → ∞, where τ appears), and the rate of the optimal
  bound in L as an exponent; sequence forms (seed 003, decreasing steps) are first closed for
  a fixed step; a symbolic integrator order K is also resolved for K = 1 and K = 2;
- for decreasing-step forms: the best decay h_l ∝ l^(−α*) and its rate;
- for an "optimal rate" record: its exponent in L;
- the sign of the partial derivative in each variable, under the symbols' assumptions and
  the record's region (e.g. the stable steps of an exact result).

:func:`report` adds the record's own description and the symbolic relations it takes part in.
"""

from __future__ import annotations

import sympy as sp

from bounds import relations, symbolic
from bounds.record import Bound
from bounds.symbols import integrator_order, staleness, step_decay

ORDERS = (1, 2)


def _optimum(bound: Bound, expression: sp.Expr) -> dict:
    optimum = symbolic.minimise(expression, bound.step_size)
    out = {"method": optimum.method, "detail": optimum.detail}
    if optimum.argmin is None:
        return out
    out["step_size"] = bound.text(optimum.argmin)
    out["step_size_latex"] = bound.latex(optimum.argmin)
    out["bound_at_optimum"] = bound.text(optimum.value)
    if optimum.balanced:
        out["balanced_terms"] = [bound.text(t) for t in optimum.balanced]
    exponents = {}
    for variable in (bound.iterations, staleness):
        if variable is not None and expression.has(variable):
            try:
                exponents[bound.text(variable)] = {
                    "step_size": bound.text(optimum.exponent(variable, "argmin")),
                    "bound": bound.text(optimum.exponent(variable))}
            except symbolic.NotPowerForm as error:
                exponents[bound.text(variable)] = {"error": str(error)}
    out["exponents"] = exponents  # leading exponents as each variable → ∞
    rate = exponents.get(bound.text(bound.iterations), {})
    if "bound" in rate:
        out["rate"] = rate["bound"]
    return out


def _interval(bound: Bound, interval: sp.Set, variable: sp.Symbol) -> str:
    if isinstance(interval, sp.Interval):
        return f"{interval.start} < {bound.text(variable)} < {interval.end}"
    return str(interval)


def _signs(bound: Bound, expression: sp.Expr) -> dict[str, str]:
    if expression.has(sp.Sum):
        return {}
    variables = [v for v in bound.variables
                 if v in expression.free_symbols and v != integrator_order]
    return {bound.text(v): symbolic.derivative_sign(expression, v, dict(bound.region))
            for v in variables}


def analyse(bound: Bound) -> dict:
    """The symbolic consequences of one bound (module docstring), as plain data."""
    out: dict = {}
    expression = bound.expression
    if bound.fixed_step:
        expression = bound.with_fixed_step().expression
        out["fixed_step_form"] = bound.text(expression)
    if bound.relation == "upper bound" and bound.step_size is not None:
        out["optimum"] = _optimum(bound, expression)
        if expression.has(integrator_order):
            out["optimum_by_order"] = {
                f"K = {k}": _optimum(bound, expression.subs(integrator_order, k))
                for k in ORDERS}
    if bound.decreasing_step:
        decreasing = bound.specialise(bound.decreasing_step, "decreasing").expression
        decay = symbolic.optimal_decay(decreasing, bound.iterations, step_decay)
        out["decreasing_steps"] = {
            "schedule": bound.text(next(iter(bound.decreasing_step.values()))),
            "term_exponents": [bound.text(e) for e in decay.exponents],
            "admissible": _interval(bound, decay.admissible, step_decay),
            "best_decay": bound.text(decay.argmin),
            "rate": bound.text(decay.rate),
            "logarithmic": decay.logarithmic,
        }
    if bound.relation == "optimal rate" and bound.iterations is not None:
        out["rate"] = bound.text(symbolic.leading_exponent(bound.expression, bound.iterations))
    out["derivative_signs"] = _signs(bound, expression)
    return out


def report(bound: Bound) -> dict:
    """The record, its analysis and its relations' results, as plain data (JSON-ready)."""
    return {**bound.describe(), "analysis": analyse(bound),
            "relations": [relations.result(r).to_dict()
                          for r in relations.relations_of(bound.name)]}
