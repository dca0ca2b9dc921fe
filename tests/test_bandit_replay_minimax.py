"""Bandit families ``replay`` (user losses and advice) and ``minimax`` (sqrt(T) instances), and the
static pseudo-regret of the bandit envs against brute force over the fixed experts."""

from __future__ import annotations

import copy
import math
import pickle
import warnings

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env as gym_check_env

import dp_experts_env  # noqa: F401  (registers the ids)
from dp_experts_env import batch_rng
from dp_experts_env.adversaries import make_adversary
from dp_experts_env.adversaries.advice_minimax import DEFAULT_GAP_SCALE

ADVICE_ID, BANDIT_ID = "DPExperts-BanditAdvice-v0", "DPExperts-Bandit-v0"
RNG = np.random.default_rng(5)
LOSSES = RNG.random((9, 3))  # T = 9 rounds, K = 3 arms
TENSOR = RNG.dirichlet(np.ones(3), size=(9, 4))  # N = 4 experts
MATRIX = np.array([[1.0, 0.0, 0.0], [0.0, 0.5, 0.5], [1 / 3, 1 / 3, 1 / 3]])


@pytest.fixture(autouse=True)
def _small_rng_chunks(monkeypatch):
    monkeypatch.setattr(batch_rng, "_BUFFER_DOUBLES", 1 << 10)


def rounds_of(adv, seeds=(0,)):
    adv.reset(list(seeds))
    out = []
    for _ in range(adv.horizon):
        out.append(adv.next_round())
        adv.record(np.zeros(len(seeds), dtype=np.int64))
    return out


def advice_rule(t):
    """Expert 0 recommends arm t mod 3, expert 1 mixes arms 1 and 2 (a pure function of t)."""
    out = np.zeros((2, 3))
    out[0, t % 3] = 1.0
    out[1, 1:] = 0.5
    return out


# ------------------------------------------------------------------------------- replay
@pytest.mark.parametrize(
    ("advice", "n_experts"), [("identity", 3), (MATRIX, 3), (TENSOR, 4), (advice_rule, 2)]
)
def test_replay_plays_the_matrix_and_the_advice(advice, n_experts):
    adv = make_adversary("bandit_advice", "replay", losses=LOSSES, advice=advice)
    assert (adv.n_experts, adv.horizon, adv.n_arms) == (n_experts, 9, 3)
    assert adv.knows_means and adv.oblivious and adv.default_switches == 0
    for t, rnd in enumerate(rounds_of(adv, seeds=(3, 4)), start=1):
        np.testing.assert_array_equal(rnd.losses, np.broadcast_to(LOSSES[t - 1], (2, 3)))
        np.testing.assert_array_equal(rnd.means, rnd.losses)
        if isinstance(advice, str):
            want = np.eye(3)
        elif callable(advice):
            want = advice_rule(t)
        else:
            want = advice if advice.ndim == 2 else advice[t - 1]
        np.testing.assert_array_equal(rnd.advice, np.broadcast_to(want, (2, n_experts, 3)))


def test_replay_reads_files_and_copies_the_user_arrays(tmp_path):
    np.save(tmp_path / "l.npy", LOSSES)
    np.savetxt(tmp_path / "l.csv", LOSSES, delimiter=",")
    np.save(tmp_path / "a.npy", TENSOR)
    losses, tensor = LOSSES.copy(), TENSOR.copy()
    from_arrays = make_adversary("bandit_advice", "replay", losses=losses, advice=tensor)
    losses[:] = 0.0
    tensor[:] = 1 / 3
    for source in (str(tmp_path / "l.npy"), tmp_path / "l.csv"):
        from_files = make_adversary(
            "bandit_advice", "replay", losses=source, advice=str(tmp_path / "a.npy")
        )
        for a, b in zip(rounds_of(from_arrays), rounds_of(from_files), strict=True):
            np.testing.assert_allclose(a.losses, b.losses, rtol=0, atol=1e-15)
            np.testing.assert_array_equal(a.advice, b.advice)
    np.testing.assert_array_equal(rounds_of(from_arrays)[0].losses[0], LOSSES[0])


