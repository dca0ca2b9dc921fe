"""Environment protocol, seeding, neighbours, regret bookkeeping and validation.

Most tests run the envs over the small private loss models of ``env_fixtures`` so they check the
env mechanics alone; the registry-wide tests at the end run every registered id on its default
family.
"""

from __future__ import annotations

import copy
import itertools
import pickle
import warnings

import gymnasium as gym
import numpy as np
import pytest
from conftest import rollout
from env_fixtures import AdviceAdversary, CoinAdversary, PunishLastAdversary

import dp_experts_env
from dp_experts_env import (
    BanditAdviceEnv,
    BanditAdviceVectorEnv,
    ExpertsEnv,
    ExpertsVectorEnv,
    register_envs,
)
from dp_experts_env.envs import INFO_KEYS, MEANS_KEYS, build_game

# Experts ids only: the continuous DPExperts-OCO-v0 is covered by tests/test_oco_env.py.
IDS = [
    i
    for i in gym.registry
    if i in dp_experts_env.ENV_IDS and dp_experts_env.env_entry(i).feedback != "oco"
]
FULL_IDS = [i for i in IDS if dp_experts_env.env_entry(i).feedback == "full"]
OBLIVIOUS_IDS = [i for i in IDS if dp_experts_env.env_entry(i).kind != "adaptive"]

# (env class, vector class, kind, adversary factory)
CASES = {
    "shift": (ExpertsEnv, ExpertsVectorEnv, "shift", lambda: CoinAdversary(4, 12)),
    "adaptive": (ExpertsEnv, ExpertsVectorEnv, "adaptive", lambda: PunishLastAdversary(4, 12)),
    "advice": (
        BanditAdviceEnv,
        BanditAdviceVectorEnv,
        "bandit_advice",
        lambda: AdviceAdversary(5, 12, 3),
    ),
    "bandit": (
        BanditAdviceEnv,
        BanditAdviceVectorEnv,
        "bandit",
        lambda: AdviceAdversary(3, 12, 3, identity=True),
    ),
}


def make_single(case: str):
    cls, _, kind, factory = CASES[case]
    return cls(kind, adversary=factory())


def make_vector(case: str, num_envs: int):
    _, cls, kind, factory = CASES[case]
    return cls(num_envs, kind, adversary=factory())


def play(env, actions):
    """Step through ``actions``; return the list of (obs, reward, terminated, info)."""
    out = []
    for a in actions:
        obs, reward, terminated, truncated, info = env.step(a)
        assert truncated is False or not np.any(truncated)
        out.append((obs, reward, terminated, info))
    return out


def assert_same(x, y):
    """Exact equality of nested observation / info structures."""
    if isinstance(x, dict):
        assert x.keys() == y.keys()
        for k in x:
            assert_same(x[k], y[k])
    else:
        assert np.array_equal(np.asarray(x), np.asarray(y)), (x, y)


# ----------------------------------------------------------------------------- protocol
def test_full_information_protocol():
    env = make_single("shift")
    assert env.action_space == gym.spaces.Discrete(4)
    obs, info = env.reset(seed=3)
    assert info == {} and obs.dtype == np.float64 and np.array_equal(obs, np.zeros(4))
    twin = CoinAdversary(4, 12)
    twin.reset([3])
    rng = np.random.default_rng(0)
    for t in range(1, 13):
        a = int(rng.integers(4))
        losses = twin.next_round().losses[0]
        obs, reward, terminated, truncated, info = env.step(a)
        assert np.array_equal(obs, losses) and obs in env.observation_space
        assert type(reward) is float and reward == -losses[a]
        assert type(terminated) is bool and terminated == (t == 12)
        assert truncated is False
        # Full information: the per-round-best pseudo-regret only (docs/environments.md).
        assert list(info) == [*INFO_KEYS, *MEANS_KEYS[1:], "segment", "shift"]
        assert type(info["round"]) is int and info["round"] == t
        assert info["loss"] == losses[a]
        assert type(info["segment"]) is int and type(info["shift"]) is bool
        assert info["shift"] == (t == twin.tau + 1)
        assert all(type(info[k]) is float for k in INFO_KEYS[1:])
    with pytest.raises(RuntimeError, match="reset"):
        env.step(0)


def test_info_keys_without_means_or_segments():
    env = make_single("adaptive")
    env.reset(seed=0)
    *_, info = env.step(1)
    assert list(info) == list(INFO_KEYS)


def test_step_before_reset_is_refused():
    with pytest.raises(RuntimeError, match="reset"):
        make_single("shift").step(0)


