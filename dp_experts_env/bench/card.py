"""A learner's card as data: what ``bench.json`` holds (schema in docs/bench.md, "Outputs")."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from dp_experts_env.bench.protocol import Protocol
from dp_experts_env.bench.runner import Entrant, TaskRows, applicability, reference_label
from dp_experts_env.bench.scores import (
    capability_scores,
    eps_key,
    strip_runs,
    task_scale,
    task_scores,
)

__all__ = ["SCHEMA", "build_card", "headline", "headline_epsilon"]

#: Version of the bench.json layout (a change of fields bumps it).
SCHEMA = "dp-experts-bench/2"


def headline_epsilon(private: bool) -> str:
    """The epsilon a card ranks at: 1 for a private learner, inf (its only one) otherwise."""
    return "1" if private else "inf"


def build_card(
    protocol: Protocol,
    entrant: Entrant,
    played: Mapping[str, TaskRows],
    *,
    quick: bool,
    command: str,
    scoring: str,
    fingerprint: str,
    privacy: Mapping[str, Any] | None = None,
    claims: Sequence[Mapping[str, Any]] = (),
) -> dict[str, Any]:
    """The card of ``entrant`` from the task rows it played.

    Args:
        protocol: the protocol played.
        entrant: the learner.
        played: ``{task name: TaskRows}`` (:func:`dp_experts_env.bench.runner.play_tasks`);
            tasks the learner does not play may be absent.
        quick: whether the ``--quick`` tasks were played.
        command: the exact command line that produced the card.
        scoring: the scoring code's fingerprint (:mod:`dp_experts_env.bench.fingerprint`).
        fingerprint: the learner's behaviour fingerprint (same module).
        privacy: ``{"certified": ..., "audit": ...}`` (:mod:`dp_experts_env.bench.privacy`).
        claims: claim verdict records.

    Raises:
        ValueError: a task the learner plays is missing from ``played``.
    """
    import agents

    spec = agents.spec(entrant.name)
    tasks_out = []
    per_task: dict[str, Any] = {}
    capabilities: dict[str, list[str]] = {}
    for task in protocol.chosen(quick):
        record: dict[str, Any] = {
            "name": task.name,
            "capability": task.capability,
            "env": task.env,
            "family": task.family,
            "sizes": dict(task.sizes),
            "seeds": task.seeds,
            "metric": task.metric,
        }
        reason = applicability(entrant.name, task)
        if reason:
            record.update(status="n/a", reason=reason, scale=None, scores={})
            tasks_out.append(record)
            continue
        if task.name not in played:
            raise ValueError(f"task {task.name!r} was not played")
        rows = played[task.name]
        scale = task_scale(rows, protocol.min_gap)
        label = reference_label(protocol, task, entrant)
        scores = task_scores(rows, label, protocol.epsilons, scale)
        per_task[task.name] = scores
        capabilities.setdefault(task.capability, []).append(task.name)
        record.update(
            status="not scored" if scale["reason"] else "scored",
            reason=scale["reason"],
            scale=scale,
            scores=strip_runs({task.name: scores})[task.name],
        )
        tasks_out.append(record)
    caps = capability_scores(per_task, capabilities)
    cap_out = {}
    for capability in protocol.capabilities():
        if capability not in capabilities:
            reasons = {t["reason"] for t in tasks_out if t["capability"] == capability}
            cap_out[capability] = {
                "status": "n/a",
                "reason": "; ".join(sorted(reasons)),
                "scores": {},
            }
        elif not caps[capability]:
            cap_out[capability] = {
                "status": "not scored",
                "reason": "no task of this capability is scored",
                "scores": {},
            }
        else:
            cap_out[capability] = {"status": "scored", "reason": "", "scores": caps[capability]}
    return {
        "schema": SCHEMA,
        "protocol": {"version": protocol.version, "digest": protocol.digest, "quick": quick},
        "scoring": scoring,
        "command": command,
        "learner": {
            "name": entrant.name,
            "params": dict(entrant.params),
            "label": entrant.label,
            "feedback": spec.feedback,
            "private": bool(spec.private),
            "summary": getattr(spec, "summary", ""),
            "fingerprint": fingerprint,
        },
        "epsilons": [eps_key(e) for e in protocol.epsilons],
        "headline_epsilon": headline_epsilon(bool(spec.private)),
        "tasks": tasks_out,
        "capabilities": cap_out,
        "privacy": dict(privacy or {}),
        "claims": [dict(c) for c in claims],
    }


def headline(card: Mapping[str, Any]) -> dict[str, float | None]:
    """Per capability, the mean score at the card's headline epsilon (None when absent)."""
    key = card["headline_epsilon"]
    out: dict[str, float | None] = {}
    for capability, entry in card["capabilities"].items():
        value = entry["scores"].get(key, {}).get("mean")
        out[capability] = None if value is None or not math.isfinite(value) else value
    return out
