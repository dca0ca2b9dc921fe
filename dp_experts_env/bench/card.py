"""A learner's card as data: what ``bench.json`` holds (schema in docs/bench.md).

:func:`build_card` turns the task rows played by :func:`~dp_experts_env.bench.runner.play_tasks`
into the card's dict; :func:`reference_version` is the code version that keys a reference set
(the sources that produce the control's and the references' rows, and the scoring code).
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

from dp_experts_env.bench.protocol import Protocol, task_feedback
from dp_experts_env.bench.runner import Entrant, TaskRows, applicability, reference_label
from dp_experts_env.bench.scores import (
    capability_scores,
    eps_key,
    strip_runs,
    task_scale,
    task_scores,
)

__all__ = ["SCHEMA", "build_card", "headline", "headline_epsilon", "reference_version"]

#: Version of the bench.json layout (a change of fields bumps it).
SCHEMA = "dp-experts-bench/1"


def reference_version(protocol: Protocol) -> str:
    """Hash of the code producing a protocol's control and reference rows, and the scoring code.

    Two cards with the same protocol and this version have identical control and reference
    rows (``C`` and ``B`` of every task), so their scores are on one scale.
    """
    from dp_experts_env.evaluation.store import code_fingerprint, module_fingerprint

    parts: dict[str, Any] = {}
    for task in protocol.tasks:
        roster = protocol.rosters[task_feedback(task)]
        for name, _, _ in (roster.control, *roster.references):
            # The store's key may also name the plug-ins loaded in this process; they do not
            # change a built-in learner's rows on a built-in family, so a card benched with a
            # plug-in loaded keeps the version of the set it is ranked against.
            fingerprint = code_fingerprint(name, task.env)
            parts[f"{name}@{task.env}"] = {k: fingerprint[k] for k in ("package", "agent", "env")}
    parts["bench"] = module_fingerprint(
        ["dp_experts_env.bench.scores", "dp_experts_env.bench.runner"],
        lambda module: module.startswith("dp_experts_env.bench"),
    )
    text = json.dumps(parts, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


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
    code_version: str,
    privacy: Mapping[str, Any] | None = None,
    claims: Sequence[Mapping[str, Any]] = (),
) -> dict[str, Any]:
    """The card of ``entrant`` from the tasks' rows (``played``: every task it plays).

    Args:
        protocol: the protocol played.
        entrant: the learner.
        played: ``{task name: TaskRows}``, as :func:`~dp_experts_env.bench.runner.play_tasks`
            returns (tasks the learner does not play may be missing or present).
        quick: whether the ``--quick`` tasks were played.
        command: the exact command line that produced the card.
        code_version: :func:`reference_version` of the protocol.
        privacy: ``{"certified": ..., "audit": ...}`` (:mod:`dp_experts_env.bench.privacy`).
        claims: claim verdict records.
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
        "code_version": code_version,
        "command": command,
        "learner": {
            "name": entrant.name,
            "params": dict(entrant.params),
            "label": entrant.label,
            "feedback": spec.feedback,
            "private": bool(spec.private),
            "summary": getattr(spec, "summary", ""),
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
