"""The API reference builds from the docstrings with no warning (scripts/api_reference.py).

A control package with a name in ``__all__`` that does not exist and an annotation that cannot
be resolved must produce warnings, so a clean build is evidence, not a silent pass.
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


@pytest.mark.slow
def test_the_reference_builds_without_warnings(tmp_path):
    """Every public module of dp_experts_env and agents (about 100 pages, ~25 s CPU)."""
    assert api_reference.main([str(tmp_path / "api")]) == 0
    pages = {p.relative_to(tmp_path / "api").as_posix() for p in (tmp_path / "api").rglob("*.html")}
    assert {"dp_experts_env.html", "agents.html", "agents/registry.html"} <= pages
    assert len(pages) >= 90
