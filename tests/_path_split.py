"""Two paths, one run: which tests the numpy-path pass must repeat (pytest hooks for conftest.py).

CI runs the suite on the compiled path, then the quick tests again with ``DP_EXPERTS_NO_JIT=1``
(the numpy reference path). A test whose code never asks :func:`dp_experts_env._jit.jit_enabled`
which path to take runs the same code on both, so repeating it proves nothing. The compiled pass
watches every test (:func:`dp_experts_env._jit.consultations` before and after each phase, and
whether it started a process, which inherits the path through the environment) and stores what
it saw in pytest's cache, keyed by a hash of every ``.py`` file of the package and the tests.
The numpy pass then leaves out the tests that provably do not depend on the path:

* a test that never consulted the path (call and teardown);
* a test that chose its path itself (``conftest.use_jit_path``: both halves ran in the first
  pass), unless it consulted the path before choosing;
* never a test of a module where a fixture (setup) or the import consulted the path: the whole
  module runs; nor, in a module whose source keeps state across tests (``functools.cache``,
  fixtures of wider scope) and where some test consulted the path, any test that did not
  choose its own path;
* never a test of a module that can reach a process the watch cannot see start (a reused
  worker pool, Ray) or reads the path's variables itself: its source matches
  :data:`KEEP_WORDS`;
* nothing at all when the record is missing or was taken with other sources (an edit anywhere
  makes the next numpy pass complete again), or with ``DP_EXPERTS_ALL_PATHS=1``.

A new test file needs no list: the watch decides. ``tests/test_path_split.py`` checks the
decision on planted modules (a kernel caller, a pure test, a subprocess, a path forced late).
"""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
from multiprocessing import process as mp_process
from pathlib import Path
from typing import Any

import pytest

from dp_experts_env import _jit

__all__ = [
    "KEEP_WORDS",
    "decide",
    "fingerprint",
    "note_forced",
    "numpy_session",
]

ROOT = Path(__file__).resolve().parents[1]
CACHE_KEY = "dp-experts/path-split"
#: A module whose source matches runs whole on the numpy pass: processes the watch cannot see
#: start (a worker pool or Ray instance started by an earlier test and reused), or the path
#: read from the environment directly. A process a test starts itself is seen.
KEEP_WORDS = re.compile(
    r"multiprocessing|ProcessPool|\bray\b|jobs\s*=|--jobs|"
    r"(getenv|environ\.get)\(\s*[\"']DP_EXPERTS_(NO_JIT|NUMBA)|"
    r"[\"']DP_EXPERTS_(NO_JIT|NUMBA)[\"']\s+(not\s+)?in\b|"
    r"environ\[[\"']DP_EXPERTS_(NO_JIT|NUMBA)[\"']\]\s*(==|!=|\)|,)"
)
#: A module whose source matches is decided as one unit (state shared between its tests).
SHARED_STATE = re.compile(r"functools\.cache|lru_cache|@cache\b|scope\s*=")


def numpy_session() -> bool:
    """True when this process started on the numpy path (``DP_EXPERTS_NO_JIT`` and friends)."""
    return os.environ.get("DP_EXPERTS_NO_JIT", "0") not in ("", "0") or (
        os.environ.get("DP_EXPERTS_NUMBA", "1") == "0"
    )


def fingerprint(root: Path = ROOT) -> str:
    """A hash of every ``.py`` file under the package folders and ``tests/`` (names and bytes)."""
    digest = hashlib.sha256()
    for folder in ("agents", "dp_experts_env", "tests"):
        for path in sorted((root / folder).rglob("*.py")):
            digest.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


class _Watch:
    """What the current test did: path consultations and process starts, per phase."""

    def __init__(self) -> None:
        self.spawned = 0
        self.mark = 0
        self.forced_after: int | None = None  # consultations seen before use_jit_path

    def start(self) -> None:
        self.mark = _jit.consultations() + self.spawned
        self.forced_after = None

    def seen(self) -> bool:
        if self.forced_after is not None:
            return self.forced_after > 0
        return _jit.consultations() + self.spawned > self.mark


WATCH = _Watch()


def note_forced() -> None:
    """Called by ``conftest.use_jit_path``: from here on the test's path is its own choice."""
    if WATCH.forced_after is None:
        WATCH.forced_after = _jit.consultations() + WATCH.spawned - WATCH.mark


def _count_spawns() -> None:
    """Count process starts (a child inherits the path through the environment)."""
    popen_init = subprocess.Popen.__init__
    start = mp_process.BaseProcess.start

    def counted_popen(self: Any, *args: Any, **kwargs: Any) -> None:
        WATCH.spawned += 1
        popen_init(self, *args, **kwargs)

    def counted_start(self: Any) -> None:
        WATCH.spawned += 1
        start(self)

    subprocess.Popen.__init__ = counted_popen  # type: ignore[method-assign]
    mp_process.BaseProcess.start = counted_start  # type: ignore[method-assign]


