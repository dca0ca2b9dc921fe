"""Grid, episode loop, resumable store, backends, figures and the compare command."""

import io
import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import dp_experts_env  # noqa: F401 - registers the env ids
from dp_experts_env import cli
from dp_experts_env.evaluation import (
    AgentEntry,
    CellStore,
    EnvEntry,
    Grid,
    make_figures,
    plot_regret_vs_epsilon,
    plot_regret_vs_horizon,
    plot_regret_vs_round,
    record_rounds,
    run_grid,
    run_one,
    summarize,
)
from dp_experts_env.evaluation import backends as backends_mod

SMALL_ENV = EnvEntry("DPExperts-Shift-v0", {"n_experts": 4, "horizon": 60, "n_shifts": 2})


def small_grid(**kw):
    defaults = dict(
        agents=["uniform", "hedge"], envs=[SMALL_ENV], epsilons=[1.0], n_seeds=3, n_record=8
    )
    defaults.update(kw)
    return Grid(**defaults)


def test_common_random_numbers_across_agents():
    cells = small_grid().cells()
    assert len(cells) == 2
    assert cells[0].env_seeds() == cells[1].env_seeds()
    assert cells[0].agent_seeds() != cells[1].agent_seeds()
    rows = [pd.DataFrame(run_one(c)) for c in cells]
    # The comparator's loss depends on the losses only: identical for both agents, seed by seed.
    comp = [r["cumulative_loss"] - r["dynamic_regret"] for r in rows]
    np.testing.assert_array_equal(comp[0].to_numpy(), comp[1].to_numpy())
    # ... while the agents' own losses differ.
    assert not np.array_equal(rows[0]["cumulative_loss"], rows[1]["cumulative_loss"])


def test_run_one_is_pure_and_records_log_spaced_rounds():
    cell = small_grid().cells()[1]
    first, second = run_one(cell), run_one(cell)
    assert first == second
    rounds = sorted({r["round"] for r in first})
    assert rounds[0] == 1 and rounds[-1] == 60 and len(rounds) <= 8
    assert {r["seed"] for r in first} == {0, 1, 2}


def test_resume_runs_only_missing_cells_and_keeps_finished_files(tmp_path, monkeypatch):
    grid = small_grid(agents=["uniform", "hedge", "follow-the-leader"], seeds_per_cell=1)
    calls = []
    real = backends_mod.run_cells

    def flaky(cells):
        # A unit is one seed block: its three learners share one loss stream.
        if len(calls) == 6:
            raise KeyboardInterrupt  # the sweep is killed while running its third unit
        calls.extend(cell.cell_id for cell in cells)
        return real(cells)

    monkeypatch.setattr(backends_mod, "run_cells", flaky)
    with pytest.raises(KeyboardInterrupt):
        run_grid(grid, tmp_path, backend="serial", progress=False)
    store = CellStore(tmp_path)
    finished = sorted(store.cells_dir.glob("unit-*.pack"))
    assert len(finished) == 2  # one file per finished unit; the unit in flight is lost
    before = {p.name: p.read_bytes() for p in finished}
    # Truncate one finished file (a torn write after a power loss, say).
    victim = finished[0]
    victim.write_bytes(victim.read_bytes()[:-50])
    lost = json.loads(victim.read_bytes().partition(b"\n")[0])["runs"]
    calls.clear()
    monkeypatch.setattr(
        backends_mod,
        "run_cells",
        lambda cells: (
            calls.extend(r[2] for cell in cells for r in store.runs(cell)),
            real(cells),
        )[1],
    )
    log = io.StringIO()
    frame = run_grid(grid, tmp_path, backend="serial", progress=False, log=log)
    # 9 cells in all: 3 never ran + the 3 of the torn unit are re-run, the 3 intact ones not.
    assert len(calls) == 6
    assert set(lost) <= set(calls)
    assert f"{victim.name} is damaged" in log.getvalue() and "re-running" in log.getvalue()
    for name, content in before.items():
        if name != victim.name:
            assert (store.cells_dir / name).read_bytes() == content
    assert len(frame) == 9 * len(record_rounds(60, 8))  # 9 one-seed cells
    assert not list(store.cells_dir.glob(".tmp-*"))


