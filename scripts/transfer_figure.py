"""Figure of the transfer grid: each learner's score against uniform play, per environment.

One row per learner, one marker per environment (synthetic Shift, digits, breast_cancer).

Each point is ``1 - m / u`` with ``m`` a learner's ``dynamic_regret_mean`` on an env and ``u``
uniform play's, both read from the grid's summary.csv (the table in docs/environments.md):

    nice dp-experts compare examples/grids/transfer.toml --out results/transfer
    python scripts/transfer_figure.py results/transfer docs/figures/transfer.png
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

import pandas as pd

#: env label prefix in summary.csv -> legend name
ENVS = {
    "DPExperts-Shift-v0": "synthetic Shift (N=8, T=1797)",
    "DPExperts-Oblivious-v0[family=digits]": "digits (real)",
    "DPExperts-Oblivious-v0[family=breast_cancer]": "breast_cancer (real)",
}


def points(summary: pd.DataFrame) -> pd.DataFrame:
    """Rows (learner label, env legend name, score = 1 - mean regret / uniform's mean regret)."""
    uniform = summary[summary["agent"] == "uniform"].set_index("env")["dynamic_regret_mean"]
    rows = []
    for _, r in summary.iterrows():
        env = next((name for key, name in ENVS.items() if r["env"].startswith(key)), r["env"])
        eps = "" if not math.isfinite(r["epsilon"]) else f" eps={r['epsilon']:g}"
        score = 1.0 - r["dynamic_regret_mean"] / uniform[r["env"]]
        rows.append({"learner": f"{r['agent']}{eps}", "env": env, "score": score})
    return pd.DataFrame(rows)


def draw(summary: pd.DataFrame, out: Path) -> None:
    """Dot plot of :func:`points`, learners ordered by their digits score."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    data = points(summary)
    order = (
        data[data["env"] == ENVS["DPExperts-Oblivious-v0[family=digits]"]]
        .sort_values("score")["learner"]
        .tolist()
    )
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    for (env, group), marker in zip(data.groupby("env", sort=False), "osD", strict=False):
        group = group.set_index("learner").loc[order]
        ax.plot(group["score"], range(len(order)), marker, label=env, alpha=0.85)
    ax.axvline(0.0, color="black", lw=0.8, ls="--")
    ax.set_yticks(range(len(order)), order)
    ax.set_xlabel("1 - mean dynamic regret / uniform's (10 seeds; 0 = uniform play)")
    ax.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=120)


def main() -> None:
    """Command line: results folder in, figure file out."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", type=Path, help="results folder of the transfer grid")
    parser.add_argument("out", type=Path, help="figure file (.png or .pdf)")
    args = parser.parse_args()
    draw(pd.read_csv(args.results / "summary.csv"), args.out)


if __name__ == "__main__":
    main()
