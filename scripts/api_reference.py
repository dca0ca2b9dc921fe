"""Build the API reference (HTML) from the docstrings: ``python scripts/api_reference.py [OUT]``.

Documents every public module of ``dp_experts_env`` and ``agents`` (a module whose dotted name
has a part starting with ``_`` is private and left out) with pdoc (the ``test`` extra installs
it), Google docstrings. Every warning pdoc raises (an annotation it cannot resolve, a name in
``__all__`` that does not exist) is an error: the command prints them and exits 1.
tests/test_api_reference.py runs it in CI. The default folder is ``build/api`` (untracked).
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import importlib
import inspect
import pkgutil
import sys
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


def public_modules(packages: tuple[str, ...] = ("dp_experts_env", "agents")) -> list[str]:
    """Dotted names of the public modules of ``packages``, packages first, in walk order."""
    names: list[str] = []
    for name in packages:
        package = importlib.import_module(name)
        names.append(name)
        for info in pkgutil.walk_packages(package.__path__, f"{name}."):
            if not any(part.startswith("_") for part in info.name.split(".")):
                names.append(info.name)
    return names


def _resolve_lazy_exports(names: list[str]) -> None:
    """Put names that packages load on first use (PEP 562) into their ``__dict__``.

    pdoc reads ``__all__`` names from a module's ``__dict__``; the lazy ones (env classes,
    audit statistics, evaluation helpers) would otherwise be reported as unresolvable.
    """
    for name in names:
        module = importlib.import_module(name)
        for attr in getattr(module, "__all__", ()):
            if attr not in vars(module) and hasattr(module, attr):  # a missing one pdoc reports
                setattr(module, attr, getattr(module, attr))


def _pdoc_specs(names: list[str]) -> list[str]:
    """The names pdoc must be given: a package without ``__all__`` already brings its modules."""
    walked = {n for n in names if "." in n and not hasattr(_parent(n), "__all__")}
    return [n for n in names if n not in walked]


def _parent(name: str) -> object:
    return importlib.import_module(name.rpartition(".")[0])


@dataclass
class Memo:
    """A memo's lookups: ``hits`` answered from its table, ``misses`` computed and stored."""

    hits: int = 0
    misses: int = 0

    def __call__(self, table: dict, key: Any, compute: Callable[[], Any]) -> Any:
        """The value stored under ``key``, computed and stored on the first request."""
        if key in table:
            self.hits += 1
        else:
            self.misses += 1
            table[key] = compute()
        return table[key]


@dataclass
class SourceMemos:
    """The memos of :func:`memoised_sources`.

    ``lines``: source lines per object; ``pages``: "View source" highlights per key; ``trees``:
    syntax trees per source text; ``signatures``: highlighted signature parts per text.
    """

    lines: Memo = field(default_factory=Memo)
    pages: Memo = field(default_factory=Memo)
    trees: Memo = field(default_factory=Memo)
    signatures: Memo = field(default_factory=Memo)


