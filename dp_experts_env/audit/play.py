"""Playing one side of a scenario: learners fed observations directly, no env.

A *keyed* scenario is an adaptive adversary: row ``z_t`` is rotated so ``z_t[0]`` lands on the
action of round ``t - 1``. ``block`` plays an oblivious scenario through the learner's block
entry point.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from dp_experts_env.privacy.noise import RecordingBackend, ScaledBackend, get_backend

if TYPE_CHECKING:
    from dp_experts_env.audit.scenarios import Scenario

__all__ = [
    "MAX_RELEASES",
    "Outputs",
    "ScenarioRefused",
    "build_learner",
    "check_advice",
    "noise_params",
    "play_game",
    "play_scenario",
    "relative_actions",
]

#: items, batch means, noisy loss vectors of the next rounds); later ones are not recorded.
MAX_RELEASES = 16


class ScenarioRefused(ValueError):
    """The learner cannot be built with a scenario's parameters (the search skips it)."""


@dataclass(frozen=True)
class Outputs:
    """What one side of a scenario produced.

    Attributes:
        actions: (n, T) actions.
        releases: (n, 2, 1 + D): column 0 the changed round's action, then the exact inputs
            (channel 0) and noisy outputs (channel 1) of the Laplace releases after the changed
            row (None when not recorded).
        claim: the learner's privacy claim.
        seconds: wall time of the play.
    """

    actions: np.ndarray
    releases: np.ndarray | None
    claim: Any
    seconds: float


def build_learner(
    agent: Any, n: int, seed: int, game: dict[str, int], params: Mapping[str, Any]
) -> Any:
    """A learner of ``n`` runs (seeds ``seed, seed + 1, ...``) on a game ``{"n", "t", "k"}``.

    ``agent`` is a registered name (built with ``params``) or a factory ``f(num_envs, seed)``.
    """
    if isinstance(agent, str):
        import agents  # the evaluation layer may import learners; privacy may not

        kw: dict[str, Any] = {
            "n_experts": game["n"],
            "horizon": game["t"],
            "num_envs": n,
            "seed": seed,
        }
        if agents.spec(agent).feedback == "bandit":
            kw["n_arms"] = game["k"]
        return agents.make(agent, **kw, **params)
    if params:
        raise TypeError(
            f"agent parameters {sorted(params)} are only accepted with a registered agent name; "
            "a factory f(num_envs, seed) must bind its own parameters"
        )
    if not callable(agent):
        raise TypeError(
            f"agent must be a registered name or a factory f(num_envs, seed), got "
            f"{type(agent).__name__}"
        )
    built = agent(n, seed)
    if getattr(built, "num_envs", n) != n:
        raise ValueError(f"the factory built {built.num_envs} runs, expected num_envs={n}")
    return built


def _check_actions(actions: Any, n: int, k: int) -> np.ndarray:
    a = np.asarray(actions, dtype=np.int64).reshape(-1)
    if a.shape != (n,) or a.min() < 0 or a.max() >= k:
        raise ValueError(f"agent returned actions outside [0, {k}) or of the wrong shape {a.shape}")
    return a


def _row(z: np.ndarray, key: np.ndarray | None, n: int) -> np.ndarray:
    """(n, W) losses of a round: ``z`` for every run, or rotated onto each run's key."""
    if key is None:
        return np.broadcast_to(z, (n, z.shape[0]))
    width = z.shape[0]
    return z[(np.arange(width)[None, :] - key[:, None]) % width]