def test_replay_neighbor_replaces_one_loss_vector_and_keeps_the_advice():
    adv = make_adversary("bandit_advice", "replay", losses=LOSSES, advice=TENSOR)
    base = rounds_of(adv)
    adv.reset([0], neighbor={"round": 4, "loss": np.array([1.0, 0.0, 0.5])})
    for t in range(1, 10):
        rnd = adv.next_round()
        want = [1.0, 0.0, 0.5] if t == 4 else LOSSES[t - 1]
        np.testing.assert_array_equal(rnd.losses[0], want)
        np.testing.assert_array_equal(rnd.advice, base[t - 1].advice)


@pytest.mark.parametrize(
    ("kwargs", "err", "match"),
    [
        ({"advice": TENSOR}, ValueError, "needs losses="),
        ({"losses": LOSSES}, ValueError, "needs advice="),
        ({"losses": LOSSES, "advice": "uniform"}, ValueError, "'identity', an"),
        ({"losses": LOSSES, "advice": "missing.npy"}, ValueError, "not 'identity' nor a .npy"),
        ({"losses": LOSSES, "advice": np.ones(3) / 3}, ValueError, "shape"),
        ({"losses": LOSSES, "advice": [[1, 0, 0], [0.5] * 3]}, ValueError, r"\(1,\) sums to 1.5"),
        ({"losses": LOSSES, "advice": -MATRIX}, ValueError, "values must lie in"),
        ({"losses": LOSSES, "advice": TENSOR[:5]}, ValueError, "shape"),
        ({"losses": LOSSES, "advice": np.ones((2, 4)) / 4}, ValueError, "shape"),
        ({"losses": LOSSES, "advice": lambda t: np.eye(2)}, ValueError, "rule output at round 1"),
        ({"losses": LOSSES, "advice": lambda t: 1 / 0}, ValueError, "rule failed at round 1"),
        ({"losses": LOSSES * 2, "advice": MATRIX}, ValueError, "values must lie in"),
        ({"losses": LOSSES[:, :1], "advice": "identity"}, ValueError, "at least 2 columns"),
        ({"losses": LOSSES, "advice": MATRIX, "horizon": 8}, ValueError, "horizon=8 disagrees"),
        ({"losses": LOSSES, "advice": MATRIX, "n_arms": 4}, ValueError, "n_arms=4 disagrees"),
        ({"losses": LOSSES, "advice": TENSOR, "n_experts": 3}, ValueError, "n_experts=3 disag"),
        ({"losses": LOSSES, "advice": MATRIX, "rescale": 1}, TypeError, "rescale"),
    ],
)
def test_replay_bad_input(kwargs, err, match):
    with pytest.raises(err, match=match):
        make_adversary("bandit_advice", "replay", **kwargs)


def test_replay_rule_checked_every_round():
    def late_bad(t):
        return advice_rule(t) if t < 5 else np.full((2, 3), 0.4)

    adv = make_adversary("bandit_advice", "replay", losses=LOSSES, advice=late_bad)
    adv.reset([0])
    for _ in range(4):
        adv.next_round()
    with pytest.raises(ValueError, match="rule output at round 5"):
        adv.next_round()


def test_envs_select_replay_when_given_losses():
    env = gym.make(ADVICE_ID, losses=LOSSES, advice=TENSOR)
    base = env.unwrapped
    assert (base.family, base.n_experts, base.n_arms, base.horizon) == ("replay", 4, 3, 9)
    env = gym.make(BANDIT_ID, losses=LOSSES)
    base = env.unwrapped
    assert (base.family, base.n_experts, base.n_arms, base.horizon) == ("replay", 3, 3, 9)
    assert gym.make(BANDIT_ID, losses=LOSSES, n_arms=3).unwrapped.horizon == 9
    with pytest.raises(ValueError, match="n_arms=4 disagrees"):
        gym.make(BANDIT_ID, losses=LOSSES, n_arms=4)
    with pytest.raises(TypeError, match="'advice' is not a parameter"):
        gym.make(BANDIT_ID, losses=LOSSES, advice=MATRIX)
    # Deterministic losses: the pseudo-regrets are the realised regrets.
    env = gym.make(BANDIT_ID, losses=LOSSES)
    env.reset(seed=0)
    for t in range(9):
        info = env.step(t % 3)[-1]
    assert info["static_pseudo_regret"] == pytest.approx(info["static_regret"], abs=1e-12)
    played = LOSSES[np.arange(9), np.arange(9) % 3].sum()
    assert info["static_regret"] == pytest.approx(played - LOSSES.sum(axis=0).min(), abs=1e-12)


