"""Results you can trust: cache keys, the manifest, figure names, faults and agent boundaries.

Each test pins one defect: stale results reused after a code or data change, all cells re-run
when seeds are added, stray files plotted, figures overwriting each other, numpy integers in
grids, NaN observations accepted, learners playing past their horizon, and the sweep's fault
handling (lock, Ctrl-C, filesystem errors, file modes, orphaned workers).
"""

from __future__ import annotations

import functools
import io
import json
import os
import pickle
import signal
import stat
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import gymnasium as gym
import numpy as np
import pandas as pd
import pytest
from _store_files import as_run_files, grid, run, spy_on_played

import agents
import dp_experts_env  # noqa: F401 - registers the env ids
from dp_experts_env import cli
from dp_experts_env.evaluation import AgentEntry, CellStore, EnvEntry, make_figures
from dp_experts_env.evaluation import backends as backends_mod
from dp_experts_env.evaluation import fingerprints as fp_mod
from dp_experts_env.evaluation import store as store_mod
from dp_experts_env.evaluation import sweep as sweep_mod
from dp_experts_env.evaluation.store import ResultsFolderBusy, folder_lock, load_results
from dp_experts_env.evaluation.sweep import SweepInterrupted, SweepWriteError


@pytest.fixture
def played(monkeypatch):
    """The (agent, seed indices) of every cell actually played."""
    return spy_on_played(monkeypatch)


def canonical(frame: pd.DataFrame) -> pd.DataFrame:
    return frame.sort_values(["agent", "seed", "round"]).reset_index(drop=True)


# ----------------------------------------------------------------------------- cache keys
def test_changed_learner_code_reruns_its_cells_only(tmp_path, played, monkeypatch):
    g = grid(agents=["hedge", "noisy-clipped-hedge"], epsilons=[1.0])
    run(g, tmp_path)
    assert len(played) == 2
    played.clear()
    run(g, tmp_path)
    assert played == []  # same code: nothing re-runs
    real = fp_mod._module_source

    @functools.cache
    def edited(name):  # hedge's module edited on disk (say its learning rate x50)
        origin, source = real(name)
        return origin, source + (b"\n# edited\n" if name == "agents.full_info" else b"")

    monkeypatch.setattr(fp_mod, "_module_source", edited)
    run(g, tmp_path)
    assert [name for name, _ in played] == ["hedge"]


def test_code_fingerprint_covers_learner_env_and_imports():
    key = store_mod.code_fingerprint("hedge", "DPExperts-Shift-v0")
    assert set(key) == {"package", "agent", "env"}
    assert "agents.base" in fp_mod._closure(["agents.full_info"])
    env_modules = fp_mod._closure(["dp_experts_env.envs.vector"])
    assert "dp_experts_env.regret" in env_modules and "dp_experts_env.envs.factory" in env_modules
    assert store_mod.code_fingerprint("hedge", "DPExperts-Shift-v0") == key  # stable


def test_replaced_replay_losses_file_reruns_with_new_losses(tmp_path, played):
    path = tmp_path / "losses.npy"
    np.save(path, np.full((20, 3), 0.5))
    env = EnvEntry("DPExperts-Oblivious-v0", {"losses": str(path)})
    g = grid(agents=["uniform"], envs=[env], n_seeds=1)
    first = run(g, tmp_path / "out")
    assert first["cumulative_loss"].max() == pytest.approx(10.0)
    np.save(path, np.zeros((20, 3)))  # same path, new content
    played.clear()
    second = run(g, tmp_path / "out")
    assert len(played) == 1
    assert second["cumulative_loss"].max() == 0.0


def test_adding_seeds_runs_only_the_new_seeds_with_identical_rows(tmp_path, played):
    run(grid(n_seeds=4), tmp_path / "a")
    played.clear()
    grown = run(grid(n_seeds=6), tmp_path / "a")
    assert sorted(played) == [("hedge", (4, 5)), ("uniform", (4, 5))]
    fresh = run(grid(n_seeds=6, seeds_per_cell=4), tmp_path / "b")
    pd.testing.assert_frame_equal(canonical(grown), canonical(fresh))


