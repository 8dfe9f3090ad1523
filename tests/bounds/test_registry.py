"""Bound records: the registry's contents and order, provenance, rendering, and numbers.

Numeric evaluation is only through cached lambdified functions; these tests compare it with
sympy's ``evalf`` of the same expression (and of the explicit sums behind aggregates).
"""

import math

import numpy as np
import pytest
import sympy as sp
import xarray as xr

from bounds import numeric, registry
from bounds.record import PROVENANCE, Bound
from bounds.symbols import SYMBOLS, info

REQUIRED = [
    "seed001-theorem-2-bias", "seed001-theorem-3-mse", "seed001-theorem-4-variance",
    "seed001-corollary-5-variance", "seed001-theorem-6-bias", "seed001-theorem-6-mse",
    "seed001-theorem-7-variance", "seed001-section-4-bias", "seed001-section-4-mse",
    "seed001-section-4-bias-optimum", "seed001-section-4-mse-optimum",
    *(f"chen2015-{q}-{s}-k{k}" for q in ("bias", "mse") for s in ("fixed", "decreasing")
      for k in (1, 2)),
    "seed002-theorem-1-dsgld", "seed002-remark-2-sgld", "seed002-theorem-2-fsgld",
    "seed003-standard-b0", "seed003-downpour-mse", "seed003-elastic-mse",
    "seed003-elastic-variance",
    "exact-sgld-stationary-variance", "exact-sghmc-euler-stationary-variance",
    "exact-sghmc-splitting-stationary-variance", "exact-stale-sgld-second-order",
    "exact-dsgld-round-factor", "exact-dsgld-stationary-variance",
    "exact-fsgld-stationary-variance",
]


def test_registry_holds_every_required_record_in_a_stable_order():
    names = registry.names()
    assert set(REQUIRED) <= set(names)
    assert names == list(registry.BOUNDS) and len(set(names)) == len(names)
    sources = [n.split("-")[0] for n in names]
    order = ["seed001", "chen2015", "seed002", "seed003", "exact"]
    assert sources == sorted(sources, key=order.index)
    with pytest.raises(KeyError, match="seed001-theorem-3-mse"):
        registry.get("no-such-bound")


@pytest.mark.parametrize("name", registry.names())
def test_every_record_carries_its_provenance_source_and_symbols(name):
    bound = registry.get(name)
    assert bound.provenance in PROVENANCE
    assert f"[{bound.provenance}]" in bound.provenance_note
    assert "seed 00" in bound.source or "docs/math.md" in bound.source
    described = bound.describe()
    assert described["provenance"] == bound.provenance
    assert described["hypothesis_under_test"] == (bound.provenance == "recon")
    assert {s["name"] for s in described["symbols"]} == {s.name for s in bound.all_symbols()}
    assert all(s["meaning"] for s in described["symbols"])
    assert bound.conditions
    assert bound.latex() and bound.text()


def test_recon_forms_are_the_seed_001_theorems_and_the_cited_integrator_bounds():
    recon = {n for n, b in registry.BOUNDS.items() if b.is_hypothesis}
    assert "seed001-theorem-3-mse" in recon and "chen2015-mse-fixed-k2" in recon
    assert not any(n.startswith(("seed002", "seed003", "exact")) for n in recon)


def test_symbols_carry_assumptions_the_symbolic_operations_use():
    theorem = registry.get("seed001-theorem-3-mse")
    by_name = {s.name: s for s in theorem.all_symbols()}
    assert info(by_name["staleness"]).assumptions == "non-negative integer"
    assert info(by_name["step_size"]).assumptions == "positive real"
    assert info(by_name["n_iterations"]).assumptions == "positive integer"
    assert {c.name for c in theorem.constants} == {"C_1", "C_2", "C_3", "M"}


def test_terms_are_the_additive_terms_without_their_constants():
    theorem = registry.get("seed001-theorem-3-mse")
    assert {theorem.text(t) for t in theorem.terms()} == {"1/(L*h)", "h**2*τ**2", "h**(2*K)"}
    downpour = registry.get("seed003-downpour-mse")
    assert len(downpour.terms()) == 4


def _grid_point(bound: Bound, k: int) -> dict:
    """The k-th point of a fixed grid: each symbol takes its k-th declared sample value."""
    values = {s.name: info(s).samples[k] for s in bound.all_symbols()}
    values.update({a.symbol.name: info(a.symbol).samples[k] for a in bound.aggregates})
    return values


