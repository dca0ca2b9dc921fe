"""``DPExperts-Attack-v0``: the adversary is the RL agent, a registered learner is its environment.

Each round the embedded learner has already drawn its hidden action; the agent's action ``a`` is
the loss vector ``(a + 1) / 2`` and the reward the increase of the learner's regret, so the return
is its final regret (docs/attack.md, "The adversary's environment"). Registered by a string entry
point: ``import dp_experts_env`` does not import the learners.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from dp_experts_env._validation import check_choice, check_int
from dp_experts_env.regret import RegretTracker

__all__ = [
    "AttackCore",
    "AttackEnv",
    "AttackVectorEnv",
    "build_learner",
    "losses_to_actions",
    "ATTACK_ID",
]

ATTACK_ID = "DPExperts-Attack-v0"
SEED_HIGH = 2**63 - 1
#: ``reward=`` choices.
REWARDS = ("realized", "expected")
#: ``feedback=`` choices.
FEEDBACKS = ("full", "bandit")
_DEFAULTS = {"learner": "hedge", "n_experts": 2, "horizon": 200}


def losses_to_actions(losses: np.ndarray) -> np.ndarray:
    """The env's action encoding of loss vectors in [0, 1]: ``2 l - 1``."""
    return 2.0 * np.asarray(losses, dtype=np.float64) - 1.0


def build_learner(
    learner: str,
    n_experts: int,
    horizon: int,
    num_envs: int,
    *,
    epsilon: float | None = None,
    learner_params: Mapping[str, Any] | None = None,
    seed: int | Sequence[int] | None = None,
    feedback: str = "full",
) -> Any:
    """Build a registered learner for B runs (the attack's one construction).

    ``feedback="bandit"`` builds a bandit learner with K = N arms. ``epsilon`` goes to private
    learners (None: their default); a non-private learner accepts only None or ``inf``. Every
    family comparison builds its learner here too, so all face the same learner.

    Raises:
        ValueError: unknown learner, a bandit learner, or a finite epsilon for a non-private one.
        TypeError: a knob the learner does not take (the learner's own message).
    """
    import agents  # lazy: the env registry must not import the learners

    if not isinstance(learner, str):
        raise TypeError(f"learner must be a learner name (str), got {type(learner).__name__}")
    check_choice("feedback", feedback, FEEDBACKS)
    entry = agents.spec(learner)
    if entry.feedback not in (feedback, "any"):
        served = sorted(a["name"] for a in agents.available() if a["feedback"] == feedback)
        raise ValueError(
            f"learner {learner!r} needs {entry.feedback} feedback; the attack env with "
            f"feedback={feedback!r} serves {served}"
        )
    params = dict(learner_params or {})
    if feedback == "bandit":
        params["n_arms"] = n_experts
    for key in ("n_experts", "horizon", "num_envs", "seed", "epsilon", "n_arms"):
        if key in (learner_params or {}):
            raise ValueError(f"learner_params must not set {key!r}; it is an env keyword")
    if epsilon is not None:
        if not isinstance(epsilon, (int, float)) or isinstance(epsilon, bool) or not epsilon > 0:
            raise ValueError(f"epsilon must be a number > 0 (inf allowed), got {epsilon!r}")
        if entry.private:
            params["epsilon"] = float(epsilon)
        elif math.isfinite(epsilon):
            raise ValueError(
                f"epsilon applies to private learners only; {learner!r} is not private "
                "(leave epsilon unset or inf)"
            )
    return agents.make(
        learner, n_experts=n_experts, horizon=horizon, num_envs=num_envs, seed=seed, **params
    )


