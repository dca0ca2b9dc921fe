"""Family parameters are data: every family declares them once, and the declaration is the truth.

Each family's knobs (names and defaults) are written only in its frozen parameter dataclass; the
family constructor takes the sizes plus ``params`` (an instance of that dataclass) or the knobs
as keywords, which it resolves through the dataclass. These tests check, for every registered
family (found through the registry, so a new family is covered without editing this file), that
no constructor restates a knob, that the keyword path and the params path build the same game,
and that keywords are routed and refused by the declaration.
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
from dp_experts_env.envs.factory import build_game
from dp_experts_env.kinds import KINDS
from tests._family_cases import family_inputs

CASES = [(kind, name) for kind in ENV_KINDS for name in families(kind)]
IDS = [f"{kind}/{name}" for kind, name in CASES]
SIZES = ("n_experts", "horizon", "n_arms")


def _split(kind: str, family: str, horizon: int = 8) -> tuple[dict, dict]:
    """(sizes, knobs) of a small game of the family; the sizes are those the env resolved."""
    inputs = family_inputs(kind, family, horizon)
    adv = build_game(kind, family=family, **dict(inputs)).adversary
    sizes = {k: getattr(adv, k) for k in family_params(kind, family).SIZES}
    knobs = {k: v for k, v in inputs.items() if k not in SIZES}
    return sizes, knobs


@pytest.mark.parametrize(("kind", "family"), CASES, ids=IDS)
def test_the_constructor_declares_no_knob(kind: str, family: str) -> None:
    declared = family_params(kind, family)
    assert issubclass(declared, FamilyParams) and dataclasses.is_dataclass(declared)
    assert declared.__dataclass_params__.frozen
    signature = inspect.signature(family_factory(kind, family)).parameters
    named = {n: p for n, p in signature.items() if p.kind is not p.VAR_KEYWORD}
    # Sizes, `params` and a **knobs catch-all: a knob's name or default written in the
    # constructor would be a second declaration.
    assert set(named) == set(declared.SIZES) | {"params"}, sorted(named)
    assert named["params"].default is None
    assert any(p.kind is p.VAR_KEYWORD for p in signature.values())
    # The env fills the sizes a constructor needs (no default, or None); a replay family reads
    # its sizes from the data, so it fills none.
    needed = {
        k for k, p in named.items() if k in SIZES and p.default in (inspect.Parameter.empty, None)
    }
    assert set(declared.filled_sizes()) == needed


def _losses(adv, rounds: int = 4) -> np.ndarray:
    adv.reset([11, 12])
    out = []
    for _ in range(rounds):
        out.append(np.array(adv.next_round().losses, copy=True))
        if not adv.oblivious:
            adv.record(np.zeros(2, dtype=np.int64))
    return np.stack(out)


@pytest.mark.parametrize(("kind", "family"), CASES, ids=IDS)
def test_keywords_and_params_build_the_same_game(kind: str, family: str) -> None:
    factory, declared = family_factory(kind, family), family_params(kind, family)
    sizes, knobs = _split(kind, family)
    by_keywords = factory(**sizes, **knobs)
    by_params = factory(**sizes, params=declared.from_keywords(knobs))
    np.testing.assert_array_equal(_losses(by_keywords), _losses(by_params))
    with pytest.raises(TypeError, match="colour"):
        factory(**sizes, colour=1)
    with pytest.raises(TypeError, match="params must be a"):
        factory(**sizes, params=object())


def test_a_direct_call_names_the_bad_keyword_and_the_knobs() -> None:
    from dp_experts_env.adversaries.shifting import BernoulliGap, BernoulliGapParams

    message = r"'colour' is not a parameter of BernoulliGapParams.*'gap'"
    with pytest.raises(TypeError, match=message):
        BernoulliGap(3, 20, colour=1)
    with pytest.raises(TypeError, match="not both"):
        BernoulliGap(3, 20, BernoulliGapParams(), gap=0.2)
    assert BernoulliGap(3, 20, gap=0.2).gap.value == 0.2
    # A subclass family with another default gap reads its own declaration.
    from dp_experts_env.adversaries.stochastic import PrivacyDominated, PrivacyDominatedParams

    assert PrivacyDominated(3, 20).gap.value == PrivacyDominatedParams.gap


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
