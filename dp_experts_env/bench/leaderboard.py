"""The leaderboard: a reference set of built-in learners' card summaries, and ranking against it.

A reference set (``reference-set.json``, written by ``dp-experts bench --all``) holds one summary
per learner (its capability scores at its headline epsilon) and its key: the protocol version
and digest, quick or full, and the code version (:func:`~dp_experts_env.bench.card
.reference_version`). A card is ranked only among summaries of the same key (:func:`rank`
refuses anything else), and a summary whose learner's code changed since is left out with its
name (:func:`learner_code`).
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from dp_experts_env.bench.card import SCHEMA, headline
from dp_experts_env.evaluation.store import loads

__all__ = [
    "REFERENCE_SCHEMA",
    "VersionMismatch",
    "card_key",
    "learner_code",
    "load_reference_set",
    "rank",
    "reference_set",
    "summary",
]

#: Version of the reference-set layout.
REFERENCE_SCHEMA = "dp-experts-bench-reference/1"


class VersionMismatch(ValueError):
    """Cards or a reference set of different protocol or code versions were to be ranked."""


def card_key(card: Mapping[str, Any]) -> dict[str, Any]:
    """What must be equal for two cards to be ranked together."""
    return {
        "protocol": card["protocol"]["version"],
        "digest": card["protocol"]["digest"],
        "quick": bool(card["protocol"]["quick"]),
        "code_version": card["code_version"],
    }


def learner_code(name: str, env_ids: Iterable[str]) -> str:
    """Hash of a learner's code as the results store keys it, over the envs it plays."""
    from dp_experts_env.evaluation.store import code_fingerprint

    parts = {env: code_fingerprint(name, env)["agent"] for env in sorted(set(env_ids))}
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()[:16]


def _played_envs(card: Mapping[str, Any]) -> list[str]:
    return sorted({t["env"] for t in card["tasks"] if t["status"] != "n/a"})


def summary(card: Mapping[str, Any]) -> dict[str, Any]:
    """A card's leaderboard row: who, its capability means at the headline epsilon, overall.

    ``overall`` is the IQM (rliable's 25% trimmed mean) of the capability scores: one capability
    far below 0 (a private learner punished by an adaptive adversary) does not decide the rank.
    """
    from dp_experts_env.evaluation.stats import iqm

    scores = headline(card)
    values = [v for v in scores.values() if v is not None]
    learner = card["learner"]
    return {
        "label": learner["label"],
        "name": learner["name"],
        "feedback": learner["feedback"],
        "private": learner["private"],
        "headline_epsilon": card["headline_epsilon"],
        "capabilities": scores,
        "overall": float(iqm(values)) if values else None,
        "learner_code": learner_code(learner["name"], _played_envs(card)),
    }


