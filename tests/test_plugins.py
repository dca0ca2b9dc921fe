"""Outside learners and families: DP_EXPERTS_PLUGINS, entry points, every command and worker.

The example package (examples/plugin_example) is used uninstalled: through
``DP_EXPERTS_PLUGINS`` with its folder on the path, and through its entry point, with the
installed metadata faked by a ``.dist-info`` folder on the path (what ``pip install`` writes;
``importlib.metadata`` reads it the same way), so the tests install nothing.

In-process tests restore the registries afterwards (other test modules compare the registry with
their parametrisations); the command-line tests run in subprocesses.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import gymnasium as gym
import numpy as np
import pandas as pd
import pytest

import agents
import agents.registry as agent_registry
import dp_experts_env.adversaries.registry as family_registry
from dp_experts_env import plugins

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "plugin_example"
NAME = "private-block-ftpl"
MODULE = "dp_plugin_example.ftpl"


def fake_install(site: Path, dist: str, version: str, entry_points: str) -> Path:
    """Write the metadata ``pip install`` would: ``site/<dist>-<version>.dist-info``."""
    info = site / f"{dist.replace('-', '_')}-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\n")
    (info / "entry_points.txt").write_text(textwrap.dedent(entry_points))
    return site


@pytest.fixture
def clean_registries(monkeypatch):
    """Registries, scan flags, plug-in origins and imported plug-in modules restored after."""
    saved_agents = dict(agent_registry._REGISTRY)
    saved_eps = set(agent_registry._LOADED_ENTRY_POINTS)
    saved_fams = {k: dict(v) for k, v in family_registry._FAMILIES.items()}
    saved_params = {k: dict(v) for k, v in family_registry._PARAMS.items()}
    saved_fam_eps = set(family_registry._LOADED_ENTRY_POINTS)
    saved_origin = dict(plugins._ORIGIN)
    modules = set(sys.modules)
    monkeypatch.delenv(plugins.ENV_VAR, raising=False)
    # Scan again inside the test (the fake metadata is put on the path by the test).
    monkeypatch.setattr(agent_registry, "_SCANNED", False)
    monkeypatch.setattr(family_registry, "_SCANNED", False)
    yield
    agent_registry._REGISTRY.clear()
    agent_registry._REGISTRY.update(saved_agents)
    agent_registry._LOADED_ENTRY_POINTS.clear()
    agent_registry._LOADED_ENTRY_POINTS.update(saved_eps)
    for kind in family_registry._FAMILIES:
        family_registry._FAMILIES[kind].clear()
        family_registry._FAMILIES[kind].update(saved_fams[kind])
        family_registry._PARAMS[kind].clear()
        family_registry._PARAMS[kind].update(saved_params[kind])
    family_registry._LOADED_ENTRY_POINTS.clear()
    family_registry._LOADED_ENTRY_POINTS.update(saved_fam_eps)
    plugins._ORIGIN.clear()
    plugins._ORIGIN.update(saved_origin)
    for name in set(sys.modules) - modules:
        del sys.modules[name]


# ----------------------------------------------------------------------------- in process
def test_env_var_module_registers_on_first_lookup(clean_registries, monkeypatch):
    assert NAME not in agent_registry._REGISTRY
    monkeypatch.syspath_prepend(str(EXAMPLE))
    monkeypatch.setenv(plugins.ENV_VAR, f" {MODULE} ,")  # spaces and empty entries are dropped
    assert agents.spec(NAME).private  # the lookup itself imports the module
    listed = {a["name"]: a for a in agents.available()}
    assert listed[NAME]["source"] == f"module {MODULE} (DP_EXPERTS_PLUGINS)"
    assert listed[NAME]["feedback"] == "full"
    assert listed[NAME]["reference"].startswith("Kalai & Vempala (2005)")
    assert listed["hedge"]["source"] == "built-in"
    env = gym.make("DPExperts-Shift-v0", n_experts=4, horizon=50)
    agent = agents.make(NAME, env=env, epsilon=2.0, seed=0)
    assert agent.privacy.epsilon == pytest.approx(2.0) and agent.privacy.certified


def test_entry_point_of_an_installed_package(clean_registries, monkeypatch, tmp_path):
    site = fake_install(
        tmp_path,
        "dp-plugin-example",
        "0.1.0",
        f"""
        [dp_experts_env.agents]
        {NAME} = {MODULE}:PrivateBlockFTPL
        """,
    )
    monkeypatch.syspath_prepend(str(EXAMPLE))
    monkeypatch.syspath_prepend(str(site))
    assert NAME in {a["name"] for a in agents.available()}
    assert agents.source(NAME) == "package dp-plugin-example 0.1.0"


UNDECORATED = """
import numpy as np
from agents.base import Agent, no_privacy


