"""The table ``dp-experts compare`` prints: compact (120 columns), readable, ties marked.

One row per (env, learner, epsilon), env labels A, B, ... explained in header lines; the columns
are described in docs/grid.md ("Reading the table and the figures"); ``summary.csv`` keeps every
column.
"""

from __future__ import annotations

import math
import string
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # imported where a table is built: `dp-experts list` reads SUITE_VARIANTS only
    import pandas as pd

__all__ = ["WIDTH", "SUITE_VARIANTS", "terminal_table", "env_labels", "ties", "best_private"]

#: Width the printed table must fit (tests/test_compare_table.py checks the default comparison).
WIDTH = 120


#: Learners whose defaults are the suite's variant, not their paper's algorithm, and the
#: keywords that give the paper's form (docs/algorithms.md has each one's row); each also has a
#: paper-mode row by name, ``NAME:paper`` (``agents/paper_modes.py``).
SUITE_VARIANTS: dict[str, str] = {
    "private-batched-exp4": "release='estimates'",  # default release='loss'
    "svt-restart": "tuning='paper', window_grid='all'",  # default: the suite's detector
    "dp-klucb": "means='last'",  # default: every released episode
    "randomized-prefix-softmax": "eta_cap=0.125",  # default: uncapped, eps-DP
}


def learner_label(agent: str) -> str:
    """The learner as the table prints it: ``(suite variant)`` after a bare variant's name."""
    return f"{agent} (suite variant)" if agent in SUITE_VARIANTS else agent


def env_labels(envs: list[str]) -> dict[str, str]:
    """Short labels A, B, ..., Z, AA, ... for the envs in order."""
    letters = string.ascii_uppercase
    out = {}
    for i, env in enumerate(envs):
        label = ""
        n = i
        while True:
            label = letters[n % 26] + label
            n = n // 26 - 1
            if n < 0:
                break
        out[env] = label
    return out


def ties(table: pd.DataFrame) -> list[bool]:
    """Per row (ranked within env): does its interval overlap the interval of the row above?"""
    out = []
    previous_env = None
    previous_hi = -math.inf
    for env, lo, hi in zip(table["env"], table["ci_low"], table["ci_high"], strict=True):
        tied = env == previous_env and lo <= previous_hi
        out.append(bool(tied))
        previous_env, previous_hi = env, hi
    return out


def best_private(table: pd.DataFrame, metric: str, private: set[str]) -> list[bool]:
    """Per row: is it the best private learner (lowest mean, ties all) at its (env, finite eps)?"""
    means = table[f"{metric}_mean"].astype(float).to_numpy()
    eps = table["epsilon"].astype(float).to_numpy()
    candidate = [
        a in private and math.isfinite(e) and math.isfinite(m)
        for a, e, m in zip(table["agent"], eps, means, strict=True)
    ]
    best: dict[tuple[str, float], float] = {}
    for env, e, m, ok in zip(table["env"], eps, means, candidate, strict=True):
        if ok:
            best[(env, e)] = min(m, best.get((env, e), math.inf))
    return [
        bool(ok and m == best[(env, e)])
        for env, e, m, ok in zip(table["env"], eps, means, candidate, strict=True)
    ]


def _num(value: float) -> str:
    """A regret as printed: whole numbers from 100 up, one decimal from 10, else 3 digits."""
    if not math.isfinite(value):
        return "nan"
    if abs(value) >= 1e7:
        return f"{value:.3g}"
    if abs(value) >= 100:
        return f"{value:.0f}"
    if abs(value) >= 10:
        return f"{value:.1f}"
    return f"{value:.3g}"


def _eps(value: float, private: bool) -> str:
    if not private:
        return "non-private"
    if not math.isfinite(value):
        return "inf (no noise)"
    return f"{value:g}"


def _certified(value: float, private: bool, requested: float) -> str:
    if not private or not math.isfinite(value):
        return "-"
    if math.isfinite(requested) and math.isclose(value, requested, rel_tol=1e-9):
        return f"{value:g}"
    return f"{value:.4g}"


