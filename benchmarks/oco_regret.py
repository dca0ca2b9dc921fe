"""Regret of the OCO learners on DPExperts-OCO-v0's stochastic family: rates, switches, privacy.

Measures what the P-COMW issue asks for, on the box ``[-1, 1]^d`` (d = 5, ``||g|| <= 1``):

* ``baselines`` -- ``ogd`` and ``ftrl-oco`` final static regret for T in a log grid, on the
  stochastic family with its default mean (gap 0.3) and with zero mean (gap 0); the log-log slope
  of the mean regret against T by ``scipy.stats.linregress`` (with its standard error). Expected
  ~0.5 (both step sizes scale like 1/sqrt(T)).
* ``dp`` -- ``p-comw`` (dp setting, calibrated tuning, delta 1e-5): the certified epsilon next to
  the requested one, and the regret at T = 10^4 for a ladder of epsilons (it should fall as
  epsilon grows and reach ``ftrl-oco`` at epsilon = inf); regret against T at epsilon = 1 next to
  ``dp-ftrl-oco`` (Laplace and Gaussian trees).
* ``lazy`` -- ``p-comw-lazy`` (calibrated): mean number of switches (with its standard error)
  against the budget S, at T = 10^4 for a ladder of S; the regret fitted to Theorem 4.2's form
  ``a G D sqrt(2T) + b G D ln(T) T/S`` (least squares, non-negative, R^2); and regret against T
  at S = sqrt(d T) (the default) and at S = T/10.

Usage::

    python benchmarks/oco_regret.py            # the full tables (~5 minutes on 2 cores)
    python benchmarks/oco_regret.py --quick    # T <= 10^4, 4 runs
    python benchmarks/oco_regret.py --smoke    # tiny T, 2 runs

Not a test: nothing here asserts. tests/test_oco_learners.py pins the same properties at small
sizes with fixed seeds. Results: ``benchmarks/results/oco_regret.json``; docs/algorithms.md
("Measured: regret against T") records a run.
"""

from __future__ import annotations

import math
import sys
import time
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
from scipy import optimize, stats

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import agents  # noqa: E402
import dp_experts_env  # noqa: E402,F401  (registers the ids)
from benchmarks._common import parse_args, table, write_json  # noqa: E402

DIM = 5
ENV_SEED = 1000  # runs use env seeds ENV_SEED + b and agent seeds b


def episode(name: str, horizon: int, runs: int, gap: float | None = None, **params: Any) -> dict:
    """One batch of ``runs`` episodes; mean/se of the final static regret and switches."""
    env_kw = {"horizon": horizon, "dim": DIM, "family": "stochastic"}
    if gap is not None:
        env_kw["gap"] = gap
    env = gym.make_vec(
        "DPExperts-OCO-v0", num_envs=runs, vectorization_mode="vector_entry_point", **env_kw
    )
    agent = agents.make(name, env=env, seed=0, **params)
    start = time.process_time()
    obs, info = env.reset(seed=ENV_SEED)
    for _ in range(horizon):
        obs, _, _, _, info = env.step(agent.act(obs))
    env.close()
    regret = np.asarray(info["static_regret"], dtype=np.float64)
    switches = getattr(agent, "switches", None)
    claim = agent.privacy
    row = {
        "learner": name,
        "T": horizon,
        "regret": float(regret.mean()),
        "regret_se": float(regret.std(ddof=1) / math.sqrt(runs)),
        "cpu_s": time.process_time() - start,
        "epsilon_certified": float(claim.epsilon),
        "delta": float(claim.delta),
    }
    if switches is not None:
        sw = switches.astype(np.float64)
        row["switches"] = float(sw.mean())
        row["switches_se"] = float(sw.std(ddof=1) / math.sqrt(runs))
    parameters = getattr(agent, "parameters", None)
    if parameters is not None:
        row["expected_switches"] = float(parameters.expected_switches)
        row["regret_bound"] = float(parameters.regret_bound)
    return row


