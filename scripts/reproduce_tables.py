"""The measured tables of docs/reproduce.md, generated from a ``dp-experts reproduce`` claims.csv.

``python scripts/reproduce_tables.py CLAIMS_CSV`` prints the markdown table of a run: per claim
the learner, the prediction, base seed 0's measurement with its 95% interval, the verdict at each
base seed, the verdict and its Holm-adjusted reading; then the count line. docs/reproduce.md
holds the output between ``<!-- generated: ... -->`` and ``<!-- end generated -->``, and
tests/test_reproduce_tables.py checks the docs equal it (a stale table fails).
"""

from __future__ import annotations

import csv
import math
import sys
from pathlib import Path

from dp_experts_env.evaluation.reproduce import verdict_counts


def _band(row: dict[str, str]) -> str:
    predicted, tolerance = float(row["predicted"]), float(row["tolerance"])
    if row["kind"] == "at_most":
        return f"<= {predicted + tolerance:.3g}"
    if row["kind"] == "at_least":
        return f">= {predicted - tolerance:.3g}"
    return f"{predicted:.3g} +- {tolerance:.3g}"


def _num(text: str) -> str:
    value = float(text)
    return "nan" if math.isnan(value) else f"{value:.3g}"


def _seed_verdict_words(text: str) -> str:
    """``0: holds 0.5 [0.4, 0.6]; 1: not private nan [nan, nan]`` -> ``holds, not private``."""
    out = []
    for part in text.split("; "):
        words = part.split(": ", 1)[1] if ": " in part else part
        # a verdict may have several words ("not private", "untestable at these sizes")
        out.append(" ".join(w for w in words.split(" ") if not _is_number(w)))
    return ", ".join(out)


def _is_number(word: str) -> bool:
    try:
        float(word.strip("[],"))
    except ValueError:
        return False
    return True


def table(rows: list[dict[str, str]]) -> str:
    """The markdown table and count lines of a run's claims.csv rows."""
    seeds = rows[0]["seeds"].replace(" ", ", ") if rows else ""
    lines = [
        f"| claim | learner | predicted | measured [95% CI] (base seed 0) | verdicts at base "
        f"seeds {seeds} | verdict | Holm-adjusted |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in rows:
        per_seed = _seed_verdict_words(r["seed_verdicts"])
        lines.append(
            f"| {r['claim']} | {r['learner']} | {_band(r)} | {_num(r['measured'])} "
            f"[{_num(r['ci_low'])}, {_num(r['ci_high'])}] | {per_seed} "
            f"| **{r['verdict']}** | {r['holm_verdict']} |"
        )
    lines += [
        "",
        verdict_counts([(r["claim"], r["verdict"]) for r in rows]),
        "Holm-adjusted: "
        + verdict_counts([(r["claim"], r["holm_verdict"]) for r in rows]).removeprefix(
            "Verdicts of "
        ),
    ]
    return "\n".join(lines)


def read(path: str | Path) -> list[dict[str, str]]:
    """The rows of a claims.csv."""
    with open(path, newline="") as handle:
        return list(csv.DictReader(handle))


def main(argv: list[str]) -> int:
    """Print the table of ``argv[0]`` (a claims.csv)."""
    if len(argv) != 1:
        print("usage: python scripts/reproduce_tables.py CLAIMS_CSV", file=sys.stderr)
        return 2
    print(table(read(argv[0])))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