@pytest.mark.slow
def test_local_pool_and_serial_give_identical_rows(tmp_path):
    grid = small_grid()
    a = run_grid(grid, tmp_path / "a", backend="serial", progress=False)
    b = run_grid(grid, tmp_path / "b", backend="local", n_jobs=2, progress=False)
    pd.testing.assert_frame_equal(a, b)


@pytest.mark.slow
def test_ray_backend_matches_local(tmp_path, ray_cluster, monkeypatch):
    monkeypatch.setenv("DP_EXPERTS_RAY_TASK_SECONDS", "0")  # tasks, however small the grid
    grid = small_grid(n_seeds=2)
    a = run_grid(grid, tmp_path / "a", backend="serial", progress=False)
    b = run_grid(grid, tmp_path / "b", backend="ray", progress=False)
    pd.testing.assert_frame_equal(a, b)


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("seeds = 2\n[[env]]\nid='DPExperts-Shift-v0'\n", "agent"),
        ("[[agent]]\nname='hedge'\n", "env"),
        ("[[agent]]\nname='no-such-agent'\n[[env]]\nid='DPExperts-Shift-v0'\n", "no-such-agent"),
        ("[[agent]]\nname='hedge'\n[[env]]\nid='DPExperts-Nope-v0'\n", "DPExperts-Nope-v0"),
        ("colour = 'red'\n[[agent]]\nname='hedge'\n[[env]]\nid='DPExperts-Shift-v0'\n", "colour"),
        ("[[agent]]\nname='hedge'\n[[env]]\nid='DPExperts-Shift-v0'\nn_experts=-3\n", "n_experts"),
        ("[[agent]]\nname='hedge'\nbogus_rate=3\n[[env]]\nid='DPExperts-Shift-v0'\n", "bogus"),
        ("epsilons=[0]\n[[agent]]\nname='hedge'\n[[env]]\nid='DPExperts-Shift-v0'\n", "epsilon"),
        ("[[agent]\nname='hedge'\n", "TOML"),
    ],
)
def test_bad_grid_files_fail_before_any_cell(tmp_path, text, match):
    path = tmp_path / "grid.toml"
    path.write_text(text)
    out = tmp_path / "out"
    with pytest.raises((ValueError, TypeError), match=match):
        run_grid(Grid.from_toml(path), out, backend="serial", progress=False)
    assert not (out / "cells").exists()


def test_misspelt_env_keyword_is_named_without_gymnasium_internals(tmp_path):
    grid = Grid(["hedge"], [EnvEntry("DPExperts-Shift-v0", {"horizn": 100})], n_seeds=1)
    with pytest.raises(ValueError, match="'horizn' is not a parameter") as info:
        run_grid(grid, tmp_path, backend="serial", progress=False)
    assert "'horizon'" in str(info.value) and "environment creator" not in str(info.value)


def test_feedback_mismatch_is_caught_up_front(tmp_path):
    grid = Grid(agents=["hedge"], envs=["DPExperts-BanditAdvice-v0"], n_seeds=1)
    with pytest.raises(ValueError, match="feedback"):
        run_grid(grid, tmp_path, backend="serial", progress=False)


def test_toml_round_trip(tmp_path):
    path = tmp_path / "g.toml"
    path.write_text(
        "seeds = 2\nepsilons = [0.5, 2]\n[[env]]\nid = 'DPExperts-Shift-v0'\nhorizon = 50\n"
        "[[agent]]\nname = 'hedge'\nlabel = 'H'\n[[agent]]\nname = 'uniform'\n"
    )
    grid = Grid.from_toml(path)
    assert grid.n_seeds == 2 and grid.epsilons == [0.5, 2.0]
    assert grid.agents[0] == AgentEntry("hedge", {}, "H")
    assert grid.envs[0].params == {"horizon": 50}


