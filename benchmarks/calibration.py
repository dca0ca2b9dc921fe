"""Privacy-utility calibration of every private learner's default tuning.

For each private learner, on the environment it targets, prints the mean final regret (with its
standard error over runs) at epsilon in {0.1, 0.5, 2, 8, 32, 128, inf}, the epsilon its claim
certifies next to the one requested, the regret of its non-private counterpart and of uniform
play, and three verdicts:

* ``monotone`` -- mean regret non-increasing in epsilon within two standard errors;
* ``limit`` -- regret at ``epsilon = inf`` within 1.5x the non-private counterpart's;
* ``spend`` -- the certified epsilon is >= 0.9 x the requested one (documented exceptions in
  docs/algorithms.md).

It also measures svt-restart's shift detection (rounds from a shift to the first restart after
it, at epsilon >= 8) and its false-alarm rate on stationary data.

Full-information learners play DPExperts-Shift-v0 (N = 10, T = 10^4, 4 shifts, gap 0.3; dynamic
regret); bandit learners play DPExperts-Bandit-v0 with a planted best arm (K = 10, T = 10^4; the
env's static regret). Usage::

    python benchmarks/calibration.py            # the full table (~15 minutes on 2 cores)
    python benchmarks/calibration.py --quick    # T = 2,000, 4 runs
    python benchmarks/calibration.py --smoke    # one learner, two epsilons, tiny T

Not a test: nothing here asserts. The tests pin the same properties at small sizes with fixed
seeds (tests/test_calibration.py).
"""

from __future__ import annotations

import math
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import agents  # noqa: E402
import dp_experts_env  # noqa: E402,F401  (registers the ids)
from benchmarks._common import parse_args, write_json  # noqa: E402
from dp_experts_env.evaluation.episode import play  # noqa: E402

EPSILONS = (0.1, 0.5, 2.0, 8.0, 32.0, 128.0, math.inf)


@dataclass(frozen=True)
class Target:
    """Where a learner is measured, and against what."""

    env_id: str
    env_params: dict[str, Any]
    metric: str
    counterpart: str
    counterpart_params: dict[str, Any] = field(default_factory=dict)
    inf_params: dict[str, Any] = field(default_factory=dict)  # extra learner params at eps=inf
    params: dict[str, Any] = field(default_factory=dict)  # learner params at every epsilon
    learner: str = ""  # the registered name when the row's label differs (a variant)


def _shift(horizon: int) -> dict[str, Any]:
    return {"n_experts": 10, "horizon": horizon, "n_shifts": 4, "gap": 0.3}


def _bandit(horizon: int) -> dict[str, Any]:
    return {"n_arms": 10, "horizon": horizon}


def targets(horizon: int) -> dict[str, Target]:
    """Learner -> its measurement target (the env it is built for, its non-private twin)."""
    shift, bandit = _shift(horizon), _bandit(horizon)
    full = "DPExperts-Shift-v0"
    return {
        "svt-restart": Target(full, shift, "dynamic_regret", "fixed-share"),
        "noisy-clipped-hedge": Target(full, shift, "dynamic_regret", "fixed-share"),
        "meta-expert-reduction": Target(full, shift, "dynamic_regret", "fixed-share"),
        "limited-updates": Target(full, shift, "dynamic_regret", "follow-the-leader"),
        "randomized-prefix-softmax": Target(
            full, shift, "dynamic_regret", "follow-the-leader", inf_params={"eta_cap": math.inf}
        ),
        "dp-ftrl-tree": Target(full, shift, "dynamic_regret", "hedge"),
        "private-lazy-hedge": Target(full, shift, "dynamic_regret", "hedge"),
        "private-shrinking-dartboard": Target(full, shift, "dynamic_regret", "hedge"),
        "batched-private-shrinking-dartboard": Target(full, shift, "dynamic_regret", "hedge"),
        "private-batched-bandit": Target(
            "DPExperts-Bandit-v0", bandit, "static_regret", "tsallis-inf"
        ),
        "private-bandit-over-experts": Target(
            "DPExperts-Bandit-v0", bandit, "static_regret", "tsallis-inf"
        ),
        "private-batched-bandit[base=exp3]": Target(
            "DPExperts-Bandit-v0",
            bandit,
            "static_regret",
            "exp3",
            params={"base": "exp3"},
            learner="private-batched-bandit",
        ),
        "ldp-exp4": Target("DPExperts-Bandit-v0", bandit, "static_regret", "exp4"),
        "private-batched-exp4": Target("DPExperts-Bandit-v0", bandit, "static_regret", "exp4"),
    }


def measure(
    name: str, target: Target, epsilon: float | None, runs: int, params: dict | None = None
) -> tuple[float, float, Any]:
    """Mean and standard error of the final ``target.metric`` over ``runs`` seeded runs."""
    env = gym.make_vec(
        target.env_id, num_envs=runs, vectorization_mode="vector_entry_point", **target.env_params
    )
    kwargs = dict(params or {})
    if epsilon is not None:
        kwargs["epsilon"] = epsilon
    agent = agents.make(name, env=env, seed=10_000, **kwargs)
    horizon = int(env.unwrapped.horizon)
    curves = play(env, agent, list(range(runs)), np.array([horizon]))
    env.close()
    values = curves[target.metric][-1]
    return float(values.mean()), float(values.std(ddof=1) / math.sqrt(runs)), agent


