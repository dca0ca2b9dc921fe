"""Online linear optimisation on a convex body: ``DPExperts-OCO-v0`` (single and vector env).

The setting of Agarwal, Kale, Singh & Thakurta, "Improved Differentially Private and Lazy Online
Convex Optimization" (§2): play ``x_t`` in a box or ball, pay ``<g_t, x_t>``, see ``g_t``
(docs/environments.md, "DPExperts-OCO-v0").
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from gymnasium.utils import seeding
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from dp_experts_env._validation import check_int
from dp_experts_env.adversaries.oco import OCOAdversary, OCOParams, dual_norm
from dp_experts_env.batch_rng import run_seeds
from dp_experts_env.envs.factory import ID_KIND, check_id_kind
from dp_experts_env.fixed_order import accumulate, dot

__all__ = ["OCOCore", "OCOEnv", "OCOVectorEnv"]

SEED_HIGH = 2**63 - 1
_DYN_WORK = 1 << 16  # (S + 1) d 2^d per run and round: above it dynamic regret is left out
_ACTION_SLACK = 1e-6  # relative: float32 actions round R by up to 6e-8


class OCOCore:
    """B runs of one OCO game stepped in lockstep (batch-first, no Python loop over runs).

    Block steps (oblivious families only) are K :meth:`step` calls bit for bit, with ``info``
    built for the block's last round only.
    """

    feedback = "oco"

    def __init__(self, adversary: OCOAdversary, n_switches: int = 0) -> None:
        self.adversary = adversary
        self.n_switches = int(n_switches)
        self.num_runs = adversary.num_runs
        self.dim = adversary.dim
        self.horizon = adversary.horizon
        self.body = adversary.body
        self.radius = adversary.radius
        self.grad_bound = adversary.grad_bound
        d, s = self.dim, self.n_switches
        # S-switch dynamic regret is exact on a box (and on a 1-D ball, an interval): see below.
        self.exact_dynamic = (self.body == "box" or d == 1) and (s + 1) * d * 2**d <= _DYN_WORK
        if self.exact_dynamic:
            corners = np.array(np.meshgrid(*[[-1.0, 1.0]] * d, indexing="ij"))
            self._signs = corners.reshape(d, -1).T  # (2^d, d): the box's dual-norm maximisers
        self.t = 0
        self._pending: np.ndarray | None = None

    def reset(self, seeds: Sequence[int], neighbor: tuple[int, np.ndarray] | None) -> np.ndarray:
        """Start B runs (one seed each); returns the all-zero first observations (B, d)."""
        b, d = self.num_runs, self.dim
        self.adversary.reset(seeds, neighbor)
        self.t = 0
        self._grad_sum = np.zeros((b, d))
        self._mean_sum = np.zeros((b, d))
        self._cum_loss = np.zeros(b)
        self._cum_mean_loss = np.zeros(b)
        self._best_each = np.zeros(b)
        if self.exact_dynamic:
            # M[j, sigma] = max over b <= t of F_j(b) - <sigma, S_b>, with F_j(0) = 0 at S_0 = 0.
            self._dyn_m = np.zeros((b, self.n_switches + 1, len(self._signs)))
        self._pending = None
        self._current = self.adversary.gradient(1)
        return np.zeros((b, d))

    def check_actions(self, actions: Any) -> np.ndarray:
        """(B, d) float64 points of the body from the caller's actions (raises when outside)."""
        b, d = self.num_runs, self.dim
        try:
            x = np.asarray(actions, dtype=np.float64)
        except (TypeError, ValueError) as err:
            raise ValueError(
                f"action must be a real vector of length {d}, got {actions!r}"
            ) from err
        if x.size != b * d:
            shape = f"({d},)" if b == 1 else f"({b}, {d})"
            raise ValueError(f"action must have shape {shape}, got shape {np.shape(actions)}")
        return self._to_body(x.reshape(b, d))

    def _to_body(self, x: np.ndarray) -> np.ndarray:
        """(rows, d) float64 points: refused outside the box, projected onto the ball."""
        r = self.radius
        if not np.all(np.isfinite(x)):
            raise ValueError("action must be finite")
        worst = float(np.abs(x).max())
        if worst > r * (1 + _ACTION_SLACK):
            raise ValueError(f"action coordinates must lie in [-{r:g}, {r:g}], got {worst:.6g}")
        x = np.clip(x, -r, r)  # only removes the rounding slack allowed above
        if self.body == "ball":
            norm = np.sqrt(np.einsum("bi,bi->b", x, x))[:, None]
            x = np.where(norm > r, x * (r / np.where(norm > 0, norm, 1.0)), x)
        return x

    def step(self, actions: Any) -> tuple[np.ndarray, np.ndarray, dict[str, np.ndarray]]:
        """Charge round t, then fetch round t + 1; returns (obs g_t, losses, info)."""
        if self.t >= self.horizon:
            raise RuntimeError("the episode is over: call reset")
        if self._pending is not None:
            raise RuntimeError("a block is pending: play it with step_block() first")
        x = self.check_actions(actions)
        adv, r = self.adversary, self.radius
        t = self.t + 1
        g = self._current
        loss = np.einsum("bi,bi->b", g, x)
        self._cum_loss += loss
        self._grad_sum += g
        self._best_each += r * dual_norm(g, self.body)
        info: dict[str, np.ndarray] = {
            "round": np.full(self.num_runs, t, dtype=np.int64),
            "loss": loss,
            "cumulative_loss": self._cum_loss.copy(),
            "static_regret": self._cum_loss + r * dual_norm(self._grad_sum, self.body),
            "per_round_best_regret": self._cum_loss + self._best_each,
        }
        if self.exact_dynamic:
            info["dynamic_regret"] = self._cum_loss + r * self._best_switching()
        if adv.knows_means:
            m = adv.means(t)
            self._mean_sum += m
            self._cum_mean_loss += np.einsum("bi,bi->b", m, x)
            best_fixed = r * dual_norm(self._mean_sum, self.body)
            info["static_pseudo_regret"] = self._cum_mean_loss + best_fixed
        if adv.has_segments:
            info["segment"] = np.full(self.num_runs, adv.segment_of(t), dtype=np.int64)
        adv.record(x)
        self.t = t
        if t < self.horizon:
            self._current = adv.gradient(t + 1)
        return g.copy(), loss, info

    @property
    def supports_blocks(self) -> bool:
        """True when the gradients ignore the plays, so K rounds can be fetched before playing."""
        return bool(self.adversary.oblivious)

    def next_block(self, k: int) -> np.ndarray:
        """The gradients of the next ``min(k, T - t)`` rounds, (K, B, d), for :meth:`step_block`.

        Raises:
            ValueError: the family reacts to the plays (``adaptive``), or ``k`` < 1.
            RuntimeError: a block is pending, or the episode is over.
        """
        if self.t >= self.horizon:
            raise RuntimeError("the episode is over: call reset")
        if not self.supports_blocks:
            raise ValueError(
                f"the {self.adversary.family!r} family reacts to the points played: its rounds "
                "cannot be fetched ahead of the actions (play it with step())"
            )
        if self._pending is not None:
            raise RuntimeError("a block is pending: play it with step_block() first")
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
            raise ValueError(f"k (rounds per block) must be a positive integer, got {k!r}")
        k = min(int(k), self.horizon - self.t)
        grads = np.empty((k, self.num_runs, self.dim))
        grads[0] = self._current
        rest = self.adversary.next_rounds(k - 1) if k > 1 else None  # None: no block form
        if rest is not None:
            grads[1:] = rest
        for i in range(1 if rest is None else k, k):
            grads[i] = self.adversary.gradient(self.t + 1 + i)
        self._pending = grads
        view = grads.view()
        view.flags.writeable = False
        return view

    def step_block(self, actions: Any) -> tuple[np.ndarray, np.ndarray, dict[str, np.ndarray]]:
        """Play the pending block with (K, B, d) points: K :meth:`step` calls, bit for bit.

        Returns:
            (the last round's gradient (B, d), losses (K, B), the last round's ``info``).
        """
        grads = self._pending
        if grads is None:
            raise RuntimeError("no block is pending: call next_block(k) first")
        k, b, d = grads.shape
        try:
            x = np.asarray(actions, dtype=np.float64)
        except (TypeError, ValueError) as err:
            raise ValueError(f"actions must be real points of shape ({k}, {b}, {d})") from err
        if x.size != k * b * d:
            raise ValueError(
                f"actions must have shape ({k}, {b}, {d}) (one row per round of the block), got "
                f"{np.shape(actions)}"
            )
        # Rows are independent: the same floats as check_actions round by round.
        points = self._to_body(x.reshape(k * b, d))
        adv, r, body = self.adversary, self.radius, self.body
        flat = grads.reshape(k * b, d)
        loss = np.einsum("bi,bi->b", flat, points).reshape(k, b)
        accumulate(self._cum_loss, loss)
        sums = accumulate(self._grad_sum, grads)
        accumulate(self._best_each, (r * dual_norm(flat, body)).reshape(k, b))
        if self.exact_dynamic:
            for i in range(k):
                best = self._best_switching(sums[i])
        start = self.t
        self.t = start + k
        self._pending = None
        info: dict[str, np.ndarray] = {
            "round": np.full(b, self.t, dtype=np.int64),
            "loss": loss[-1].copy(),
            "cumulative_loss": self._cum_loss.copy(),
            "static_regret": self._cum_loss + r * dual_norm(self._grad_sum, body),
            "per_round_best_regret": self._cum_loss + self._best_each,
        }
        if self.exact_dynamic:
            info["dynamic_regret"] = self._cum_loss + r * best
        if adv.knows_means:
            means = np.stack([adv.means(start + 1 + i) for i in range(k)])
            accumulate(self._mean_sum, means)
            mean_loss = np.einsum("bi,bi->b", means.reshape(k * b, d), points).reshape(k, b)
            accumulate(self._cum_mean_loss, mean_loss)
            best_fixed = r * dual_norm(self._mean_sum, body)
            info["static_pseudo_regret"] = self._cum_mean_loss + best_fixed
        if adv.has_segments:
            info["segment"] = np.full(b, adv.segment_of(self.t), dtype=np.int64)
        for row in points.reshape(k, b, d):
            adv.record(row)
        if self.t < self.horizon:
            self._current = adv.gradient(self.t + 1)
        return grads[-1].copy(), loss, info

    def _best_switching(self, grad_sum: np.ndarray | None = None) -> np.ndarray:
        """``F_S(t)``, the value of the best comparator with at most S switches, divided by -R.

        ``||v||_1 = max_sigma <sigma, v>`` over the 2^d sign vectors, so
        ``F_j(t) = max_sigma [<sigma, S_t> + max_{b<t} (F_{j-1}(b) - <sigma, S_b>)]``: an exact
        O(S d 2^d) recursion per round.
        """
        grad_sum = self._grad_sum if grad_sum is None else grad_sum
        # (B, 2^d). Not ``S @ signs.T``: BLAS sums in a CPU-dependent order (fixed_order.py).
        proj = dot(grad_sum[:, None, :], self._signs)
        m = self._dyn_m
        f = np.empty(m.shape[:2])
        f[:, 0] = proj.max(axis=1)
        if self.n_switches:
            f[:, 1:] = (proj[:, None, :] + m[:, :-1, :]).max(axis=2)
        np.maximum.accumulate(f, axis=1, out=f)  # at most j switches
        np.maximum(m, f[:, :, None] - proj[:, None, :], out=m)
        return f[:, -1]