@pytest.mark.parametrize("name", registry.names())
def test_lambdified_values_equal_evalf_on_a_fixed_grid(name):
    bound = registry.get(name)
    for k in range(5):
        values = _grid_point(bound, k)
        lambdified = float(bound.evaluate(**values))
        symbols = {s.name: s for s in bound.expression.free_symbols}
        exact = bound.expression.xreplace(
            {symbols[n]: sp.nsimplify(v) for n, v in values.items() if n in symbols})
        # unevaluated sums are summed term by term: this also checks their closed forms
        reference = float(sp.N(exact, 30))
        assert lambdified == pytest.approx(reference, rel=1e-9, abs=1e-300), (name, values)


def test_aggregates_sum_their_per_item_values_like_the_explicit_sum():
    dsgld = registry.get("seed002-theorem-1-dsgld")
    shards = {"shard_size": [200, 500, 1500], "selection_probability": [0.2, 0.3, 0.5],
              "shard_gradient_bound_sq": [2.25, 0.49, 4.0]}
    scalars = {"C": 1.0, "batch_size": 10, "n_iterations": 1000, "step_size_wt": 1e-3}
    explicit = (sum(n**2 * g2 / f for n, f, g2 in zip(*shards.values(), strict=True)) + 1) \
        / (10 * 1000) + 1e-6
    assert float(dsgld.evaluate(**shards, **scalars)) == pytest.approx(explicit, rel=1e-12)
    # the aggregate by name short-cuts the per-shard values
    direct = float(dsgld.evaluate(shard_gradient_sum=explicit * 1e4 - 1 - 1e-2, **scalars))
    assert direct == pytest.approx(explicit, rel=1e-12)

    elastic = registry.get("seed003-elastic-mse")
    workers = {"worker_step_sum": [1.0, 2.0, 4.0], "worker_step_square_sum": [0.1, 0.3, 0.2],
               "worker_noise_term": [0.5, 0.25, 1.0]}
    s, q, e = (np.array(v) for v in workers.values())
    pairs = sum((qi + qj) ** 2 for qi in q for qj in q)
    total = s.sum()
    expected = np.sum(s**2 * e) / total**2 + 1 / total + pairs / total**2
    assert float(elastic.evaluate(**workers, D_5=1.0)) == pytest.approx(expected, rel=1e-12)

    decreasing = registry.get("chen2015-mse-decreasing-k1")
    steps = 0.1 * np.arange(1, 51) ** (-1 / 3)
    noise = np.linspace(1.0, 2.0, 50)
    value = float(decreasing.evaluate(step_size_sequence=steps, gradient_noise_sequence=noise,
                                      C_1=1.0, C_2=1.0, C_3=1.0))
    expected = (np.sum(steps**2 * noise) + steps.sum() + np.sum(steps**2) ** 2) / steps.sum()**2
    assert value == pytest.approx(expected, rel=1e-12)


def test_evaluation_broadcasts_over_xarray_dims_by_name():
    theorem = registry.get("seed001-theorem-3-mse")
    h = xr.DataArray([1e-3, 1e-2, 0.1], dims="step_size")
    length = xr.DataArray([10, 100], dims="n_iterations")
    tau = xr.DataArray([0, 1, 4, 9], dims="staleness")
    values = theorem.evaluate(step_size=h, n_iterations=length, staleness=tau, integrator_order=1,
                              C_1=1.0, C_2=2.0, C_3=3.0, M=0.5)
    assert set(values.dims) == {"step_size", "n_iterations", "staleness"}
    one = float(values.isel(step_size=1, n_iterations=0, staleness=2))
    assert one == pytest.approx(1 / (10 * 1e-2) + 2 * 0.25 * 16 * 1e-4 + 3 * 1e-4)
    terms = theorem.term_values(step_size=h, n_iterations=length, staleness=tau,
                                integrator_order=1)
    assert terms.sizes["term"] == 3 and "1/(L*h)" in terms["term"].values.tolist()


def test_compiled_functions_are_cached_and_missing_values_are_named():
    bound = registry.get("seed001-theorem-4-variance")
    first = numeric.compile_expression(bound.expression)
    assert numeric.compile_expression(bound.expression) is first
    with pytest.raises(TypeError, match="step_size"):
        bound.evaluate(n_iterations=10, C_1=1, C_2=1, integrator_order=1)


def test_fixed_step_specialisation_closes_the_sums():
    b0 = registry.get("seed003-standard-b0").with_fixed_step()
    assert not b0.aggregates and not b0.expression.has(sp.Sum)
    assert b0.text() == "C*(h**2 + σ²/L + 1/(L*h))"


def test_every_declared_symbol_has_a_meaning_and_samples():
    for symbol, record in SYMBOLS.items():
        assert record.meaning and len(record.samples) == 5, symbol
        assert all(math.isfinite(v) for v in record.samples)
