"""An outsider's subclass is never played by its parent's block kernel (``block_entry``).

``dp_experts_env.block_entry.block_entry`` picks the block method the episode loop, the
``paths`` check and the audit call. Known answers, for every registered learner with a block path
(ppo aside: it trains a network):

* planted: a plug-in subclass whose ``_choose`` plays another action every third round, and one
  whose ``_learn`` reads other losses, play their own ``act`` through ``episode.play`` on the
  compiled path (regrets equal to a round-by-round rollout's, unlike the parent's) and pass
  ``check_agent``'s ``paths`` check (act is the path users run);
* harmless: a subclass overriding only ``__init__`` keeps the inherited block path (a spy on
  the block method counts the calls) with the parent's regrets.

And the rule's edges: the opt-in ``_block_path_covers`` honoured for the hooks it names only and
never inherited; a subclass with its own block method plays it; an instance-level hook.
"""

from __future__ import annotations

import contextlib
import dataclasses
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from conftest import rollout, use_jit_path

import agents
from dp_experts_env.block_entry import BLOCK_METHODS, block_entry, block_overrides
from dp_experts_env.evaluation import episode
from dp_experts_env.evaluation.paths import HOME_ENV
from dp_experts_env.testing import check_agent

RUNS, HORIZON, SEEDS = 3, 60, [5, 6, 7]


def _block_name(cls: type) -> str | None:
    for name in BLOCK_METHODS:
        if callable(getattr(cls, name, None)):
            return name
    return None


LEARNERS = [
    item["name"]
    for item in agents.available()
    if item["name"] != "ppo" and _block_name(agents.spec(item["name"]).cls)
]
#: Learners whose first 60 rounds do not depend on what ``_learn`` reads (uniform play; dp-se's
#: first epochs play every arm in turn): their ``_learn`` mutant is the parent's play there.
SAME_PLAY_AT_60 = {"uniform", "dp-se"}


def _env(feedback: str):
    env_id, params = HOME_ENV["full" if feedback == "any" else feedback]
    return gym.make_vec(
        env_id, num_envs=RUNS, vectorization_mode="vector_entry_point", horizon=HORIZON, **params
    )


def _choose_shifted(parent: type) -> type:
    """A plug-in subclass whose ``_choose`` plays another action every third round."""

    class ChooseShifted(parent):
        def _choose(self, obs):
            out = super()._choose(obs)
            if self.t % 3 != 2:
                return out
            if self.feedback == "oco":
                return -np.asarray(out)  # the box and the ball are symmetric about 0
            width = self.n_arms if self.feedback == "bandit" else self.n_experts
            return (np.asarray(out) + 1) % width

    return ChooseShifted


def _learn_flipped(parent: type) -> type:
    """A plug-in subclass whose ``_learn`` reads other losses (reversed, 1 - loss, -g) and
    draws one more uniform per run (a learner whose play ignores the losses at first)."""

    class LearnFlipped(parent):
        def _learn(self, obs):
            if getattr(self, "rng", None) is not None:
                self.rng.random((1,))
            if self.feedback == "oco":
                return super()._learn(-np.asarray(obs))
            if self.feedback == "bandit":
                return super()._learn(dataclasses.replace(obs, last_loss=1.0 - obs.last_loss))
            return super()._learn(np.ascontiguousarray(np.asarray(obs)[:, ::-1]))

    return LearnFlipped


def _init_only(parent: type) -> type:
    class InitOnly(parent):
        def __init__(self, *args, **kw):
            super().__init__(*args, **kw)

    return InitOnly


def _built(name: str, env, cls: type | None = None):
    """``name`` built from the env (seed 3); ``cls``: the same object as an instance of ``cls``.

    A plug-in subclass that overrides hooks only is the parent's object with another class.
    """
    agent = agents.make(name, env=env, seed=3)
    if cls is not None:
        agent.__class__ = cls
    return agent


def _episode_regret(agent, env) -> np.ndarray:
    curves = episode.play(env, agent, SEEDS, np.array([HORIZON]))
    return np.asarray(curves["static_regret"][-1], dtype=float)


def _rollout_regret(agent, env) -> np.ndarray:
    agent.reset()  # as the episode loop starts
    return np.asarray(rollout(agent, env=env, seed=SEEDS).info["static_regret"], dtype=float)


@pytest.fixture
def compiled(monkeypatch):
    use_jit_path("compiled", monkeypatch)
    env = _env("full")
    if not episode.uses_blocks(env):
        pytest.skip("the compiled path plays no blocks here")


