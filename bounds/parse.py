"""User bounds: a bound written as a string, turned into a :class:`~bounds.record.Bound` safely.

A study file says, e.g., ``expression = "C1/(L*h) + C2*tau**2*h**2 + C3*h**2"``. The string is
parsed by Python's :mod:`ast` in expression mode and the tree is rebuilt as a sympy expression
node by node, through a whitelist; nothing is ever evaluated (no ``eval``, no ``sympify`` of
the string, no attribute access, subscripts, keywords, comprehensions or lambdas):

- numbers: integer and decimal literals (finite);
- operators: ``+ - * / **`` and unary ``+ -``; ``^`` is a power as in print (it is rewritten
  to ``**`` before parsing, so it binds like one: ``h^2*L`` is h²L; columns in messages
  count it as ``**``);
- functions: ``sqrt``, ``log``, ``exp``, ``abs``, ``min``, ``max``;
- names: a declared symbol by its workbench name (``staleness``, ``step_size``, the sweep dim
  and config key) or by the papers' letter (:data:`ALIASES`: ``tau``, ``h``, ``L``, ...);
  a hidden constant of an O(·) statement, a capital letter with an optional index (``C``,
  ``C1`` or ``C_1``, ``D2``), which an envelope check fits; or a symbol of the user's own,
  declared with its assumptions (``{"n_chains": "positive integer"}``) and mapped onto the
  sweep dim of that name.

Size limits keep a hostile string from costing time: at most
:data:`~bounds.expressions.MAX_LENGTH` characters and :data:`~bounds.expressions.MAX_NODES`
tree nodes, and a numeric power's exponent at most :data:`~bounds.expressions.MAX_EXPONENT`
in size and its value within 10^:data:`MAX_DIGITS` (sympy would otherwise expand
``10**10**10``). Every refusal is a :class:`BoundSyntaxError` naming the offending piece and
its column. The same whitelist checked and computed in floating point, without sympy (the
derived values of a study), is :mod:`bounds.expressions`.

The result is a :class:`Bound` with provenance ``user`` (a hypothesis under test), so it is
analysed, rendered, evaluated and checked exactly like a registered bound; ``registered:NAME``
refers to a registered bound instead.
"""

from __future__ import annotations

import ast
import math
import re
from collections.abc import Mapping

import sympy as sp

from bounds import registry
from bounds.expressions import MAX_EXPONENT, BoundSyntaxError, Checker, syntax_tree
from bounds.record import Bound
from bounds.symbols import SYMBOLS, constant, declare, n_iterations, step_size

MAX_DIGITS = 1000

#: the papers' letters for the declared symbols (names of the workbench itself also work)
ALIASES = {
    "h": "step_size", "eps": "step_size_wt", "epsilon": "step_size_wt",
    "L": "n_iterations", "tau": "staleness", "K": "integrator_order", "M": "M",
    "S": "n_servers", "P": "n_workers", "alpha": "step_decay", "a": "step_scale",
    "sigma2": "noise_level", "N": "n_data", "n": "batch_size", "T": "local_steps",
}
FUNCTIONS = {"sqrt": sp.sqrt, "log": sp.log, "exp": sp.exp, "abs": sp.Abs,
             "min": sp.Min, "max": sp.Max}
ASSUMPTIONS = {
    "positive": {"positive": True}, "positive real": {"positive": True},
    "non-negative": {"nonnegative": True}, "non-negative real": {"nonnegative": True},
    "real": {"real": True},
    "positive integer": {"integer": True, "positive": True},
    "non-negative integer": {"integer": True, "nonnegative": True},
    "integer": {"integer": True},
}
_CONSTANT = re.compile(r"^([A-Z])_?(\d*)$")
_NAME = re.compile(r"^[a-z][a-z0-9_]*$")
_BINARY = {ast.Add: sp.Add, ast.Sub: lambda a, b: a - b, ast.Mult: sp.Mul,
           ast.Div: lambda a, b: a / b}


def _declared(name: str) -> sp.Symbol | None:
    return next((s for s in SYMBOLS if s.name == name), None)


