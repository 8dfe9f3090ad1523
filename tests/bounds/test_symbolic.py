"""Symbolic operations on the registered bounds: optimal steps, rates, limits, signs, orders."""

import numpy as np
import pytest
import sympy as sp
from scipy.optimize import minimize_scalar

from bounds import analysis, registry, relations, symbolic
from bounds.library import seed003
from bounds.symbols import (
    C_2,
    communication_period,
    gradient_noise_variance,
    integrator_order,
    n_iterations,
    n_workers,
    staleness,
    staleness_constant,
    step_decay,
    step_size,
)

L, h, tau, K = n_iterations, step_size, staleness, integrator_order


def _optimum(name, **substitutions):
    bound = registry.get(name)
    return symbolic.minimise(bound.substitute(**substitutions) if substitutions
                             else bound.expression, step_size)


@pytest.mark.parametrize("name, substitutions, method", [
    ("seed001-section-4-mse", {}, "exact"),
    ("seed001-theorem-3-mse", {"integrator_order": 1}, "exact"),
    ("seed001-theorem-3-mse", {"integrator_order": 2}, "dominant balance"),
    ("seed001-theorem-3-mse", {}, "dominant balance"),  # symbolic K ≥ 1
])
def test_optimal_mse_step_and_rate_of_seed_001(name, substitutions, method):
    """h*_MSE ∝ τ^(−2/3) L^(−1/3) and MSE* ∝ (τ/L)^(2/3) (docs/math.md §2)."""
    optimum = _optimum(name, **substitutions)
    assert optimum.method == method
    assert optimum.exponent(L, "argmin") == sp.Rational(-1, 3)
    assert optimum.exponent(tau, "argmin") == sp.Rational(-2, 3)
    assert optimum.exponent(L) == sp.Rational(-2, 3)
    assert optimum.exponent(tau) == sp.Rational(2, 3)


def test_section_4_optimum_is_the_closed_form():
    optimum = _optimum("seed001-section-4-mse")
    d1, d2, d3 = sp.symbols("D_1 D_2 D_3", positive=True)
    expected = (d1 / (2 * (d2 * tau**2 + d3) * L)) ** sp.Rational(1, 3)
    assert sp.simplify(optimum.argmin - expected) == 0
    assert relations.result(next(r for r in relations.RELATIONS
                                 if r.name == "seed001-section-4-mse-optimum")).holds


def test_dominant_balance_matches_the_numerical_minimiser_as_l_grows():
    """K = 2: sympy cannot solve ∂/∂h = 0 as a power law; the dominant-balance h* must
    approach the true minimiser as L → ∞ (relative gap falling towards 0)."""
    bound = registry.get("seed001-theorem-3-mse")
    unit = {"C_1": 1, "C_2": 1, "C_3": 1, "M": 1, "integrator_order": 2, "staleness": 3}
    optimum = symbolic.minimise(bound.substitute(**unit), step_size)
    gaps = []
    for length in (1e2, 1e4, 1e6):
        predicted = float(optimum.argmin.subs(L, length))
        best = minimize_scalar(lambda x, n=length: float(bound.evaluate(
            **unit, n_iterations=n, step_size=np.exp(x))), bounds=(-20, 2),
            method="bounded", options={"xatol": 1e-10}).x
        gaps.append(abs(predicted / np.exp(best) - 1))
    assert gaps[2] < gaps[1] < gaps[0] and gaps[2] < 1e-3


@pytest.mark.parametrize("name", ["seed001-theorem-4-variance", "seed001-theorem-7-variance"])
def test_variance_rate_is_minus_2k_over_2k_plus_1(name):
    optimum = _optimum(name)
    assert optimum.method == "exact"
    assert sp.simplify(optimum.exponent(L) + 2 * K / (2 * K + 1)) == 0
    assert sp.simplify(optimum.exponent(L, "argmin") + 1 / (2 * K + 1)) == 0
    for order, rate in ((1, sp.Rational(-2, 3)), (2, sp.Rational(-4, 5))):
        assert _optimum(name, integrator_order=order).exponent(L) == rate


@pytest.mark.parametrize("order, rate", [(1, sp.Rational(-2, 3)), (2, sp.Rational(-4, 5))])
def test_fixed_and_decreasing_step_mse_rates_of_higher_order_integrators(order, rate):
    assert _optimum(f"chen2015-mse-fixed-k{order}").exponent(L) == rate
    bound = registry.get(f"chen2015-mse-decreasing-k{order}")
    decreasing = bound.specialise(bound.decreasing_step, "decreasing").expression
    decay = symbolic.optimal_decay(decreasing, L, step_decay)
    assert decay.argmin == sp.Rational(1, 2 * order + 1) and decay.rate == rate
    assert not decay.logarithmic


