"""Where the seed learners stand: each against the best private baseline on its target env.

For every learner of the five papers ("seed learners"), on the env it is built for, at epsilon in
{0.5, 1, 2, 8, inf}: its mean final regret with a 95% bootstrap interval, the best private
baseline's (the suite's non-paper private learners for that setting; the one with the lowest
mean at that epsilon), and the ratio of the two means with a paired bootstrap interval (the
runs share env seeds, so seeds are resampled jointly). 10 runs (env seeds 0-9, agent seed
10,000), T = 10^4. At epsilon = inf both play with their noise removed.

The table in docs/algorithms.md ("Where the seeds stand") is generated from the checked-in
``benchmarks/seeds_stand.json`` by :func:`render`; tests/test_seeds_stand.py checks that the docs
equal ``render`` of that file. Usage::

    python benchmarks/seeds_stand.py --write   # measure (~5 min), write the JSON and the docs
    python benchmarks/seeds_stand.py --quick   # T = 2,000, 4 runs (results/ only)
    python benchmarks/seeds_stand.py --smoke   # T = 200, 2 runs, two epsilons (results/ only)
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

CHECKED_IN = ROOT / "benchmarks" / "seeds_stand.json"
DOCS = ROOT / "docs" / "algorithms.md"
BEGIN, END = "<!-- seeds-stand:begin -->", "<!-- seeds-stand:end -->"
EPSILONS = (0.5, 1.0, 2.0, 8.0, math.inf)


@dataclass(frozen=True)
class Setting:
    """A target env, its metric and the private baselines a seed learner there is held to."""

    label: str
    env_id: str
    env_params: dict[str, Any]
    metric: str
    baselines: tuple[str, ...]
    params: dict[str, Any]  # given to every private learner here (e.g. the shared delta)


def settings(horizon: int) -> dict[str, Setting]:
    """The targets (docs/algorithms.md "adversary built for") and their private baselines."""
    # A tracker's static regret can be far below zero on anti_lazy (it beats the best fixed
    # expert), so static-regret settings hold the static learners only.
    tracking = ("private-fixed-share", "gaussian-tree-hedge", "dp-ftrl-tree")
    static = ("gaussian-tree-hedge", "dp-ftrl-tree")
    bandit = ("dp-klucb", "adap-ucb")
    return {
        "tracking": Setting(
            "Shift-v0 (N = 10, S = 4, gap 0.3), dynamic regret",
            "DPExperts-Shift-v0",
            {"horizon": horizon, "n_experts": 10, "n_shifts": 4, "gap": 0.3},
            "dynamic_regret",
            tracking,
            {},
        ),
        "stochastic": Setting(
            "Stochastic-v0 (N = 10, gap 0.1), static regret",
            "DPExperts-Stochastic-v0",
            {"horizon": horizon, "n_experts": 10},
            "static_regret",
            static,
            {},
        ),
        "oblivious": Setting(
            "Oblivious-v0 anti_lazy (N = 10), static regret, delta 1e-6",
            "DPExperts-Oblivious-v0",
            {"horizon": horizon, "family": "anti_lazy"},
            "static_regret",
            static,
            {"delta": 1e-6},
        ),
        "bandit": Setting(
            "Bandit-v0 (K = 5, gap 0.1), static regret",
            "DPExperts-Bandit-v0",
            {"horizon": horizon},
            "static_regret",
            bandit,
            {},
        ),
        "advice": Setting(
            "BanditAdvice-v0 planted_expert (N = 20, K = 4), static regret "
            "(advice-blind baselines)",
            "DPExperts-BanditAdvice-v0",
            {"horizon": horizon},
            "static_regret",
            bandit,
            {},
        ),
    }


#: seed learner -> (paper, setting)
SEEDS = {
    "svt-restart": ("000 ARS", "tracking"),
    "noisy-clipped-hedge": ("000 ARS", "tracking"),
    "meta-expert-reduction": ("000 ARS", "tracking"),
    "limited-updates": ("000 ARS / 002 AFKT", "stochastic"),
    "private-lazy-hedge": ("001 AKST (discrete form)", "oblivious"),
    "private-shrinking-dartboard": ("002 AFKT", "oblivious"),
    "batched-private-shrinking-dartboard": ("002 AFKT", "oblivious"),
    "randomized-prefix-softmax": ("003 CC", "stochastic"),
    "private-batched-bandit": ("004 PAB", "bandit"),
    "private-bandit-over-experts": ("004 PAB", "advice"),
    "ldp-exp4": ("004 PAB", "advice"),
    "private-batched-exp4": ("004 PAB", "advice"),
}


def _runs(setting: Setting, name: str, epsilon: float, runs: int) -> np.ndarray:
    """Final ``setting.metric`` of ``runs`` runs (env seeds 0..runs-1, agent seed 10,000)."""
    import gymnasium as gym

    import agents
    import dp_experts_env  # noqa: F401  (registers the ids)
    from dp_experts_env.evaluation.episode import play

    env = gym.make_vec(
        setting.env_id, num_envs=runs, vectorization_mode="vector_entry_point",
        **setting.env_params,
    )  # fmt: skip
    params = dict(setting.params) if math.isfinite(epsilon) else {}
    if "delta" in params and "delta" not in _keywords(name):
        params.pop("delta")  # a pure-DP learner: its claim has delta 0 anyway
    agent = agents.make(name, env=env, seed=10_000, epsilon=epsilon, **params)
    horizon = int(env.unwrapped.horizon)
    values = play(env, agent, list(range(runs)), np.array([horizon]))[setting.metric][-1]
    env.close()
    return np.asarray(values, dtype=np.float64)


def _keywords(name: str) -> set[str]:
    import inspect

    import agents

    cls = agents.spec(name).cls
    if getattr(cls, "default_delta", 0.0) == 0.0:
        return set()  # delta must stay 0 for a pure learner
    return set(inspect.signature(cls.__init__).parameters)


def mean_ci(values: np.ndarray, seed: int = 0) -> tuple[float, float, float]:
    """Mean and 95% percentile bootstrap interval (2,000 resamples, own generator)."""
    from dp_experts_env.evaluation.stats import bootstrap_ci

    return bootstrap_ci(values, "mean", seed=seed)


def ratio_ci(
    ours: np.ndarray, theirs: np.ndarray, seed: int = 0, n_boot: int = 2000
) -> tuple[float, float, float]:
    """``mean(ours) / mean(theirs)`` and a 95% paired percentile bootstrap interval.

    Runs are paired by env seed, so one resample of the seeds is applied to both.
    """
    ours, theirs = np.asarray(ours, float), np.asarray(theirs, float)
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, len(ours), size=(n_boot, len(ours)))
    with np.errstate(divide="ignore", invalid="ignore"):
        boots = ours[idx].mean(axis=1) / theirs[idx].mean(axis=1)
        point = float(ours.mean() / theirs.mean())
    lo, hi = np.quantile(boots, [0.025, 0.975])
    return point, float(lo), float(hi)


def measure(horizon: int, runs: int, epsilons: tuple[float, ...], seeds: list[str]) -> dict:
    """Every seed learner against its setting's best private baseline, per epsilon."""
    table = settings(horizon)
    cache: dict[tuple[str, str, float], np.ndarray] = {}

    def runs_of(key: str, name: str, eps: float) -> np.ndarray:
        if (key, name, eps) not in cache:
            cache[(key, name, eps)] = _runs(table[key], name, eps, runs)
        return cache[(key, name, eps)]

    rows = []
    for name in seeds:
        paper, key = SEEDS[name]
        setting = table[key]
        for eps in epsilons:
            ours = runs_of(key, name, eps)
            candidates = {b: runs_of(key, b, eps) for b in setting.baselines}
            best = min(candidates, key=lambda b: float(candidates[b].mean()))
            rows.append(
                {
                    "learner": name,
                    "paper": paper,
                    "setting": setting.label,
                    "epsilon": eps,
                    "regret": mean_ci(ours),
                    "baseline": best,
                    "baseline_regret": mean_ci(candidates[best]),
                    "ratio": ratio_ci(ours, candidates[best]),
                }
            )
    return {"horizon": horizon, "runs": runs, "rows": rows}


