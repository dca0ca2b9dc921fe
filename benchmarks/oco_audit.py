"""Audit power on P-COMW: the correct learner and its half-noise mutant, horizon by horizon.

For T in a ladder, d = 1, gradients ``+1`` / ``-1`` in round 1 and 0 afterwards, runs
:func:`dp_experts_env.evaluation.audit_oco.audit_oco_agent` on ``p-comw`` (dp, epsilon = 1,
calibrated) and on the same learner with ``noise_multiplier=0.5`` (half the Gibbs spread, the
claim kept), and prints the lower bound, the power ("could detect eps > X") and the verdict. It
also estimates the true Renyi divergence of the pair by Monte Carlo (``E[exp((a-1) L)]`` over the
exact path log-likelihood ratio L of 100,000 runs) next to what the accountant certifies, which
says how far the certificate is from the truth on this pair.

Usage::

    python benchmarks/oco_audit.py           # T in {2, 3, 4, 8, 32, 128}, 60,000 runs (~3 min)
    python benchmarks/oco_audit.py --quick   # T in {2, 4, 8}, 20,000 runs
    python benchmarks/oco_audit.py --smoke

Not a test: tests/test_oco_audit.py pins the T = 2 and T = 4 verdicts with fixed seeds. Results:
``benchmarks/results/oco_audit.json``; docs/privacy.md records a run.
"""

from __future__ import annotations

import math
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
from scipy.special import logsumexp

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import agents  # noqa: E402
from benchmarks._common import parse_args, table, write_json  # noqa: E402
from dp_experts_env.evaluation.audit_oco import audit_oco_agent  # noqa: E402
from dp_experts_env.privacy.accountant_oco import ORDERS, _total_rdp  # noqa: E402

ALPHAS = (2.0, 4.0, 8.0, 16.0)


def pair(horizon: int) -> tuple[np.ndarray, np.ndarray]:
    x = np.zeros((horizon, 1))
    x[0, 0] = 1.0
    xn = x.copy()
    xn[0, 0] = -1.0
    return x, xn


def renyi_truth(horizon: int, runs: int, seed: int = 5) -> list[dict[str, float]]:
    """Monte Carlo Renyi divergences of the audit pair against the certified ones."""
    x, xn = pair(horizon)
    agent = agents.make("p-comw", dim=1, horizon=horizon, epsilon=1.0, num_envs=runs, seed=seed)
    obs, pts = np.zeros((runs, 1)), np.empty((runs, horizon, 1))
    for t in range(horizon):
        pts[:, t] = agent.act(obs)
        obs = np.broadcast_to(x[t], (runs, 1)).copy()
    llr = agent.path_log_likelihood(pts, x) - agent.path_log_likelihood(pts, xn)
    prm = agent.parameters
    certified = _total_rdp(prm.kappa, horizon, np.array([prm.p]), prm.log_phi, prm.log_phi)[0][0]
    out = []
    for a in ALPHAS:
        i = int(np.argmin(np.abs(ORDERS - a)))
        mc = (logsumexp((a - 1) * llr) - math.log(runs)) / (a - 1)
        cert = float(certified[i])
        out.append({"T": horizon, "alpha": a, "monte_carlo": float(mc), "certified": cert,
                    "ratio": cert / float(mc)})  # fmt: skip
    return out


def main(argv: list[str] | None = None) -> dict[str, Any]:
    args = parse_args(__doc__.splitlines()[0], argv)
    if args.smoke:
        horizons, runs, truth_runs = [2], 2_000, 5_000
    elif args.quick:
        horizons, runs, truth_runs = [2, 4, 8], 20_000, 50_000
    else:
        horizons, runs, truth_runs = [2, 3, 4, 8, 32, 128], 60_000, 100_000
    start = time.perf_counter()
    rows = []
    for horizon in horizons:
        x, xn = pair(horizon)
        row: dict[str, Any] = {"T": horizon, "runs": runs}
        for label, mult in (("correct", 1.0), ("mutant", 0.5)):
            res = audit_oco_agent("p-comw", x, xn, n_runs=runs, seed=1, epsilon=1.0,
                                  noise_multiplier=mult)  # fmt: skip
            row[f"{label}_lb"] = res.epsilon_lower_bound
            row[f"{label}_detectable"] = res.detectable_epsilon
            row["correct_passed" if label == "correct" else "mutant_caught"] = (
                res.passed if label == "correct" else not res.passed
            )
            row[f"{label}_statistic"] = res.statistic
        row["claimed"] = res.claimed_epsilon
        rows.append(row)
    truth = [r for h in horizons for r in renyi_truth(h, truth_runs)]
    out = {"rows": rows, "renyi": truth, "seconds": time.perf_counter() - start}
    cols = ["T", "runs", "claimed", "correct_lb", "correct_detectable", "correct_passed",
            "mutant_lb", "mutant_detectable", "mutant_caught", "mutant_statistic"]  # fmt: skip
    print(table(rows, cols))
    print(table(truth, ["T", "alpha", "monte_carlo", "certified", "ratio"]))
    path = write_json("oco_audit", out, args.out)
    print(f"{out['seconds']:.0f} s; JSON: {path}")
    return out


if __name__ == "__main__":
    main()
