"""Privacy audits of learners: play them on neighbouring loss sequences, search, test.

The statistics (events, Clopper–Pearson bounds, power) are :mod:`dp_experts_env.privacy.audit`;
this module plays learners. Two entry points:

* :func:`audit_agent` -- one neighbouring pair, one set of public parameters: half of each side's
  runs select the event, the other half tests it (the primitive; used by unit tests).
* :func:`audit_learner` -- the search behind ``dp-experts audit``: candidate *scenarios*
  (neighbouring pair x public hyper-parameters x game size) from :func:`default_scenarios`, each
  played on *selection* runs and scored by the bound its best event promises; the best
  (scenario, event) is then counted on fresh *test* runs with independent seeds, once, so the
  bound is valid at confidence ``1 - alpha`` whatever the search looked at. The report states
  the budget, what was searched and the power of the final event.

Learners are fed observations directly (no env): full-information learners see the previous
round's loss vector (zeros before round 0); bandit learners see the round's advice, the arm they
played and its loss. A *keyed* scenario is an adaptive adversary: round t's loss vector is the
protected row ``z_t`` rotated so that ``z_t[0]`` lands on the action played at round ``t - 1``
(the same function on both sides of the pair, so the pair differs in one datum; only for learners
whose claim holds against adaptive adversaries).

Weakened learners ("mutants") are built with an audit-only noise wrapper
(:class:`~dp_experts_env.privacy.noise.ScaledBackend`): the claim is that of the correct
learner, the noise is ``multiplier`` times smaller or larger.

What to test comes from the learner's declared mechanisms (``agent.declaration``, see
:mod:`dp_experts_env.privacy.declaration`), never from its name: learners that declare Laplace
*releases* (noisy losses, tree nodes, batch means) are also audited on those releases, recorded
by :class:`~dp_experts_env.privacy.noise.RecordingBackend`; the scenarios searched are derived
from the declared kinds (:func:`derived_scenarios`) and the learner's ``audit_hints``; every
learner's Laplace draws are checked for freshness (:func:`noise_freshness`: the same noise must
not reappear across rounds or runs). A learner that declares nothing gets the generic scenarios
and the freshness check, and the report says so.
"""

from __future__ import annotations

import dataclasses
import math
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dp_experts_env._validation import check_float, check_int, check_loss_array
from dp_experts_env.privacy.audit import (
    INCONCLUSIVE_FACTOR,
    AuditResult,
    Selection,
    _check_common,
    epsilon_lower_bound,
    evaluate_event,
    release_families,
    select_event,
    sequence_families,
)
from dp_experts_env.privacy.declaration import fresh_draws, scalar_draws
from dp_experts_env.privacy.noise import (
    LaterCallsScaled,
    RecordingBackend,
    ScaledBackend,
    get_backend,
)

__all__ = [
    "DEFAULT_RUNS",
    "MAX_RELEASES",
    "UNDECLARED",
    "declaration_of",
    "derived_scenarios",
    "noise_freshness",
    "noise_provenance",
    "AuditReport",
    "Scenario",
    "audit_agent",
    "audit_learner",
    "default_scenarios",
    "play_scenario",
    "swap_pair",
    "tree_counter_test",
    "query_sensitivity_check",
    "TreeCheck",
]

#: The loud warning for a private learner that declares nothing.
UNDECLARED = (
    "{agent} declares no mechanisms (agent.declaration is None): the audit cannot derive its "
    "scenarios and checks from what runs and tries a longer generic search (long games, "
    "T <= 64), which misses what it does not try; declare them (docs/own_learner.md)"
)
_TEST_SEED_OFFSET = 500_000_000_000  # test runs' seeds start here (selection runs below it)
#: test runs per side when neither the caller nor the chosen scenario says otherwise
DEFAULT_RUNS = 100_000
#: Laplace releases kept per run after the changed row (tree nodes holding the first of 2^16
#: items, batch means, noisy loss vectors of the next rounds); later ones are not recorded.
MAX_RELEASES = 16


# --------------------------------------------------------------------------- scenarios
@dataclass(frozen=True, eq=False)
class Scenario:
    """A neighbouring pair of games and the public parameters to play them with.

    Attributes:
        label: the scenario in words (pair, changed round, parameters).
        losses: (T, W) protected rows ``z_t`` on the input (W = N experts, or K arms for bandit
            learners), values in [0, 1].
        neighbor: the same with exactly one row replaced.
        params: public hyper-parameters passed to the learner (privacy must hold for all).
        keyed: adaptive adversary (see the module docstring).
        advice: bandit learners: (N, K) advice (default: the identity, N = K).
        runs: test runs per side if this scenario is chosen (None: :data:`DEFAULT_RUNS`); cheap
            scenarios whose evidence sits close to the claim ask for more.
    """

    label: str
    losses: np.ndarray
    neighbor: np.ndarray
    params: Mapping[str, Any] = field(default_factory=dict)
    keyed: bool = False
    advice: np.ndarray | None = None
    runs: int | None = None

    @property
    def changed_round(self) -> int:
        """The index of the row in which the pair differs."""
        return _differing_row(self.losses, self.neighbor)

    @property
    def horizon(self) -> int:
        """T."""
        return int(self.losses.shape[0])


def _differing_row(losses: np.ndarray, neighbor: np.ndarray) -> int:
    rows = np.flatnonzero(np.any(losses != neighbor, axis=1))
    if len(rows) != 1:
        raise ValueError(
            "losses and neighbor_losses must differ in exactly one row (one round's loss "
            f"vector: event-level neighbours); they differ in {len(rows)} rows"
            + (f" ({rows[:10].tolist()})" if len(rows) else "")
        )
    return int(rows[0])


# --------------------------------------------------------------------------- playing
class ScenarioRefused(ValueError):
    """The learner cannot be built with a scenario's parameters (the search skips it)."""


@dataclass(frozen=True)
class Outputs:
    """What one side of a scenario produced.

    Attributes:
        actions: (n, T) actions.
        releases: (n, 2, 1 + D): column 0 the action of the changed round (on both channels),
            then the exact inputs (channel 0) and noisy outputs (channel 1) of the Laplace
            releases made after the changed row was fed (None when not recorded).
        claim: the learner's privacy claim.
        seconds: wall time of the play.
    """

    actions: np.ndarray
    releases: np.ndarray | None
    claim: Any
    seconds: float


def _build(agent: Any, n: int, seed: int, game: dict[str, int], params: Mapping[str, Any]) -> Any:
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