@pytest.mark.parametrize("case", ["advice", "bandit"])
def test_bandit_protocol_shows_the_advice_of_the_round_about_to_be_played(case):
    env = make_single(case)
    n, k = env.n_experts, env.n_arms
    assert env.action_space == gym.spaces.Discrete(k)
    twin = CASES[case][3]()
    twin.reset([9])
    rnd = twin.next_round()
    obs, _ = env.reset(seed=9)
    assert obs in env.observation_space
    assert np.array_equal(obs["advice"], rnd.advice[0].reshape(n * k))
    assert obs["last_action"] == 0 and np.array_equal(obs["last_loss"], [0.0])
    rng = np.random.default_rng(1)
    for t in range(1, 13):
        a = int(rng.integers(k))
        obs, reward, terminated, _, info = env.step(a)
        assert obs in env.observation_space
        assert obs["last_action"] == a and obs["last_loss"][0] == rnd.losses[0, a]
        assert reward == -rnd.losses[0, a] and info["loss"] == rnd.losses[0, a]
        if t < 12:
            rnd = twin.next_round()
            assert np.array_equal(obs["advice"], rnd.advice[0].reshape(n * k))
        else:
            assert terminated and np.array_equal(obs["advice"], np.zeros(n * k))


def test_attributes_single_and_vector():
    for case, (single, vector, kind, factory) in CASES.items():
        for env in (single(kind, adversary=factory()), vector(3, kind, adversary=factory())):
            base = env.unwrapped
            adv = factory()
            assert (base.n_experts, base.horizon, base.n_arms) == (
                adv.n_experts,
                adv.horizon,
                adv.n_arms,
            )
            assert base.kind == kind and base.family == "custom"
            assert base.feedback == ("bandit" if adv.feedback == "bandit" else "full")
            assert base.n_switches == adv.default_switches, case
        assert env.num_envs == 3
        assert env.metadata["autoreset_mode"] == gym.vector.AutoresetMode.NEXT_STEP
        assert env.single_action_space == single(kind, adversary=factory()).action_space


def test_n_switches_sets_the_comparator_budget():
    env = ExpertsEnv("shift", adversary=CoinAdversary(4, 12), n_switches=3)
    assert env.n_switches == 3 and env.core.tracker.n_switches == 3


# ----------------------------------------------------------------------------- seeding
def random_actions(env, rounds, seed):
    rng = np.random.default_rng(seed)
    n = env.unwrapped.core.n_actions
    return [int(a) for a in rng.integers(n, size=rounds)]


@pytest.mark.parametrize("case", list(CASES))
def test_vector_run_b_equals_single_env_seeded_s_plus_b(case):
    b_runs, seed, horizon = 3, 40, 12
    vec = make_vector(case, b_runs)
    singles = [make_single(case) for _ in range(b_runs)]
    rng = np.random.default_rng(5)
    n = vec.single_action_space.n
    for episode in range(2):  # the second episode starts from reset(seed=None)
        obs_v, info_v = vec.reset(seed=seed if episode == 0 else None)
        for b, env in enumerate(singles):
            obs_s, _ = env.reset(seed=seed + b if episode == 0 else None)
            assert_same(_row(obs_v, b), obs_s)
        for _ in range(horizon):
            actions = rng.integers(n, size=b_runs)
            obs_v, rew_v, term_v, trunc_v, info_v = vec.step(actions)
            assert rew_v.shape == (b_runs,) and term_v.dtype == bool and not trunc_v.any()
            for b, env in enumerate(singles):
                obs_s, rew_s, term_s, _, info_s = env.step(int(actions[b]))
                assert_same(_row(obs_v, b), obs_s)
                assert rew_v[b] == rew_s and term_v[b] == term_s
                assert {k for k in info_v if not k.startswith("_")} == set(info_s)
                for key, value in info_s.items():
                    assert info_v[key][b] == value and info_v[f"_{key}"][b]
        assert term_v.all()


def _row(obs, b):
    if isinstance(obs, dict):
        return {k: v[b] for k, v in obs.items()}
    return obs[b]


def test_vector_env_autoresets_on_the_next_step():
    vec = make_vector("shift", 2)
    vec.reset(seed=0)
    for _ in range(12):
        _, _, term, _, _ = vec.step(np.zeros(2, dtype=np.int64))
    assert term.all()
    obs, rewards, term, trunc, info = vec.step(np.zeros(2, dtype=np.int64))
    assert np.array_equal(obs, np.zeros((2, 4))) and np.array_equal(rewards, [0.0, 0.0])
    assert not term.any() and not trunc.any() and info == {}
    _, _, _, _, info = vec.step(np.ones(2, dtype=np.int64))
    assert np.array_equal(info["round"], [1, 1])


def test_vector_reset_accepts_a_list_of_seeds():
    vec = make_vector("shift", 2)
    single = make_single("shift")
    vec.reset(seed=[11, 3])
    single.reset(seed=3)
    for _ in range(4):
        obs_v, *_ = vec.step(np.array([0, 1]))
        obs_s, *_ = single.step(1)
        assert np.array_equal(obs_v[1], obs_s)
    with pytest.raises(ValueError, match="one seed per run"):
        vec.reset(seed=[1, 2, 3])