class Always0(Agent):
    '''Plays expert 0 (an undecorated plug-in class).

    Source: none, a test double.
    '''

    private = False

    def __init__(self, n_experts, horizon, *, num_envs=1, seed=None):
        super().__init__(n_experts, horizon, num_envs=num_envs, seed=seed)
        self.reset(seed)

    privacy = property(lambda self: no_privacy())

    def _init_state(self):
        pass

    def _learn(self, obs):
        pass

    def _choose(self, obs):
        return np.zeros(self.num_envs, dtype=np.int64)


class NoFlag(Always0):
    '''Not registered and no private attribute.'''

    private = None
"""


def test_an_undecorated_entry_point_class_is_registered_under_its_name(
    clean_registries, monkeypatch, tmp_path
):
    (tmp_path / "outside_agents.py").write_text(UNDECORATED)
    fake_install(
        tmp_path,
        "outside",
        "2.0",
        """
        [dp_experts_env.agents]
        always-0 = outside_agents:Always0
        """,
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    entry = agents.spec("always-0")
    assert entry.cls.__name__ == "Always0" and not entry.private
    assert entry.summary == "Plays expert 0 (an undecorated plug-in class)."
    assert agents.source("always-0") == "package outside 2.0"
    assert agents.make("always-0", n_experts=3, horizon=4).act(np.zeros(3)) == 0


def test_bad_entry_points_and_modules_say_what_is_wrong(clean_registries, monkeypatch, tmp_path):
    (tmp_path / "outside_agents.py").write_text(UNDECORATED)
    fake_install(
        tmp_path,
        "outside",
        "2.0",
        """
        [dp_experts_env.agents]
        no-flag = outside_agents:NoFlag
        """,
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(TypeError, match="no-flag.*private"):
        agents.load_plugins()
    monkeypatch.setenv(plugins.ENV_VAR, "no_such_module_xyz")
    with pytest.raises(plugins.PluginError, match="DP_EXPERTS_PLUGINS.*no_such_module_xyz"):
        agents.load_plugins()


def test_an_entry_point_that_fails_to_import_is_skipped_with_a_warning(
    clean_registries, monkeypatch, tmp_path
):
    fake_install(
        tmp_path,
        "broken",
        "0.1",
        """
        [dp_experts_env.agents]
        broken = no_such_module_abc:Thing
        """,
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.warns(RuntimeWarning, match="broken.*no_such_module_abc"):
        names = {a["name"] for a in agents.available()}
    assert "hedge" in names and "broken" not in names


FAMILY = """
import numpy as np
from dp_experts_env.adversaries.base import Adversary
from dp_experts_env.adversaries.params import FamilyParams


class Constant(Adversary):
    '''Every expert loses `level` every round (an outside family).'''

    Params = FamilyParams

    def __init__(self, n_experts=3, horizon=10, params=None, **knobs):
        FamilyParams.resolve(params, knobs)
        super().__init__(n_experts, horizon)

    def _reset(self, seeds):
        return None

    def _draw(self, t):
        return np.full((self.num_runs, self.n_experts), 0.25)