def slope(horizons: list[int], regrets: list[float]) -> dict[str, float]:
    """Log-log slope of regret against T (scipy.stats.linregress)."""
    fit = stats.linregress(np.log(horizons), np.log(regrets))
    return {"slope": float(fit.slope), "slope_se": float(fit.stderr), "r2": float(fit.rvalue**2)}


def baselines(horizons: list[int], runs: int) -> dict[str, Any]:
    rows, fits = [], []
    for gap in (None, 0.0):
        for name in ("ogd", "ftrl-oco"):
            these = [episode(name, t, runs, gap) for t in horizons]
            for r in these:
                r["gap"] = 0.3 if gap is None else gap
            rows += these
            fit = slope(horizons, [r["regret"] for r in these])
            fits.append({"learner": name, "gap": 0.3 if gap is None else gap, **fit})
    return {"rows": rows, "fits": fits}


def dp(horizons: list[int], runs: int, t_eps: int, epsilons: list[float]) -> dict[str, Any]:
    ladder = [episode("p-comw", t_eps, runs, epsilon=e) | {"epsilon": e} for e in epsilons]
    ladder.append(episode("ftrl-oco", t_eps, runs) | {"epsilon": math.inf, "learner": "ftrl-oco"})
    vs_t = []
    for name, params in (
        ("p-comw", {}),
        ("dp-ftrl-oco", {}),
        ("dp-ftrl-oco", {"law": "gaussian"}),
    ):
        label = name + (" (gaussian)" if params else "")
        these = [episode(name, t, runs, epsilon=1.0, **params) | {"learner": label}
                 for t in horizons]  # fmt: skip
        vs_t += these
    fits = []
    for label in ("p-comw", "dp-ftrl-oco", "dp-ftrl-oco (gaussian)"):
        these = [r for r in vs_t if r["learner"] == label]
        fits.append({"learner": label, **slope(horizons, [r["regret"] for r in these])})
    finite = [r for r in ladder if r["learner"] == "p-comw"]
    spent_ok = all(r["epsilon_certified"] <= r["epsilon"] * (1 + 1e-9) for r in finite)
    falling = all(
        a["regret"] >= b["regret"] - 2 * math.hypot(a["regret_se"], b["regret_se"])
        for a, b in zip(ladder, ladder[1:], strict=False)
    )
    return {"ladder": ladder, "vs_T": vs_t, "fits": fits, "certified_within_epsilon": spent_ok,
            "regret_falls_with_epsilon": falling}  # fmt: skip


def lazy(horizons: list[int], runs: int, t_s: int, budgets: list[float]) -> dict[str, Any]:
    ladder = [episode("p-comw-lazy", t_s, runs, switch_budget=s) | {"S": s} for s in budgets]
    for r in ladder:
        r["within_budget"] = r["switches"] <= r["S"] + 2 * r["switches_se"]
    # Theorem 4.2's form on the S ladder: regret <= a G D sqrt(2T) + b G D ln(T) T/S. Below
    # S ~ T/100 the regret saturates at that of a learner that barely moves (the bound exceeds
    # the trivial one there), so the shape is fitted on S >= T/100 only.
    gd = 2 * math.sqrt(DIM)
    fitted = [r for r in ladder if r["S"] >= t_s / 100] or ladder
    design = np.array(
        [[gd * math.sqrt(2 * t_s), gd * math.log(t_s) * t_s / r["S"]] for r in fitted]
    )
    y = np.array([r["regret"] for r in fitted])
    coef, _ = optimize.nnls(design, y)
    pred = design @ coef
    r2 = 1 - float(np.sum((y - pred) ** 2) / np.sum((y - y.mean()) ** 2))
    form = {
        "a": float(coef[0]),
        "b": float(coef[1]),
        "r2": r2,
        "fitted_S": [r["S"] for r in fitted],
        "slope_in_S": slope([r["S"] for r in fitted], list(y))["slope"],
        "below_bound": all(r["regret"] <= r["regret_bound"] for r in ladder),
        "decreasing_in_S": all(
            a["regret"] > b["regret"] for a, b in zip(ladder, ladder[1:], strict=False)
        ),
    }
    vs_t, fits = [], []
    for label, rule in (
        ("S = sqrt(dT)", lambda t: math.sqrt(DIM * t)),
        ("S = T/10", lambda t: t / 10),
    ):
        these = [
            episode("p-comw-lazy", t, runs, switch_budget=rule(t)) | {"rule": label, "S": rule(t)}
            for t in horizons
        ]
        for r in these:
            r["within_budget"] = r["switches"] <= r["S"] + 2 * r["switches_se"]
        vs_t += these
        fits.append({"rule": label, **slope(horizons, [r["regret"] for r in these])})
    return {"ladder": ladder, "theorem_42_form": form, "vs_T": vs_t, "fits": fits}


