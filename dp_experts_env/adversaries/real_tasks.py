"""Real-data tasks: loss matrices of online classifiers on datasets bundled with scikit-learn.

Oblivious families ``digits`` and ``breast_cancer`` replay shipped matrices (built by
``scripts/make_real_tasks.py``); data, S and licences: docs/environments.md, "Real-data tasks".
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from dp_experts_env._validation import check_int
from dp_experts_env.adversaries.base import Adversary, Round
from dp_experts_env.adversaries.oblivious import FROM_LOSSES, FromLosses
from dp_experts_env.adversaries.params import FamilyParams
from dp_experts_env.adversaries.registry import register_family

__all__ = ["DATA_DIR", "REAL_TASKS", "RealTask", "load_task"]

DATA_DIR = Path(__file__).resolve().parent / "data"
#: family name -> dataset (the .npz file's stem).
REAL_TASKS = ("digits", "breast_cancer")


@dataclass(frozen=True)
class RealTaskParams(FamilyParams):
    """No knobs: the data fix N and T (an env fills no size; ``horizon`` may cut a prefix)."""

    FILLED: ClassVar[tuple[str, ...] | None] = ()


@functools.cache
def load_task(task: str) -> dict[str, Any]:
    """The shipped task, read once.

    Returns:
        ``losses`` (T, N) float64 read-only, ``experts`` (names), ``segment_starts`` (0-based
        first rows), ``n_switches`` (S) and the ``sklearn_version`` that built it.
    """
    if task not in REAL_TASKS:
        raise ValueError(f"task must be one of {list(REAL_TASKS)}, got {task!r}")
    with np.load(DATA_DIR / f"{task}.npz", allow_pickle=False) as data:
        losses = data["losses"].astype(np.float64)
        losses.flags.writeable = False
        return {
            "losses": losses,
            "experts": [str(e) for e in data["experts"]],
            "segment_starts": data["segment_starts"].astype(np.int64),
            "n_switches": int(data["n_switches"]),
            "sklearn_version": str(data["sklearn_version"]),
        }


class RealTask(Adversary):
    """Replay of a shipped real-data loss matrix with its documented change points.

    Args:
        n_experts: unset (or None) or the task's N (8 classifiers).
        horizon: unset (or None) for the whole stream, or a prefix length (S counts the change
            points inside it).
        params: :class:`RealTaskParams` (no knobs).
    """

    TASK: ClassVar[str] = ""
    FIXED_SIZES: ClassVar[tuple[str, ...]] = ("n_experts",)
    has_segments = True

    def __init__(
        self,
        n_experts: int | None | FromLosses = FROM_LOSSES,
        horizon: int | None | FromLosses = FROM_LOSSES,
        params: RealTaskParams | None = None,
        **knobs: Any,
    ) -> None:
        RealTaskParams.resolve(params, knobs)
        task = load_task(self.TASK)
        rows, cols = task["losses"].shape
        if n_experts is FROM_LOSSES:
            n_experts = None
        if horizon is FROM_LOSSES:
            horizon = None
        if n_experts is not None and check_int("n_experts", n_experts, minimum=1) != cols:
            raise ValueError(
                f"n_experts={n_experts}: family {self.TASK!r} has N={cols} experts "
                f"({', '.join(task['experts'])}); leave n_experts unset"
            )
        t = rows if horizon is None else check_int("horizon", horizon, minimum=1, maximum=rows)
        super().__init__(cols, t)
        self.losses = task["losses"][:t]
        self.experts = list(task["experts"])
        starts = task["segment_starts"]
        self.change_points = starts[(starts > 0) & (starts < t)] + 1  # 1-based first rounds
        self.default_switches = len(self.change_points)
        self._segment = np.searchsorted(self.change_points, np.arange(1, t + 1), side="right")

    def _reset(self, seeds: list[int]) -> None:
        return None

    def _draw(self, t: int) -> np.ndarray:
        return np.repeat(self.losses[t - 1][None, :], self.num_runs, axis=0)

    def _finish(self, t: int, z: np.ndarray) -> Round:
        segment = np.full(self.num_runs, self._segment[t - 1], dtype=np.int64)
        shift = np.full(self.num_runs, t > 1 and self._segment[t - 1] != self._segment[t - 2])
        return Round(losses=z, segment=segment, shift=shift)


@register_family("oblivious", "digits", RealTaskParams)
class Digits(RealTask):
    """Eight online classifiers on scikit-learn's digits (T=1797, N=8, S=4 feature permutations)."""

    TASK = "digits"


@register_family("oblivious", "breast_cancer", RealTaskParams)
class BreastCancer(RealTask):
    """Eight online classifiers on scikit-learn's breast_cancer (T=569, N=8, S=2 permutations)."""

    TASK = "breast_cancer"
