"""Do the bandit environments tell learners apart? Final regret of every bandit learner.

Plays, on one bandit env (default ``DPExperts-BanditAdvice-v0`` with its default family), every
non-private bandit learner (``exp3``, ``tsallis-inf``, ``ftpl-gr`` over the arms and over the
experts as meta-arms, ``exp4``), every private bandit learner at a few epsilons, and two
learners that do not learn: ``uniform`` (a uniform arm every round) and ``random-expert`` (one
expert drawn uniformly at reset, followed for the whole episode; defined here, it is not a
registered agent). Reports the final static pseudo-regret (against the best fixed expert in
expectation, ``info["static_pseudo_regret"]``) with a 95% bootstrap interval over seeds, its ratio
to uniform's, and the final realised static regret. All runs of a learner play in one batch; the
env seeds are the same for every learner.

The table this prints is the one in docs/environments.md ("Where learners separate").
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

# The code next to this script, not another installed copy; then the benchmark helpers.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import write_json  # noqa: E402

import agents  # noqa: E402
import dp_experts_env  # noqa: E402,F401  (registers the ids)
from dp_experts_env.evaluation.episode import play  # noqa: E402
from dp_experts_env.evaluation.stats import bootstrap_ci  # noqa: E402

NON_PRIVATE = (
    ("exp3", {}),
    ("exp3", {"over": "experts"}),
    ("tsallis-inf", {}),
    ("tsallis-inf", {"over": "experts"}),
    ("ftpl-gr", {}),
    ("ftpl-gr", {"over": "experts"}),
    ("exp4", {}),
)
PRIVATE = (
    "private-bandit-over-experts",
    "ldp-exp4",
    "private-batched-exp4",
    "private-batched-bandit",
)


class RandomExpert:
    """Follows one expert, drawn uniformly at reset, for the whole episode (never learns)."""

    def __init__(self, env: Any, seed: int) -> None:
        self.num_envs = env.num_envs
        self.n_experts = int(env.unwrapped.n_experts)
        self.n_arms = int(env.unwrapped.n_arms)
        self._rng = np.random.default_rng(seed)
        self._rows = np.arange(self.num_envs)

    def reset(self) -> None:
        self.expert = self._rng.integers(self.n_experts, size=self.num_envs)

    def act(self, obs: dict[str, np.ndarray]) -> np.ndarray:
        advice = obs["advice"].reshape(self.num_envs, self.n_experts, self.n_arms)
        law = advice[self._rows, self.expert]  # (B, K): the followed expert's advice
        u = self._rng.random(self.num_envs)[:, None]
        arm = np.count_nonzero(np.cumsum(law, axis=1) < u, axis=1)
        return np.minimum(arm, self.n_arms - 1).astype(np.int64)


def _label(name: str, params: dict[str, Any]) -> str:
    return name + "".join(f"[{k}={v}]" for k, v in params.items())


def measure(
    env_id: str,
    env_params: dict[str, Any],
    n_seeds: int,
    epsilons: Sequence[float],
    learners: Sequence[str] | None = None,
) -> list[dict[str, Any]]:
    """Final regrets of every learner (one batch of ``n_seeds`` runs each)."""
    plan: list[tuple[str, dict[str, Any], float | None]] = [
        ("random-expert", {}, None),
        ("uniform", {}, None),
    ]
    plan += [(name, params, None) for name, params in NON_PRIVATE]
    plan += [(name, {}, eps) for name in PRIVATE for eps in epsilons]
    if learners is not None:
        plan = [p for p in plan if p[0] in learners]
    env_seeds = list(range(n_seeds))
    agent_seeds = [10_000 + s for s in env_seeds]
    rows = []
    for name, params, eps in plan:
        env = gym.make_vec(
            env_id, num_envs=n_seeds, vectorization_mode="vector_entry_point", **env_params
        )
        horizon = int(env.unwrapped.horizon)
        if name == "random-expert":
            agent: Any = RandomExpert(env, seed=agent_seeds[0])
        else:
            kwargs = dict(params) if eps is None else {**params, "epsilon": eps}
            agent = agents.make(name, env=env, seed=agent_seeds, **kwargs)
        started = time.perf_counter()
        curves = play(env, agent, env_seeds, np.array([horizon]))
        seconds = time.perf_counter() - started
        env.close()
        pseudo = curves["static_pseudo_regret"][-1]
        mean, lo, hi = bootstrap_ci(pseudo)
        rows.append(
            {
                "learner": _label(name, params),
                "epsilon": math.inf if eps is None else eps,
                "static_pseudo_regret": mean,
                "ci_low": lo,
                "ci_high": hi,
                "static_regret": float(curves["static_regret"][-1].mean()),
                "per_round_best_pseudo_regret": float(
                    curves["per_round_best_pseudo_regret"][-1].mean()
                ),
                "seconds": seconds,
            }
        )
        print(_line(rows[-1]), flush=True)
    uniform = next((r["static_pseudo_regret"] for r in rows if r["learner"] == "uniform"), None)
    for row in rows:
        row["over_uniform"] = None if not uniform else row["static_pseudo_regret"] / uniform
    return rows


def _line(row: dict[str, Any]) -> str:
    eps = "inf" if math.isinf(row["epsilon"]) else f"{row['epsilon']:g}"
    return (
        f"{row['learner']:34s} eps={eps:>5s}  static pseudo {row['static_pseudo_regret']:8.1f} "
        f"[{row['ci_low']:7.1f}, {row['ci_high']:7.1f}]  static {row['static_regret']:8.1f}  "
        f"({row['seconds']:.1f} s)"
    )


def markdown(rows: list[dict[str, Any]]) -> str:
    """The docs table: learner, epsilon, static pseudo-regret [CI], ratio to uniform, static."""
    out = [
        "| learner | epsilon | static pseudo-regret [95% CI] | / uniform | static regret |",
        "|---|---|---|---|---|",
    ]
    for r in rows:
        eps = "inf" if math.isinf(r["epsilon"]) else f"{r['epsilon']:g}"
        ratio = "-" if r["over_uniform"] is None else f"{r['over_uniform']:.2f}"
        out.append(
            f"| {r['learner']} | {eps} | {r['static_pseudo_regret']:.1f} "
            f"[{r['ci_low']:.1f}, {r['ci_high']:.1f}] | {ratio} | {r['static_regret']:.1f} |"
        )
    return "\n".join(out)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env", default="DPExperts-BanditAdvice-v0", help="bandit env id")
    parser.add_argument(
        "--env-params", default="{}", help="env keywords as JSON, e.g. '{\"horizon\": 10000}'"
    )
    parser.add_argument("--seeds", type=int, default=20, help="runs per learner (default 20)")
    parser.add_argument(
        "--epsilons", type=float, nargs="+", default=[0.1, 1.0], help="private learners' epsilons"
    )
    parser.add_argument("--learners", nargs="+", default=None, help="restrict to these learners")
    parser.add_argument("--smoke", action="store_true", help="T = 50, 2 seeds (smoke test)")
    parser.add_argument("--out", type=Path, default=None, help="JSON output path")
    args = parser.parse_args(argv)
    env_params = json.loads(args.env_params)
    if args.smoke:
        env_params["horizon"] = 50
        args.seeds = 2
        args.epsilons = [1.0]
    rows = measure(args.env, env_params, args.seeds, args.epsilons, args.learners)
    print()
    print(markdown(rows))
    path = write_json(
        "bandit_separation",
        {"env": args.env, "env_params": env_params, "seeds": args.seeds, "rows": rows},
        args.out,
    )
    print(f"\nwrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
