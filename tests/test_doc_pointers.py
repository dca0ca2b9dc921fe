"""Every pointer from the library into docs/ names a page and a section that exist.

Library docstrings and comments send readers to docs/ for derivations, measurements and history
in the form ``docs/<page>.md, "<section>"`` or ``docs/<page>.md ("<section>"`` (single quotes
too; a pointer may break across lines, comment markers included), or ``docs/<page>.md §<n>``
for a numbered heading. The page must exist, and the section must be a
title on it: a Markdown heading (its number ``3.`` aside), a bold span, or an italic paragraph
title (``*The boundary.*`` at the start of a line). A pointer may name a title's first clause,
up to a colon or bracket ("Cache keys" for "Cache keys: when a stored result is reused"), or end
in ``...``; backticks, case and a trailing period do not count. A page named without a section
must exist.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LIBRARY = ("agents", "dp_experts_env")

# a line break inside a pointer: whitespace, then a comment marker when the pointer is a comment
_BREAK = r"(?:\s*\n\s*(?:#:?\s*)?|[ \t]*)"
# the section in double quotes; ``...`` spans are atomic so a quoted value inside one is kept
_SECTION = r'(?:"((?:``[^`]*``|[^"`]|`[^`]*`)+?)"|\'([^\'\n]+)\')'
POINTER = re.compile(r"docs/([A-Za-z0-9_]+)\.md" + _BREAK + r"[,(]" + _BREAK + _SECTION)
NUMBERED = re.compile(r"docs/([A-Za-z0-9_]+)\.md\s*§\s*(\d+)")
PAGE = re.compile(r"docs/([A-Za-z0-9_/-]+)\.md")
HEADING = re.compile(r"^#{1,6}\s+(?:\d+(?:\.\d+)*\.?\s+)?(.+?)\s*#*$", re.MULTILINE)
BOLD = re.compile(r"\*\*([^*\n]+?)\*\*")
ITALIC_TITLE = re.compile(r"^\s*(?:[-*]\s+)?\*([^*\s][^*\n]*?)\*(?!\*)", re.MULTILINE)


def _norm(text: str) -> str:
    text = re.sub(r"\s*\n\s*(?:#:?\s*)?", " ", text).replace("`", "")
    return re.sub(r"\s+", " ", text).strip().rstrip(".:").strip().lower()


def titles_of(markdown: str) -> set[str]:
    """The section titles a pointer may name on a page: headings, bold spans, italic titles."""
    found = [m.group(1) for rx in (HEADING, BOLD, ITALIC_TITLE) for m in rx.finditer(markdown)]
    return {_norm(t) for t in found}


def names_a_title(section: str, titles: set[str]) -> bool:
    """Whether ``section`` is a title, its clause before punctuation, or one cut with ``...``."""
    cut = section.rstrip().endswith("...")
    want = _norm(section.rstrip()[:-3] if cut else section)
    if cut:
        return bool(want) and any(t.startswith(want) for t in titles)
    return any(t == want or (t.startswith(want) and _clause_ends(t[len(want) :])) for t in titles)


def _clause_ends(rest: str) -> bool:
    # "Cache keys" names "Cache keys: when ..." and "The boundary (re-proved)"; "Cache" does not
    rest = rest.lstrip()
    return bool(rest) and not rest[0].isalnum() and rest[0] not in "'-"


@functools.cache
def _page_titles(page: str) -> set[str] | None:
    path = ROOT / "docs" / f"{page}.md"
    return titles_of(path.read_text(encoding="utf-8")) if path.is_file() else None


def pointers_in(text: str) -> list[tuple[int, str, str]]:
    """``(line, page, section)`` of every sectioned pointer in ``text``."""
    found = [(m.start(), m.group(1), m.group(2) or m.group(3)) for m in POINTER.finditer(text)]
    return [(text.count("\n", 0, at) + 1, page, section) for at, page, section in found]


def broken_pointers(text: str, where: str) -> list[str]:
    """What is wrong with the pointers of one file (empty when every one resolves)."""
    problems = []
    for m in PAGE.finditer(text):
        if _page_titles(m.group(1)) is None:
            line = text.count("\n", 0, m.start()) + 1
            problems.append(f"{where}:{line}: no page docs/{m.group(1)}.md")
    for line, page, section in pointers_in(text):
        titles = _page_titles(page)
        if titles is not None and not names_a_title(section, titles):
            problems.append(f"{where}:{line}: docs/{page}.md has no section {section!r}")
    for m in NUMBERED.finditer(text):
        page = ROOT / "docs" / f"{m.group(1)}.md"
        heading = re.compile(rf"^#{{1,6}}\s+{m.group(2)}\.\s", re.MULTILINE)
        if page.is_file() and not heading.search(page.read_text(encoding="utf-8")):
            line = text.count("\n", 0, m.start()) + 1
            problems.append(f"{where}:{line}: docs/{m.group(1)}.md has no section §{m.group(2)}")
    return problems


def _library_files() -> list[Path]:
    return sorted(p for pkg in LIBRARY for p in (ROOT / pkg).rglob("*.py"))


def test_every_library_pointer_names_an_existing_page_and_section():
    problems, count = [], 0
    for path in _library_files():
        text = path.read_text(encoding="utf-8")
        count += len(pointers_in(text))
        problems += broken_pointers(text, str(path.relative_to(ROOT)))
    # the scan sees the pointers (about 110 at session 13): a regex that matches nothing passes
    assert count >= 80, count
    assert not problems, "\n".join(problems)


# --- controls: the check catches a planted broken pointer and passes a harmless one ---

_PAGE = "# Grid\n\n## 2. Cache keys: when a stored result is reused\n\n**The manifest.** text\n"
_PAGE += "  *The boundary (re-proved).* Fix an epoch\n"


@pytest.mark.parametrize(
    "section",
    [
        "Cache keys",
        "Cache keys: when a stored result is reused",
        "cache KEYS: when a sto...",
        "The manifest",
        "The boundary",
        "``The manifest``",
    ],
)
def test_a_pointer_to_an_existing_section_passes(section):
    assert names_a_title(section, titles_of(_PAGE))


@pytest.mark.parametrize(
    "section",
    ["Cache", "Cache key", "Seeds", "The manifests", "Fix an epoch", "The boundary (proved)"],
)
def test_a_pointer_to_a_missing_section_is_caught(section):
    assert not names_a_title(section, titles_of(_PAGE))


def test_the_file_scan_catches_a_missing_section_and_page_and_reads_broken_lines():
    ok = 'x = 1  # docs/grid.md, "Cache\n    # keys"\n"""See docs/grid.md ("Cache keys")."""\n'
    assert len(pointers_in(ok)) == 2 and not broken_pointers(ok, "ok.py")
    quoted = 'docs/algorithms.md,\n    "private-batched-exp4, ``release="loss"``"'
    assert pointers_in(quoted) == [(1, "algorithms", 'private-batched-exp4, ``release="loss"``')]
    bad = 'y = 2\n"""docs/grid.md, "Cache keys gone"; docs/gird.md."""\n'
    assert broken_pointers(bad, "bad.py") == [
        "bad.py:2: no page docs/gird.md",
        "bad.py:2: docs/grid.md has no section 'Cache keys gone'",
    ]
    # the single-quoted and numbered forms, on the real docs/privacy.md ("## 1. Noise backends")
    assert not broken_pointers("docs/privacy.md §1, docs/privacy.md, 'Noise backends'", "ok.py")
    assert broken_pointers("(docs/privacy.md §9; docs/privacy.md, 'Noise backend')", "b.py") == [
        "b.py:1: docs/privacy.md has no section 'Noise backend'",
        "b.py:1: docs/privacy.md has no section §9",
    ]