def _play(
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
        # Column 0: the action of the changed round (the release families may fit their
        # centres per action: a bandit learner's release reads the loss of the arm it played).
        key = np.repeat(actions[:, changed, None, None].astype(np.float64), 2, axis=1)
        # Calls on a subset of the runs (a learner updating only some runs) have no per-run row.
        calls = [c for c in recorder.releases if c[0].shape[:1] == (n,)]
        if calls:
            exact = np.concatenate([c[0].reshape(n, -1) for c in calls], axis=1)
            noisy = np.concatenate([c[1].reshape(n, -1) for c in calls], axis=1)
            releases = np.concatenate([key, np.stack([exact, noisy], axis=1)], axis=2)
        else:
            releases = key
    return actions, releases


def _play_blocks(agent: Any, losses: np.ndarray, advice: np.ndarray | None, n: int) -> np.ndarray:
    """The game of :func:`_play` (oblivious) through the learner's block entry point.

    What users' runs call on an oblivious game (``play_block`` with the block's observations,
    ``play_bandit_block`` with the block's losses and advice), in the blocks of
    :data:`~dp_experts_env.evaluation.paths.BLOCKS`; returns the (n, T) actions.
    """
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
            chosen = agent.play_bandit_block(first, block_advice, losses[t : t + k, None], rows)
        else:
            obs = np.empty((k, n, width))
            obs[0] = losses[t - 1] if t else 0.0
            obs[1:] = losses[t : t + k - 1, None, :]
            chosen = agent.play_block(obs)
        chosen = np.asarray(chosen)
        for r in range(k):
            actions[:, t + r] = _check_actions(chosen[r], n, width)
        prev = chosen[-1].astype(np.int64)
        last_loss = losses[t + k - 1][prev]
        t += k
    return actions


def relative_actions(actions: np.ndarray, k: int) -> np.ndarray:
    """``(J_0, J_1 - J_0, J_2 - J_1, ...) mod k``: a keyed scenario's actions in its own frame.

    A keyed adversary places each row relative to the previous action, so events about moves
    (``J_t - J_{t-1}``) are the natural ones; the map is a bijection (post-processing).
    """
    rel = actions.astype(np.int64)
    rel[:, 1:] = (rel[:, 1:] - rel[:, :-1]) % k
    return rel.astype(actions.dtype)


def _check_advice(advice: Any, horizon: int, width: int) -> np.ndarray | None:
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


def _noise_for(
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

    With ``block``, an oblivious (not keyed) scenario is played through the learner's block
    entry point, as users' runs play it (:func:`_play_blocks`; no releases recorded).

    Run ``b`` uses agent seed ``seed + b``. Keyed scenarios return their actions as
    :func:`relative_actions`. ``multiplier`` weakens (or strengthens) the noise
    through a :class:`ScaledBackend`; ``record`` keeps the Laplace releases made after the changed
    row was fed. With ``refusable``, a learner that cannot be built with the scenario's
    parameters raises :class:`ScenarioRefused` (the search skips the scenario).
    """
    losses = scenario.losses if side == 0 else scenario.neighbor
    horizon, width = losses.shape
    advice = _check_advice(scenario.advice, horizon, width)
    params, recorder = _noise_for(agent, scenario.params, multiplier, record)
    n_experts = advice.shape[-2] if advice is not None else width
    began = time.perf_counter()
    try:
        built = _build(agent, n_runs, seed, {"n": n_experts, "t": horizon, "k": width}, params)
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
    if block:
        if scenario.keyed or record:
            raise ValueError("the block path plays oblivious scenarios, without recording")
        actions, releases = _play_blocks(built, losses, advice, n_runs), None
    else:
        actions, releases = _play(
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


def noise_freshness(
    agent: str, scenario: Scenario, *, n_runs: int = 64, seed: int = 0, multiplier: float = 1.0
) -> str:
    """Check that no Laplace draw reappears across runs or rounds; "" when all are fresh.

    Side 0 of ``scenario`` is played with every ``add_laplace`` call recorded from the first
    round (at most 256 calls). Noise is ``noisy - exact`` per call and run. Two runs (distinct
    seeds) drawing the same noise vector in one call, or one run drawing the same vector in two
    calls, in more than 1/8 of the runs, is reported: fresh continuous (or fine-lattice) noise
    repeats with probability ~0. So is a learner that draws fewer Laplace coordinates (through
    the backend's ``laplace`` or ``add_laplace``) than its declaration promises
    (:func:`~dp_experts_env.privacy.declaration.fresh_draws`). It catches noise drawn once and
    reused every round and a generator re-seeded to a fixed state. Learners that draw no
    Laplace noise and declare none pass trivially.
    """
    params, _ = _noise_for(agent, scenario.params, multiplier, record=False)
    base = params.pop("noise", scenario.params.get("noise", "fast"))
    recorder = RecordingBackend(get_backend(base), max_calls=256)
    params["noise"] = recorder
    horizon, width = scenario.losses.shape
    advice = _check_advice(scenario.advice, horizon, width)
    n_experts = advice.shape[-2] if advice is not None else width
    try:
        built = _build(agent, n_runs, seed, {"n": n_experts, "t": horizon, "k": width}, params)
    except (ValueError, TypeError):
        return ""  # the learner takes no noise backend: nothing to check here
    if built.feedback == "bandit" and advice is None:
        advice = np.eye(width)
    _play(
        built, scenario.losses, advice, n_runs, keyed=scenario.keyed, recorder=recorder, changed=-1
    )
    declared = getattr(built, "declaration", None)
    promised = fresh_draws(declared) if declared is not None else 0
    if recorder.drawn < promised:
        return (
            f"the declaration promises {promised} fresh Laplace coordinates per run in this "
            f"game, the learner drew {recorder.drawn} (noise reused or never drawn)"
        )
    scalars = scalar_draws(declared) if declared is not None else 0
    if recorder.drawn_scalar < scalars:
        return (
            f"the declared sparse vector promises {scalars} fresh query and threshold draws per "
            f"run in this game, the learner drew {recorder.drawn_scalar} (noise kept or dropped)"
        )
    limit = n_runs // 8
    seen: dict[tuple[int, bytes], int] = {}
    repeats_in_run = 0
    for c, (exact, noisy) in enumerate(recorder.releases):
        noise = (noisy - exact).reshape(noisy.shape[0], -1)
        if noise.shape[0] != n_runs or noise.shape[1] == 0:
            continue
        distinct = np.unique(noise, axis=0).shape[0]
        if n_runs - distinct > limit:
            return (
                f"call {c} of add_laplace drew the same noise in {n_runs - distinct + 1} of "
                f"{n_runs} runs (distinct seeds)"
            )
        for b in range(n_runs):
            key = (b, noise[b].tobytes())
            if key in seen:
                repeats_in_run += 1
            else:
                seen[key] = c
    if repeats_in_run > limit:
        return (
            f"{repeats_in_run} Laplace draws repeat an earlier draw of the same run (noise "
            f"reused across rounds) in {n_runs} runs"
        )
    return ""


#: declared kinds whose noise the learner draws through its noise backend (Laplace releases,
#: trees, report-noisy-min, Gumbel-max exponential mechanisms, sparse-vector queries/thresholds)
BACKEND_KINDS = frozenset({"laplace", "tree", "noisy-min", "exponential", "sparse-vector"})


def _provenance_game(agent: str, params: Mapping[str, Any]) -> Scenario:
    """A game on which any noisy learner's actions depend on its noise: random losses, T = 24.

    N = 4 experts (bandit learners: K = 2 arms, identity advice), uniform [0, 1] losses from a
    fixed seed; the pair's second side is never played (the check plays one side twice).
    """
    width = 2 if _spec_feedback(agent) == "bandit" else 4
    x = np.random.default_rng(12345).random((24, width))
    xp = x.copy()
    xp[0] = 1.0 - x[0]
    return _scenario("random losses", (x, xp), params)


def _same_actions_without_noise(
    agent: str, scenario: Scenario, n_runs: int, seed: int, multiplier: float, keep: int = 0
) -> bool | None:
    """True when side 0 plays identically with the backend's noise x0; None: not buildable.

    With ``keep``, the first ``keep`` backend calls keep their noise (:class:`LaterCallsScaled`).
    """
    horizon, width = scenario.losses.shape
    advice = _check_advice(scenario.advice, horizon, width)
    n_experts = advice.shape[-2] if advice is not None else width
    plays = []
    for factor in (multiplier, 0.0):
        params = dict(scenario.params)
        base = ScaledBackend(get_backend(params.pop("noise", "fast")), multiplier)
        params["noise"] = (
            base if factor == multiplier else LaterCallsScaled(base, 0.0, keep) if keep
            else ScaledBackend(base, 0.0)
        )  # fmt: skip
        try:
            built = _build(agent, n_runs, seed, {"n": n_experts, "t": horizon, "k": width}, params)
        except (ValueError, TypeError):
            return None  # the learner takes no noise backend (or not these parameters)
        adv = np.eye(width) if built.feedback == "bandit" and advice is None else advice
        actions, _ = _play(
            built, scenario.losses, adv, n_runs, keyed=scenario.keyed, recorder=None, changed=-1
        )
        plays.append(actions)
    return bool(np.array_equal(plays[0], plays[1]))


def noise_provenance(
    agent: str,
    scenario: Scenario,
    *,
    params: Mapping[str, Any] | None = None,
    n_runs: int = 256,
    seed: int = 0,
    multiplier: float = 1.0,
) -> str:
    """Check that the learner's outputs come from its backend's noise; "" when they do.

    A learner whose declaration promises backend noise (a mechanism of :data:`BACKEND_KINDS`)
    is played on side 0 of ``scenario`` twice with the same seeds: once as built and once with
    every backend variate multiplied by 0 (:class:`ScaledBackend`; the uniforms are still
    drawn, so every other random choice is the same). A learner whose noise comes from the
    backend then plays differently in some run. Some scenarios fix the plays whatever the
    noise (a bandit's first exploration rounds, advice that names one arm), so identical
    actions are confirmed on a second game where every noisy learner's plays depend on its
    noise (:func:`_provenance_game`: random losses, T = 24, the learner's ``params``).
    Identical actions on both mean the noise that reaches the actions is drawn elsewhere (the
    learner's own generator), which neither the draw counts, the freshness check nor the
    recorded releases can see, and which the claim's backend (and an audit mutant's
    multiplier) does not describe. Learners that declare no backend noise, and noise-removed
    mutants (``multiplier = 0``), are not checked.
    """
    declared = declaration_of(agent, scenario.params)
    if declared is None or multiplier == 0.0 or not (set(_kinds(declared)) & BACKEND_KINDS):
        return ""
    games = (scenario, _provenance_game(agent, dict(params or {})))
    if all(_same_actions_without_noise(agent, g, n_runs, seed, multiplier) for g in games):
        return (
            f"the declaration promises noise through the backend, but the learner played the "
            f"same actions in all {n_runs} runs of two games with the backend's noise removed "
            "(noise drawn outside the backend, e.g. from the learner's own generator)"
        )
    # The noise it uses must be the noise it draws: with every backend call after the first
    # left without noise, a learner using its fresh draws plays differently on the long game.
    if _same_actions_without_noise(agent, games[1], n_runs, seed, multiplier, keep=1):
        return (
            f"the learner played the same actions in all {n_runs} runs of a {games[1].horizon}"
            "-round game when every backend draw after the first carried no noise: the "
            "noise it uses is not the noise it draws each time (cached noise, reused from "
            "the first draw?)"
        )
    return ""


# --------------------------------------------------------------------------- one pair
def audit_agent(
    agent: str | Callable[[int, int], Any],
    losses: Any,
    neighbor_losses: Any,
    *,
    n_runs: int = 20_000,
    alpha: float = 1e-3,
    seed: int = 0,
    advice: Any = None,
    keyed: bool = False,
    multiplier: float = 1.0,
    **agent_params: Any,
) -> AuditResult:
    """Audit a learner's privacy claim on one pair of neighbouring loss sequences.

    One batched agent of ``n_runs`` runs plays each side (agent seeds ``2 k n`` and
    ``(2k + 1) n`` for ``seed = k``, ``n = n_runs``: sides and audit seeds never share runs).
    The first half of each side's runs selects the event (the families of
    :func:`~dp_experts_env.privacy.audit.sequence_families`: per-round, block, joint-window,
    switch and play-count events over the rounds after the differing one, windows reaching one
    or two rounds back), the second half tests it.

    Args:
        agent: a registered agent name (built with ``agents.make(name, n_experts=N, horizon=T,
            num_envs=n_runs, seed=..., **agent_params)``) or a factory ``f(num_envs, seed)``.
        losses: (T, N) losses in [0, 1] (bandit agents: (T, K) losses of the arms).
        neighbor_losses: the same with exactly one row changed.
        n_runs: runs per side (>= 200).
        alpha: error probability of the lower bound.
        seed: first agent seed.
        advice: bandit agents only: (N, K) or (T, N, K) expert advice (rows are distributions);
            default the identity (N = K).
        keyed: rows are rotated onto the previous action (an adaptive adversary).
        multiplier: noise factor of an audit mutant (1: the learner as built).
        **agent_params: passed to ``agents.make`` (e.g. ``epsilon=1.0``).

    Returns:
        An :class:`AuditResult` for the agent's ``privacy`` claim.
    """
    n, alpha, seed = _check_common(n_runs, alpha, seed)
    x = check_loss_array("losses", losses, ndim=2)
    xp = check_loss_array("neighbor_losses", neighbor_losses, ndim=2, shape=x.shape)
    scenario = Scenario("given pair", x, xp, agent_params, keyed=keyed, advice=advice)
    row = scenario.changed_round
    sides = [
        play_scenario(
            agent, scenario, side=s, n_runs=n, seed=(2 * seed + s) * n, multiplier=multiplier
        )
        for s in (0, 1)
    ]
    claim = sides[0].claim
    try:
        _check_adversary(scenario, claim)
    except ScenarioRefused as err:
        raise ValueError(str(err)) from None
    k = int(scenario.losses.shape[1])
    half = n // 2
    a, b = sides[0].actions, sides[1].actions
    fams = sequence_families(a[:half], b[:half], k=k, first=row + 1)
    selection = select_event(
        fams, a[:half], b[:half], n_test=n - half, alpha=alpha, delta=float(claim.delta)
    )
    return evaluate_event(
        selection,
        a[half:],
        b[half:],
        alpha=alpha,
        claimed_epsilon=float(claim.epsilon),
        claimed_delta=float(claim.delta),
        n_runs=n,
    )


# --------------------------------------------------------------------------- the search
@dataclass(frozen=True, eq=False)
class Candidate:
    """A scenario scored on selection runs: its best event per view."""

    scenario: Scenario
    view: str  # "actions" or "releases"
    selection: Selection | None
    seconds: float
    claimed_epsilon: float

    @property
    def score(self) -> float:
        """The bound a test was predicted to give (0 when nothing separates the sides)."""
        return self.selection.score if self.selection is not None else 0.0

    @property
    def margin(self) -> float:
        """Predicted bound minus the claim: how far the evidence is expected to reach past it."""
        return self.score - self.claimed_epsilon


@dataclass(frozen=True)
class AuditReport:
    """What :func:`audit_learner` searched, chose and found.

    Attributes:
        agent: the learner audited (name, or the factory's repr).
        multiplier: noise factor (1 for the learner as built; 0.5, 0 for mutants).
        result: the test of the chosen event on fresh runs (bound, counts, power).
        chosen: the candidate tested (scenario and view).
        candidates: every candidate scored, in search order.
        claim: the learner's claim in the chosen scenario.
        selection_runs: runs per side and scenario in the search. test_runs: runs per side in
            the test.
        scenarios_total: scenarios available; :meth:`searched` of them were scored within the
            budget.
        skipped: scenarios the learner refused to be built with (and why).
        time_budget: seconds allowed for the search. seconds: wall time of search and test.
        declaration: the learner's declared mechanisms, in words ("" when it declares
            nothing: generic scenarios only).
        stale_noise: what the noise-freshness check found reappearing ("" when every draw
            was fresh); a finding is a violation.
        foreign_noise: what the noise-provenance check found (:func:`noise_provenance`: the
            actions do not depend on the backend's noise; "" when they do); a violation.
        paths: what the path-equivalence check compared (block entry point against ``act``,
            :mod:`~dp_experts_env.evaluation.paths`), per setting.
        paths_differ: where the two paths differ (the check's first round, or the first run
            and round of the audit's own test runs that differ); "" when equal. A violation:
            the evidence about ``act`` is not about the code users run.
        query_check: what the brute-force check of a declared sparse vector's query
            sensitivity found (:func:`query_sensitivity_check`); "" when it holds.
        tree_check: the part-level test of a declared tree counter (:func:`tree_counter_test`,
            at T = 3 and 5); a violation fails the audit. None without a tree.
        block_result: the chosen event counted on the same test runs played through the
            block entry point (None: no block entry point, a keyed scenario or a release view;
            a release view's block runs are still compared with act's, action for action).
    """

    agent: str
    multiplier: float
    result: AuditResult
    chosen: Candidate | None
    candidates: list[Candidate]
    claim: Any
    selection_runs: int
    test_runs: int
    scenarios_total: int
    skipped: list[str]
    time_budget: float
    seconds: float
    declaration: str = ""
    stale_noise: str = ""
    foreign_noise: str = ""
    part_check: Any = None
    paths: str = ""
    paths_differ: str = ""
    block_result: AuditResult | None = None
    tree_check: Any = None
    query_check: str = ""

    @property
    def violation(self) -> bool:
        """True when a test bound exceeds the claim, or a noise, part or path check failed."""
        part = self.part_check is not None and self.part_check.violation
        block = self.block_result is not None and not self.block_result.passed
        return (
            not self.result.passed
            or bool(self.stale_noise)
            or bool(self.foreign_noise)
            or part
            or bool(self.paths_differ)
            or block
            or (self.tree_check is not None and self.tree_check.violation)
            or bool(self.query_check)
        )

    @property
    def verdict(self) -> str:
        """The test's verdict, or the check that failed (paths, freshness, provenance)."""
        if self.paths_differ and self.result.passed:
            return (
                "VIOLATION: the block path users run differs from act, so the audit of act "
                f"says nothing about it ({self.paths_differ})"
            )
        if self.query_check and self.result.passed:
            return f"VIOLATION of the declared sparse vector: {self.query_check}"
        tree = self.tree_check
        if tree is not None and tree.violation and self.result.passed:
            return f"VIOLATION of the declared tree counter: {tree.describe()}"
        block = self.block_result
        if block is not None and not block.passed and self.result.passed:
            return f"{block.verdict} (on the block path users run)"
        if self.stale_noise and self.result.passed:
            return f"VIOLATION: fresh-noise check failed ({self.stale_noise})"
        if self.foreign_noise and self.result.passed:
            return f"VIOLATION: noise-provenance check failed ({self.foreign_noise})"
        part = self.part_check
        if part is not None and part.violation and self.result.passed:
            return (
                f"VIOLATION of a declared part: {part.describe()}; the composition that "
                "certifies the claim assumes that part's epsilon, so the claim is not certified"
            )
        if part is not None:
            return f"{self.result.verdict}; part-level test: {part.describe()}"
        return self.result.verdict

    def searched(self) -> int:
        """Scenarios scored (each over every view the learner offers)."""
        return len({id(c.scenario) for c in self.candidates})

    def summary(self) -> str:
        """A few lines for the CLI: verdict, bound, event, scenario, budget."""
        res = self.result
        lines = [
            f"{self.agent}: {self.verdict}",
            f"  claim: {self.claim.summary() if self.claim is not None else 'none'}",
            f"  test: epsilon >= {res.epsilon_lower_bound:.3f} (confidence {1 - res.alpha:g}) on "
            f"{res.n_heldout} fresh runs per side; counts {res.counts[0]} vs {res.counts[1]}",
        ]
        if self.chosen is not None:
            lines += [
                f"  event ({self.chosen.view}): {res.event}",
                f"  scenario: {self.chosen.scenario.label}",
            ]
        lines.append(
            f"  search: {self.searched()} of {self.scenarios_total} scenarios x "
            f"{self.selection_runs} selection runs per side within a {self.time_budget:g} s "
            f"budget; {self.seconds:.1f} s in all"
        )
        if self.declaration:
            lines.append(f"  scenarios derived from the declaration: {self.declaration}")
        else:
            lines.append(
                "  WARNING: no declared mechanisms, generic scenarios only (with long games): "
                + UNDECLARED.format(agent=self.agent)
            )
        if self.stale_noise:
            lines.append(f"  noise freshness: {self.stale_noise}")
        if self.foreign_noise:
            lines.append(f"  noise provenance: {self.foreign_noise}")
        if self.part_check is not None:
            lines.append(f"  part-level test: {self.part_check.describe()}")
        if self.block_result is not None:
            lines.append(
                f"  the same test on the block path: epsilon >= "
                f"{self.block_result.epsilon_lower_bound:.3f}; counts "
                f"{self.block_result.counts[0]} vs {self.block_result.counts[1]}"
            )
        if self.tree_check is not None:
            lines.append(f"  part-level test: {self.tree_check.describe()}")
        if self.query_check:
            lines.append(f"  query sensitivity: {self.query_check}")
        if self.paths:
            lines.append(f"  paths: {self.paths}")
        if self.paths_differ:
            lines.append(f"  paths differ: {self.paths_differ}")
        if self.skipped:
            lines.append(f"  skipped {len(self.skipped)} scenario(s): {self.skipped[0]}")
        if self.multiplier != 1.0:
            lines.append(f"  mutant: noise x{self.multiplier:g}, claim unchanged")
        return "\n".join(lines)


def _check_adversary(scenario: Scenario, claim: Any) -> None:
    """A keyed (adaptive) pair is outside a claim that holds against oblivious adversaries."""
    if scenario.keyed and getattr(claim, "holds_against", "adaptive") == "oblivious":
        raise ScenarioRefused(
            f"{scenario.label}: a keyed pair is an adaptive adversary, and the claim holds "
            "against oblivious adversaries only"
        )


def _score_scenario(
    agent: str,
    scenario: Scenario,
    *,
    n_sel: int,
    n_test: int,
    seed: int,
    multiplier: float,
    record: bool,
    alpha: float,
) -> tuple[list[Candidate], Any]:
    began = time.perf_counter()
    sides = [
        play_scenario(
            agent,
            scenario,
            side=s,
            n_runs=n_sel,
            seed=seed + s * n_sel,
            multiplier=multiplier,
            record=record,
            refusable=True,
        )
        for s in (0, 1)
    ]
    claim = sides[0].claim
    _check_adversary(scenario, claim)
    delta = float(claim.delta)
    # Families are fitted (window values, likelihood orders, release centres) on one half of
    # the selection runs and scored on the other: scoring on the runs that ordered them would
    # reward noise.
    fit, score = slice(0, n_sel // 2), slice(n_sel // 2, n_sel)
    a, b = sides[0].actions, sides[1].actions
    k = int(scenario.losses.shape[1])
    first = scenario.changed_round + 1
    out = []
    fams = sequence_families(a[fit], b[fit], k=k, first=first)
    sel = select_event(fams, a[score], b[score], n_test=n_test, alpha=alpha, delta=delta)
    seconds = time.perf_counter() - began
    out.append(Candidate(scenario, "actions", sel, seconds, float(claim.epsilon)))
    if record and sides[0].releases is not None:
        ra, rb = sides[0].releases, sides[1].releases
        fams = release_families(ra[fit], rb[fit])
        rel = select_event(fams, ra[score], rb[score], n_test=n_test, alpha=alpha, delta=delta)
        out.append(Candidate(scenario, "releases", rel, seconds, float(claim.epsilon)))
    return out, claim


def audit_learner(
    agent: str,
    *,
    epsilon: float = 1.0,
    params: Mapping[str, Any] | None = None,
    multiplier: float = 1.0,
    scenarios: Sequence[Scenario] | None = None,
    runs: int | None = None,
    selection_runs: int = 4_000,
    pairs: int | None = None,
    time_budget: float = 120.0,
    alpha: float = 1e-3,
    seed: int = 0,
    releases: bool | None = None,
    part_tests: bool = True,
) -> AuditReport:
    """Search scenarios for the strongest evidence against a learner's claim, then test it once.

    Args:
        agent: a registered private learner.
        epsilon: the epsilon the learner is built with (its claim is what its accountant
            certifies at the parameters of each scenario).
        params: extra learner parameters (``mode``, ``noise``, ...), applied to every scenario;
            they win over a scenario's own settings, so a user can pin a parameter the search
            would otherwise vary (scenarios the learner then refuses are skipped and reported).
        multiplier: noise factor of an audit mutant (0.5 halves the noise, 0 removes it; the
            claim is unchanged). 1 audits the learner as built.
        scenarios: candidate scenarios, in search order (default :func:`default_scenarios`).
        runs: test runs per side (>= 200) for every scenario (default: the chosen scenario's
            ``runs``, else :data:`DEFAULT_RUNS`). Each scenario is scored by the bound a test of
            its own size is predicted to give.
        selection_runs: runs per side for scoring each scenario (>= 200).
        pairs: search at most this many scenarios (default all).
        time_budget: seconds for the search; scenarios left when it is spent are skipped (the
            report says how many were searched). The test always runs.
        alpha: error probability of the final bound.
        seed: audit seed; selection and test runs use disjoint seed ranges derived from it.
        releases: audit recorded Laplace releases as well as actions (default: when the
            learner declares a mechanism that releases noisy values).
        part_tests: when the claim is split among composed mechanisms and a sparse-vector part
            can be read alone, test that part against its own epsilon
            (:func:`part_level_test`; skipped when the main test already found a violation);
            and test a declared tree counter on its own (:func:`tree_counter_test`).

    Returns:
        An :class:`AuditReport`; ``report.violation`` is the verdict.
    """
    import agents

    entry = agents.spec(agent)  # unknown names raise, listing the learners
    if not entry.private:
        raise ValueError(f"agent {agent!r} is non-private, so it has no claim to audit")
    fixed = None if runs is None else check_int("runs", runs, minimum=200)
    n_sel = check_int("selection_runs", selection_runs, minimum=200)
    alpha = check_float("alpha", alpha, minimum=0.0, maximum=0.5, min_inclusive=False)
    seed = check_int("seed", seed, minimum=0)
    budget = check_float("time_budget", time_budget, minimum=0.0)
    mult = check_float("multiplier", multiplier, minimum=0.0)
    user = dict(params or {})
    user.setdefault("epsilon", epsilon)
    declared = declaration_of(agent, user)
    if declared is None:
        warnings.warn(UNDECLARED.format(agent=agent), UserWarning, stacklevel=2)
    if scenarios is None:
        scenarios = derived_scenarios(agent, declared) + _generic(
            agent, undeclared=declared is None
        )
    scenarios = [
        Scenario(s.label, s.losses, s.neighbor, {**s.params, **user}, s.keyed, s.advice, s.runs)
        for s in scenarios
    ]
    total = len(scenarios)
    if pairs is not None:
        scenarios = scenarios[: check_int("pairs", pairs, minimum=1)]
    record = _releases(declared) if releases is None else bool(releases)
    base = seed * 2 * _TEST_SEED_OFFSET
    began = time.perf_counter()
    candidates: list[Candidate] = []
    skipped: list[str] = []
    for i, scenario in enumerate(scenarios):
        if candidates and time.perf_counter() - began > budget:
            break
        try:
            found, claim = _score_scenario(
                agent,
                scenario,
                n_sel=n_sel,
                n_test=fixed or scenario.runs or DEFAULT_RUNS,
                seed=base + 2 * i * n_sel,
                multiplier=mult,
                record=record,
                alpha=alpha,
            )
        except ScenarioRefused as err:  # e.g. a user parameter the scenario's settings refuse
            skipped.append(str(err))
            continue
        if not math.isfinite(claim.epsilon):
            raise ValueError(
                f"{agent} claims no privacy in scenario {scenario.label!r} (epsilon = inf); "
                "there is nothing to audit"
            )
        candidates += found
    if not candidates:
        raise ValueError(f"no scenario could be played with {agent}: " + "; ".join(skipped[:3]))
    best = max(candidates, key=lambda c: c.margin)
    n_test = fixed or best.scenario.runs or DEFAULT_RUNS
    test_seed = base + _TEST_SEED_OFFSET
    sides = [
        play_scenario(
            agent,
            best.scenario,
            side=s,
            n_runs=n_test,
            seed=test_seed + s * n_test,
            multiplier=mult,
            record=best.view == "releases",
        )
        for s in (0, 1)
    ]
    claim = sides[0].claim
    stale = noise_freshness(agent, best.scenario, seed=test_seed + 2 * n_test, multiplier=mult)
    # The long game runs under the hints' public settings too (as every derived scenario): at
    # its defaults a learner may make no data-dependent play in 24 rounds (dp-se's first epoch
    # is thousands of rounds), and unused noise would read as noise drawn elsewhere.
    exposed = {**audit_hints(agent).get("params", {}), **user}
    foreign = noise_provenance(
        agent, best.scenario, params=exposed, seed=test_seed + 2 * n_test, multiplier=mult
    )
    view = (lambda o: o.releases) if best.view == "releases" else (lambda o: o.actions)
    result = evaluate_event(
        best.selection,
        view(sides[0]),
        view(sides[1]),
        alpha=alpha,
        claimed_epsilon=float(claim.epsilon),
        claimed_delta=float(claim.delta),
        n_runs=n_test,
        share=_share(agent, best.scenario),
    )
    if result.inconclusive and INCONCLUSIVE_FACTOR * result.share <= 1.0:
        # A split claim: no event reading one part can beat the whole claim, so the verdict
        # names what a test of one part against its own epsilon would need instead.
        result = dataclasses.replace(result, part=_part_test(agent, best.scenario, alpha))
    paths, differ = _compare_paths(agent, user)
    block_result = None
    if not best.scenario.keyed and _has_block(agent):
        # The test runs again through the block entry point, seeds unchanged: the actions
        # must be the same, and an action event is counted there too (releases are recorded
        # on act only; the path check compares the kernels' drawn noise with act's).
        block_sides = [
            play_scenario(
                agent,
                best.scenario,
                side=s,
                n_runs=n_test,
                seed=test_seed + s * n_test,
                multiplier=mult,
                block=True,
            )
            for s in (0, 1)
        ]
        differ = differ or _first_difference(sides, block_sides)
    if not best.scenario.keyed and _has_block(agent) and best.view == "actions":
        block_result = evaluate_event(
            best.selection,
            block_sides[0].actions,
            block_sides[1].actions,
            alpha=alpha,
            claimed_epsilon=float(claim.epsilon),
            claimed_delta=float(claim.delta),
            n_runs=n_test,
            share=_share(agent, best.scenario),
        )
    tree_check = None
    if part_tests and declared is not None and "tree" in _kinds(declared):
        tree_check = tree_counter_test(
            agent, params=user, runs=min(n_test, 20_000), seed=base + _TEST_SEED_OFFSET // 4,
            multiplier=mult, alpha=alpha,
        )  # fmt: skip
    query_check = ""
    if declared is not None and "sparse-vector" in _kinds(declared):
        query_check = query_sensitivity_check(agent, params=user)
    checked = None
    if part_tests and result.passed and not stale and not foreign:
        checked = part_level_test(
            agent,
            best.scenario,
            seed=base + _TEST_SEED_OFFSET // 2,
            multiplier=mult,
            alpha=alpha,
        )
    return AuditReport(
        agent=agent,
        multiplier=mult,
        result=result,
        chosen=best,
        candidates=candidates,
        claim=claim,
        selection_runs=n_sel,
        test_runs=n_test,
        scenarios_total=total,
        skipped=skipped,
        time_budget=budget,
        seconds=time.perf_counter() - began,
        declaration=declared.describe() if declared is not None else "",
        stale_noise=stale,
        foreign_noise=foreign,
        part_check=checked,
        paths=paths,
        paths_differ=differ,
        block_result=block_result,
        tree_check=tree_check,
        query_check=query_check,
    )


def _has_block(agent: str) -> bool:
    import agents

    entry = agents.spec(agent)
    name = "play_bandit_block" if entry.feedback == "bandit" else "play_block"
    return callable(getattr(entry.cls, name, None))


def _compare_paths(agent: str, params: Mapping[str, Any]) -> tuple[str, str]:
    """The path-equivalence check of ``check_agent`` (at ``params``): (what ran, what differs)."""
    from dp_experts_env.evaluation.paths import describe_settings
    from dp_experts_env.testing import path_reports

    found = path_reports(agent, dict(params))
    differ = [f"{label}: {r.describe()}" for label, r in found if not r.equal]
    return describe_settings(found), "; ".join(differ)


def _first_difference(act: Sequence[Outputs], block: Sequence[Outputs]) -> str:
    """Where the block path's test runs differ from act's (same seeds); "" when nowhere."""
    for side, (a, b) in enumerate(zip(act, block, strict=True)):
        differ = a.actions != b.actions
        if differ.any():
            run, t = np.argwhere(differ)[0]
            return (
                f"the audit's test runs: side {side}, run {run}: the block path plays "
                f"{b.actions[run, t]} at round {t + 1}, act {a.actions[run, t]}"
            )
    return ""


# --------------------------------------------------------------------------- pairs
def rival_pair(
    horizon: int, width: int, row: int, *, target: int = 0, background: float = 0.5
) -> tuple[np.ndarray, np.ndarray]:
    """One candidate gains while all its rivals lose: the worst case of a private selection.

    Every row is ``background`` except ``row``: on the input the target's loss is 1 and its
    rivals' 0; on the neighbour the target's is 0 and its rivals' 1 (every coordinate moves by
    the whole loss range, so an L1-calibrated release is tested at its sensitivity).
    """
    x = np.full((horizon, width), float(background))
    x[row] = 0.0
    x[row, target] = 1.0
    xp = x.copy()
    xp[row] = 1.0 - x[row]
    return x, xp


def flip_pair(
    horizon: int, width: int, row: int, *, background: float = 0.5
) -> tuple[np.ndarray, np.ndarray]:
    """Row ``row`` all zeros on the input, all ones on the neighbour.

    Whatever arm is played, its loss moves by 1: the worst case of a bandit learner's release.
    """
    x = np.full((horizon, width), float(background))
    x[row] = 0.0
    xp = x.copy()
    xp[row] = 1.0
    return x, xp


def complement_pair(
    horizon: int, width: int, row: int, *, seed: int = 12345
) -> tuple[np.ndarray, np.ndarray]:
    """A random public 0/1 sequence and its neighbour with row ``row`` complemented."""
    x = np.random.default_rng(seed).integers(0, 2, size=(horizon, width)).astype(float)
    xp = x.copy()
    xp[row] = 1.0 - xp[row]
    return x, xp


def _scenario(
    label: str,
    pair: tuple[np.ndarray, np.ndarray],
    params: Mapping[str, Any] | None = None,
    *,
    keyed: bool = False,
    advice: np.ndarray | None = None,
    runs: int | None = None,
) -> Scenario:
    x, xp = pair
    shown = ", ".join(
        f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}" for k, v in (params or {}).items()
    )
    n, t = x.shape[1], x.shape[0]
    size = f"K={n}" if advice is not None else f"N={n}"
    where = f"{label}, {size}, T={t}, changed round {_differing_row(x, xp)}"
    where += ", keyed to the previous action" if keyed else ""
    where += f"; {shown}" if shown else ""
    return Scenario(where, x, xp, dict(params or {}), keyed=keyed, advice=advice, runs=runs)


# --------------------------------------------------------------------------- declarations
def _spec_feedback(agent: str) -> str:
    import agents

    return str(agents.spec(agent).feedback)


def declaration_of(agent: str, params: Mapping[str, Any] | None = None) -> Any:
    """The mechanisms ``agent`` declares (``agent.declaration``) on a small game, or None.

    Built with N = 4 experts (K = 2 arms, N = 2 for bandit learners) and T = 8, or, if the
    learner refuses that game, N = K = 8 and T = 64, with ``params``; None when the learner
    declares nothing (an outside or older learner: the audit then runs its generic scenarios
    only and says so) or cannot be built with these parameters.
    """
    bandit = _spec_feedback(agent) == "bandit"
    games = ({"n": 2 if bandit else 4, "t": 8, "k": 2}, {"n": 8, "t": 64, "k": 8})
    for game in games:
        try:
            built = _build(agent, 1, 0, game, dict(params or {}))
        except (ValueError, TypeError):
            continue
        return getattr(built, "declaration", None)
    return None


def audit_hints(agent: str) -> Mapping[str, Any]:
    """The learner's declared audit hints (``audit_hints``; see :class:`agents.PrivateAgent`)."""
    import agents

    return dict(getattr(agents.spec(agent).cls, "audit_hints", {}) or {})


def _kinds(declaration: Any) -> list[str]:
    """Kinds of the declared leaf mechanisms, in declaration order, without repeats."""
    from dp_experts_env.privacy.declaration import leaves

    return list(dict.fromkeys(leaf.kind for leaf in leaves(declaration)))


def _share(agent: str, scenario: Scenario) -> float:
    """The largest composed part's share of the claim in ``scenario`` (1: not split).

    Read off the declaration of the learner built with the scenario's parameters
    (:func:`~dp_experts_env.privacy.declaration.largest_share`): a claim split among
    mechanisms that no single event family reads jointly (selections + a sparse vector) needs
    more power for a pass to carry information.
    """
    from dp_experts_env.privacy.declaration import largest_share

    declared = declaration_of(agent, scenario.params)
    return largest_share(declared) if declared is not None else 1.0


def _part_test(agent: str, scenario: Scenario, alpha: float) -> Any:
    """What a test of one declared part against its own epsilon would need (None: no such part).

    Computed from the declaration of the learner built with the scenario's parameters
    (:func:`~dp_experts_env.privacy.part_power.part_test`), never from its name.
    """
    from dp_experts_env.privacy.part_power import part_test

    declared = declaration_of(agent, scenario.params)
    return part_test(declared, alpha=alpha) if declared is not None else None


#: Runs per side in one learner built for a part-level test (memory stays flat at any total).
PART_CHUNK = 25_000


def _detector_of(built: Any, found: list[Any], part: Any) -> Any:
    """The recorded AboveThreshold instance that runs ``part`` (None: none matches)."""
    for inst in reversed(found):
        sigma = np.asarray(inst.sigma, dtype=np.float64)
        if (
            inst.num_runs == built.num_envs
            and inst.max_tops == part.positives
            and np.all(sigma == part.threshold_scale)
        ):
            return inst
    return None


def part_level_test(
    agent: str,
    scenario: Scenario,
    *,
    seed: int = 0,
    multiplier: float = 1.0,
    alpha: float = 1e-3,
) -> Any:
    """Test a split claim's sparse-vector part on the learner's own instance (None: no such part).

    Everything comes from the declaration of the learner as built with ``scenario``'s
    parameters (two experts, the scenario's horizon; the scenario's own shape if the learner
    refuses two): its sparse-vector parts that one event can read
    (:func:`~dp_experts_env.privacy.part_power.sparse_vector_parts`), for each the event a
    learner spending :data:`INCONCLUSIVE_FACTOR` x would show most cheaply
    (:func:`~dp_experts_env.privacy.part_power.sparse_vector_part_test`, computed before any
    run) and the run count (:func:`~dp_experts_env.privacy.part_power.part_runs`). The learner
    is built with ``2 x`` :data:`PART_CHUNK` runs at a time inside
    :func:`~dp_experts_env.privacy.mechanisms.recording_sparse_vectors`; the instance whose noise
    scales are the part's declared ones is driven with the event's queries on both sides
    (:func:`~dp_experts_env.privacy.part_power.run_sparse_vector_part`). The learner's noise
    backend (and a mutant's ``multiplier``) is the one it plays with; its query computation is
    not exercised (queries are placed by the test at the declared sensitivity).

    Returns:
        The :class:`~dp_experts_env.privacy.part_power.PartCheck` of the part with the cheapest
        event, or None (no split claim, no readable part, or no matching instance).
    """
    from dp_experts_env.privacy.mechanisms import recording_sparse_vectors
    from dp_experts_env.privacy.part_power import (
        PartCheck,
        part_runs,
        run_sparse_vector_part,
        sparse_vector_part_test,
        sparse_vector_parts,
    )

    began = time.process_time()
    params, _ = _noise_for(agent, scenario.params, multiplier, record=False)
    horizon, width = scenario.losses.shape

    def build(runs: int, at: int) -> tuple[Any, list[Any]]:
        with recording_sparse_vectors() as found:
            try:
                built = _build(agent, runs, at, {"n": 2, "t": horizon, "k": 2}, params)
            except (ValueError, TypeError):
                built = _build(agent, runs, at, {"n": width, "t": horizon, "k": width}, params)
        return built, found

    built, found = build(2, seed)
    declared = getattr(built, "declaration", None)
    if declared is None:
        return None
    plans = [(p, sparse_vector_part_test(p, alpha=alpha)) for p in sparse_vector_parts(declared)]
    plans = [(p, t) for p, t in plans if part_runs(t) and _detector_of(built, found, p)]
    if not plans:
        return None
    part, plan = min(plans, key=lambda pt: pt[1].runs)
    n_total = part_runs(plan)
    counts = [0, 0]
    done = 0
    while done < n_total:
        n = min(PART_CHUNK, n_total - done)
        built, found = build(2 * n, seed + 2 * done)
        check = run_sparse_vector_part(_detector_of(built, found, part), plan, alpha=alpha)
        counts[0] += check.counts[0]
        counts[1] += check.counts[1]
        done += n
    bound = float(epsilon_lower_bound(counts[0], counts[1], n_total, alpha=alpha))
    return PartCheck(
        plan, (counts[0], counts[1]), n_total, bound, alpha, time.process_time() - began
    )


@dataclass(frozen=True)
class TreeCheck:
    """:func:`tree_counter_test`: the learner's own tree counter audited on its releases.

    Attributes:
        horizon: the learner's T; items: the items its counter holds (T or T - 1).
        levels: the counter's levels. result: the test of the nodes holding item 1.
    """

    horizon: int
    items: int
    levels: int
    result: AuditResult

    @property
    def violation(self) -> bool:
        """True when the nodes show more than the counter's epsilon."""
        return not self.result.passed

    def describe(self) -> str:
        """One line for reports."""
        r = self.result
        word = "VIOLATION" if self.violation else "no violation"
        return (
            f"tree counter at T = {self.horizon} ({self.items} items, {self.levels} levels): "
            f"{word}, the nodes holding item 1 show epsilon >= {r.epsilon_lower_bound:.3f} "
            f"against the counter's {r.claimed_epsilon:g} ({r.n_heldout} runs per side)"
        )


def _tree_of(agent: Any) -> Any:
    from dp_experts_env.privacy.mechanisms import TreeCounter

    for value in vars(agent).values():
        if isinstance(value, TreeCounter):
            return value
    return None


def _tree_releases(agent: str, params: Mapping[str, Any], horizon: int, side: int, n: int,
                   seed: int, multiplier: float) -> tuple[np.ndarray, Any]:
    """Feed the learner's own counter its items; (n, 2, 1 + D) releases of item 1's nodes."""
    params, _ = _noise_for(agent, params, multiplier, False)
    built = _build(agent, n, seed, {"n": 2, "t": horizon, "k": 2}, params)
    tree = _tree_of(built)
    if tree is None:
        raise ScenarioRefused(f"{agent} holds no TreeCounter")
    change = np.full(tree.dim, tree.l1_sensitivity / tree.dim)
    exact_sum = np.zeros(tree.dim)
    exact, noisy = [], []
    for t in range(1, tree.horizon + 1):
        item = change if (t == 1 and side == 1) else np.zeros(tree.dim)
        exact_sum = exact_sum + item
        released = np.array(tree.add(np.broadcast_to(item, (n, tree.dim))))
        if t & (t - 1) == 0:  # t = 2^l: the released sum is the one node of level l
            exact.append(np.broadcast_to(exact_sum, (n, tree.dim)))
            noisy.append(released)
    key = np.zeros((n, 2, 1))
    values = np.stack([np.concatenate(exact, axis=1), np.concatenate(noisy, axis=1)], axis=1)
    return np.concatenate([key, values], axis=2), tree


def tree_counter_test(
    agent: str,
    *,
    params: Mapping[str, Any] | None = None,
    horizons: Sequence[int] = (3, 5),
    runs: int = 20_000,
    selection_runs: int = 4_000,
    alpha: float = 1e-3,
    seed: int = 0,
    multiplier: float = 1.0,
) -> TreeCheck | None:
    """Part-level test of a learner's binary-tree counter, on the learner's own instance.

    At each T (T = 3 and T = 2^m + 1: a counter of 2^m items holds item 1 in m + 1 nodes, the
    case a level count one short misses), the counter the learner built is fed its items
    directly, item 1 moved by the counter's L1 sensitivity between the sides, and the nodes
    holding item 1 (released at t = 1, 2, 4, ...) are tested with the Laplace
    likelihood-ratio events against the counter's own epsilon. Returns the strongest check
    (a violation if any), or None when the learner holds no counter.
    """
    params = {"epsilon": 1.0, **dict(params or {})}
    worst = None
    for i, horizon in enumerate(horizons):
        base = seed + 4 * i * (runs + selection_runs)
        try:
            sel = [
                _tree_releases(agent, params, horizon, s, selection_runs,
                               base + s * selection_runs, multiplier)[0]
                for s in (0, 1)
            ]  # fmt: skip
            test_seed = base + 2 * selection_runs
            test = [
                _tree_releases(agent, params, horizon, s, runs, test_seed + s * runs, multiplier)
                for s in (0, 1)
            ]
        except (ScenarioRefused, ValueError, TypeError):
            continue
        tree = test[0][1]
        eps = float(tree.epsilon)
        fams = release_families(sel[0][: selection_runs // 2], sel[1][: selection_runs // 2])
        chosen = select_event(fams, sel[0][selection_runs // 2 :], sel[1][selection_runs // 2 :],
                              n_test=runs, alpha=alpha, delta=0.0)  # fmt: skip
        result = evaluate_event(chosen, test[0][0], test[1][0], alpha=alpha, claimed_epsilon=eps,
                                claimed_delta=0.0, n_runs=runs)  # fmt: skip
        check = TreeCheck(horizon, int(tree.horizon), int(tree.levels), result)
        if worst is None or check.result.epsilon_lower_bound > worst.result.epsilon_lower_bound:
            worst = check
    return worst


def _above_threshold_of(agent: Any) -> Any:
    from dp_experts_env.privacy.mechanisms import AboveThreshold

    for value in vars(agent).values():
        if isinstance(value, AboveThreshold):
            return value
    return None


def query_sensitivity_check(
    agent: str,
    *,
    params: Mapping[str, Any] | None = None,
    horizon: int = 4,
    width: int = 2,
    values: Sequence[float] = (0.0, 1.0),
    seed: int = 0,
) -> str:
    """Brute force: the largest change of a sparse vector's query against its declaration.

    Every loss sequence of ``horizon`` rows over ``values`` (``width`` experts) and every
    neighbour (one row replaced by another row of ``values``) is played as one run, both sides
    with the same seed, on the learner's own detector (its ``AboveThreshold``, whose ``test``
    is watched); at each round whose history (actions, detector answers) is still the same on
    both sides, ``|q - q'|`` must not exceed the declared sensitivity of the sparse vector.
    Deterministic; returns "" when it holds (or nothing is declared), else the worst pair.
    """
    from dp_experts_env.privacy.declaration import leaves

    params = {"epsilon": 1.0, **dict(params or {})}
    declared = declaration_of(agent, params)
    parts = [m for m in leaves(declared) if m.kind == "sparse-vector"] if declared else []
    if not parts:
        return ""
    limit = max(float(m.sensitivity) for m in parts)
    rows = np.array(np.meshgrid(*[values] * width, indexing="ij")).reshape(width, -1).T
    seqs = rows[np.stack(np.meshgrid(*[np.arange(len(rows))] * horizon, indexing="ij"),
                         axis=-1).reshape(-1, horizon)]  # fmt: skip
    pairs = [(i, t, r) for i in range(len(seqs)) for t in range(horizon)
             for r in range(len(rows)) if not np.array_equal(rows[r], seqs[i, t])]  # fmt: skip
    x = seqs[[p[0] for p in pairs]]
    xp = x.copy()
    xp[np.arange(len(pairs)), [p[1] for p in pairs]] = rows[[p[2] for p in pairs]]
    n = len(pairs)
    runs = []
    for side in (x, xp):
        built = _build(agent, n, seed, {"n": width, "t": horizon, "k": width}, params)
        detector = _above_threshold_of(built)
        if detector is None:
            return ""
        seen: list[np.ndarray] = []
        test = detector.test

        def watched(queries: Any, test: Any = test, seen: list = seen) -> Any:
            seen.append(np.array(queries, dtype=np.float64))
            return test(queries)

        detector.test = watched
        actions, obs = [], np.zeros((n, width))
        for t in range(horizon):
            actions.append(np.asarray(built.act(obs)))
            obs = side[:, t]
        runs.append((np.stack(actions, axis=1), seen, detector))
    (a, qa, _), (b, qb, _) = runs
    worst, where = 0.0, ""
    for k, (q, qq) in enumerate(zip(qa, qb, strict=True)):
        same = np.all(a[:, : k + 2] == b[:, : k + 2], axis=1)  # actions up to the next round
        gap = np.where(same & np.isfinite(q) & np.isfinite(qq) & (q > -1e299), np.abs(q - qq), 0)
        j = int(np.argmax(gap))
        if gap[j] > worst:
            worst, where = float(gap[j]), f"query {k + 1}, pair {pairs[j]}"
    if worst > limit * (1 + 1e-9):
        return (
            f"a query moves by {worst:.6g} between neighbouring windows ({where}; brute force "
            f"over {n} pairs, T = {horizon}, N = {width}), above the declared sensitivity "
            f"{limit:g}"
        )
    return ""


def _releases(declaration: Any) -> bool:
    """True when a declared mechanism releases noisy values (the audit records them)."""
    from dp_experts_env.privacy.declaration import leaves

    return declaration is not None and any(leaf.releases for leaf in leaves(declaration))


def _opposite_pair(horizon: int, width: int, row: int) -> tuple[np.ndarray, np.ndarray]:
    """Expert 0 leads, then row ``row`` moves a sparse-vector query up (input) or down.

    Before ``row`` expert 0 has loss 0 and the rest 1/2 (the learner holds expert 0); at
    ``row`` the input charges expert 0 a full loss and frees expert 1 (the learner's window
    loss minus the best expert's rises by 2), the neighbour the opposite (it falls): two
    queries moving in opposite directions, the sparse vector's worst case. Rows after
    ``row`` keep every expert at 1/2, so later queries stay near the threshold.
    """
    x = np.full((horizon, width), 0.5)
    x[:row, 0] = 0.0
    x[row] = 0.5
    x[row, 0], x[row, 1] = 1.0, 0.0
    xp = x.copy()
    xp[row, 0], xp[row, 1] = 0.0, 1.0
    return x, xp


def _restart_chain(horizon: int, width: int, row: int) -> tuple[np.ndarray, np.ndarray]:
    """The leader changes every 4 rounds (a chain of detector restarts); ``row`` flips one."""
    x = np.full((horizon, width), 0.5)
    for t in range(horizon):
        x[t, (t // 4) % width] = 0.0
    xp = x.copy()
    xp[row] = 1.0 - x[row]
    return x, xp


def _sampling_scenarios(h: Mapping[str, Any]) -> list[Scenario]:
    # One data-dependent resample: the accountant charges the coin that reads the changed loss
    # and a draw of the exponential mechanism, both nearly tight with many rivals. The
    # evidence sits close to the claim, and these learners are cheap to play: large runs.
    base = dict(h.get("params", {}))
    top = float(h.get("p_top", 0.45))
    runs = h.get("runs")
    batches = tuple(h.get("batch_sizes", (None,)))
    out = []
    for n, p in ((32, top), (16, 0.3), (4, 0.2), (16, top), (4, 0.45)):
        for b in batches:
            params: dict[str, Any] = {"p": p, **base}
            t = 3
            if b is not None:
                params["batch_size"] = b
                t = 2 * b + 1
            out.append(_scenario("rival", rival_pair(t, n, 0), params, runs=runs))
    keyed: dict[str, Any] = {"p": 0.3, **base}
    if batches != (None,):
        keyed["batch_size"] = 1
    out.append(_scenario("rival", rival_pair(4, 8, 1, target=1), keyed, keyed=True, runs=runs))
    return out


def _tree_scenarios(h: Mapping[str, Any]) -> list[Scenario]:
    # T = 2^m + 1: the first loss enters all m + 1 tree nodes released before the last play;
    # the counter is fed all T items (T = 17, 33), not only the first few.
    p, x = dict(h.get("params", {})), {**h.get("params", {}), **h.get("exposed", {})}
    cap = int(h.get("max_horizon", 64))
    out = [
        _scenario("rival", rival_pair(5, 2, 0), p),
        _scenario("rival", rival_pair(9, 2, 0), p),
        _scenario("rival", rival_pair(5, 16, 0), x),
    ]
    out += [
        _scenario("rival, tree fed all T items", rival_pair(t, 2, 0), p)
        for t in (17, 33)
        if t <= cap
    ]
    return out


def _release_scenarios(h: Mapping[str, Any], bandit: bool) -> list[Scenario]:
    p, x = dict(h.get("params", {})), {**h.get("params", {}), **h.get("exposed", {})}
    cap = int(h.get("max_horizon", 64))
    if bandit:
        out = []
        if h.get("agree"):
            # Every expert recommends arm 0 and exploration is nearly uniform: the importance
            # weights 1/Q(arm 0) come close to the bound the noise is calibrated to.
            agree = np.array([[1.0, 0.0], [1.0, 0.0]])
            out += [
                _scenario(
                    "flip, all experts on arm 0",
                    flip_pair(2, 2, 0),
                    {**x, **v},
                    advice=agree,
                    runs=h.get("runs"),
                )
                for v in h.get("variants", [{}])
            ]
            return out + [_scenario("flip", flip_pair(2, 2, 0), p, advice=np.eye(2))]
        return out + [
            _scenario("flip", flip_pair(2, 2, 0), p, advice=np.eye(2)),
            _scenario("flip", flip_pair(3, 2, 0), p, advice=np.eye(2)),
            _scenario("flip", flip_pair(3, 4, 0), p, advice=np.eye(4)),
        ]
    return [
        _scenario("rival", rival_pair(3, 2, 0), p),
        _scenario("rival", rival_pair(3, 4, 0), p),
        _scenario("rival", rival_pair(min(64, cap), 16, 0), x),
        _scenario("rival, long game", rival_pair(min(32, cap), 4, 0), p),
    ]


def _selection_scenarios(h: Mapping[str, Any]) -> list[Scenario]:
    p = dict(h.get("params", {}))
    out = [
        _scenario("rival", rival_pair(4, 16, 0), p),
        _scenario("rival", rival_pair(4, 8, 0), p),
        _scenario("rival", rival_pair(4, 32, 0), p),
        _scenario("rival before an update", rival_pair(8, 8, 2), p),
        _scenario("rival in block 1", rival_pair(5, 16, 1), p),
    ]
    out += [_scenario("rival", rival_pair(4, 16, 0), {**p, **v}) for v in h.get("variants", [])]
    return out


def _sparse_vector_scenarios(h: Mapping[str, Any]) -> list[Scenario]:
    x = {**h.get("params", {}), **h.get("exposed", {})}
    cap = int(h.get("max_horizon", 64))
    long = min(32, cap)
    return [
        _scenario("rival", rival_pair(4, 8, 0), x),
        _scenario("rival before an update", rival_pair(8, 8, 2), x),
        _scenario("opposite-direction queries", _opposite_pair(min(16, cap), 4, 4), x),
        _scenario("restart chain", _restart_chain(long, 4, long // 2), x),
    ]


def derived_scenarios(agent: str, declaration: Any) -> list[Scenario]:
    """Scenarios derived from the declared mechanisms (and the learner's ``audit_hints``).

    Each declared kind brings the pairs where it is most exposed (docs/privacy.md §4): a lazy
    sampler one data-dependent resample; a tree T = 2^m + 1 and trees fed all T items; a
    Laplace release rival pairs, a high-rate long game and (bandits) flips; a selection rival
    pairs around an update; a sparse vector rival pairs, opposite-direction queries and a
    restart chain. None (no declaration) gives no derived scenario.
    """
    if declaration is None:
        return []
    h = audit_hints(agent)
    bandit = _spec_feedback(agent) == "bandit"
    builders: dict[str, Callable[[], list[Scenario]]] = {
        "sampling": lambda: _sampling_scenarios(h),
        "tree": lambda: _tree_scenarios(h),
        "laplace": lambda: _release_scenarios(h, bandit),
        "noisy-min": lambda: _selection_scenarios(h),
        "exponential": lambda: _selection_scenarios(h),
        "sparse-vector": lambda: _sparse_vector_scenarios(h),
    }
    out: list[Scenario] = []
    seen: set[str] = set()
    for kind in _kinds(declaration):
        for sc in builders.get(kind, list)():
            if sc.label not in seen:
                seen.add(sc.label)
                out.append(sc)
    return out


def swap_pair(horizon: int, width: int, row: int) -> tuple[np.ndarray, np.ndarray]:
    """Expert 0 leads every round; in ``row`` of the neighbour experts 0 and 1 swap losses.

    Every later cumulative comparison between the leader and its first rival moves by 2: a
    learner that re-reads the same loss in many releases (selections, restarts, windows)
    shows every one of them on a long game.
    """
    x = np.full((horizon, width), 0.5)
    x[:, 0] = 0.25
    xp = x.copy()
    xp[row, 0], xp[row, 1] = x[row, 1], x[row, 0]
    return x, xp


def _long_generic(bandit: bool) -> list[Scenario]:
    """The longer search for a learner that declares nothing: long games, T up to 64.

    A learner spending its claim over many releases of one loss shows it only on a game long
    enough to hold them; without a declaration the audit does not know which releases exist,
    so it tries swap and rival pairs with the change early (read by every later release) and
    in the middle, at T = 16, 32 and 64.
    """
    if bandit:
        eye = np.eye(2)
        return [
            _scenario("flip, long game", flip_pair(t, 2, r), advice=eye)
            for t in (16, 32, 64)
            for r in (0, t // 2)
        ]
    out = []
    for t in (16, 32, 64):
        out += [
            _scenario("swap, long game", swap_pair(t, 4, 0)),
            _scenario("rival, long game", rival_pair(t, 2, 0)),
            _scenario("swap, long game, middle", swap_pair(t, 4, t // 2)),
        ]
    return out


def _generic(agent: str, *, undeclared: bool = False) -> list[Scenario]:
    """Candidates for every learner.

    The first round, an update boundary, a leader flip after a long identical run, the last
    used round, the complement of a random row; a learner that declares nothing
    (``undeclared``) also gets the long games of :func:`_long_generic`.
    """
    import agents

    bandit = agents.spec(agent).feedback == "bandit"
    longer = _long_generic(bandit) if undeclared else []
    if bandit:
        eye = np.eye(2)
        return [
            _scenario("flip", flip_pair(4, 2, 0), advice=eye),
            _scenario("flip, middle", flip_pair(8, 2, 4), advice=eye),
            _scenario("rival", rival_pair(8, 2, 3), advice=eye),
            *longer,
        ]
    # Expert 0 leads every round; in round 7 of the neighbour it alone loses (a leader flip).
    lead = np.full((16, 8), 0.5)
    lead[:, 0] = 0.0
    flipped = lead.copy()
    flipped[7] = 0.0
    flipped[7, 0] = 1.0
    return [
        _scenario("rival", rival_pair(4, 2, 0)),
        _scenario("rival", rival_pair(4, 8, 0)),
        _scenario("rival before an update", rival_pair(8, 8, 6)),
        _scenario("leader flip after a long identical run", (lead, flipped)),
        _scenario("rival, last used round", rival_pair(8, 4, 6)),
        _scenario("complement of a random row", complement_pair(8, 4, 4)),
        *longer,
    ]


def default_scenarios(
    agent: str, *, epsilon: float = 1.0, mode: str | None = None
) -> list[Scenario]:
    """The default search of ``dp-experts audit`` for ``agent``: derived, then generic.

    The derived candidates come from the learner's declared mechanisms
    (:func:`derived_scenarios`; docs/privacy.md §4 says why each), first so that a short
    budget still tries them; the generic ones (first round, an update boundary, a leader flip
    after a long identical run, the last used round, a random row's complement) follow. A
    learner that declares nothing gets the generic ones only, with long games added.
    """
    params: dict[str, Any] = {"epsilon": epsilon}
    if mode is not None:
        params["mode"] = mode
    declared = declaration_of(agent, params)
    return derived_scenarios(agent, declared) + _generic(agent, undeclared=declared is None)
