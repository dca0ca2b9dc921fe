"""Path equivalence: a learner's block entry point against round-by-round ``act``.

:func:`compare_paths` plays one seeded game both ways with twin learners and requires, after
every block, equal actions, state, random stream and drawn Laplace noise, naming the first
round that differs (docs/privacy.md, "Path equivalence: the code users run").
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from dp_experts_env._jit import jit_enabled
from dp_experts_env.batch_rng import BatchRNG
from dp_experts_env.block_entry import block_entry, block_overrides
from dp_experts_env.samplers import laplace_tap

__all__ = [
    "BLOCKS",
    "PathReport",
    "HOME_ENV",
    "PATH_HORIZON",
    "PATH_RUNS",
    "block_method",
    "compare_paths",
    "compare_settings",
    "describe_settings",
    "hint_settings",
    "learner_path_reports",
    "oco_gradients",
    "path_reports",
]

#: Block sizes the block path plays, cycled: one round, blocks crossing powers of two and
#: batch ends, and a long one.
BLOCKS = (1, 6, 13, 2, 9, 3, 17, 5)
#: Attributes that may legitimately differ between twins (caches of public data, seeds kept
#: for ``reset``).
_SKIP = frozenset({"_trusted_advice", "_advice_finite", "_cache", "_seed"})
_OWN_MODULES = ("agents", "dp_experts_env")


@dataclass(frozen=True)
class PathReport:
    """What :func:`compare_paths` found.

    Attributes:
        method: the block entry point compared with ``act`` (None: ``act`` is the only path).
        compiled: whether the compiled kernels ran (numba present and not disabled).
        rounds: rounds played on each path.
        first_round: the first round (1-based) whose result differs; None when equal.
        what: what differed there ("actions", "state 'tree._noisy'", "random stream",
            "drawn noise ..."); "" when equal.
        refused: an inherited block method users' runs do not call, and the overrides why
            (:func:`~dp_experts_env.block_entry.block_overrides`); "" otherwise.
    """

    method: str | None
    compiled: bool
    rounds: int
    first_round: int | None = None
    what: str = ""
    refused: str = ""

    @property
    def equal(self) -> bool:
        """True when the paths agree (or there is only one)."""
        return self.first_round is None

    def describe(self) -> str:
        """One line for reports."""
        if self.method is None and self.refused:
            return f"{self.refused}: act is the only path users run"
        if self.method is None:
            return "no block entry point: act is the only path users run"
        path = "compiled" if self.compiled else "numpy"
        if self.equal:
            return (
                f"{self.method} ({path} path) equals act over {self.rounds} rounds: actions, "
                "state, random stream and drawn noise"
            )
        return (
            f"{self.method} ({path} path) differs from act at round {self.first_round}: {self.what}"
        )


def block_method(agent: Any) -> str | None:
    """The block entry point users' runs call on ``agent`` (None when they play ``act``).

    None too where :func:`~dp_experts_env.block_entry.block_entry` refuses an inherited block
    method (a subclass overrides a hook it recomputes): the episode loop then plays ``act``.
    """
    bandit = getattr(agent, "feedback", "full") == "bandit"
    name = "play_bandit_block" if bandit else "play_block"
    return name if block_entry(agent, name) is not None else None


@dataclass(frozen=True)
class _Game:
    """The data of one oblivious game: what both paths are fed."""

    obs: np.ndarray | None = None  # full / OCO: (T, B, W) observations of act
    losses: np.ndarray | None = None  # bandit: (T, B, K) losses
    advice: np.ndarray | None = None  # bandit: (T, B, N, K) advice


def _game(agent: Any, horizon: int, seed: int, gradients: np.ndarray | None) -> _Game:
    rng = np.random.default_rng(seed)
    runs = int(agent.num_envs)
    if gradients is not None:
        return _Game(obs=np.asarray(gradients, dtype=np.float64)[:horizon])
    if agent.feedback == "bandit":
        n, k = int(agent.n_experts), int(agent.n_arms)
        advice = rng.dirichlet(np.full(k, 0.4), size=(horizon, runs, n))
        return _Game(losses=rng.random((horizon, runs, k)), advice=advice)
    n = int(agent.n_experts)
    # Coarse values (ties for leaders and argmins) mixed with fine ones, per round.
    coarse = rng.integers(0, 3, size=(horizon, runs, n)) / 2.0
    fine = rng.random((horizon, runs, n))
    return _Game(obs=np.where(rng.random((horizon, runs, 1)) < 0.5, coarse, fine))


def _bandit_obs(game: _Game, t: int, last: np.ndarray, loss: np.ndarray) -> dict[str, Any]:
    assert game.advice is not None
    runs = game.advice.shape[1]
    return {
        "advice": game.advice[t].reshape(runs, -1),
        "last_action": last.copy(),
        "last_loss": loss.reshape(runs, 1).copy(),
    }


def _charged(game: _Game, t: int, actions: np.ndarray) -> np.ndarray:
    assert game.losses is not None
    return game.losses[t][np.arange(len(actions)), actions]


def _stream(rng: Any) -> bytes:
    twin = copy.deepcopy(rng)
    if isinstance(twin, BatchRNG):
        return twin.random((8,)).tobytes()
    return np.asarray(twin.random(8)).tobytes()


def _snapshot(
    obj: Any,
    prefix: str = "",
    out: dict[str, Any] | None = None,
    depth: int = 0,
    seen: set[int] | None = None,
) -> dict[str, Any]:
    """Every comparable attribute of ``obj`` (and of the suite's objects it holds), as bytes."""
    out = {} if out is None else out
    seen = set() if seen is None else seen
    if id(obj) in seen:
        return out
    seen.add(id(obj))
    for key, value in vars(obj).items():
        if key in _SKIP:
            continue
        name = f"{prefix}{key}"
        if isinstance(value, np.ndarray):
            out[name] = (value.dtype.str, value.shape, value.tobytes())
        elif isinstance(value, (bool, int, float, str, np.number)):
            out[name] = repr(value)
        elif isinstance(value, (BatchRNG, np.random.Generator)):
            out[f"{name} (random stream)"] = _stream(value)
        elif (
            depth < 3
            and hasattr(value, "__dict__")
            and not isinstance(value, type)
            and type(value).__module__.split(".")[0] in _OWN_MODULES
        ):
            _snapshot(value, f"{name}.", out, depth + 1, seen)
    return out


def _state_difference(a: dict[str, Any], b: dict[str, Any]) -> str:
    for key in sorted(set(a) | set(b)):
        if a.get(key) != b.get(key):
            if key.endswith("(random stream)"):
                return f"random stream {key.split(' ')[0]!r} (a different number of draws)"
            return f"state {key!r}"
    return ""


def _drop_padding(
    drawn: list[tuple[np.ndarray, np.ndarray]],
) -> list[tuple[np.ndarray, np.ndarray]]:
    """Leave out the variates a block path computes from its padding and throws away.

    A block whose first round learns nothing pads its uniforms with 0 (``samplers.laplace(0,
    scale)``, about ``-36.7 scale``) or 0.5 (zero noise); a genuine draw gives these values only
    for a uniform below ``2**-54`` or exactly 0.5 (docs/privacy.md, "Path equivalence").
    """
    out = []
    for values, scales in drawn:
        keep = (values != _zero_uniform_laplace(scales)) & (values != 0.0)
        out.append((values[keep], scales[keep]))
    return out


def _zero_uniform_laplace(scales: np.ndarray) -> np.ndarray:
    from dp_experts_env import samplers

    return samplers.laplace(np.zeros(scales.shape), scales)


def _noise_difference(
    a: list[tuple[np.ndarray, np.ndarray]], b: list[tuple[np.ndarray, np.ndarray]]
) -> str:
    """'' when the two lists of (values, scales) hold the same variates, else what differs."""

    def pooled(drawn: list[tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
        if not drawn:
            return np.empty(0), np.empty(0)
        values = np.concatenate([v.reshape(-1) for v, _ in drawn])
        scales = np.concatenate([s.reshape(-1) for _, s in drawn])
        order = np.lexsort((scales, values))
        return values[order], scales[order]

    (va, sa), (vb, sb) = pooled(_drop_padding(a)), pooled(_drop_padding(b))
    if va.size != vb.size:
        return f"drawn noise: act drew {va.size} Laplace variates, the block path {vb.size}"
    if not np.array_equal(va, vb):  # as floats: a zero scale's 0.0 and -0.0 are one draw
        ratio = np.median(np.abs(vb)) / max(float(np.median(np.abs(va))), 1e-300)
        return f"drawn noise: other Laplace values (median |noise| ratio block/act {ratio:.3g})"
    if not np.array_equal(sa, sb):
        return "drawn noise: the same values at other scales"
    return ""


@dataclass
class _Reference:
    """The act path, round by round: actions, state after each round, noise of each round."""

    actions: list[np.ndarray]
    states: list[dict[str, Any]]
    noise: list[list[tuple[np.ndarray, np.ndarray]]]


def _act_path(agent: Any, game: _Game, horizon: int) -> _Reference:
    ref = _Reference([], [], [])
    bandit = game.losses is not None
    runs = int(agent.num_envs)
    last, loss = np.zeros(runs, dtype=np.int64), np.zeros(runs)
    for t in range(horizon):
        with laplace_tap() as drawn:
            if bandit:
                action = np.asarray(agent.act(_bandit_obs(game, t, last, loss)))
                last, loss = action.astype(np.int64), _charged(game, t, action)
            else:
                assert game.obs is not None
                action = np.asarray(agent.act(game.obs[t]))
        ref.actions.append(action.copy())
        ref.noise.append(drawn)
        ref.states.append(_snapshot(agent))
    return ref


def _play_block(
    agent: Any, game: _Game, t: int, k: int, last: np.ndarray, loss: np.ndarray
) -> tuple[np.ndarray, list[tuple[np.ndarray, np.ndarray]]]:
    with laplace_tap() as drawn:
        if game.losses is not None:
            assert game.advice is not None
            first = _bandit_obs(game, t, last, loss)
            rows = np.arange(int(agent.num_envs))
            play = block_entry(agent, "play_bandit_block")
            assert play is not None  # compare_paths plays a block path only where there is one
            chosen = play(first, game.advice[t : t + k], game.losses[t : t + k], rows)
        else:
            assert game.obs is not None
            play = block_entry(agent, "play_block")
            assert play is not None
            chosen = play(np.ascontiguousarray(game.obs[t : t + k]))
    return np.asarray(chosen), drawn


def _block_difference(
    chosen: np.ndarray,
    drawn: list[tuple[np.ndarray, np.ndarray]],
    agent: Any,
    ref: _Reference,
    t: int,
) -> tuple[int, str] | None:
    """The first differing round (0-based) of a block played from round ``t``, and what."""
    for i in range(len(chosen)):
        want = ref.actions[t + i]
        got = np.asarray(chosen[i])
        if got.size != want.size:
            return t + i, f"actions of shape {got.shape}, act gives {want.shape}"
        same = got.astype(want.dtype).reshape(want.shape)
        if same.tobytes() != want.tobytes():
            differ = np.any(same.reshape(len(want), -1) != want.reshape(len(want), -1), axis=1)
            return t + i, f"actions (runs {np.flatnonzero(differ)[:5].tolist()})"
    end = t + len(chosen) - 1
    # The noise first: a scale off by a factor says more than the state it went into.
    what = _noise_difference([d for round_ in ref.noise[t : end + 1] for d in round_], drawn)
    if not what:
        what = _state_difference(ref.states[end], _snapshot(agent))
    return (end, what) if what else None


def _sizes(horizon: int, blocks: Sequence[int]) -> list[int]:
    out, i = [], 0
    while sum(out) < horizon:
        out.append(min(int(blocks[i % len(blocks)]), horizon - sum(out)))
        i += 1
    return out


def _replay_to(make: Callable[[], Any], game: _Game, sizes: list[int]) -> tuple[Any, int, Any]:
    """A fresh twin played through ``sizes``; (agent, rounds played, (last action, loss))."""
    agent = make()
    runs = int(agent.num_envs)
    last, loss = np.zeros(runs, dtype=np.int64), np.zeros(runs)
    t = 0
    for k in sizes:
        chosen, _ = _play_block(agent, game, t, k, last, loss)
        if game.losses is not None:
            last = chosen[-1].astype(np.int64)
            loss = _charged(game, t + k - 1, last)
        t += k
    return agent, t, (last, loss)


def compare_paths(
    make: Callable[[], Any],
    *,
    horizon: int,
    seed: int = 0,
    blocks: Sequence[int] = BLOCKS,
    gradients: np.ndarray | None = None,
) -> PathReport:
    """Play one seeded oblivious game through ``act`` and through the block entry point.

    Args:
        make: builds a fresh learner, the same one each call (fixed seed and parameters).
        horizon: rounds to play (at most the learner's T).
        seed: seed of the synthetic game (losses with ties; bandit: and Dirichlet advice).
        blocks: block sizes of the block path, cycled.
        gradients: OCO learners: the (T, B, d) observations to feed (required for them).

    Returns:
        A :class:`PathReport`; ``report.equal`` is the verdict.

    Raises:
        ValueError: for an OCO learner without ``gradients``.
    """
    probe = make()
    method = block_method(probe)
    compiled = jit_enabled()
    if method is None:
        return PathReport(None, compiled, 0, refused=_refused(probe))
    if probe.feedback == "oco" and gradients is None:
        raise ValueError("an OCO learner's paths are compared on given gradients (gradients=)")
    game = _game(probe, horizon, seed, gradients)
    sizes = _sizes(horizon, blocks)
    ref = _act_path(probe, game, horizon)
    agent = make()
    runs = int(agent.num_envs)
    last, loss = np.zeros(runs, dtype=np.int64), np.zeros(runs)
    t = 0
    for j, k in enumerate(sizes):
        chosen, drawn = _play_block(agent, game, t, k, last, loss)
        if len(chosen) != k:
            return PathReport(
                method, compiled, horizon, t + 1, f"{len(chosen)} actions for a block of {k} rounds"
            )
        found = _block_difference(chosen, drawn, agent, ref, t)
        if found is not None:
            return _locate(make, game, ref, sizes[:j], t, k, found, method, compiled, horizon)
        if game.losses is not None:
            last = chosen[-1].astype(np.int64)
            loss = _charged(game, t + k - 1, last)
        t += k
    return PathReport(method, compiled, horizon)


def _refused(agent: Any) -> str:
    """Why users' runs do not call ``agent``'s inherited block method ("" when it has none)."""
    bandit = getattr(agent, "feedback", "full") == "bandit"
    name = "play_bandit_block" if bandit else "play_block"
    found = block_overrides(agent, name)
    if not found:
        return ""
    return f"inherited {name} not played (overridden: {', '.join(found)})"


def _locate(
    make: Callable[[], Any],
    game: _Game,
    ref: _Reference,
    before: list[int],
    t: int,
    k: int,
    found: tuple[int, str],
    method: str,
    compiled: bool,
    horizon: int,
) -> PathReport:
    """Replay the differing block from its start in growing prefixes; the first that differs."""
    for m in range(1, k):
        agent, at, (last, loss) = _replay_to(make, game, before)
        chosen, drawn = _play_block(agent, game, at, m, last, loss)
        hit = _block_difference(chosen, drawn, agent, ref, at)
        if hit is not None:
            return PathReport(method, compiled, horizon, hit[0] + 1, hit[1])
    return PathReport(method, compiled, horizon, found[0] + 1, found[1])


def hint_settings(cls: Any) -> list[dict[str, Any]]:
    """Settings of ``cls.audit_hints``: ``params``, with ``exposed``, at each ``batch_sizes``."""
    hints = dict(getattr(cls, "audit_hints", {}) or {})
    params = dict(hints.get("params", {}) or {})
    exposed = {**params, **dict(hints.get("exposed", {}) or {})}
    batched = [
        {**params, "batch_size": b} for b in hints.get("batch_sizes", ()) or () if b is not None
    ]
    out: list[dict[str, Any]] = []
    for setting in (params, exposed, *batched):
        if setting and setting not in out:
            out.append(setting)
    return out


def compare_settings(
    build: Callable[..., Any],
    settings: Sequence[dict[str, Any]],
    *,
    horizon: int,
    gradients: np.ndarray | None = None,
) -> list[tuple[str, PathReport]]:
    """:func:`compare_paths` at the defaults and at each setting; (label, report) pairs.

    ``build(**setting)`` returns a fresh learner; a setting it refuses is left out. Stops at the
    first setting whose paths differ.
    """
    out: list[tuple[str, PathReport]] = []
    for setting in [{}, *settings]:
        try:
            build(**setting)
        except (ValueError, TypeError):
            continue
        report = compare_paths(
            lambda setting=setting: build(**setting), horizon=horizon, gradients=gradients
        )
        label = ", ".join(f"{k}={v!r}" for k, v in setting.items()) or "defaults"
        out.append((label, report))
        if not report.equal or report.method is None:
            break
    return out


def describe_settings(found: Sequence[tuple[str, PathReport]]) -> str:
    """One line per setting compared."""
    return "; ".join(f"{label}: {report.describe()}" for label, report in found)


#: Per feedback kind: the env id and keywords a learner is checked on (``check_agent`` too).
HOME_ENV: dict[str, tuple[str, dict[str, Any]]] = {
    "full": ("DPExperts-Stochastic-v0", {"n_experts": 4}),
    "any": ("DPExperts-Stochastic-v0", {"n_experts": 4}),
    "bandit": ("DPExperts-BanditAdvice-v0", {"n_experts": 6, "n_arms": 3}),
    "oco": ("DPExperts-OCO-v0", {"dim": 3}),
}
#: Runs and rounds of the path check's game.
PATH_RUNS, PATH_HORIZON = 3, 40


def oco_gradients(env: Any, horizon: int, seed: int) -> np.ndarray:
    """(T, B, d) observations of an OCO env played at the origin (its families are oblivious)."""
    obs, _ = env.reset(seed=seed)
    base = env.unwrapped
    out = [np.array(obs, dtype=np.float64)]
    for _ in range(horizon - 1):
        obs, *_ = env.step(np.zeros((env.num_envs, base.dim)))
        out.append(np.array(obs, dtype=np.float64))
    return np.stack(out)


def learner_path_reports(
    build: Callable[..., Any], feedback: str, cls: Any = None
) -> list[tuple[str, PathReport]]:
    """The path check of a learner on its home env, at the defaults and its hinted settings.

    Args:
        build: ``build(env, **setting)`` returns a fresh learner for the vector env (fixed seed).
        feedback: the learner's feedback kind (``any`` plays full information).
        cls: the learner's class, whose ``audit_hints`` name the settings (None: defaults only).

    Returns:
        (setting, :class:`PathReport`) pairs (:func:`compare_settings`).
    """
    import gymnasium as gym

    import dp_experts_env  # noqa: F401 - registers the env ids

    feedback = "full" if feedback == "any" else feedback
    env_id, params = HOME_ENV[feedback]
    env = gym.make_vec(
        env_id, num_envs=PATH_RUNS, vectorization_mode="vector_entry_point",
        **{"horizon": PATH_HORIZON, **params},
    )  # fmt: skip
    gradients = oco_gradients(env, PATH_HORIZON, seed=11) if feedback == "oco" else None
    settings = hint_settings(cls) if cls is not None else []
    return compare_settings(
        lambda **setting: build(env, **setting), settings, horizon=PATH_HORIZON, gradients=gradients
    )


def path_reports(
    agent: str, params: dict[str, Any] | None = None
) -> list[tuple[str, PathReport]]:
    """The path check of a registered learner, built at seed 7 (epsilon 1 unless ``params``)."""
    import agents

    entry = agents.spec(agent)  # unknown names raise, listing the learners

    def build(env: Any, **setting: Any) -> Any:
        kw = {**setting, **(params or {})}
        epsilon = kw.pop("epsilon", 1.0)
        if entry.private and epsilon is not None:
            kw["epsilon"] = epsilon
        return agents.make(agent, env=env, seed=7, **kw)

    return learner_path_reports(build, entry.feedback, entry.cls)