def main(argv: list[str] | None = None) -> dict[str, Any]:
    args = parse_args(__doc__.splitlines()[0], argv)
    if args.smoke:
        horizons, runs, t_mid, epsilons, budgets = (
            [200, 400],
            2,
            400,
            [1.0, math.inf],
            [10, 40, 100],
        )
    elif args.quick:
        horizons, runs, t_mid = [1000, 3000, 10_000], 4, 3000
        epsilons, budgets = [0.5, 1.0, 4.0, 16.0, math.inf], [10, 30, 100, 300, 1000]
    else:
        horizons, runs, t_mid = [1000, 3000, 10_000, 30_000, 100_000], 8, 10_000
        epsilons = [0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0, math.inf]
        budgets = [10, 30, 100, 300, 1000, 3000]
    start = time.perf_counter()
    out = {
        "dim": DIM,
        "runs": runs,
        "horizons": horizons,
        "baselines": baselines(horizons, runs),
        "dp": dp(horizons, runs, t_mid, epsilons),
        "lazy": lazy(horizons, runs, t_mid, budgets),
    }
    out["seconds"] = time.perf_counter() - start
    print(f"DPExperts-OCO-v0 stochastic, box d={DIM}, {runs} runs per cell")
    print("\nbaselines: regret vs T\n" + table(out["baselines"]["rows"],
          ["learner", "gap", "T", "regret", "regret_se"]))  # fmt: skip
    print(table(out["baselines"]["fits"], ["learner", "gap", "slope", "slope_se", "r2"]))
    cols = ["learner", "epsilon", "epsilon_certified", "regret", "regret_se", "switches"]
    print(f"\ndp: regret vs epsilon at T={t_mid}\n" + table(out["dp"]["ladder"], cols))
    print("dp: regret vs T at epsilon = 1\n" + table(out["dp"]["vs_T"],
          ["learner", "T", "epsilon_certified", "regret", "regret_se"]))  # fmt: skip
    print(table(out["dp"]["fits"], ["learner", "slope", "slope_se", "r2"]))
    print(f"certified <= requested: {out['dp']['certified_within_epsilon']}; regret falls with "
          f"epsilon: {out['dp']['regret_falls_with_epsilon']}")  # fmt: skip
    print(f"\nlazy: switches and regret vs S at T={t_mid}\n" + table(out["lazy"]["ladder"],
          ["S", "switches", "switches_se", "within_budget", "regret", "regret_se",
           "regret_bound"]))  # fmt: skip
    print(f"Theorem 4.2 form: {out['lazy']['theorem_42_form']}")
    print("lazy: regret vs T\n" + table(out["lazy"]["vs_T"],
          ["rule", "T", "S", "switches", "within_budget", "regret", "regret_se"]))  # fmt: skip
    print(table(out["lazy"]["fits"], ["rule", "slope", "slope_se", "r2"]))
    path = write_json("oco_regret", out, args.out)
    print(f"\n{out['seconds']:.0f} s; JSON: {path}")
    return out


if __name__ == "__main__":
    main()
