"""Compiled kernels cannot be stale: their on-disk cache is keyed by all the code they reach.

numba's own cache checks only the kernel's file, so an edit to a helper in another file (for
example svt-restart's ``_window_bound``, inlined into agents/_svt_kernels.py's
``svt_rounds``) used to replay the old machine code. ``dp_experts_env._jit.kernel_key`` names
the cache folder by a hash of every file and constant the kernel reaches.
"""

from __future__ import annotations

import importlib
import inspect
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from agents.svt_restart_query import window_bound as svt_window_bound
from dp_experts_env import _jit

ROOT = Path(__file__).resolve().parents[1]
#: The file that defines svt-restart's window boundary (a helper of agents/_svt_kernels.py).
HELPER_FILE = Path(inspect.getsourcefile(svt_window_bound)).resolve()


def _package(tmp_path: Path, helper_body: str) -> None:
    pkg = tmp_path / "kcpkg"
    pkg.mkdir(exist_ok=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "helpers.py").write_text(f"def twice(x):\n    return {helper_body}\n")
    (pkg / "unrelated.py").write_text("def other(x):\n    return x\n")
    (pkg / "kernels.py").write_text(
        "from kcpkg.helpers import twice\nSCALE = 3.0\n\n"
        "def k(x):\n    return twice(x) * SCALE\n"
    )


def _key(tmp_path: Path) -> tuple[str, list[str]]:
    for name in [m for m in sys.modules if m.startswith("kcpkg")]:
        del sys.modules[name]
    importlib.invalidate_caches()
    module = importlib.import_module("kcpkg.kernels")
    files, _ = _jit.reached_files(module.k)
    return _jit.kernel_key(module.k), [Path(f).name for f in files]


def test_the_key_follows_helpers_in_other_files_and_nothing_else(tmp_path, monkeypatch):
    pytest.importorskip("numba")
    monkeypatch.syspath_prepend(str(tmp_path))
    _package(tmp_path, "2.0 * x")
    key, files = _key(tmp_path)
    assert files == ["helpers.py", "kernels.py"]
    (tmp_path / "kcpkg" / "unrelated.py").write_text("def other(x):\n    return -x\n")
    assert _key(tmp_path)[0] == key  # harmless: code the kernel never reaches
    _package(tmp_path, "x + x")
    assert _key(tmp_path)[0] != key  # the helper's file changed: a new folder


def test_the_project_kernels_reach_their_cross_module_helpers():
    from agents import _lazy_kernel, _svt_kernels

    svt = [Path(f).name for f in _jit.reached_files(_svt_kernels.svt_rounds)[0]]
    assert svt == sorted(["_svt_all_windows.py", "_svt_kernels.py", HELPER_FILE.name])
    lazy = {Path(f).name for f in _jit.reached_files(_lazy_kernel.lazy_rounds)[0]}
    assert {"_lazy_kernel.py", "_kernels.py", "_numpy_loops.py"} <= lazy
    # The bandit kernel reaches numpy's loops (exp_into) and numpy_sum in other files.
    from agents import _bandit_kernels

    bandit = {Path(f).name for f in _jit.reached_files(_bandit_kernels.exp4_rounds)[0]}
    assert {"_bandit_kernels.py", "_kernels.py", "_numpy_loops.py"} <= bandit
    # The OCO learners' kernels: their own file (and the tree kernel theirs), so an edit of
    # agents/_oco_kernels.py compiles afresh.
    from agents import _kernels, _oco_kernels

    for oco_kernel in (_oco_kernels.ogd_box_rounds, _oco_kernels.pcomw_rounds):
        assert [Path(f).name for f in _jit.reached_files(oco_kernel)[0]] == ["_oco_kernels.py"]
    assert [Path(f).name for f in _jit.reached_files(_kernels.tree_block)[0]] == ["_kernels.py"]