def _constant(name: str) -> sp.Symbol | None:
    """``C1``/``C_1`` → the hidden constant ``C_1`` (declared on first use)."""
    match = _CONSTANT.match(name)
    if not match:
        return None
    letter, index = match.groups()
    canonical = f"{letter}_{index}" if index else letter
    found = _declared(canonical)
    if found is not None:
        return found if SYMBOLS[found].hidden_constant else None
    return constant(canonical, "constant of a user bound (fitted by an envelope check)")


def _user_symbol(name: str, assumption: str) -> sp.Symbol:
    """A symbol of the user's own, declared once; a second declaration must agree."""
    if not _NAME.match(name):
        raise BoundSyntaxError(f"symbol {name!r}: a user symbol is a lower-case name "
                               "(letters, digits, underscores), like a sweep dim")
    if assumption not in ASSUMPTIONS:
        raise BoundSyntaxError(f"symbol {name!r}: assumption {assumption!r} is not one of "
                               f"{', '.join(ASSUMPTIONS)}")
    found = _declared(name)
    wanted = sp.Symbol(name, **ASSUMPTIONS[assumption])
    if found is not None:
        if found != wanted:
            raise BoundSyntaxError(
                f"symbol {name!r} is already declared as {SYMBOLS[found].assumptions}, not "
                f"{assumption}")
        return found
    samples = (1, 2, 3, 5, 10) if "integer" in assumption else (0.5, 1.0, 2.0, 3.0, 0.25)
    return declare(name, name, name.replace("_", r"\_"), "symbol of a user bound", samples,
                   **ASSUMPTIONS[assumption])


#: the largest argument of ``exp`` of a number: e^2302.6 is 10^MAX_DIGITS
_MAX_EXP_ARGUMENT = MAX_DIGITS * math.log(10)
_NOT_FINITE = (sp.zoo, sp.nan, sp.oo, -sp.oo)


def _is_tower(exponent: sp.Expr) -> bool:
    """Whether an exponent holds a power with a variable exponent (``h**h`` in ``h**h**h``)."""
    return any(not power.exp.is_number for power in exponent.atoms(sp.Pow))


def _named(value: sp.Expr) -> str:
    if value == sp.zoo:
        return "complex infinity (zoo)"
    if value is sp.nan:
        return "NaN"
    return str(value)


class _Builder(Checker):
    """Rebuilds a whitelisted :mod:`ast` expression tree as sympy (module docstring)."""

    def build(self, node: ast.AST) -> sp.Expr:
        value = self._build(node)
        if value.is_number:
            self._check_number(node, value)
        return value

    def _check_number(self, node: ast.AST, value: sp.Expr) -> None:
        """A constant part must be a finite real number within 10^MAX_DIGITS: not sympy's
        complex infinity (``log(0)``), NaN or an imaginary number (``sqrt(-1)``). Parts are
        built bottom-up, so every number evaluated here is made of checked ones."""
        if value.has(*_NOT_FINITE) or value.is_finite is False:
            raise self.refuse(node, f"evaluates to {_named(value)}, not a finite real number")
        approximate = sp.N(value, 15)
        if approximate.has(*_NOT_FINITE) or not approximate.is_real:
            raise self.refuse(node, f"evaluates to {_named(value)}, not a finite real "
                                    "number")
        if abs(approximate) > sp.Integer(10) ** MAX_DIGITS:
            raise self.refuse(node, f"a number beyond 10^{MAX_DIGITS}")

    def _build(self, node: ast.AST) -> sp.Expr:
        if isinstance(node, ast.Constant):
            value = self.literal(node)
            return sp.Integer(value) if isinstance(value, int) else sp.Float(value)
        if isinstance(node, ast.Name):
            if node.id not in self.symbols:
                raise self.refuse(node, "unknown name (declare it with its assumptions, or "
                                        f"use one of {', '.join(sorted(ALIASES))})")
            return self.symbols[node.id]
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
            operand = self.build(node.operand)
            return -operand if isinstance(node.op, ast.USub) else operand
        if isinstance(node, ast.BinOp):
            left, right = self.build(node.left), self.build(node.right)
            if isinstance(node.op, ast.Pow):
                if right.is_number and (not right.is_finite or abs(right) > MAX_EXPONENT):
                    raise self.refuse(node, f"exponents must lie within ±{MAX_EXPONENT}")
                if _is_tower(right):
                    raise self.refuse(node, "a power tower (an exponent raised to a variable "
                                            "power); a bound is a sum of powers")
                if left.is_number and right.is_number and left != 0 and \
                        abs(sp.N(right * sp.log(abs(left), 10), 15)) > MAX_DIGITS:
                    raise self.refuse(node, f"a number beyond 10^{MAX_DIGITS}")
                return sp.Pow(left, right)
            if type(node.op) in _BINARY:
                if isinstance(node.op, ast.Div) and right.is_zero:
                    raise self.refuse(node, "division by zero")
                return _BINARY[type(node.op)](left, right)
            raise self.refuse(node, "operator not allowed (use + - * / ** or ^)")
        if isinstance(node, ast.Call):
            if not isinstance(node.func, ast.Name) or node.func.id not in FUNCTIONS:
                raise self.refuse(node, f"only the functions {', '.join(FUNCTIONS)} are allowed")
            if node.keywords or not node.args:
                raise self.refuse(node, "functions take positional arguments only")
            arguments = [self.build(a) for a in node.args]
            if node.func.id == "exp" and len(arguments) == 1 and arguments[0].is_number and \
                    sp.re(sp.N(arguments[0], 15)) > _MAX_EXP_ARGUMENT:
                raise self.refuse(node, f"a number beyond 10^{MAX_DIGITS}")
            return FUNCTIONS[node.func.id](*arguments)
        raise self.refuse(node, "not allowed in a bound")


