"""Write the reference set of a `dp-experts bench --all` folder from its stored task grids.

A reference row is `leaderboard.summary(card)`: the learner, its headline capability scores,
overall and fingerprint, all read from the task rows; a card's audit and claims do not enter
it. So once every task grid of `bench --all` is stored, this writes the reference set
`bench --all` writes at its end, without waiting for the built-ins' audits and claims (the
claims of `svt-restart:paper`, whose all-windows detector is O(T N) a round, take hours at the
claims' horizons). tests/test_bench_card.py checks it against `bench_all` on a small protocol.

Usage: python scripts/reference_from_tasks.py results/bench-all OUT.json [--quick]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from dp_experts_env.bench.card import build_card
from dp_experts_env.bench.command import builtin_learners
from dp_experts_env.bench.fingerprint import fingerprints, scoring_fingerprint
from dp_experts_env.bench.leaderboard import reference_set
from dp_experts_env.bench.protocol import Protocol, load_protocol
from dp_experts_env.bench.runner import Entrant, play_tasks


def reference_from_tasks(
    folder: str | Path,
    *,
    quick: bool = False,
    learners: list[str] | None = None,
    protocol: Protocol | None = None,
    command: str = "dp-experts bench --all",
) -> dict[str, Any]:
    """The reference set of the task rows stored under ``folder`` (plays what is missing)."""
    protocol = protocol or load_protocol()
    entrants = [Entrant(n, {}) for n in (learners or builtin_learners())]
    played = play_tasks(protocol, entrants, Path(folder), quick=quick, backend="serial")
    prints = fingerprints(protocol, entrants)
    cards = [
        build_card(
            protocol,
            e,
            played,
            quick=quick,
            command=command,
            scoring=scoring_fingerprint(),
            fingerprint=prints[e.label],
        )
        for e in entrants
    ]
    return reference_set(cards)


def main() -> None:
    """Command line: FOLDER OUT.json [--quick]."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder")
    parser.add_argument("out")
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    ref = reference_from_tasks(args.folder, quick=args.quick)
    Path(args.out).write_text(json.dumps(ref, indent=1, allow_nan=False))
    print(f"{len(ref['entries'])} rows; key {ref['key']}")


if __name__ == "__main__":
    main()
