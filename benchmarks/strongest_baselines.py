"""Issue #38's done-when numbers: the strongest private baselines against the seed learners.

Each comparison plays every learner on the same env seeds (0 .. runs-1; agent seed 10,000) and
reports the mean final regret +- its standard error, then the done-when ratio at epsilon 1:

* ``tracking`` -- DPExperts-Shift-v0 at T = 10^4 (dynamic regret), twice: the env's defaults
  (N = 10, gap 0.1, S = 4) and the setting of the issue and of benchmarks/calibration.py
  (N = 10, S = 4, gap 0.3). Target: private-fixed-share <= 0.75x noisy-clipped-hedge.
* ``static`` -- DPExperts-Oblivious-v0 ``anti_lazy`` at T = 10^4 (static regret), every
  (epsilon, delta) learner at delta = 1e-6. Target: gaussian-tree-hedge <= 0.6x
  private-shrinking-dartboard.
* ``bandit`` -- DPExperts-Bandit-v0 defaults at T = 10^4 (static pseudo-regret). Target:
  dp-klucb <= adap-ucb. dp-se (private successive elimination) against adap-ucb there and at
  T = 10^5, where its first epochs (thousands of pulls per arm) have ended.

Learners not registered in this tree are skipped. Usage::

    python benchmarks/strongest_baselines.py            # 10 runs (~8 min on 2 cores)
    python benchmarks/strongest_baselines.py --quick    # T = 2,000, 4 runs
    python benchmarks/strongest_baselines.py --smoke    # T = 200, 2 runs, epsilon 1 only

Not a test: nothing here asserts (tests/test_private_fixed_share.py and
tests/test_gaussian_tree_hedge.py pin the same claims at test sizes).
"""

from __future__ import annotations

import math
import sys
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

EPSILONS = (0.5, 1.0, 2.0, math.inf)


@dataclass(frozen=True)
class Comparison:
    """One env, its metric, the learners (label -> (name, params)) and the done-when ratio."""

    env_id: str
    env_params: dict[str, Any]
    metric: str
    learners: dict[str, tuple[str, dict[str, Any]]]
    target: tuple[str, str, float]  # (ours, reference, largest ratio at epsilon 1)
    baselines: tuple[str, ...] = field(default_factory=tuple)  # non-private references


def comparisons(horizon: int) -> dict[str, Comparison]:
    """The three comparisons of the issue at horizon T."""
    shift = "DPExperts-Shift-v0"
    tracking_learners = {
        "private-fixed-share": ("private-fixed-share", {}),
        "private-fixed-share (m = sqrt(2) N/eps)": ("private-fixed-share", {"block": "sqrt2"}),
        "noisy-clipped-hedge": ("noisy-clipped-hedge", {}),
        "meta-expert-reduction": ("meta-expert-reduction", {}),
        "svt-restart": ("svt-restart", {}),
    }
    delta = {"delta": 1e-6}
    return {
        "tracking (Shift-v0 defaults)": Comparison(
            shift,
            {"horizon": horizon},
            "dynamic_regret",
            tracking_learners,
            ("private-fixed-share", "noisy-clipped-hedge", 0.75),
            ("fixed-share", "uniform"),
        ),
        "tracking (N = 10, S = 4, gap 0.3)": Comparison(
            shift,
            {"horizon": horizon, "n_experts": 10, "n_shifts": 4, "gap": 0.3},
            "dynamic_regret",
            tracking_learners,
            ("private-fixed-share", "noisy-clipped-hedge", 0.75),
            ("fixed-share", "uniform"),
        ),
        "static (Oblivious-v0 anti_lazy)": Comparison(
            "DPExperts-Oblivious-v0",
            {"horizon": horizon, "family": "anti_lazy"},
            "static_regret",
            {
                "gaussian-tree-hedge": ("gaussian-tree-hedge", delta),
                "private-shrinking-dartboard": ("private-shrinking-dartboard", delta),
                "batched-private-shrinking-dartboard": (
                    "batched-private-shrinking-dartboard",
                    delta,
                ),
                "dp-ftrl-tree": ("dp-ftrl-tree", {}),
            },
            ("gaussian-tree-hedge", "private-shrinking-dartboard", 0.6),
            ("hedge", "uniform"),
        ),
        "bandit (Bandit-v0 defaults)": Comparison(
            "DPExperts-Bandit-v0",
            {"horizon": horizon},
            "static_pseudo_regret",
            {
                "dp-klucb": ("dp-klucb", {}),
                "dp-klucb (means = last, the source's)": ("dp-klucb", {"means": "last"}),
                "adap-ucb": ("adap-ucb", {}),
                "private-batched-bandit": ("private-batched-bandit", {}),
                "dp-se": ("dp-se", {}),
            },
            ("dp-klucb", "adap-ucb", 1.0),
            ("kl-ucb", "ucb1", "uniform"),
        ),
        "bandit (Bandit-v0 defaults, 10 T)": Comparison(
            "DPExperts-Bandit-v0",
            {"horizon": 10 * horizon},
            "static_pseudo_regret",
            {
                "dp-se": ("dp-se", {}),
                "adap-ucb": ("adap-ucb", {}),
                "dp-klucb": ("dp-klucb", {}),
            },
            ("dp-se", "adap-ucb", 1.0),
            ("ucb1", "uniform"),
        ),
    }