@pytest.mark.parametrize("order", [1, 2])
def test_bias_rate_is_minus_k_over_k_plus_1(order):
    rate = sp.Rational(-order, order + 1)
    assert _optimum(f"chen2015-bias-fixed-k{order}").exponent(L) == rate
    # symbolic K: the synchronous limit of Theorem 2
    synchronous = symbolic.limit(registry.get("seed001-theorem-2-bias").expression, tau, 0)
    general = symbolic.minimise(synchronous, step_size)
    assert general.method == "exact"
    assert sp.simplify(general.exponent(L) + K / (K + 1)) == 0
    # decreasing steps reach it only at the edge α = 1/(K + 1), up to a log factor
    bound = registry.get(f"chen2015-bias-decreasing-k{order}")
    decay = symbolic.optimal_decay(bound.specialise(bound.decreasing_step, "d").expression, L,
                                   step_decay)
    assert decay.argmin == sp.Rational(1, order + 1) and decay.rate == rate
    assert decay.logarithmic


def test_downpour_third_term_is_seed_001_staleness_term_at_tau_pi_p_minus_1():
    """E₃ with a fixed step equals M²τ²h² at τ = π(P − 1), up to the constant M² that seed
    003 folds into C₁."""
    fixed = {a.symbol: a.closed_form(seed003.FIXED_STEP) for a in seed003.SEQUENCES}
    third = sp.simplify(seed003.E_3.xreplace(fixed))
    staleness_term = next(t for t in sp.Add.make_args(registry.get("seed001-theorem-3-mse")
                                                      .expression) if t.has(tau))
    at = (staleness_term / (C_2 * staleness_constant**2)).subs(
        tau, communication_period * (n_workers - 1))
    assert sp.simplify(third - at) == 0
    assert third == communication_period**2 * (n_workers - 1) ** 2 * h**2


@pytest.mark.parametrize("name", [
    "seed001-theorem-2-bias-at-zero-staleness-k1", "seed001-theorem-2-bias-at-zero-staleness-k2",
    "seed001-theorem-3-mse-at-zero-staleness-k1", "seed001-theorem-3-mse-at-zero-staleness-k2",
    "seed003-downpour-one-worker", "seed001-theorem-6-one-server",
    "seed001-theorem-7-one-server", "seed003-downpour-is-theorem-3",
])
def test_limits_recover_the_simpler_bounds(name):
    relation = next(r for r in relations.RELATIONS if r.name == name)
    result = relations.result(relation)
    assert result.holds, result.detail


def test_downpour_with_one_worker_is_b0_exactly():
    downpour = registry.get("seed003-downpour-mse")
    b0 = registry.get("seed003-standard-b0")
    one = symbolic.limit(downpour.substitute(C_1=sp.Symbol("C", positive=True)), n_workers, 1)
    assert sp.simplify(one - b0.expression) == 0


def test_every_relation_is_decided_and_only_the_documented_finding_fails():
    results = relations.check_all()
    failed = {r.name for r in results if not r.holds}
    assert failed == {"seed002-theorem-1-reduces-to-remark-2"}
    finding = next(r for r in results if not r.holds)
    assert "1/(T*h)" in finding.detail


def test_derivative_signs_under_the_stated_assumptions():
    mse = registry.get("seed001-theorem-3-mse").expression
    variance = registry.get("seed001-theorem-4-variance").expression
    assert symbolic.derivative_sign(mse, tau) == "non-negative"  # τ ≥ 0
    assert symbolic.derivative_sign(variance, tau) == "zero"  # Theorem 4
    assert symbolic.derivative_sign(mse, L) == "negative"
    assert symbolic.derivative_sign(mse, h) == "undetermined"  # the optimum is interior
    exact = registry.get("exact-sgld-stationary-variance")
    region = dict(exact.region)
    assert symbolic.derivative_sign(exact.expression, gradient_noise_variance,
                                    region) == "positive"
    assert symbolic.derivative_sign(exact.expression, h, region) == "positive"
    # without the stability region the sign of ∂/∂V is not determined (h > 2s² flips it)
    assert symbolic.derivative_sign(exact.expression, gradient_noise_variance) != "positive"
    assert _optimum("seed002-theorem-1-dsgld").method == "boundary"


def test_leading_exponent_and_same_order_refuse_what_they_cannot_decide():
    with pytest.raises(symbolic.NotPowerForm):
        symbolic.leading_exponent(sp.exp(L), L)
    same, why = symbolic.same_order(1 / (L * h) + h, 1 / (L * h) + h**2, [], [h], [L])
    assert not same and "h" in why
    same, _ = symbolic.same_order(1 / (L * h) + 1 / L, 1 / (L * h), [], [h], [L])
    assert same


def test_analysis_reports_method_rate_and_signs_for_every_bound():
    for name in registry.names():
        bound = registry.get(name)
        result = analysis.analyse(bound)
        if bound.relation == "upper bound" and bound.step_size is not None:
            assert result["optimum"]["method"] in ("exact", "dominant balance", "boundary")
    theorem = analysis.analyse(registry.get("seed001-theorem-3-mse"))
    assert theorem["optimum"]["rate"] == "-2/3"
    assert theorem["optimum_by_order"]["K = 1"]["method"] == "exact"
    assert theorem["optimum_by_order"]["K = 2"]["method"] == "dominant balance"
    assert theorem["derivative_signs"]["τ"] == "non-negative"
