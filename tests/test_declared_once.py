"""Every configuration parameter is declared once: one ``Parameter(...)`` call per name in
``workbench/``.

A user that needs its own default, help or validator takes ``dataclasses.replace`` of the one
declaration (:mod:`workbench.run.parameters` holds the shared run and sampling ones, each
system its own), so a name cannot drift into two types, validators or meanings. The scan reads
the source with :mod:`ast` (nothing is imported) and counts calls of ``Parameter`` and of its
subclasses defined in ``workbench/`` (``ValidatedParameter``, ``ExpressionListParameter``, ...),
called by name or as an attribute, whose name is a literal.

Negative controls: a synthetic source declaring a name twice, directly or through a subclass,
must be reported.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: names declared twice on purpose, with the reason
EXCEPTIONS: dict[str, str] = {}  # none left: the logistic data source is data_source


def _called_name(func: ast.expr) -> str | None:
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return None


def parameter_classes(trees: list[ast.Module]) -> set[str]:
    """``Parameter`` and every class of these modules derived from it, by name."""
    classes = {"Parameter"}
    grew = True
    while grew:
        grew = False
        for tree in trees:
            for node in ast.walk(tree):
                if (isinstance(node, ast.ClassDef) and node.name not in classes
                        and any(_called_name(base) in classes for base in node.bases)):
                    classes.add(node.name)
                    grew = True
    return classes


def _literal_name(call: ast.Call) -> str | None:
    arguments = call.args[:1] + [k.value for k in call.keywords if k.arg == "name"]
    for argument in arguments:
        if isinstance(argument, ast.Constant) and isinstance(argument.value, str):
            return argument.value
    return None


def declarations(sources: dict[str, str]) -> dict[str, list[str]]:
    """Parameter name -> the ``path:line`` of every constructor call with that literal name."""
    trees = {path: ast.parse(text, path) for path, text in sources.items()}
    classes = parameter_classes(list(trees.values()))
    found: dict[str, list[str]] = {}
    for path, tree in trees.items():
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and _called_name(node.func) in classes:
                name = _literal_name(node)
                if name is not None:
                    found.setdefault(name, []).append(f"{path}:{node.lineno}")
    return found


def declared_more_than_once(sources: dict[str, str]) -> dict[str, list[str]]:
    return {name: places for name, places in declarations(sources).items() if len(places) > 1}


def workbench_sources() -> dict[str, str]:
    return {str(p.relative_to(ROOT)): p.read_text()
            for p in sorted((ROOT / "workbench").rglob("*.py"))}


def test_every_parameter_name_is_declared_once():
    repeated = {name: places for name, places in declared_more_than_once(workbench_sources())
                .items() if name not in EXCEPTIONS}
    assert not repeated, "declared more than once (declare once, reuse it or "\
        "dataclasses.replace it):\n" + "\n".join(f"{name}: {', '.join(places)}"
                                                 for name, places in sorted(repeated.items()))


def test_exceptions_are_still_needed():
    repeated = declared_more_than_once(workbench_sources())
    assert set(EXCEPTIONS) <= set(repeated), \
        f"declared once now, drop from EXCEPTIONS: {sorted(set(EXCEPTIONS) - set(repeated))}"


def test_the_scan_sees_the_known_declarations():
    found = declarations(workbench_sources())
    for name in ("batch_size", "n_replicates", "confidence", "arguments", "test_functions"):
        assert len(found.get(name, ())) == 1, name


def test_negative_control_a_name_declared_twice_is_reported():
    source = ('from workbench.core.parameters import Parameter\n'
              'A = Parameter("x", 1, "first")\n'
              'B = (Parameter("x", 2, "second"), Parameter("y", 1.0, "once"))\n')
    assert declared_more_than_once({"synthetic.py": source}) == {
        "x": ["synthetic.py:2", "synthetic.py:3"]}


def test_negative_control_subclasses_and_keywords_count():
    first = ('from workbench.core import parameters\n'
             'class Table(parameters.Parameter):\n'
             '    pass\n'
             'class Nested(Table):\n'
             '    pass\n'
             'T = Table("z", {}, "a table")\n')
    second = ('from other import Nested, Parameter\n'
              'N = Nested(name="z", default={}, help="again")\n'
              'P = Parameter(name="w", default=1, help="once")\n')
    assert declared_more_than_once({"a.py": first, "b.py": second}) == {
        "z": ["a.py:6", "b.py:2"]}
