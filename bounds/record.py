"""A bound as data: a sympy expression with its symbols, conditions, source and provenance.

A :class:`Bound` is what a theorem says about one quantity (bias, MSE or variance of φ̂_L, or
an exact property of a linear-Gaussian sampler), in a form the workbench can evaluate,
optimise, differentiate and check. O(·) statements keep their hidden constants as explicit
symbols (C₁, C₂, M, ...) flagged ``hidden_constant`` in :mod:`bounds.symbols`; an envelope
check fits one non-negative coefficient per additive term in place of them.

Sums over shards, steps or workers are :class:`Aggregate` symbols: the record's expression
uses the aggregate (e.g. Γ² = Σ_s N_s²γ_s²/f_s) and the aggregate knows its summand, so it can
be rendered as a sum, evaluated from per-item arrays along a named dim, or closed in form for
a fixed step.

Provenance tags follow docs/math.md: [seed] stated in a seed paper, [recon] a reconstructed form —
a hypothesis under test, shown as such wherever the bound is shown —, [derived] derived here
and checked by simulation, [code] read in the authors' public code.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace

import sympy as sp

from bounds import numeric
from bounds.symbols import SYMBOLS, info
from bounds.vocabulary import PROVENANCE, QUANTITIES, RELATIONS


@dataclass(frozen=True)
class Aggregate:
    """A symbol standing for a sum over items (shards, steps, workers).

    ``items`` lists (per-item symbol, value name, index): the value name is the keyword that
    supplies the per-item values (arrays or DataArrays along ``dim``); the index says which
    summation index the symbol belongs to (double sums use one symbol per index).
    """

    symbol: sp.Symbol
    summand: sp.Expr
    indices: tuple[sp.Symbol, ...]
    count: sp.Symbol
    dim: str
    items: tuple[tuple[sp.Symbol, str, sp.Symbol], ...]

    def as_sum(self, items: Mapping[sp.Symbol, sp.Expr] | None = None) -> sp.Expr:
        """The unevaluated sum, per-item symbols replaced by ``items`` or by indexed symbols."""
        if items is None:
            items = {symbol: sp.IndexedBase(symbol)[index] for symbol, _, index in self.items}
        total = self.summand.xreplace(dict(items))
        for index in reversed(self.indices):
            total = sp.Sum(total, (index, 1, self.count))
        return total

    def closed_form(self, replacements: Mapping[sp.Symbol, sp.Expr]) -> sp.Expr:
        """The sum with every per-item symbol replaced by an expression in the first index
        (e.g. ``{step_l: h}`` for a fixed step, ``{step_l: a*l**-alpha}`` for decreasing
        steps); ``doit`` closes what sympy can close, the rest stay as sums."""
        missing = [s for s, _, _ in self.items if s not in replacements]
        if missing:
            raise KeyError(f"{self.symbol}: no replacement for {', '.join(map(str, missing))}")
        first = self.indices[0]
        items = {symbol: sp.sympify(replacements[symbol]).xreplace({first: index})
                 for symbol, _, index in self.items}
        return self.as_sum(items).doit()

@dataclass(frozen=True)
class Bound:
    """One registered statement (module docstring)."""

    name: str
    title: str
    quantity: str
    relation: str
    expression: sp.Expr
    source: str
    provenance: str
    conditions: tuple[str, ...]
    provenance_note: str = ""
    step_size: sp.Symbol | None = None
    iterations: sp.Symbol | None = None
    aggregates: tuple[Aggregate, ...] = ()
    fixed_step: Mapping[sp.Symbol, sp.Expr] = field(default_factory=dict)
    decreasing_step: Mapping[sp.Symbol, sp.Expr] = field(default_factory=dict)
    region: Mapping[sp.Symbol, sp.Expr] = field(default_factory=dict)
    display: Mapping[sp.Symbol, tuple[str, str]] = field(default_factory=dict)
    notes: str = ""

    def __post_init__(self) -> None:
        if self.provenance not in PROVENANCE:
            raise ValueError(f"{self.name}: provenance must be one of {list(PROVENANCE)}")
        if self.quantity not in QUANTITIES:
            raise ValueError(f"{self.name}: quantity must be one of {list(QUANTITIES)}")
        if self.relation not in RELATIONS:
            raise ValueError(f"{self.name}: relation must be one of {list(RELATIONS)}")
        undeclared = [s for s in self.all_symbols() if s not in SYMBOLS]
        if undeclared:
            raise ValueError(f"{self.name}: undeclared symbols {undeclared}")

    # ------------------------------------------------------------------ symbols
    def all_symbols(self) -> list[sp.Symbol]:
        """Every declared symbol the record uses, aggregates expanded, in a stable order."""
        found = set(self.expression.free_symbols)
        aggregate_symbols = {a.symbol for a in self.aggregates}
        for aggregate in self.aggregates:
            found |= aggregate.summand.free_symbols - set(aggregate.indices)
        found -= aggregate_symbols
        return sorted(found, key=lambda s: s.name)

    @property
    def constants(self) -> list[sp.Symbol]:
        """The hidden constants of an O(·) statement."""
        return [s for s in self.all_symbols() if info(s).hidden_constant]

    @property
    def variables(self) -> list[sp.Symbol]:
        return [s for s in self.all_symbols() if not info(s).hidden_constant]

    @property
    def is_hypothesis(self) -> bool:
        """[recon] forms and user bounds are hypotheses under test, and shown as such."""
        return self.provenance in ("recon", "user")

    def display_names(self) -> dict[sp.Symbol, tuple[str, str]]:
        """(plain text, LaTeX) for every symbol, with this record's overrides."""
        return display_names(self.display)

    # ------------------------------------------------------------------ forms
    def specialise(self, replacements: Mapping[sp.Symbol, sp.Expr], suffix: str) -> Bound:
        """This bound with its per-item sequences replaced (see :meth:`Aggregate.closed_form`)
        and every aggregate written out."""
        closed = {a.symbol: a.closed_form(replacements) for a in self.aggregates}
        return replace(self, name=f"{self.name}[{suffix}]",
                       expression=self.expression.xreplace(closed), aggregates=(),
                       fixed_step={}, decreasing_step={})

    def with_fixed_step(self) -> Bound:
        """The fixed-step form (``fixed_step`` maps each per-item symbol to a constant)."""
        return self.specialise(self.fixed_step, "fixed step") if self.fixed_step else self

    def terms(self) -> list[sp.Expr]:
        """The additive terms with the hidden constants set to 1 and numeric factors dropped.

        These are what an envelope check fits one non-negative coefficient to. Products are
        distributed over sums (C(a + b) gives a and b) but powers such as (P − 1)² are kept
        whole; terms equal up to a constant factor are merged.
        """
        unit = {c: 1 for c in self.constants}
        expression = _distribute(self.expression.xreplace(unit))
        terms: list[sp.Expr] = []
        for term in sp.Add.make_args(expression):
            _, core = term.as_coeff_Mul()
            if core not in terms:
                terms.append(core)
        return terms

    def substitute(self, **values) -> sp.Expr:
        """The expression with some symbols (by name) replaced by values or expressions."""
        by_name = {s.name: s for s in self.all_symbols()} | {
            a.symbol.name: a.symbol for a in self.aggregates}
        unknown = sorted(set(values) - set(by_name))
        if unknown:
            raise KeyError(f"{self.name} has no symbol {', '.join(unknown)}; "
                           f"known: {', '.join(sorted(by_name))}")
        return self.expression.xreplace({by_name[k]: sp.sympify(v) for k, v in values.items()})

    # ------------------------------------------------------------------ numbers
    def evaluate(self, **values):
        """Numeric value (cached lambdify; broadcasts over arrays and xarray dims by name).

        Keywords are symbol names (``step_size=...``). An aggregate is taken from its own
        name when given, otherwise summed from its per-item values along its dim.
        """
        return numeric.evaluate_bound(self, values)

    def term_values(self, dim: str = "term", **values):
        """The values of :meth:`terms`, stacked along ``dim`` (an xarray DataArray)."""
        return numeric.evaluate_terms(self, self.terms(), values, dim)

    # ------------------------------------------------------------------ rendering
    def text(self, expression: sp.Expr | None = None) -> str:
        """One-line plain-text rendering with the papers' letters."""
        return text(self.expression if expression is None else expression, self.display)

    def latex(self, expression: sp.Expr | None = None) -> str:
        return latex(self.expression if expression is None else expression, self.display)

    def definitions(self) -> list[tuple[sp.Symbol, sp.Expr]]:
        """(aggregate symbol, its sum) for rendering the 'where ...' lines."""
        return [(a.symbol, a.as_sum()) for a in self.aggregates]

    def describe(self) -> dict:
        """Everything a reader needs, as plain data (CLI ``--json``, dashboard)."""
        names = self.display_names()
        return {
            "name": self.name,
            "title": self.title,
            "quantity": self.quantity,
            "quantity_meaning": QUANTITIES[self.quantity],
            "relation": self.relation,
            "provenance": self.provenance,
            "provenance_meaning": PROVENANCE[self.provenance],
            "provenance_note": self.provenance_note,
            "hypothesis_under_test": self.is_hypothesis,
            "source": self.source,
            "formula": self.text(),
            "latex": self.latex(),
            "where": [{"symbol": self.text(s), "sum": self.text(d), "latex":
                       f"{self.latex(s)} = {self.latex(d)}"} for s, d in self.definitions()],
            "symbols": [{"name": s.name, "display": names[s][0], "meaning": info(s).meaning,
                         "assumptions": info(s).assumptions,
                         "hidden_constant": info(s).hidden_constant}
                        for s in self.all_symbols()],
            "conditions": list(self.conditions),
            "notes": self.notes,
        }

