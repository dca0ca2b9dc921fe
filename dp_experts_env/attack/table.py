"""The learner x adversary table of docs/attack.md, from ``attack.json`` files.

``python -m dp_experts_env.attack.table DIR/*/attack.json`` prints one markdown row per
(learner, epsilon, N, T): learned adaptive and oblivious regrets, the best families of both runs,
random, the bound, and the two trainings' budgets and CPU seconds.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

__all__ = ["rows", "markdown", "main"]

HEADER = (
    "| learner | epsilon | N | T | learned adaptive | learned oblivious | best family "
    "| best oblivious family | random | proven bound | PPO steps | train CPU s (adaptive / "
    "oblivious) |\n"
    "|---|---|---|---|---|---|---|---|---|---|---|---|"
)


def _cell(report: dict[str, Any] | None) -> str:
    if report is None:
        return "-"
    low, high = report["learned_ci"]
    return f"{report['learned_regret']:.1f} [{low:.1f}, {high:.1f}]"


def _family(report: dict[str, Any] | None) -> str:
    """The best family of a report: regret (family name)."""
    if report is None or not report["best_family"]:
        return "-"
    return f"{report['best_family_regret']:.1f} ({report['best_family'].split('/')[-1]})"


def rows(reports: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Pair the adaptive and oblivious reports of each (learner, epsilon, N, T)."""
    table: dict[tuple, dict[str, Any]] = {}
    for report in reports:
        key = (report["learner"], report["epsilon"], report["n_experts"], report["horizon"])
        mode = "oblivious" if report["oblivious"] else "adaptive"
        table.setdefault(key, {})[mode] = report
    return [{"key": key, **modes} for key, modes in table.items()]


def markdown(reports: Sequence[dict[str, Any]]) -> str:
    """The markdown table (header and one row per learner setting)."""
    lines = [HEADER]
    for row in rows(reports):
        learner, epsilon, n, t = row["key"]
        adaptive, oblivious = row.get("adaptive"), row.get("oblivious")
        base = adaptive or oblivious
        bound = "-" if base["bound"] is None else f"{base['bound']:.1f}"
        cpu = " / ".join(
            "-" if r is None else f"{r['train_cpu_seconds']:.0f}" for r in (adaptive, oblivious)
        )
        # The epsilon the learner's accountant certifies (inf: not private).
        certified = (adaptive or oblivious).get("certified_epsilon", epsilon)
        eps = "-" if certified is None else f"{float(certified):g}"
        lines.append(
            f"| {learner} | {eps} | {n} | {t} | "
            f"{_cell(adaptive)} | {_cell(oblivious)} | "
            f"{_family(adaptive)} | {_family(oblivious)} | "
            f"{base['random_regret']:.1f} | "
            f"{bound} | {base['timesteps']} | {cpu} |"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Print the table of the given ``attack.json`` files."""
    paths = [Path(p) for p in (sys.argv[1:] if argv is None else argv)]
    if not paths:
        print("usage: python -m dp_experts_env.attack.table DIR/*/attack.json", file=sys.stderr)
        return 2
    try:
        reports = [_report(p) for p in paths]
    except ValueError as err:
        print(f"dp_experts_env.attack.table: error: {err}", file=sys.stderr)
        return 2
    print(markdown(reports))
    return 0


def _report(path: Path) -> dict:
    """One ``attack.json``; ValueError naming the file when it is not one (deep JSON too)."""
    from dp_experts_env.evaluation.store import loads, read_plain

    try:
        report = loads(read_plain(path))
    except (OSError, ValueError) as err:
        raise ValueError(f"{path} cannot be read as an attack report ({err})") from None
    if not isinstance(report, dict):
        raise ValueError(f"{path} is not an attack report (not a JSON object)")
    return report


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