def test_replay_env_pickles_mid_episode_with_a_module_level_rule():
    env = gym.make(ADVICE_ID, losses=LOSSES, advice=advice_rule)
    env.reset(seed=0)
    env.step(0)
    twin = pickle.loads(pickle.dumps(env))
    for t in range(1, 9):
        a, b = env.step(t % 3), twin.step(t % 3)
        np.testing.assert_array_equal(a[0]["advice"], b[0]["advice"])
        assert a[-1] == b[-1]


# ------------------------------------------------------------------------------ minimax
@pytest.mark.parametrize("kind", ["bandit", "bandit_advice"])
def test_minimax_default_gap_is_c_sqrt_n_over_t(kind):
    # N experts (= K arms for the bandit kind): c sqrt(N / T).
    n = None if kind == "bandit" else 7
    adv = make_adversary(kind, "minimax", n_experts=n, horizon=10_000, n_arms=5)
    expected = DEFAULT_GAP_SCALE * math.sqrt((5 if n is None else n) / 10_000)
    assert adv.gap == pytest.approx(expected, rel=1e-15)
    n = None if kind == "bandit" else 4
    scaled = make_adversary(kind, "minimax", n_experts=n, horizon=400, n_arms=4, gap_scale=2.0)
    assert scaled.gap == pytest.approx(0.2, rel=1e-15)
    # The default never exceeds 1/2 (a short game); an explicit gap is taken as given.
    assert make_adversary(kind, "minimax", n_experts=n, horizon=3, n_arms=5).gap == 0.5
    assert make_adversary(kind, "minimax", n_experts=n, horizon=3, n_arms=5, gap=0.01).gap == 0.01


@pytest.mark.parametrize("kind", ["bandit", "bandit_advice"])
@pytest.mark.parametrize(
    ("kwargs", "err", "match"),
    [
        ({"gap": 0.1, "gap_scale": 2.0}, ValueError, "gap or gap_scale, not both"),
        ({"gap": 0.6}, ValueError, "gap"),
        ({"gap": 0.0}, ValueError, "gap"),
        ({"gap_scale": 0.0}, ValueError, "gap_scale"),
        ({"gap_scale": "big"}, TypeError, "gap_scale"),
        ({"horizon": 0}, ValueError, "horizon"),
    ],
)
def test_minimax_bad_input(kind, kwargs, err, match):
    params = {"n_experts": 4, "horizon": 100, "n_arms": 4, **kwargs}
    with pytest.raises(err, match=match):
        make_adversary(kind, "minimax", **params)


def test_minimax_bandit_has_one_fixed_better_arm():
    adv = make_adversary("bandit", "minimax", horizon=50, n_arms=4, gap=0.25)
    rounds = rounds_of(adv, seeds=(0, 1, 2))
    means = np.stack([r.means for r in rounds])  # (T, B, K)
    np.testing.assert_array_equal(means, np.broadcast_to(means[0], means.shape))
    np.testing.assert_array_equal(np.sort(means[0], axis=1), [[0.25, 0.5, 0.5, 0.5]] * 3)
    np.testing.assert_array_equal(np.argmin(means[0], axis=1), adv.best)


