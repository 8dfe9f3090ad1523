"""Numbers from sympy expressions: one cached ``lambdify`` per expression, broadcast by name.

No formula is written a second time in numpy: every numeric value of a bound or an exact
result comes from :func:`compile_expression`, which lambdifies the expression once (after
``doit``, so closed-form sums become array code) and caches the function. Arguments may be
scalars, numpy arrays (numpy broadcasting) or xarray DataArrays; when any argument is a
DataArray the function runs through ``xarray.apply_ufunc``, so arrays broadcast by dim name
and the result carries the coordinates (``step_size`` × ``staleness`` grids come out as such).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import cache

import numpy as np
import sympy as sp
import xarray as xr


@cache
def compile_expression(expression: sp.Expr) -> tuple[tuple[str, ...], Callable]:
    """(argument names, numpy function) for ``expression``; cached per expression."""
    closed = expression.doit()
    symbols = sorted(closed.free_symbols, key=lambda s: s.name)
    function = sp.lambdify(symbols, closed, modules="numpy")
    return tuple(s.name for s in symbols), function


def _broadcasting(function: Callable) -> Callable:
    """A constant expression lambdifies to a scalar; give it the arguments' shape."""

    def call(*args):
        args = [np.asarray(a, dtype=float) for a in args]  # no integer powers of integers
        result = np.asarray(function(*args), dtype=float)
        shape = np.broadcast_shapes(*(np.shape(a) for a in args)) if args else ()
        return np.broadcast_to(result, shape) if result.shape != shape else result

    return call


def evaluate_expression(expression: sp.Expr, values: Mapping, context: str = ""):
    """Evaluate with ``values`` keyed by symbol name (extra keys are ignored)."""
    names, function = compile_expression(expression)
    missing = [n for n in names if n not in values]
    if missing:
        where = f"{context} " if context else ""
        raise TypeError(f"{where}needs values for {', '.join(missing)}")
    args = [values[n] for n in names]
    call = _broadcasting(function)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        if any(isinstance(a, xr.DataArray) for a in args):
            return xr.apply_ufunc(call, *args)
        return call(*args)


def _per_item(value, dim: str) -> xr.DataArray:
    if isinstance(value, xr.DataArray):
        if dim not in value.dims:
            raise ValueError(f"per-item values need a {dim!r} dim, got dims {value.dims}")
        return value
    array = np.asarray(value, dtype=float)
    if array.ndim != 1:
        raise ValueError(f"per-item values along {dim!r} must be 1-d or a DataArray")
    return xr.DataArray(array, dims=dim)


def evaluate_aggregate(aggregate, values: Mapping):
    """Sum the aggregate's summand over its items (per-item values along ``aggregate.dim``;
    the k-th index of a multiple sum uses the dim renamed ``<dim>_k``)."""
    arguments = dict(values)
    dims = {index: (aggregate.dim if k == 0 else f"{aggregate.dim}_{k}")
            for k, index in enumerate(aggregate.indices)}
    for symbol, value_name, index in aggregate.items:
        if value_name not in values:
            raise TypeError(f"aggregate {aggregate.symbol} needs per-item values "
                            f"{value_name!r} along {aggregate.dim!r}")
        item = _per_item(values[value_name], aggregate.dim)
        arguments[symbol.name] = item.rename({aggregate.dim: dims[index]})
    summand = evaluate_expression(aggregate.summand, arguments, f"aggregate {aggregate.symbol}")
    return summand.sum(list(dims.values()))


def _with_aggregates(bound, values: Mapping) -> dict:
    values = dict(values)
    for aggregate in bound.aggregates:
        if aggregate.symbol.name not in values:
            values[aggregate.symbol.name] = evaluate_aggregate(aggregate, values)
    return values


def evaluate_bound(bound, values: Mapping):
    return evaluate_expression(bound.expression, _with_aggregates(bound, values), bound.name)


def evaluate_terms(bound, terms, values: Mapping, dim: str) -> xr.DataArray:
    values = _with_aggregates(bound, values)
    parts = []
    for term in terms:
        value = evaluate_expression(term, values, bound.name)
        parts.append(value if isinstance(value, xr.DataArray) else xr.DataArray(value))
    stacked = xr.concat(xr.broadcast(*parts), dim=dim)
    return stacked.assign_coords({dim: [bound.text(t) for t in terms]})
