"""``workbench bounds list|show``: the registered bounds, their provenance and consequences.

``list`` prints one line per bound; ``show`` prints, for the named bounds (all by default) or
for a bound of the user's own (``--expression "C1/(L*h) + C2*tau^2*h^2"``, parsed through
:mod:`bounds.parse`'s whitelist, with ``--assume NAME=ASSUMPTION`` for symbols of one's own),
the formula (text and LaTeX), the provenance tag — a [recon] form is flagged as a hypothesis
under test —, the source, symbols with meanings and assumptions, conditions, the optimal step
size with the method that found it (exact or dominant balance), the rate in L as an exponent,
derivative signs, and the symbolic relations (limits, special cases) with their results.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING

from bounds.vocabulary import PROVENANCE, QUANTITIES, RELATIONS

if TYPE_CHECKING:
    from bounds.record import Bound

# The bound registry, its analysis and the parser import sympy (seconds): they are imported by
# the functions that use them, so that `workbench --help` does not pay for them (issue 15).

INDENT = " " * 14


def add_parser(sub) -> None:
    bounds = sub.add_parser("bounds", help="the registered bounds: list them or show one")
    actions = bounds.add_subparsers(dest="bounds_command", required=True)
    actions.add_parser("list", help="one line per registered bound")
    show = actions.add_parser(
        "show", help="formula, provenance, source, optimal step size and rate of bounds")
    show.add_argument("names", nargs="*", metavar="NAME",
                      help="bound names (see `workbench bounds list`); default: all")
    show.add_argument("--json", action="store_true", help="print the records as JSON")
    show.add_argument("--expression", metavar="TEXT",
                      help="a bound of your own, e.g. 'C1/(L*h) + C2*tau^2*h^2 + C3*h^2' "
                           "(names: workbench symbols, the papers' letters, constants C1, C2)")
    show.add_argument("--quantity", default="mse", choices=sorted(QUANTITIES),
                      help="what --expression bounds (default: mse)")
    show.add_argument("--assume", action="append", default=[], metavar="NAME=ASSUMPTION",
                      help="declare a symbol of your own for --expression, e.g. "
                           "n_chains='positive integer'")


def _tag(bound: Bound) -> str:
    return f"[{bound.provenance}]" + (" hypothesis under test" if bound.is_hypothesis else "")


def _list() -> None:
    from bounds import registry

    width = max(len(n) for n in registry.names())
    for bound in registry.BOUNDS.values():
        print(f"{bound.name:<{width}}  {_tag(bound):<32} {bound.quantity:<20} {bound.title}")


def _optimum_lines(label: str, optimum: dict) -> list[str]:
    lines = [f"{label}{optimum['method']}: "
             + (f"h* = {optimum['step_size']}" if "step_size" in optimum
                else optimum["detail"])]
    if "step_size" in optimum:
        exponents = optimum.get("exponents", {})
        parts = [f"h* ∝ {name}^({e['step_size']}), bound ∝ {name}^({e['bound']})"
                 for name, e in exponents.items() if "step_size" in e]
        if parts:
            lines.append(INDENT + "  scaling    " + "; ".join(parts))
        if optimum["method"] == "dominant balance":
            lines.append(INDENT + "  balancing  " + " against ".join(optimum["balanced_terms"]))
    return lines


def _show(bound: Bound) -> list[str]:
    from bounds import analysis

    data = analysis.report(bound)
    lines = [bound.name, f"  {bound.title}"]

    def field(label: str, value: str) -> None:
        lines.append(f"  {label:<11} {value}")

    field("provenance", f"{_tag(bound)} — {PROVENANCE[bound.provenance]}")
    if bound.provenance_note:
        lines.append(INDENT + bound.provenance_note)
    field("source", bound.source)
    field("quantity", f"{QUANTITIES[bound.quantity]}; {RELATIONS[bound.relation]}")
    field("formula", data["formula"])
    field("LaTeX", data["latex"])
    for where in data["where"]:
        field("where", f"{where['symbol']} = {where['sum']}   ({where['latex']})")
    for i, symbol in enumerate(data["symbols"]):
        role = "hidden constant" if symbol["hidden_constant"] else symbol["assumptions"]
        field("symbols" if i == 0 else "",
              f"{symbol['display']:<4} {symbol['name']}: {symbol['meaning']} ({role})")
    for i, condition in enumerate(bound.conditions):
        field("conditions" if i == 0 else "", f"- {condition}")
    result = data["analysis"]
    if "fixed_step_form" in result:
        field("fixed step", result["fixed_step_form"])
    if "optimum" in result:
        first, *rest = _optimum_lines("", result["optimum"])
        field("optimal h", first)
        lines.extend(rest)
        for order, optimum in result.get("optimum_by_order", {}).items():
            first, *rest = _optimum_lines(f"{order}: ", optimum)
            lines.append(INDENT + first)
            lines.extend(rest)
    rate = result.get("rate") or result.get("optimum", {}).get("rate")
    if rate is not None:
        field("rate", f"L^({rate}) at the optimal step" if "optimum" in result
              else f"L^({rate})")
    if "decreasing_steps" in result:
        decay = result["decreasing_steps"]
        log = " up to a log factor" if decay["logarithmic"] else ""
        field("decreasing", f"h_l = {decay['schedule']}: best α = {decay['best_decay']}, "
                            f"rate L^({decay['rate']}){log} (term exponents "
                            f"{', '.join(decay['term_exponents'])}, valid for "
                            f"{decay['admissible']})")
    if result.get("derivative_signs"):
        field("signs", ", ".join(f"∂/∂{k} {v}" for k, v in result["derivative_signs"].items()))
    for i, relation in enumerate(data["relations"]):
        mark = "holds" if relation["holds"] else "FAILS"
        field("relations" if i == 0 else "",
              f"{mark}: {relation['claim']} — {relation['detail']}")
    if bound.notes:
        field("notes", bound.notes)
    return lines


def main(args: argparse.Namespace) -> int:
    if args.bounds_command == "list":
        _list()
        return 0
    if args.expression is not None:
        try:
            bounds = [_user_bound(args)]
        except ValueError as error:
            print(f"workbench: error: --expression: {error}", file=sys.stderr)
            return 2
    else:
        bounds = _registered(args.names)
        if bounds is None:
            return 2
    try:
        if args.json:
            from bounds import analysis

            text = json.dumps([analysis.report(b) for b in bounds], indent=2,
                              ensure_ascii=False)
        else:
            text = "\n\n".join("\n".join(_show(b)) for b in bounds)
    except (ValueError, RecursionError, OverflowError) as error:
        if args.expression is None:
            raise  # a registered bound that cannot be analysed is a failure, not an input
        # NotPowerForm (a ValueError) and sympy's own limits on a hostile expression
        reason = str(error).splitlines()[0] if str(error) else type(error).__name__
        print(f"workbench: error: --expression: cannot be analysed as a bound: {reason}",
              file=sys.stderr)
        return 2
    print(text)
    return 0


def _user_bound(args: argparse.Namespace) -> Bound:
    if args.names:
        raise ValueError("give bound names or --expression, not both")
    from bounds.parse import parse_assumptions, user_bound

    try:
        assumptions = parse_assumptions(args.assume)
    except ValueError as error:
        raise ValueError(f"--assume {error}") from None
    return user_bound(args.expression, quantity=args.quantity, assumptions=assumptions)


def _registered(names: list[str]) -> list[Bound] | None:
    from bounds import registry

    names = names or registry.names()
    unknown = [name for name in names if name not in registry.BOUNDS]
    if unknown:
        print(f"workbench: error: unknown bound {', '.join(unknown)}; see `workbench bounds "
              f"list` (known: {', '.join(registry.names())})", file=sys.stderr)
        return None
    return [registry.get(name) for name in names]
