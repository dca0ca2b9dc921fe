"""``check_agent``: the learner contract and the privacy audit, for any learner.

What Gymnasium's ``check_env`` is for environments, :func:`check_agent` is for learners
(docs/own_learner.md). The checks (:data:`CHECKS`, in order): ``claim`` (a private one names its
accountant and backend and certifies at most the epsilon asked for), ``actions``, ``horizon``,
``observations``, ``seeding``, ``batching`` (B runs seeded ``s`` equal single runs seeded
``s + b``), ``paths`` (a block entry point equals ``act``), ``monotone``, ``epsilon_inf``
(``epsilon_inf_limit = "name"`` must match that learner's regret) and ``audit``.
"""

from __future__ import annotations

import inspect
import math
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym
import numpy as np

import agents
import dp_experts_env  # noqa: F401 - registers the env ids
from agents.base import Agent, PrivacyClaim
from dp_experts_env.audit import audit_agent, audit_learner, rival_pair
from dp_experts_env.evaluation.episode import play
from dp_experts_env.evaluation.paths import HOME_ENV, describe_settings, learner_path_reports

__all__ = [
    "CHECKS",
    "AgentCheckReport",
    "ContractError",
    "check_agent",
    "contract_tests",
    "path_reports",
    "regret_by_epsilon",
]

#: The checks of :func:`check_agent`, in the order they run.
CHECKS = (
    "claim",
    "actions",
    "horizon",
    "observations",
    "seeding",
    "batching",
    "paths",
    "monotone",
    "epsilon_inf",
    "audit",
)
#: The env of the epsilon-monotonicity check, per feedback kind.
MONOTONE_ENV: dict[str, tuple[str, dict[str, Any]]] = {
    "full": ("DPExperts-Stochastic-v0", {"n_experts": 4, "gap": 0.3}),
    "any": ("DPExperts-Stochastic-v0", {"n_experts": 4, "gap": 0.3}),
    "bandit": ("DPExperts-Bandit-v0", {"n_arms": 3}),
    "oco": ("DPExperts-OCO-v0", {"dim": 3}),
}
#: Regret may rise between neighbouring epsilons by <= MONOTONE_SE paired standard errors, and
#: must fall from the smallest to the largest by > DROP_SE.
MONOTONE_SE, DROP_SE = 2.0, 3.0
#: runs of the monotone check's game replayed round by round through ``act`` (middle epsilon)
REPLAY_RUNS = 4
MONOTONE_EPSILONS = (0.1, 1.0, 100.0)
HORIZON = 40


class ContractError(AssertionError):
    """A learner broke the contract; ``check`` names the check (one of :data:`CHECKS`).

    ``passed`` lists the checks :func:`check_agent` ran and passed before this one, in order
    (so a test need not run them again to know that the failure is the first).
    """

    def __init__(
        self, check: str, target: str, message: str, passed: Sequence[str] = ()
    ) -> None:
        super().__init__(f"{target}: check {check!r} failed: {message}")
        self.check = check
        self.passed = list(passed)


@dataclass
class AgentCheckReport:
    """What :func:`check_agent` ran.

    Attributes:
        target: the learner (its name, or the factory's name).
        feedback: its feedback kind. private: whether it claims a finite epsilon at epsilon 1.
        passed: the checks run and passed, in order. skipped: check -> why it did not apply.
        audit: the audit report (private learners, when audited), else None.
        paths: what the ``paths`` check compared, per setting ("" when it did not run).
        power: what the audit's power self-check found (half the noise must be caught).
        warnings: the warnings also issued as ``UserWarning`` (no declared mechanisms, a
            power self-check that failed or could not run).
    """

    target: str
    feedback: str
    private: bool
    passed: list[str] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)
    audit: Any = None
    paths: str = ""
    power: str = ""
    warnings: list[str] = field(default_factory=list)


