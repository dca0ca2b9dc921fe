"""Does the PPO baseline learn? Pseudo-regret on held-out episodes against untrained and raw PPO.

For each env (DPExperts-Shift-v0 and DPExperts-Stochastic-v0, N = 10, T = 1000, defaults
otherwise) it trains the suite's PPO baseline (``agents.make("ppo")``: loss-statistics features,
per-expert shared scorer) and SB3's default ``MlpPolicy`` PPO on the raw observation, each for
the same number of steps on training seeds, then plays 32 held-out episodes (env seeds 1..32,
the same for every learner) with: the trained baseline, the same architecture untrained (a
single PPO update on one 2048-step rollout), raw PPO, uniform, Hedge, Fixed-Share and
follow-the-leader. It reports the mean final pseudo-regret with a 95% bootstrap interval, the
IQM, and the probability that the trained baseline has lower regret than each other learner on
an episode (rliable's definitions).

"Learns" means: the trained baseline's interval lies below both the untrained policy's and
uniform play's (``learns`` in the JSON). Not a test (it takes a few minutes); the suite's tests
check a weaker, faster statement (tests/test_rl_baseline.py).
"""

from __future__ import annotations

import time

import gymnasium as gym
import numpy as np
import torch
from _common import parse_args, table, write_json
from stable_baselines3 import PPO

import agents
import dp_experts_env  # noqa: F401 - registers the ids
from dp_experts_env.evaluation.stats import bootstrap_ci, iqm, probability_of_improvement
from dp_experts_env.sb3 import make_sb3_vec_env

EPISODES = 32


class _RawPolicy:
    """SB3 MlpPolicy PPO played through the agent interface (act on raw loss vectors)."""

    def __init__(self, model: PPO) -> None:
        self.model = model

    def reset(self) -> None:
        """Nothing to forget: the policy sees only the last loss vector."""

    def act(self, obs: np.ndarray) -> np.ndarray:
        return self.model.predict(obs, deterministic=False)[0]


def _final_pseudo_regret(env_id: str, horizon: int, player) -> np.ndarray:
    venv = gym.make_vec(
        env_id, num_envs=EPISODES, vectorization_mode="vector_entry_point", horizon=horizon
    )
    obs, _ = venv.reset(seed=1)  # held-out: training seeds come from SeedSequence([s, 0x5EED])
    player.reset()
    for _ in range(horizon):
        obs, _, _, _, info = venv.step(player.act(obs))
    # Per-round-best pseudo-regret: on these envs one expert is best throughout each segment, so
    # it is the pseudo-regret against the change-point comparator (static on Stochastic).
    return np.asarray(info["per_round_best_pseudo_regret"], dtype=float)


def measure(env_id: str, horizon: int, timesteps: int) -> list[dict]:
    kwargs = {"env_id": env_id, "env_kwargs": {"horizon": horizon}, "num_envs": EPISODES}
    started = time.perf_counter()
    players = {"ppo": agents.make("ppo", n_experts=10, horizon=horizon, timesteps=timesteps,
                                  seed=0, **kwargs)}  # fmt: skip
    train_seconds = time.perf_counter() - started
    players["ppo-untrained"] = agents.make(
        "ppo", n_experts=10, horizon=horizon, timesteps=1, seed=0, **kwargs
    )
    raw_env = make_sb3_vec_env(env_id, num_envs=16, horizon=horizon)
    raw_env.seed(int(np.random.SeedSequence([0, 0x5EED]).generate_state(1)[0]))
    raw = PPO("MlpPolicy", raw_env, n_steps=128, batch_size=256, seed=0, device="cpu")
    players["ppo-raw"] = _RawPolicy(raw.learn(timesteps))
    for name in ("uniform", "hedge", "fixed-share", "follow-the-leader"):
        players[name] = agents.make(name, n_experts=10, horizon=horizon, num_envs=EPISODES, seed=0)
    regrets = {name: _final_pseudo_regret(env_id, horizon, p) for name, p in players.items()}
    rows = []
    for name, values in regrets.items():
        est, lo, hi = bootstrap_ci(values)
        rows.append(
            {
                "env": env_id,
                "learner": name,
                "pseudo_regret": est,
                "ci_low": lo,
                "ci_high": hi,
                "iqm": iqm(values),
                # P(a trained-baseline episode has lower regret than this learner's).
                "p_ppo_better": probability_of_improvement([-regrets["ppo"]], [-values]),
            }
        )
    ppo = next(r for r in rows if r["learner"] == "ppo")
    for row in rows:
        row["train_seconds"] = train_seconds if row["learner"] == "ppo" else None
    ppo["learns"] = all(
        ppo["ci_high"] < r["ci_low"] for r in rows if r["learner"] in ("ppo-untrained", "uniform")
    )
    return rows


def main(argv: list[str] | None = None) -> dict:
    args = parse_args(__doc__.splitlines()[0], argv)
    torch.set_num_threads(1)
    horizon, timesteps = (1000, 100_000)
    if args.quick:
        timesteps = 30_000
    if args.smoke:
        horizon, timesteps = 50, 512
    rows = []
    for env_id in ("DPExperts-Shift-v0", "DPExperts-Stochastic-v0"):
        rows += measure(env_id, horizon, timesteps)
        columns = ["learner", "pseudo_regret", "ci_low", "ci_high", "iqm", "p_ppo_better"]
        print(table([r for r in rows if r["env"] == env_id], columns))
        print()
    learns = {r["env"]: r["learns"] for r in rows if r["learner"] == "ppo"}
    print("trained PPO baseline below untrained and uniform (95% CIs disjoint):", learns)
    payload = {"horizon": horizon, "timesteps": timesteps, "episodes": EPISODES, "rows": rows,
               "learns": learns}  # fmt: skip
    print(f"written: {write_json('rl_baseline', payload, args.out)}")
    return payload


if __name__ == "__main__":
    main()
