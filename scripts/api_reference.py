"""Build the API reference (HTML) from the docstrings: ``python scripts/api_reference.py [OUT]``.

Documents every public module of ``dp_experts_env`` and ``agents`` (a module whose dotted name
has a part starting with ``_`` is private and left out) with pdoc (the ``test`` extra installs
it), Google docstrings. Every warning pdoc raises (an annotation it cannot resolve, a name in
``__all__`` that does not exist) is an error: the command prints them and exits 1.
tests/test_api_reference.py runs it in CI. The default folder is ``build/api`` (untracked).
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys
import warnings
from pathlib import Path


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


def build(out: Path, packages: tuple[str, ...] = ("dp_experts_env", "agents")) -> list[str]:
    """Write the reference into ``out``; returns the warnings pdoc raised (empty when clean)."""
    import pdoc
    import pdoc.render

    names = public_modules(packages)
    _resolve_lazy_exports(names)
    pdoc.render.configure(docformat="google")
    with warnings.catch_warnings(record=True) as caught:
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