def _static_note(env: str) -> str:
    """The note of a replayed matrix without ``n_switches`` (dynamic = static regret)."""
    if env.startswith("DPExperts-Oblivious-v0[") and "losses=" in env and "n_switches=" not in env:
        if "family=" not in env or "family=replay" in env:
            return "  (replay without n_switches: S = 0, dynamic regret = static regret)"
    return ""


def terminal_table(frame: pd.DataFrame, table: pd.DataFrame, metric: str) -> str:
    """The compact table of a summary (``summarize``'s rows) for the terminal.

    Args:
        frame: the result rows (for the certified epsilon and who is private).
        table: the summary table, ranked within each env.
        metric: the regret column the summary ranks by.

    Returns:
        Header lines naming each env, then the table (at most :data:`WIDTH` columns for
        learner names of up to 35 characters).
    """
    private = set(frame.loc[frame["epsilon"].astype(float) < math.inf, "agent"])
    if "private" in frame.columns:
        private |= set(frame.loc[frame["private"].astype(bool), "agent"])
    certified: dict[tuple[str, str, float], float] = {}
    if "epsilon_certified" in frame.columns:
        grouped = frame.groupby(["env", "agent", "epsilon"])["epsilon_certified"].max()
        certified = {(e, a, float(x)): float(v) for (e, a, x), v in grouped.items()}
    envs = list(dict.fromkeys(table["env"]))
    labels = env_labels(envs)
    tied = ties(table)
    marked = best_private(table, metric, private)
    score_col = next((c for c in table.columns if c.startswith("score_vs_")), None)
    show_score = score_col is not None and table[score_col].notna().any()
    show_restarts = "restarts_mean" in table.columns and table["restarts_mean"].notna().any()
    rows = []
    for i, r in enumerate(table.itertuples(index=False)):
        rec = r._asdict()
        agent, eps = rec["agent"], float(rec["epsilon"])
        is_private = agent in private
        row = {
            "env": labels[rec["env"]],
            "rank": f"{rec['rank']}{'=' if tied[i] else ''}{'*' if marked[i] else ''}",
            "learner": learner_label(agent),
            "eps": _eps(eps, is_private),
            "certified": _certified(
                certified.get((rec["env"], agent, eps), math.nan), is_private, eps
            ),
            "mean [95% CI]": f"{_num(rec[f'{metric}_mean'])} "
            f"[{_num(rec['ci_low'])}, {_num(rec['ci_high'])}]",
            "IQM": _num(rec[f"{metric}_iqm"]),
        }
        if show_score:
            row["score"] = f"{rec[score_col]:.2f}" if math.isfinite(rec[score_col]) else "nan"
        if show_restarts:
            count = float(rec["restarts_mean"])
            row["restarts"] = f"{count:.1f}" if math.isfinite(count) else "-"
        rows.append(row)
    import pandas as pd

    shown = pd.DataFrame(rows)
    header = [f"env {labels[e]}: {e}{_static_note(e)}" for e in envs]
    header.append(
        f"final {metric.replace('_', ' ')}, ranked per env; '=' after a rank: its 95% interval "
        "overlaps the one above"
    )
    if any(marked):
        header.append("'*' after a rank: the best private learner at its epsilon")
    if any(agent in SUITE_VARIANTS for agent in table["agent"]):
        header.append("(suite variant): the learner's defaults are not its paper's algorithm")
    if show_score:
        header.append(f"score: 1 - regret / {score_col.removeprefix('score_vs_')}'s, same seeds")
    if show_restarts:
        header.append("restarts: mean restarts per run of a restart-based learner")
    if shown.empty:
        return "\n".join(header)
    left = {"learner", "eps", "env"}
    widths = {c: max(len(c), *(len(str(v)) for v in shown[c])) for c in shown.columns}

    def line(values: dict[str, str]) -> str:
        cells = [
            str(values[c]).ljust(widths[c]) if c in left else str(values[c]).rjust(widths[c])
            for c in shown.columns
        ]
        return "  ".join(cells).rstrip()

    body = [line({c: c for c in shown.columns})]
    body += [line(row) for row in rows]
    return "\n".join([*header, "", *body])
