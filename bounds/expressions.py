"""Expression strings checked and computed in floating point, without sympy.

The whitelist of :mod:`bounds.parse` (numbers, names, ``+ - * / **`` and ``^``, the functions
:data:`FUNCTIONS` called by name), its size limits and its refusals, for the side that needs no
symbols: the names a string refers to (:func:`free_names`) and its value over given numbers
(:func:`evaluate`), which is what a study's derived fields use (``step_size = "C *
staleness**(-2/3) * n_iterations**(-1/3)"``). :mod:`bounds.parse` rebuilds the same trees as
sympy for bounds. Kept apart so that reading, showing and configuring a study does not import
sympy (seconds; issue 15).
"""

from __future__ import annotations

import ast
import functools
import math
from collections.abc import Mapping

MAX_LENGTH = 1000
MAX_NODES = 300
MAX_EXPONENT = 100

#: the functions an expression may call, by name, computed in floating point
FUNCTIONS = {"sqrt": math.sqrt, "log": math.log, "exp": math.exp, "abs": abs, "min": min,
             "max": max}


class BoundSyntaxError(ValueError):
    """A bound string the whitelist refuses; the message names the piece and the column."""


class Checker:
    """A string's tree walked against the whitelist: refusals name the piece and its column."""

    def __init__(self, text: str, symbols: Mapping):
        self.text = text
        self.symbols = symbols

    def refuse(self, node: ast.AST, what: str) -> BoundSyntaxError:
        column = getattr(node, "col_offset", 0)
        piece = ast.get_source_segment(self.text, node) or type(node).__name__
        return BoundSyntaxError(f"{what} at column {column + 1}: {piece!r}")

    def literal(self, node: ast.Constant) -> int | float:
        """A literal's value: a finite number, nothing else."""
        value = node.value
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise self.refuse(node, "only numbers are allowed as literals")
        if not math.isfinite(value):
            raise self.refuse(node, "numbers must be finite")
        return value


@functools.lru_cache(maxsize=4096)
def syntax_tree(text: str, what: str = "a bound") -> tuple[str, ast.Expression]:
    """The normalised text and its :mod:`ast` tree, within the size limits (nothing is run).

    Cached: a study's sweep evaluates the same few expressions at every point; the tree is
    only read, never changed, by its users."""
    if not isinstance(text, str) or not text.strip():
        raise BoundSyntaxError(f"{what} must be a non-empty string")
    if len(text) > MAX_LENGTH:
        raise BoundSyntaxError(f"{what} has at most {MAX_LENGTH} characters, got {len(text)}")
    text = text.strip().replace("^", "**")
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError as error:
        raise BoundSyntaxError(f"not an expression: {error.msg} at column "
                               f"{error.offset or 0}") from None
    if sum(1 for _ in ast.walk(tree)) > MAX_NODES:
        raise BoundSyntaxError(f"{what} has at most {MAX_NODES} parts")
    return text, tree


SHAPES = (ast.Expression, ast.BinOp, ast.UnaryOp, ast.Name, ast.Constant, ast.Call, ast.Load,
          ast.Add, ast.Sub, ast.Mult, ast.Div, ast.Pow, ast.USub, ast.UAdd)


@functools.lru_cache(maxsize=4096)
def free_names(text: str) -> frozenset[str]:
    """The names an expression string refers to (functions excluded); BoundSyntaxError if the
    string is not an expression of the whitelist (numbers, names, + - * / **, the functions
    :data:`FUNCTIONS` called by name with positional arguments): checked before any value is
    known, so a study is refused when it is read, not when it runs."""
    text, tree = syntax_tree(text, "an expression")
    checker = Checker(text, {})
    for node in ast.walk(tree):
        if not isinstance(node, SHAPES):
            raise checker.refuse(node, "not allowed in an expression")
        if isinstance(node, ast.Constant):
            checker.literal(node)  # a finite number, nothing else
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Pow) and not any(
                isinstance(n, ast.Name) for n in ast.walk(node.right)):
            if abs(Evaluator(text, {}).build(node.right)) > MAX_EXPONENT:
                raise checker.refuse(node, f"exponents must lie within ±{MAX_EXPONENT}")
        if isinstance(node, ast.Call) and (not isinstance(node.func, ast.Name)
                                           or node.func.id not in FUNCTIONS or node.keywords
                                           or not node.args):
            raise checker.refuse(node, f"only the functions {', '.join(FUNCTIONS)}, called "
                                       "by name with positional arguments, are allowed")
    calls = {n.func.id for n in ast.walk(tree) if isinstance(n, ast.Call)}
    return frozenset({n.id for n in ast.walk(tree) if isinstance(n, ast.Name)} - calls)


class Evaluator(Checker):
    """The whitelist of :mod:`bounds.parse`, evaluated in floating point in the order
    written (``a * b * c`` is ``(a*b)*c``, as Python would compute it), for the derived
    values of a study (``step_size = "C * staleness**(-2/3) * n_iterations**(-1/3)"``)."""

    _OPERATORS = {ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b,
                  ast.Mult: lambda a, b: a * b, ast.Div: lambda a, b: a / b,
                  ast.Pow: lambda a, b: a ** b}

    def build(self, node: ast.AST):
        if isinstance(node, ast.Name):
            if node.id not in self.symbols:
                raise self.refuse(node, "unknown name")
            return self.symbols[node.id]
        if isinstance(node, ast.Constant):
            return self.literal(node)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
            operand = self.build(node.operand)
            return -operand if isinstance(node.op, ast.USub) else operand
        if isinstance(node, ast.BinOp) and type(node.op) in self._OPERATORS:
            left, right = self.build(node.left), self.build(node.right)
            if isinstance(node.op, ast.Pow) and abs(right) > MAX_EXPONENT:
                raise self.refuse(node, f"exponents must lie within ±{MAX_EXPONENT}")
            try:
                value = self._OPERATORS[type(node.op)](left, right)
            except (ZeroDivisionError, OverflowError, ValueError) as error:
                raise self.refuse(node, f"cannot be computed ({error})") from None
            try:
                finite = not isinstance(value, complex) and math.isfinite(value)
            except OverflowError:  # an integer beyond the float range
                finite = False
            if not finite:
                raise self.refuse(node, "is not a finite real number")
            return value
        if isinstance(node, ast.Call):
            if not isinstance(node.func, ast.Name) or node.func.id not in FUNCTIONS:
                raise self.refuse(node, f"only the functions {', '.join(FUNCTIONS)} are allowed")
            if node.keywords or not node.args:
                raise self.refuse(node, "functions take positional arguments only")
            try:
                return FUNCTIONS[node.func.id](*(self.build(a) for a in node.args))
            except (ValueError, OverflowError, TypeError) as error:
                raise self.refuse(node, f"cannot be computed ({error})") from None
        if isinstance(node, ast.BinOp):
            raise self.refuse(node, "operator not allowed (use + - * / ** or ^)")
        raise self.refuse(node, "not allowed in an expression")


def evaluate(text: str, values: Mapping[str, int | float]) -> int | float:
    """The value of an expression string over ``values`` (names to numbers), through the
    bound whitelist and in the order written; BoundSyntaxError naming the offending piece."""
    text, tree = syntax_tree(text, "an expression")
    return Evaluator(text, dict(values)).build(tree.body)
