"""What `dp-experts list` and `run` print and write; the summary's order and IQM interval."""

import numpy as np
import pandas as pd
import pytest

from dp_experts_env.cli import main
from dp_experts_env.evaluation import summarize


def test_list_shows_each_learners_claim(capsys):
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    lines = {line.split()[0]: line for line in out.splitlines() if line.startswith("  ")}
    assert "1-DP central, vs adaptive, certified [" in lines["svt-restart"]
    assert "vs oblivious" in lines["randomized-prefix-softmax"]  # its claim's weaker adversary
    assert lines["hedge"].rstrip().endswith("not private")
    import agents

    # Claims are cut to one line (the accountant's full text is in agent.privacy).
    assert all(len(lines[a["name"]]) <= 46 + 110 for a in agents.available())


def test_run_refuses_epsilon_for_a_non_private_learner(tmp_path, capsys):
    code = main(["run", "hedge", "--epsilon", "1", "--out", str(tmp_path), "--no-figures"])
    assert code == 2
    err = capsys.readouterr().err
    assert "--epsilon" in err and "non-private" in err


def test_run_prints_no_empty_column_and_no_progress_bar_off_a_terminal(tmp_path, capsys):
    args = ["run", "hedge", "--seeds", "2", "--env-set", "horizon=30", "--no-figures"]
    assert main([*args, "--out", str(tmp_path)]) == 0
    captured = capsys.readouterr()
    assert "score_vs_uniform" not in captured.out and "NaN" not in captured.out
    assert "add uniform to the grid" in captured.out
    # stderr is not a terminal under pytest: no redrawn bar, at most a line per tenth of the work.
    assert "\r" not in captured.err and "[#" not in captured.err
    assert len([line for line in captured.err.splitlines() if "elapsed" in line]) <= 10
    table = pd.read_csv(tmp_path / "summary.csv")
    assert "score_vs_uniform" in table.columns  # the file keeps every column


def _final_frame():
    rows = []
    rng = np.random.default_rng(0)
    for t in (1000, 16000, 4000):
        for agent in ("uniform", "hedge"):
            for seed in range(6):
                rows.append(
                    dict(
                        env=f"E[horizon={t}]",
                        env_id="E",
                        agent=agent,
                        epsilon=np.inf,
                        seed=seed,
                        round=t,
                        dynamic_regret=(2.0 if agent == "uniform" else 1.0) * t * rng.uniform(),
                        static_regret=0.0,
                        certified=True,
                    )
                )
    return pd.DataFrame(rows)


def test_summary_orders_envs_naturally_and_has_an_iqm_interval():
    table = summarize(_final_frame(), n_boot=200)
    assert list(dict.fromkeys(table["env"])) == [
        "E[horizon=1000]",
        "E[horizon=4000]",
        "E[horizon=16000]",
    ]
    assert (table["iqm_low"] <= table["dynamic_regret_iqm"]).all()
    assert (table["dynamic_regret_iqm"] <= table["iqm_high"]).all()


@pytest.mark.slow
def test_compare_writes_the_aggregate_across_envs(tmp_path, capsys):
    grid = tmp_path / "g.toml"
    grid.write_text(
        "epsilons = [1.0]\nseeds = 3\n"
        '[[agent]]\nname = "uniform"\n[[agent]]\nname = "fixed-share"\n'
        '[[env]]\nid = "DPExperts-Shift-v0"\nhorizon = 200\n'
        '[[env]]\nid = "DPExperts-Stochastic-v0"\nhorizon = 200\n'
    )
    assert main(["compare", str(grid), "--out", str(tmp_path / "r"), "--no-figures"]) == 0
    out = capsys.readouterr().out
    assert "across 2 envs" in out
    agg = pd.read_csv(tmp_path / "r" / "aggregate.csv")
    assert list(agg["agent"]) == ["fixed-share", "uniform"]  # sorted by IQM, best first
    uniform = agg[agg["agent"] == "uniform"].iloc[0]
    assert uniform["mean"] == pytest.approx(0.0, abs=1e-12)  # the reference scores 0 on average
    assert (agg["iqm_low"] <= agg["iqm"]).all() and (agg["iqm"] <= agg["iqm_high"]).all()
    assert set(agg["tasks"]) == {2} and set(agg["runs"]) == {6}


def test_python_run_grid_writes_the_summary_and_on_request_figures(tmp_path):
    from dp_experts_env.evaluation import AgentEntry, EnvEntry, Grid, run_grid

    grid = Grid(
        agents=[AgentEntry("uniform"), AgentEntry("hedge")],
        envs=[EnvEntry("DPExperts-Shift-v0", {"horizon": 30})],
        epsilons=[1.0],
        n_seeds=2,
    )
    run_grid(grid, tmp_path / "a", backend="serial", progress=False)
    table = pd.read_csv(tmp_path / "a" / "summary.csv")
    assert set(table["agent"]) == {"uniform", "hedge"}
    assert not (tmp_path / "a" / "figures").exists()  # figures only when asked (they are slow)
    run_grid(grid, tmp_path / "b", backend="serial", progress=False, figures=True)
    assert any((tmp_path / "b" / "figures").glob("round_*.png"))
    run_grid(grid, tmp_path / "c", backend="serial", progress=False, report=False)
    assert not (tmp_path / "c" / "summary.csv").exists()


def test_progress_off_a_terminal_writes_a_line_per_tenth():
    import io

    from dp_experts_env.evaluation.sweep import Progress

    log = io.StringIO()  # not a terminal
    bar = Progress(200, stream=log)
    for _ in range(200):
        bar.advance()
    lines = log.getvalue().splitlines()
    assert len(lines) == 10 and "\r" not in log.getvalue()
    assert lines[0].startswith("20/200 cells") and lines[-1].startswith("200/200 cells")

    class Tty(io.StringIO):
        def isatty(self):
            return True

    tty = Tty()
    bar = Progress(3, stream=tty)
    for _ in range(3):
        bar.advance()
    assert tty.getvalue().count("\r") == 3  # redrawn in place on a terminal
