"""noisy-clipped-hedge (ARS Alg. 3, private Lu–Zhang): projection, noise, E-ARS-15, separation."""

import math

import gymnasium as gym
import numpy as np
import pytest
from conftest import rollout
from scipy import optimize

import agents
import dp_experts_env  # noqa: F401  (registers the env ids)
from agents.noisy_clipped_hedge import NoisyClippedHedge, clip_project
from dp_experts_env.privacy.audit import audit_mechanism


# ----------------------------------------------------------------------------- projection
def test_clip_project_matches_the_kkt_solution():
    rng = np.random.default_rng(0)
    log_v = rng.normal(scale=4.0, size=(50, 7))
    floor = 0.06
    w = clip_project(log_v, floor)
    np.testing.assert_allclose(w.sum(axis=1), 1.0, rtol=1e-12)
    assert np.all(w >= floor - 1e-15)
    for row, lv in zip(w, log_v, strict=True):
        v = np.exp(lv - lv.max())
        c = optimize.brentq(lambda c, v=v: np.maximum(floor, c * v).sum() - 1.0, 0.0, 1e9)
        np.testing.assert_allclose(row, np.maximum(floor, c * v), rtol=1e-9, atol=1e-15)


def test_clip_project_without_floor_is_softmax_and_survives_huge_logits():
    log_v = np.array([[1000.0, 0.0, -1000.0]])
    np.testing.assert_allclose(clip_project(log_v, 0.0), [[1.0, 0.0, 0.0]])
    np.testing.assert_allclose(clip_project(log_v, 0.1), [[0.8, 0.1, 0.1]])


# ----------------------------------------------------------------------------- parameters
def test_noise_scale_eta_and_clip_level_follow_the_parameters():
    n, t, s, eps = 8, 1000, 3, 0.5
    strict = NoisyClippedHedge(n, t, epsilon=eps, n_switches=s, tuning="paper")
    assert strict.noise_sensitivity == n and strict.noise_scale == pytest.approx(n / eps)
    assert strict.effective_epsilon == pytest.approx(eps)
    assert strict.clip_level == pytest.approx(s / (n * t))
    assert strict.eta == pytest.approx(math.sqrt(s / (t * math.log(n * t))) / (n / eps))
    paper = NoisyClippedHedge(n, t, epsilon=eps, n_switches=s, mode="paper", tuning="paper")
    assert paper.noise_scale == pytest.approx(1 / eps)
    assert paper.effective_epsilon == pytest.approx(n * eps)
    assert paper.eta == pytest.approx(eps * math.sqrt(s / (t * math.log(n * t))))  # Thm 5.2
    cal = NoisyClippedHedge(n, t, epsilon=eps, n_switches=s, tuning="calibrated")
    b = n / eps
    c = (s + 1) * math.log(n) + s * math.log(math.e * (t - 1) / s)  # Fixed-Share's C
    assert cal.eta == pytest.approx(min(math.sqrt(c / (t * (0.125 + b * b))), 0.5 / b))
    assert NoisyClippedHedge(n, t, epsilon=eps, n_switches=s).eta == cal.eta  # the default
    # epsilon = inf: Fixed-Share's rate sqrt(8 C / T), no noise, not private.
    free = NoisyClippedHedge(n, t, epsilon=math.inf, n_switches=s)
    assert free.eta == pytest.approx(math.sqrt(8 * c / t)) and free.noise_scale == 0.0
    assert not free.privacy.is_private
    assert NoisyClippedHedge(n, t, eta=0.3).eta == 0.3
    grid = NoisyClippedHedge(n, t, epsilon=eps, noise="grid")
    assert grid.noise_scale == pytest.approx((n + n * 2.0**-20) / eps)


def test_zero_switches_uses_s_eff_one():
    agent = NoisyClippedHedge(4, 100, n_switches=0)  # E-ARS-16: eta and the floor stay positive
    assert agent.clip_level == pytest.approx(1 / 400) and agent.eta > 0
    actions = rollout(agent, np.random.default_rng(0).random((100, 1, 4))).actions
    assert actions.shape == (100, 1)


def test_released_noise_has_the_recorded_scale():
    # eta tiny, no clipping: log w_2 = -eta (l_1 + Z) + const, so the log-weight differences
    # recover Z_0 - Z_1, whose variance is 2 (2 b^2) for Laplace(b).
    runs, eta = 20000, 1e-6
    for mode in ("strict", "paper"):
        agent = NoisyClippedHedge(4, 10, epsilon=2.0, mode=mode, eta=eta, num_envs=runs, seed=1)
        agent.act(np.zeros((runs, 4)))
        agent.act(np.zeros((runs, 4)))
        log_w = np.log(agent.action_distribution())
        diff = -(log_w[:, 0] - log_w[:, 1]) / eta
        b = agent.noise_scale
        assert np.var(diff) == pytest.approx(4 * b * b, rel=0.05)
        # P(|Z_0 - Z_1| > 3 b) = (1 + 3/2) e^{-3} for i.i.d. Laplace(b).
        assert np.mean(np.abs(diff) > 3 * b) == pytest.approx(2.5 * math.exp(-3), rel=0.1)


