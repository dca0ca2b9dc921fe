"""The layering of docs/architecture.md, checked on the import statements of every module.

A layer imports only the layers below it; lazy imports inside functions count too, since they
run (the import graph: tests/_import_graph.py). ``privacy/`` in particular must not reach
learners or envs: audits there work on recorded outputs, and the drivers that play learners
live in ``evaluation/``. Circles and private names across modules: tests/test_seams.py.
"""

from __future__ import annotations

import fnmatch
from pathlib import Path

import pytest
from _import_graph import ROOT, project_imports, project_modules

#: The layers of docs/architecture.md, bottom first: a module may import modules of its own
#: layer and of the layers before it. ``"x.*"`` is x and its submodules, ``"x"`` x alone (the
#: package ``dp_experts_env`` itself registers the env ids: it sits with the envs). Every module
#: of both packages must be placed (a new top-level module fails until it is).
LAYERS = (
    (
        "utilities",
        (
            "dp_experts_env._validation",
            "dp_experts_env.batch_rng",
            "dp_experts_env._pcg64",
        "dp_experts_env.samplers",
            "dp_experts_env.fixed_order",
            "dp_experts_env.kinds",
            "dp_experts_env._jit",
            "dp_experts_env.plugins",
            "dp_experts_env.learner_package",
            "dp_experts_env.assignments",
            "dp_experts_env.block_entry",
        ),
    ),
    ("adversaries", ("dp_experts_env.adversaries.*",)),
    (
        "envs",
        (
            "dp_experts_env",
            "dp_experts_env.registration",
            "dp_experts_env.envs.*",
            "dp_experts_env.regret",
            "dp_experts_env._regret_kernel",
            "dp_experts_env.wrappers",
            "dp_experts_env.sb3",
            "dp_experts_env.rl",
        ),
    ),
    (
        "privacy",
        (
            "dp_experts_env.privacy.*",
            # The audit's statistics work on recorded outputs: the privacy layer of the audit
            # package (its drivers, which play learners, sit with evaluation below).
            "dp_experts_env.audit.bounds",
            "dp_experts_env.audit.events",
            "dp_experts_env.audit.selection",
            "dp_experts_env.audit.oco_statistics",
        ),
    ),
    ("agents", ("agents.*",)),
    (
        "evaluation",
        (
            "dp_experts_env.evaluation.*",
            "dp_experts_env.audit.*",
            "dp_experts_env.attack.*",
            "dp_experts_env.bench.*",
            "dp_experts_env.testing",
        ),
    ),
    ("commands", ("dp_experts_env.cli", "dp_experts_env.__main__", "dp_experts_env.pytest_plugin")),
)

#: Upward imports left in files this check's author could not edit: (importing file, imported
#: module) -> the file that must change. The test also fails when a listed one is gone.
UPWARD_ALLOWED: dict[tuple[str, str], str] = {}

#: Beside the order above, for each layer (a directory), the names it must never import,
#: though some sit below it: agents (the learners) and the layers above it.
FORBIDDEN = {
    "dp_experts_env/privacy": (
        "agents",
        "dp_experts_env.envs",
        "dp_experts_env.evaluation",
        "dp_experts_env.cli",
    ),
    "dp_experts_env/adversaries": (
        "agents",
        "gymnasium",
        "dp_experts_env.envs",
        "dp_experts_env.evaluation",
    ),
    "dp_experts_env/envs": ("agents", "dp_experts_env.evaluation", "dp_experts_env.cli"),
    # Learners see observations only: no env, no loss model.
    "agents": ("dp_experts_env.envs", "dp_experts_env.adversaries", "dp_experts_env.evaluation"),
}
# The learned-adversary package embeds learners: no layer below it may import it.
for _layer in FORBIDDEN:
    FORBIDDEN[_layer] += ("dp_experts_env.attack",)


def layer_of(module: str) -> int | None:
    """The index in :data:`LAYERS` of ``module``'s layer, None when no pattern places it."""
    for rank, (_, patterns) in enumerate(LAYERS):
        for pattern in patterns:
            if module == pattern.removesuffix(".*") or (
                pattern.endswith(".*") and fnmatch.fnmatchcase(module, pattern)
            ):
                return rank
    return None


def upward_imports(root: Path = ROOT, packages: tuple[str, ...] = ("agents", "dp_experts_env")):
    """``(importing file, imported module)`` for each import of a module of a higher layer."""
    modules = project_modules(root, packages)
    found = set()
    for item in project_imports(root, packages):
        if item.typing_only or item.target not in modules:
            continue
        low, high = layer_of(item.importer), layer_of(item.target)
        if low is not None and high is not None and high > low:
            found.add((item.path, item.target))
    return found


def _violations(layer: str, root: Path = ROOT) -> list[str]:
    prefix = layer.replace("/", ".")
    packages = (layer.split("/")[0],)
    found = []
    for item in project_imports(root, packages):
        if item.typing_only or not (item.importer + ".").startswith(prefix + "."):
            continue
        for banned in FORBIDDEN[layer]:
            for name in {item.module, item.target}:
                if name == banned or name.startswith(banned + "."):
                    found.append(f"{item.path}:{item.line} imports {item.target}")
    return sorted(set(found))


@pytest.mark.parametrize("layer", sorted(FORBIDDEN))
def test_layer_imports_nothing_from_above(layer):
    assert _violations(layer) == []


def test_every_module_has_a_layer():
    assert sorted(m for m in project_modules() if layer_of(m) is None) == []


def test_no_upward_import():
    found = upward_imports()
    assert sorted(found - set(UPWARD_ALLOWED)) == []
    assert sorted(set(UPWARD_ALLOWED) - found) == [], "gone: remove them from UPWARD_ALLOWED"


def _tree(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def test_the_check_sees_a_lazy_upward_import(tmp_path):
    """Mutants: privacy reaching evaluation (lazily, as a from-imported submodule) and envs."""
    root = _tree(
        tmp_path,
        {
            "dp_experts_env/__init__.py": "",
            "dp_experts_env/envs/__init__.py": "",
            "dp_experts_env/evaluation/__init__.py": "",
            "dp_experts_env/privacy/__init__.py": "",
            "dp_experts_env/privacy/m.py": (
                "def f():\n    from dp_experts_env import evaluation\n"
                "    from dp_experts_env.envs import x\n"
            ),
        },
    )
    assert upward_imports(root, ("dp_experts_env",)) == {
        ("dp_experts_env/privacy/m.py", "dp_experts_env.evaluation")
    }
    assert _violations("dp_experts_env/privacy", root) == [
        "dp_experts_env/privacy/m.py:2 imports dp_experts_env.evaluation",
        "dp_experts_env/privacy/m.py:3 imports dp_experts_env.envs",
    ]


def test_downward_and_type_only_imports_pass(tmp_path):
    """Harmless: evaluation importing privacy and envs; privacy naming evaluation for types only."""
    root = _tree(
        tmp_path,
        {
            "dp_experts_env/__init__.py": "",
            "dp_experts_env/envs/__init__.py": "",
            "dp_experts_env/privacy/__init__.py": (
                "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                "    from dp_experts_env.evaluation import e\n"
            ),
            "dp_experts_env/evaluation/__init__.py": "",
            "dp_experts_env/evaluation/e.py": (
                "from dp_experts_env import privacy\nfrom dp_experts_env.envs import x\n"
            ),
        },
    )
    assert upward_imports(root, ("dp_experts_env",)) == set()
    assert _violations("dp_experts_env/privacy", root) == []


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