def play_game(
    agent: Any,
    losses: np.ndarray,
    advice: np.ndarray | None,
    n: int,
    *,
    keyed: bool,
    recorder: RecordingBackend | None,
    changed: int,
) -> tuple[np.ndarray, np.ndarray | None]:
    """Feed the agent the game directly; return its (n, T) actions and recorded releases."""
    horizon, width = losses.shape
    dtype = np.int16 if width < 2**15 else np.int64
    actions = np.empty((n, horizon), dtype=dtype)
    if recorder is not None:
        recorder.enabled = False  # releases before the change have the same law on both sides
    prev = np.zeros(n, dtype=np.int64)
    bandit = agent.feedback == "bandit"
    last_loss = np.zeros(n)
    obs: Any = np.zeros((n, width))
    for t in range(horizon):
        if t == changed + 1 and recorder is not None:
            recorder.enabled = True
        if bandit:
            adv = advice if advice.ndim == 2 else advice[t]
            obs = {
                "advice": np.broadcast_to(adv, (n, *adv.shape)),
                "last_action": prev,
                "last_loss": last_loss,
            }
        a = _check_actions(agent.act(obs), n, width)
        actions[:, t] = a
        # Keyed rows are rotated onto the action of round t - 1 (the adversary never sees a_t).
        row = _row(losses[t], prev if keyed else None, n)
        if bandit:
            last_loss = row[np.arange(n), a]
        else:
            obs = np.array(row)
        prev = a
    releases = None
    if recorder is not None:
        # Column 0: the changed round's action (a bandit release reads the played arm's loss).
        key = np.repeat(actions[:, changed, None, None].astype(np.float64), 2, axis=1)
        # Calls on a subset of the runs (a learner updating only some runs) have no per-run row.
        calls = [c for c in recorder.releases if c[0].shape[:1] == (n,)]
        releases = _stacked_releases(key, calls, n) if calls else key
    return actions, releases


def _stacked_releases(key: np.ndarray, calls: list[Any], n: int) -> np.ndarray:
    """(n, 2, 1 + D): ``key``, then each call's exact (channel 0) and noisy (channel 1) values.

    Written into one array (the releases of 20,000 runs reach tens of MB: no intermediate
    copies); the values of concatenating the calls and stacking the channels.
    """
    pairs = [(c[0].reshape(n, -1), c[1].reshape(n, -1)) for c in calls]
    if any(e.shape != v.shape for e, v in pairs):  # channels of unequal widths: numpy's error
        exact = np.concatenate([e for e, _ in pairs], axis=1)
        noisy = np.concatenate([v for _, v in pairs], axis=1)
        return np.concatenate([key, np.stack([exact, noisy], axis=1)], axis=2)
    out = np.empty((n, 2, 1 + sum(e.shape[1] for e, _ in pairs)), dtype=np.float64)
    out[:, :, :1] = key
    at = 1
    for e, v in pairs:
        out[:, 0, at : at + e.shape[1]] = e
        out[:, 1, at : at + e.shape[1]] = v
        at += e.shape[1]
    return out


def _block_played(agent: Any) -> bool:
    """Whether users' runs call ``agent``'s block method (a hook on the object can refuse it)."""
    from dp_experts_env.evaluation.paths import block_method

    return block_method(agent) is not None


def _play_blocks(agent: Any, losses: np.ndarray, advice: np.ndarray | None, n: int) -> np.ndarray:
    """The game of :func:`play_game` (oblivious) through the learner's block entry point.

    In the blocks of :data:`~dp_experts_env.evaluation.paths.BLOCKS`; returns the (n, T) actions.
    """
    from dp_experts_env.block_entry import block_entry
    from dp_experts_env.evaluation.paths import BLOCKS

    horizon, width = losses.shape
    actions = np.empty((n, horizon), dtype=np.int16 if width < 2**15 else np.int64)
    bandit = agent.feedback == "bandit"
    rows = np.zeros(n, dtype=np.int64)
    prev, last_loss = np.zeros(n, dtype=np.int64), np.zeros(n)
    t, i = 0, 0
    while t < horizon:
        k = min(BLOCKS[i % len(BLOCKS)], horizon - t)
        i += 1
        if bandit:
            adv = advice if advice.ndim == 2 else advice[t]
            first = {
                "advice": np.broadcast_to(adv, (n, *adv.shape)),
                "last_action": prev,
                "last_loss": last_loss,
            }
            block_advice = None
            if advice.ndim == 3:
                block_advice = np.broadcast_to(advice[t : t + k, None], (k, n, *advice.shape[1:]))
            play = block_entry(agent, "play_bandit_block")
            chosen = play(first, block_advice, losses[t : t + k, None], rows)
        else:
            obs = np.empty((k, n, width))
            obs[0] = losses[t - 1] if t else 0.0
            obs[1:] = losses[t : t + k - 1, None, :]
            chosen = block_entry(agent, "play_block")(obs)
        chosen = np.asarray(chosen)
        for r in range(k):
            actions[:, t + r] = _check_actions(chosen[r], n, width)
        prev = chosen[-1].astype(np.int64)
        last_loss = losses[t + k - 1][prev]
        t += k
    return actions