class _Target:
    """A learner under test: how to build it at a size, and what it is."""

    def __init__(self, name_or_factory: str | Callable[..., Agent], params: dict[str, Any]):
        self.params = dict(params)
        if isinstance(name_or_factory, str):
            entry = agents.spec(name_or_factory)  # unknown names raise, listing the learners
            self.name: str | None = name_or_factory
            self.label = name_or_factory
            self.cls: type | None = entry.cls
            self.feedback = entry.feedback
            self.private = entry.private
            self.factory: Callable[..., Agent] | None = None
        elif callable(name_or_factory):
            self.name = None
            self.factory = name_or_factory
            self.label = getattr(name_or_factory, "__qualname__", repr(name_or_factory))
            self.cls = name_or_factory if isinstance(name_or_factory, type) else None
            probe = self._factory_build(n_experts=4, horizon=HORIZON, seed=0, n_arms=3)
            self.feedback = str(getattr(probe, "feedback", "full"))
            # A class may declare it (as entry-point classes do); else its claim at the defaults.
            declared = getattr(name_or_factory, "private", None)
            claim = getattr(probe, "privacy", None)
            self.private = (
                declared if isinstance(declared, bool) else bool(getattr(claim, "is_private", 0))
            )
        else:
            raise TypeError(
                f"check_agent needs a registered learner name or a factory, got {name_or_factory!r}"
            )

    def _factory_build(self, **kw: Any) -> Agent:
        assert self.factory is not None
        kw = {**self.params, **kw}
        try:
            sig = inspect.signature(self.factory)
        except (TypeError, ValueError):  # builtins: pass everything
            return self.factory(**kw)
        takes_all = any(p.kind is p.VAR_KEYWORD for p in sig.parameters.values())
        if not takes_all:
            kw = {k: v for k, v in kw.items() if k in sig.parameters}
        return self.factory(**kw)

    def accepts(self, keyword: str) -> bool:
        fn = self.cls.__init__ if self.cls is not None else self.factory
        try:
            params = inspect.signature(fn).parameters  # type: ignore[arg-type]
        except (TypeError, ValueError):
            return True
        return keyword in params or any(p.kind is p.VAR_KEYWORD for p in params.values())

    def build(self, env: Any, *, seed: Any, epsilon: float | None = 1.0, **extra: Any) -> Agent:
        """The learner for ``env`` (a single or vector env of the suite)."""
        kw = {**self.params, **extra, "seed": seed}
        if self.private and epsilon is not None:
            kw["epsilon"] = epsilon
        if self.name is not None:
            return agents.make(self.name, env=env, **kw)
        base = env.unwrapped
        game = {"horizon": base.horizon, "num_envs": getattr(env, "num_envs", 1)}
        if base.feedback == "oco":
            game["dim"] = base.dim
        else:
            game["n_experts"] = base.n_experts
            if base.n_arms is not None:
                game["n_arms"] = base.n_arms
        return self._factory_build(**game, **kw)


def _env(
    feedback: str,
    *,
    num_envs: int | None = None,
    horizon: int = HORIZON,
    table: dict[str, tuple[str, dict[str, Any]]] = HOME_ENV,
    **extra: Any,
) -> Any:
    env_id, params = table[feedback]
    params = {"horizon": horizon, **params, **extra}
    if num_envs is None:
        return gym.make(env_id, **params)
    return gym.make_vec(
        env_id, num_envs=num_envs, vectorization_mode="vector_entry_point", **params
    )


def _play(agent: Agent, env: Any, seed: Any) -> tuple[np.ndarray, dict[str, Any]]:
    """Play one episode; (T, B[, d]) actions and the last info."""
    obs, info = env.reset(seed=seed)
    actions = []
    while True:
        action = agent.act(obs)
        actions.append(np.copy(action))
        obs, _, terminated, _, info = env.step(action)
        if np.all(terminated):
            return np.array(actions), info


def _check_claim(t: _Target, fail: Callable[[str], None]) -> None:
    env = _env(t.feedback)
    agent = t.build(env, seed=0)
    claim = getattr(agent, "privacy", None)
    if not isinstance(claim, PrivacyClaim):
        fail(f"agent.privacy must be an agents.PrivacyClaim, got {claim!r}")
    feedback = "full" if t.feedback in ("oco", "any") else t.feedback
    if t.feedback != "any" and claim.feedback != feedback:
        fail(f"the claim's feedback {claim.feedback!r} is not the learner's {feedback!r}")
    if claim.is_private != t.private:
        fail(f"registered private={t.private} but the claim says is_private={claim.is_private}")
    if not t.private:
        if claim.model != "none":
            fail(f"a non-private learner's claim must have model 'none', got {claim.model!r}")
        return
    if not (claim.certified and claim.accountant and claim.accountant != "none"):
        fail(f"a private claim must be certified and name its accountant: {claim.summary()}")
    if claim.noise_backend in ("", "none"):
        fail(f"a private claim must name the noise backend that ran: {claim.summary()}")
    if claim.epsilon > 1.0 * (1 + 1e-12):
        fail(f"asked for epsilon 1, the claim certifies epsilon {claim.epsilon:g} > 1")


