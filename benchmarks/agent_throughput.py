"""Agent throughput: rounds/s of every registered learner, batched (B = 256) against B = 1.

Each agent is fed observations directly (no env): random loss vectors (B, N) for full-information
learners; bandit dict observations (random advice over K arms, the agent's own last actions, a
random last loss) for bandit learners. A small pool of pre-drawn observations is cycled so the
timing is the agent's alone. A "round" is one run's ``act``: rounds/s = calls/s x B, in CPU
time. The batch speed-up (target >= 20x) is measured in the same process with B = 1 and B = 256
interleaved (short slices of each in turn, see ``_common.py``); it is the median of the per-slice
ratios.

Learners restart (``reset``) when their clock reaches the horizon T, so episode-scoped work is
included. Run ``python benchmarks/agent_throughput.py [--quick]``.
"""

from __future__ import annotations

import sys
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
    write_json,
)

import agents  # noqa: E402

N_EXPERTS = 10
N_ARMS = 5
HORIZON = 10_000
POOL = 16
TARGET = 20.0


def _observations(feedback: str, b: int, seed: int) -> list:
    rng = np.random.default_rng(seed)
    if feedback == "oco":  # gradients of norm <= G = 1 for the continuous-action learners
        g = rng.standard_normal((POOL, b, N_EXPERTS))
        return list(g / np.maximum(1.0, np.linalg.norm(g, axis=2, keepdims=True)))
    if feedback == "full":
        return [rng.random((b, N_EXPERTS)) for _ in range(POOL)]
    pool = []
    for _ in range(POOL):
        advice = rng.random((b, N_EXPERTS, N_ARMS))
        advice /= advice.sum(axis=2, keepdims=True)
        pool.append({"advice": advice.reshape(b, -1), "last_loss": rng.random((b, 1))})
    return pool


def agent_step(name: str, feedback: str, b: int):  # noqa: ANN201
    """One ``act`` of agent ``name`` with ``num_envs = b`` (a closure to time)."""
    params = {"n_experts": N_EXPERTS, "horizon": HORIZON, "num_envs": b, "seed": 0}
    if feedback == "bandit":
        params["n_arms"] = N_ARMS
    if name == "ppo":
        # The RL baseline trains on the env before it plays; a short training suffices to time
        # its play (the policy's size does not depend on the training length).
        env_kwargs = {"n_experts": N_EXPERTS, "horizon": HORIZON}
        params.update(env_id="DPExperts-Shift-v0", env_kwargs=env_kwargs, timesteps=2048)
    try:
        agent = agents.make(name, **params)
    except ValueError:
        # Learners whose paper tuning is infeasible at this horizon (they say so) are timed with
        # their calibrated tuning instead.
        agent = agents.make(name, tuning="calibrated", **params)
    agent.reset(seed=0)
    pool = _observations(feedback, b, seed=1)
    state = {"i": 0}

    def step() -> None:
        if agent.t >= HORIZON:
            agent.reset()
        obs = pool[state["i"] % POOL]
        state["i"] += 1
        if feedback == "bandit":
            obs = {**obs, "last_action": agent.last_actions}
        agent.act(obs)

    return step


def main(argv: list[str] | None = None) -> dict:
    args = parse_args(__doc__.splitlines()[0], argv)
    listing = agents.available()
    big = 256
    if args.smoke:
        listing = [a for a in listing if a["name"] in ("hedge", "exp3")]
        budget, big = 0.02, 8
    elif args.quick:
        budget = 0.25
    else:
        budget = 0.75
    budget = args.budget if args.budget is not None else budget

    rows = []
    for item in listing:
        name, feedback = item["name"], item["feedback"]
        # A learner that plays on both feedbacks ("any") is timed on loss vectors.
        feedback = feedback if feedback in ("bandit", "oco") else "full"
        rates = interleaved_rates(
            {"one": agent_step(name, feedback, 1), "many": agent_step(name, feedback, big)},
            2 * budget,
        )
        one, many = median(rates["one"]), median(rates["many"]) * big
        speedup = paired_ratio(rates["many"], rates["one"]) * big
        rows.append(
            {
                "agent": name,
                "feedback": feedback,
                "private": item["private"],
                "rounds_per_s_B1": one,
                "rounds_per_s_batched": many,
                "speedup": speedup,
                "target_met": speedup >= TARGET,
            }
        )
        line = f"  {name:38s} B=1 {one:12,.0f}  B={big} {many:12,.0f}  x{speedup:.1f}"
        print(line, flush=True)

    print()
    print(
        table(
            rows,
            [
                "agent",
                "feedback",
                "private",
                "rounds_per_s_B1",
                "rounds_per_s_batched",
                "speedup",
                "target_met",
            ],
        )
    )
    missed = [r for r in rows if not r["target_met"]]
    print()
    for r in missed:
        print(target_line(f"{r['agent']} speed-up at B={big}", r["speedup"], TARGET))
    if not missed:
        print(f"every agent is >= {TARGET:g}x faster per round at B = {big}")
    payload = {
        "n_experts": N_EXPERTS,
        "n_arms": N_ARMS,
        "horizon": HORIZON,
        "batch": big,
        "budget_seconds": budget,
        "target_speedup": TARGET,
        "rows": rows,
        "missed": [r["agent"] for r in missed],
    }
    path = write_json("agent_throughput", payload, args.out)
    print(f"\nwrote {path}")
    return payload


if __name__ == "__main__":
    main()