@pytest.mark.parametrize("case", list(CASES))
def test_same_seed_reproduces_and_other_seed_differs(case):
    actions = random_actions(make_single(case), 12, 0)

    def episode(seed):
        env = make_single(case)
        env.reset(seed=seed)
        return play(env, actions)

    first, again, other = episode(7), episode(7), episode(8)
    for x, y in zip(first, again, strict=True):
        assert_same(x[0], y[0])
        assert_same(x[3], y[3])
    assert any(
        not np.array_equal(_flat(x[0]), _flat(y[0])) for x, y in zip(first, other, strict=True)
    )


def _flat(obs):
    if isinstance(obs, dict):
        return np.concatenate([np.ravel(v) for v in obs.values()])
    return obs


def test_unseeded_resets_continue_reproducibly_from_the_first_seed():
    actions = random_actions(make_single("shift"), 12, 1)

    def three_episodes():
        env = make_single("shift")
        env.reset(seed=21)
        out = [play(env, actions)]
        for _ in range(2):
            env.reset()
            out.append(play(env, actions))
        return out

    a, b = three_episodes(), three_episodes()
    for ep_a, ep_b in zip(a, b, strict=True):
        for x, y in zip(ep_a, ep_b, strict=True):
            assert_same(x[0], y[0])
    # Successive episodes are different games.
    assert not all(np.array_equal(x[0], y[0]) for x, y in zip(a[0], a[1], strict=True))


@pytest.mark.parametrize("case", list(CASES))
def test_pickle_mid_episode_reproduces_the_continuation(case):
    env = make_single(case)
    env.reset(seed=4)
    actions = random_actions(env, 12, 2)
    play(env, actions[:5])
    clone = pickle.loads(pickle.dumps(env))
    rest_a, rest_b = play(env, actions[5:]), play(clone, actions[5:])
    for x, y in zip(rest_a, rest_b, strict=True):
        assert_same(x[0], y[0])
        assert_same(x[3], y[3])
    vec = make_vector(case, 2)
    vec.reset(seed=4)
    vec.step(np.zeros(2, dtype=np.int64))
    vclone = pickle.loads(pickle.dumps(vec))
    for _ in range(3):
        x, y = vec.step(np.ones(2, dtype=np.int64)), vclone.step(np.ones(2, dtype=np.int64))
        assert_same(x[0], y[0])
        assert_same(x[4], y[4])


# ----------------------------------------------------------------------------- adversary types
def test_oblivious_losses_ignore_the_actions():
    def losses(actions):
        env = make_single("shift")
        env.reset(seed=2)
        return np.stack([o for o, *_ in play(env, actions)])

    assert np.array_equal(losses([0] * 12), losses(random_actions(make_single("shift"), 12, 3)))


def test_adaptive_losses_depend_on_past_actions_only():
    def losses(actions):
        env = make_single("adaptive")
        env.reset(seed=2)
        return np.stack([o for o, *_ in play(env, actions)])

    base = [0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3]
    changed = base[:6] + [3] + base[7:]  # round 7 differs
    a, b = losses(base), losses(changed)
    assert np.array_equal(a[:7], b[:7])  # rounds 1..7 cannot see round 7's action
    assert not np.array_equal(a[7], b[7])  # round 8 punishes a different expert


# ----------------------------------------------------------------------------- neighbours
@pytest.mark.parametrize("case", ["shift", "advice"])
def test_neighbor_option_replaces_one_round_and_nothing_else(case):
    env = make_single(case)
    actions = random_actions(env, 12, 4)
    size = env.core.adversary.datum_size
    vector = np.linspace(0.0, 1.0, size)
    env.reset(seed=6)
    base = play(env, actions)
    env.reset(seed=6, options={"neighbor": {"round": 5, "loss": vector}})
    nb = play(env, actions)
    for t, (x, y) in enumerate(zip(base, nb, strict=True), start=1):
        if t != 5:
            assert_same(x[0], y[0])
            assert x[1] == y[1]
    if case == "shift":
        assert np.array_equal(nb[4][0], vector)
    else:
        assert nb[4][1] == -vector[actions[4]]
    # Without the option, the original game comes back.
    env.reset(seed=6)
    for x, y in zip(base, play(env, actions), strict=True):
        assert_same(x[0], y[0])


def test_vector_neighbor_applies_to_every_run():
    vec = make_vector("shift", 2)
    vec.reset(seed=0, options={"neighbor": {"round": 1, "loss": [0.0, 0.5, 1.0, 0.25]}})
    obs, *_ = vec.step(np.array([0, 3]))
    assert np.array_equal(obs, [[0.0, 0.5, 1.0, 0.25]] * 2)