def reference_set(cards: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The reference set of cards sharing one key.

    Raises:
        VersionMismatch: two cards of different protocol or code versions.
    """
    if not cards:
        raise ValueError("a reference set needs at least one card")
    key = card_key(cards[0])
    for card in cards[1:]:
        if card_key(card) != key:
            raise VersionMismatch(
                f"card of {card['learner']['label']!r} has key {card_key(card)}, not {key}"
            )
    return {
        "schema": REFERENCE_SCHEMA,
        "card_schema": SCHEMA,
        "key": key,
        "scales": _scales(cards),
        "entries": [summary(c) for c in cards],
    }


def _scales(cards: Sequence[Mapping[str, Any]]) -> dict[str, list[float]]:
    """``{task: [C, B]}`` over the cards (the scale of every task some card played).

    Raises:
        VersionMismatch: two cards scored one task on different scales.
    """
    out: dict[str, list[float]] = {}
    for card in cards:
        for task, scale in _card_scales(card).items():
            if out.setdefault(task, scale) != scale:
                raise VersionMismatch(f"task {task!r} scored on two scales: {out[task]}, {scale}")
    return out


def _card_scales(card: Mapping[str, Any]) -> dict[str, list[float]]:
    return {
        t["name"]: [t["scale"]["control_mean"], t["scale"]["best_mean"]]
        for t in card["tasks"]
        if t["scale"] is not None
    }


def load_reference_set(path: str | Path) -> dict[str, Any]:
    """Read a reference set written by ``dp-experts bench --all``.

    Raises:
        ValueError: the file is not a reference set of this schema.
    """
    path = Path(path)
    try:
        data = loads(path.read_text())
    except (OSError, ValueError) as err:  # TooDeep (a planted deep line) is a ValueError
        raise ValueError(f"reference set {str(path)!r} cannot be read: {err}") from err
    if not isinstance(data, dict) or data.get("schema") != REFERENCE_SCHEMA:
        raise ValueError(f"{str(path)!r} is not a reference set ({REFERENCE_SCHEMA})")
    return data


def rank(card: Mapping[str, Any], reference: Mapping[str, Any] | None) -> dict[str, Any]:
    """The card's leaderboard: its row among the reference set's rows of its feedback kind.

    Rows are sorted by overall score (the IQM of the capability scores at each learner's
    headline epsilon; None last). Summaries whose learner's code changed since the set was
    written are left out and named in ``note``.

    Raises:
        VersionMismatch: the set's key (protocol version, digest, quick, code version) differs
            from the card's: such cards are never ranked together; or a task's scale (the
            control's and the best reference's mean regret) differs from the set's beyond
            float rounding (1e-9 relative).
    """
    mine = summary(card)
    if reference is None:
        rows, note = [mine], "no reference set: the card is ranked alone"
    else:
        if dict(reference["key"]) != card_key(card):
            raise VersionMismatch(
                f"reference set key {reference['key']} differs from the card's {card_key(card)}: "
                "cards of different protocol or code versions are never ranked together; "
                "re-play the reference set with --recompute"
            )
        for task, scale in _card_scales(card).items():
            theirs = reference["scales"].get(task)
            close = theirs is None or all(
                math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)
                for a, b in zip(scale, theirs, strict=True)
            )
            if not close:
                raise VersionMismatch(
                    f"task {task!r}: the card's control and best reference means {scale} differ "
                    f"from the reference set's {theirs}: the scores are on other scales"
                )
        stale, rows = [], []
        for entry in reference["entries"]:
            if entry["label"] == mine["label"]:
                continue  # the card's own learner: its fresh row below
            envs = [t["env"] for t in card["tasks"]]
            if entry["learner_code"] != _reference_code(entry, envs):
                stale.append(entry["label"])
                continue
            rows.append(dict(entry))
        rows.append(mine)
        note = f"left out (their code changed since the set): {', '.join(stale)}" if stale else ""
    same = [r for r in rows if _same_kind(r["feedback"], mine["feedback"])]
    same.sort(key=lambda r: (r["overall"] is None, -(r["overall"] or 0.0), r["label"]))
    for i, row in enumerate(same):
        row["rank"] = i + 1
        row["this"] = row["label"] == mine["label"]
    return {"key": card_key(card), "rows": same, "note": note}


def _reference_code(entry: Mapping[str, Any], env_ids: Sequence[str]) -> str:
    """The entry's learner code now, over the envs of its feedback kind among ``env_ids``."""
    from dp_experts_env.kinds import KINDS

    feedback = {spec.env_id: spec.feedback for spec in KINDS.values()}
    plays = [e for e in env_ids if _same_kind(entry["feedback"], feedback[e])]
    return learner_code(entry["name"], plays)


def _same_kind(a: str, b: str) -> bool:
    """Learners comparable on one table: same feedback, ``any`` with full and bandit."""
    return a == b or ("any" in (a, b) and "oco" not in (a, b))


def finite(value: Any) -> bool:
    """True for a finite number."""
    return isinstance(value, (int, float)) and math.isfinite(value)
