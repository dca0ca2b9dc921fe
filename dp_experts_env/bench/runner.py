"""Play a protocol's tasks: one stored, resumable grid per task in ``OUT/runs/<task>``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dp_experts_env.bench.protocol import Protocol, Roster, Task, task_feedback

__all__ = [
    "Entrant",
    "TaskRows",
    "applicability",
    "learner_feedback",
    "play_tasks",
    "reference_label",
    "roster_labels",
    "task_grid",
]


@dataclass(frozen=True)
class Entrant:
    """A learner benched: registry name, keywords, and the label its rows carry."""

    name: str
    params: Mapping[str, Any]

    @property
    def label(self) -> str:
        """Its label in grids and on the card (the name, with its keywords when given)."""
        if not self.params:
            return self.name
        inner = ",".join(f"{k}={v}" for k, v in sorted(self.params.items()))
        return f"{self.name}[{inner}]"


@dataclass(frozen=True)
class TaskRows:
    """A task's final-round rows (every learner of its grid) and the labels to read them by."""

    task: Task
    frame: Any  # pandas DataFrame of final rows
    control: str
    references: tuple[str, ...]


def learner_feedback(name: str) -> str:
    """The registry's feedback kind of a learner (``full``, ``bandit``, ``oco`` or ``any``)."""
    import agents

    return agents.spec(name).feedback


def applicability(name: str, task: Task) -> str:
    """Why ``name`` does not play ``task``, ``""`` when it does (its kind's; ``any``: not OCO)."""
    mine = learner_feedback(name)
    theirs = task_feedback(task)
    if mine == theirs or (mine == "any" and theirs != "oco"):
        return ""
    return f"n/a: a {mine}-feedback learner; this task gives {theirs} feedback"


def _entries(roster: Roster, entrants: Sequence[Entrant]) -> list[Any]:
    from dp_experts_env.evaluation import AgentEntry

    entries = [
        AgentEntry(n, dict(p), label) for n, p, label in (roster.control, *roster.references)
    ]
    seen = {(e.name, e.key) for e in entries}
    for entrant in entrants:
        entry = AgentEntry(entrant.name, dict(entrant.params), entrant.label)
        if (entry.name, entry.key) in seen:
            continue  # a reference benched as itself: the same runs under its roster label
        seen.add((entry.name, entry.key))
        entries.append(entry)
    return entries


def task_grid(protocol: Protocol, task: Task, entrants: Sequence[Entrant]) -> Any:
    """The grid of one task: control, references, then the entrants (a Grid)."""
    from dp_experts_env.evaluation import EnvEntry, Grid

    roster = protocol.rosters[task_feedback(task)]
    return Grid(
        agents=_entries(roster, entrants),
        envs=[EnvEntry(task.env, task.env_params(), task.name)],
        epsilons=list(protocol.epsilons),
        n_seeds=task.seeds,
        base_seed=protocol.base_seed,
        n_record=protocol.n_record,
    )


def roster_labels(protocol: Protocol, task: Task) -> tuple[str, tuple[str, ...]]:
    """Labels of a task's control and reference learners in its rows."""
    roster = protocol.rosters[task_feedback(task)]
    return roster.control[2], tuple(r[2] for r in roster.references)


def reference_label(protocol: Protocol, task: Task, entrant: Entrant) -> str:
    """The label an entrant's rows carry in a task's grid (a roster label when it is one)."""
    roster = protocol.rosters[task_feedback(task)]
    from dp_experts_env.evaluation import AgentEntry

    key = AgentEntry(entrant.name, dict(entrant.params)).key
    for name, params, label in (roster.control, *roster.references):
        if name == entrant.name and AgentEntry(name, dict(params)).key == key:
            return label
    return entrant.label


def play_tasks(
    protocol: Protocol,
    entrants: Sequence[Entrant],
    out: str | Path,
    *,
    quick: bool = False,
    backend: str = "local",
    n_jobs: int | None = None,
    address: str | None = None,
    progress: bool = False,
    log: Any = None,
) -> dict[str, TaskRows]:
    """Run every task some entrant plays (no other); return its final rows by task name."""
    from dp_experts_env.evaluation import run_grid

    out = Path(out)
    played: dict[str, TaskRows] = {}
    for task in protocol.chosen(quick):
        players = [e for e in entrants if not applicability(e.name, task)]
        if not players:
            continue
        control, references = roster_labels(protocol, task)
        if task.learned:
            from dp_experts_env.bench.learned_task import play_learned_task

            entries = _entries(protocol.rosters[task_feedback(task)], players)
            frame = play_learned_task(
                task,
                [(e.name, e.params, e.display) for e in entries],
                protocol.epsilons,
                out / "runs" / task.name,
            )
            played[task.name] = TaskRows(task, frame, control, references)
            continue
        grid = task_grid(protocol, task, players)
        frame = run_grid(
            grid,
            out / "runs" / task.name,
            backend=backend,
            n_jobs=n_jobs,
            address=address,
            progress=progress,
            log=log,
            report=False,
            rows="final",
        )
        played[task.name] = TaskRows(task, frame, control, references)
    return played