def test_weights_stay_on_the_clipped_simplex():
    agent = NoisyClippedHedge(5, 200, epsilon=0.3, n_switches=4, eta=2.0, num_envs=6, seed=0)
    obs = np.zeros((6, 5))
    for _ in range(200):
        agent.act(obs)
        w = agent.action_distribution()
        np.testing.assert_allclose(w.sum(axis=1), 1.0, rtol=1e-12)
        assert np.all(w >= agent.clip_level * (1 - 1e-12))
        obs = np.random.default_rng(len(obs)).random((6, 5))


@pytest.mark.parametrize("params", [{}, {"mode": "paper"}, {"noise": "grid"}])
def test_batch_equals_single_runs(params):
    losses = np.random.default_rng(2).random((40, 3, 4))
    batch = rollout(NoisyClippedHedge(4, 40, num_envs=3, seed=7, eta=1.0, **params), losses).actions
    for b in range(3):
        single = rollout(
            NoisyClippedHedge(4, 40, seed=7 + b, eta=1.0, **params), losses[:, b : b + 1]
        ).actions
        np.testing.assert_array_equal(batch[:, b], single[:, 0])


def test_claims_and_bad_input():
    strict = agents.make("noisy-clipped-hedge", n_experts=4, horizon=10).privacy
    assert strict.certified and strict.holds_against == "adaptive" and strict.delta == 0
    assert "L1 sensitivity 4" in strict.accountant
    paper = NoisyClippedHedge(4, 10, mode="paper").privacy
    assert not paper.certified and "E-ARS-15" in paper.notes and "4" in paper.notes
    with pytest.raises(ValueError, match="n_switches"):
        NoisyClippedHedge(4, 10, n_switches=11)
    with pytest.raises(ValueError, match="eta"):
        NoisyClippedHedge(4, 10, eta=0.0)
    with pytest.raises(ValueError, match="mode"):
        NoisyClippedHedge(4, 10, mode="loose")


# ----------------------------------------------------------------------------- privacy audits
def release_contrast(mode, n=16):
    """Mechanism: one noisy-loss release inside the agent, read through its weights.

    The output is ``sum_j s_j log w_2(j)`` with signs s = (+1, -1, ...) -- a post-processing of
    the release ``l_1 + Z`` (the normaliser cancels since the signs sum to 0), so it can only
    hide privacy loss, never add any.
    """
    signs = np.where(np.arange(n) % 2 == 0, 1.0, -1.0)

    def fn(loss_vector, rng):
        agent = NoisyClippedHedge(n, 2, epsilon=1.0, mode=mode, eta=1e-3, num_envs=rng.num_runs)
        agent.rng = rng  # the audit's per-run streams
        agent.act(np.zeros((rng.num_runs, n)))
        agent.act(np.tile(loss_vector, (rng.num_runs, 1)))
        return np.log(agent.action_distribution()) @ signs

    return fn, signs


def test_paper_noise_release_is_caught_and_strict_passes():  # erratum E-ARS-15
    # Worst-case replacement: every coordinate moves by 1 (L1 distance N = 16).
    fn_paper, signs = release_contrast("paper")
    x, xp = (signs < 0).astype(float), (signs > 0).astype(float)
    paper = audit_mechanism(fn_paper, x, xp, n_runs=10000, seed=0, claimed_epsilon=1.0)
    assert not paper.passed and paper.epsilon_lower_bound > 2.0, paper.summary()
    fn_strict, _ = release_contrast("strict")
    strict = audit_mechanism(fn_strict, x, xp, n_runs=10000, seed=0, claimed_epsilon=1.0)
    assert strict.passed, strict.summary()


# ----------------------------------------------------------------------------- utility
def run_env(name, env_id, epsilon, seeds=4, agent_kw=None, **env_kw):
    env = gym.make_vec(env_id, num_envs=seeds, vectorization_mode="vector_entry_point", **env_kw)
    agent = agents.make(name, env=env, epsilon=epsilon, seed=0, **(agent_kw or {}))
    info = rollout(agent, env=env, seed=list(range(seeds))).info
    env.close()
    return info


def test_adaptive_separation_on_punish_last():
    # PunishLast(1): loss 1 on the expert played last round, Bernoulli(1/2) elsewhere. Lazy
    # learners replay their expert and pay ~1; the resampling learner pays ~ the base losses.
    env_kw = dict(family="punish_last", n_experts=10, horizon=1500)
    per_round = {}
    for name in ("limited-updates", "svt-restart", "noisy-clipped-hedge"):
        info = run_env(name, "DPExperts-Adaptive-v0", 1.0, seeds=3, **env_kw)
        per_round[name] = np.asarray(info["cumulative_loss"]).mean() / 1500
    assert per_round["limited-updates"] > 0.95, per_round
    assert per_round["svt-restart"] > 0.9, per_round
    # At epsilon = 1 the noise (b = N) makes the calibrated weights wander, so it repeats its
    # expert more often than uniform play (0.55) would, but stays clearly below the lazy ones.
    lazy = min(per_round["limited-updates"], per_round["svt-restart"])
    assert per_round["noisy-clipped-hedge"] < lazy - 0.1, per_round