@pytest.fixture(scope="module")
def sweep_frame(tmp_path_factory):
    envs = [
        EnvEntry("DPExperts-Shift-v0", {"n_experts": 4, "horizon": h, "n_shifts": 2})
        for h in (40, 160)
    ]
    private = [
        a["name"]
        for a in __import__("agents").available()
        if a["private"] and a["feedback"] == "full"
    ][:1]
    grid = Grid(
        agents=["uniform", "hedge", *private], envs=envs, epsilons=[0.5, 2.0], n_seeds=3, n_record=8
    )
    return run_grid(grid, tmp_path_factory.mktemp("sweep"), backend="serial", progress=False)


def test_summary_table_ranks_and_scores(sweep_frame):
    table = summarize(sweep_frame, "dynamic_regret", n_boot=200)
    uniform = table[table["agent"] == "uniform"]
    assert np.allclose(uniform["score_vs_uniform"], 0.0)
    for _, env_table in table.groupby("env"):
        assert list(env_table["rank"]) == list(range(1, len(env_table) + 1))
        assert env_table["dynamic_regret_mean"].is_monotonic_increasing
    assert (table["ci_low"] <= table["dynamic_regret_mean"]).all()
    assert (table["dynamic_regret_mean"] <= table["ci_high"]).all()


def test_figures_have_one_line_per_agent(sweep_frame):
    env = sorted(sweep_frame["env"].unique())[0]
    fig = plot_regret_vs_round(sweep_frame, env)
    agents_on_env = sweep_frame[sweep_frame["env"] == env]["agent"].unique()
    for ax in fig.axes:
        labels = [line.get_label() for line in ax.get_lines()]
        assert sorted(labels) == sorted(agents_on_env)
        assert all(len(line.get_xdata()) > 1 for line in ax.get_lines())
    assert len(fig.axes) == 2  # one panel per epsilon
    fig = plot_regret_vs_epsilon(sweep_frame, env)
    ax = fig.axes[0]
    assert ax.get_xscale() == "log"
    assert len(fig.legends[0].get_texts()) == len(agents_on_env)
    assert len(ax.get_lines()) >= len(agents_on_env)
    # The error bars are the table's bootstrap interval, not a normal approximation.
    table = summarize(sweep_frame[sweep_frame["env"] == env], "dynamic_regret")
    private = table[np.isfinite(table["epsilon"].astype(float))].sort_values(["agent", "epsilon"])
    bars = [
        seg for c in ax.containers for seg in c.lines[2][0].get_segments()
    ]  # (x, low) -> (x, high) per point
    got = sorted((round(b[0][1], 9), round(b[1][1], 9)) for b in bars)
    want = sorted(zip(private["ci_low"].round(9), private["ci_high"].round(9), strict=True))
    assert got == want
    # A reference line just above the private error bars: matplotlib's axhline does not rescale
    # when the line is already inside the view, which left it on the frame's top edge.
    frame = sweep_frame[sweep_frame["env"] == env].copy()
    table = summarize(frame, "dynamic_regret")
    private_rows = np.isfinite(table["epsilon"].astype(float))
    others = table[~private_rows & (table["agent"] != "uniform")]["dynamic_regret_mean"]
    top = table[private_rows]["ci_high"].max()
    bottom = min(table[private_rows]["ci_low"].min(), others.min())
    reference = top + 0.04 * (top - bottom)
    frame.loc[frame["agent"] == "uniform", "dynamic_regret"] = reference
    low, high = plot_regret_vs_epsilon(frame, env).axes[0].get_ylim()
    assert high - reference > 0.02 * (high - low)
    # One epsilon, two private learners: the offsets stay small next to the axis range.
    one = sweep_frame[(sweep_frame["env"] == env) & (sweep_frame["epsilon"] != 2.0)]
    private_one = one[np.isfinite(one["epsilon"])]
    two = pd.concat([one, private_one.assign(agent=private_one["agent"] + "-copy")])
    ax = plot_regret_vs_epsilon(two, env).axes[0]
    xs = [seg[0][0] for c in ax.containers for seg in c.lines[2][0].get_segments()]
    left, right = np.log10(ax.get_xlim())
    assert left + 0.05 < np.log10(min(xs)) and np.log10(max(xs)) < right - 0.05
    fig = plot_regret_vs_horizon(sweep_frame, "DPExperts-Shift-v0")
    ax = fig.axes[0]
    assert ax.get_xscale() == ax.get_yscale() == "log"
    assert any("slope" in t.get_text() for t in fig.legends[0].get_texts())