def display_names(overrides: Mapping | None = None) -> dict[sp.Symbol, tuple[str, str]]:
    """(plain text, LaTeX) of every declared symbol, with per-record overrides."""
    names = {s: (i.display, i.latex) for s, i in SYMBOLS.items()}
    names.update(overrides or {})
    return names

def text(expression: sp.Expr, overrides: Mapping | None = None) -> str:
    """Plain-text rendering of any expression with the papers' letters (h, L, τ, ...)."""
    names = display_names(overrides)
    plain = {s: sp.Symbol(names[s][0], **s.assumptions0)
             for s in sp.sympify(expression).free_symbols if s in names}
    return sp.sstr(sp.sympify(expression).xreplace(plain))

def latex(expression: sp.Expr, overrides: Mapping | None = None) -> str:
    names = {s: _braced(tex) for s, (_, tex) in display_names(overrides).items()}
    return sp.latex(sp.sympify(expression), symbol_names=names)

def _distribute(expression: sp.Expr) -> sp.Expr:
    """Multiply products out over sums, recursively, without expanding powers of sums."""
    if isinstance(expression, sp.Add):
        return sp.Add(*(_distribute(a) for a in expression.args))
    if isinstance(expression, sp.Mul):
        factors = [_distribute(a) for a in expression.args]
        return sp.expand_mul(sp.Mul(*factors), deep=False)
    return expression

def _braced(tex: str) -> str:
    return f"{{{tex}}}" if ("^" in tex or "_" in tex) else tex