@pytest.mark.parametrize("override", [_choose_shifted, _learn_flipped], ids=["_choose", "_learn"])
@pytest.mark.parametrize("name", LEARNERS)
def test_a_subclass_overriding_a_hook_plays_its_own_act(compiled, monkeypatch, name, override):
    spec = agents.spec(name)
    sub = override(spec.cls)
    method = _block_name(spec.cls)
    env = _env(spec.feedback)
    assert block_entry(_built(name, env), method) is not None  # the parent keeps its path
    assert block_entry(_built(name, env, sub), method) is None
    calls, _ = _spy_on(monkeypatch, spec.cls, method)
    played = _episode_regret(_built(name, env, sub), env)
    assert not calls  # the parent's block path never ran for the subclass
    assert played.tobytes() == _rollout_regret(_built(name, env, sub), env).tobytes()
    if not (override is _learn_flipped and name in SAME_PLAY_AT_60):
        assert played.tobytes() != _episode_regret(_built(name, env), env).tobytes()
    with _checkable(sub, spec) as target:
        report = check_agent(target, checks=["paths"])
    assert report.skipped["paths"].startswith(f"inherited {method} not played (overridden: _")


def _spy_on(monkeypatch, cls: type, method: str) -> tuple[list[int], Any]:
    """Count the calls of ``cls.method`` (for the test's duration); returns (calls, original)."""
    calls: list[int] = []
    original = getattr(cls, method)

    def spy(self, *args, **kw):
        calls.append(1)
        return original(self, *args, **kw)

    monkeypatch.setattr(cls, method, spy)
    return calls, original


@contextlib.contextmanager
def _checkable(cls: type, spec):
    """What ``check_agent`` takes for ``cls``: the class, or (OCO: its probe passes ``n_arms``,
    which OCO learners refuse) a name registered for the test and removed after it."""
    if spec.feedback != "oco":
        yield cls
        return
    import agents.registry as registry

    saved = dict(registry._REGISTRY)
    try:
        agents.register(f"test-{spec.name}-sub", private=spec.private, summary="a subclass")(cls)
        yield f"test-{spec.name}-sub"
    finally:
        registry._REGISTRY.clear()
        registry._REGISTRY.update(saved)


@pytest.mark.parametrize("name", LEARNERS)
def test_a_subclass_overriding_init_only_keeps_the_block_path(compiled, monkeypatch, name):
    spec = agents.spec(name)
    sub = _init_only(spec.cls)
    method = _block_name(spec.cls)
    env = _env(spec.feedback)
    assert block_overrides(sub, method) == ()
    calls, original = _spy_on(monkeypatch, spec.cls, method)
    played = _episode_regret(_built(name, env, sub), env)
    assert calls
    monkeypatch.setattr(spec.cls, method, original)
    assert played.tobytes() == _episode_regret(_built(name, env), env).tobytes()


# ----------------------------------------------------------------------------- the rule's edges
Hedge = agents.spec("hedge").cls


class _Declared(Hedge):
    """Harmless ``_choose`` (the parent's), declared covered: the inherited path is played."""

    _block_path_covers = frozenset({"_choose"})

    def _choose(self, obs):
        return super()._choose(obs)


class _DeclaredOther(Hedge):
    """Overrides ``_choose`` but declares ``_learn``: not covered."""

    _block_path_covers = frozenset({"_learn"})

    def _choose(self, obs):
        return super()._choose(obs)


class _Redeclared(_Declared):
    """Overrides ``_choose`` again: its parent's declaration does not cover its own override."""

    def _choose(self, obs):
        return super()._choose(obs)


class _OwnBlock(_Redeclared):
    """Its own block method (K act calls): it is the owner, its overrides its own to handle."""

    calls = 0

    def play_block(self, obs):
        type(self).calls += 1
        return np.stack([np.asarray(self.act(row), dtype=np.int64) for row in obs])


def test_the_opt_in_is_honoured_for_the_hooks_it_names_only():
    assert block_overrides(_Declared, "play_block") == ()
    assert block_overrides(_DeclaredOther, "play_block") == ("_choose (_DeclaredOther)",)
    assert block_overrides(_Redeclared, "play_block") == ("_choose (_Redeclared)",)
    agent = _Declared(4, 20, seed=1)
    assert block_entry(agent, "play_block") == agent.play_block
    assert block_entry(_DeclaredOther(4, 20, seed=1), "play_block") is None


def test_the_opt_in_plays_the_inherited_path_and_a_wrong_one_is_held_to_act(compiled, monkeypatch):
    env = _env("full")
    calls = []
    original = Hedge.play_block

    def spy(self, obs):
        calls.append(type(self))
        return original(self, obs)

    monkeypatch.setattr(Hedge, "play_block", spy)
    for cls in (_Declared, _DeclaredOther):
        episode.play(env, _built("hedge", env, cls), SEEDS, np.array([HORIZON]))
    assert set(calls) == {_Declared}
    assert check_agent(_Declared, checks=["paths"]).passed == ["paths"]


