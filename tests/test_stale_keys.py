"""Issue 39, complete keys: plug-in code, its imports and the plug-in list are in every run key.

A plug-in named in ``DP_EXPERTS_PLUGINS`` may register a learner or a family, or patch a built-in
learner; editing it (or a module of its package that it imports) must re-play the runs it can
change, and ``dp-experts verify`` must name the old runs stale (``code.plugins``). Each test
plants the case and checks it is caught; the harmless controls (no plug-in, an unchanged
plug-in) keep their keys.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import uuid
from pathlib import Path

import pandas as pd
import pytest
from _store_files import grid, run, spy_on_played

from dp_experts_env import plugins
from dp_experts_env.evaluation import fingerprints as fp_mod
from dp_experts_env.evaluation import store as store_mod
from dp_experts_env.evaluation.verify import verify_folder

ROOT = Path(__file__).resolve().parents[1]

#: A plug-in that patches hedge's learning rate by a factor read from a module of its package.
PATCH = """
import agents.full_info as full_info
from {pkg} import knob

_original = full_info.Hedge.__init__


def _patched(self, *args, **kwargs):
    _original(self, *args, **kwargs)
    if knob.FACTOR != 1.0:
        self.eta = self.eta * knob.FACTOR


full_info.Hedge.__init__ = _patched
"""

#: A plug-in learner (hedge with a scaled rate) whose factor sits in another module of its package.
LEARNER = """
import agents
from agents.full_info import Hedge
from {pkg} import knob


@agents.register("{name}", private=False, summary="hedge with a scaled rate (test plug-in)")
class ScaledHedge(Hedge):
    \"\"\"Hedge with its rate times knob.FACTOR. Source: a test of issue 39.\"\"\"

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.eta = self.eta * knob.FACTOR
"""


def _package(root: Path, module: str, source: str, factor: float) -> str:
    """A plug-in package ``root/<pkg>`` with ``module`` and its ``knob``; the package name."""
    pkg = f"plug39_{uuid.uuid4().hex[:8]}"
    folder = root / pkg
    folder.mkdir(parents=True)
    (folder / "__init__.py").write_text("")
    (folder / "knob.py").write_text(f"FACTOR = {factor!r}\n")
    (folder / f"{module}.py").write_text(textwrap.dedent(source.format(pkg=pkg, name=pkg)))
    return pkg


@pytest.fixture
def plugin_env(monkeypatch, tmp_path):
    """A fresh plug-in folder on sys.path; fingerprints and plug-in modules forgotten after."""
    folder = tmp_path / "plugs"
    folder.mkdir()
    monkeypatch.syspath_prepend(str(folder))
    monkeypatch.delenv(plugins.ENV_VAR, raising=False)
    store_mod.forget_fingerprints()
    before = set(sys.modules)
    yield folder
    store_mod.forget_fingerprints()
    for name in set(sys.modules) - before:
        if name.startswith("plug39_"):
            del sys.modules[name]


def test_no_plugin_no_plugin_field(plugin_env):
    """Control: without plug-ins the key has no plug-in part (keys made before stay valid)."""
    assert store_mod.plugin_fingerprint() is None
    assert "plugins" not in store_mod.code_fingerprint("hedge", "DPExperts-Shift-v0")


def test_plugin_source_its_imports_and_the_list_are_in_every_key(plugin_env, monkeypatch):
    pkg = _package(plugin_env, "noop", "from {pkg} import knob\nSCALE = knob.FACTOR\n", 1.0)
    plain = store_mod.code_fingerprint("hedge", "DPExperts-Shift-v0")
    store_mod.forget_fingerprints()
    monkeypatch.setenv(plugins.ENV_VAR, f"{pkg}.noop")
    first = store_mod.code_fingerprint("hedge", "DPExperts-Shift-v0")
    assert first["plugin_list"] == f"module:{pkg}.noop"
    assert {k: first[k] for k in plain} == plain  # the built-in parts are unchanged
    store_mod.forget_fingerprints()
    assert store_mod.code_fingerprint("hedge", "DPExperts-Shift-v0") == first  # stable
    # Harmless: touching the file without changing it keeps the key.
    knob = plugin_env / pkg / "knob.py"
    os.utime(knob, (1, 1))
    store_mod.forget_fingerprints()
    assert store_mod.code_fingerprint("hedge", "DPExperts-Shift-v0") == first
    # The mutant: an edit to a module the plug-in imports (not the listed module itself).
    knob.write_text("FACTOR = 50.0\n")
    store_mod.forget_fingerprints()
    edited = store_mod.code_fingerprint("hedge", "DPExperts-Shift-v0")
    assert edited["plugins"] != first["plugins"]
    assert {k: edited[k] for k in plain} == plain
    # Another plug-in list (a module missing from the path) is another key too.
    monkeypatch.setenv(plugins.ENV_VAR, f"{pkg}.noop,no_such_plug39")
    store_mod.forget_fingerprints()
    listed = store_mod.code_fingerprint("hedge", "DPExperts-Shift-v0")["plugin_list"]
    assert "missing:no_such_plug39" in listed


def test_a_plugin_learner_key_walks_its_package(plugin_env, monkeypatch):
    """The learner's own hash covers its plug-in module and the modules it imports."""
    pkg = _package(plugin_env, "learner", LEARNER, 1.0)
    monkeypatch.setenv(plugins.ENV_VAR, f"{pkg}.learner")
    modules = fp_mod._closure(
        [f"{pkg}.learner"], lambda n: fp_mod._project_module(n) or n.startswith(pkg), (pkg,)
    )
    assert f"{pkg}.knob" in modules and "agents.full_info" in modules