def _check_actions(t: _Target, fail: Callable[[str], None]) -> None:
    env = _env(t.feedback)
    agent = t.build(env, seed=3)
    actions, info = _play(agent, env, seed=11)
    base = env.unwrapped
    if len(actions) != base.horizon or info.get("round") != base.horizon:
        fail(f"played {len(actions)} rounds of a {base.horizon}-round episode")
    if base.feedback == "oco":
        if actions.dtype.kind != "f" or actions.shape[-1] != base.dim:
            fail(f"continuous actions must be float vectors of dimension {base.dim}")
        if np.any(np.abs(actions) > base.radius):
            fail(f"an action left the feasible set (a coordinate beyond radius {base.radius})")
        return
    limit = base.n_arms or base.n_experts
    if actions.dtype.kind not in "iu" or actions.min() < 0 or actions.max() >= limit:
        fail(f"actions must be integers in [0, {limit}), got {np.unique(actions)[:10]}")
    fresh = t.build(env, seed=3)
    first = fresh.act(env.reset(seed=11)[0])
    if not isinstance(first, (int, np.integer)):
        fail(f"a single observation must get a Python int action, got {type(first).__name__}")


def _check_horizon(t: _Target, fail: Callable[[str], None]) -> None:
    env = _env(t.feedback, horizon=5)
    agent = t.build(env, seed=0)
    _play(agent, env, seed=0)
    obs, _ = env.reset(seed=1)
    try:
        agent.act(obs)
    except ValueError:
        return
    fail("act() for round T + 1 must raise ValueError (outside the claim and the tuning)")


def _check_observations(t: _Target, fail: Callable[[str], None]) -> None:
    env = _env(t.feedback)
    if env.unwrapped.feedback == "oco":
        raise _Skip("continuous actions: the OCO env checks its gradients")
    obs, _ = env.reset(seed=0)
    for bad_value in (math.nan, 2.0):
        agent = t.build(env, seed=0)
        agent.act(obs)
        if isinstance(obs, dict):
            bad = {**obs, "last_loss": np.full_like(np.asarray(obs["last_loss"], float), bad_value)}
        else:
            bad = np.full_like(np.asarray(obs, dtype=float), bad_value)
        try:
            agent.act(bad)
        except ValueError:
            continue
        fail(f"a loss of {bad_value} in the observation must raise ValueError")


def _check_seeding(t: _Target, fail: Callable[[str], None]) -> None:
    env = _env(t.feedback)
    runs = [_play(t.build(env, seed=s), env, seed=11)[0] for s in (5, 5, 6)]
    if not np.array_equal(runs[0], runs[1]):
        fail("the same seed must replay the same actions")
    agent = t.build(env, seed=5)
    _play(agent, env, seed=11)
    agent.reset(5)
    again = _play(agent, env, seed=11)[0]
    if not np.array_equal(again, runs[0]):
        fail("reset(seed) must replay the actions of a learner built with that seed")
    if t.private and np.array_equal(runs[0], runs[2]):
        longer = _env(t.feedback, horizon=400)
        a = _play(t.build(longer, seed=5), longer, seed=11)[0]
        b = _play(t.build(longer, seed=6), longer, seed=11)[0]
        if np.array_equal(a, b):
            fail(
                "seeds 5 and 6 give the same 400 actions: a private learner's randomness "
                "must come from its seed (is it ignored?)"
            )


def _check_batching(t: _Target, fail: Callable[[str], None]) -> None:
    venv = _env(t.feedback, num_envs=3)
    batched = _play(t.build(venv, seed=3), venv, seed=[11, 12, 13])[0]
    env = _env(t.feedback)
    for b in range(3):
        solo = _play(t.build(env, seed=3 + b), env, seed=11 + b)[0]
        if not np.array_equal(batched[:, b].reshape(-1), solo.reshape(-1)):
            fail(f"run {b} of a batch seeded 3 differs from a single run seeded {3 + b}")


