"""Family parameters are data: every family declares them, and the declaration is the truth.

The env factory routes keywords by each family's parameter dataclass. These tests check, for
every registered family (found through the registry, so a new family is covered without editing
this file), that the declaration agrees with the constructor it feeds -- same knobs, same
defaults, same sizes -- and that keywords are routed and refused by it.
"""

from __future__ import annotations

import dataclasses
import inspect

import gymnasium as gym
import numpy as np
import pytest

import dp_experts_env  # noqa: F401  (registers the ids)
from dp_experts_env.adversaries import (
    ENV_KINDS,
    FamilyParams,
    families,
    family_factory,
    family_params,
    register_family,
)
from dp_experts_env.adversaries.adaptive import PolicyAdversary, PolicyAdversaryParams
from dp_experts_env.envs import ENV_KEYWORDS, EnvParams
from dp_experts_env.envs.common import SHARED_KEYWORDS_DOC
from dp_experts_env.kinds import KINDS

CASES = [(kind, name) for kind in ENV_KINDS for name in families(kind)]
IDS = [f"{kind}/{name}" for kind, name in CASES]
SIZES = ("n_experts", "horizon", "n_arms")


def _signature(factory) -> tuple[dict[str, object], dict[str, object]]:
    """(knob -> default, size -> default) of the constructor, following ``**knobs`` forwarding
    to the base class (a test-side check of what the factory no longer inspects)."""
    knobs: dict[str, object] = {}
    sizes: dict[str, object] = {}
    chain = [c.__init__ for c in factory.__mro__ if "__init__" in vars(c)] if isinstance(
        factory, type
    ) else [factory]
    for depth, func in enumerate(chain):
        params = inspect.signature(func).parameters
        for name, p in params.items():
            if name == "self" or p.kind in (p.VAR_KEYWORD, p.VAR_POSITIONAL):
                continue
            target = sizes if name in SIZES else knobs
            if depth == 0 or name not in SIZES:
                target.setdefault(name, p.default)
        if not any(p.kind is p.VAR_KEYWORD for p in params.values()):
            break
    return knobs, sizes


@pytest.mark.parametrize(("kind", "family"), CASES, ids=IDS)
def test_declaration_matches_the_constructor(kind: str, family: str) -> None:
    declared = family_params(kind, family)
    assert issubclass(declared, FamilyParams) and dataclasses.is_dataclass(declared)
    assert declared.__dataclass_params__.frozen
    knobs, sizes = _signature(family_factory(kind, family))
    defaults = {f.name: f.default for f in dataclasses.fields(declared)}
    if family == "sampled_stochastic":  # forwards the model's knobs: only `model` is its own
        defaults.pop("model_knobs")
    assert defaults == knobs
    assert set(declared.SIZES) == set(sizes)
    # The env fills the sizes a constructor needs (no default, or None); a replay family reads
    # its sizes from the data, so it fills none.
    needed = {k for k, d in sizes.items() if d is inspect.Parameter.empty or d is None}
    assert set(declared.filled_sizes()) == needed


@pytest.mark.parametrize(("kind", "family"), CASES, ids=IDS)
def test_unknown_keywords_are_refused_by_name(kind: str, family: str) -> None:
    declared = family_params(kind, family)
    with pytest.raises(TypeError, match=r"'colour' is not a parameter of family") as err:
        gym.make(KINDS[kind].env_id, family=family, colour=1)
    for knob in declared.knob_names():
        assert repr(knob) in str(err.value)


def test_the_params_record_the_knobs_in_use() -> None:
    env = gym.make("DPExperts-Shift-v0", gap=0.2, n_shifts=2).unwrapped
    assert type(env.params) is family_params("shift", "bernoulli_gap")
    assert (env.params.gap, env.params.n_shifts, env.params.base) == (0.2, 2, 0.5)
    assert env.core.adversary.n_shifts == 2
    with pytest.raises(dataclasses.FrozenInstanceError):
        env.params.gap = 0.3  # type: ignore[misc]
    inner = gym.make(
        "DPExperts-Oblivious-v0", family="sampled_stochastic", model="uniform_means", low=0.2
    ).unwrapped
    assert inner.params.model == "uniform_means" and inner.params.model_knobs == {"low": 0.2}
    assert inner.core.adversary.inner.low == 0.2


def test_policy_objects_are_routed_by_their_own_declaration() -> None:
    from dp_experts_env.adversaries.adaptive import PunishLastPolicy

    env = gym.make("DPExperts-Adaptive-v0", adversary=PunishLastPolicy(1), base="zeros").unwrapped
    assert isinstance(env.params, PolicyAdversaryParams) and env.params.base == "zeros"
    assert isinstance(env.core.adversary, PolicyAdversary)
    with pytest.raises(TypeError, match=r"'k' is not a parameter of PolicyAdversary.*'base'"):
        gym.make("DPExperts-Adaptive-v0", adversary=PunishLastPolicy(1), k=2)


def test_instances_have_no_params() -> None:
    from dp_experts_env.adversaries.shifting import BernoulliGap

    env = gym.make("DPExperts-Shift-v0", adversary=BernoulliGap(3, 20)).unwrapped
    assert env.params is None


def test_registering_a_family_without_a_declaration_is_refused() -> None:
    with pytest.raises(TypeError, match="must declare its parameters"):
        register_family("shift", "undeclared_test_family")(lambda n_experts, horizon: None)
    assert "undeclared_test_family" not in families("shift")


def test_env_keywords_are_declared_once_and_documented() -> None:
    assert ENV_KEYWORDS == tuple(f.name for f in dataclasses.fields(EnvParams))
    for name in ENV_KEYWORDS:
        assert f"{name}:" in SHARED_KEYWORDS_DOC, name
    # No family may take an env keyword other than a size as a knob (it would never reach it).
    for kind, family in CASES:
        clash = set(family_params(kind, family).knob_names()) & (set(ENV_KEYWORDS) - set(SIZES))
        assert not clash, (kind, family, clash)


def test_none_means_unset_only_for_the_former_env_keywords() -> None:
    env = gym.make("DPExperts-Shift-v0", gap=None, n_shifts=None).unwrapped
    assert env.params.gap == 0.1
    with pytest.raises(ValueError, match="base"):
        gym.make("DPExperts-Shift-v0", base=np.nan)
