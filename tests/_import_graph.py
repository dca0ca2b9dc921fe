"""The import graph of the project's packages, read from their source (no module is imported).

Shared by tests/test_layers.py (no upward import) and tests/test_seams.py (no private name
across modules, no circle). What counts as an import of module A by module B:

* every ``import X`` and ``from X import y`` statement of B, at module level or inside a
  function or class (a lazy import runs when the function does), relative ones resolved;
  ``from P import m`` where ``P.m`` is a module of the project imports ``P.m``;
* ``importlib.import_module("X")`` / ``import_module("X")`` with a literal string;
* statements under ``if TYPE_CHECKING:`` are kept with ``typing_only=True``: they name a
  module's names (the seams test counts them) but never run (the graph leaves them out);
* not: names computed at run time
  (``import_module(f"...")``, plug-ins by name), nor the parent packages that Python runs
  before a submodule (``import a.b`` counts as an import of ``a.b`` only).
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: The project's top-level packages.
PACKAGES = ("agents", "dp_experts_env")

__all__ = [
    "PACKAGES",
    "ROOT",
    "Import",
    "circles",
    "graph",
    "imports_of",
    "project_imports",
    "private_attribute_reads",
    "project_modules",
]


@dataclass(frozen=True)
class Import:
    """One import statement's view of one name.

    Attributes:
        importer: the importing module's dotted name (``"dp_experts_env.cli"``).
        path: the importing file, relative to the root (``"dp_experts_env/cli.py"``).
        module: the module named by the statement, relative imports resolved.
        name: the name taken from it (``from module import name``), or None for ``import module``.
        target: the module this makes B depend on: ``module.name`` when that is a module of
            the tree, else ``module``.
        line: the statement's line.
        lazy: True inside a function body.
        typing_only: True under ``if TYPE_CHECKING:`` (never executed).
    """

    importer: str
    path: str
    module: str
    name: str | None
    target: str
    line: int
    lazy: bool
    typing_only: bool = False


def project_modules(root: Path = ROOT, packages: Iterable[str] = PACKAGES) -> dict[str, Path]:
    """Dotted name -> file of each module of ``packages`` (a package is its ``__init__``)."""
    found = {}
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            parts = list(path.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _literal_import_module(node: ast.Call) -> str | None:
    func = node.func
    called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
    if called != "import_module" or not node.args:
        return None
    arg = node.args[0]
    return arg.value if isinstance(arg, ast.Constant) and isinstance(arg.value, str) else None


@functools.lru_cache(maxsize=1024)
def parse(path: Path) -> ast.Module:
    """The syntax tree of ``path`` (cached: each file is parsed once per test run)."""
    return ast.parse(path.read_text(), filename=str(path))


def _dotted(node: ast.expr) -> str | None:
    """``a.b.c`` for a chain of attributes on a name, else None."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    return ".".join([node.id, *reversed(parts)])


def imports_of(
    path: Path, module: str, modules: Mapping[str, Path], root: Path = ROOT
) -> list[Import]:
    """Every import of the file ``path`` (module ``module``), in source order."""
    is_package = path.name == "__init__.py"
    package = module.split(".") if is_package else module.split(".")[:-1]
    rel = path.relative_to(root).as_posix()
    found: list[Import] = []

    typing_only = False

    def add(named: str, name: str | None, line: int, lazy: bool) -> None:
        target = f"{named}.{name}" if name and f"{named}.{name}" in modules else named
        found.append(Import(module, rel, named, name, target, line, lazy, typing_only))

    def visit(node: ast.AST, lazy: bool) -> None:
        nonlocal typing_only
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _is_type_checking(child.test) and not typing_only:
                typing_only = True
                for stmt in child.body:
                    visit_one(stmt, lazy)
                typing_only = False
                for stmt in child.orelse:
                    visit_one(stmt, lazy)
                continue
            visit_one(child, lazy)

    def visit_one(child: ast.AST, lazy: bool) -> None:
        if isinstance(child, ast.Import):
            for alias in child.names:
                add(alias.name, None, child.lineno, lazy)
        elif isinstance(child, ast.ImportFrom):
            if child.level:
                base = package[: len(package) - (child.level - 1)]
                named = ".".join(base + ([child.module] if child.module else []))
            else:
                named = child.module or ""
            for alias in child.names:
                add(named, alias.name, child.lineno, lazy)
        elif isinstance(child, ast.Call) and (text := _literal_import_module(child)):
            add(text, None, child.lineno, lazy)
        inner = lazy or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
        visit(child, inner)

    visit(parse(path), False)
    return found


def private_attribute_reads(path: Path, modules: Mapping[str, Path]) -> list[tuple[str, str, int]]:
    """``(module, name, line)`` for each ``m._name`` where ``m`` is bound to a project module.

    The same private name as ``from m import _name``, reached through the module object.
    """
    tree = parse(path)
    bound: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name in modules:
                    bound[alias.asname or alias.name] = alias.name
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for alias in node.names:
                if f"{node.module}.{alias.name}" in modules:
                    bound[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    reads = []
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and node.attr.startswith("_")
            and not node.attr.startswith("__")
        ):
            owner = _dotted(node.value)
            if owner in bound:
                reads.append((bound[owner], node.attr, node.lineno))
    return reads


@functools.lru_cache(maxsize=4)
def project_imports(root: Path = ROOT, packages: tuple[str, ...] = PACKAGES) -> tuple[Import, ...]:
    """Every import of every module of ``packages`` (cached: the tree is parsed once per run)."""
    modules = project_modules(root, packages)
    return tuple(i for name, path in modules.items() for i in imports_of(path, name, modules, root))


def graph(imports: Iterable[Import], modules: Iterable[str]) -> dict[str, set[str]]:
    """Module -> the project modules it imports when it runs (outside modules dropped)."""
    known = set(modules)
    edges: dict[str, set[str]] = {m: set() for m in known}
    for item in imports:
        if item.typing_only:
            continue
        if item.target in known and item.target != item.importer:
            edges[item.importer].add(item.target)
    return edges


def circles(edges: Mapping[str, Iterable[str]]) -> list[tuple[str, ...]]:
    """The strongly connected components of more than one module, each sorted (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[tuple[str, ...]] = []

    def connect(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(edges.get(v, ())):
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
            if len(component) > 1:
                found.append(tuple(sorted(component)))

    for v in sorted(edges):
        if v not in index:
            connect(v)
    return sorted(found)
