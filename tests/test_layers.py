"""The import graph of the product packages: no cycle, and no import against the layers.

The graph is built from the source with :mod:`ast` (nothing is imported), and counts every
import statement wherever it stands — inside functions and ``if TYPE_CHECKING:`` blocks
included, since an import inside a function is how a cycle hides. The layers are the ones
declared once, in ``workbench.LAYERS`` (read from the source too): ``app`` above
``workbench``, which lies above ``simulators`` and ``bounds``; inside ``workbench`` a module
imports from lower layers or its own package only.

Negative controls: a cyclic fixture, an upward import hidden in a function, a sideways import
and a ``bounds`` module importing the workbench must each be reported.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PRODUCT = ("simulators", "bounds", "workbench", "app")
OUTER = {"simulators": 0, "bounds": 0, "workbench": 1, "app": 2}


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def import_graph(root: Path, packages=PRODUCT) -> dict[str, dict[str, int]]:
    """module -> {imported product module: line}, every import statement counted."""
    files = {module_name(p, root): p for package in packages
             for p in sorted((root / package).rglob("*.py"))}
    graph: dict[str, dict[str, int]] = {}
    for name, path in files.items():
        is_package = path.name == "__init__.py"
        edges: dict[str, int] = {}
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            targets = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = name.split(".") if is_package else name.split(".")[:-1]
                    base = base[:len(base) - node.level + 1]
                    module = ".".join(base + ([node.module] if node.module else []))
                else:
                    module = node.module
                # "from package import module" names the module itself
                targets = [f"{module}.{alias.name}" if f"{module}.{alias.name}" in files
                           else module for alias in node.names]
            for target in targets:
                while target and target not in files:
                    target = target.rpartition(".")[0]
                if target and target != name:
                    edges.setdefault(target, node.lineno)
        graph[name] = edges
    return graph


def cycles(graph: dict[str, dict[str, int]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, {}):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def declared_layers(root: Path) -> dict[str, int]:
    """``workbench.LAYERS`` read from the source: package -> layer number."""
    tree = ast.parse((root / "workbench" / "__init__.py").read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "LAYERS":
            layers = ast.literal_eval(node.value)
            return {package: level for level, group in enumerate(layers) for package in group}
    raise AssertionError("workbench/__init__.py declares no LAYERS")


def layer_violations(graph: dict[str, dict[str, int]], layers: dict[str, int]) -> list[str]:
    """Every import that runs upward or sideways, as 'importer:line -> imported'."""
    bad = []
    for source, edges in graph.items():
        top = source.split(".")[0]
        for target, line in edges.items():
            target_top = target.split(".")[0]
            where = f"{source}:{line} -> {target}"
            if target_top != top:
                if OUTER[target_top] >= OUTER[top]:
                    bad.append(where)
                continue
            if top != "workbench" or target == "workbench":
                continue  # the root module holds the version and the layers, and imports nothing
            mine, theirs = source.split(".")[1], target.split(".")[1]
            if source == "workbench" or mine == theirs:
                continue
            if mine not in layers or theirs not in layers:
                bad.append(f"{where} (package not in workbench.LAYERS)")
            elif layers[theirs] >= layers[mine]:
                bad.append(where)
    return sorted(bad)


def test_the_product_has_no_import_cycle():
    assert cycles(import_graph(ROOT)) == []


def test_every_import_follows_the_declared_layers():
    assert layer_violations(import_graph(ROOT), declared_layers(ROOT)) == []


def test_every_workbench_package_is_in_a_layer():
    layers = declared_layers(ROOT)
    packages = {p.parent.name for p in (ROOT / "workbench").glob("*/__init__.py")}
    modules = {p.stem for p in (ROOT / "workbench").glob("*.py") if p.stem != "__init__"}
    assert packages | modules == set(layers)


def _write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def test_negative_control_a_cycle_through_a_function_import_is_found(tmp_path):
    _write(tmp_path, {
        "workbench/__init__.py": 'LAYERS = (("core",), ("engine",))\n',
        "workbench/core/__init__.py": "",
        "workbench/engine/__init__.py": "",
        "workbench/engine/a.py": "from workbench.engine import b\n",
        "workbench/engine/b.py": "def f():\n    from workbench.engine.a import g\n",
    })
    graph = import_graph(tmp_path, ("workbench",))
    assert cycles(graph) == [["workbench.engine.a", "workbench.engine.b"]]


def test_negative_control_upward_sideways_and_outer_imports_are_reported(tmp_path):
    _write(tmp_path, {
        "workbench/__init__.py": 'LAYERS = (("core",), ("data", "stats"), ("engine",))\n',
        "workbench/core/__init__.py": "",
        "workbench/core/low.py": "def f():\n    from workbench.engine import high\n",
        "workbench/data/__init__.py": "",
        "workbench/data/side.py": "import workbench.stats.other\n",
        "workbench/stats/__init__.py": "",
        "workbench/stats/other.py": "",
        "workbench/engine/__init__.py": "",
        "workbench/engine/high.py": "from workbench.core import low\n",
        "bounds/__init__.py": "",
        "bounds/up.py": "import workbench.core.low\n",
        "simulators/__init__.py": "",
        "app/__init__.py": "",
    })
    graph = import_graph(tmp_path)
    assert layer_violations(graph, declared_layers(tmp_path)) == [
        "bounds.up:1 -> workbench.core.low",
        "workbench.core.low:2 -> workbench.engine.high",
        "workbench.data.side:1 -> workbench.stats.other",
    ]