def path_reports(t: _Target | str | Callable[..., Agent], params: dict[str, Any] | None = None):
    """The ``paths`` check's comparisons: a list of (setting, :class:`PathReport`)."""
    t = t if isinstance(t, _Target) else _Target(t, params or {})

    def build(env: Any, **setting: Any) -> Agent:
        kw = {**setting, **t.params}
        return t.build(env, seed=7, epsilon=kw.pop("epsilon", 1.0), **kw)

    return learner_path_reports(build, t.feedback, t.cls)


def _check_paths(t: _Target, fail: Callable[[str], None]) -> str:
    found = path_reports(t)
    if found and found[-1][1].method is None:
        raise _Skip(found[-1][1].describe())
    for label, report in found:
        if not report.equal:
            fail(f"the block path users run differs from act ({label}): {report.describe()}")
    return describe_settings(found)


def regret_by_epsilon(
    target: str | Callable[..., Agent],
    epsilons: Sequence[float] = MONOTONE_EPSILONS,
    *,
    runs: int = 32,
    horizon: int = 2000,
    params: dict[str, Any] | None = None,
) -> list[np.ndarray]:
    """Static regret of ``runs`` seeded runs (env seeds 100, 101, ...) at each epsilon.

    The runs play through the episode loop users' runs play (:func:`_final_regret`).
    """
    t = target if isinstance(target, _Target) else _Target(target, params or {})
    seeds = list(range(100, 100 + runs))
    out = []
    for epsilon in epsilons:
        env = _env(t.feedback, num_envs=runs, horizon=horizon, table=MONOTONE_ENV)
        agent = t.build(env, seed=0, epsilon=epsilon)
        out.append(_final_regret(agent, env, seeds))
        env.close()
    return out


def _final_regret(agent: Agent, env: Any, seeds: list[int]) -> np.ndarray:
    """(B,) static regret at the last round, played the way a user's run plays it.

    Through :func:`~dp_experts_env.evaluation.episode.play`, the episode loop of ``run_cells``:
    on the compiled path an oblivious env plays in blocks, through the learner's block entry
    point where it has one (``play_block``, ``play_bandit_block``; the ``paths`` check holds
    it to ``act``) and through ``act`` otherwise. An object without the ``num_envs`` and
    ``reset`` of the Agent contract plays round by round (:func:`_play`).
    """
    if not (hasattr(agent, "num_envs") and callable(getattr(agent, "reset", None))):
        return np.asarray(_play(agent, env, seed=seeds)[1]["static_regret"], dtype=float)
    horizon = int(env.unwrapped.horizon)
    curves = play(env, agent, seeds, np.array([horizon]))
    return np.asarray(curves["static_regret"][-1], dtype=float)


def _check_monotone(t: _Target, fail: Callable[[str], None], runs: int, horizon: int) -> None:
    if not t.private:
        raise _Skip("not private")
    regrets = regret_by_epsilon(t, runs=runs, horizon=horizon)
    _check_replay(t, fail, regrets, horizon)

    def paired(lo: int, hi: int) -> tuple[float, float]:
        diff = regrets[hi] - regrets[lo]
        return float(diff.mean()), float(diff.std(ddof=1) / math.sqrt(len(diff)))

    means = [round(float(r.mean()), 2) for r in regrets]
    for i in range(len(regrets) - 1):
        rise, se = paired(i, i + 1)
        if rise > MONOTONE_SE * se:
            fail(
                f"mean regret rises from epsilon {MONOTONE_EPSILONS[i]} to "
                f"{MONOTONE_EPSILONS[i + 1]}: {means} (paired s.e. {se:.2f})"
            )
    drop, se = paired(0, len(regrets) - 1)
    if not -drop > DROP_SE * se:
        fail(
            f"regret must fall from epsilon {MONOTONE_EPSILONS[0]} to {MONOTONE_EPSILONS[-1]} "
            f"by more than {DROP_SE} paired s.e.: {means} (s.e. {se:.2f})"
        )