def svt_detection(horizon: int, runs: int, epsilon: float) -> dict[str, float]:
    """svt-restart: rounds from each shift to the first restart after it; stationary restarts."""
    env = gym.make_vec(
        "DPExperts-Shift-v0",
        num_envs=runs,
        vectorization_mode="vector_entry_point",
        **_shift(horizon),
    )
    agent = agents.make("svt-restart", env=env, seed=20_000, epsilon=epsilon)
    obs, info = env.reset(seed=list(range(runs)))
    agent.reset()
    segment = np.zeros(runs, dtype=np.int64)
    shifts: list[list[int]] = [[] for _ in range(runs)]
    restarts: list[list[int]] = [[] for _ in range(runs)]
    count = np.zeros(runs, dtype=np.int64)
    for t in range(1, horizon + 1):
        obs, _, _, _, info = env.step(agent.act(obs))
        now = np.asarray(info["segment"], dtype=np.int64)  # evaluation reads info, agents never
        for b in np.nonzero(now != segment)[0]:
            shifts[b].append(t)
        segment = now
        for b in np.nonzero(agent.restarts != count)[0]:
            restarts[b].append(t)
        count = agent.restarts.copy()
    delays, detected = [], 0
    for b in range(runs):
        bounds = [*shifts[b], horizon + 1]
        for start, end in zip(bounds, bounds[1:], strict=False):
            later = [r for r in restarts[b] if start <= r < end]
            delays.append(later[0] - start if later else math.inf)
            detected += bool(later) and later[0] - start <= 2_000
    n_shifts = len(delays) if delays else 1
    stationary = gym.make_vec(
        "DPExperts-Stochastic-v0",
        num_envs=runs * 4,
        vectorization_mode="vector_entry_point",
        n_experts=10,
        horizon=horizon,
    )
    quiet = agents.make("svt-restart", env=stationary, seed=30_000, epsilon=epsilon)
    play(stationary, quiet, list(range(runs * 4)), np.array([horizon]))
    return {
        "median_delay": float(np.median(delays)) if delays else math.nan,
        "restarts_per_run": float(np.mean([len(r) for r in restarts])),
        "detected_within_2000": detected / max(n_shifts, 1),
        "false_alarm_rate": float(np.mean(quiet.restarts > 0)),
        "beta": quiet.beta,
    }


def main(argv: list[str] | None = None) -> None:
    """Print the calibration table (and write benchmarks/results/calibration.json)."""
    args = parse_args(__doc__.splitlines()[0], argv)
    horizon, runs, eps_grid = 10_000, 8, EPSILONS
    chosen = None
    if args.quick:
        horizon, runs = 2_000, 4
    if args.smoke:
        horizon, runs, eps_grid, chosen = 200, 2, (1.0, math.inf), ["noisy-clipped-hedge"]
    table = targets(horizon)
    names = chosen or list(table)
    results: dict[str, Any] = {"horizon": horizon, "runs": runs, "learners": {}}
    reference_cache: dict[tuple[str, str], tuple[float, float]] = {}
    for name in names:
        target = table[name]
        start = time.process_time()
        key = (target.env_id, target.counterpart)
        if key not in reference_cache:
            reference_cache[key] = measure(target.counterpart, target, None, runs)[:2]
        if (target.env_id, "uniform") not in reference_cache:
            reference_cache[(target.env_id, "uniform")] = measure("uniform", target, None, runs)[
                :2
            ]
        ref_mean, _ = reference_cache[key]
        uni_mean, _ = reference_cache[(target.env_id, "uniform")]
        rows = []
        for eps in eps_grid:
            params = {**target.params, **(target.inf_params if math.isinf(eps) else {})}
            mean, se, agent = measure(target.learner or name, target, eps, runs, params)
            claim = agent.privacy
            rows.append(
                {"epsilon": eps, "mean": mean, "se": se, "certified": claim.epsilon}
            )
        monotone = all(
            later["mean"] <= earlier["mean"] + 2 * math.hypot(later["se"], earlier["se"])
            for earlier, later in zip(rows, rows[1:], strict=False)
        )
        limit_ratio = rows[-1]["mean"] / ref_mean if ref_mean > 0 else math.nan
        spend = min(r["certified"] / r["epsilon"] for r in rows if math.isfinite(r["epsilon"]))
        results["learners"][name] = {
            "env": target.env_id,
            "metric": target.metric,
            "counterpart": target.counterpart,
            "counterpart_regret": ref_mean,
            "uniform_regret": uni_mean,
            "rows": rows,
            "monotone": monotone,
            "limit_ratio": limit_ratio,
            "min_spend": spend,
        }
        cells = "  ".join(f"{r['mean']:7.1f}±{r['se']:5.1f}" for r in rows)
        spends = " ".join(
            f"{r['certified'] / r['epsilon']:.2f}" for r in rows if math.isfinite(r["epsilon"])
        )
        print(
            f"{name:36s} {cells}  | {target.counterpart} {ref_mean:.1f} (x{limit_ratio:.2f} at "
            f"inf) uniform {uni_mean:.1f} | monotone={monotone} | spend {spends} "
            f"[{time.process_time() - start:.0f}s cpu]",
            flush=True,
        )
    if "svt-restart" in names and not args.smoke:
        for eps in (8.0, math.inf):
            stats = svt_detection(horizon, runs, eps)
            results.setdefault("svt_detection", {})[str(eps)] = stats
            print(f"svt-restart detection at epsilon={eps:g}: {stats}", flush=True)
    print("epsilons:", ", ".join(f"{e:g}" for e in eps_grid))
    write_json("calibration", results, args.out)


if __name__ == "__main__":
    main()