@pytest.mark.slow
def test_compare_command_end_to_end(tmp_path, capsys):
    out = tmp_path / "cmp"
    code = cli.main(
        [
            "compare",
            "--horizon",
            "200",
            "--seeds",
            "2",
            "--epsilons",
            "1",
            "2",
            "--out",
            str(out),
            "--backend",
            "serial",
            "--no-progress",
            "--pdf",
        ]
    )
    assert code == 0
    printed = capsys.readouterr().out
    assert "rank" in printed and "hedge" in printed
    table = pd.read_csv(out / "summary.csv")
    assert {"uniform", "hedge", "fixed-share"} <= set(table["agent"])
    figures = sorted(p.name for p in (out / "figures").iterdir())
    assert any(n.startswith("round_") and n.endswith(".png") for n in figures)
    assert any(n.startswith("epsilon_") and n.endswith(".pdf") for n in figures)
    grid = json.loads((out / "grid.json").read_text())
    assert grid["env"][0]["horizon"] == 200
    # Every private full-information learner joined the default comparison in its default
    # form; the paper-mode rows (NAME:paper) are requested by name only.
    listed = [a for a in __import__("agents").available() if a["private"]]
    full = {a["name"] for a in listed if a["feedback"] == "full"}
    played = set(table["agent"].str.split("[").str[0])
    assert {n for n in full if ":" not in n} <= played
    assert not {n for n in full if ":" in n} & played
    assert set(table["epsilon"][table["agent"] == "hedge"]) == {math.inf}
    # Re-plotting from the folder works.
    assert cli.main(["plot", str(out)]) == 0


def test_cli_list_and_help(capsys):
    assert cli.main(["list"]) == 0
    out = capsys.readouterr().out
    assert "DPExperts-Shift-v0" in out and "hedge" in out
    with pytest.raises(SystemExit):
        cli.main(["compare", "--help"])
    assert "default comparison" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        cli.main(["audit", "--help"])
    text = capsys.readouterr().out
    assert "lower bound on epsilon" in text and "--time-budget" in text and "--pairs" in text
    with pytest.raises(SystemExit):  # argparse lists the metrics instead of a late KeyError
        cli.main(["plot", "somewhere", "--metric", "regret"])
    assert "pseudo_regret" in capsys.readouterr().err


def test_cli_reports_bad_input_cleanly(tmp_path, capsys):
    assert cli.main(["compare", str(tmp_path / "missing.toml")]) == 2
    assert "does not exist" in capsys.readouterr().err
    assert cli.main(["run", "hedge", "--set", "nonsense"]) == 2
    assert "key=value" in capsys.readouterr().err
    assert cli.main(["run", "svt-restart", "--epsilon", "0"]) == 2
    assert "--epsilon must be > 0" in capsys.readouterr().err


def test_cli_names_a_foreign_learner_parameter_and_lists_the_accepted_ones(tmp_path, capsys):
    code = cli.main(["run", "hedge", "--set", "windw=3", "--out", str(tmp_path / "r")])
    err = capsys.readouterr().err
    assert code == 2
    assert "'windw' is not a parameter of agent 'hedge'" in err and "'eta'" in err
    assert not (tmp_path / "r" / "cells").exists()  # refused before any cell ran