def decide(
    record: dict[str, Any], items: list[Any], sources: dict[str, str]
) -> tuple[list[Any], list[Any]]:
    """Split ``items`` (pytest items) into (kept, left out) for the numpy pass.

    Args:
        record: what the compiled pass saw: ``{"tests": {nodeid: [setup, call, forced]},
            "modules": {path: import}, "hashes": {path: source hash}}`` (setup, call, import:
            True where the path was consulted or a process started; forced: the test chose its
            path itself).
        items: the collected items, each with ``nodeid``.
        sources: each module path (the nodeid's part before ``::``) -> its source text.

    Returns:
        (kept, left out), each in collection order.
    """
    tests, modules = record.get("tests", {}), record.get("modules", {})
    hashes = record.get("hashes", {})
    whole: set[str] = set()  # every test runs
    shared: set[str] = set()  # the tests that chose their own path may be left out
    for item in items:
        module = item.nodeid.split("::")[0]
        seen = tests.get(item.nodeid)
        source = sources.get(module, "")
        if (
            seen is None  # never watched: a new test, or one the compiled pass deselected
            or len(seen) != 3
            or seen[0]
            or modules.get(module, True)
            or hashes.get(module) != source_hash(source)  # edited since it was watched
            or KEEP_WORDS.search(source)
        ):
            whole.add(module)
        elif seen[1] and SHARED_STATE.search(source):
            shared.add(module)
    kept, left = [], []
    for item in items:
        module = item.nodeid.split("::")[0]
        if module in whole:
            kept.append(item)
            continue
        _, call, forced = tests[item.nodeid]
        keep = call or (module in shared and not forced)
        (kept if keep else left).append(item)
    return kept, left


def source_hash(text: str) -> str:
    """The hash a module's source is recorded under."""
    return hashlib.sha256(text.encode()).hexdigest()


def _read(root: Path, module: str) -> str:
    path = root / module
    return path.read_text() if path.is_file() else ""


class PathSplit:
    """The plugin: watches on the compiled pass, leaves out on the numpy pass."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.cache = getattr(config, "cache", None)
        self.numpy = numpy_session()
        self.watching = not self.numpy and _jit.numba_available() and self.cache is not None
        self.print = fingerprint() if self.cache is not None else ""
        self.tests: dict[str, list[bool]] = {}
        self.modules: dict[str, bool] = {}
        self.left_out = 0
        if self.watching:
            _count_spawns()

    @pytest.hookimpl(hookwrapper=True)
    def pytest_make_collect_report(self, collector: pytest.Collector) -> Any:
        WATCH.start()
        yield
        if isinstance(collector, pytest.Module):
            self.modules[collector.nodeid] = WATCH.seen()

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> Any:
        WATCH.start()
        yield
        self.tests[item.nodeid] = [WATCH.seen(), False, WATCH.forced_after is not None]

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_call(self, item: pytest.Item) -> Any:
        forced = WATCH.forced_after  # use_jit_path in a fixture counts for the test body too
        WATCH.start()
        WATCH.forced_after = None if forced is None else 0
        yield
        self._call_seen(item)

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_teardown(self, item: pytest.Item) -> Any:
        forced = WATCH.forced_after
        WATCH.start()
        WATCH.forced_after = None if forced is None else 0
        yield
        self._call_seen(item)
        WATCH.forced_after = None

    def _call_seen(self, item: pytest.Item) -> None:
        entry = self.tests.setdefault(item.nodeid, [True, True, False])
        entry[1] = entry[1] or WATCH.seen()
        entry[2] = entry[2] or WATCH.forced_after is not None

    @pytest.hookimpl(trylast=True)  # after -m / -k have deselected theirs
    def pytest_collection_modifyitems(self, config: pytest.Config, items: list[Any]) -> None:
        if not self.numpy or self.cache is None or os.environ.get("DP_EXPERTS_ALL_PATHS"):
            return
        if not _jit.numba_available():
            return  # no compiled pass to lean on: the numpy pass is the only one
        record = self.cache.get(CACHE_KEY, None)
        if not record or record.get("fingerprint") != self.print:
            return
        sources = {}
        for item in items:
            module = item.nodeid.split("::")[0]
            if module not in sources:
                sources[module] = _read(config.rootpath, module)
        kept, left = decide(record, items, sources)
        if left:
            config.hook.pytest_deselected(items=left)
            items[:] = kept
            self.left_out = len(left)

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if not self.watching or not self.tests:
            return
        old = self.cache.get(CACHE_KEY, None) or {}
        if old.get("fingerprint") != self.print:
            old = {}
        tests = {**old.get("tests", {}), **self.tests}
        modules = {**old.get("modules", {}), **self.modules}
        hashes = {
            **old.get("hashes", {}),
            **{m: source_hash(_read(self.config.rootpath, m)) for m in self.modules},
        }
        self.cache.set(
            CACHE_KEY,
            {"fingerprint": self.print, "tests": tests, "modules": modules, "hashes": hashes},
        )

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if self.left_out:
            terminalreporter.write_line(
                f"numpy-path pass: {self.left_out} tests left out: the compiled pass of these "
                "same sources saw them take no path decision (tests/README.md, 'Two paths, one "
                "run'; DP_EXPERTS_ALL_PATHS=1 runs them)"
            )

