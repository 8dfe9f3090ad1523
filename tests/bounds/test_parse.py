"""User bound strings: parsed through a whitelist, never evaluated, and handled like a
registered bound (analysis, LaTeX, evaluation)."""

import pytest
import sympy as sp

from bounds import registry
from bounds.analysis import analyse
from bounds.parse import BoundSyntaxError, parse_expression, user_bound
from bounds.symbols import C_1, n_iterations, staleness, step_size


def test_a_theorem_3_shaped_bound_is_analysed_like_a_registered_one():
    bound = user_bound("C1/(L*h) + C2*tau**2*h**2 + C3*h^2", name="mine")
    assert bound.is_hypothesis and bound.provenance == "user"
    assert bound.step_size == step_size and bound.iterations == n_iterations
    assert {s.name for s in bound.constants} == {"C_1", "C_2", "C_3"}
    optimum = analyse(bound)["optimum"]
    # h* ∝ τ^(-2/3) L^(-1/3) and the optimal bound falls like L^(-2/3) (seed 001 §4)
    assert optimum["exponents"]["L"] == {"step_size": "-1/3", "bound": "-2/3"}
    assert optimum["exponents"]["τ"]["step_size"] == "-2/3"
    assert r"\tau^{2}" in bound.latex()
    value = bound.evaluate(n_iterations=100, step_size=0.1, staleness=2, C_1=1.0, C_2=2.0,
                           C_3=3.0)
    assert float(value) == pytest.approx(1 / 10 + 2 * 4 * 0.01 + 3 * 0.01)


def test_a_caret_is_a_power_with_its_precedence():
    assert parse_expression("C3*h^2 + L") == parse_expression("C3*h**2 + L")


def test_names_resolve_to_the_declared_symbols():
    expression = parse_expression("C_1 / (n_iterations * step_size) + staleness")
    assert expression == C_1 / (n_iterations * step_size) + staleness


def test_the_registered_theorem_3_and_its_user_spelling_have_the_same_rate():
    registered = analyse(registry.get("seed001-theorem-3-mse"))["optimum"]["rate"]
    mine = analyse(user_bound("C1/(L*h) + C2*tau**2*h**2 + C3*h**2"))["optimum"]["rate"]
    assert registered == mine == "-2/3"


def test_user_symbols_carry_their_assumptions():
    expression = parse_expression("C/n_chains + h", {"n_chains": "positive integer"})
    chains = next(s for s in expression.free_symbols if s.name == "n_chains")
    assert chains.is_integer and chains.is_positive
    with pytest.raises(BoundSyntaxError, match="already declared"):
        parse_expression("n_chains", {"n_chains": "real"})
    with pytest.raises(BoundSyntaxError, match="assumption"):
        parse_expression("y", {"y": "imaginary"})


@pytest.mark.parametrize("text, message", [
    ("__import__('os').system('true')", "not allowed|only the functions"),
    ("h.real", "not allowed"),
    ("h[0]", "not allowed"),
    ("(lambda: 1)()", "not allowed|only the functions"),
    ("[h for h in L]", "not allowed"),
    ("open('x')", "only the functions"),
    ("sqrt(x=h)", "positional"),
    ("'text'", "only numbers"),
    ("True", "only numbers"),
    ("h and L", "not allowed"),
    ("h < L", "not allowed"),
    ("h @ L", "operator"),
    ("h % L", "operator"),
    ("10**10**10", "exponents"),
    ("h**1000", "exponents"),
    ("(10**100)**100**1", "beyond"),
    ("1/0", "division by zero"),
    ("unknown_name * h", "unknown name"),
    ("h +", "not an expression"),
    ("", "non-empty"),
    ("h" + "+h" * 600, "at most"),
])
def test_anything_outside_the_whitelist_is_refused_with_its_piece(text, message):
    with pytest.raises(BoundSyntaxError, match=message):
        parse_expression(text)


def test_a_refusal_names_the_column_of_the_offending_piece():
    with pytest.raises(BoundSyntaxError, match=r"column 7: 'os\.name'"):
        parse_expression("h + L*os.name")


def test_nothing_is_evaluated(monkeypatch):
    """The parser never calls eval/exec or sympify on the string."""
    import builtins

    def forbidden(*args, **kwargs):
        raise AssertionError("evaluated")

    monkeypatch.setattr(builtins, "eval", forbidden)
    monkeypatch.setattr(builtins, "exec", forbidden)
    monkeypatch.setattr(sp, "sympify", forbidden)
    assert parse_expression("sqrt(C/(L*h)) + max(h, tau*h)").free_symbols


def test_registered_bounds_are_referenced_by_name():
    assert user_bound("registered:seed001-theorem-3-mse") is registry.get(
        "seed001-theorem-3-mse")
    with pytest.raises(BoundSyntaxError, match="unknown bound"):
        user_bound("registered:no-such-bound")


@pytest.mark.parametrize("text, expected", [("C1/(L*h) + C2*tau**2*h**2 + C3*h**2", "holds"),
                                             ("C1/(L*h)", "violated")])
def test_user_bounds_go_through_the_envelope_check(text, expected):
    """A user bound is fitted and checked like a registered one. Measurements follow
    1/(L h) + 5 τ² h² + h² with 1 % errors; constants fitted on the small steps. The right
    form holds on the large steps; a bound without the h terms (the negative control) cannot
    follow the growth and is violated."""
    import xarray as xr

    from bounds.envelope import envelope_check, fit_envelope

    h = xr.DataArray([0.01, 0.02, 0.04, 0.08, 0.16, 0.32], dims="step_size")
    tau = xr.DataArray([1, 2, 4], dims="staleness")
    values = {"step_size": h, "staleness": tau, "n_iterations": 1000}
    observed = 1 / (1000 * h) + 5 * tau**2 * h**2 + h**2
    calibration = (h <= 0.04).broadcast_like(observed)
    bound = user_bound(text)
    envelope = fit_envelope(bound, values, observed, calibration)
    verdict = envelope_check("user-envelope", envelope, values, observed, 0.01 * observed,
                             z=3.0, held_out=~calibration)
    assert verdict.verdict == expected, verdict
