"""Paper-mode rows (agents/paper_modes.py, issue #38) and the "(suite variant)" label.

Known answers: every learner of ``table.SUITE_VARIANTS`` has a registered ``NAME:paper`` row that
is the learner with the keywords the table names (the same settings; the same actions on a small
game for the full-information ones); the label appears in the compare table, in every figure
kind's legend and in ``dp-experts list``, and only for the bare names (a harmless parameterised
label and a plain learner are left alone).
"""

from __future__ import annotations

import ast
import math

import matplotlib
import numpy as np
import pytest
from conftest import rollout
from test_plots_style import _rows

import agents
from dp_experts_env.cli import main
from dp_experts_env.evaluation.plots import (
    plot_regret_vs_epsilon,
    plot_regret_vs_horizon,
    plot_regret_vs_round,
)
from dp_experts_env.evaluation.table import SUITE_VARIANTS, learner_label

matplotlib.use("Agg")


def _keywords(text: str) -> dict[str, object]:
    """``"tuning='paper', window_grid='all'"`` -> ``{"tuning": "paper", "window_grid": "all"}``."""
    call = ast.parse(f"f({text})", mode="eval").body
    assert isinstance(call, ast.Call)
    return {k.arg: ast.literal_eval(k.value) for k in call.keywords}


def _game(name: str) -> dict[str, object]:
    game: dict[str, object] = {"n_experts": 4, "horizon": 64, "epsilon": 2.0, "seed": 3}
    if agents.spec(name).feedback == "bandit":
        game["n_arms"] = 3
    return game


@pytest.mark.parametrize("name", sorted(SUITE_VARIANTS))
def test_each_suite_variant_has_its_paper_row_by_name(name):
    kw = _keywords(SUITE_VARIANTS[name])
    paper = agents.make(f"{name}:paper", **_game(name))
    built = agents.make(name, **_game(name), **kw)
    default = agents.make(name, **_game(name))
    for key, value in kw.items():
        assert getattr(paper, key) == getattr(built, key) == value, (name, key)
    assert any(getattr(default, k) != v for k, v in kw.items()), "the default is not the paper's"
    assert paper.privacy.epsilon == built.privacy.epsilon
    assert agents.spec(f"{name}:paper").private
    if agents.spec(name).feedback == "full":
        losses = np.random.default_rng(1).random((64, 1, 4))
        ours, theirs = rollout(paper, losses).actions, rollout(built, losses).actions
        np.testing.assert_array_equal(ours, theirs)


def test_svt_restart_paper_runs_the_papers_detector_and_stays_certified():
    agent = agents.make("svt-restart:paper", n_experts=4, horizon=200, epsilon=1.0)
    assert (agent.tuning, agent.window_grid, agent.mode) == ("paper", "all", "strict")
    assert agent.beta == pytest.approx(1 / 200)  # Theorem 3.1's beta = 1/T
    assert agent.privacy.certified and agent.privacy.epsilon == pytest.approx(1.0)
    # mode="paper" (the printed noise) is still a keyword away, and uncertified.
    with pytest.warns(UserWarning):
        printed = agents.make("svt-restart:paper", n_experts=4, horizon=200, mode="paper")
        assert not printed.privacy.certified


def test_label_marks_bare_suite_variants_only():
    assert learner_label("svt-restart") == "svt-restart (suite variant)"
    assert learner_label("randomized-prefix-softmax") == "randomized-prefix-softmax (suite variant)"
    for plain in ("svt-restart:paper", "svt-restart[tuning=paper]", "hedge"):
        assert learner_label(plain) == plain


def _legend_texts(fig) -> list[str]:
    return [t.get_text() for legend in fig.legends for t in legend.get_texts()]


@pytest.mark.slow
def test_every_figure_kind_labels_suite_variants_in_its_legend():
    frame = _rows()
    frame.loc[frame["agent"] == "priv-a", ["agent", "agent_name"]] = "svt-restart"
    env = frame["env"].iloc[-1]
    figures = {
        "round": plot_regret_vs_round(frame, env),
        "epsilon": plot_regret_vs_epsilon(frame, env),
        "horizon": plot_regret_vs_horizon(frame, "DPExperts-Shift-v0"),
    }
    for kind, fig in figures.items():
        texts = _legend_texts(fig)
        assert any(t.startswith("svt-restart (suite variant)") for t in texts), (kind, texts)
        assert not any("priv-b (suite variant)" in t or "hedge (suite" in t for t in texts), kind
        assert sum("(suite variant)" in t for t in texts) == sum("svt-restart" in t for t in texts)


@pytest.mark.slow
def test_list_names_the_suite_variants_and_their_paper_rows(capsys):
    assert main(["list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    marked = [line for line in lines if "(suite variant; as printed:" in line]
    assert len(marked) == len(SUITE_VARIANTS)
    for name in SUITE_VARIANTS:
        assert any(f"as printed: {name}:paper)" in line for line in marked), name
        assert any(line.split()[:1] == [f"{name}:paper"] for line in lines), name


def test_default_comparison_holds_defaults_not_paper_rows():
    from dp_experts_env.evaluation.defaults import default_agents

    names = [a.name for a in default_agents()]
    assert "randomized-prefix-softmax" in names and "svt-restart" in names
    assert not [n for n in names if n.endswith(":paper")]
    assert math.isinf(agents.make("randomized-prefix-softmax", n_experts=2, horizon=8).eta_cap)
