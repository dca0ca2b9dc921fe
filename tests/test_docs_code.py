"""Every fenced code block of README.md and docs/*.md runs as written.

How each block is run, by its fence's language:

* ``python`` -- run as a script (``__name__ == "__main__"``) in a fresh interpreter, in a
  temporary working directory (results folders land there). The python blocks of one file form
  one session, in order: a block may use what an earlier block of the same file defined (the
  docs say "continuing the example above" where they do). The session runs once per page and
  test run (:func:`_page_session`), up to the page's last python block the run selected; each
  block's test reads whether the session got through that block (its earlier blocks first, as
  a session it always was), so a page of n blocks costs one interpreter, not n.
* ``bash`` -- run with ``bash -euo pipefail`` in a temporary working directory that links the
  repository's ``examples/`` and ``benchmarks/``; ``dp-experts`` and ``python`` mean this
  checkout's command and interpreter. Commands are written with small sizes so they run in
  seconds.
* ``toml`` -- a grid file: read with ``Grid.from_toml`` (parsed and validated, not run).
* ``text`` -- a figure or a folder listing, not code.

The python and bash blocks of a page in ``RUN_ELSEWHERE`` are run by the test named there (each
block alone, as a newcomer pastes it), not again here: they skip with that test's name, and
``test_pages_run_elsewhere_are_covered`` checks that the test runs exactly the page's blocks.

A block that must not run carries a marker on the line before its fence:
``<!-- doc-test: skip (reason) -->`` (a signature listing, an install command, a command that
runs for minutes and whose test-size version is tested elsewhere); ``<!-- doc-test: slow -->``
runs the block in a test marked slow. An unmarked block that does not run fails, and so does a
block in a language this test does not know.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
KNOWN = ("python", "bash", "toml", "text")
_FENCE = re.compile(r"^(\s*)(`{3,}|~{3,})\s*([\w+-]*)\s*$")
_MARKER = re.compile(r"^\s*<!--\s*doc-test:\s*(skip|slow)\s*(?:\((.+)\))?\s*-->\s*$")
TIMEOUT = 300
#: Modules of the optional extras: a block that needs a missing one is skipped, not failed.
OPTIONAL = ("torch", "stable_baselines3", "ray", "dp_accounting", "numba")
#: Pages whose python and bash blocks another test runs (its module's ``BLOCKS``: (lang, code)).
RUN_ELSEWHERE = {"docs/own_learner.md": "test_own_learner_doc"}


@dataclass(frozen=True)
class Block:
    """One fenced block: where it is, its language, its code and its marker."""

    path: Path
    line: int  # 1-based line of the opening fence
    lang: str
    code: str
    marker: str | None  # "skip", "slow" or None
    reason: str | None

    @property
    def where(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"


def blocks_of(path: Path) -> list[Block]:
    """The fenced blocks of a markdown file, with the marker on the line before each."""
    lines = path.read_text().splitlines()
    found, i = [], 0
    while i < len(lines):
        match = _FENCE.match(lines[i])
        if not match:
            i += 1
            continue
        fence, lang = match.group(2), match.group(3)
        end = i + 1
        while end < len(lines) and not lines[end].strip().startswith(fence):
            end += 1
        marker = _MARKER.match(lines[i - 1]) if i > 0 else None
        found.append(
            Block(
                path,
                i + 1,
                lang,
                "\n".join(lines[i + 1 : end]) + "\n",
                marker.group(1) if marker else None,
                marker.group(2) if marker else None,
            )
        )
        i = end + 1
    return found


BLOCKS = [b for path in DOCS for b in blocks_of(path)]


def _param(block: Block):
    slow = block.marker == "slow" or (
        block.lang == "python"
        and any(
            b.marker == "slow"
            for b in BLOCKS
            if b.path == block.path and b.lang == "python" and b.line < block.line
        )
    )
    return pytest.param(block, id=block.where, marks=[pytest.mark.slow] if slow else [])


def _environment() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    env["MPLBACKEND"] = "Agg"
    return env


def _run(command: list[str], cwd: Path, block: Block, script: str) -> None:
    done = subprocess.run(
        command, cwd=cwd, env=_environment(), capture_output=True, text=True, timeout=TIMEOUT
    )
    missing = re.search(r"ModuleNotFoundError: No module named '(\w+)", done.stderr)
    if done.returncode != 0 and missing and missing.group(1) in OPTIONAL:
        pytest.skip(f"{block.where} needs {missing.group(1)} (an optional extra)")
    if done.returncode != 0:
        numbered = "\n".join(f"{n:4d}  {line}" for n, line in enumerate(script.splitlines(), 1))
        pytest.fail(
            f"the {block.lang} block at {block.where} fails (exit {done.returncode}); mark it "
            f"<!-- doc-test: skip (reason) --> if it is deliberately partial.\nscript:\n"
            f"{numbered}\nstdout (tail):\n{done.stdout[-3000:]}\nstderr (tail):\n"
            f"{done.stderr[-5000:]}"
        )


def _python_session(block: Block, upto: int | None = None, progress: Path | None = None) -> str:
    """The file's python blocks (not skipped) up to this one, or to line ``upto``, as one script.

    With ``progress`` each block is followed by a line that appends the block's line number to
    that file (in the main process only: a spawned worker re-runs the script's top level), so
    one run tells which blocks completed.
    """
    last = block.line if upto is None else upto
    parts = []
    for b in BLOCKS:
        if b.path == block.path and b.lang == "python" and b.marker != "skip":
            if b.line > last:
                break
            parts.append(f"# ---- {b.where}\n{b.code}")
            if progress is not None:
                done = f'__import__("builtins").open({str(progress)!r}, "a")'
                parts.append(
                    'if __name__ == "__main__":  # doc-test: block done\n'
                    f'    {done}.write("{b.line}\\n")\n'
                )
    return "\n".join(parts)


@dataclass(frozen=True)
class _Session:
    """One run of a page's python blocks: the blocks that completed and how the process ended."""

    script: str
    done: frozenset[int]  # line numbers of the blocks that ran to their end
    returncode: int
    stdout: str
    stderr: str
    last: int  # the line of the session's last block


@pytest.fixture(scope="module")
def page_sessions() -> dict[tuple[Path, int], _Session]:
    """(page, last block line) -> its session, run once per test run (every block's test reads it).

    State shared across tests, so the numpy-path pass repeats every test of this module, not
    only the one whose session started the process (tests/_path_split.py).
    """
    return {}


def _page_session(
    block: Block, selected: list[Block], folder: Path, sessions: dict[tuple[Path, int], _Session]
) -> _Session:
    """The session of ``block``'s page up to its last python block among ``selected``.

    Not a fresh process per block: a page's blocks were always one session (each block's test
    ran the earlier ones first), and the docs' point is that the page runs in order, which one
    run shows as well; the outcome of block k is the same (its blocks 1..k ran to their end, or
    the first failure among them is reported). A quick run (``-m "not slow"``) selects the
    page's quick prefix only, so the slow blocks stay out of it.
    """
    # A skip-marked block never enters the script: the session ends at the last one that does,
    # so that block's test reads the interpreter's exit status.
    upto = max(
        [block.line]
        + [
            b.line
            for b in selected
            if b.path == block.path and b.lang == "python" and b.marker != "skip"
        ]
    )
    key = (block.path, upto)
    if key not in sessions:
        progress = folder / "doc_blocks_done.txt"
        script = _python_session(block, upto, progress)
        (folder / "doc_block.py").write_text(script)
        done = subprocess.run(
            [sys.executable, "doc_block.py"],
            cwd=folder,
            env=_environment(),
            capture_output=True,
            text=True,
            timeout=TIMEOUT,
        )
        lines = progress.read_text().split() if progress.exists() else []
        sessions[key] = _Session(
            script, frozenset(map(int, lines)), done.returncode, done.stdout, done.stderr, upto
        )
    return sessions[key]


def _check_session(session: _Session, block: Block) -> None:
    """Pass, skip (a missing optional extra) or fail ``block``'s test from its page's session."""
    if block.line in session.done and (block.line != session.last or session.returncode == 0):
        return
    missing = re.search(r"ModuleNotFoundError: No module named '(\w+)", session.stderr)
    if missing and missing.group(1) in OPTIONAL:
        pytest.skip(f"{block.where} needs {missing.group(1)} (an optional extra)")
    numbered = "\n".join(f"{n:4d}  {ln}" for n, ln in enumerate(session.script.splitlines(), 1))
    pytest.fail(
        f"the python block at {block.where} fails (exit {session.returncode} of the page's "
        "session; its first block not completed failed, the later ones with it); mark it "
        f"<!-- doc-test: skip (reason) --> if it is deliberately partial.\nscript:\n"
        f"{numbered}\nstdout (tail):\n{session.stdout[-3000:]}\nstderr (tail):\n"
        f"{session.stderr[-5000:]}"
    )


def _selected_blocks(request: pytest.FixtureRequest) -> list[Block]:
    """The blocks whose ``test_doc_block_runs`` case this test run collected and selected."""
    found = []
    for item in request.session.items:
        callspec = getattr(item, "callspec", None)
        if getattr(item, "originalname", "") == "test_doc_block_runs" and callspec is not None:
            found.append(callspec.params["block"])
    return found


_BASH_PRELUDE = """set -euo pipefail
dp-experts() { "$DOC_TEST_PYTHON" -m dp_experts_env.cli "$@"; }
python() { "$DOC_TEST_PYTHON" "$@"; }
export -f dp-experts python
"""


@pytest.mark.parametrize("block", [_param(b) for b in BLOCKS])
def test_doc_block_runs(
    block: Block,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    request: pytest.FixtureRequest,
    page_sessions: dict[tuple[Path, int], _Session],
) -> None:
    if block.marker == "skip":
        assert block.reason, f"{block.where}: a skip marker needs a reason: skip (why)"
        pytest.skip(f"marked in the doc: {block.reason}")
    if block.lang == "text":
        return
    elsewhere = RUN_ELSEWHERE.get(str(block.path.relative_to(ROOT)))
    if elsewhere and block.lang in ("python", "bash"):
        pytest.skip(f"run by tests/{elsewhere}.py::test_block_runs (each block alone)")
    assert block.lang in KNOWN, (
        f"{block.where}: a {block.lang or 'plain'} fence; use one of {KNOWN} or mark it "
        "<!-- doc-test: skip (reason) -->"
    )
    if block.lang == "toml":
        from dp_experts_env.evaluation import Grid

        path = tmp_path / "grid.toml"
        path.write_text(block.code)
        Grid.from_toml(path)
        return
    if block.lang == "python":
        session = _page_session(block, _selected_blocks(request), tmp_path, page_sessions)
        _check_session(session, block)
        return
    for name in ("examples", "benchmarks"):
        (tmp_path / name).symlink_to(ROOT / name)
    script = _BASH_PRELUDE + block.code
    (tmp_path / "doc_block.sh").write_text(script)
    monkeypatch.setenv("DOC_TEST_PYTHON", sys.executable)
    _run(["bash", "doc_block.sh"], tmp_path, block, script)


def test_every_marker_sits_on_a_fence() -> None:
    """A marker that does not sit right above a fence marks nothing: refuse it."""
    stray = []
    for path in DOCS:
        lines = path.read_text().splitlines()
        for i, line in enumerate(lines):
            if "doc-test:" in line:
                ok = _MARKER.match(line) and i + 1 < len(lines) and _FENCE.match(lines[i + 1])
                if not ok:
                    stray.append(f"{path.relative_to(ROOT)}:{i + 1}: {line.strip()}")
    assert stray == []


def test_the_extraction_finds_blocks_and_markers(tmp_path: Path) -> None:
    doc = tmp_path / "doc.md"
    doc.write_text(
        "text\n\n```python\nx = 1\n```\n\n<!-- doc-test: skip (a signature) -->\n"
        "```python\nf(a, *, b) -> C\n```\n~~~bash\necho hi\n~~~\n"
    )
    found = blocks_of(doc)
    assert [(b.line, b.lang, b.marker, b.reason) for b in found] == [
        (3, "python", None, None),
        (8, "python", "skip", "a signature"),
        (11, "bash", None, None),
    ]
    assert found[0].code == "x = 1\n" and found[2].code == "echo hi\n"


def test_pages_run_elsewhere_are_covered() -> None:
    """The test a page's blocks are left to runs exactly that page's python and bash blocks."""
    import importlib

    for page, module in RUN_ELSEWHERE.items():
        here = [(b.lang, b.code) for b in blocks_of(ROOT / page) if b.lang in ("python", "bash")]
        assert here, f"{page} has no python or bash block"
        assert importlib.import_module(module).BLOCKS == here, f"{module} and {page} differ"


def test_a_page_session_gives_each_block_its_own_outcome(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One interpreter per page: each block passes or fails as its own run of blocks 1..k did.

    Planted: a failing second block (the first passes, the second and third fail, the failure
    names it), a block that completes but whose interpreter exits non-zero (the session's last
    block fails), a missing optional module (skipped); harmless: the same page with the second
    block fixed passes every block in one process, and a quick selection stops the session early.
    """
    import test_docs_code as me

    monkeypatch.setattr(me, "ROOT", tmp_path)
    monkeypatch.setattr(me, "OPTIONAL", (*OPTIONAL, "planted_optional_extra"))
    sessions: dict[tuple[Path, int], _Session] = {}

    def page(name: str, second: str, third: str = "y = x") -> list[Block]:
        path = tmp_path / f"{name}.md"
        fence = "```"
        text = f"{fence}python\nx = 1\n{fence}\n\n{fence}python\n{second}\n{fence}\n\n"
        path.write_text(text + f"{fence}python\n{third}\n{fence}\n")
        found = blocks_of(path)
        monkeypatch.setattr(me, "BLOCKS", [*me.BLOCKS, *found])
        return found

    def outcomes(blocks: list[Block], selected: list[Block]) -> list[str]:
        seen = []
        for b in blocks:
            if b not in selected:
                continue
            folder = tmp_path / f"run-{b.path.stem}-{b.line}"
            folder.mkdir()
            try:
                me._check_session(me._page_session(b, selected, folder, sessions), b)
                seen.append("pass")
            except pytest.fail.Exception as err:
                seen.append("fail" + (" (named)" if "assert x == 2" in str(err) else ""))
            except pytest.skip.Exception:
                seen.append("skip")
        return seen

    bad = page("bad", "assert x == 2, 'planted'")
    assert outcomes(bad, bad) == ["pass", "fail (named)", "fail (named)"]
    good = page("good", "assert x == 1")
    assert outcomes(good, good) == ["pass", "pass", "pass"]
    assert sessions[(good[0].path, good[2].line)].done == {1, 5, 9}  # one process, all 3
    quick = page("quick", "assert x == 1")
    assert outcomes(quick, quick[:2]) == ["pass", "pass"]
    assert sessions[(quick[0].path, quick[1].line)].done == {1, 5}  # the third not run
    exits = page("exits", "assert x == 1", "import atexit, os\natexit.register(os._exit, 3)")
    assert outcomes(exits, exits) == ["pass", "pass", "fail"]
    assert sessions[(exits[0].path, exits[2].line)].done == {1, 5, 9}
    extra = page("extra", "import planted_optional_extra")
    assert outcomes(extra, extra) == ["pass", "skip", "skip"]
    # A non-zero exit after the last block that runs, with a skip-marked block after it: the
    # block that ran last still fails (the session ends there, not at the skipped block).
    path = tmp_path / "skipped_last.md"
    fence = "```"
    path.write_text(
        f"{fence}python\nx = 1\n{fence}\n\n{fence}python\nimport atexit, os\n"
        f"atexit.register(os._exit, 3)\n{fence}\n\n<!-- doc-test: skip (planted: never run) -->\n"
        f"{fence}python\nraise SystemExit(9)\n{fence}\n"
    )
    found = blocks_of(path)
    monkeypatch.setattr(me, "BLOCKS", [*me.BLOCKS, *found])
    runnable = [b for b in found if b.marker != "skip"]
    assert len(runnable) == 2 and found[2].marker == "skip"
    assert outcomes(runnable, found) == ["pass", "fail"]