def test_a_subclass_with_its_own_block_method_plays_it(compiled):
    env = _env("full")
    assert block_overrides(_OwnBlock, "play_block") == ()
    agent = _built("hedge", env, _OwnBlock)
    assert block_entry(agent, "play_block") == agent.play_block
    _OwnBlock.calls = 0
    played = _episode_regret(agent, env)
    assert _OwnBlock.calls > 0
    assert played.tobytes() == _episode_regret(_built("hedge", env), env).tobytes()
    assert check_agent(_OwnBlock, checks=["paths"]).passed == ["paths"]


def test_a_hook_set_on_the_object_disables_the_inherited_path():
    agent = Hedge(4, 20, seed=1)
    agent._choose = lambda obs: np.zeros(agent.num_envs, dtype=np.int64)
    assert block_overrides(agent, "play_block") == ("_choose (instance)",)
    assert block_entry(agent, "play_block") is None
    assert block_entry(Hedge(4, 20, seed=1), "play_block") is not None


def test_a_mixin_placed_between_the_owner_and_its_bases_is_seen():
    """A mixin after the owner in the MRO but before the owner's base changes a base hook."""
    base = Hedge.__mro__[1]

    class Mixin(base):
        def _check_round(self, batch):
            return super()._check_round(batch)

    class Mixed(Hedge, Mixin):
        pass

    assert Mixed.__mro__.index(Mixin) > Mixed.__mro__.index(Hedge)
    assert block_overrides(Mixed, "play_block") == ("_check_round (test_a_mixin_placed_between_"
                                                    "the_owner_and_its_bases_is_seen.<locals>."
                                                    "Mixin)",)  # fmt: skip


def test_play_neutral_overrides_keep_the_path_and_other_names_are_refused():
    class Printed(Hedge):
        def __repr__(self):
            return "printed"

        @property
        def privacy(self):
            return super().privacy

    assert block_overrides(Printed, "play_block") == ()
    assert block_entry(agents.spec("uniform").cls, "play_block") is not None
    with pytest.raises(ValueError, match="name must be one of"):
        block_entry(Hedge(4, 20), "act")


@pytest.mark.parametrize(
    ("name", "override"),
    [("hedge", _learn_flipped), ("kl-ucb", _choose_shifted), ("thompson", _choose_shifted)],
)
def test_the_old_selection_played_the_parent_s_kernel(compiled, monkeypatch, name, override):
    """Control: choosing the block method by ``getattr`` alone (the loop before block_entry)
    plays these subclasses through the parent's kernel, unlike their ``act``. (svt-restart, an
    example once, now defers to a ``_choose`` override in its own kernel too.)"""

    def by_getattr(agent, method):
        entry = getattr(agent, method, None)
        return entry if callable(entry) else None

    spec = agents.spec(name)
    sub = override(spec.cls)
    env = _env(spec.feedback)
    monkeypatch.setattr(episode, "block_entry", by_getattr)
    played = _episode_regret(_built(name, env, sub), env)
    assert played.tobytes() != _rollout_regret(_built(name, env, sub), env).tobytes()


class _Picked(Hedge):
    """Built-in-like: ``_choose`` through a hook of its own (``_pick``), declared covered (it
    plays Hedge's choice, which Hedge's kernel recomputes without calling ``_pick``)."""

    _block_path_covers = frozenset({"_choose"})

    def _pick(self, chosen):
        return chosen

    def _choose(self, obs):
        return self._pick(super()._choose(obs))


class _PickShifted(_Picked):
    """A plug-in overriding the hook ``_Picked`` added (Hedge, the owner, has no ``_pick``)."""

    def _pick(self, chosen):
        return (np.asarray(chosen) + (self.t % 3 == 2)) % self.n_experts


def test_an_override_of_a_hook_a_built_in_added_plays_act(compiled):
    """Planted: Hedge's kernel never calls ``_pick``; looking only at the owner's names let
    ``_PickShifted`` through (played Hedge's choices). Built-ins' own such hooks are flagged too."""
    env = _env("full")
    assert block_overrides(_Picked, "play_block") == ()
    assert block_overrides(_PickShifted, "play_block") == ("_pick (_PickShifted)",)
    played = _episode_regret(_built("hedge", env, _PickShifted), env)
    assert played.tobytes() == _rollout_regret(_built("hedge", env, _PickShifted), env).tobytes()
    assert played.tobytes() != _episode_regret(_built("hedge", env), env).tobytes()
    agent = _built("hedge", env, _Picked)
    agent._pick = lambda chosen: chosen  # on the object: seen as well
    assert block_overrides(agent, "play_block") == ("_pick (instance)",)
    for name, hook in [("p-comw", "_sample"), ("dp-ftrl-oco", "_gaussian_step")]:
        sub = type("Sub", (agents.spec(name).cls,), {hook: lambda self, *a: None})
        assert block_overrides(sub, "play_block") == (f"{hook} (Sub)",)