def measure(
    comp: Comparison, name: str, params: dict[str, Any], epsilon: float | None, runs: int
) -> tuple[float, float]:
    """Mean and standard error of the final metric over ``runs`` runs (env seeds 0..runs-1)."""
    env = gym.make_vec(
        comp.env_id, num_envs=runs, vectorization_mode="vector_entry_point", **comp.env_params
    )
    kwargs = dict(params)
    if kwargs.get("block") == "sqrt2":  # the block length, for comparison
        n = int(env.unwrapped.n_experts)
        kwargs["block"] = 1 if epsilon is None or math.isinf(epsilon) else max(
            1, round(math.sqrt(2.0) * n / epsilon)
        )
    if epsilon is not None:
        kwargs["epsilon"] = epsilon
    if epsilon is not None and math.isinf(epsilon):
        kwargs.pop("delta", None)
    agent = agents.make(name, env=env, seed=10_000, **kwargs)
    horizon = int(env.unwrapped.horizon)
    values = play(env, agent, list(range(runs)), np.array([horizon]))[comp.metric][-1]
    env.close()
    return float(values.mean()), float(values.std(ddof=1) / math.sqrt(runs))


def main(argv: list[str] | None = None) -> None:
    """Print the tables (and write benchmarks/results/strongest_baselines.json)."""
    args = parse_args(__doc__.splitlines()[0], argv)
    horizon, runs, eps_grid = 10_000, 10, EPSILONS
    if args.quick:
        horizon, runs = 2_000, 4
    if args.smoke:
        horizon, runs, eps_grid = 200, 2, (1.0,)
    known = {d["name"] for d in agents.available()}
    out: dict[str, Any] = {"horizon": horizon, "runs": runs, "comparisons": {}}
    for title, comp in comparisons(horizon).items():
        rows: dict[str, Any] = {}
        for label, (name, params) in comp.learners.items():
            if name not in known:
                continue
            rows[label] = {
                str(eps): measure(comp, name, params, eps, runs) for eps in eps_grid
            }
        for name in comp.baselines:
            if name in known:
                rows[name] = {"-": measure(comp, name, {}, None, runs)}
        ours, ref, limit = comp.target
        ratio = None
        if ours in rows and ref in rows and "1.0" in rows[ours]:
            ratio = rows[ours]["1.0"][0] / rows[ref]["1.0"][0]
        out["comparisons"][title] = {
            "metric": comp.metric,
            "rows": rows,
            "target": {"ours": ours, "reference": ref, "limit": limit, "ratio": ratio},
        }
        t = comp.env_params["horizon"]
        print(f"\n{title}: {comp.metric}, T = {t}, {runs} runs (mean +- s.e.)")
        for label, cells in rows.items():
            text = "  ".join(f"eps {e}: {m:.0f} +- {s:.0f}" for e, (m, s) in cells.items())
            print(f"  {label:42s} {text}")
        if ratio is not None:
            verdict = "met" if ratio <= limit else "NOT met"
            print(f"  done-when: {ours} / {ref} at eps 1 = {ratio:.2f} (<= {limit}: {verdict})")
    path = write_json("strongest_baselines", out, args.out)
    print(f"\nwrote {path}")


if __name__ == "__main__":
    main()