def test_compare_uses_the_grid_files_output_folder_unless_out_is_given(tmp_path, capsys):
    grid = tmp_path / "g.toml"
    body = '[[env]]\nid = "DPExperts-Shift-v0"\nhorizon = 30\n[[agent]]\nname = "uniform"\n'
    grid.write_text(f'seeds = 1\noutput = "{(tmp_path / "declared").as_posix()}"\n{body}')
    assert cli.main(["compare", str(grid), "--no-progress", "--no-figures"]) == 0
    assert (tmp_path / "declared" / "results.csv").is_file()
    args = ["compare", str(grid), "--no-progress", "--no-figures", "--out", str(tmp_path / "o")]
    assert cli.main(args) == 0
    assert (tmp_path / "o" / "results.csv").is_file()
    grid.write_text(f"seeds = 1\noutput = 3\n{body}")
    capsys.readouterr()
    assert cli.main(["compare", str(grid)]) == 2
    assert "'output'" in capsys.readouterr().err


def test_compare_agents_typo_lists_the_learners_of_the_default_grid(capsys):
    assert cli.main(["compare", "--agents", "hedgee", "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "'hedgee'" in err and "'hedge'" in err and "'svt-restart'" in err


@pytest.mark.slow
def test_figure_files_of_envs_with_long_labels_do_not_collide(sweep_frame, tmp_path):
    frame = sweep_frame[sweep_frame["env"] == sorted(sweep_frame["env"].unique())[0]]
    long = "DPExperts-BanditAdvice-v0[family=planted_expert,horizon=5000,n_arms=4,n_experts="
    both = pd.concat([frame.assign(env=long + "32]"), frame.assign(env=long + "64]")])
    names = {p.name for p in make_figures(both, tmp_path, pdf=True)}
    assert len({n for n in names if n.startswith("round_")}) == 4  # 2 envs x (png, pdf)
    assert all(len(n) <= 100 for n in names)


def test_local_backend_explains_a_dead_worker(tmp_path, monkeypatch):
    from concurrent.futures.process import BrokenProcessPool

    class DeadPool:  # what a pool looks like when its spawned workers die at start-up
        def __init__(self, *args, **kwargs):
            pass

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

        def submit(self, *args, **kwargs):
            raise BrokenProcessPool("A child process terminated abruptly")

    monkeypatch.setattr(backends_mod, "ProcessPoolExecutor", DeadPool)
    grid = Grid(["uniform"], ["DPExperts-Shift-v0"], n_seeds=2, seeds_per_cell=1)
    with pytest.raises(RuntimeError, match="__main__.*serial"):
        run_grid(grid, tmp_path / "out", n_jobs=2, progress=False)


def test_cli_audit_refuses_a_non_private_learner(capsys):
    assert cli.main(["audit", "hedge", "--n-runs", "200"]) == 2
    err = capsys.readouterr().err
    assert "non-private" in err and "noisy-clipped-hedge" in err


@pytest.mark.slow
def test_python_module_entry_point():
    import subprocess
    import sys

    proc = subprocess.run(
        [sys.executable, "-m", "dp_experts_env", "--help"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert "compare" in proc.stdout
    assert Path(cli.__file__).name == "cli.py"


@pytest.mark.parametrize(
    "path", sorted((Path(__file__).resolve().parents[1] / "examples" / "grids").glob("*.toml"))
)
def test_example_grid_files_are_valid(path):
    grid = Grid.from_toml(path)
    grid.validate()
    assert grid.cells()


def test_audit_command_passes_a_true_claim(capsys):
    code = cli.main(
        [
            "audit",
            "limited-updates",
            "--epsilon",
            "1",
            "--n-runs",
            "4000",
            "--horizon",
            "8",
            "--n-experts",
            "3",
        ]
    )
    out = capsys.readouterr().out
    assert code == 0 and "no violation found (" in out and "epsilon >= " in out