@pytest.mark.parametrize(
    "options, error, match",
    [
        ("neighbor", TypeError, "options must be a dict"),
        ({"neighbour": {}}, ValueError, "unknown reset option"),
        ({"neighbor": {"round": 0, "loss": [0.0] * 4}}, ValueError, r"neighbor\['round'\]"),
        ({"neighbor": {"round": 13, "loss": [0.0] * 4}}, ValueError, "<= 12"),
        ({"neighbor": {"round": 2, "loss": [0.0] * 3}}, ValueError, r"neighbor\['loss'\]"),
        ({"neighbor": {"round": 2, "loss": [0.0, 0.0, 0.0, 1.5]}}, ValueError, r"\[0.0, 1.0\]"),
        ({"neighbor": {"round": 2}}, ValueError, "'loss'"),
        ({"neighbor": 3}, TypeError, "neighbor must be"),
    ],
)
def test_bad_reset_options_raise_clear_errors(options, error, match):
    env = make_single("shift")
    with pytest.raises(error, match=match):
        env.reset(seed=0, options=options)
    with pytest.raises(error, match=match):
        make_vector("shift", 2).reset(seed=0, options=options)


@pytest.mark.parametrize("seed, error", [(-1, ValueError), (1.5, TypeError), (True, TypeError)])
def test_bad_seeds(seed, error):
    with pytest.raises(error, match="seed"):
        make_single("shift").reset(seed=seed)


# ----------------------------------------------------------------------------- regret
def brute_force_regret(losses, charged, n_switches):
    """Static, S-switch dynamic and per-round-best regret of every prefix by enumeration."""
    t_max, n = losses.shape
    seqs = np.array(list(itertools.product(range(n), repeat=t_max)))  # (n^T, T)
    seq_losses = losses[np.arange(t_max), seqs].cumsum(axis=1)
    switches = np.concatenate(
        [np.zeros((len(seqs), 1), int), np.cumsum(seqs[:, 1:] != seqs[:, :-1], axis=1)], axis=1
    )
    learner = np.cumsum(charged)
    static = learner - losses.cumsum(axis=0).min(axis=1)
    per_round = learner - losses.min(axis=1).cumsum()
    ok = switches <= n_switches
    dynamic = learner - np.where(ok, seq_losses, np.inf).min(axis=0)
    return static, dynamic, per_round


@pytest.mark.parametrize("n_switches", [0, 1, 2, 7])
def test_full_information_regret_matches_brute_force(n_switches):
    env = ExpertsEnv("shift", adversary=CoinAdversary(3, 8), n_switches=n_switches)
    env.reset(seed=n_switches)
    actions = random_actions(env, 8, 5)
    steps = play(env, actions)
    losses = np.stack([s[0] for s in steps])
    charged = losses[np.arange(8), actions]
    static, dynamic, per_round = brute_force_regret(losses, charged, n_switches)
    mu = env.core.adversary.mu[0]
    segs = (np.arange(1, 9) > env.core.adversary.tau).astype(int)
    pseudo = np.cumsum([mu[s, a] - mu[s].min() for s, a in zip(segs, actions, strict=True)])
    for t, (_, _, _, info) in enumerate(steps):
        assert info["cumulative_loss"] == pytest.approx(charged[: t + 1].sum(), abs=1e-12)
        assert info["static_regret"] == pytest.approx(static[t], abs=1e-12)
        assert info["dynamic_regret"] == pytest.approx(dynamic[t], abs=1e-12)
        assert info["per_round_best_regret"] == pytest.approx(per_round[t], abs=1e-12)
        assert info["per_round_best_pseudo_regret"] == pytest.approx(pseudo[t], abs=1e-12)
        assert "static_pseudo_regret" not in info
        assert info["segment"] == segs[t]


@pytest.mark.parametrize("case", ["advice", "bandit"])
def test_bandit_regret_uses_advice_weighted_expert_losses(case):
    horizon = 7 if case == "advice" else 8
    _, _, kind, _ = CASES[case]
    n, k = (4, 3) if case == "advice" else (3, 3)
    adv = AdviceAdversary(n, horizon, k, identity=case == "bandit")
    env = BanditAdviceEnv(kind, adversary=adv, n_switches=1)
    twin = AdviceAdversary(n, horizon, k, identity=case == "bandit")
    env.reset(seed=12)
    twin.reset([12])
    actions = random_actions(env, horizon, 6)
    rounds = [twin.next_round() for _ in range(horizon)]
    steps = play(env, actions)
    arm_losses = np.stack([r.losses[0] for r in rounds])
    advice = np.stack([r.advice[0] for r in rounds])
    expert_losses = np.einsum("tnk,tk->tn", advice, arm_losses)
    charged = arm_losses[np.arange(horizon), actions]
    static, dynamic, per_round = brute_force_regret(expert_losses, charged, 1)
    mu = twin.mu[0]
    expert_means = advice @ mu
    pseudo = np.cumsum(mu[actions] - expert_means.min(axis=1))
    static_pseudo = np.cumsum(mu[actions]) - np.cumsum(expert_means, axis=0).min(axis=1)
    for t, (_, _, _, info) in enumerate(steps):
        assert info["static_regret"] == pytest.approx(static[t], abs=1e-12)
        assert info["dynamic_regret"] == pytest.approx(dynamic[t], abs=1e-12)
        assert info["per_round_best_regret"] == pytest.approx(per_round[t], abs=1e-12)
        assert info["per_round_best_pseudo_regret"] == pytest.approx(pseudo[t], abs=1e-12)
        assert info["static_pseudo_regret"] == pytest.approx(static_pseudo[t], abs=1e-12)


