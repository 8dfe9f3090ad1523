"""The Bounds explorer: a registered bound's controls, its curve, and its optimal step.

Everything comes from :mod:`bounds`: the record and its analysis (:func:`bounds.analysis.report`,
as ``workbench bounds show`` prints it), numbers through the cached lambdify of
:mod:`bounds.numeric`, and the optimal step from :func:`bounds.symbolic.minimise` (exact where
∂/∂h = 0 is binomial, dominant balance otherwise — the page says which). Sequence forms
(decreasing steps, per-worker sums) are shown in their fixed-step form, as the analysis
optimises them.

Controls: one per free symbol of that form. Each offers a grid of admissible values around
the symbol's declared samples (:mod:`bounds.symbols`): log-spaced for positive reals, integers
for counts, and a linear range for signed reals; hidden constants of O(·) forms run from 0.1
to 10.

:func:`curve_chart` draws the bound along one symbol as an interactive chart.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cache

import altair as alt
import numpy as np
import pandas as pd
import sympy as sp

from bounds import analysis, registry, symbolic
from bounds.numeric import evaluate_expression
from bounds.record import Bound
from bounds.symbols import info, integrator_order
from workbench.explore import charts

GRID_POINTS = 31
CURVE_POINTS = 200


@dataclass(frozen=True)
class Control:
    """One slider: a symbol's name, how the paper writes it, its meaning and its values."""

    name: str
    display: str
    latex: str
    meaning: str
    options: tuple[float, ...]
    default: float
    hidden_constant: bool
    integer: bool


def _round(value: float) -> float:
    return float(f"{value:.3g}")


def _options(symbol: sp.Symbol) -> tuple[tuple[float, ...], float]:
    """(grid of values, default) for one symbol (module docstring)."""
    details = info(symbol)
    facts = symbol.assumptions0
    if details.hidden_constant:
        grid = np.geomspace(0.1, 10.0, 21)
        return tuple(_round(v) for v in grid), 1.0
    samples = np.asarray(details.samples, dtype=float)
    default = float(samples[1])
    if facts.get("integer"):
        low = 0 if facts.get("nonnegative") and not facts.get("positive") else 1
        high = int(max(samples.max(), 2 * default, low + 1))
        if high - low <= 64:
            grid = np.arange(low, high + 1)
        else:
            grid = np.unique(np.round(np.geomspace(max(low, 1), high, GRID_POINTS)))
            grid = np.concatenate([[low], grid]) if low == 0 else grid
        return tuple(sorted({float(v) for v in grid} | {default})), default
    if facts.get("positive"):
        positive = samples[samples > 0]
        grid = np.geomspace(positive.min() / 10, positive.max() * 10, GRID_POINTS)
        values = sorted({_round(v) for v in grid} | {default})
        return tuple(values), default
    if facts.get("nonnegative"):
        top = samples.max() * 10
        grid = np.concatenate([[0.0], np.geomspace(top / 1e4, top, GRID_POINTS - 1)])
        return tuple(sorted({_round(v) for v in grid} | {default})), default
    span = max(abs(samples.min()), abs(samples.max())) * 2
    grid = np.linspace(-span, span, 41)
    return tuple(sorted({_round(v) for v in grid} | {default})), default


#: the bound the explorer opens on
DEFAULT_BOUND = "seed001-theorem-3-mse"


@cache
def form(name: str) -> Bound:
    """The record as the explorer evaluates it: its fixed-step form when it has one."""
    return registry.get(name).with_fixed_step()


@cache
def report(name: str) -> dict:
    """:func:`bounds.analysis.report` of the record (cached: sympy takes up to seconds)."""
    return analysis.report(registry.get(name))


def controls(name: str) -> list[Control]:
    """One control per free symbol of the bound's form, variables first, then constants."""
    bound = form(name)
    names = bound.display_names()
    symbols = sorted(bound.expression.free_symbols,
                     key=lambda s: (info(s).hidden_constant, s.name))
    out = []
    for symbol in symbols:
        options, default = _options(symbol)
        out.append(Control(symbol.name, names[symbol][0], names[symbol][1],
                           info(symbol).meaning, options, default, info(symbol).hidden_constant,
                           bool(symbol.assumptions0.get("integer"))))
    return out


STEP_NAMES = ("step_size", "step_size_wt", "relative_step")