"""


def test_an_outside_family_joins_through_its_entry_point(clean_registries, monkeypatch, tmp_path):
    from dp_experts_env.adversaries import families

    (tmp_path / "outside_families.py").write_text(FAMILY)
    fake_install(
        tmp_path,
        "outside-fams",
        "1.0",
        """
        [dp_experts_env.families]
        oblivious.constant_quarter = outside_families:Constant
        """,
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    assert "constant_quarter" in families("oblivious")
    env = gym.make("DPExperts-Oblivious-v0", family="constant_quarter", n_experts=3, horizon=5)
    obs, _ = env.reset(seed=0)
    obs, *_ = env.step(0)
    np.testing.assert_array_equal(obs, np.full(3, 0.25))


def test_worker_env_carries_the_modules_and_their_folders(clean_registries, monkeypatch, tmp_path):
    monkeypatch.syspath_prepend(str(EXAMPLE))
    monkeypatch.setenv(plugins.ENV_VAR, MODULE)
    monkeypatch.setenv("PYTHONPATH", "/somewhere")
    agents.load_plugins()
    carried = plugins.worker_env()
    assert carried[plugins.ENV_VAR] == MODULE
    assert carried["PYTHONPATH"].split(os.pathsep) == ["/somewhere", str(EXAMPLE)]


def test_without_plugins_nothing_is_carried(clean_registries):
    assert plugins.worker_env().get(plugins.ENV_VAR) is None


# ----------------------------------------------------------------------------- commands
GRID = """
seeds = 3
seeds_per_cell = 1
epsilons = [1.0, 4.0]

[[env]]
id = "DPExperts-Shift-v0"
n_experts = 4
horizon = 200

[[agent]]
name = "private-block-ftpl"