# ----------------------------------------------------------------------------- validation
@pytest.mark.parametrize("bad", [4, -1, 1.0, True, np.float64(2.0), "1", None, np.array([0, 1])])
def test_bad_actions_raise_value_errors_naming_the_range(bad):
    env = make_single("shift")
    env.reset(seed=0)
    with pytest.raises(ValueError, match=r"action .*\[0, 3\]"):
        env.step(bad)
    # The round is still pending: a valid action plays it.
    *_, info = env.step(np.int64(3))
    assert info["round"] == 1


def test_single_env_accepts_numpy_integer_actions():
    env = make_single("shift")
    env.reset(seed=0)
    for a in (np.int32(1), np.array(2), np.array([3]), np.uint8(0)):
        env.step(a)


@pytest.mark.parametrize(
    "bad", [np.array([0, 4]), np.array([-1, 0]), np.array([0.0, 1.0]), np.array([0, 1, 2]), 1]
)
def test_bad_vector_actions(bad):
    vec = make_vector("shift", 2)
    vec.reset(seed=0)
    with pytest.raises(ValueError, match=r"action .*\[0, 3\]"):
        vec.step(bad)


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        ({"kind": "nope"}, ValueError, "kind must be one of"),
        ({"kind": "bandit"}, ValueError, "kind must be one of"),
        ({"render_mode": "human"}, ValueError, "render_mode"),
        ({"n_switches": -1}, ValueError, "n_switches must be >= 0"),
        ({"n_switches": 1.5}, TypeError, "n_switches must be an integer"),
        ({"n_arms": 3}, ValueError, "n_arms applies to bandit"),
        ({"n_experts": 5}, ValueError, "n_experts=5 contradicts"),
        ({"horizon": 7}, ValueError, "horizon=7 contradicts"),
        ({"family": "bernoulli_gap_xyz"}, ValueError, "family must be one of"),
        ({"gap": 0.1}, ValueError, "no effect when adversary is an Adversary"),
        ({"colour": "red"}, ValueError, "colour"),
    ],
)
def test_bad_constructor_keywords(kwargs, error, match):
    kwargs = {"kind": "shift", **kwargs}
    with pytest.raises(error, match=match):
        ExpertsEnv(adversary=CoinAdversary(4, 12), **kwargs)


def test_adversaries_must_fit_the_env():
    with pytest.raises(ValueError, match="reacts to the learner's actions"):
        ExpertsEnv("shift", adversary=PunishLastAdversary(3, 5))
    with pytest.raises(ValueError, match="needs full-information data"):
        ExpertsEnv("oblivious", adversary=AdviceAdversary(3, 5, 3))
    with pytest.raises(ValueError, match="needs bandit-information data"):
        BanditAdviceEnv("bandit_advice", adversary=CoinAdversary(3, 5))
    with pytest.raises(ValueError, match="n_experts=4 != n_arms=3"):
        BanditAdviceEnv("bandit", adversary=AdviceAdversary(4, 5, 3))
    with pytest.raises(ValueError, match="n_experts must equal n_arms"):
        BanditAdviceEnv("bandit", adversary=AdviceAdversary(3, 5, 3), n_experts=3, n_arms=4)
    with pytest.raises(TypeError, match="adversary must be an Adversary instance"):
        ExpertsEnv("shift", adversary="bernoulli_gap")
    with pytest.raises(TypeError, match="adversary must be an Adversary instance"):
        ExpertsEnv("shift", adversary=object())
    with pytest.raises(ValueError, match="num_envs must be >= 1"):
        ExpertsVectorEnv(0, "shift", adversary=CoinAdversary(3, 5))
    # An oblivious model is a legal (degenerate) adaptive adversary.
    assert ExpertsEnv("adaptive", adversary=CoinAdversary(3, 5)).kind == "adaptive"


def test_the_env_plays_on_its_own_copy_of_an_adversary_object():
    adv = CoinAdversary(3, 5)
    first, second = ExpertsEnv("shift", adversary=adv), ExpertsEnv("shift", adversary=adv)
    first.reset(seed=0)
    second.reset(seed=0)
    first.step(0)
    assert adv.num_runs == 0 and second.core.t == 0


def test_build_game_reports_unknown_kinds():
    with pytest.raises(ValueError, match="kind must be one of"):
        build_game("sideways")