class AttackCore:
    """B runs of the attack game in lockstep (the shared engine of the single and vector envs).

    Args:
        num_runs: B.
        learner: registered learner name.
        n_experts: N.
        horizon: T.
        epsilon: the learner's epsilon (None: its default; private learners only).
        learner_params: the learner's other knobs.
        oblivious: observation limited to the adversary's own past losses.
        n_switches: 0 rewards static regret; S > 0 the S-switch dynamic regret.
        window: rounds of the recent-actions feature (adaptive observation).
        reward: ``"realized"`` or ``"expected"``.
        feedback: ``"full"`` or ``"bandit"``.
    """

    def __init__(
        self,
        num_runs: int,
        learner: str = _DEFAULTS["learner"],
        n_experts: int = _DEFAULTS["n_experts"],
        horizon: int = _DEFAULTS["horizon"],
        *,
        epsilon: float | None = None,
        learner_params: Mapping[str, Any] | None = None,
        oblivious: bool = False,
        n_switches: int = 0,
        window: int = 8,
        reward: str = "realized",
        feedback: str = "full",
    ) -> None:
        self.reward = check_choice("reward", reward, REWARDS)
        self.feedback = check_choice("feedback", feedback, FEEDBACKS)
        self.num_runs = check_int("num_envs", num_runs, minimum=1)
        self.n_experts = check_int("n_experts", n_experts, minimum=2)
        self.horizon = check_int("horizon", horizon, minimum=1)
        self.n_switches = check_int("n_switches", n_switches, minimum=0)
        self.window = check_int("window", window, minimum=1)
        if not isinstance(oblivious, bool):
            raise TypeError(f"oblivious must be True or False, got {oblivious!r}")
        if learner_params is not None and not isinstance(learner_params, Mapping):
            raise TypeError(f"learner_params must be a dict, got {type(learner_params).__name__}")
        self.oblivious = oblivious
        self.epsilon = epsilon
        self.learner_params = dict(learner_params or {})
        self.learner = build_learner(
            learner,
            self.n_experts,
            self.horizon,
            self.num_runs,
            epsilon=epsilon,
            learner_params=self.learner_params,
            seed=0,
            feedback=self.feedback,
        )
        if self.reward == "expected" and not callable(
            getattr(self.learner, "action_distribution", None)
        ):
            raise ValueError(
                f"reward='expected' needs the learner's action_distribution(); {learner!r} has "
                "none (use reward='realized')"
            )
        self.tracker = RegretTracker(
            self.num_runs, self.n_experts, self.n_switches, self.horizon, static_pseudo=False
        )
        n = self.n_experts
        self.obs_size = 1 + (3 * n if oblivious else 6 * n)
        self.t = 0
        self._zeros = np.zeros((self.num_runs, n))
        # Bandit learners read the K identity experts' advice (public, the same every round).
        identity = np.eye(n).reshape(n * n)
        identity.setflags(write=False)
        self._advice = np.broadcast_to(identity, (self.num_runs, n * n))

    def reset(self, seeds: Sequence[int]) -> np.ndarray:
        """Start B episodes; run ``b``'s learner is seeded ``seeds[b]``."""
        b, n = self.num_runs, self.n_experts
        self.learner.reset(seed=[int(s) for s in seeds])
        self.tracker.reset()
        self.t = 0
        self.cum = np.zeros((b, n))
        self.counts = np.zeros((b, n))
        self.recent = np.zeros((self.window, b), dtype=np.int64)  # ring buffer of actions
        self.last_action = np.full(b, -1, dtype=np.int64)
        self.last_loss = np.zeros((b, n))
        self.regret = np.zeros(b)
        self.expected_loss = np.zeros(b)
        first = self._zeros
        if self.feedback == "bandit":
            zero = np.zeros(b)
            first = self._bandit_obs(np.zeros(b, dtype=np.int64), zero)
        self.action = np.asarray(self.learner.act(first), dtype=np.int64)
        return self.observation()

    def _bandit_obs(self, actions: np.ndarray, losses: np.ndarray) -> dict[str, np.ndarray]:
        return {"advice": self._advice, "last_action": actions, "last_loss": losses}

    def step(self, actions: Any) -> tuple[np.ndarray, np.ndarray, dict[str, np.ndarray]]:
        """Play one round with (B, N) actions ``2 l - 1``; returns (obs, reward, info)."""
        if self.t >= self.horizon:
            raise RuntimeError("the episode is over; call reset()")
        l_t = np.asarray(actions, dtype=np.float64).reshape(self.num_runs, self.n_experts)
        if not np.isfinite(l_t).all():
            raise ValueError("action: loss vectors must be finite, found NaN or inf")
        l_t = np.clip((l_t + 1.0) * 0.5, 0.0, 1.0)
        rows = np.arange(self.num_runs)
        a_t = self.action
        charged = l_t[rows, a_t]
        self.tracker.update(l_t, charged)
        regret = self._measure()
        if self.reward == "expected":
            law = np.asarray(self.learner.action_distribution(), dtype=np.float64)
            self.expected_loss += np.einsum("bn,bn->b", law, l_t)
            regret = self.expected_loss - (self.tracker.cumulative_loss - regret)
        reward = regret - self.regret
        self.regret = regret
        self.cum += l_t
        self.counts[rows, a_t] += 1.0
        self.recent[self.t % self.window] = a_t
        self.last_action = a_t
        self.last_loss = l_t
        self.t += 1
        if self.t < self.horizon:
            # The learner reads round t's feedback and picks round t + 1's action (hidden).
            feedback = l_t if self.feedback == "full" else self._bandit_obs(a_t, charged)
            self.action = np.asarray(self.learner.act(feedback), dtype=np.int64)
        info = {
            "round": np.full(self.num_runs, self.t, dtype=np.int64),
            "learner_action": a_t.copy(),
            "learner_loss": charged,
            "losses": l_t,
            "static_regret": self.tracker.static_regret,
            "dynamic_regret": self.tracker.dynamic_regret,
        }
        return self.observation(), reward, info

    def _measure(self) -> np.ndarray:
        if self.n_switches == 0:
            return self.tracker.static_regret
        return self.tracker.dynamic_regret

    def observation(self) -> np.ndarray:
        """(B, obs_size) float32 features (module docstring)."""
        b, n, t = self.num_runs, self.n_experts, self.t
        least = self.cum.min(axis=1, keepdims=True)
        gaps = self.cum - least
        leaders = (gaps <= 1e-9).astype(np.float64)
        parts = [np.full((b, 1), t / self.horizon), leaders, gaps / (1.0 + gaps), self.last_loss]
        if not self.oblivious:
            last = np.zeros((b, n))
            if t > 0:
                last[np.arange(b), self.last_action] = 1.0
            seen = min(t, self.window)
            recent = np.zeros((b, n))
            if seen:
                for k in range(seen):
                    recent[np.arange(b), self.recent[k]] += 1.0
                recent /= seen
            played = self.counts / max(t, 1)
            parts += [last, recent, played]
        return np.concatenate(parts, axis=1).astype(np.float32)


