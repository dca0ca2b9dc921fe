"""Learners join by being a module of ``agents/``; a foreign ``agents`` is refused by name.

* ``import agents`` imports every public module of the package, so a learner module registers
  itself with no list to edit: a module added to a copy of the package is
  found by ``agents.make`` in a fresh interpreter, and every module that calls ``@register`` is
  imported;
* a researcher's own folder named ``agents`` earlier on ``sys.path`` makes the CLI and the
  evaluation layer stop with an error naming that folder (not an ``AttributeError`` later).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

import agents
from dp_experts_env.learner_package import (
    ForeignAgentsPackage,
    check_learner_package,
    expected_learner_package,
)

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "agents"

_TEMP_LEARNER = '''
"""A learner added as one module, to prove that no list needs editing."""
from agents.full_info import FollowTheLeader
from agents.registry import register


@register("{name}", private=False, summary="follow-the-leader again (registration test)")
class Again(FollowTheLeader):
    """Follow the leader under another name."""
'''


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT)}


def test_every_registering_module_is_imported():
    """Each public module of agents/ whose source calls ``register`` is loaded on import."""
    registering = [
        p.stem
        for p in PACKAGE.glob("*.py")
        if not p.stem.startswith("_") and re.search(r"^@register\(", p.read_text(), re.M)
    ]
    assert len(registering) >= 15, registering
    missing = [m for m in registering if f"agents.{m}" not in sys.modules]
    assert not missing, f"learner modules not imported by `import agents`: {missing}"


def test_a_new_learner_is_one_module(tmp_path):
    """A module dropped into agents/ registers with no other file touched (fresh interpreter).

    The package is copied (the real one is never written, so tests running beside this one
    never see the module) and the copy comes first on the path.
    """
    root = tmp_path / "root"
    shutil.copytree(PACKAGE, root / "agents", ignore=shutil.ignore_patterns("__pycache__"))
    name = f"zz-registration-{uuid.uuid4().hex[:8]}"
    (root / "agents" / "zz_registration.py").write_text(_TEMP_LEARNER.format(name=name))
    code = (
        "import agents\n"
        f"a = agents.make({name!r}, n_experts=3, horizon=5, seed=0)\n"
        "print(type(a).__name__, agents.__file__, "
        f"[s['source'] for s in agents.available() if s['name'] == {name!r}])\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, timeout=120,
        env={**os.environ, "PYTHONPATH": f"{root}{os.pathsep}{ROOT}"},
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == [
        "Again", str(root / "agents" / "__init__.py"), "['built-in']"
    ], out.stdout


def test_the_installed_package_passes_the_check():
    check_learner_package()
    assert Path(agents.__file__).resolve().parent == expected_learner_package()


@pytest.mark.parametrize("how", ["cli", "evaluation"])
def test_a_foreign_agents_folder_is_refused_by_name(tmp_path, how):
    """Run from a folder holding its own ``agents`` package: a named error, not AttributeError."""
    (tmp_path / "agents").mkdir()
    (tmp_path / "agents" / "__init__.py").write_text("MINE = True\n")
    code = {
        "cli": "import sys; from dp_experts_env.cli import main; sys.exit(main(['list']))",
        "evaluation": "from dp_experts_env.evaluation import run_grid",
    }[how]
    # `python -c` puts the current directory first on sys.path, as a user's script would.
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=_env(), cwd=tmp_path,
        timeout=120,
    )
    assert out.returncode != 0
    assert "AttributeError" not in out.stderr
    assert str(tmp_path / "agents" / "__init__.py") in out.stderr
    assert "shadows it" in out.stderr
    if how == "cli":
        assert out.returncode == 2 and "Traceback" not in out.stderr


def test_the_check_sees_an_already_imported_foreign_module(monkeypatch, tmp_path):
    fake = type(sys)("agents")
    fake.__file__ = str(tmp_path / "agents.py")
    monkeypatch.setitem(sys.modules, "agents", fake)
    with pytest.raises(ForeignAgentsPackage, match="agents.py"):
        check_learner_package()