def test_numpy_integers_in_a_grid_give_the_same_seeds_and_rows(tmp_path):
    env_np = EnvEntry(
        "DPExperts-Shift-v0",
        {"n_experts": np.int64(3), "horizon": np.arange(40, 41)[0], "n_shifts": np.int32(1)},
    )
    g_np = grid(envs=[env_np], n_seeds=np.int64(2), epsilons=np.array([1.0]))
    g_py = grid()
    assert [c.env_seeds() for c in g_np.cells()] == [c.env_seeds() for c in g_py.cells()]
    a = run(g_np, tmp_path / "np")  # used to fail: int64 is not JSON serializable
    b = run(g_py, tmp_path / "py")
    pd.testing.assert_frame_equal(a, b)
    json.loads((tmp_path / "np" / "grid.json").read_text())


# ----------------------------------------------------------------------------- the manifest
def test_plot_summary_and_table_read_only_the_current_grid(tmp_path, capsys):
    run(grid(n_seeds=6, agents=["uniform", "hedge", "follow-the-leader"]), tmp_path)
    current = run(grid(n_seeds=2), tmp_path)  # an earlier grid's 6 seeds stay in cells/
    cells = tmp_path / "cells"
    (cells / ".tmp-leftover.pack").write_bytes(next(cells.glob("unit-*.pack")).read_bytes())
    loaded = load_results(tmp_path)
    pd.testing.assert_frame_equal(loaded, current)
    assert sorted(loaded["seed"].unique()) == [0, 1]
    assert set(loaded["agent"]) == {"uniform", "hedge"}
    pd.testing.assert_frame_equal(
        pd.read_csv(tmp_path / "results.csv")[["seed"]], current[["seed"]]
    )
    assert cli.main(["plot", str(tmp_path)]) == 0


