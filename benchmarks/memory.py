"""Memory and long-horizon cost: a T = 10^6 episode's peak RSS, and svt-restart at T = 10^5.

1. ``episode``: one DPExperts-Shift-v0 episode with N = 100 experts and T = 10^6 rounds (single
   env, ``gym.make`` with default wrappers) played by a uniformly random policy, in a fresh
   subprocess so the measurement is clean. Reports the child's peak RSS (``ru_maxrss``), its RSS
   after construction and reset (before any step), and the CPU time of the episode (wall time
   too, for reference). Target: peak < 200 MB.
2. ``svt``: ``svt-restart`` with ``window_grid="dyadic"`` (epsilon = 1) on DPExperts-Shift-v0
   with N = 100, T = 10^5, B = 1 (native vector env, the evaluation loop's path), in a fresh
   subprocess. Reports CPU time (target < 60 s; wall time too) and peak RSS.
3. ``bandit``: ``DPExperts-Bandit-v0`` (identity advice) with B = 256 runs and K in
   {10, 100, 1000} arms, 20 rounds with uniformly random arms, each in a fresh subprocess: peak
   RSS of the env alone, then with the ``exp3`` learner playing it. O(B K) memory per run means
   the env's peak grows by about B K doubles per K step, not B K^2 (2 GB at K = 1000).

``--quick`` divides both horizons by 10 (the targets are then not checked). Run
``python benchmarks/memory.py [--quick]``.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import child_env, parse_args, target_line, target_record, write_json  # noqa: E402

EPISODE_CHILD = r"""
import json, resource, sys, time
import gymnasium as gym
import numpy as np
import dp_experts_env

n, horizon = int(sys.argv[1]), int(sys.argv[2])
rss = lambda: resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
env = gym.make("DPExperts-Shift-v0", n_experts=n, horizon=horizon)
env.reset(seed=0)
after_reset = rss()
policy = np.random.default_rng(0)
actions = policy.integers(0, n, size=horizon)
start, wall = time.process_time(), time.perf_counter()
for t in range(horizon):
    _, _, terminated, _, info = env.step(int(actions[t]))
seconds, wall = time.process_time() - start, time.perf_counter() - wall
assert terminated and info["round"] == horizon
print(json.dumps({"peak_rss_mb": rss(), "rss_after_reset_mb": after_reset, "seconds": seconds,
                  "wall_seconds": wall, "steps_per_s": horizon / seconds,
                  "dynamic_regret": info["dynamic_regret"]}))
"""

SVT_CHILD = r"""
import json, resource, sys, time
import gymnasium as gym
import agents
import dp_experts_env
from dp_experts_env.evaluation.episode import play
from dp_experts_env.evaluation.grid import record_rounds

n, horizon = int(sys.argv[1]), int(sys.argv[2])
rss = lambda: resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
start, wall = time.process_time(), time.perf_counter()
env = gym.make_vec("DPExperts-Shift-v0", num_envs=1, vectorization_mode="vector_entry_point",
                   n_experts=n, horizon=horizon)
agent = agents.make("svt-restart", env=env, epsilon=1.0, seed=0, window_grid="dyadic")
curves = play(env, agent, [0], record_rounds(horizon))
seconds, wall = time.process_time() - start, time.perf_counter() - wall
print(json.dumps({"seconds": seconds, "wall_seconds": wall, "peak_rss_mb": rss(),
                  "final_dynamic_regret": float(curves["dynamic_regret"][-1, 0])}))
"""


BANDIT_CHILD = r"""
import json, resource, sys
import gymnasium as gym
import numpy as np
import agents
import dp_experts_env

k, b, rounds = (int(x) for x in sys.argv[1:4])
rss = lambda: resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def play(with_agent):
    env = gym.make_vec("DPExperts-Bandit-v0", num_envs=b, vectorization_mode="vector_entry_point",
                       n_arms=k, horizon=rounds)
    agent = agents.make("exp3", env=env, seed=0) if with_agent else None
    obs, _ = env.reset(seed=0)
    policy = np.random.default_rng(0)
    for t in range(rounds):
        action = agent.act(obs) if agent is not None else policy.integers(k, size=b)
        obs, *_ = env.step(action)
    return env.unwrapped.core.state_nbytes() / 2**20


# The env alone first (the high-water mark only grows), then with the learner.
state = play(False)
env_only = rss()
play(True)
print(json.dumps({"peak_rss_mb": env_only, "env_state_mb": state, "peak_rss_with_exp3_mb": rss()}))
"""


def _child(code: str, *args: int) -> dict:
    proc = subprocess.run(
        [sys.executable, "-c", code, *map(str, args)],
        capture_output=True,
        text=True,
        check=False,
        env=child_env(),
    )
    if proc.returncode != 0:
        raise RuntimeError(f"benchmark child failed:\n{proc.stderr}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> dict:
    args = parse_args(__doc__.splitlines()[0], argv)
    if args.smoke:
        episode_t, svt_t, full = 300, 300, False
        arms, bandit_b, bandit_t = (10,), 4, 5
    elif args.quick:
        episode_t, svt_t, full = 10**5, 10**4, False
        arms, bandit_b, bandit_t = (10, 100, 1000), 256, 20
    else:
        episode_t, svt_t, full = 10**6, 10**5, True
        arms, bandit_b, bandit_t = (10, 100, 1000), 256, 20
    n = 100

    episode = _child(EPISODE_CHILD, n, episode_t)
    print(
        f"episode N={n} T={episode_t:,}: peak RSS {episode['peak_rss_mb']:.0f} MB "
        f"(after reset {episode['rss_after_reset_mb']:.0f} MB), {episode['seconds']:.1f} s CPU, "
        f"{episode['steps_per_s']:,.0f} steps/s",
        flush=True,
    )
    svt = _child(SVT_CHILD, n, svt_t)
    print(
        f"svt-restart dyadic N={n} T={svt_t:,}: {svt['seconds']:.1f} s CPU, peak RSS "
        f"{svt['peak_rss_mb']:.0f} MB"
    )

    bandit = []
    for k in arms:
        row = _child(BANDIT_CHILD, k, bandit_b, bandit_t)
        bandit.append({"K": k, "B": bandit_b, "rounds": bandit_t, **row})
        print(
            f"Bandit-v0 K={k} B={bandit_b}: peak RSS {row['peak_rss_mb']:.0f} MB (env state "
            f"{row['env_state_mb']:.1f} MB), with exp3 {row['peak_rss_with_exp3_mb']:.0f} MB",
            flush=True,
        )

    targets = {}
    if full:
        targets["episode_peak_rss_mb"] = target_record(
            episode["peak_rss_mb"], 200.0, at_least=False
        )
        targets["svt_seconds"] = target_record(svt["seconds"], 60.0, at_least=False)
        print(
            target_line("T=1e6 episode peak RSS (MB)", episode["peak_rss_mb"], 200, at_least=False)
        )
        print(target_line("svt-restart T=1e5 CPU time (s)", svt["seconds"], 60, at_least=False))
    else:
        print("(targets are checked only on the full run: T = 10^6 and T = 10^5)")
    payload = {
        "episode": {"n_experts": n, "horizon": episode_t, **episode},
        "svt": {"n_experts": n, "horizon": svt_t, "window_grid": "dyadic", **svt},
        "bandit": bandit,
        "targets": targets,
    }
    path = write_json("memory", payload, args.out)
    print(f"\nwrote {path}")
    return payload


if __name__ == "__main__":
    main()
