"""Certified claims of every private learner at epsilon 0.5, 2 and 8 (a claim lock).

``python tests/_claim_snapshot.py OUT.json`` writes ``{case: [epsilon, delta, certified]}``
(numbers only: the accountant's text is checked against the declaration in
tests/test_privacy_declaration.py, not against a frozen string);
the reference in tests/data/claim_values.json was written by the code before privacy was
declared as data (issue 24), and tests/test_privacy_declaration.py checks that every claim
composed from a declaration equals it (or is smaller, with the reason named there).
"""

from __future__ import annotations

import json
import sys
from typing import Any

import agents

EPSILONS = (0.5, 2.0, 8.0)
#: (N, T, K) per feedback kind; OCO learners read (dim, T).
GAMES = {
    "full": {"n_experts": 5, "horizon": 120},
    "bandit": {"n_experts": 5, "horizon": 120, "n_arms": 3},
    "oco": {"dim": 2, "horizon": 60},
}
#: variants with their own accounting (selector, mode, composition, delta).
VARIANTS: dict[str, list[dict[str, Any]]] = {
    "limited-updates": [{"selector": "em"}],
    "svt-restart": [{"selector": "em"}, {"mode": "paper"}],
    "noisy-clipped-hedge": [{"mode": "paper"}, {"noise": "grid"}],
    "meta-expert-reduction": [{"mode": "paper"}, {"n_switches": 0}],
    "private-batched-exp4": [{"composition": "pure"}, {"composition": "advanced"}],
    "private-lazy-hedge": [{"delta": 1e-6}],
    "private-shrinking-dartboard": [{"delta": 1e-6}, {"mode": "paper"}],
    "dp-ftrl-tree": [{"noise": "grid"}],
    "dp-ftrl-oco": [{"law": "gaussian", "delta": 1e-5}],
    "p-comw": [{"body": "ball"}, {"mode": "paper"}],
    "gaussian-dp-ftrl-oco": [{"delta": 1e-6}],
}


def _private() -> list[dict[str, Any]]:
    return [a for a in agents.available() if a["private"]]


def claims() -> dict[str, list[Any]]:
    """``{"name|eps|variant": [epsilon, delta, certified]}`` for every private learner."""
    out: dict[str, list[Any]] = {}
    for spec in sorted(_private(), key=lambda a: a["name"]):
        name = spec["name"]
        game = GAMES.get(spec["feedback"], GAMES["full"])
        for variant in [{}, *VARIANTS.get(name, [])]:
            for eps in EPSILONS:
                try:
                    agent = agents.make(name, epsilon=eps, seed=0, **game, **variant)
                    claim = agent.privacy
                except (TypeError, ValueError) as err:  # a variant a learner refuses
                    out[_key(name, eps, variant)] = ["refused", type(err).__name__]
                    continue
                out[_key(name, eps, variant)] = [claim.epsilon, claim.delta, claim.certified]
    return out


def _key(name: str, eps: float, variant: dict[str, Any]) -> str:
    shown = ",".join(f"{k}={v}" for k, v in sorted(variant.items()))
    return f"{name}|{eps:g}|{shown}"


if __name__ == "__main__":
    with open(sys.argv[1], "w") as handle:
        json.dump(claims(), handle, indent=1, sort_keys=True)
