"""Environment throughput: env-steps/s of the native vector env against two references.

For N in {10, 100, 1000}, S in {0, 4} and B in {1, 64, 1024} (``DPExperts-Shift-v0``, Bernoulli
losses, comparator budget S), three ways of playing B runs one round each are timed in the same
process, one after the other:

* ``native``: ``gym.make_vec(..., vectorization_mode="vector_entry_point")`` (the batched core);
* ``sync``: ``gymnasium.vector.SyncVectorEnv`` over B single envs (``gym.make``);
* ``kernel``: a bare numpy loop doing only the arithmetic every round needs: the Bernoulli loss
  draw (one shared Generator), the charged loss, the per-round best and the O(N*S) dynamic-regret
  recursion of ``dp_experts_env/regret.py``. Nothing else: "the practical limit".

Plus the single env (``gym.make`` with its default wrappers) at N = 10.

Targets: single env at N = 10 >= 50,000 steps/s; native at N = 100, S = 4, B = 1024 >= 20x sync
and >= 0.5x the kernel. Run ``python benchmarks/env_throughput.py [--quick]``.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import gymnasium as gym  # noqa: E402
import numpy as np  # noqa: E402
from _common import parse_args, rate, table, target_line, target_record, write_json  # noqa: E402

import dp_experts_env  # noqa: E402, F401  (registers the ids)

ENV_ID = "DPExperts-Shift-v0"
HORIZON = 10**7  # never reached inside a time box, so no episode ends while timing


def _kwargs(n: int, s: int) -> dict:
    return {"n_experts": n, "horizon": HORIZON, "n_switches": s, "n_shifts": 4}


def native_rate(n: int, s: int, b: int, budget: float) -> float:
    env = gym.make_vec(ENV_ID, num_envs=b, vectorization_mode="vector_entry_point", **_kwargs(n, s))
    env.reset(seed=0)
    actions = np.zeros(b, dtype=np.int64)
    per_call, _, _ = rate(lambda: env.step(actions), budget)
    env.close()
    return per_call * b


def sync_rate(n: int, s: int, b: int, budget: float) -> float:
    env = gym.vector.SyncVectorEnv([lambda: gym.make(ENV_ID, **_kwargs(n, s)) for _ in range(b)])
    env.reset(seed=0)
    actions = np.zeros(b, dtype=np.int64)
    per_call, _, _ = rate(lambda: env.step(actions), budget)
    env.close()
    return per_call * b


def kernel_rate(n: int, s: int, b: int, budget: float) -> float:
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

    per_call, _, _ = rate(step, budget)
    return per_call * b


def single_rate(n: int, budget: float) -> float:
    env = gym.make(ENV_ID, **_kwargs(n, 4))
    env.reset(seed=0)
    per_call, _, _ = rate(lambda: env.step(0), budget)
    env.close()
    return per_call


def main(argv: list[str] | None = None) -> dict:
    args = parse_args(__doc__.splitlines()[0], argv)
    if args.smoke:
        grid, budget = [(10, 4, 4)], 0.02
    elif args.quick:
        grid = [(n, s, b) for n in (10, 100) for s in (4,) for b in (1, 64, 1024)]
        budget = 0.5
    else:
        grid = [(n, s, b) for n in (10, 100, 1000) for s in (0, 4) for b in (1, 64, 1024)]
        budget = 1.0
    budget = args.budget if args.budget is not None else budget
    sync_budget = budget * 2  # one sync step at B = 1024 is slow: give it a few more steps

    rows = []
    for n, s, b in grid:
        kernel = kernel_rate(n, s, b, budget)
        native = native_rate(n, s, b, budget)
        sync = sync_rate(n, s, b, sync_budget)
        rows.append(
            {
                "N": n,
                "S": s,
                "B": b,
                "native_steps_per_s": native,
                "sync_steps_per_s": sync,
                "kernel_steps_per_s": kernel,
                "native_over_sync": native / sync,
                "native_over_kernel": native / kernel,
            }
        )
        print(
            f"  N={n:4d} S={s} B={b:4d}: native {native:12,.0f}  sync {sync:10,.0f}  "
            f"kernel {kernel:12,.0f}",
            flush=True,
        )
    single = single_rate(10, budget)

    print()
    print(
        table(
            rows,
            [
                "N",
                "S",
                "B",
                "native_steps_per_s",
                "sync_steps_per_s",
                "kernel_steps_per_s",
                "native_over_sync",
                "native_over_kernel",
            ],
        )
    )
    print(f"\nsingle env (gym.make, default wrappers), N = 10: {single:,.0f} steps/s")

    targets = {"single_env_N10_steps_per_s": target_record(single, 50_000)}
    lines = [target_line("single env N=10 steps/s", single, 50_000)]
    key = next((r for r in rows if (r["N"], r["S"], r["B"]) == (100, 4, 1024)), None)
    if key is not None:
        targets["native_over_sync_N100_S4_B1024"] = target_record(key["native_over_sync"], 20.0)
        targets["native_over_kernel_N100_S4_B1024"] = target_record(key["native_over_kernel"], 0.5)
        lines.append(target_line("native/sync at N=100,S=4,B=1024", key["native_over_sync"], 20))
        lines.append(
            target_line("native/kernel at N=100,S=4,B=1024", key["native_over_kernel"], 0.5)
        )
    print("\n".join(lines))
    payload = {
        "env_id": ENV_ID,
        "budget_seconds": budget,
        "rows": rows,
        "single_env": {"N": 10, "steps_per_s": single},
        "targets": targets,
    }
    path = write_json("env_throughput", payload, args.out)
    print(f"\nwrote {path}")
    return payload


if __name__ == "__main__":
    main()
