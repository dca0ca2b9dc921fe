"""Batched EXP3 against SMPyBandits' Exp3 (or a plain numpy EXP3 loop): CPU time per step.

One *step* is one round of one run of the learner, with no environment: pick an arm, then
learn that arm's loss. Three implementations are timed interleaved (``_common.py``):

* ``ours``: ``agents.make("exp3", n_arms=K, num_envs=R)``, one ``act`` per round for all R runs
  (observation: identity advice, the agent's own last arms, a Bernoulli loss);
* ``smpy``: R independent ``SMPyBandits.Policies.Exp3`` objects (``choice`` then ``getReward``
  with reward 1 - loss), stepped one after the other (SMPyBandits has no batching);
* ``numpy``: R independent runs of a minimal numpy EXP3 (softmax of the loss estimates,
  inverse-CDF draw, importance-weighted update), the fallback reference when SMPyBandits is not
  importable.

SMPyBandits 0.9.7 needs two shims on current packages, applied here before its import:
``scipy.special.btdtri`` (removed from SciPy; it is ``betaincinv``) and ``seaborn`` (imported
by its plotting helpers at package import; a stub module is installed when seaborn is missing).
Install it with ``pip install --no-deps SMPyBandits``.

Targets: per step, ours >= 1x the reference at R = 1 and >= 20x at R = 100 repetitions (the
reference is SMPyBandits when importable, else the numpy loop). Run
``python benchmarks/bandit_baseline.py [--quick]``.
"""

from __future__ import annotations

import sys
import types
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np  # noqa: E402
from _common import (  # noqa: E402  (puts the repository root on sys.path first)
    interleaved_rates,
    median,
    paired_ratio,
    parse_args,
    table,
    target_line,
    target_record,
    write_json,
)

import agents  # noqa: E402

N_ARMS = 10
HORIZON = 10**7  # never reached inside a time box
POOL = 64


def load_smpy() -> type | None:
    """SMPyBandits' Exp3 class with the two shims, or None when it is not installed."""
    import scipy.special

    if not hasattr(scipy.special, "btdtri"):
        scipy.special.btdtri = scipy.special.betaincinv  # removed alias: same function
    try:
        import seaborn  # noqa: F401
    except ImportError:
        stub = types.ModuleType("seaborn")
        stub.__getattr__ = lambda name: lambda *args, **kwargs: None  # type: ignore[attr-defined]
        sys.modules["seaborn"] = stub
    try:
        import contextlib
        import io

        with contextlib.redirect_stdout(io.StringIO()):  # its import prints notices
            from SMPyBandits.Policies.Exp3 import Exp3
    except Exception:  # noqa: BLE001 - any import failure means "not available"
        return None
    return Exp3


def ours_step(runs: int):  # noqa: ANN201
    agent = agents.make("exp3", n_experts=N_ARMS, n_arms=N_ARMS, horizon=HORIZON, num_envs=runs,
                        seed=0)  # fmt: skip
    agent.reset(seed=0)
    rng = np.random.default_rng(1)
    losses = (rng.random((POOL, runs, 1)) < 0.5).astype(np.float64)
    advice = np.broadcast_to(np.eye(N_ARMS).reshape(-1), (runs, N_ARMS * N_ARMS))
    state = {"i": 0}

    def step() -> None:
        i = state["i"] = state["i"] + 1
        agent.act({"advice": advice, "last_action": agent.last_actions,
                   "last_loss": losses[i % POOL]})  # fmt: skip

    return step


def smpy_step(exp3: type, runs: int):  # noqa: ANN201
    np.random.seed(0)  # noqa: NPY002 - SMPyBandits draws from numpy's global generator
    policies = [exp3(N_ARMS, gamma=0.01) for _ in range(runs)]
    for p in policies:
        p.startGame()
    rewards = (np.random.default_rng(1).random((POOL, runs)) >= 0.5).astype(np.float64)
    state = {"i": 0}

    def step() -> None:
        i = state["i"] = state["i"] + 1
        row = rewards[i % POOL]
        for r, policy in enumerate(policies):
            arm = policy.choice()
            policy.getReward(arm, row[r])

    return step


def numpy_step(runs: int):  # noqa: ANN201
    """R separate single-run EXP3 loops in plain numpy (one Generator per run)."""
    eta = float(np.sqrt(2.0 * np.log(N_ARMS) / (HORIZON * N_ARMS)))
    states = [
        {"lhat": np.zeros(N_ARMS), "rng": np.random.default_rng(seed)} for seed in range(runs)
    ]
    losses = (np.random.default_rng(1).random((POOL, runs)) < 0.5).astype(np.float64)
    counter = {"i": 0}

    def step() -> None:
        i = counter["i"] = counter["i"] + 1
        row = losses[i % POOL]
        for r, s in enumerate(states):
            z = -eta * s["lhat"]
            w = np.exp(z - z.max())
            p = w / w.sum()
            arm = min(int(np.searchsorted(np.cumsum(p), s["rng"].random() * p.sum(), "right")),
                      N_ARMS - 1)  # fmt: skip
            s["lhat"][arm] += row[r] / p[arm]

    return step


def main(argv: list[str] | None = None) -> dict:
    args = parse_args(__doc__.splitlines()[0], argv)
    if args.smoke:
        reps, budget = [1, 4], 0.05
    elif args.quick:
        reps, budget = [1, 10, 100], 1.0
    else:
        reps, budget = [1, 10, 100], 3.0
    budget = args.budget if args.budget is not None else budget
    exp3 = load_smpy()
    reference = "smpy" if exp3 is not None else "numpy"
    print(f"reference: {'SMPyBandits Exp3' if exp3 is not None else 'plain numpy EXP3 loop'}")

    rows = []
    for r in reps:
        steps = {"ours": ours_step(r), "numpy": numpy_step(r)}
        if exp3 is not None:
            steps["smpy"] = smpy_step(exp3, r)
        rates = interleaved_rates(steps, budget * len(steps))
        row = {"repetitions": r}
        for name in steps:
            row[f"{name}_steps_per_s"] = median(rates[name]) * r
        row["ours_over_numpy"] = paired_ratio(rates["ours"], rates["numpy"])
        row["ours_over_smpy"] = paired_ratio(rates["ours"], rates["smpy"]) if exp3 else None
        row["ours_over_reference"] = row[f"ours_over_{reference}"]
        rows.append(row)
        shown = {k: v for k, v in row.items() if k != "repetitions" and v is not None}
        print(f"  R={r:4d}: " + "  ".join(f"{k} {v:,.3g}" for k, v in shown.items()), flush=True)

    columns = ["repetitions", "ours_steps_per_s", "smpy_steps_per_s", "numpy_steps_per_s"]
    columns += ["ours_over_smpy", "ours_over_numpy"]
    print()
    print(table(rows, columns))
    targets, lines = {}, []
    first = rows[0]
    targets["B1"] = target_record(first["ours_over_reference"], 1.0)
    lines.append(target_line(f"ours/{reference} per step at R=1", first["ours_over_reference"], 1))
    big = next((row for row in rows if row["repetitions"] == 100), None)
    if big is not None:
        targets["R100"] = target_record(big["ours_over_reference"], 20.0)
        lines.append(
            target_line(f"ours/{reference} per step at R=100", big["ours_over_reference"], 20)
        )
    print("\n".join(lines))
    payload = {
        "n_arms": N_ARMS,
        "reference": reference,
        "budget_seconds": budget,
        "rows": rows,
        "targets": targets,
    }
    path = write_json("bandit_baseline", payload, args.out)
    print(f"\nwrote {path}")
    return payload


if __name__ == "__main__":
    main()
