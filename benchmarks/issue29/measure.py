"""The measurements behind issue #29's numbers in docs/algorithms.md (not a test; prints only).

Usage (from the repository root; each well under 3 minutes of CPU)::

    nice python benchmarks/issue29/measure.py rate          # stochastic bandits, log T check
    nice python benchmarks/issue29/measure.py svt           # svt-restart vs fixed-share
    nice python benchmarks/issue29/measure.py cases JSON    # any learners: a JSON list of cases

``cases`` takes ``[{"name": ..., "T": ..., "env_id": ..., "runs": ..., <learner params>}]``;
its env keywords are ``T``, ``gap``, ``shifts``, ``n_experts``, ``n_arms``, ``dim``, ``env_id``,
``runs``, ``seed`` and ``metric`` (default ``dynamic_regret``).
"""

from __future__ import annotations

import json
import math
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

import gymnasium as gym  # noqa: E402
import numpy as np  # noqa: E402

import agents  # noqa: E402
import dp_experts_env  # noqa: E402,F401  (registers the ids)
from dp_experts_env.evaluation.episode import play  # noqa: E402

ENV_KEYS = ("T", "gap", "shifts", "n_experts", "n_arms", "dim", "env_id", "runs", "seed", "metric")


def run_case(
    name: str,
    *,
    T: int = 10_000,  # noqa: N803 - the horizon, as in the docs
    gap: float | None = 0.3,
    shifts: int | None = 4,
    n_experts: int | None = 10,
    n_arms: int | None = None,
    dim: int | None = None,
    env_id: str = "DPExperts-Shift-v0",
    runs: int = 8,
    seed: int = 100,
    metric: str = "dynamic_regret",
    **params,
) -> dict:
    """Mean final ``metric`` (and its standard error) of ``name`` over ``runs`` seeded runs."""
    kw = {"horizon": T}
    if dim is not None:
        kw["dim"] = dim
    elif n_arms is not None:
        kw["n_arms"] = n_arms
    elif n_experts is not None:
        kw["n_experts"] = n_experts
    if env_id == "DPExperts-Shift-v0":
        kw.update(n_shifts=shifts, gap=gap)
    elif gap is not None and env_id == "DPExperts-Bandit-v0":
        kw["gap"] = gap
    env = gym.make_vec(env_id, num_envs=runs, vectorization_mode="vector_entry_point", **kw)
    agent = agents.make(name, env=env, seed=seed, **params)
    began = time.perf_counter()
    out = play(env, agent, list(range(seed, seed + runs)), np.array([T]))
    values = out[metric][-1]
    restarts = getattr(agent, "restarts", getattr(agent, "switches", None))
    return {
        "name": name,
        "params": params,
        "env": {k: v for k, v in kw.items()} | {"id": env_id},
        "mean": float(values.mean()),
        "se": float(values.std(ddof=1) / math.sqrt(runs)),
        "restarts": None if restarts is None else np.asarray(restarts).tolist(),
        "certified": float(agent.privacy.epsilon),
        "seconds": time.perf_counter() - began,
    }


def _show(row: dict) -> None:
    extra = f" restarts/switches {row['restarts']}" if row["restarts"] is not None else ""
    print(
        f"{row['name']} {row['params']} {row['env']}: {row['mean']:.1f} +- {row['se']:.1f}"
        f" (certified eps {row['certified']:g}){extra} [{row['seconds']:.0f}s]",
        flush=True,
    )


def cases(spec: list[dict]) -> None:
    for case in spec:
        case = dict(case)
        name = case.pop("name")
        _show(run_case(name, **case))


def svt() -> None:
    inf = math.inf
    spec = [{"name": "fixed-share"}]
    spec += [{"name": "svt-restart", "epsilon": e} for e in (0.5, 2.0, 8.0, 32.0, inf)]
    spec += [
        {"name": "svt-restart", "epsilon": inf, "threshold_scale": 0.5},
        {"name": "svt-restart", "epsilon": inf, "tuning": "paper"},
        {"name": "svt-restart", "epsilon": inf, "gap": 0.1},
        {"name": "svt-restart", "epsilon": inf, "T": 40_000, "gap": 0.1, "shifts": 2},
        {"name": "svt-restart", "epsilon": 8.0, "T": 40_000, "gap": 0.1, "shifts": 2},
        {"name": "fixed-share", "T": 40_000, "gap": 0.1, "shifts": 2},
        {"name": "svt-restart", "epsilon": inf, "env_id": "DPExperts-Stochastic-v0", "runs": 32,
         "T": 2_000, "gap": None, "shifts": None},
    ]  # fmt: skip
    cases(spec)


def rate() -> None:
    from test_stochastic_bandits import regret_per_run

    horizons = (1_000, 10_000, 100_000)
    for name, kw in [
        ("ucb1", {}), ("kl-ucb", {}), ("thompson", {}),
        ("adap-ucb", {"epsilon": 0.5}), ("adap-ucb", {"epsilon": 1.0}),
        ("adap-ucb", {"epsilon": 4.0}), ("adap-ucb", {"epsilon": math.inf}), ("exp3", {}),
    ]:  # fmt: skip
        r = [regret_per_run(name, t, **kw) for t in horizons]
        ratio = (r[2] - r[1]) / (r[1] - r[0])
        print(name, kw, [round(x, 1) for x in r], "increment ratio", round(ratio, 2), flush=True)


if __name__ == "__main__":
    what = sys.argv[1] if len(sys.argv) > 1 else "svt"
    if what == "rate":
        rate()
    elif what == "svt":
        svt()
    else:
        cases(json.loads(sys.argv[2]))
