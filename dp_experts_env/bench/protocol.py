"""A benchmark protocol as data, read from a shipped version (docs/bench.md, "The protocol")."""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

import tomllib

__all__ = [
    "DEFAULT_VERSION",
    "Protocol",
    "Roster",
    "Task",
    "load_protocol",
    "parse_protocol",
    "protocol_text",
    "protocol_versions",
    "task_feedback",
]

#: Shipped versions and the TOML file (package data of ``dp_experts_env.bench``) holding each.
_VERSIONS = {"bench-v1": "protocols/bench_v1.toml", "bench-v2": "protocols/bench_v2.toml"}
#: The version ``dp-experts bench`` plays unless told otherwise (its quick reference set ships).
DEFAULT_VERSION = "bench-v2"

_TASK_KEYS = {"name", "capability", "env", "family", "sizes", "seeds", "metric", "quick"}
#: The ``adversary`` table of a learned-adversary task (bench-v2 on).
_ADVERSARY_KEYS = {"digest", "trained_against", "timesteps", "train_seed", "labels"}
#: The env id of a learned-adversary task (``dp_experts_env.attack.env.ATTACK_ID``).
LEARNED_ENV = "DPExperts-Attack-v0"
_METRICS = ("dynamic_regret", "static_regret")


@dataclass(frozen=True)
class Roster:
    """The learners every card of one feedback kind is scored against.

    Attributes:
        control: ``(name, keywords, label)`` of the no-learning control (score 0).
        references: the non-private reference learners; the best of them on a task scores 1.
    """

    control: tuple[str, Mapping[str, Any], str]
    references: tuple[tuple[str, Mapping[str, Any], str], ...]


@dataclass(frozen=True)
class Task:
    """One task of a protocol.

    Attributes:
        name: unique within the protocol (a results folder name).
        capability: the capability it measures (tasks are grouped by it on the card).
        env: registered env id. family: the loss model. sizes: the env's other keywords.
        seeds: runs per (learner, epsilon). metric: the regret column scored.
        adversary: a learned-adversary task's frozen policy (its ``digest`` and training,
            ``labels = "permuted"``); None for a grid task.
    """

    name: str
    capability: str
    env: str
    family: str
    sizes: Mapping[str, Any]
    seeds: int
    metric: str
    adversary: Mapping[str, Any] | None = None

    @property
    def learned(self) -> bool:
        """Whether it is a learned-adversary task (:mod:`dp_experts_env.bench.learned_task`)."""
        return self.adversary is not None

    def env_params(self) -> dict[str, Any]:
        """The env's keywords: the family and the sizes."""
        return {"family": self.family, **dict(self.sizes)}


@dataclass(frozen=True)
class Protocol:
    """A parsed protocol (:func:`load_protocol`).

    Attributes:
        version: e.g. ``"bench-v1"``. digest: SHA-256 of the parsed content (hex).
        epsilons: the privacy levels of private learners (``inf``: the noise removed).
        base_seed, n_record: as in a grid (:class:`~dp_experts_env.evaluation.Grid`).
        min_gap: a task is scored only where the best reference beats the control's mean
            regret by at least this fraction of it.
        rosters: per feedback kind (``full``, ``bandit``, ``oco``), its :class:`Roster`.
        tasks: the full tasks. quick_tasks: their ``--quick`` variants, same names and order.
    """

    version: str
    digest: str
    epsilons: tuple[float, ...]
    base_seed: int
    n_record: int
    min_gap: float
    rosters: Mapping[str, Roster]
    tasks: tuple[Task, ...]
    quick_tasks: tuple[Task, ...] = field(default=())

    def chosen(self, quick: bool) -> tuple[Task, ...]:
        """The tasks of a full or ``--quick`` card."""
        return self.quick_tasks if quick else self.tasks

    def capabilities(self) -> list[str]:
        """Capabilities in the order their first task appears."""
        return list(dict.fromkeys(t.capability for t in self.tasks))


def _roster(kind: str, data: Any) -> Roster:
    if not isinstance(data, Mapping) or set(data) != {"control", "references"}:
        raise ValueError(f"feedback.{kind} must have exactly 'control' and 'references'")

    def entry(item: Any) -> tuple[str, Mapping[str, Any], str]:
        if not (isinstance(item, list) and len(item) == 3 and isinstance(item[1], Mapping)):
            raise ValueError(f"feedback.{kind}: each learner is [name, {{keywords}}, label]")
        return str(item[0]), dict(item[1]), str(item[2])

    refs = tuple(entry(x) for x in data["references"])
    if not refs:
        raise ValueError(f"feedback.{kind}.references must list at least one learner")
    return Roster(entry(data["control"]), refs)


def _task(raw: Any, index: int) -> tuple[Task, Task]:
    if not isinstance(raw, Mapping):
        raise ValueError(f"[[task]] number {index + 1} must be a table")
    missing = _TASK_KEYS - set(raw)
    unknown = set(raw) - _TASK_KEYS - {"adversary"}
    if missing or unknown:
        raise ValueError(
            f"[[task]] number {index + 1}: missing {sorted(missing)}, unknown {sorted(unknown)}"
        )
    if raw["metric"] not in _METRICS:
        raise ValueError(f"task {raw['name']!r}: metric must be one of {_METRICS}")
    seeds = raw["seeds"]
    if not isinstance(seeds, int) or isinstance(seeds, bool) or seeds < 2:
        raise ValueError(f"task {raw['name']!r}: seeds must be an integer >= 2, got {seeds!r}")
    full = Task(
        name=str(raw["name"]),
        capability=str(raw["capability"]),
        env=str(raw["env"]),
        family=str(raw["family"]),
        sizes=dict(raw["sizes"]),
        seeds=seeds,
        metric=str(raw["metric"]),
        adversary=_adversary(raw),
    )
    quick = raw["quick"]
    if not isinstance(quick, Mapping) or not set(quick) <= {"sizes", "seeds"}:
        raise ValueError(f"task {full.name!r}: quick may set only 'sizes' and 'seeds'")
    q_seeds = quick.get("seeds", seeds)
    if not isinstance(q_seeds, int) or isinstance(q_seeds, bool) or q_seeds < 2:
        raise ValueError(f"task {full.name!r}: quick seeds must be an integer >= 2")
    q_sizes = {**full.sizes, **dict(quick.get("sizes", {}))}
    return full, Task(**{**full.__dict__, "sizes": q_sizes, "seeds": q_seeds})