def _spaces(core: AttackCore) -> tuple[spaces.Box, spaces.Box]:
    obs = spaces.Box(0.0, 1.0, (core.obs_size,), dtype=np.float32)
    act = spaces.Box(-1.0, 1.0, (core.n_experts,), dtype=np.float32)
    return obs, act


class AttackEnv(gym.Env):
    """One run of the attack game (``gymnasium.make("DPExperts-Attack-v0", learner=...)``).

    Args:
        **params: the keywords of :class:`AttackCore` but ``num_runs`` (``learner`` default
            ``"hedge"``, N = 2, T = 200).
    """

    metadata: dict[str, Any] = {"render_modes": []}

    def __init__(self, **params: Any) -> None:
        self.core = AttackCore(1, **params)
        self.observation_space, self.action_space = _spaces(self.core)
        self.horizon = self.core.horizon
        self.n_experts = self.core.n_experts

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        """Start an episode; ``seed`` seeds the embedded learner (None: drawn from np_random)."""
        if seed is not None:
            seed = check_int("seed", seed, minimum=0)
        if options:
            raise ValueError(f"options: the attack env takes none, got {options!r}")
        super().reset(seed=seed)
        run_seed = seed if seed is not None else int(self.np_random.integers(SEED_HIGH))
        return self.core.reset([run_seed])[0], {}

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        """Play one round; ``action`` encodes the loss vector as ``2 l - 1``."""
        obs, reward, info = self.core.step(np.asarray(action)[None, :])
        done = self.core.t >= self.horizon
        row = {k: (v[0].item() if v.ndim == 1 else v[0]) for k, v in info.items()}
        return obs[0], float(reward[0]), done, False, row


class AttackVectorEnv(VectorEnv):
    """B runs of the attack game stepped together (native vector env, NEXT_STEP autoreset).

    Args:
        num_envs: B.
        **params: the keywords of :class:`AttackEnv`.
    """

    metadata: dict[str, Any] = {"render_modes": [], "autoreset_mode": AutoresetMode.NEXT_STEP}

    def __init__(self, num_envs: int = 1, **params: Any) -> None:
        self.core = AttackCore(num_envs, **params)
        self.num_envs = self.core.num_runs
        self.single_observation_space, self.single_action_space = _spaces(self.core)
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.action_space = batch_space(self.single_action_space, self.num_envs)
        self.horizon = self.core.horizon
        self.n_experts = self.core.n_experts
        self.render_mode = None
        self._run_rngs: list[np.random.Generator] | None = None
        self._needs_autoreset = False

    def reset(
        self, *, seed: int | Sequence[int] | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        """Start B episodes: an int ``s`` seeds run b with ``s + b``; a list, one per run."""
        if options:
            raise ValueError(f"options: the attack env takes none, got {options!r}")
        b = self.num_envs
        if seed is None:
            if self._run_rngs is None:
                self._run_rngs = [np.random.default_rng() for _ in range(b)]
            seeds = [int(g.integers(SEED_HIGH)) for g in self._run_rngs]
        else:
            if isinstance(seed, (int, np.integer)):
                seeds = [check_int("seed", seed, minimum=0) + i for i in range(b)]
            else:
                seeds = [check_int("seed", s, minimum=0) for s in seed]
                if len(seeds) != b:
                    raise ValueError(f"seed: need {b} seeds (one per run), got {len(seeds)}")
            # Later unseeded resets continue from per-run generators of these seeds.
            self._run_rngs = [np.random.default_rng(s) for s in seeds]
        self._needs_autoreset = False
        return self.core.reset(seeds), {}

    def step(
        self, actions: Any
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """Play one round in every run; (B, N) actions ``2 l - 1``."""
        b = self.num_envs
        if self._needs_autoreset:
            obs, info = self.reset()
            return obs, np.zeros(b), np.zeros(b, dtype=bool), np.zeros(b, dtype=bool), info
        obs, reward, info = self.core.step(actions)
        done = self.core.t >= self.horizon
        self._needs_autoreset = done
        for key in list(info):
            info[f"_{key}"] = np.ones(b, dtype=bool)
        return obs, reward, np.full(b, done), np.zeros(b, dtype=bool), info