def test_verify_names_runs_of_an_edited_plugin_stale_and_rerun_replays(
    plugin_env, monkeypatch, tmp_path
):
    """In process (the plug-in changes nothing here): the key, verify and the re-play."""
    played = spy_on_played(monkeypatch)
    pkg = _package(plugin_env, "noop", "from {pkg} import knob\nSCALE = knob.FACTOR\n", 1.0)
    monkeypatch.setenv(plugins.ENV_VAR, f"{pkg}.noop")
    g = grid(agents=["hedge"], n_seeds=2)
    out = tmp_path / "out"
    run(g, out)
    assert verify_folder(out).ok
    played.clear()
    run(g, out)
    assert played == []  # control: same plug-in code, nothing re-played
    (plugin_env / pkg / "knob.py").write_text("FACTOR = 2.0\n")
    report = verify_folder(out)
    assert not report.ok and len(report.stale) == 2
    assert all("code.plugins" in reason for _, reason in report.stale)
    store_mod.forget_fingerprints()
    run(g, out)
    assert played == [("hedge", (0, 1))]
    assert verify_folder(out).ok


def _cli(args: list[str], cwd: Path, plugs: Path, module: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("RAY_ADDRESS",)}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(plugs)])
    env[plugins.ENV_VAR] = module
    env["DP_EXPERTS_CACHE_DIR"] = str(cwd / "cache")  # nothing outside tmp_path is written
    env["DP_EXPERTS_CACHE_KEY"] = str(cwd / "cache.key")
    return subprocess.run(
        [sys.executable, "-m", "dp_experts_env.cli", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


GRID = """
seeds = 2
epsilons = [1.0]

[[env]]
id = "DPExperts-Shift-v0"
n_experts = 4
horizon = 200

[[agent]]
name = "{name}"
"""


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["patch", "learner"])
def test_editing_a_plugin_replays_its_rows_and_verify_says_stale(tmp_path, kind):
    """End to end: a plug-in learner, and a plug-in patching hedge, edited between two runs."""
    plugs = tmp_path / "plugs"
    pkg = _package(plugs, kind, PATCH if kind == "patch" else LEARNER, 1.0)
    name = "hedge" if kind == "patch" else pkg
    (tmp_path / "g.toml").write_text(GRID.format(name=name))
    module = f"{pkg}.{kind}"
    # No figures: the keys, verify and results.csv are the point (results.csv is the same bytes
    # with or without figures: tests/test_sweep_scale.py::
    # test_final_rows_mode_streams_the_same_table), and figures cost ~0.6 s of a compare.
    args = ["compare", "g.toml", "--out", "out", "--backend", "serial", "--no-figures"]
    first = _cli(args, tmp_path, plugs, module)
    assert first.returncode == 0, first.stderr
    old = pd.read_csv(tmp_path / "out" / "results.csv")
    assert _cli(["verify", "out"], tmp_path, plugs, module).returncode == 0
    (plugs / pkg / "knob.py").write_text("FACTOR = 20.0\n")  # the imported module, edited
    verify = _cli(["verify", "out"], tmp_path, plugs, module)
    assert verify.returncode != 0 and "2 stale" in verify.stdout, verify.stdout
    assert "code.plugins" in verify.stdout
    again = _cli(args, tmp_path, plugs, module)
    assert again.returncode == 0, again.stderr
    new = pd.read_csv(tmp_path / "out" / "results.csv")
    fresh = _cli([*args[:3], "fresh", *args[4:]], tmp_path, plugs, module)  # the reference
    assert fresh.returncode == 0, fresh.stderr
    regret = [c for c in new.columns if c.endswith("regret")]
    assert not new[regret].equals(old[regret])  # no stale row served
    pd.testing.assert_frame_equal(new, pd.read_csv(tmp_path / "fresh" / "results.csv"))
    assert _cli(["verify", "out"], tmp_path, plugs, module).returncode == 0