def _check_replay(
    t: _Target, fail: Callable[[str], None], regrets: list[np.ndarray], horizon: int
) -> None:
    """The monotone check's regrets (the episode loop's) equal ``act``'s on its first runs.

    ``paths`` holds a block entry point to ``act`` on a short game; this holds the monotone
    check's own game (its env, horizon and middle epsilon) to ``act`` round by round. The
    replay starts as the episode loop does, with ``reset()`` (no seed: the streams continue,
    so a learner that draws in ``_init_state`` plays its second draw), which also catches a
    ``reset()`` that is not deterministic.
    """
    mid = len(regrets) // 2
    runs = min(REPLAY_RUNS, len(regrets[mid]))
    epsilon = MONOTONE_EPSILONS[mid]
    env = _env(t.feedback, num_envs=runs, horizon=horizon, table=MONOTONE_ENV)
    agent = t.build(env, seed=0, epsilon=epsilon)
    agent.reset()
    seeds = list(range(100, 100 + runs))
    by_act = np.asarray(_play(agent, env, seed=seeds)[1]["static_regret"], dtype=float)
    env.close()
    played = regrets[mid][:runs]
    if not np.array_equal(by_act, played):
        fail(
            f"at epsilon {epsilon} the episode loop's regrets of runs 0-{runs - 1} "
            f"{played.tolist()} differ from act's round by round {by_act.tolist()}: a block "
            "entry point unlike act past the paths check's short game, or a reset() without "
            "a seed that is not deterministic"
        )


def _check_epsilon_inf(t: _Target, fail: Callable[[str], None]) -> None:
    if not t.private:
        raise _Skip("not private")
    env = _env(t.feedback)
    agent = t.build(env, seed=0, epsilon=math.inf)
    claim = agent.privacy
    if claim.is_private or claim.noise_backend != "none" or claim.summary() != "not private":
        fail(f"at epsilon = inf the claim must say 'not private' with no noise: {claim}")
    a = _play(agent, env, seed=11)[0]
    b = _play(t.build(env, seed=0, epsilon=math.inf), env, seed=11)[0]
    if not np.array_equal(a, b):
        fail("at epsilon = inf the seed must fix the actions")
    limit = getattr(t.cls, "epsilon_inf_limit", None) if t.cls is not None else None
    if limit is None:
        return
    ours = regret_by_epsilon(t, (math.inf,), runs=32, horizon=1000)[0]
    theirs = regret_by_epsilon(limit, (math.inf,), runs=32, horizon=1000)[0]
    diff = ours - theirs
    se = diff.std(ddof=1) / math.sqrt(len(diff)) if diff.any() else 0.0
    if abs(diff.mean()) > 3 * se + 1e-9:
        fail(
            f"declares epsilon_inf_limit={limit!r} but its regret at epsilon = inf "
            f"({ours.mean():.2f}) differs from {limit!r}'s ({theirs.mean():.2f})"
        )


def _check_audit(t: _Target, fail: Callable[[str], None], audit: dict[str, Any]) -> Any:
    if not t.private:
        raise _Skip("not private")
    if t.name is None and t.feedback == "oco":
        raise _Skip("continuous-action factories: register the learner to audit it")
    if t.name is None:
        return _audit_factory(t, fail, audit)
    report = audit_learner(t.name, epsilon=1.0, params=t.params, **audit)
    if report.violation:
        fail(f"the privacy audit found a violation:\n{report.summary()}")
    return report


#: The power self-check builds the learner with its noise times this factor.
POWER_MULTIPLIER = 0.5
TOO_LOW = "audit power too low for this learner"


def _weakened(t: _Target) -> tuple[dict[str, Any], float] | None:
    """(learner keywords, audit multiplier) building ``t`` with half its noise, or None."""
    if t.accepts("noise"):
        return {}, POWER_MULTIPLIER
    if t.accepts("noise_multiplier"):
        return {"noise_multiplier": POWER_MULTIPLIER}, 1.0
    return None