[[agent]]
name = "hedge"
"""


def _cli(args, cwd, *, env_var=True, site=None, timeout=300, ray_address=None):
    env = {k: v for k, v in os.environ.items() if k not in ("RAY_ADDRESS", plugins.ENV_VAR)}
    if ray_address:
        env["RAY_ADDRESS"] = ray_address
    path = [str(ROOT), str(EXAMPLE)] + ([str(site)] if site else [])
    env["PYTHONPATH"] = os.pathsep.join(path)
    if env_var:
        env[plugins.ENV_VAR] = MODULE
    return subprocess.run(
        [sys.executable, "-m", "dp_experts_env.cli", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def _regrets(folder: Path) -> pd.DataFrame:
    frame = pd.read_csv(folder / "results.csv")
    keys = ["agent", "epsilon", "seed"] if "seed" in frame.columns else ["agent", "epsilon"]
    cols = [c for c in frame.columns if c.endswith("regret")]
    return frame.sort_values(keys + ["t"] if "t" in frame else keys)[keys + cols].reset_index(
        drop=True
    )


@pytest.mark.slow
def test_compare_and_plot_an_outside_learner_on_local_workers(tmp_path):
    """DP_EXPERTS_PLUGINS only: one seed per cell, so spawned workers play most cells."""
    (tmp_path / "g.toml").write_text(GRID)
    run = _cli(["compare", "g.toml", "--out", "local", "--jobs", "2", "--no-progress"], tmp_path)
    assert run.returncode == 0, run.stderr
    frame = pd.read_csv(tmp_path / "local" / "results.csv")
    assert set(frame["agent"]) == {NAME, "hedge"}
    assert len(frame[frame["agent"] == NAME]["seed"].unique()) == 3
    plot = _cli(["plot", "local"], tmp_path)
    assert plot.returncode == 0 and "figure files" in plot.stdout, plot.stderr


@pytest.mark.slow
def test_audit_and_list_see_an_outside_learner(tmp_path):
    audit = _cli(
        ["audit", NAME, "--runs", "4000", "--selection-runs", "500", "--time-budget", "5"], tmp_path
    )
    assert audit.returncode == 0 and "no violation" in audit.stdout, audit.stdout + audit.stderr
    mutant = _cli(
        [
            "audit",
            NAME,
            "--multiplier",
            "0",
            "--runs",
            "4000",
            "--selection-runs",
            "500",
            "--time-budget",
            "5",
        ],
        tmp_path,
    )
    assert mutant.returncode == 1 and "VIOLATION" in mutant.stdout.upper(), mutant.stdout
    listing = _cli(["list"], tmp_path)
    assert listing.returncode == 0
    line = next(ln for ln in listing.stdout.splitlines() if ln.strip().startswith(NAME))
    assert "full" in line and "1-DP central" in line
    assert f"[module {MODULE} (DP_EXPERTS_PLUGINS)]" in listing.stdout


@pytest.mark.slow
@pytest.mark.parametrize("route", ["entry_point", "env_var"])
def test_compare_on_ray_equals_local(tmp_path, route, monkeypatch, ray_cluster):
    """The installed-package route (fake metadata, no DP_EXPERTS_PLUGINS) and the uninstalled
    one (DP_EXPERTS_PLUGINS only): local workers and Ray give identical results. The first
    starts and shuts down its own local Ray instance (the command's; both routes run among the
    Ray tests at the end, ``ray_cluster``); the second connects to the run's instance through
    ``RAY_ADDRESS``, whose workers did not inherit the command's environment, so the plug-in
    must travel with the tasks; one Ray start fewer.
    No task floor (``DP_EXPERTS_RAY_TASK_SECONDS=0``): the grid is split across the CPUs."""
    pytest.importorskip("ray")
    monkeypatch.setenv("DP_EXPERTS_RAY_TASK_SECONDS", "0")
    site = fake_install(
        tmp_path / "site",
        "dp-plugin-example",
        "0.1.0",
        f"""
        [dp_experts_env.agents]
        {NAME} = {MODULE}:PrivateBlockFTPL
        """,
    )
    env_var = route == "env_var"
    if env_var:
        site = None  # the module's folder on PYTHONPATH and DP_EXPERTS_PLUGINS, no metadata
    (tmp_path / "g.toml").write_text(GRID)
    local = _cli(
        ["compare", "g.toml", "--out", "local", "--jobs", "2", "--no-progress", "--no-figures"],
        tmp_path,
        env_var=env_var,
        site=site,
    )
    assert local.returncode == 0, local.stderr
    address = ray_cluster.get_runtime_context().gcs_address if env_var else None
    ray = _cli(
        ["compare", "g.toml", "--out", "ray", "--backend", "ray", "--no-progress", "--no-figures"],
        tmp_path,
        env_var=env_var,
        site=site,
        ray_address=address,
    )
    assert ray.returncode == 0, ray.stderr
    pd.testing.assert_frame_equal(_regrets(tmp_path / "local"), _regrets(tmp_path / "ray"))


@pytest.mark.slow
def test_list_names_the_package_of_an_installed_learner(tmp_path):
    site = fake_install(
        tmp_path / "site",
        "dp-plugin-example",
        "0.1.0",
        f"""
        [dp_experts_env.agents]
        {NAME} = {MODULE}:PrivateBlockFTPL
        """,
    )
    listing = _cli(["list"], tmp_path, env_var=False, site=site)
    assert listing.returncode == 0, listing.stderr
    assert "[package dp-plugin-example 0.1.0]" in listing.stdout
    assert "Outside learners from: package dp-plugin-example 0.1.0" in listing.stdout


@pytest.mark.slow
def test_the_example_package_runs_the_contract_in_its_own_ci(tmp_path):
    """The example's own tests (dp_experts_env.testing.contract_tests and the pytest plug-in's
    check_agent fixture), run as its CI would."""
    env = {k: v for k, v in os.environ.items() if k != plugins.ENV_VAR}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(EXAMPLE)])
    env[plugins.ENV_VAR] = MODULE
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            str(EXAMPLE / "tests"),
            "--dp-audit-runs",
            "8000",
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
    assert "10 passed" in run.stdout


@pytest.mark.slow
def test_reproduce_puts_an_outside_learner_in_a_claims_role(tmp_path):
    """DP_EXPERTS_PLUGINS only: ``reproduce CLAIM --agent`` finds the outside learner."""
    run = _cli(
        ["reproduce", "cc-horizon-free", "--quick", "--agent", NAME, "--out", "rep",
         "--backend", "serial"],
        tmp_path,
    )  # fmt: skip
    assert run.returncode == 0, run.stdout + run.stderr
    claims = pd.read_csv(tmp_path / "rep" / "claims.csv")
    assert list(claims["learner"]) == [NAME] and list(claims["control"]) == ["uniform"]