# ----------------------------------------------------------------------------- registration
def test_six_ids_are_registered_with_native_vector_entry_points():
    assert set(IDS) >= {
        "DPExperts-Shift-v0",
        "DPExperts-Stochastic-v0",
        "DPExperts-Oblivious-v0",
        "DPExperts-Adaptive-v0",
        "DPExperts-BanditAdvice-v0",
        "DPExperts-Bandit-v0",
    }
    for env_id in IDS:
        spec = gym.spec(env_id)
        assert (
            spec.vector_entry_point and spec.kwargs["kind"] == dp_experts_env.env_entry(env_id).kind
        )


def test_registering_twice_does_not_warn():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        register_envs()
        register_envs()


def test_unknown_id_lookup():
    with pytest.raises(ValueError, match="env id must be one of"):
        dp_experts_env.env_entry("DPExperts-Nope-v0")


# ----------------------------------------------------------------------------- registered families
def _episode(env_id, actions, seed=3, **kwargs):
    env = gym.make(env_id, horizon=len(actions), **kwargs)
    env.reset(seed=seed)
    return play(env, actions)


@pytest.mark.parametrize("env_id", OBLIVIOUS_IDS)
def test_registered_oblivious_ids_ignore_the_actions(env_id):
    horizon = 40
    n = gym.make(env_id, horizon=horizon).action_space.n
    rng = np.random.default_rng(0)
    first, second = (list(map(int, rng.integers(n, size=horizon))) for _ in range(2))
    a, b = _episode(env_id, first), _episode(env_id, second)
    for t, (x, y) in enumerate(zip(a, b, strict=True)):
        if isinstance(x[0], dict):  # bandit: advice and the shared arms' losses agree
            assert np.array_equal(x[0]["advice"], y[0]["advice"])
            if first[t] == second[t]:
                assert x[1] == y[1]
        else:
            assert np.array_equal(x[0], y[0])


def test_registered_adaptive_id_reacts_to_past_actions_only():
    horizon, t_change = 30, 10
    base = [int(a) for a in np.random.default_rng(1).integers(10, size=horizon)]
    changed = list(base)
    changed[t_change - 1] = (base[t_change - 1] + 1) % 10
    for kwargs in ({}, {"base": "zeros"}):
        a = _episode("DPExperts-Adaptive-v0", base, **kwargs)
        b = _episode("DPExperts-Adaptive-v0", changed, **kwargs)
        losses_a, losses_b = np.stack([x[0] for x in a]), np.stack([x[0] for x in b])
        assert np.array_equal(losses_a[:t_change], losses_b[:t_change])
    # Zero base losses: round t+1 charges exactly the expert played at round t.
    assert np.flatnonzero(losses_a[t_change]).tolist() == [base[t_change - 1]]
    assert np.flatnonzero(losses_b[t_change]).tolist() == [changed[t_change - 1]]


@pytest.mark.parametrize("env_id", IDS)
def test_state_is_bounded_for_a_million_rounds(env_id):
    n = 100
    kwargs = {"n_experts": n} if env_id != "DPExperts-Bandit-v0" else {"n_arms": n}
    sizes = {}
    for horizon in (10**3, 10**6):
        env = gym.make(env_id, horizon=horizon, **kwargs)
        base = env.unwrapped
        assert base.n_experts == n
        env.reset(seed=0)
        for _ in range(2_000 if horizon > 10**3 else 500):
            env.step(env.action_space.sample())
        sizes[horizon] = base.core.state_nbytes()
    # Nothing of size T is held: the state at T = 10^6 is that of T = 10^3 (up to O(log T)
    # schedules) and small in absolute terms.
    assert sizes[10**6] <= sizes[10**3] + 64 * 1024, sizes
    assert sizes[10**6] < 4 * 2**20, sizes


def test_family_keywords_reach_the_family_and_unknown_ones_are_named():
    env = gym.make("DPExperts-Adaptive-v0", family="punish_frequent", window=5, n_punished=2)
    assert env.unwrapped.family == "punish_frequent"
    assert env.unwrapped.core.adversary.policy.n_punished == 2
    with pytest.raises(
        TypeError, match=r"'colour' is not a parameter of family 'punish_last'.*'k'"
    ):
        gym.make("DPExperts-Adaptive-v0", colour="red")
    with pytest.raises(TypeError, match="'n_shifts' is not a parameter"):
        gym.make("DPExperts-BanditAdvice-v0", n_shifts=2)
    env = gym.make("DPExperts-BanditAdvice-v0", family="shifting_planted_expert", n_shifts=2)
    assert env.unwrapped.n_switches == 2
    with pytest.raises(TypeError, match="'colour' is not a parameter of family"):
        gym.make("DPExperts-BanditAdvice-v0", family="shifting_planted_expert", colour=1)
    with pytest.raises(ValueError, match="family must be one of"):
        gym.make("DPExperts-Adaptive-v0", family="no_such_family")
    with pytest.raises(ValueError, match="gap"):
        gym.make("DPExperts-Bandit-v0", gap=2.0)


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        ({"n_experts": 0}, ValueError, "n_experts must be >= 1"),
        ({"n_experts": 2.5}, TypeError, "n_experts must be an integer"),
        ({"horizon": 0}, ValueError, "horizon must be >= 1"),
        ({"horizon": "10"}, TypeError, "horizon must be an integer"),
        ({"n_switches": -2}, ValueError, "n_switches must be >= 0"),
        ({"family": 3}, TypeError, "family must be a string"),
        ({"n_arms": 2}, ValueError, "n_arms applies to bandit"),
    ],
)
def test_bad_shared_keywords_on_a_registered_id(kwargs, error, match):
    with pytest.raises(error, match=match):
        gym.make("DPExperts-Adaptive-v0", **kwargs)


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        ({"n_shifts": -1}, ValueError, "n_shifts must be >= 0"),
        ({"n_shifts": 1.5}, TypeError, "n_shifts must be an integer"),
        ({"n_shifts": 5000}, ValueError, "n_shifts must be <="),
        ({"gap": -0.1}, ValueError, "gap must be > 0"),
        ({"adversary": "punish_last"}, TypeError, "family="),
    ],
)
def test_bad_family_keywords_on_the_shift_id(kwargs, error, match):
    with pytest.raises(error, match=match):
        gym.make("DPExperts-Shift-v0", **kwargs)