def _power_check(t: _Target, report: Any, audit: dict[str, Any]) -> str:
    """Audit the learner built with half its noise on the scenario the audit chose."""
    weak = _weakened(t)
    if weak is None:
        return (
            f"{TOO_LOW}: unknown -- it takes neither a noise= nor a noise_multiplier keyword, "
            "so the audit cannot build it with half its noise to see that it would catch that "
            "(docs/own_learner.md)"
        )
    extra, multiplier = weak
    kw = {
        "runs": audit["runs"],
        "selection_runs": audit["selection_runs"],
        "time_budget": audit["time_budget"],
        "seed": audit["seed"] + 1,
    }
    if t.name is None:
        return _factory_power(t, extra, multiplier, audit)
    if t.feedback == "oco":
        # The OCO audit weakens a learner through its audit-only noise_multiplier itself.
        extra, multiplier, more = {}, POWER_MULTIPLIER, {}
    else:
        more = {"part_tests": False}
    weak_report = audit_learner(
        t.name, epsilon=1.0, params={**t.params, **extra}, multiplier=multiplier,
        scenarios=[report.chosen.scenario], **more, **kw,
    )  # fmt: skip
    bound = weak_report.result.epsilon_lower_bound
    claim = weak_report.result.claimed_epsilon
    if weak_report.violation:
        return (
            f"the learner built with half its noise is caught on the chosen scenario "
            f"(epsilon >= {bound:.3f} > claimed {claim:g})"
        )
    return (
        f"{TOO_LOW}: the learner built with half its noise shows only epsilon >= {bound:.3f} "
        f"(claimed {claim:g}) on the chosen scenario, so a pass says little; declare its "
        "mechanisms (docs/own_learner.md) or audit with more runs"
    )


def _factory_power(t: _Target, extra: dict[str, Any], multiplier: float, audit: dict) -> str:
    from dp_experts_env.privacy.noise import ScaledBackend, get_backend

    if not extra:
        base = t.params.get("noise", "fast")
        extra = {"noise": ScaledBackend(get_backend(base), multiplier)}
    weak = _Target(t.factory, {**t.params, **extra})  # type: ignore[arg-type]
    result = _audit_factory(weak, lambda message: None, audit, raise_on_violation=False)
    if not result.passed:
        return (
            f"the learner built with half its noise is caught on the given pair "
            f"(epsilon >= {result.epsilon_lower_bound:.3f} > claimed {result.claimed_epsilon:g})"
        )
    return (
        f"{TOO_LOW}: the learner built with half its noise shows only epsilon >= "
        f"{result.epsilon_lower_bound:.3f} (claimed {result.claimed_epsilon:g}) on the one pair "
        "an unregistered factory is audited on; register it and declare its mechanisms "
        "(docs/own_learner.md) for the full search"
    )


def _audit_factory(
    t: _Target,
    fail: Callable[[str], None],
    audit: dict[str, Any],
    *,
    raise_on_violation: bool = True,
) -> Any:
    """An unregistered factory: the audit of one given pair (a rival pair before an update)."""
    bandit = t.feedback == "bandit"
    width = 2 if bandit else 4
    losses, neighbor = rival_pair(8, width, 3)

    def make(num_envs: int, seed: int) -> Agent:
        game = {"n_experts": width, "horizon": 8, "num_envs": num_envs, "seed": seed}
        if bandit:
            game["n_arms"] = width
        return t._factory_build(**game, epsilon=1.0)

    runs = audit.get("runs") or 20_000
    result = audit_agent(
        make,
        losses,
        neighbor,
        n_runs=runs,
        alpha=audit.get("alpha", 1e-3),
        seed=audit.get("seed", 0),
        advice=np.eye(width) if bandit else None,
    )
    if not result.passed and raise_on_violation:
        fail(f"the privacy audit found a violation: epsilon >= {result.epsilon_lower_bound:.3f}")
    return result


class _Skip(Exception):
    """A check that does not apply to this learner (the reason is the message)."""