def _adversary(raw: Mapping[str, Any]) -> dict[str, Any] | None:
    if "adversary" not in raw:
        if raw["env"] == LEARNED_ENV:
            raise ValueError(f"task {raw['name']!r}: env {LEARNED_ENV} needs an adversary table")
        return None
    adversary = raw["adversary"]
    if not isinstance(adversary, Mapping) or set(adversary) != _ADVERSARY_KEYS:
        raise ValueError(
            f"task {raw['name']!r}: adversary must have exactly {sorted(_ADVERSARY_KEYS)}"
        )
    if raw["env"] != LEARNED_ENV or raw["metric"] != "static_regret":
        raise ValueError(
            f"task {raw['name']!r}: a learned adversary plays env {LEARNED_ENV!r} with metric "
            f"'static_regret', got {raw['env']!r} and {raw['metric']!r}"
        )
    if not {"n_experts", "horizon"} <= set(raw["sizes"]):
        raise ValueError(f"task {raw['name']!r}: sizes must give n_experts and horizon")
    if adversary["labels"] != "permuted":
        raise ValueError(
            f"task {raw['name']!r}: adversary labels must be 'permuted', "
            f"got {adversary['labels']!r}"
        )
    return dict(adversary)


def _digest(data: Mapping[str, Any]) -> str:
    # inf is not JSON: spelt as a string.
    def plain(value: Any) -> Any:
        if isinstance(value, float) and math.isinf(value):
            return "inf" if value > 0 else "-inf"
        if isinstance(value, Mapping):
            return {str(k): plain(v) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [plain(v) for v in value]
        return value

    text = json.dumps(plain(data), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def parse_protocol(text: str) -> Protocol:
    """Parse and check a protocol's TOML text.

    Raises:
        ValueError: invalid TOML, a missing or unknown key, a duplicate task name, an epsilon
            that is not positive, a task whose feedback kind has no roster.
    """
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise ValueError(f"protocol is not valid TOML: {err}") from err
    expected = {"version", "epsilons", "base_seed", "n_record", "min_gap", "feedback", "task"}
    if set(data) != expected:
        raise ValueError(f"protocol keys must be {sorted(expected)}, got {sorted(data)}")
    epsilons = tuple(float(e) for e in data["epsilons"])
    if not epsilons or any(not e > 0 for e in epsilons):
        raise ValueError(f"protocol epsilons must be positive (inf allowed), got {epsilons}")
    min_gap = float(data["min_gap"])
    if not 0.0 <= min_gap < 1.0:
        raise ValueError(f"protocol min_gap must lie in [0, 1), got {min_gap}")
    rosters = {kind: _roster(kind, value) for kind, value in data["feedback"].items()}
    pairs = [_task(raw, i) for i, raw in enumerate(data["task"])]
    names = [full.name for full, _ in pairs]
    if len(set(names)) != len(names):
        raise ValueError(f"task names must be unique, got {names}")
    for full, _ in pairs:
        kind = task_feedback(full)
        if kind not in rosters:
            raise ValueError(f"task {full.name!r}: no [feedback.{kind}] roster")
    return Protocol(
        version=str(data["version"]),
        digest=_digest(data),
        epsilons=epsilons,
        base_seed=int(data["base_seed"]),
        n_record=int(data["n_record"]),
        min_gap=min_gap,
        rosters=rosters,
        tasks=tuple(full for full, _ in pairs),
        quick_tasks=tuple(quick for _, quick in pairs),
    )


def protocol_versions() -> list[str]:
    """The shipped protocol versions, oldest first."""
    return list(_VERSIONS)


def load_protocol(version: str = DEFAULT_VERSION) -> Protocol:
    """A shipped protocol by version.

    Raises:
        ValueError: an unknown version (the shipped ones listed), or a text declaring another.
    """
    protocol = parse_protocol(protocol_text(version))
    if protocol.version != version:
        raise ValueError(f"protocol file for {version!r} declares {protocol.version!r}")
    return protocol


def protocol_text(version: str) -> str:
    """A shipped protocol's TOML text, read through :mod:`importlib.resources`.

    Raises:
        ValueError: an unknown version (the shipped ones listed).
    """
    if version not in _VERSIONS:
        raise ValueError(f"unknown protocol version {version!r}; shipped: {protocol_versions()}")
    file = resources.files("dp_experts_env.bench").joinpath(_VERSIONS[version])
    return file.read_text(encoding="utf-8")


def task_feedback(task: Task) -> str:
    """The feedback kind of a task's env id (``full``, ``bandit``, ``oco``; learned: ``full``)."""
    from dp_experts_env.kinds import KINDS

    if task.learned:
        return "full"
    for spec in KINDS.values():
        if spec.env_id == task.env:
            return spec.feedback
    raise ValueError(
        f"task {task.name!r}: env {task.env!r} is not a registered kind's id; "
        f"known: {sorted(s.env_id for s in KINDS.values())}"
    )
