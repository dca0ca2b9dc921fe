"""Learners join by being a module of ``agents/``; a foreign ``agents`` is refused by name.

* ``import agents`` imports every public module of the package, so a learner module registers
  itself with no list to edit: a temporary module written into the package (and removed) is
  found by ``agents.make`` in a fresh interpreter, and every module that calls ``@register`` is
  imported;
* a researcher's own folder named ``agents`` earlier on ``sys.path`` makes the CLI and the
  evaluation layer stop with an error naming that folder (not an ``AttributeError`` later).
"""

from __future__ import annotations

import os
import re
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
    """A module dropped into agents/ registers with no other file touched (fresh interpreter)."""
    name = f"zz-registration-{uuid.uuid4().hex[:8]}"
    module = PACKAGE / f"zz_registration_{uuid.uuid4().hex[:8]}.py"
    module.write_text(_TEMP_LEARNER.format(name=name))
    try:
        code = (
            "import agents, numpy as np\n"
            f"a = agents.make({name!r}, n_experts=3, horizon=5, seed=0)\n"
            "print(type(a).__name__, [s['source'] for s in agents.available() if s['name'] == "
            f"{name!r}])\n"
        )
        out = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, env=_env(),
            cwd=tmp_path, timeout=120,
        )
    finally:
        module.unlink()
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["Again", "['built-in']"], out.stdout


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
