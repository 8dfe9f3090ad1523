"""Relations between registered bounds, checked symbolically: limits and special cases.

Each relation states a claim — "Theorem 3 at τ = 0 is the synchronous MSE bound", "downpour
with P = 1 is B₀" — and :func:`check` decides it with sympy: ``equal`` means the expressions
agree identically after the stated substitutions (constants renamed where the statements use
different letters); ``same order`` means equivalent O(·) forms as h → 0 and L → ∞ with the
other variables fixed (:func:`bounds.symbolic.same_order`); ``series`` means the expressions
agree to the stated order of a series. A relation that fails is a finding, not an error:
``seed002-theorem-1-reduces-to-remark-2`` fails because Theorem 1 as printed has no 1/(hT)
term, which its special case has.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import sympy as sp

from bounds import symbolic
from bounds.record import text
from bounds.registry import get
from bounds.symbols import (
    C,
    between_shard_spread,
    communication_period,
    contraction,
    gradient_bound,
    gradient_noise_variance,
    info,
    integrator_order,
    local_steps,
    n_data,
    n_iterations,
    n_workers,
    posterior_variance,
    relative_step,
    staleness,
    step_size,
    step_size_wt,
)


@dataclass(frozen=True)
class RelationResult:
    name: str
    claim: str
    bounds: tuple[str, ...]
    holds: bool
    detail: str

    def to_dict(self) -> dict:
        return {"name": self.name, "claim": self.claim, "bounds": list(self.bounds),
                "holds": self.holds, "detail": self.detail}


@dataclass(frozen=True)
class Relation:
    name: str
    claim: str
    bounds: tuple[str, ...]
    decide: Callable[[], tuple[bool, str]]

    def check(self) -> RelationResult:
        holds, detail = self.decide()
        return RelationResult(self.name, self.claim, self.bounds, holds, detail)


def _equal(first: sp.Expr, second: sp.Expr) -> tuple[bool, str]:
    difference = sp.simplify(first - second)
    if difference == 0:
        return True, "identical after the substitutions"
    return False, f"they differ by {text(difference)}"


def _same_order(first: sp.Expr, second: sp.Expr, small=(step_size,),
                large=(n_iterations,), display: dict | None = None) -> tuple[bool, str]:
    constants = [s for s in (first.free_symbols | second.free_symbols)
                 if info(s).hidden_constant]
    return symbolic.same_order(first, second, constants, small, large,
                               render=lambda e: text(e, display))


def _at(name: str, **values) -> sp.Expr:
    return get(name).substitute(**values)


def _fixed(name: str) -> sp.Expr:
    return get(name).with_fixed_step().expression


def _synchronous_limit(quantity: str, order: int) -> Relation:
    theorem = {"bias": "seed001-theorem-2-bias", "mse": "seed001-theorem-3-mse"}[quantity]
    target = f"chen2015-{quantity}-fixed-k{order}"
    return Relation(
        f"{theorem}-at-zero-staleness-k{order}",
        f"τ → 0 recovers the synchronous {quantity} bound (K = {order})", (theorem, target),
        lambda: _same_order(
            symbolic.limit(get(theorem).expression.subs(integrator_order, order), staleness, 0),
            get(target).expression))


def _second_order_agreement() -> tuple[bool, str]:
    """2c·Var_∞/q of SGLD (τ = 0) has the series 1 + c/2 + c²/4 + O(c³)."""
    s2, h, v, c = posterior_variance, step_size, gradient_noise_variance, relative_step
    exact = get("exact-sgld-stationary-variance").expression
    normalised = sp.simplify((2 * (h / s2) * exact / (2 * h + h**2 * v)).subs(h, c * s2))
    series = sp.series(normalised, c, 0, 3).removeO()
    expansion = get("exact-stale-sgld-second-order").substitute(staleness=0)
    return _equal(sp.expand(series), sp.expand(expansion))


def _round_factor_limits() -> tuple[bool, str]:
    phi = get("exact-dsgld-round-factor").expression.doit()
    a, t = contraction, local_steps
    rate = sp.Symbol("b", positive=True)  # a = e^(−b) with b > 0 keeps 0 < a < 1
    one = sp.simplify(sp.piecewise_fold(phi.subs(t, 1)).subs(sp.Eq(a, 1), False))
    long = sp.simplify(sp.limit(phi.subs(a, sp.exp(-rate)), t, sp.oo).subs(rate, -sp.log(a)))
    ok_one, _ = _equal(one, 1 / (1 - a**2))
    ok_long, _ = _equal(long, 1 / (1 - a) ** 2)
    return ok_one and ok_long, f"Φ(a, 1) = {text(one)}; Φ(a, T → ∞) = {text(long)}"


RELATIONS: tuple[Relation, ...] = (
    _synchronous_limit("bias", 1), _synchronous_limit("bias", 2),
    _synchronous_limit("mse", 1), _synchronous_limit("mse", 2),
    Relation("seed001-theorem-6-one-server", "Theorem 6 with S = 1 is Theorem 3",
             ("seed001-theorem-6-mse", "seed001-theorem-3-mse"),
             lambda: _equal(_at("seed001-theorem-6-mse", n_servers=1),
                            get("seed001-theorem-3-mse").expression)),
    Relation("seed001-theorem-7-one-server", "Theorem 7 with S = 1 is Theorem 4",
             ("seed001-theorem-7-variance", "seed001-theorem-4-variance"),
             lambda: _equal(_at("seed001-theorem-7-variance", n_servers=1),
                            get("seed001-theorem-4-variance").expression)),
    Relation("seed001-section-4-mse-is-theorem-3", "the Section 4 MSE is Theorem 3 with K = 1",
             ("seed001-section-4-mse", "seed001-theorem-3-mse"),
             lambda: _same_order(get("seed001-section-4-mse").expression,
                                 _at("seed001-theorem-3-mse", integrator_order=1))),
    Relation("seed001-section-4-bias-is-theorem-2", "the Section 4 bias is Theorem 2 with K = 1",
             ("seed001-section-4-bias", "seed001-theorem-2-bias"),
             lambda: _same_order(get("seed001-section-4-bias").expression,
                                 _at("seed001-theorem-2-bias", integrator_order=1))),
    Relation("seed001-section-4-mse-optimum", "minimising the Section 4 MSE over h gives E*",
             ("seed001-section-4-mse", "seed001-section-4-mse-optimum"),
             lambda: _equal(symbolic.minimise(get("seed001-section-4-mse").expression,
                                              step_size).value,
                            get("seed001-section-4-mse-optimum").expression)),
    Relation("seed001-section-4-bias-optimum", "minimising the Section 4 bias over h gives B*",
             ("seed001-section-4-bias", "seed001-section-4-bias-optimum"),
             lambda: _equal(symbolic.minimise(get("seed001-section-4-bias").expression,
                                              step_size).value,
                            get("seed001-section-4-bias-optimum").expression)),
    Relation("seed001-corollary-5-from-theorem-4",
             "minimising Theorem 4 over h gives Corollary 5's rate L^(−2K/(2K+1))",
             ("seed001-theorem-4-variance", "seed001-corollary-5-variance"),
             lambda: _equal(
                 symbolic.minimise(get("seed001-theorem-4-variance").expression, step_size)
                 .exponent(n_iterations),
                 symbolic.leading_exponent(get("seed001-corollary-5-variance").expression,
                                           n_iterations))),
    Relation("seed001-section-4-one-worker", "the P-worker variance with P = 1 is Theorem 4",
             ("seed001-section-4-variance-workers", "seed001-theorem-4-variance"),
             lambda: _equal(_at("seed001-section-4-variance-workers", n_workers=1,
                                iterations_per_worker=n_iterations),
                            get("seed001-theorem-4-variance").expression)),
    *(Relation(f"chen2015-{q}-decreasing-k{k}-with-a-fixed-step",
               f"decreasing-step {q} bound with h_l = h is the fixed-step bound (K = {k})",
               (f"chen2015-{q}-decreasing-k{k}", f"chen2015-{q}-fixed-k{k}"),
               lambda q=q, k=k: _same_order(_fixed(f"chen2015-{q}-decreasing-k{k}"),
                                            get(f"chen2015-{q}-fixed-k{k}").expression))
      for q in ("bias", "mse") for k in (1, 2)),
    Relation("seed003-downpour-one-worker", "downpour with P = 1 is the standard bound B₀",
             ("seed003-downpour-mse", "seed003-standard-b0"),
             lambda: _equal(_at("seed003-downpour-mse", n_workers=1, C_1=C),
                            get("seed003-standard-b0").expression)),
    Relation("seed003-b0-is-chen2015", "B₀ with a fixed step is the K = 1 fixed-step MSE bound",
             ("seed003-standard-b0", "chen2015-mse-fixed-k1"),
             lambda: _same_order(_fixed("seed003-standard-b0"),
                                 get("chen2015-mse-fixed-k1").expression)),
    Relation("seed003-downpour-is-theorem-3",
             "downpour with a fixed step is Theorem 3 (K = 1) at τ = π(P − 1)",
             ("seed003-downpour-mse", "seed001-theorem-3-mse"),
             lambda: _same_order(_fixed("seed003-downpour-mse"), _at(
                 "seed001-theorem-3-mse", integrator_order=1,
                 staleness=communication_period * (n_workers - 1)))),
    Relation("seed002-theorem-1-reduces-to-remark-2",
             "Theorem 1 with one shard (f = 1, N_1 = N, γ_1 = γ) is Remark 2 (as the seed says)",
             ("seed002-theorem-1-dsgld", "seed002-remark-2-sgld"),
             lambda: _same_order(
                 _at("seed002-theorem-1-dsgld", shard_gradient_sum=n_data**2 * gradient_bound**2),
                 get("seed002-remark-2-sgld").expression, small=(step_size_wt,),
                 large=(n_iterations,), display=get("seed002-remark-2-sgld").display)),
    Relation("exact-stale-expansion-at-zero-staleness",
             "the stale expansion at τ = 0 is the series of the SGLD stationary variance",
             ("exact-stale-sgld-second-order", "exact-sgld-stationary-variance"),
             _second_order_agreement),
    Relation("exact-round-factor-limits", "Φ(a, 1) = 1/(1 − a²) and Φ(a, ∞) = 1/(1 − a)²",
             ("exact-dsgld-round-factor",), _round_factor_limits),
    Relation("exact-fsgld-is-dsgld-without-spread",
             "DSGLD with identical shards (V_b = 0) has the FSGLD variance",
             ("exact-dsgld-stationary-variance", "exact-fsgld-stationary-variance"),
             lambda: _equal(get("exact-dsgld-stationary-variance").expression.subs(
                 between_shard_spread, 0), get("exact-fsgld-stationary-variance").expression)),
)

_RESULTS: dict[str, RelationResult] = {}


def result(relation: Relation) -> RelationResult:
    """The relation's result, decided once per process."""
    if relation.name not in _RESULTS:
        _RESULTS[relation.name] = relation.check()
    return _RESULTS[relation.name]


def relations_of(name: str) -> list[Relation]:
    return [r for r in RELATIONS if name in r.bounds]


def check_all() -> list[RelationResult]:
    return [result(r) for r in RELATIONS]
