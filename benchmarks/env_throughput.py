"""Environment throughput: env-steps/s of the native vector env against two references.

For N in {10, 100, 1000}, S in {0, 4} and B in {1, 64, 1024} (``DPExperts-Shift-v0``, Bernoulli
losses, comparator budget S), four ways of playing B runs one round each are timed *interleaved*
(short CPU-time slices of each in turn, see ``_common.py``):

* ``native``: ``gym.make_vec(..., vectorization_mode="vector_entry_point")`` (the batched core),
  ``info`` built every step as Gymnasium expects;
* ``lean``: the same env with ``info_rounds = ()`` (no ``info``; what the evaluation runs between
  its recorded rounds);
* ``sync``: ``gymnasium.vector.SyncVectorEnv`` over B single envs (``gym.make``);
* ``kernel``: a bare numpy loop doing only the arithmetic every round needs: the Bernoulli loss
  draw (one shared Generator), the charged loss, the per-round best and the O(N*S) dynamic-regret
  recursion of ``dp_experts_env/regret.py``. Nothing else: "the practical limit".

Plus the single env (``gym.make`` with its default wrappers) at N = 10, and the bandit env
``DPExperts-Bandit-v0`` (identity advice) at K in {10, 100, 1000} and B = 256: CPU time per step
and per step and arm (O(K) per round means the latter flattens as K grows).

Targets: single env at N = 10 >= 50,000 steps/s; native at N = 100, S = 4, B = 1024 >= 20x sync
and >= 0.8x the kernel. Run ``python benchmarks/env_throughput.py [--quick]``.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import gymnasium as gym  # noqa: E402
import numpy as np  # noqa: E402
from _common import (  # noqa: E402  (puts the repository root on sys.path first)
    interleaved_rates,
    median,
    paired_ratio,
    parse_args,
    rate,
    table,
    target_line,
    target_record,
    write_json,
)

import dp_experts_env  # noqa: E402, F401  (registers the ids)

ENV_ID = "DPExperts-Shift-v0"
HORIZON = 10**7  # never reached inside a time box, so no episode ends while timing
KERNEL_TARGET = 0.8
SYNC_TARGET = 20.0


def _kwargs(n: int, s: int) -> dict:
    return {"n_experts": n, "horizon": HORIZON, "n_switches": s, "n_shifts": 4}


def native_step(n: int, s: int, b: int, *, lean: bool = False):  # noqa: ANN201
    env = gym.make_vec(ENV_ID, num_envs=b, vectorization_mode="vector_entry_point", **_kwargs(n, s))
    env.reset(seed=0)
    if lean:
        env.unwrapped.info_rounds = ()
    actions = np.zeros(b, dtype=np.int64)
    return lambda: env.step(actions)


def sync_step(n: int, s: int, b: int):  # noqa: ANN201
    env = gym.vector.SyncVectorEnv([lambda: gym.make(ENV_ID, **_kwargs(n, s)) for _ in range(b)])
    env.reset(seed=0)
    actions = np.zeros(b, dtype=np.int64)
    return lambda: env.step(actions)


def kernel_step(n: int, s: int, b: int):  # noqa: ANN201
    """The same per-round arithmetic with no env around it (one Generator for all runs)."""
    rng = np.random.default_rng(0)
    means = np.full((b, n), 0.5)
    means[:, 0] = 0.4
    table_ = np.zeros((b, s + 1, n))  # level 0 = cumulative expert losses
    best = np.empty((b, s + 1))
    cumulative = np.zeros(b)
    per_round_best = np.zeros(b)
    rows = np.arange(b)
    actions = np.zeros(b, dtype=np.int64)

    def step() -> None:
        losses = (rng.random((b, n)) < means).astype(np.float64)
        if s:
            np.min(table_, axis=2, out=best)
            np.minimum(table_[:, 1:], best[:, :-1, None], out=table_[:, 1:])
        np.add(table_, losses[:, None, :], out=table_)
        np.add(per_round_best, losses.min(axis=1), out=per_round_best)
        np.add(cumulative, losses[rows, actions], out=cumulative)

    return step


def single_rate(n: int, budget: float) -> float:
    env = gym.make(ENV_ID, **_kwargs(n, 4))
    env.reset(seed=0)
    per_call, _, _ = rate(lambda: env.step(0), budget)
    env.close()
    return per_call


def bandit_costs(arms: list[int], b: int, budget: float) -> list[dict]:
    """CPU microseconds per step of DPExperts-Bandit-v0 (identity advice) at each K, interleaved."""
    steps = {}
    for k in arms:
        env = gym.make_vec(
            "DPExperts-Bandit-v0",
            num_envs=b,
            vectorization_mode="vector_entry_point",
            n_arms=k,
            horizon=HORIZON,
        )
        env.reset(seed=0)
        actions = np.zeros(b, dtype=np.int64)
        steps[f"K={k}"] = (lambda e, a: lambda: e.step(a))(env, actions)
    rates = interleaved_rates(steps, budget * len(arms))
    rows = []
    for k in arms:
        micros = 1e6 / median(rates[f"K={k}"])
        rows.append(
            {"K": k, "B": b, "us_per_step": micros, "ns_per_run_and_arm": micros * 1e3 / (b * k)}
        )
    return rows


def main(argv: list[str] | None = None) -> dict:
    args = parse_args(__doc__.splitlines()[0], argv)
    if args.smoke:
        grid, budget, arms, bandit_b = [(10, 4, 4)], 0.05, [10, 20], 4
    elif args.quick:
        grid = [(n, s, b) for n in (10, 100) for s in (4,) for b in (1, 64, 1024)]
        budget, arms, bandit_b = 1.0, [10, 100, 1000], 256
    else:
        grid = [(n, s, b) for n in (10, 100, 1000) for s in (0, 4) for b in (1, 64, 1024)]
        budget, arms, bandit_b = 2.5, [10, 100, 1000], 256
    budget = args.budget if args.budget is not None else budget

    rows = []
    for n, s, b in grid:
        steps = {
            "native": native_step(n, s, b),
            "lean": native_step(n, s, b, lean=True),
            "sync": sync_step(n, s, b),
            "kernel": kernel_step(n, s, b),
        }
        rates = interleaved_rates(steps, 4 * budget)
        row = {"N": n, "S": s, "B": b}
        for name in steps:
            row[f"{name}_steps_per_s"] = median(rates[name]) * b
        row["native_over_sync"] = paired_ratio(rates["native"], rates["sync"])
        row["native_over_kernel"] = paired_ratio(rates["native"], rates["kernel"])
        row["lean_over_kernel"] = paired_ratio(rates["lean"], rates["kernel"])
        rows.append(row)
        print(
            f"  N={n:4d} S={s} B={b:4d}: native {row['native_steps_per_s']:12,.0f}  lean "
            f"{row['lean_steps_per_s']:12,.0f}  sync {row['sync_steps_per_s']:10,.0f}  kernel "
            f"{row['kernel_steps_per_s']:12,.0f}",
            flush=True,
        )
    single = single_rate(10, budget)
    bandit = bandit_costs(arms, bandit_b, budget)

    columns = ["N", "S", "B", "native_steps_per_s", "lean_steps_per_s", "sync_steps_per_s"]
    columns += ["kernel_steps_per_s", "native_over_sync", "native_over_kernel", "lean_over_kernel"]
    print()
    print(table(rows, columns))
    print(f"\nsingle env (gym.make, default wrappers), N = 10: {single:,.0f} steps/s")
    print("\nDPExperts-Bandit-v0 (identity advice), CPU time per step:")
    print(table(bandit, ["K", "B", "us_per_step", "ns_per_run_and_arm"]))

    targets = {"single_env_N10_steps_per_s": target_record(single, 50_000)}
    lines = [target_line("single env N=10 steps/s", single, 50_000)]
    key = next((r for r in rows if (r["N"], r["S"], r["B"]) == (100, 4, 1024)), None)
    if key is not None:
        targets["native_over_sync_N100_S4_B1024"] = target_record(
            key["native_over_sync"], SYNC_TARGET
        )
        targets["native_over_kernel_N100_S4_B1024"] = target_record(
            key["native_over_kernel"], KERNEL_TARGET
        )
        lines.append(
            target_line("native/sync at N=100,S=4,B=1024", key["native_over_sync"], SYNC_TARGET)
        )
        lines.append(
            target_line(
                "native/kernel at N=100,S=4,B=1024", key["native_over_kernel"], KERNEL_TARGET
            )
        )
    print("\n".join(lines))
    payload = {
        "env_id": ENV_ID,
        "budget_seconds": budget,
        "rows": rows,
        "single_env": {"N": 10, "steps_per_s": single},
        "bandit": bandit,
        "targets": targets,
    }
    path = write_json("env_throughput", payload, args.out)
    print(f"\nwrote {path}")
    return payload


if __name__ == "__main__":
    main()
