"""What every paper's claims share: the no-learning controls and the sweep helpers."""

from __future__ import annotations

from collections.abc import Mapping

import pandas as pd

from dp_experts_env.evaluation.claims import Control, Measurement, Point, Sweep, loglog_slope

__all__ = ["CENTRE", "UNIFORM", "eps_points", "points_at", "slope_experiment", "slope_of"]

#: The no-learning controls (run in the learner's role, same envs and seeds).
UNIFORM = Control("uniform", {}, "a uniformly random expert (arm) every round: it learns nothing")
CENTRE = Control(
    "ogd", {"step": 0.0}, "OGD with step 0: the centre of the body every round, learns nothing"
)


def slope_of(key: str, metric: str) -> object:
    """An analysis: the log-log slope of sweep ``key``'s ``metric`` in x."""

    def analyse(rows: Mapping[str, pd.DataFrame]) -> Measurement:
        return loglog_slope(rows[key], metric)

    return analyse


def slope_experiment(
    agent: str,
    env_id: str,
    points: tuple[Point, ...],
    quick_points: tuple[Point, ...] = (),
    *,
    metric: str = "dynamic_regret",
    seeds: int = 16,
    quick_seeds: int = 8,
    control: Control = UNIFORM,
    agent_params: Mapping[str, object] | None = None,
    learner: str = "",
) -> dict[str, object]:
    """One learner over points, judged by its log-log slope; ``learner`` plays under ``agent``."""
    sweep = Sweep(
        agent,
        learner or agent,
        env_id,
        points,
        quick_points,
        agent_params=dict(agent_params or {}),
        metric=metric,
        seeds=seeds,
        quick_seeds=quick_seeds,
    )
    return {"sweeps": (sweep,), "analyse": slope_of(agent, metric), "control": control}


def points_at(values: tuple[float, ...], make: object, epsilon: float | None = None) -> tuple:
    """Points at x in ``values`` with env parameters ``make(x)``, all at ``epsilon``."""
    return tuple(Point(float(v), make(v), epsilon) for v in values)  # type: ignore[operator]


def eps_points(values: tuple[float, ...], env: Mapping[str, object]) -> tuple:
    """Points at epsilon = x in ``values`` on one env."""
    return tuple(Point(float(v), dict(env), float(v)) for v in values)