def test_bad_num_envs():
    for bad, error in ((0, ValueError), (2.0, TypeError)):
        with pytest.raises(error, match="num_envs"):
            gym.make_vec(
                "DPExperts-Shift-v0", num_envs=bad, vectorization_mode="vector_entry_point"
            )


def test_bandit_sizes():
    env = gym.make("DPExperts-Bandit-v0", n_experts=4).unwrapped
    assert env.n_experts == env.n_arms == 4
    env = gym.make("DPExperts-Bandit-v0", n_arms=3).unwrapped
    assert env.n_experts == env.n_arms == 3
    with pytest.raises(ValueError, match="n_experts must equal n_arms"):
        gym.make("DPExperts-Bandit-v0", n_experts=4, n_arms=3)
    env = gym.make("DPExperts-BanditAdvice-v0", n_experts=7, n_arms=3).unwrapped
    assert (env.n_experts, env.n_arms) == (7, 3)
    assert env.observation_space["advice"].shape == (21,)
    with pytest.raises(ValueError, match="n_arms must be >= 2"):
        gym.make("DPExperts-BanditAdvice-v0", n_arms=1)


def test_adaptive_env_takes_a_family_name_or_a_policy_object():
    from dp_experts_env.adversaries.adaptive import PunishLastPolicy

    env = gym.make("DPExperts-Adaptive-v0", adversary="punish_frequent")
    assert env.unwrapped.family == "punish_frequent"
    with pytest.raises(ValueError, match="name different families"):
        gym.make("DPExperts-Adaptive-v0", adversary="punish_frequent", family="punish_last")
    policy = PunishLastPolicy(2)
    env = gym.make("DPExperts-Adaptive-v0", adversary=policy, n_experts=3, horizon=20, base="zeros")
    assert env.unwrapped.family == "policy" and env.unwrapped.n_experts == 3
    env.reset(seed=0)
    obs = [env.step(a)[0] for a in (0, 1, 2, 0)]
    assert np.array_equal(obs[2], [1.0, 1.0, 0.0])  # rounds 1 and 2 played experts 0 and 1
    with pytest.raises(TypeError, match="policy must be an AdaptivePolicy"):
        gym.make("DPExperts-Adaptive-v0", adversary=object())
    with pytest.raises(TypeError, match="'colour' is not a parameter of PolicyAdversary"):
        gym.make("DPExperts-Adaptive-v0", adversary=policy, colour=1)


def test_registered_family_objects_keep_their_family_name():
    from dp_experts_env.adversaries.bandit import BanditBernoulliGap

    env = gym.make("DPExperts-Bandit-v0", adversary=BanditBernoulliGap(None, 50, 3, gap=0.2))
    assert env.unwrapped.family == "bernoulli_gap" and env.unwrapped.n_arms == 3


def test_make_vec_gives_the_native_vector_env_with_public_attributes():
    venv = gym.make_vec(
        "DPExperts-BanditAdvice-v0", num_envs=4, vectorization_mode="vector_entry_point"
    )
    assert isinstance(venv, BanditAdviceVectorEnv) and venv.num_envs == 4
    assert (venv.n_experts, venv.n_arms, venv.horizon, venv.feedback) == (20, 5, 1000, "bandit")
    assert venv.single_observation_space["advice"].shape == (100,)
    venv = gym.make_vec("DPExperts-Shift-v0", num_envs=2, vectorization_mode="vector_entry_point")
    assert isinstance(venv, ExpertsVectorEnv) and venv.n_arms is None


