"""Every family of every kind through the Gymnasium envs: the env contract, family by family.

The cases come from the family registry (``_family_cases.FAMILY_CASES``), so a new family is
tested here, and appears in these test ids, as soon as it is registered. The last test checks
that every registry-wide parametrisation of the env and adversary tests covers every family.
"""

from __future__ import annotations

import importlib

import gymnasium as gym
import numpy as np
import pytest
from _family_cases import FAMILY_CASES, FAMILY_IDS, all_family_pairs, case_id, family_inputs

from dp_experts_env.adversaries import ENV_KINDS, families, family_params
from dp_experts_env.envs import INFO_KEYS, MEANS_KEYS, SEGMENT_KEYS

HORIZON = 24
SEED = 11


def _play(env: gym.Env, actions: list[int], seed: int, options=None) -> list[tuple]:
    obs, _ = env.reset(seed=seed, options=options)
    out = [(obs, 0.0, {})]
    for a in actions:
        obs, reward, terminated, truncated, info = env.step(a)
        out.append((obs, reward, info))
    assert terminated and not truncated
    return out


def _actions(n: int, seed: int = 0) -> list[int]:
    return [int(a) for a in np.random.default_rng(seed).integers(n, size=HORIZON)]


def _same(x, y) -> bool:
    if isinstance(x, dict):
        return x.keys() == y.keys() and all(_same(x[k], y[k]) for k in x)
    return np.array_equal(np.asarray(x), np.asarray(y))


@pytest.mark.parametrize(("env_id", "kind", "family"), FAMILY_CASES, ids=FAMILY_IDS)
def test_single_env_contract(env_id: str, kind: str, family: str) -> None:
    env = gym.make(env_id, family=family, **family_inputs(kind, family, HORIZON))
    base = env.unwrapped
    assert (base.kind, base.family, base.horizon) == (kind, family, HORIZON)
    assert type(base.params) is family_params(kind, family)
    actions = _actions(env.action_space.n)
    episode = _play(env, actions, SEED)
    for t, (obs, reward, info) in enumerate(episode[1:], start=1):
        assert env.observation_space.contains(obs), (t, obs)
        assert set(INFO_KEYS) <= set(info)
        assert info["round"] == t and reward == -info["loss"]
        assert 0.0 <= info["loss"] <= 1.0
        adv = base.core.adversary
        # Means known: per-round-best pseudo-regret (and the static one on bandit envs).
        means = set(MEANS_KEYS if base.feedback == "bandit" else MEANS_KEYS[1:])
        assert (means <= set(info)) if adv.knows_means else not set(MEANS_KEYS) & set(info)
        if adv.has_segments:
            assert set(SEGMENT_KEYS) <= set(info)
    # The seed reproduces the episode bit for bit.
    again = _play(env, actions, SEED)
    for x, y in zip(episode, again, strict=True):
        assert all(_same(a, b) for a, b in zip(x, y, strict=True))


@pytest.mark.parametrize(("env_id", "kind", "family"), FAMILY_CASES, ids=FAMILY_IDS)
def test_vector_run_b_is_the_single_env_with_seed_plus_b(
    env_id: str, kind: str, family: str
) -> None:
    inputs = family_inputs(kind, family, HORIZON)
    b = 3
    vec = gym.make_vec(
        env_id, num_envs=b, vectorization_mode="vector_entry_point", family=family, **inputs
    )
    n = vec.single_action_space.n
    acts = np.stack([_actions(n, seed=r) for r in range(b)], axis=1)  # (T, B)
    obs, _ = vec.reset(seed=SEED)
    batched = [obs]
    rewards = []
    for t in range(HORIZON):
        obs, reward, *_ = vec.step(acts[t])
        batched.append(obs)
        rewards.append(reward)
    for r in range(b):
        single = _play(gym.make(env_id, family=family, **inputs), list(acts[:, r]), SEED + r)
        for t, (obs_1, reward_1, _) in enumerate(single):
            row = batched[t]
            row = {k: v[r] for k, v in row.items()} if isinstance(row, dict) else row[r]
            assert _same(obs_1, row), (r, t)
            if t:
                assert reward_1 == rewards[t - 1][r]


@pytest.mark.parametrize(("env_id", "kind", "family"), FAMILY_CASES, ids=FAMILY_IDS)
def test_a_neighbour_changes_nothing_before_its_round(env_id: str, kind: str, family: str) -> None:
    env = gym.make(env_id, family=family, **family_inputs(kind, family, HORIZON))
    base = env.unwrapped
    size = base.n_arms if base.feedback == "bandit" else base.n_experts
    t0 = HORIZON // 2
    options = {"neighbor": {"round": t0, "loss": np.linspace(0.0, 1.0, size)}}
    actions = _actions(env.action_space.n)
    plain, changed = _play(env, actions, SEED), _play(env, actions, SEED, options)
    for t in range(t0):  # observations up to round t0 - 1 (index t = after round t)
        assert _same(plain[t][0], changed[t][0]), t
    if base.feedback == "full" and base.core.adversary.oblivious:
        # Event-level neighbours: only round t0's loss vector differs, and it is the given one.
        assert np.array_equal(changed[t0][0], options["neighbor"]["loss"])
        for t in range(t0 + 1, HORIZON + 1):
            assert _same(plain[t][0], changed[t][0]), t


