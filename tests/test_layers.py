"""The package's modules import only downward, and no two modules import each other.

Every module under python/ccbench/ is parsed (not imported) and every import
in it is counted, also those inside functions and under ``TYPE_CHECKING``.
A module belongs to the layer of its subpackage; a module may import from
its own layer and the layers below it, never from a layer above. Among the
imports that run (all but those under ``TYPE_CHECKING``, which only name
types for annotations) there is no cycle.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "python" / "ccbench"

#: Bottom to top. "ccbench" is the package's __init__: the public API, on top of the library.
LAYERS: list[tuple[str, ...]] = [
    ("ccbench._core", "ccbench.core"),  # the native simulator; errors, files, worker processes, PNG writing
    ("ccbench.simulate",),  # one scenario: run it, its Result and tables, its figures and page
    ("ccbench.formats",),  # a run's tables as pcap and flent files; the emulator's output as a run
    ("ccbench.plan",),  # suites: parsing and planning, the expression language, grid search, suite.json
    ("ccbench.report",),  # reports of stored runs and suites: tables, pages, figures
    ("ccbench.sweep",),  # running suites (processes, Dask), sweeps as frames, explorations
    ("ccbench.cli", "ccbench.__main__", "ccbench"),  # the command line and the public API
]


def _modules() -> dict[str, Path]:
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


MODULES = _modules()
#: The extension module (maturin builds it as ccbench/_core*.so, beside the Python sources).
NATIVE = "ccbench._core"


def _layer(module: str) -> int:
    best, index = "", -1
    for i, names in enumerate(LAYERS):
        for name in names:
            # "ccbench" is the package's __init__ only, not a prefix of every module
            inside = module == name or (name != "ccbench" and module.startswith(name + "."))
            if inside and len(name) > len(best):
                best, index = name, i
    assert index >= 0, f"{module} is in no layer: add it to LAYERS"
    return index


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _target(module: str, name: str | None) -> str:
    """The ccbench module an import reaches: ``from a.b import c`` is module a.b.c if there is one."""
    if name is not None and (f"{module}.{name}" in MODULES or f"{module}.{name}" == NATIVE):
        return f"{module}.{name}"
    return module


def imports(module: str) -> list[tuple[str, int, bool]]:
    """(imported ccbench module, line, only for type checking) for every import in ``module``."""
    path = MODULES[module]
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: list[tuple[str, int, bool]] = []

    def visit(node: ast.AST, typing_only: bool) -> None:
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            for child in node.body:
                visit(child, True)
            for child in node.orelse:
                visit(child, typing_only)
            return
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == "ccbench" or alias.name.startswith("ccbench."):
                    found.append((_target(alias.name, None), node.lineno, typing_only))
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join(up + ([base] if base else []))
            if base == "ccbench" or base.startswith("ccbench."):
                for alias in node.names:
                    found.append((_target(base, alias.name), node.lineno, typing_only))
        for child in ast.iter_child_nodes(node):
            visit(child, typing_only)

    visit(tree, False)
    return found


def test_every_module_is_in_a_layer() -> None:
    for module in MODULES:
        _layer(module)


def test_no_module_imports_a_higher_layer() -> None:
    upward = []
    for module in MODULES:
        own = _layer(module)
        for target, line in sorted({(t, n) for t, n, _ in imports(module)}, key=lambda x: (x[1], x[0])):
            if _layer(target) > own:
                upward.append(f"{MODULES[module].relative_to(PACKAGE.parent)}:{line}: {module} "
                              f"(layer {own}) imports {target} (layer {_layer(target)})")
    assert not upward, "imports of a higher layer:\n" + "\n".join(upward)


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module, or of one that imports itself (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def connect(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                connect(w)
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
            if len(component) > 1 or v in graph.get(v, ()):
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            connect(v)
    return found


def test_no_import_cycles() -> None:
    graph = {m: {t for t, _, typing_only in imports(m) if not typing_only and t in MODULES} for m in MODULES}
    cycles = _cycles(graph)
    assert not cycles, "modules that import each other (directly or through others):\n" + "\n".join(
        " <-> ".join(c) for c in cycles)
