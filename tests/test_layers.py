"""The layering of docs/architecture.md, checked on the import statements of every module.

A layer imports only the layers below it; lazy imports inside functions count too, since they
run. ``privacy/`` in particular must not reach learners or envs: audits there work on recorded
outputs, and the drivers that play learners live in ``evaluation/``.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "dp_experts_env"

#: for each layer (a sub-package or module of dp_experts_env), the top-level names it must not
#: import: agents (the learners) and the layers above it inside dp_experts_env.
FORBIDDEN = {
    "privacy": ("agents", "dp_experts_env.envs", "dp_experts_env.evaluation", "dp_experts_env.cli"),
    "adversaries": ("agents", "gymnasium", "dp_experts_env.envs", "dp_experts_env.evaluation"),
    "envs": ("agents", "dp_experts_env.evaluation", "dp_experts_env.cli"),
}
# The learned-adversary package embeds learners: no layer below agents may import it.
for _layer in FORBIDDEN:
    FORBIDDEN[_layer] += ("dp_experts_env.attack",)


def imported_modules(path: Path) -> list[str]:
    """Every absolute module name an ``import`` or ``from ... import`` of the file names."""
    names = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.append(node.module)
    return names


def _violations(layer: str) -> list[str]:
    files = sorted((PACKAGE / layer).rglob("*.py"))
    assert files, f"layer {layer} has no modules"
    found = []
    for path in files:
        for name in imported_modules(path):
            for banned in FORBIDDEN[layer]:
                if name == banned or name.startswith(banned + "."):
                    found.append(f"{path.relative_to(ROOT)} imports {name}")
    return found


@pytest.mark.parametrize("layer", sorted(FORBIDDEN))
def test_layer_imports_nothing_from_above(layer):
    assert _violations(layer) == []


def test_the_check_sees_a_lazy_upward_import(tmp_path):
    module = tmp_path / "m.py"
    module.write_text("def f():\n    import agents\n    from dp_experts_env.envs import x\n")
    assert imported_modules(module) == ["agents", "dp_experts_env.envs"]


def test_importing_the_learners_loads_no_environment():
    """``import agents`` reads privacy/, batch_rng and validation only: no env or adversary module.

    ``dp_experts_env/__init__.py`` registers the ids by string entry points and loads its env
    classes on first use; a mutant that imports them eagerly there fails this test.
    """
    import subprocess
    import sys

    code = (
        "import sys, agents\n"
        "print(sorted(m for m in sys.modules if m.startswith(('dp_experts_env.envs', "
        "'dp_experts_env.adversaries', 'dp_experts_env.evaluation'))))\n"
        "import gymnasium as gym, dp_experts_env\n"
        "print(type(gym.make('DPExperts-Shift-v0').unwrapped).__name__, "
        "dp_experts_env.OCOEnv.__name__)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == ["[]", "ExpertsEnv OCOEnv"], out.stdout