def test_agents_read_the_game_from_single_and_vector_envs():
    import agents

    env = gym.make("DPExperts-Shift-v0", n_experts=6, horizon=50)
    agent = agents.make("hedge", env=env, seed=0)
    assert (agent.n_experts, agent.horizon, agent.num_envs) == (6, 50, 1)
    venv = gym.make_vec(
        "DPExperts-Bandit-v0", num_envs=3, vectorization_mode="vector_entry_point", n_arms=4
    )
    agent = agents.make("exp3", env=venv, seed=0)
    assert (agent.n_arms, agent.num_envs) == (4, 3)
    rollout(agent, env=venv, seed=0, rounds=50)


@pytest.mark.parametrize("case", ["shift", "advice"])
def test_render_modes(case):
    cls, _, kind, factory = CASES[case]
    env = cls(kind, adversary=factory(), render_mode="ansi")
    env.reset(seed=0)
    assert env.render().startswith("round 0/12")
    env.step(1)
    text = env.render()
    assert text.startswith("round 1/12  action 1") and "dynamic regret" in text
    env = cls(kind, adversary=factory(), render_mode="rgb_array")
    env.reset(seed=0)
    frame = env.render()
    assert frame.dtype == np.uint8 and frame.shape == (64, 8 * env.action_space.n, 3)
    assert (frame == 255).all()
    obs, *_ = env.step(1)
    frame = env.render()
    played = frame[:, 8:16]
    loss = obs[1] if case == "shift" else obs["last_loss"][0]
    assert (played[:, 1] != 255).any() == (round(loss * 63) > 0)
    if case == "advice":  # bandit feedback: nothing drawn for the arms not played
        assert (frame[:, :8] == 255).all()
    assert make_single(case).render() is None
    with pytest.raises(ValueError, match="render_mode must be None"):
        make_vector(case, 2).__class__(2, kind, adversary=factory(), render_mode="ansi")


def test_oblivious_env_replays_a_user_matrix(tmp_path):
    matrix = np.random.default_rng(0).random((7, 3))
    np.save(tmp_path / "m.npy", matrix)
    np.savetxt(tmp_path / "m.csv", matrix, delimiter=",")
    for source in (matrix, str(tmp_path / "m.npy"), tmp_path / "m.csv"):
        env = gym.make("DPExperts-Oblivious-v0", losses=source)
        base = env.unwrapped
        assert (base.family, base.n_experts, base.horizon) == ("replay", 3, 7)
        env.reset(seed=0)
        rows = [env.step(t % 3)[0] for t in range(7)]
        assert np.allclose(rows, matrix, rtol=0, atol=1e-15)
    assert gym.make("DPExperts-Oblivious-v0", losses=matrix, n_experts=3).unwrapped.horizon == 7
    with pytest.raises(ValueError, match="n_experts=4 disagrees"):
        gym.make("DPExperts-Oblivious-v0", losses=matrix, n_experts=4)
    with pytest.raises(ValueError, match=r"values must lie in \[0.0, 1.0\]"):
        gym.make("DPExperts-Oblivious-v0", losses=matrix * 2)
    with pytest.raises(TypeError, match="'losses' is not a parameter of family 'anti_lazy'"):
        gym.make("DPExperts-Oblivious-v0", losses=matrix, family="anti_lazy")
    with pytest.raises(TypeError, match="'losses' is not a parameter of family 'punish_last'"):
        gym.make("DPExperts-Adaptive-v0", losses=matrix)


def test_keywords_forwarded_through_a_family_reach_their_destination():
    env = gym.make("DPExperts-Oblivious-v0", family="sampled_stochastic", n_shifts=3, horizon=90)
    assert env.unwrapped.n_switches == 3
    with pytest.raises(TypeError, match="colour"):
        gym.make("DPExperts-Oblivious-v0", family="sampled_stochastic", colour=1)


def test_shift_env_defaults_and_segments():
    env = gym.make("DPExperts-Shift-v0", horizon=200, n_shifts=3)
    base = env.unwrapped
    assert (base.n_experts, base.n_switches, base.family) == (10, 3, "bernoulli_gap")
    env.reset(seed=0)
    infos = [env.step(0)[-1] for _ in range(200)]
    assert sum(i["shift"] for i in infos) == 3
    assert [i["segment"] for i in infos][-1] == 3
    assert gym.make("DPExperts-Shift-v0").unwrapped.n_switches == 4


@pytest.mark.parametrize("env_id", ["DPExperts-Shift-v0", "DPExperts-BanditAdvice-v0"])
def test_vector_env_returns_fresh_arrays_that_later_steps_do_not_mutate(env_id):
    venv = gym.make_vec(env_id, num_envs=3, vectorization_mode="vector_entry_point", horizon=20)
    obs, _ = venv.reset(seed=1)
    actions = np.zeros(3, dtype=np.int64)
    first = venv.step(actions)
    snapshot = copy.deepcopy(first)
    for _ in range(3):
        venv.step(actions + 1)
    for kept, copied in zip(first, snapshot, strict=True):
        assert_same(kept, copied)