def _parse_neighbor(options: Any, dim: int) -> tuple[int, np.ndarray] | None:
    if options is None:
        return None
    if not isinstance(options, dict):
        raise TypeError(f"options must be a dict or None, got {type(options).__name__}")
    unknown = set(options) - {"neighbor"}
    if unknown:
        raise ValueError(f"unknown reset options {sorted(unknown)}; allowed: ['neighbor']")
    nb = options.get("neighbor")
    if nb is None:
        return None
    if not isinstance(nb, dict) or set(nb) != {"round", "loss"}:
        raise ValueError('options["neighbor"] must be {"round": t, "loss": gradient}')
    return nb["round"], np.asarray(nb["loss"], dtype=np.float64).reshape(-1)


# The env's own keywords besides OCOParams' fields (aliases of ``dim`` and ``gradients``).
_ENV_KEYWORDS = ("n_switches", "n_experts", "losses", "kind", "render_mode")


class _OCOSetup:
    """Constructor shared by the single and the vector env."""

    kind = "oco"
    feedback = "oco"
    n_arms = None

    def _build(self, num_runs: int, params: dict[str, Any]) -> None:
        kind = params.pop("kind", "oco")
        check_id_kind(kind, params.pop(ID_KIND, None))
        if kind != "oco":
            raise ValueError(f"kind must be 'oco' for the OCO env, got {kind!r}")
        losses, gradients = params.pop("losses", None), params.pop("gradients", None)
        if losses is not None and gradients is not None:
            raise ValueError("pass the replay matrix once: losses= or gradients=, not both")
        gradients = gradients if gradients is not None else losses
        family = params.pop("family", None)  # None: OCOParams picks replay or the default
        n_switches = params.pop("n_switches", None)
        alias = params.pop("n_experts", None)  # the shared size keyword: here the dimension d
        if alias is not None:
            if params.get("dim") is not None and params["dim"] != alias:
                raise ValueError(f"n_experts={alias} contradicts dim={params['dim']} (both are d)")
            params["dim"] = alias
        knobs = {**params, "family": family, "gradients": gradients}
        adversary = OCOAdversary(
            params=OCOParams.from_keywords(knobs, "DPExperts-OCO-v0", _ENV_KEYWORDS),
            num_runs=num_runs,
        )
        self.params = adversary.params
        if n_switches is None:
            n_switches = adversary.n_shifts
        self.n_switches = check_int("n_switches", n_switches, minimum=0)
        self.core = OCOCore(adversary, self.n_switches)
        self.family = adversary.family
        self.dim = self.n_experts = adversary.dim
        self.horizon = adversary.horizon
        self.body, self.radius, self.grad_bound = (
            adversary.body,
            adversary.radius,
            adversary.grad_bound,
        )
        r, big_g, d = self.radius, self.grad_bound, self.dim
        # float32 actions (Stable-Baselines3's recommendation); the env computes in float64.
        bound = np.full(d, r, dtype=np.float32)
        self._single_action = spaces.Box(-bound, bound, (d,), np.float32)
        self._single_obs = spaces.Box(-big_g, big_g, (d,), np.float64)


