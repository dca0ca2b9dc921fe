"""The numpy-path pass leaves out exactly the tests that cannot depend on the path (_path_split).

Known answers for the decision on hand-written records, then a planted suite run twice in
subprocesses (compiled pass, then ``DP_EXPERTS_NO_JIT=1``): a test that asks the path, one that
starts a process, one that consults the path at import and one that chooses its path too late are
repeated; a pure test and one that chooses its path first are left out; a new file, an edited
file and a record of other sources make everything run again.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
from _path_split import KEEP_WORDS, decide, fingerprint, source_hash

ROOT = Path(__file__).resolve().parents[1]
PURE = "def test_a():\n    assert True\n"


def _items(*nodeids: str) -> list[SimpleNamespace]:
    return [SimpleNamespace(nodeid=n) for n in nodeids]


def _record(tests: dict, sources: dict, imports: dict | None = None) -> dict:
    return {
        "tests": tests,
        "modules": imports or dict.fromkeys(sources, False),
        "hashes": {m: source_hash(s) for m, s in sources.items()},
    }


def _left(record: dict, sources: dict, nodeids: list[str]) -> list[str]:
    return [i.nodeid for i in decide(record, _items(*nodeids), sources)[1]]


def test_pure_and_self_forced_tests_are_left_out_the_rest_kept():
    sources = {"m.py": PURE}
    tests = {
        "m.py::pure": [False, False, False],
        "m.py::asks": [False, True, False],
        "m.py::forced": [False, False, True],
        "m.py::forced_late": [False, True, True],
    }
    assert _left(_record(tests, sources), sources, list(tests)) == ["m.py::pure", "m.py::forced"]


@pytest.mark.parametrize(
    "mutation",
    ["setup consulted", "import consulted", "never watched", "edited", "keep word", "old record"],
)
def test_any_doubt_keeps_the_whole_module(mutation):
    sources = {"m.py": PURE, "n.py": PURE}
    tests = {"m.py::pure": [False, False, False], "n.py::pure": [False, False, False]}
    record = _record(tests, sources)
    if mutation == "setup consulted":
        tests["m.py::pure"] = [True, False, False]
    elif mutation == "import consulted":
        record["modules"]["m.py"] = True
    elif mutation == "never watched":
        del tests["m.py::pure"]
    elif mutation == "edited":
        sources["m.py"] = PURE + "# edited\n"
    elif mutation == "keep word":
        sources["m.py"] = PURE + "from multiprocessing import Pool\n"
    elif mutation == "old record":
        tests["m.py::pure"] = [False, False]  # a record in an older layout
    assert _left(record, sources, list(tests) + ["m.py::pure"] * (mutation == "never watched")) == [
        "n.py::pure"
    ]


def test_shared_state_keeps_the_tests_that_did_not_choose_their_path():
    sources = {"m.py": "import functools\n@functools.cache\ndef f(): ...\n"}
    tests = {
        "m.py::fills": [False, True, False],
        "m.py::reads": [False, False, False],
        "m.py::forced": [False, False, True],
    }
    assert _left(_record(tests, sources), sources, list(tests)) == ["m.py::forced"]


def test_keep_words_see_pools_and_direct_reads_of_the_path_not_setting_it():
    assert KEEP_WORDS.search("run(jobs=2)") and KEEP_WORDS.search("import ray")
    assert KEEP_WORDS.search('os.environ.get("DP_EXPERTS_NO_JIT")')
    assert KEEP_WORDS.search('if "DP_EXPERTS_NUMBA" in os.environ:')
    assert not KEEP_WORDS.search('env = dict(os.environ, DP_EXPERTS_NO_JIT="1")')
    assert not KEEP_WORDS.search('monkeypatch.setenv("DP_EXPERTS_NO_JIT", "1")')
    assert not KEEP_WORDS.search("subprocess.run([sys.executable])")  # seen when it starts


def test_the_fingerprint_moves_with_any_source(tmp_path):
    for folder in ("agents", "dp_experts_env", "tests"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "a.py").write_text("x = 1\n")
    before = fingerprint(tmp_path)
    (tmp_path / "agents" / "a.py").write_text("x = 2\n")
    assert fingerprint(tmp_path) != before


PLANTED = '''
import subprocess, sys
from dp_experts_env._jit import jit_enabled
from conftest_planted import use_path

def test_pure():
    assert sum(range(4)) == 6

def test_asks_the_path():
    jit_enabled()

def test_starts_a_process():
    subprocess.run([sys.executable, "-c", "pass"], check=True)

def test_chooses_its_path(monkeypatch):
    use_path(monkeypatch)
    jit_enabled()

def test_chooses_its_path_too_late(monkeypatch):
    jit_enabled()
    use_path(monkeypatch)
'''
AT_IMPORT = "from dp_experts_env._jit import jit_enabled\nFAST = jit_enabled()\n\n" + PURE
CONFTEST = f'''
import sys
sys.path.insert(0, {str(ROOT / "tests")!r})
import _path_split

def pytest_configure(config):
    config.pluginmanager.register(_path_split.PathSplit(config), "path-split")
'''
HELPER = '''
import _path_split

def use_path(monkeypatch):
    _path_split.note_forced()
    monkeypatch.setenv("DP_EXPERTS_NO_JIT", "1")
'''


def _pytest(folder: Path, numpy: bool, *args: str) -> list[str]:
    path_vars = ("DP_EXPERTS_NO_JIT", "DP_EXPERTS_NUMBA")
    env = {k: v for k, v in os.environ.items() if k not in path_vars}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(folder)])
    if numpy:
        env["DP_EXPERTS_NO_JIT"] = "1"
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:randomly", *args],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
    return sorted(line for line in run.stdout.splitlines() if "::" in line)


@pytest.mark.slow
def test_a_planted_suite_is_split_by_what_its_tests_did(tmp_path):
    pytest.importorskip("numba")
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    (tmp_path / "conftest.py").write_text(CONFTEST)
    (tmp_path / "conftest_planted.py").write_text(HELPER)
    (tmp_path / "test_planted.py").write_text(PLANTED)
    (tmp_path / "test_at_import.py").write_text(AT_IMPORT)
    (tmp_path / "test_plain.py").write_text(PURE)
    _pytest(tmp_path, numpy=False)  # the compiled pass watches
    kept = _pytest(tmp_path, True, "--collect-only")
    assert kept == [
        "test_at_import.py::test_a",
        "test_planted.py::test_asks_the_path",
        "test_planted.py::test_chooses_its_path_too_late",
        "test_planted.py::test_starts_a_process",
    ]
    # Harmless: a new file runs (never watched), the others are decided as before.
    (tmp_path / "test_new.py").write_text(PURE)
    assert _pytest(tmp_path, True, "--collect-only") == sorted([*kept, "test_new.py::test_a"])
    # An edited file runs whole; so does everything without a record (the cache switched off).
    (tmp_path / "test_plain.py").write_text(PURE + "# edited\n")
    assert "test_plain.py::test_a" in _pytest(tmp_path, True, "--collect-only")
    everything = _pytest(tmp_path, True, "--collect-only", "-p", "no:cacheprovider")
    assert "test_planted.py::test_pure" in everything and len(everything) == 8