def relative_actions(actions: np.ndarray, k: int) -> np.ndarray:
    """``(J_0, J_1 - J_0, J_2 - J_1, ...) mod k``: a keyed scenario's actions in its own frame."""
    rel = actions.astype(np.int64)
    rel[:, 1:] = (rel[:, 1:] - rel[:, :-1]) % k
    return rel.astype(actions.dtype)


def check_advice(advice: Any, horizon: int, width: int) -> np.ndarray | None:
    """Validated (N, K) or (T, N, K) advice of a bandit scenario (None stays None)."""
    if advice is None:
        return None
    adv = np.asarray(advice, dtype=np.float64)
    if (
        adv.ndim not in (2, 3)
        or adv.shape[-1] != width
        or (adv.ndim == 3 and adv.shape[0] != horizon)
    ):
        raise ValueError(
            f"advice must have shape (N, K) or (T, N, K) with K = {width} arms and "
            f"T = {horizon}, got {adv.shape}"
        )
    if np.any(adv < 0) or not np.allclose(adv.sum(axis=-1), 1.0):
        raise ValueError("advice rows must be probability distributions over the arms")
    return adv


def noise_params(
    agent: Any, params: Mapping[str, Any], multiplier: float, record: bool
) -> tuple[dict[str, Any], RecordingBackend | None]:
    """Learner parameters with the (weakened, recorded) noise backend in place."""
    out = dict(params)
    if multiplier == 1.0 and not record:
        return out, None
    if not isinstance(agent, str):
        raise TypeError("multiplier and release recording need a registered agent name")
    backend: Any = get_backend(out.pop("noise", "fast"))
    if multiplier != 1.0:
        backend = ScaledBackend(backend, multiplier)
    recorder = RecordingBackend(backend, max_calls=MAX_RELEASES) if record else None
    out["noise"] = recorder if recorder is not None else backend
    return out, recorder


def play_scenario(
    agent: str | Callable[[int, int], Any],
    scenario: Scenario,
    *,
    side: int,
    n_runs: int,
    seed: int,
    multiplier: float = 1.0,
    record: bool = False,
    refusable: bool = False,
    block: bool = False,
) -> Outputs:
    """Play one side (0: ``losses``, 1: ``neighbor``) of a scenario with ``n_runs`` runs.

    Run ``b`` uses agent seed ``seed + b``; keyed scenarios return :func:`relative_actions`.
    ``multiplier`` scales the noise (:class:`ScaledBackend`); ``record`` keeps the Laplace
    releases after the changed row; ``block`` plays an oblivious scenario through the block entry
    point (no releases); with ``refusable`` an unbuildable learner raises :class:`ScenarioRefused`.
    """
    losses = scenario.losses if side == 0 else scenario.neighbor
    horizon, width = losses.shape
    advice = check_advice(scenario.advice, horizon, width)
    params, recorder = noise_params(agent, scenario.params, multiplier, record)
    n_experts = advice.shape[-2] if advice is not None else width
    began = time.perf_counter()
    try:
        game = {"n": n_experts, "t": horizon, "k": width}
        built = build_learner(agent, n_runs, seed, game, params)
    except (ValueError, TypeError) as err:
        if not refusable:
            raise
        raise ScenarioRefused(f"{scenario.label}: {err}") from err
    if built.feedback == "bandit":
        if advice is None:
            advice = np.eye(width)
    else:
        if scenario.advice is not None:
            raise ValueError("advice is only for bandit agents")
        if built.n_experts != width:
            raise ValueError(f"agent has {built.n_experts} experts but losses have {width}")
    if block and (scenario.keyed or record):
        raise ValueError("the block path plays oblivious scenarios, without recording")
    if block and _block_played(built):
        actions, releases = _play_blocks(built, losses, advice, n_runs), None
    else:  # also ``block`` where users' runs play act (block_entry refuses this object's)
        actions, releases = play_game(
            built,
            losses,
            advice,
            n_runs,
            keyed=scenario.keyed,
            recorder=recorder,
            changed=scenario.changed_round,
        )
    if scenario.keyed:
        actions = relative_actions(actions, width)
    return Outputs(actions, releases, built.privacy, time.perf_counter() - began)