# Registry-wide parametrisations: (module, test function, the kinds it covers). Each must run
# every registered family of those kinds, so none can fall back to a hand list that misses one.
ALL_KINDS = tuple(ENV_KINDS)
REGISTRY_WIDE = [
    ("test_env_families", "test_single_env_contract", ALL_KINDS),
    ("test_env_families", "test_vector_run_b_is_the_single_env_with_seed_plus_b", ALL_KINDS),
    ("test_env_families", "test_a_neighbour_changes_nothing_before_its_round", ALL_KINDS),
    ("test_family_params", "test_the_constructor_declares_no_knob", ALL_KINDS),
    ("test_family_params", "test_keywords_and_params_build_the_same_game", ALL_KINDS),
    ("test_family_params", "test_unknown_keywords_are_refused_by_name", ALL_KINDS),
    ("test_env_lock", "test_episodes_unchanged", ALL_KINDS),
    ("test_block_steps", "test_blocks_equal_single_steps", ALL_KINDS),
    ("test_block_steps", "test_single_env_blocks_equal_single_steps", ALL_KINDS),
    ("test_adversaries_stochastic", "test_shapes_ranges_and_flags", ("shift", "stochastic")),
    ("test_adversaries_oblivious", "test_shapes_ranges_flags", ("oblivious",)),
    ("test_adversaries_oblivious", "test_independent_of_actions_seeds_and_batches", ("oblivious",)),
    ("test_adversaries_oblivious", "test_neighbor_replaces_exactly_one_round", ("oblivious",)),
    ("test_adversaries_adaptive", "test_shapes_ranges_and_flags", ("adaptive",)),
    ("test_adversaries_advice", "test_shapes_ranges_and_advice_rows", ("bandit_advice", "bandit")),
]
REGISTRY_WIDE_IDS = [f"{m}::{n}" for m, n, _ in REGISTRY_WIDE]


def _parametrised_pairs(func, kinds: tuple[str, ...]) -> set[tuple[str, str]]:
    """The (kind, family) pairs in a test function's parametrize marks.

    A case names its kind (``kind``), or its env id (``env_id``, whose registration names the
    kind), or only ``family`` when the test covers a single kind.
    """
    pairs: set[tuple[str, str]] = set()
    for mark in getattr(func, "pytestmark", []):
        if mark.name != "parametrize":
            continue
        names, values = mark.args[0], mark.args[1]
        names = [n.strip() for n in names.split(",")] if isinstance(names, str) else list(names)
        for value in values:
            row = dict(zip(names, value if len(names) > 1 else [value], strict=True))
            if "family" not in row:
                continue
            if "kind" in row:
                kind = row["kind"]
            elif "env_id" in row:
                kind = gym.spec(row["env_id"]).kwargs["kind"]
            else:
                (kind,) = kinds
            pairs.add((kind, row["family"]))
    return pairs


@pytest.mark.parametrize(("module", "name", "kinds"), REGISTRY_WIDE, ids=REGISTRY_WIDE_IDS)
def test_registry_wide_tests_cover_every_family(module: str, name: str, kinds: tuple) -> None:
    func = getattr(importlib.import_module(module), name)
    expected = {(k, f) for k, f in all_family_pairs() if k in kinds}
    missing = sorted(case_id(*p) for p in expected - _parametrised_pairs(func, kinds))
    assert missing == [], f"{module}::{name} does not run {missing}"


def test_the_coverage_check_sees_a_missing_family() -> None:
    # The check above must be able to fail: a parametrisation without one family is caught.
    @pytest.mark.parametrize(("env_id", "kind", "family"), FAMILY_CASES[1:])
    def partial(env_id, kind, family):  # pragma: no cover - never run
        pass

    @pytest.mark.parametrize("family", families("adaptive")[:-1])
    def partial_one_kind(family):  # pragma: no cover - never run
        pass

    _, kind, family = FAMILY_CASES[0]
    assert all_family_pairs() - _parametrised_pairs(partial, ENV_KINDS) == {(kind, family)}
    missing = {("adaptive", f) for f in families("adaptive")}
    missing -= _parametrised_pairs(partial_one_kind, ("adaptive",))
    assert missing == {("adaptive", families("adaptive")[-1])}