def test_minimax_advice_planted_expert_always_recommends_the_good_arm():
    n, k, horizon = 6, 3, 4000
    adv = make_adversary("bandit_advice", "minimax", n_experts=n, horizon=horizon, n_arms=k)
    gap = DEFAULT_GAP_SCALE * math.sqrt(n / horizon)
    rounds = rounds_of(adv, seeds=(0, 1))
    advice = np.stack([r.advice for r in rounds])  # (T, B, N, K)
    means = np.stack([r.means for r in rounds])
    rows = np.arange(2)
    planted = adv.planted
    rec = advice[:, rows, planted].argmax(axis=-1)  # (T, B)
    np.testing.assert_array_equal(np.take_along_axis(means, rec[..., None], -1)[..., 0], 0.5 - gap)
    # The others recommend uniform arms: their mean loss exceeds the planted expert's by
    # gap (1 - 1/K) = 0.103 on average; a 4000-round mean of the difference has std below
    # gap / sqrt(4000) < 0.003, so 0.01 is a > 3-sigma tolerance.
    c = np.einsum("tbnk,tbk->bn", advice, means) / horizon
    others = c.copy()
    others[rows, planted] = np.nan
    diff = np.nanmean(others, axis=1) - c[rows, planted]
    np.testing.assert_allclose(diff, gap * (1 - 1 / k), atol=0.01)


# ----------------------------------------------------- static pseudo-regret: brute force
@pytest.mark.parametrize(
    ("env_id", "family", "params"),
    [
        (ADVICE_ID, "planted_expert", {"n_experts": 4, "n_arms": 3}),
        (ADVICE_ID, "minimax", {"n_experts": 4, "n_arms": 3}),
        (ADVICE_ID, "shifting_planted_expert", {"n_experts": 4, "n_arms": 3, "n_shifts": 2}),
        (BANDIT_ID, "minimax", {"n_arms": 3}),
        (BANDIT_ID, "shifting_bernoulli", {"n_arms": 3, "n_shifts": 2}),
    ],
)
def test_static_pseudo_regret_against_every_fixed_expert(env_id, family, params):
    """sum_t mu_t(a_t) - min over the N fixed experts of sum_t <advice_t[j], mu_t>."""
    horizon, seeds = 30, [4, 5, 6]
    env = gym.make_vec(
        env_id,
        num_envs=3,
        vectorization_mode="vector_entry_point",
        family=family,
        horizon=horizon,
        **params,
    )
    twin = copy.deepcopy(env.unwrapped.core.adversary)  # the same game, played by hand
    twin.reset(seeds)
    env.reset(seed=seeds)
    rng = np.random.default_rng(1)
    played = np.zeros(3)
    fixed = np.zeros((3, twin.n_experts))
    per_round_best = np.zeros(3)
    for _ in range(horizon):
        rnd = twin.next_round()
        actions = rng.integers(0, twin.n_arms, size=3)
        info = env.step(actions)[-1]
        twin.record(actions)
        played += rnd.means[np.arange(3), actions]
        # One fixed expert at a time: its expected loss this round, summed over the rounds.
        for j in range(twin.n_experts):
            fixed[:, j] += (rnd.advice[:, j, :] * rnd.means).sum(axis=1)
        per_round_best += np.min(np.einsum("bnk,bk->bn", rnd.advice, rnd.means), axis=1)
        np.testing.assert_allclose(
            info["static_pseudo_regret"], played - fixed.min(axis=1), rtol=0, atol=1e-12
        )
        np.testing.assert_allclose(
            info["per_round_best_pseudo_regret"], played - per_round_best, rtol=0, atol=1e-12
        )
    env.close()


# ------------------------------------------------------------------------------ checkers
@pytest.mark.parametrize(
    ("env_id", "params"),
    [
        (ADVICE_ID, {"family": "minimax", "horizon": 40}),
        (BANDIT_ID, {"family": "minimax", "horizon": 40}),
        (ADVICE_ID, {"losses": LOSSES, "advice": TENSOR}),
        (ADVICE_ID, {"losses": LOSSES, "advice": advice_rule}),
        (BANDIT_ID, {"losses": LOSSES}),
    ],
)
def test_new_families_pass_the_env_checkers(env_id, params):
    sb3_checker = pytest.importorskip("stable_baselines3.common.env_checker")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        gym_check_env(gym.make(env_id, **params).unwrapped)
        sb3_checker.check_env(gym.make(env_id, **params))
