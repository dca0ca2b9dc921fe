"""The kind table is the only list of kinds: every other layer reads it and agrees with it."""

from __future__ import annotations

import gymnasium as gym
import pytest

import dp_experts_env
from dp_experts_env.adversaries import ENV_KINDS, families
from dp_experts_env.adversaries.oco import OCO_FAMILIES
from dp_experts_env.envs import (
    BanditAdviceEnv,
    BanditAdviceVectorEnv,
    ExpertsEnv,
    ExpertsVectorEnv,
    feedback_of,
)
from dp_experts_env.kinds import FEEDBACKS, KINDS, kinds_of
from dp_experts_env.registration import ENVS, env_entry

KIND_NAMES = list(KINDS)


def test_every_kind_is_registered_once_under_its_id() -> None:
    assert [e.kind for e in ENVS] == KIND_NAMES
    assert [e.id for e in ENVS] == [KINDS[k].env_id for k in KIND_NAMES]
    assert len(set(dp_experts_env.ENV_IDS)) == len(KIND_NAMES)


def test_adversary_kinds_are_the_experts_and_bandit_rows() -> None:
    assert ENV_KINDS == tuple(k for k in KIND_NAMES if KINDS[k].feedback in ("full", "bandit"))
    assert kinds_of("full") + kinds_of("bandit") + kinds_of("oco") == tuple(KIND_NAMES)
    with pytest.raises(ValueError, match="feedback must be one of"):
        kinds_of("partial")


def test_env_classes_serve_the_kinds_of_their_feedback() -> None:
    for cls in (ExpertsEnv, ExpertsVectorEnv):
        assert cls.kinds == kinds_of("full")
    for cls in (BanditAdviceEnv, BanditAdviceVectorEnv):
        assert cls.kinds == kinds_of("bandit")
    with pytest.raises(ValueError, match="kind must be one of"):
        ExpertsEnv(kind="bandit")


@pytest.mark.parametrize("kind", KIND_NAMES)
def test_each_row_builds_what_it_declares(kind: str) -> None:
    spec = KINDS[kind]
    entry = env_entry(spec.env_id)
    feedback = FEEDBACKS[spec.feedback]
    assert (entry.entry_point, entry.vector_entry_point) == (
        feedback.entry_point,
        feedback.vector_entry_point,
    )
    assert entry.feedback == spec.feedback
    assert entry.defaults == {"family": spec.family, **spec.defaults}
    names = OCO_FAMILIES if spec.feedback == "oco" else families(kind)
    assert spec.family in names
    env = gym.make(spec.env_id).unwrapped
    if spec.feedback == "oco":
        assert (env.dim, env.horizon) == (spec.defaults["dim"], spec.defaults["horizon"])
        return
    assert feedback_of(kind) == spec.feedback
    assert (env.kind, env.family, env.feedback) == (kind, spec.family, spec.feedback)
    assert (env.n_experts, env.horizon, env.n_arms) == (spec.n_experts, spec.horizon, spec.n_arms)
    assert isinstance(env.observation_space, gym.spaces.Dict) == (spec.feedback == "bandit")