@contextlib.contextmanager
def memoised_sources() -> Iterator[SourceMemos]:
    """Within the block, pdoc reads each object's source lines and highlights each source once.

    pdoc documents an object once per page that shows it (a re-exported class on its package's
    page and its module's), and for each of them asks ``inspect.getsourcelines`` twice (the
    source and its line numbers); for a class, Python 3.11's ``inspect`` parses the class's whole
    file every time. Both answers are functions of the object (files do not change during a
    build), and pdoc's "View source" highlight a function of the source, the anchor prefix and
    the first line number (pdoc's formatter is otherwise fixed): memoising them changes no byte
    of the pages (``tests/test_api_reference.py``).

    Two more memos of pure functions: ``ast.parse`` per text and arguments (``inspect`` parses a
    class's whole file to find its first line, once per class, and pdoc parses each module's
    file again; the trees are only read), and the highlight of a signature's parts per text
    (pdoc highlights every parameter of every signature with one fixed lexer and formatter:
    about 14,000 parts, 1,300 distinct).
    """
    import pdoc.render
    import pdoc.render_helpers
    import pygments

    memos = SourceMemos()
    lines_of: dict[int, tuple[Any, list[str], int]] = {}
    pages: dict[tuple[str, str, int], Any] = {}
    trees: dict[tuple[Any, ...], ast.AST] = {}
    signatures: dict[str, str] = {}
    getsourcelines = inspect.getsourcelines
    highlight = pdoc.render.env.filters["highlight"]
    parse = ast.parse
    pygments_highlight = pygments.highlight
    helpers = pdoc.render_helpers

    def cached_lines(obj: Any) -> tuple[list[str], int]:
        # Keyed by identity (equal objects may have other sources); the entry keeps the object
        # alive, so its id is not reused during the build.
        _, lines, start = memos.lines(lines_of, id(obj), lambda: (obj, *getsourcelines(obj)))
        return list(lines), start  # a fresh list per caller, as inspect returns

    def cached_highlight(doc: Any) -> Any:
        if isinstance(doc, str):  # pdoc's deprecated form: left to pdoc
            return highlight(doc)
        start = doc.source_lines[0] + 1 if doc.source_lines else 1
        key = (doc.source, doc.qualname or "L", start)
        return memos.pages(pages, key, lambda: pdoc.render_helpers.highlight.__wrapped__(doc))

    def cached_parse(source: Any, *args: Any, **kwargs: Any) -> Any:
        if not isinstance(source, str):  # bytes, an AST: left to ast
            return parse(source, *args, **kwargs)
        key = (source, args, tuple(sorted(kwargs.items())))
        return memos.trees(trees, key, lambda: parse(source, *args, **kwargs))

    def cached_signature_part(code: Any, lexer: Any, formatter: Any, *args: Any) -> Any:
        if args or formatter is not helpers.signature_formatter or lexer is not helpers.lexer:
            return pygments_highlight(code, lexer, formatter, *args)
        return memos.signatures(
            signatures, code, lambda: pygments_highlight(code, lexer, formatter)
        )

    # Compiled templates bind their filters: none compiled with one filter serves the other.
    pdoc.render.env.cache.clear()
    inspect.getsourcelines = cached_lines  # inspect.getsource reads it too (a module global)
    pdoc.render.env.filters["highlight"] = cached_highlight
    ast.parse = cached_parse  # inspect and pdoc call it through the module
    pygments.highlight = cached_signature_part  # pdoc's format_signature, likewise
    try:
        yield memos
    finally:
        inspect.getsourcelines = getsourcelines
        pdoc.render.env.filters["highlight"] = highlight
        ast.parse = parse
        pygments.highlight = pygments_highlight
        pdoc.render.env.cache.clear()


def build(
    out: Path,
    packages: tuple[str, ...] = ("dp_experts_env", "agents"),
    *,
    memoise: bool = True,
) -> list[str]:
    """Write the reference into ``out``; returns the warnings pdoc raised (empty when clean).

    ``memoise=False`` builds with pdoc's own caches only (the same bytes, slower; see
    :func:`memoised_sources`).
    """
    import pdoc
    import pdoc.render

    names = public_modules(packages)
    _resolve_lazy_exports(names)
    pdoc.render.configure(docformat="google")
    memos = memoised_sources() if memoise else contextlib.nullcontext()
    with warnings.catch_warnings(record=True) as caught, memos:
        warnings.simplefilter("always")
        pdoc.pdoc(*_pdoc_specs(names), output_directory=out)
    return sorted({f"{w.category.__name__}: {w.message}" for w in caught})


def main(argv: list[str] | None = None) -> int:
    """Command line: build, print any warning, exit 1 if there was one."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", nargs="?", default="build/api", type=Path)
    args = parser.parse_args(argv)
    problems = build(args.out)
    for line in problems:
        print(line, file=sys.stderr)
    pages = sum(1 for _ in args.out.rglob("*.html"))
    print(f"API reference: {pages} pages in {args.out}; {len(problems)} warnings")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
