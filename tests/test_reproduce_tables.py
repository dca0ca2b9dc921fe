"""docs/reproduce.md's generated tables equal scripts/reproduce_tables.py's output (issue 36)."""

from __future__ import annotations

import re
import runpy
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "reproduce.md"
MARKER = re.compile(
    r"<!-- generated: python scripts/reproduce_tables.py (\S+) -->\n(.*?)\n<!-- end generated -->",
    re.S,
)


def _script():
    return runpy.run_path(str(ROOT / "scripts" / "reproduce_tables.py"))


def test_every_generated_table_equals_the_scripts_output():
    script = _script()
    blocks = MARKER.findall(DOC.read_text())
    assert blocks, "docs/reproduce.md has no generated table"
    for source, shown in blocks:
        want = script["table"](script["read"](ROOT / source))
        assert shown.strip() == want.strip(), f"regenerate the table from {source}"


def test_a_stale_table_is_caught():
    """The mutant: one verdict edited in the docs' copy no longer equals the script's output."""
    script = _script()
    ((source, shown),) = MARKER.findall(DOC.read_text())[:1]
    want = script["table"](script["read"](ROOT / source))
    edited = shown.replace("**holds**", "**fails**", 1)
    assert edited != shown and edited.strip() != want.strip()