def _num(x: float) -> str:
    return f"{x:.0f}" if abs(x) >= 100 else f"{x:.1f}" if abs(x) >= 10 else f"{x:.2f}"


def render(data: dict) -> str:
    """The markdown table of a measurement (what the docs hold between the markers)."""
    lines = [
        f"T = {data['horizon']:,}, {data['runs']} runs (env seeds 0-{data['runs'] - 1}, agent "
        "seed 10,000); mean final regret [95% bootstrap interval]; ratio = seed / best "
        "baseline [95% paired bootstrap interval]; below 1: the seed learner is ahead.",
        "",
        "| seed learner (paper) | target | eps | seed's regret | best private baseline | its "
        "regret | ratio |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in data["rows"]:
        eps = "inf" if not math.isfinite(r["epsilon"]) else f"{r['epsilon']:g}"
        m, lo, hi = r["regret"]
        bm, blo, bhi = r["baseline_regret"]
        q, qlo, qhi = r["ratio"]
        lines.append(
            f"| `{r['learner']}` ({r['paper']}) | {r['setting']} | {eps} | {_num(m)} "
            f"[{_num(lo)}, {_num(hi)}] | `{r['baseline']}` | {_num(bm)} [{_num(blo)}, "
            f"{_num(bhi)}] | {q:.2f} [{qlo:.2f}, {qhi:.2f}] |"
        )
    return "\n".join(lines)


def docs_block(text: str) -> str:
    """The generated block of docs/algorithms.md (between the markers, stripped)."""
    start, end = text.index(BEGIN) + len(BEGIN), text.index(END)
    return text[start:end].strip()


def write_docs(data: dict) -> None:
    """Replace the block between the markers of docs/algorithms.md by :func:`render`."""
    text = DOCS.read_text()
    start, end = text.index(BEGIN) + len(BEGIN), text.index(END)
    DOCS.write_text(text[:start] + "\n" + render(data) + "\n" + text[end:])


def _load(path: Path) -> dict:
    import json

    data = json.loads(path.read_text())
    for r in data["rows"]:
        r["epsilon"] = float(r["epsilon"])  # "Infinity" in the JSON
    return data


def main(argv: list[str] | None = None) -> None:
    """Measure, print the table; ``--write`` also updates the checked-in JSON and the docs."""
    import json

    from benchmarks._common import parse_args, write_json

    args = parse_args(
        __doc__.splitlines()[0],
        argv,
        extra=lambda p: p.add_argument(
            "--write", action="store_true", help="write benchmarks/seeds_stand.json and the docs"
        ),
    )
    horizon, runs, eps, seeds = 10_000, 10, EPSILONS, list(SEEDS)
    if args.quick:
        horizon, runs = 2_000, 4
    if args.smoke:
        horizon, runs, eps, seeds = 200, 2, (1.0, math.inf), ["noisy-clipped-hedge", "ldp-exp4"]
    data = measure(horizon, runs, eps, seeds)
    print(render(data))
    write_json("seeds_stand", data, args.out)
    if args.write and not (args.quick or args.smoke):
        CHECKED_IN.write_text(json.dumps(data, indent=1) + "\n")
        write_docs(_load(CHECKED_IN))
        print(f"wrote {CHECKED_IN} and {DOCS}")


if __name__ == "__main__":
    main()