def check_agent(
    name_or_factory: str | Callable[..., Agent],
    *,
    params: dict[str, Any] | None = None,
    checks: Sequence[str] | None = None,
    skip: Sequence[str] = (),
    monotone_runs: int = 32,
    monotone_horizon: int = 2000,
    audit_runs: int = 20_000,
    audit_selection_runs: int = 2_000,
    audit_time_budget: float = 30.0,
    audit_seed: int = 0,
    power_check: bool = True,
) -> AgentCheckReport:
    """Run the learner contract and the privacy audit on a learner; raise on the first failure.

    Args:
        name_or_factory: a registered learner name, an :class:`~agents.Agent` subclass or a
            callable taking (those its signature names of) the keywords of ``agents.make``.
        params: extra learner keywords (``mode``, ``noise``, ...), used in every check.
        checks: run only these checks (default :data:`CHECKS`).
        skip: checks not to run (say why in your test).
        monotone_runs: seeded runs per epsilon of ``monotone``.
        monotone_horizon: rounds of those runs.
        audit_runs: test runs per side of the audit (the CLI uses 100,000).
        audit_selection_runs: runs per side scoring each candidate scenario.
        audit_time_budget: seconds for the audit's search.
        audit_seed: the audit's seed.
        power_check: after a passed audit, audit the learner with half its noise; not caught:
            ``report.power`` and a warning say "audit power too low for this learner".

    Returns:
        An :class:`AgentCheckReport`.

    Raises:
        ContractError: a check failed (``err.check`` names it; the message says what).
        ValueError: an unknown learner name or check name.
    """
    order = list(CHECKS if checks is None else checks)
    for name in [*order, *skip]:
        if name not in CHECKS:
            raise ValueError(f"check {name!r} is not one of {list(CHECKS)}")
    target = _Target(name_or_factory, params or {})
    report = AgentCheckReport(target.label, target.feedback, target.private)
    if target.private and not _declares(target):
        _warn(
            report,
            f"{target.label} declares no mechanisms (agent.declaration is None): the audit "
            "cannot derive its scenarios and checks from what the learner runs and falls back "
            "to a longer generic search, which misses what it does not try; declare them "
            "(docs/own_learner.md, 'Declare what runs')",
        )
    audit = {
        "runs": audit_runs,
        "selection_runs": audit_selection_runs,
        "time_budget": audit_time_budget,
        "seed": audit_seed,
    }
    for check in order:
        if check in skip:
            report.skipped[check] = "skipped by the caller"
            continue

        def fail(message: str, check: str = check) -> None:
            raise ContractError(check, target.label, message)

        try:
            if check == "monotone":
                _check_monotone(target, fail, monotone_runs, monotone_horizon)
            elif check == "audit":
                report.audit = _check_audit(target, fail, audit)
                if power_check and report.audit is not None:
                    report.power = _power_check(target, report.audit, audit)
                    if report.power.startswith(TOO_LOW):
                        _warn(report, f"{target.label}: {report.power}")
            elif check == "paths":
                report.paths = _check_paths(target, fail)
            else:
                _RUNNERS[check](target, fail)
        except _Skip as why:
            report.skipped[check] = str(why)
            continue
        except ContractError as err:
            err.passed = list(report.passed)
            raise
        except Exception as err:  # a crash is a failed check, named
            message = f"{type(err).__name__}: {err}"
            raise ContractError(check, target.label, message, report.passed) from err
        report.passed.append(check)
    return report


def _warn(report: AgentCheckReport, message: str) -> None:
    report.warnings.append(message)
    warnings.warn(message, UserWarning, stacklevel=3)


def _declares(t: _Target) -> bool:
    """True when the learner built at epsilon 1 on a small home game declares its mechanisms."""
    try:
        agent = t.build(_env(t.feedback if t.feedback != "any" else "full"), seed=0)
    except Exception:  # the claim check reports a learner that cannot be built
        return True
    return getattr(agent, "declaration", None) is not None


_RUNNERS: dict[str, Callable[[_Target, Callable[[str], None]], None]] = {
    "claim": _check_claim,
    "actions": _check_actions,
    "horizon": _check_horizon,
    "observations": _check_observations,
    "seeding": _check_seeding,
    "batching": _check_batching,
    "paths": _check_paths,
    "epsilon_inf": _check_epsilon_inf,
}


def contract_tests(
    name_or_factory: str | Callable[..., Agent], **options: Any
) -> Callable[[str], None]:
    """A pytest test function, one case per check of :func:`check_agent`, for your own CI.

    ``test_my_learner_contract = contract_tests("my-ftpl")`` in a test module; checks that do
    not apply are skipped. ``options`` go to :func:`check_agent`.
    """
    import pytest

    @pytest.mark.parametrize("check", CHECKS)
    def test_contract(check: str) -> None:
        report = check_agent(name_or_factory, checks=[check], **options)
        if check in report.skipped:
            pytest.skip(report.skipped[check])

    return test_contract