def test_a_helper_from_another_module_brings_its_own_helpers(tmp_path, monkeypatch):
    """A kernel calls another module's helper, which calls a helper of its own module: it
    compiles with no call preparing that module (the bandit kernels' ``numpy_sum`` needed one).
    The mutant, compiling only the kernel's own module's helpers, fails to type ``inner``."""
    numba = pytest.importorskip("numba")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("DP_EXPERTS_NO_JIT", "0")
    monkeypatch.delenv("DP_EXPERTS_NUMBA", raising=False)
    pkg = tmp_path / "kchelp"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "inner.py").write_text(
        "from dp_experts_env._jit import helper\n\n\n@helper\ndef inner(x):\n    return x + 1.0\n"
        "\n\n@helper(inline=False)\ndef outer(x):\n    return inner(x) * 2.0\n"
    )
    (pkg / "kern.py").write_text(
        "from dp_experts_env._jit import kernel\nfrom kchelp.inner import outer\n\n\n"
        "@kernel\ndef k(x):\n    return outer(x)\n"
    )
    module = importlib.import_module("kchelp.kern")
    assert module.k(1.5) == 5.0
    assert isinstance(module.k.resolve(), numba.core.registry.CPUDispatcher)


PLAY = """
import hashlib, sys
import numpy as np
if sys.argv[1] == "unkeyed":  # the mutant: one folder whatever the kernel reaches
    from dp_experts_env import _jit
    _jit.kernel_key = lambda func: "unkeyed"
import agents
from agents.svt_restart import SVTRestart
assert agents.__file__.startswith(sys.argv[2]), agents.__file__
g = np.random.default_rng(0)
losses = (g.random((2000, 2, 4)) < np.where(np.arange(2000)[:, None, None] < 1000,
          [0.1, 0.9, 0.9, 0.9], [0.9, 0.9, 0.9, 0.1])).astype(float)
agent = SVTRestart(4, 2000, num_envs=2, seed=[1, 2], epsilon=10.0)  # restarts at the shift
actions = agent.play_block(losses)
print(hashlib.sha256(np.ascontiguousarray(actions).tobytes()).hexdigest())
"""


def _play(tree: Path, cache: Path, how: str) -> str:
    env = dict(os.environ, PYTHONPATH=str(tree), NUMBA_CACHE_DIR=str(cache))
    env.pop("DP_EXPERTS_NUMBA", None)
    env.pop("DP_EXPERTS_NO_JIT", None)
    env.pop("NUMBA_DISABLE_JIT", None)
    if how == "numpy":
        env["DP_EXPERTS_NO_JIT"] = "1"
    if how == "python":  # the compiled path's kernels run as Python (numba off): nothing compiled
        env["NUMBA_DISABLE_JIT"] = "1"
    run = subprocess.run(
        [sys.executable, "-c", PLAY, how, str(tree)],
        cwd=tree,  # `python -c` puts its folder first on sys.path
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    return run.stdout.strip()


@pytest.mark.slow
def test_an_edited_cross_module_helper_plays_its_new_rows_with_the_old_cache(tmp_path):
    pytest.importorskip("numba")
    tree, cache = tmp_path / "tree", tmp_path / "cache"
    ignore = shutil.ignore_patterns("__pycache__")
    for package in ("agents", "dp_experts_env"):
        shutil.copytree(ROOT / package, tree / package, ignore=ignore)
    before = _play(tree, cache, "keyed")
    # The mutant's cache, warm: its one folder holds what the keyed run compiled (copied, not
    # compiled again: the same machine code; were it not used, the stale play below would fail).
    for folder in list(cache.iterdir()):
        shutil.copytree(folder, cache / "unkeyed", dirs_exist_ok=True)
    assert _play(tree, cache, "unkeyed") == before
    assert _play(tree, cache, "numpy") == before
    folders = sorted(p.name for p in cache.iterdir())
    # Harmless: an edit the svt kernels never reach reuses their folders.
    (tree / "agents" / "ucb.py").write_text((tree / "agents" / "ucb.py").read_text() + "\n#\n")
    assert _play(tree, cache, "keyed") == before
    assert sorted(p.name for p in cache.iterdir()) == folders
    # The edit: every boundary far down (svt_rounds inlines _window_bound): restarts everywhere.
    source = tree / HELPER_FILE.relative_to(ROOT)
    text = source.read_text()
    old = "        if term < b:\n            b = term\n    return b\n"
    assert text.count(old) == 1
    source.write_text(text.replace(old, old.replace("return b", "return b - 1e6")))
    after = _play(tree, tmp_path / "empty", "python")  # the new rows, from the kernels' source
    assert after != before, "the planted edit must change the rows"
    assert _play(tree, cache, "keyed") == after  # recompiled, not the old kernel
    assert _play(tree, cache, "unkeyed") == before  # caught: the unkeyed cache is stale