def default_axis(name: str) -> str:
    """The record's step size, else its iterations, else a step-size symbol it uses, else its
    first variable."""
    bound = registry.get(name)
    variables = [c.name for c in controls(name) if not c.hidden_constant]
    for symbol in (bound.step_size, bound.iterations):
        if symbol is not None and symbol.name in variables:
            return symbol.name
    return next((n for n in STEP_NAMES if n in variables), variables[0])


def evaluate(name: str, values: dict) -> float | np.ndarray:
    """The bound's value at ``values`` (symbol names; arrays broadcast)."""
    return evaluate_expression(form(name).expression, values, name)


@dataclass(frozen=True)
class Optimum:
    """The step minimising the bound at the other symbols' values."""

    method: str
    detail: str
    step_size: float  # NaN when there is no interior optimum
    value: float
    argmin_latex: str


@cache
def _symbolic_optimum(name: str, order: int | None) -> symbolic.Optimum | None:
    bound = registry.get(name)
    if bound.relation != "upper bound" or bound.step_size is None:
        return None
    expression = form(name).expression
    if order is not None:
        expression = expression.subs(integrator_order, order)
    return symbolic.minimise(expression, bound.step_size)


def optimum(name: str, values: dict) -> Optimum | None:
    """h* and the bound there, with the method that found h* (None: no step to optimise)."""
    order = values.get(integrator_order.name)
    found = _symbolic_optimum(name, None if order is None else int(order))
    if found is None:
        return None
    if found.argmin is None:
        return Optimum(found.method, found.detail, math.nan, math.nan, "")
    step = float(evaluate_expression(found.argmin, values, name))
    value = float(evaluate_expression(found.value, values, name))
    return Optimum(found.method, found.detail, step, value, form(name).latex(found.argmin))


def rate(name: str) -> str | None:
    """The exponent of L in the bound at its optimal step (or of an optimal-rate record)."""
    result = report(name)["analysis"]
    return result.get("rate") or result.get("optimum", {}).get("rate")


@dataclass(frozen=True)
class Curve:
    axis: str
    x: np.ndarray
    y: np.ndarray
    grid_minimum: float  # x at the smallest finite y on the grid (NaN if none)


def curve(name: str, axis: str, values: dict, low: float, high: float) -> Curve:
    """The bound along ``axis`` from ``low`` to ``high`` (log-spaced when both are > 0)."""
    integer = bool(next(c for c in controls(name) if c.name == axis).integer)
    if low > 0:
        x = np.geomspace(low, high, CURVE_POINTS)
    else:
        x = np.linspace(low, high, CURVE_POINTS)
    if integer:
        x = np.unique(np.round(x))
    y = np.asarray(evaluate(name, {**values, axis: x}), dtype=float)
    finite = np.isfinite(y)
    minimum = float(x[finite][np.argmin(y[finite])]) if finite.any() else math.nan
    return Curve(axis, x, y, minimum)


def curve_chart(name: str, axis: str, values: dict) -> alt.LayerChart:
    """The bound along ``axis`` over its control's range, the other symbols at ``values``:
    the curve, the slider's value and, along the step size, the optimal step h* (its
    method in the legend); log axes where the range (and the bound) is positive."""
    bound = registry.get(name)
    control = next(c for c in controls(name) if c.name == axis)
    low, high = min(control.options), max(control.options)
    line = curve(name, axis, values, low, high)
    fixed = ", ".join(f"{k} = {v:g}" for k, v in sorted(values.items()) if k != axis)
    frame = [charts.rows(line.x, line.y, bound.text(form(name).expression),
                         [f"{axis} = {x:.4g}, {fixed}" for x in line.x], style="line"),
             charts.rows(values[axis], None, "slider value", fixed, style="vrule")]
    found = optimum(name, values)
    if found is not None and bound.step_size is not None and axis == bound.step_size.name \
            and not math.isnan(found.step_size):
        frame.append(charts.rows(found.step_size, None, f"h* ({found.method})", fixed,
                                 style="vrule"))
    finite = line.y[np.isfinite(line.y)]
    return charts.line_chart(pd.concat(frame, ignore_index=True),
                             x_title=f"{control.display} ({axis})", y_title="bound",
                             log_x=low > 0, log_y=bool(np.all(finite > 0)), legend="bottom")