def parse_assumptions(items) -> dict[str, str]:
    """``NAME=ASSUMPTION`` items (``n_chains=positive integer``) as a mapping for
    :func:`user_bound`; an item without ``=`` is a BoundSyntaxError naming it."""
    assumptions = {}
    for item in items:
        name, equals, assumption = item.partition("=")
        if not equals:
            raise BoundSyntaxError(f"{item!r} must read NAME=ASSUMPTION")
        assumptions[name.strip()] = assumption.strip()
    return assumptions


def parse_expression(text: str, assumptions: Mapping[str, str] | None = None) -> sp.Expr:
    """The sympy expression of a bound string (module docstring), or BoundSyntaxError."""
    if not isinstance(text, str):
        raise BoundSyntaxError("a bound must be a non-empty string")
    try:
        return _parse(text, assumptions)
    except (RecursionError, OverflowError, MemoryError) as error:  # sympy on a hostile string
        raise BoundSyntaxError(f"cannot be read ({type(error).__name__}: "
                               f"{str(error).splitlines()[0] if str(error) else ''})") from None


def _parse(text: str, assumptions: Mapping[str, str] | None) -> sp.Expr:
    text, tree = syntax_tree(text)
    names = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    calls = {n.func.id for n in ast.walk(tree)
             if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)}
    symbols: dict[str, sp.Symbol] = {}
    for name in names - calls:
        if assumptions and name in assumptions:
            symbols[name] = _user_symbol(name, assumptions[name])
        elif (found := _declared(ALIASES.get(name, name))) is not None \
                and not SYMBOLS[found].hidden_constant:
            symbols[name] = found
        elif (found := _constant(name)) is not None:
            symbols[name] = found
    expression = _Builder(text, symbols).build(tree.body)
    if expression.has(*_NOT_FINITE, sp.I):
        raise BoundSyntaxError(f"{text!r} is not a finite real expression (it holds "
                               "infinity, NaN or an imaginary number)")
    return expression


def user_bound(text: str, *, name: str = "user", quantity: str = "mse",
               relation: str = "upper bound", assumptions: Mapping[str, str] | None = None,
               source: str = "user bound") -> Bound:
    """A :class:`Bound` from a string, or the registered bound for ``registered:NAME``."""
    if isinstance(text, str) and text.startswith("registered:"):
        try:
            return registry.get(text.removeprefix("registered:").strip())
        except KeyError as error:
            raise BoundSyntaxError(str(error.args[0])) from None
    expression = parse_expression(text, assumptions)
    symbols = expression.free_symbols
    return Bound(
        name=name, title=f"user bound {name}", quantity=quantity, relation=relation,
        expression=expression, source=source, provenance="user", conditions=(),
        step_size=step_size if step_size in symbols else None,
        iterations=n_iterations if n_iterations in symbols else None,
    )
