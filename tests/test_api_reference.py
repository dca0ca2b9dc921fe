"""The API reference builds from the docstrings with no warning (scripts/api_reference.py).

A control package with a name in ``__all__`` that does not exist and an annotation that cannot
be resolved must produce warnings, so a clean build is evidence, not a silent pass. The build's
memos (``memoised_sources``) are held to pdoc's own output byte for byte on a planted package.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))

pytest.importorskip("pdoc")

import api_reference  # noqa: E402


def test_a_broken_package_is_reported(tmp_path, monkeypatch):
    pkg = tmp_path / "src" / "broken_docs_pkg"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text(
        '"""A package whose reference cannot be built cleanly."""\n'
        '__all__ = ["missing"]\n'
    )
    (pkg / "mod.py").write_text(
        '"""Module."""\n'
        "from __future__ import annotations\n\n\n"
        "def f(x: NotDefinedAnywhere) -> int:\n"
        '    """Doc."""\n'
        "    return 1\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path / "src"))
    problems = api_reference.build(tmp_path / "out", packages=("broken_docs_pkg",))
    assert any("missing" in p for p in problems), problems
    assert any("NotDefinedAnywhere" in p for p in problems), problems


_TWINS = '''"""Module {name}."""


class {cls}:
    """A class whose method has the same source as its twin's."""

    def value(self) -> int:
        """Doc."""
        return 1


def shared() -> int:
    """The same source and line in both modules."""
    return 2


class {cls}Again:
    """A second class of the file: inspect parses the file again to find it."""

    def value(self, scale: float = 1.0) -> float:
        """Doc."""
        return scale
'''


def test_memoised_sources_write_the_same_bytes(tmp_path, monkeypatch):
    """The build's memos (source lines per object, highlights) change no byte of the pages.

    The planted package re-exports a class (pdoc documents it on two pages: the memos answer the
    second), has two methods with one source under other qualified names and lines (their anchors
    differ: the highlight key must hold both), and two functions with one source, name and line
    in two modules (one highlight serves both). A second class in each file makes ``inspect``
    parse the file again (the tree memo answers), and parameters repeat (the signature memo).
    """
    pkg = tmp_path / "src" / "twin_docs_pkg"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text(
        '"""Twins."""\nfrom twin_docs_pkg.a import First\n\n__all__ = ["First"]\n'
    )
    (pkg / "a.py").write_text(_TWINS.format(name="a", cls="First"))
    (pkg / "b.py").write_text("\n" + _TWINS.format(name="b", cls="Second"))
    monkeypatch.syspath_prepend(str(tmp_path / "src"))
    with api_reference.memoised_sources() as memos:
        memoised = api_reference.build(
            tmp_path / "memo", packages=("twin_docs_pkg",), memoise=False
        )
    plain = api_reference.build(tmp_path / "plain", packages=("twin_docs_pkg",), memoise=False)
    assert plain == memoised == []
    files = sorted(p.relative_to(tmp_path / "plain") for p in (tmp_path / "plain").rglob("*"))
    assert files == sorted(p.relative_to(tmp_path / "memo") for p in (tmp_path / "memo").rglob("*"))
    for name in files:
        if (tmp_path / "plain" / name).is_file():
            assert (tmp_path / "plain" / name).read_bytes() == (
                tmp_path / "memo" / name
            ).read_bytes(), f"{name} differs with the memos"
    assert memos.lines.hits > 0 and memos.pages.hits > 0, (memos.lines, memos.pages)
    assert memos.trees.hits > 0 and memos.signatures.hits > 0, (memos.trees, memos.signatures)
    first = (tmp_path / "memo" / "twin_docs_pkg" / "a.html").read_text()
    second = (tmp_path / "memo" / "twin_docs_pkg" / "b.html").read_text()
    assert 'id="First.value-' in first and 'id="Second.value-' in second


@pytest.mark.slow
def test_the_reference_builds_without_warnings(tmp_path):
    """Every public module of dp_experts_env and agents (about 100 pages, ~25 s CPU)."""
    assert api_reference.main([str(tmp_path / "api")]) == 0
    pages = {p.relative_to(tmp_path / "api").as_posix() for p in (tmp_path / "api").rglob("*.html")}
    assert {"dp_experts_env.html", "agents.html", "agents/registry.html"} <= pages
    assert len(pages) >= 90
