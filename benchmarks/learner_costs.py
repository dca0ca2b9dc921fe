"""Cost per run-round of every registered learner on its own default env, as the grid plays it.

Each learner plays one grid cell the way ``compare`` plays it (``run_cells``: blocks where the
learner and env allow, the compiled path where numba is installed): its default env by feedback
(full information and ``uniform``: DPExperts-Shift-v0 with N = 10, S = 4, gap 0.3, the default
comparison's; bandit: DPExperts-Bandit-v0; OCO: DPExperts-OCO-v0, both with their defaults),
T = 10^4, 10 seeds in one batch, epsilon 1 for private learners. The cost is this process's CPU
time for the cell divided by T x seeds, the median of ``--repeats`` plays (the first play, which
loads kernels and builds tables, is a warm-up and not counted). The last column is the ratio to
the default grid's reference learner (``hedge`` on the default env), measured in the same run;
"<= bound" says whether the cost is within issue 40's bound, 5 x the default grid's 1.37 us
per run-round (the grid as a whole, regret tracking included) = 6.85 us.

``python benchmarks/learner_costs.py [--learners a,b] [--repeats 3]``; ``--quick``: T = 2000,
3 seeds; ``--smoke``: T = 200, 2 seeds, three learners. PPO's warm-up play trains its policy
(cached in the process for the same description), so its measured plays are the frozen policy's.
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import parse_args, table, write_json  # noqa: E402

#: The env each feedback kind plays (id, parameters besides the horizon).
DEFAULT_ENVS = {
    "full": ("DPExperts-Shift-v0", {"n_experts": 10, "n_shifts": 4, "gap": 0.3}),
    "bandit": ("DPExperts-Bandit-v0", {}),
    "oco": ("DPExperts-OCO-v0", {}),
}
DEFAULT_ENVS["any"] = DEFAULT_ENVS["full"]  # uniform: the default comparison's floor
REFERENCE = "hedge"
#: learners left out of the default table (none: every registered learner is measured)
SKIP: set[str] = set()
#: Issue 40's bound on a learner's cost per run-round: 5 x the default grid's 1.37 us.
BOUND_NS = 5 * 1370


def cell_cost(name: str, horizon: int, seeds: int, repeats: int) -> float:
    """Median CPU nanoseconds per run-round of ``name``'s cell (after one warm-up play)."""
    import agents
    from dp_experts_env.evaluation.episode import run_cells
    from dp_experts_env.evaluation.grid import EnvEntry, Grid

    spec = agents.spec(name)
    env_id, params = DEFAULT_ENVS[spec.feedback]
    env = EnvEntry(env_id, {**params, "horizon": horizon})
    grid = Grid(agents=[name], envs=[env], epsilons=[1.0], n_seeds=seeds)
    cells = grid.cells()
    times = []
    for i in range(repeats + 1):
        start = time.process_time()
        run_cells(cells)
        if i:
            times.append(time.process_time() - start)
    return statistics.median(times) / (horizon * seeds) * 1e9


def main(argv: list[str] | None = None) -> dict:
    def extra(parser) -> None:
        parser.add_argument("--learners", default=None, help="comma-separated names (default: all)")
        parser.add_argument("--repeats", type=int, default=3)

    args = parse_args(__doc__.splitlines()[0], argv, extra)
    import agents

    horizon, seeds = (200, 2) if args.smoke else (2000, 3) if args.quick else (10_000, 10)
    names = [e["name"] for e in agents.available() if e["name"] not in SKIP]
    if args.learners:
        names = args.learners.split(",")
    elif args.smoke:
        names = ["hedge", "exp3", "ogd"]
    if REFERENCE not in names:
        names = [REFERENCE, *names]
    costs = {n: cell_cost(n, horizon, seeds, args.repeats) for n in names}
    rows = [
        {
            "learner": n,
            "env": DEFAULT_ENVS[agents.spec(n).feedback][0],
            "ns/run-round": round(c),
            "x default": round(c / costs[REFERENCE], 2),
            "<= bound": "yes" if c <= BOUND_NS else "no",
        }
        for n, c in sorted(costs.items(), key=lambda kv: kv[1])
    ]
    print(f"T = {horizon}, {seeds} seeds, epsilon 1, median of {args.repeats} plays (CPU)")
    print(table(rows, ["learner", "env", "ns/run-round", "x default", "<= bound"]))
    result = {"horizon": horizon, "seeds": seeds, "rows": rows}
    write_json("learner_costs", result, args.out)
    return result


if __name__ == "__main__":
    main()