def test_an_overridden_class_constant_only_a_kernel_reads_plays_act(monkeypatch):
    """Planted: ``_OVER_EXPERTS`` is read by the compiled tsallis-inf kernel, not by
    private-batched-bandit's ``act``; a subclass setting it played another learner in blocks.
    Harmless: constants read at construction or by claims only (PLAY_NEUTRAL) keep the path."""
    use_jit_path("compiled", monkeypatch)
    spec = agents.spec("private-batched-bandit")
    flipped = type("Flipped", (spec.cls,), {"_OVER_EXPERTS": True})
    env = _env("bandit")
    assert block_overrides(flipped, "play_bandit_block") == ("_OVER_EXPERTS (Flipped)",)
    played = _episode_regret(_built(spec.name, env, flipped), env)
    assert played.tobytes() == _rollout_regret(_built(spec.name, env, flipped), env).tobytes()
    renamed = type("Renamed", (spec.cls,), {"name": "x", "default_delta": 0.0, "audit_hints": {}})
    assert block_overrides(renamed, "play_bandit_block") == ()


class _HookOnObject(Hedge):
    """A plug-in choosing its ``_choose`` when built (set on the object): the class-level test
    of the audit (``_has_block``) passes, the object's (``block_entry``) refuses."""

    def __init__(self, *args, **kw):
        super().__init__(*args, **kw)
        self._choose = self._shifted

    def _shifted(self, obs):
        return (Hedge._choose(self, obs) + (self.t % 3 == 2)) % self.n_experts


def test_the_audit_s_block_replay_plays_act_where_users_runs_do():
    """Planted: the audit's block replay called the refused block method (None: a TypeError);
    it now plays what the episode loop plays for this object, its act."""
    from dp_experts_env.evaluation import audit

    rng = np.random.default_rng(0)
    losses = rng.random((30, 4))
    neighbor = losses.copy()
    neighbor[10] = 1.0 - neighbor[10]
    scenario = audit.Scenario("planted", losses, neighbor, {})

    def factory(n, seed):
        return _HookOnObject(4, 30, num_envs=n, seed=seed)

    assert block_entry(factory(2, 0), "play_block") is None
    act = audit.play_scenario(factory, scenario, side=0, n_runs=50, seed=3)
    block = audit.play_scenario(factory, scenario, side=0, n_runs=50, seed=3, block=True)
    assert block.actions.tobytes() == act.actions.tobytes()


class _AnytimeEta(Hedge):
    """Planted: a property over Hedge's instance attribute ``eta`` (a schedule of ``t``): act
    reads it every round, Hedge's kernel once per block."""

    @property
    def eta(self):
        return self._eta0 / np.sqrt(1.0 + self.t)

    @eta.setter
    def eta(self, value):
        self._eta0 = value


def test_a_new_property_shadowing_an_instance_attribute_plays_act(compiled):
    env = _env("full")
    assert block_overrides(_AnytimeEta, "play_block") == ("eta (_AnytimeEta)",)

    def built():
        agent = _built("hedge", env, _AnytimeEta)
        agent._eta0 = agent.__dict__["eta"]  # what __init__ would have stored through the setter
        return agent

    played = _episode_regret(built(), env)
    assert played.tobytes() == _rollout_regret(built(), env).tobytes()


class _FalselyDeclared(Hedge):
    """Declares a ``_choose`` Hedge's kernel never calls: the opt-in is trusted, so the block
    path is played -- and the ``paths`` check is what catches the false declaration."""

    _block_path_covers = frozenset({"_choose"})

    def _choose(self, obs):
        return (np.asarray(super()._choose(obs)) + (self.t % 3 == 2)) % self.n_experts


def test_a_false_declaration_is_caught_by_the_paths_check(compiled):
    from dp_experts_env.testing import ContractError

    assert block_overrides(_FalselyDeclared, "play_block") == ()
    with pytest.raises(ContractError, match="differs from act at round 3"):
        check_agent(_FalselyDeclared, checks=["paths"])


def test_an_init_editing_a_derived_value_is_caught_by_the_paths_check(compiled):
    """``__init__`` keeps the block path (PLAY_NEUTRAL); one that edits ``noise_sensitivity``
    after noisy-clipped-hedge derived the kernel's ``_run_scale`` from it parts the paths (act
    recomputes the scale, the kernel reads the stored one): the ``paths`` check is the net."""
    from dp_experts_env.testing import ContractError

    parent = agents.spec("noisy-clipped-hedge").cls

    class Edited(parent):
        def __init__(self, *args, n_arms=None, **kw):
            super().__init__(*args, **kw)
            self.noise_sensitivity *= 1.5

    assert block_overrides(Edited, "play_block") == ()
    with pytest.raises(ContractError, match="differs from act at round 2: drawn noise"):
        check_agent(Edited, checks=["paths"])
