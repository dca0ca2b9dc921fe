"""Reference sets of card summaries and ranking against one (docs/bench.md, "The leaderboard")."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from dp_experts_env.bench.card import SCHEMA, headline
from dp_experts_env.bench.runner import Entrant
from dp_experts_env.evaluation.store import loads

__all__ = [
    "REFERENCE_SCHEMA",
    "VersionMismatch",
    "card_key",
    "comparable_rows",
    "load_reference_set",
    "parse_reference_set",
    "rank",
    "reference_set",
    "stale_rows",
    "summary",
]

#: Version of the reference-set layout.
REFERENCE_SCHEMA = "dp-experts-bench-reference/2"


class VersionMismatch(ValueError):
    """Cards or a reference set of different protocol or code versions were to be ranked."""


def card_key(card: Mapping[str, Any]) -> dict[str, Any]:
    """What must be equal for two cards to be ranked together."""
    return {
        "protocol": card["protocol"]["version"],
        "digest": card["protocol"]["digest"],
        "quick": bool(card["protocol"]["quick"]),
        "scoring": card["scoring"],
    }


def summary(card: Mapping[str, Any]) -> dict[str, Any]:
    """A card's row: who, its capability means at the headline epsilon, ``overall`` (their IQM)."""
    from dp_experts_env.evaluation.stats import iqm

    scores = headline(card)
    values = [v for v in scores.values() if v is not None]
    learner = card["learner"]
    return {
        "label": learner["label"],
        "name": learner["name"],
        "params": dict(learner["params"]),
        "feedback": learner["feedback"],
        "private": learner["private"],
        "headline_epsilon": card["headline_epsilon"],
        "capabilities": scores,
        "overall": float(iqm(values)) if values else None,
        "fingerprint": learner["fingerprint"],
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
    """``{task: [C, B]}`` over the cards; VersionMismatch when two differ on a task."""
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
        ValueError: the file cannot be read or is not a reference set of this schema.
    """
    path = Path(path)
    try:
        text = path.read_text()
    except OSError as err:
        raise ValueError(f"reference set {str(path)!r} cannot be read: {err}") from err
    return parse_reference_set(text, repr(str(path)))


def parse_reference_set(text: str, where: str = "the reference set") -> dict[str, Any]:
    """A reference set from its JSON text (``where`` names it in errors).

    Raises:
        ValueError: not JSON, or not a reference set of this schema (an older set: re-make it).
    """
    try:
        data = loads(text)
    except ValueError as err:  # TooDeep (a planted deep line) is a ValueError
        raise ValueError(f"reference set {where} cannot be read: {err}") from err
    if not isinstance(data, dict) or data.get("schema") != REFERENCE_SCHEMA:
        found = data.get("schema") if isinstance(data, dict) else None
        raise ValueError(f"{where} is not a reference set ({REFERENCE_SCHEMA}; found {found})")
    return data


def comparable_rows(card: Mapping[str, Any], reference: Mapping[str, Any]) -> list[Entrant]:
    """The set's learners a card is ranked among (its feedback kind, the card's own aside)."""
    mine = card["learner"]
    return [
        Entrant(e["name"], dict(e.get("params", {})))
        for e in reference["entries"]
        if e["label"] != mine["label"] and _same_kind(e["feedback"], mine["feedback"])
    ]


def stale_rows(reference: Mapping[str, Any], current: Mapping[str, str]) -> list[str]:
    """Labels of the set's rows whose fingerprint is not ``current[label]`` (in set order).

    Args:
        reference: a reference set.
        current: ``{label: fingerprint now}`` of the rows to check (others are not reported).
    """
    return [
        e["label"]
        for e in reference["entries"]
        if e["label"] in current and current[e["label"]] != e["fingerprint"]
    ]


def rank(
    card: Mapping[str, Any],
    reference: Mapping[str, Any] | None,
    current: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """The card's leaderboard: its row among the set's current rows of its kind, by overall.

    Args:
        card: the card ranked.
        reference: the reference set, or None (the card is ranked alone).
        current: ``{label: fingerprint}`` now of every row of :func:`comparable_rows`
            (required with a set); a row whose fingerprint moved is left out, named in ``note``.

    Raises:
        VersionMismatch: the set's key differs from the card's, or a task's scale differs from
            the set's beyond 1e-9 relative.
        ValueError: a reference set without ``current`` for each of its comparable rows.
    """
    mine = summary(card)
    if reference is None:
        rows, note = [mine], "no reference set: the card is ranked alone"
    else:
        if dict(reference["key"]) != card_key(card):
            raise VersionMismatch(
                f"reference set key {reference['key']} differs from the card's {card_key(card)}: "
                "cards of different protocol or scoring versions are never ranked together; "
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
        wanted = {e.label for e in comparable_rows(card, reference)}
        if current is None or not wanted <= set(current):
            missing = sorted(wanted - set(current or {}))
            raise ValueError(f"rank needs the current fingerprints of the rows {missing}")
        stale = set(stale_rows(reference, {k: current[k] for k in wanted}))
        rows = [dict(e) for e in reference["entries"] if e["label"] in wanted - stale]
        rows.append(mine)
        note = ""
        if stale:
            names = [e["label"] for e in reference["entries"] if e["label"] in stale]
            note = (
                "left out (they play differently since the set was written; --replay-stale "
                f"re-plays them): {', '.join(names)}"
            )
    same = [r for r in rows if _same_kind(r["feedback"], mine["feedback"])]
    same.sort(key=lambda r: (r["overall"] is None, -(r["overall"] or 0.0), r["label"]))
    for i, row in enumerate(same):
        row["rank"] = i + 1
        row["this"] = row["label"] == mine["label"]
    return {"key": card_key(card), "rows": same, "note": note}


def _same_kind(a: str, b: str) -> bool:
    """Learners comparable on one table: same feedback, ``any`` with full and bandit."""
    return a == b or ("any" in (a, b) and "oco" not in (a, b))