class OCOEnv(_OCOSetup, gym.Env):
    """Online linear optimisation over a box or a ball (``DPExperts-OCO-v0``).

    Keywords: the fields of :class:`~dp_experts_env.adversaries.oco.OCOParams` (the loss model's
    knobs and defaults), plus ``n_experts`` (alias of ``dim``), ``losses`` (alias of
    ``gradients``), ``n_switches`` (S of ``dynamic_regret``; default: the model's change points)
    and ``render_mode`` (``"ansi"``, ``"rgb_array"`` or None).

    Attributes: ``dim`` (also ``n_experts``), ``horizon``, ``body``, ``radius``, ``grad_bound``,
    ``family``, ``feedback = "oco"`` and ``params``, the resolved
    :class:`~dp_experts_env.adversaries.oco.OCOParams` played.
    """

    metadata: dict[str, Any] = {"render_modes": ["ansi", "rgb_array"], "render_fps": 30}

    def __init__(self, render_mode: str | None = None, **params: Any) -> None:
        if render_mode not in (None, "ansi", "rgb_array"):
            raise ValueError(
                f"render_mode must be None, 'ansi' or 'rgb_array', got {render_mode!r}"
            )
        self._build(1, dict(params))
        self.render_mode = render_mode
        self.action_space = self._single_action
        self.observation_space = self._single_obs
        self._last_info: dict[str, Any] | None = None
        self._last_point = np.zeros(self.dim)

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        """Start an episode (seed: the adversary's run seed; options: the neighbour)."""
        if seed is not None:
            seed = check_int("seed", seed, minimum=0)
        neighbor = _parse_neighbor(options, self.dim)
        super().reset(seed=seed)
        run_seed = seed if seed is not None else int(self.np_random.integers(SEED_HIGH))
        obs = self.core.reset([run_seed], neighbor)
        self._last_info = None
        return obs[0], {}

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        """Play one round: charge ``<g_t, action>`` and reveal ``g_t``."""
        obs, loss, info = self.core.step(action)
        out = {k: (int(v[0]) if v.dtype.kind == "i" else float(v[0])) for k, v in info.items()}
        self._last_info = out
        if self.render_mode is not None:
            self._last_point = self.core.check_actions(action)[0]
        return obs[0], 0.0 - float(loss[0]), self.core.t >= self.horizon, False, out

    def render(self) -> str | np.ndarray | None:
        """The last round as text (``"ansi"``) or a (64, 16 d, 3) uint8 frame (``"rgb_array"``)."""
        if self.render_mode == "rgb_array":
            frame = np.full((64, 16 * self.dim, 3), 255, dtype=np.uint8)
            heights = np.rint((self._last_point + self.radius) / (2 * self.radius) * 63)
            for i, h in enumerate(heights.astype(int)):
                frame[63 - h :, 16 * i + 2 : 16 * i + 14] = (40, 90, 200)
            return frame
        if self.render_mode != "ansi":
            return None
        if self._last_info is None:
            return f"OCO {self.body} d={self.dim} R={self.radius:g}: round 0/{self.horizon}\n"
        info = self._last_info
        return (
            f"round {info['round']}/{self.horizon}  loss {info['loss']:+.4f}  "
            f"static regret {info['static_regret']:.4f}\n"
        )


