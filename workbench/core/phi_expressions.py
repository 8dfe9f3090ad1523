"""Test functions φ(θ) written as expression strings in θ's components.

A study may declare a test function as text: ``"theta[0]*theta[1]"``, ``"theta[2]**2 - 1"``,
``"exp(theta[0])"``, ``"theta[0] + 2*theta[1]"``. :func:`expression_test_function` turns such a
string into a :class:`~workbench.core.phi.TestFunction` for dimension ``d``: positions of shape
``(..., d)`` to values of shape ``(..., 1)``, computed with numpy over the leading axes.

The string is parsed through the whitelist of bound expressions (:mod:`bounds.expressions`:
numbers, ``+ - * / **`` and ``^``, unary signs, the functions sqrt log exp abs min max called
by name with positional arguments, the same size limits and refusals) plus one shape,
``theta[i]`` with ``i`` a non-negative integer literal. It is never executed: its tree is
compiled into numpy operations. The parts without θ are numbers computed once, as
:mod:`bounds.expressions` computes them; exponents must be such numbers, within
±``MAX_EXPONENT``. Where φ is undefined (the log of a negative component) its value is NaN,
without a warning. :func:`components` gives the indices a string reads without knowing ``d``,
so that a study with a bad string is refused when it is read.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from bounds.expressions import (
    FUNCTIONS,
    MAX_EXPONENT,
    BoundSyntaxError,
    Evaluator,
    syntax_tree,
)
from workbench.core.phi import TestFunction

#: a compiled part of an expression: a number (it reads no θ) or a function of the positions
Term = int | float | Callable[[np.ndarray], np.ndarray]

#: the functions of :data:`bounds.expressions.FUNCTIONS`, elementwise over arrays
_ARRAY_FUNCTIONS = {"sqrt": np.sqrt, "log": np.log, "exp": np.exp, "abs": np.abs,
                    "min": lambda *args: functools.reduce(np.minimum, args),
                    "max": lambda *args: functools.reduce(np.maximum, args)}
_VARIADIC = ("min", "max")


def _reads_theta(node: ast.AST) -> bool:
    return any(isinstance(n, ast.Subscript) or isinstance(n, ast.Name) and n.id == "theta"
               for n in ast.walk(node))


def _value(term: Term, theta: np.ndarray):
    return term(theta) if callable(term) else term


class _Compiler(Evaluator):
    """The bound whitelist plus ``theta[i]``, compiled into numpy operations on positions of
    shape ``(..., dim)``; with ``dim`` None the indices are checked against no dimension."""

    def __init__(self, text: str, dim: int | None):
        super().__init__(text, {})
        self.dim = dim
        self.indices: set[int] = set()

    def index(self, node: ast.Subscript) -> int:
        if not (isinstance(node.value, ast.Name) and node.value.id == "theta"):
            raise self.refuse(node, "only theta can be indexed")
        index = node.slice
        if not isinstance(index, ast.Constant) or type(index.value) is not int:
            raise self.refuse(node, "theta takes a non-negative integer index, as theta[0]")
        if self.dim is not None and index.value >= self.dim:
            raise self.refuse(node, f"index {index.value} is out of range for dimension "
                                    f"{self.dim} (theta[0] to theta[{self.dim - 1}])")
        self.indices.add(index.value)
        return index.value

    def build(self, node: ast.AST) -> Term:
        if not _reads_theta(node):
            return super().build(node)  # a number, computed once, with the bound refusals
        if isinstance(node, ast.Subscript):
            index = self.index(node)
            return lambda theta: theta[..., index]
        if isinstance(node, ast.Name):
            raise self.refuse(node, "theta must be indexed, as theta[0]")
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
            operand = self.build(node.operand)
            return (lambda theta: -operand(theta)) if isinstance(node.op, ast.USub) else operand
        if isinstance(node, ast.BinOp) and type(node.op) in self._OPERATORS:
            left, right = self.build(node.left), self.build(node.right)
            if isinstance(node.op, ast.Pow) and callable(right):
                raise self.refuse(node.right, "exponents must be numbers")
            if isinstance(node.op, ast.Pow) and abs(right) > MAX_EXPONENT:
                raise self.refuse(node, f"exponents must lie within ±{MAX_EXPONENT}")
            operator = self._OPERATORS[type(node.op)]
            return lambda theta: operator(_value(left, theta), _value(right, theta))
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                and node.func.id in FUNCTIONS and not node.keywords):
            name, count = node.func.id, len(node.args)
            variadic = name in _VARIADIC
            if (count < 2) if variadic else (count != 1):
                arguments = "two or more arguments" if variadic else "one argument"
                raise self.refuse(node, f"{name} takes {arguments}")
            function, arguments = _ARRAY_FUNCTIONS[name], [self.build(a) for a in node.args]
            return lambda theta: function(*(_value(a, theta) for a in arguments))
        return super().build(node)  # any other shape: the bound whitelist refuses it


def _compile(text: str, dim: int | None) -> tuple[Term, frozenset[int]]:
    text, tree = syntax_tree(text, "a test function")
    compiler = _Compiler(text, dim)
    return compiler.build(tree.body), frozenset(compiler.indices)


@dataclass(frozen=True)
class _Expression:
    """φ of one expression string for dimension ``dim``. Pickled as its text and dimension
    (worker processes receive test functions) and compiled again when unpickled."""

    text: str
    dim: int
    term: Term = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "term", _compile(self.text, self.dim)[0])

    def __reduce__(self):
        return _Expression, (self.text, self.dim)

    def __call__(self, position: np.ndarray) -> np.ndarray:
        theta = np.asarray(position, dtype=np.float64)
        if theta.ndim == 0 or theta.shape[-1] != self.dim:
            raise ValueError(f"{self.text!r} takes positions of shape (..., {self.dim}), "
                             f"got {theta.shape}")
        values = np.empty(theta.shape[:-1] + (1,))
        with np.errstate(all="ignore"):
            values[..., 0] = _value(self.term, theta)
        return values


def expression_test_function(text: str, dim: int) -> TestFunction:
    """The test function of an expression string in ``theta[0]`` … ``theta[dim-1]``, named by
    the string as written (stripped); BoundSyntaxError naming the piece the whitelist refuses
    or the index out of range."""
    if isinstance(dim, bool) or not isinstance(dim, int) or dim < 1:
        raise ValueError(f"the dimension must be a positive integer, got {dim!r}")
    if not isinstance(text, str):
        raise BoundSyntaxError("a test function must be a non-empty string")
    return TestFunction(text.strip(), _Expression(text.strip(), dim))


def components(text: str) -> frozenset[int]:
    """The indices ``i`` of the components ``theta[i]`` an expression string reads, checked
    against the whitelist (but no dimension): BoundSyntaxError naming the refused piece."""
    return _compile(text, None)[1]