def test_plot_without_manifest_or_with_missing_runs_says_so(tmp_path, capsys):
    assert cli.main(["plot", str(tmp_path)]) == 2
    assert "manifest.json" in capsys.readouterr().err
    run(grid(), tmp_path)
    as_run_files(tmp_path)  # one file per run, as earlier versions wrote them
    next((tmp_path / "cells").glob("*.json")).unlink()
    assert cli.main(["plot", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "1 of 4 runs" in err and "again" in err


@pytest.mark.slow
def test_figure_names_keep_dotted_labels_and_metrics_apart(tmp_path):
    frame = run(grid(n_seeds=2), tmp_path / "r")
    both = pd.concat(
        [frame.assign(env="shift[gap=0.1]"), frame.assign(env="shift[gap=0.2]"), frame]
    )
    first = make_figures(both, tmp_path / "f", "dynamic_regret", pdf=True)
    second = make_figures(both, tmp_path / "f", "static_regret", pdf=True)
    names = [p.name for p in first + second]
    # 3 envs x 2 metrics x (png, pdf), plus the across-env aggregate figure per metric.
    assert len(names) == len(set(names)) == 16
    assert all(p.is_file() for p in first + second)
    assert len(list((tmp_path / "f").iterdir())) == 16


def test_figure_slugs_differing_only_in_replaced_characters_do_not_collide(tmp_path):
    from dp_experts_env.evaluation.plots import figure_stem

    assert figure_stem("round", "m", "a b") != figure_stem("round", "m", "a_b")
    assert figure_stem("round", "m", "DPExperts-Shift-v0") == "round_m_DPExperts-Shift-v0"


# ----------------------------------------------------------------------------- faults
def test_corrupted_run_is_reported_and_rerun(tmp_path, played):
    run(grid(), tmp_path)
    as_run_files(tmp_path)  # one file per run, as earlier versions wrote them
    victim = sorted((tmp_path / "cells").glob("*.json"))[0]
    victim.write_text(victim.read_text()[:40])
    log = io.StringIO()
    played.clear()
    run(grid(), tmp_path, log=log)
    assert len(played) == 1
    assert victim.name in log.getvalue() and "re-running" in log.getvalue()


def test_results_csv_is_replaced_atomically_on_a_full_disk(tmp_path, monkeypatch):
    run(grid(), tmp_path)
    before = (tmp_path / "results.csv").read_bytes()
    next((tmp_path / "cells").glob("unit-*.pack")).unlink()  # something to do: not a no-op

    def full_disk(*args, **kw):
        fh = args[1] if len(args) > 1 else kw["fh"]  # write_frame(frame, fh) / to_csv(self, fh)
        fh.write("agent,env\npartial")
        raise OSError(28, "No space left on device")

    # results.csv's writers (csv_text.write_frame in the store and the sweep, pandas' for the
    # frames it hands back) all fail half-way: the message must name results.csv, written first.
    monkeypatch.setattr(store_mod, "write_frame", full_disk)
    monkeypatch.setattr(sweep_mod, "write_frame", full_disk)
    monkeypatch.setattr(pd.DataFrame, "to_csv", full_disk)
    with pytest.raises(SweepWriteError, match=r"results\.csv.*No space left.*run the same command"):
        run(grid(), tmp_path)
    assert (tmp_path / "results.csv").read_bytes() == before
    assert not list(tmp_path.glob(".tmp-*"))


@pytest.mark.parametrize("mask", [0o022, 0o077])
def test_result_files_follow_the_umask(tmp_path, mask):
    old = os.umask(mask)
    try:
        run(grid(n_seeds=1, agents=["uniform"]), tmp_path)
    finally:
        os.umask(old)
    for path in [*(tmp_path / "cells").glob("unit-*.pack"), tmp_path / "results.csv"]:
        assert stat.S_IMODE(path.stat().st_mode) == 0o666 & ~mask


def test_second_sweep_on_a_locked_folder_fails_at_once(tmp_path, capsys):
    tmp_path.joinpath(".lock").touch()
    with folder_lock(tmp_path):
        with pytest.raises(ResultsFolderBusy, match="in use"):
            run(grid(), tmp_path)
        code = cli.main(["run", "hedge", "--seeds", "1", "--out", str(tmp_path), "--no-progress"])
    assert code == 1
    err = capsys.readouterr().err
    assert "in use" in err and err.count("\n") == 1


def test_ctrl_c_reports_what_was_saved_and_how_to_resume(tmp_path, monkeypatch, capsys):
    real = backends_mod.run_cells
    count = []

    def interrupted(cells):
        count.append(1)
        if len(count) == 2:
            raise KeyboardInterrupt
        return real(cells)

    monkeypatch.setattr(backends_mod, "run_cells", interrupted)
    # Two units of work (one cell per seed block); the second is interrupted.
    with pytest.raises(SweepInterrupted, match="1 of 2 cells .* run the same command again"):
        run(grid(agents=["hedge"], seeds_per_cell=1), tmp_path)
    count.clear()
    args = ["run", "hedge", "--seeds", "1", "--out", str(tmp_path / "c"), "--no-progress"]
    monkeypatch.setattr(
        backends_mod, "run_cells", lambda cells: (_ for _ in ()).throw(KeyboardInterrupt)
    )
    assert cli.main(args) == 130
    err = capsys.readouterr().err.strip()
    assert "0 of 1 cells" in err and "resume" in err and "Traceback" not in err
    assert len(err.splitlines()) == 1


def test_filesystem_error_is_one_line(tmp_path, capsys):
    blocker = tmp_path / "file"
    blocker.write_text("")
    args = ["run", "uniform", "--seeds", "1", "--out", str(blocker / "sub"), "--no-progress"]
    assert cli.main(args) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "cannot use results folder" in err


@pytest.mark.slow
def test_workers_die_with_their_parent(tmp_path):
    script = textwrap.dedent(
        """
        import os, sys, time
        from concurrent.futures import ProcessPoolExecutor
        import multiprocessing
        from dp_experts_env.evaluation.backends import _init_worker

        if __name__ == "__main__":
            ctx = multiprocessing.get_context("spawn")
            pool = ProcessPoolExecutor(2, mp_context=ctx, initializer=_init_worker,
                                       initargs=(os.getpid(),))
            pids = set()
            futures = [pool.submit(time.sleep, 60) for _ in range(2)]
            time.sleep(1.5)
            print(" ".join(str(p) for p in pool._processes), flush=True)
            time.sleep(60)
        """
    )
    path = tmp_path / "parent.py"
    path.write_text(script)
    proc = subprocess.Popen([sys.executable, str(path)], stdout=subprocess.PIPE, text=True)
    workers = [int(p) for p in proc.stdout.readline().split()]
    assert workers
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and any(_alive(p) for p in workers):
        time.sleep(0.2)
    assert not any(_alive(p) for p in workers)


def _alive(pid: int) -> bool:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return False
    return "State:\tZ" not in status  # a zombie has exited


# ----------------------------------------------------------------------------- fuzz findings
def test_render_mode_in_a_grid_is_refused_up_front():
    env = EnvEntry("DPExperts-Shift-v0", {"render_mode": "ansi", "horizon": 10})
    with pytest.raises(ValueError, match="render_mode"):
        grid(envs=[env]).validate()


def test_huge_horizon_is_a_value_error():
    with pytest.raises(ValueError, match="horizon"):
        gym.make("DPExperts-Shift-v0", horizon=2**63)


@pytest.mark.parametrize(
    ("flag", "value"), [("--horizon", "0"), ("--horizon", "100000000000"), ("--n-experts", "1")]
)
def test_audit_sizes_out_of_range_are_reported_by_flag(capsys, flag, value):
    assert cli.main(["audit", "noisy-clipped-hedge", flag, value, "--n-runs", "200"]) == 2
    err = capsys.readouterr().err
    assert flag in err and err.count("\n") == 1


def test_block_restart_env_pickles():
    env = gym.make_vec(
        "DPExperts-Adaptive-v0",
        num_envs=2,
        vectorization_mode="vector_entry_point",
        family="block_restart",
        horizon=20,
    )
    copy = pickle.loads(pickle.dumps(env))
    a, _ = env.reset(seed=1)
    b, _ = copy.reset(seed=1)
    np.testing.assert_array_equal(a, b)


# ----------------------------------------------------------------------------- agent boundary
# Every learner that acts through the shared Agent.act, where the checks live (continuous-action
# learners and the PPO baseline have their own act and their own tests).
ALL = sorted(
    a["name"]
    for a in agents.available()
    if a["feedback"] in ("full", "bandit", "any")
    and a["name"] != "ppo"  # trains on an env before playing: built from an env, not sizes
    and agents.spec(a["name"]).cls.act is agents.Agent.act
)
FULL = [n for n in ALL if agents.spec(n).feedback in ("full", "any")]


def _agent(name: str, horizon: int = 12):
    kwargs = {"n_experts": 4, "horizon": horizon, "seed": 0}
    if agents.spec(name).feedback == "bandit":
        kwargs["n_arms"] = 3
    if agents.spec(name).private:
        kwargs["epsilon"] = 1.0
    return agents.make(name, **kwargs)


def _obs(agent, t: int):
    if agents.spec(agent.name).feedback == "bandit":
        advice = np.zeros((4, 3))
        advice[:, 0] = 1.0
        last = agent.last_actions[0] if t else 0  # a bandit learner checks it is its own arm
        return {"advice": advice.ravel(), "last_action": last, "last_loss": np.array([0.5])}
    return np.full(4, 0.25 + 0.05 * (t % 3))


@pytest.mark.parametrize("name", FULL)
@pytest.mark.parametrize("bad", [np.nan, np.inf, -0.5, 1.5])
def test_full_information_learners_refuse_bad_losses_naming_the_round(name, bad):
    agent = _agent(name)
    for t in range(10):
        agent.act(np.full(4, 0.5) if t else np.zeros(4))
    obs = np.full(4, 0.5)
    obs[2] = bad
    with pytest.raises(ValueError, match="feedback of round 10"):
        agent.act(obs)


@pytest.mark.parametrize(
    ("key", "value"),
    [("last_loss", np.array([np.nan])), ("last_loss", np.array([2.0])), ("last_action", 7)],
)
def test_bandit_learners_refuse_bad_feedback(key, value):
    agent = _agent("exp3")
    agent.act(_obs(agent, 0))
    obs = {**_obs(agent, 1), key: value}
    with pytest.raises(ValueError, match=key):
        agent.act(obs)
    advice = _obs(agent, 1)["advice"].copy()
    advice[0] = np.nan
    with pytest.raises(ValueError, match="advice"):
        agent.act({**_obs(agent, 1), "advice": advice})


@pytest.mark.parametrize("name", ALL)
def test_every_learner_refuses_to_act_past_its_horizon(name):
    agent = _agent(name, horizon=5)
    for t in range(5):
        agent.act(_obs(agent, t))
    with pytest.raises(ValueError, match="horizon=5"):
        agent.act(_obs(agent, 5))
    agent.reset()
    agent.act(_obs(agent, 0))  # a new episode plays again


def test_grid_with_a_numpy_array_of_losses_keys_by_content(tmp_path):
    a = np.full((20, 3), 0.5)
    b = a.copy()
    b[10, 1] = 0.25  # differs in the middle, which str(array) elides
    keys = [
        CellStore.key(grid(envs=[EnvEntry("DPExperts-Oblivious-v0", {"losses": m})]).cells()[0], 0)
        for m in (a, b)
    ]
    assert keys[0] != keys[1]


def test_agent_entry_parameters_are_plain_python():
    entry = AgentEntry("hedge", {"eta": np.float64(0.5)})
    assert type(entry.params["eta"]) is float