class OCOVectorEnv(_OCOSetup, VectorEnv):
    """Native vector version of :class:`OCOEnv`: B runs in lockstep, run b == single seed s+b.

    Batched actions and observations (B, d); ``info`` values (B,) arrays with Gymnasium's ``_key``
    masks; autoreset ``NEXT_STEP``.
    """

    metadata: dict[str, Any] = {"render_modes": [], "autoreset_mode": AutoresetMode.NEXT_STEP}

    def __init__(self, num_envs: int = 1, render_mode: str | None = None, **params: Any) -> None:
        self.num_envs = check_int("num_envs", num_envs, minimum=1)
        if render_mode is not None:
            raise ValueError("the OCO vector env does not render (render_mode must be None)")
        self._build(self.num_envs, dict(params))
        self.single_action_space = self._single_action
        self.single_observation_space = self._single_obs
        self.action_space = batch_space(self._single_action, self.num_envs)
        self.observation_space = batch_space(self._single_obs, self.num_envs)
        self.render_mode = None
        self._run_rngs: list[np.random.Generator] | None = None
        self._needs_autoreset = False

    def reset(
        self, *, seed: int | Sequence[int] | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        """Start B episodes (an int s seeds runs s..s+B-1; a sequence gives one seed per run)."""
        neighbor = _parse_neighbor(options, self.dim)
        if seed is None:
            if self._run_rngs is None:
                self._run_rngs = [seeding.np_random(s)[0] for s in run_seeds(None, self.num_envs)]
            seeds = [int(g.integers(SEED_HIGH)) for g in self._run_rngs]
        else:
            seeds = run_seeds(seed, self.num_envs)
            self._run_rngs = [seeding.np_random(s)[0] for s in seeds]
            self._np_random_seed = seeds[0]
        self._np_random = self._run_rngs[0]
        self._needs_autoreset = False
        return self.core.reset(seeds, neighbor), {}

    def step(
        self, actions: Any
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict[str, np.ndarray]]:
        """Play one round in every run."""
        b = self.num_envs
        if self._needs_autoreset:
            obs, info = self.reset()
            return obs, np.zeros(b), np.zeros(b, dtype=bool), np.zeros(b, dtype=bool), info
        obs, loss, info = self.core.step(actions)
        done = self.core.t >= self.horizon
        self._needs_autoreset = done
        for key in list(info):
            info[f"_{key}"] = np.ones(b, dtype=bool)
        return obs, 0.0 - loss, np.full(b, done), np.zeros(b, dtype=bool), info

    def next_block(self, k: int) -> np.ndarray:
        """The gradients of the next ``min(k, T - t)`` rounds, (K, B, d), for :meth:`step_block`."""
        if self._needs_autoreset:
            raise RuntimeError("the episode is over: call reset() before next_block()")
        return self.core.next_block(k)

    def step_block(
        self, actions: Any
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict[str, np.ndarray]]:
        """Play the pending block with (K, B, d) points.

        Returns:
            (the last round's gradients, rewards (K, B), terminated (B,), truncated (B,), the
            last round's info).
        """
        obs, loss, info = self.core.step_block(actions)
        done = self.core.t >= self.horizon
        self._needs_autoreset = done
        b = self.num_envs
        for key in list(info):
            info[f"_{key}"] = np.ones(b, dtype=bool)
        return obs, 0.0 - loss, np.full(b, done), np.zeros(b, dtype=bool), info
