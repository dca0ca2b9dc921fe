"""Non-private bandit baselines and their batched cores: known answers, sanity, batching."""

import math

import numpy as np
import pytest
from conftest import rollout
from scipy.optimize import brentq

import agents
from agents.bandit_core import (
    THETA_2,
    Exp3Core,
    Exp4Core,
    FtplGRCore,
    TsallisInfCore,
    tsallis_inf_weights,
)
from dp_experts_env.batch_rng import BatchRNG

BANDIT = [
    ("exp3", {}),
    ("exp3", {"rate": "anytime", "gamma": 0.1}),
    ("exp3", {"over": "experts"}),
    ("tsallis-inf", {}),
    ("tsallis-inf", {"over": "experts", "skip": False}),
    ("ftpl-gr", {"max_resamples": 20}),
    ("exp4", {}),
    ("exp4", {"rate": "anytime", "gamma": 0.05}),
]


def obs_of(advice, last_action, last_loss):
    b = advice.shape[0]
    return {
        "advice": advice.reshape(b, -1),
        "last_action": np.asarray(last_action).reshape(b),
        "last_loss": np.asarray(last_loss, dtype=float).reshape(b, 1),
    }


def single_obs(advice, last_action, last_loss):
    """An unbatched observation, as a single Gymnasium env returns it."""
    return {
        "advice": np.asarray(advice, dtype=np.float32).ravel(),
        "last_action": int(last_action),
        "last_loss": np.array([last_loss], dtype=np.float32),
    }


def identity_advice(t_max, b, k):
    return np.broadcast_to(np.eye(k), (t_max, b, k, k))


def rng(b=1, seed=0):
    return BatchRNG(list(range(seed, seed + b)), stream=3)


# ----------------------------------------------------------------------------- EXP3 core
def test_exp3_core_known_weights():
    core = Exp3Core(rng(), 2, eta=math.log(2), gamma=0.2)
    np.testing.assert_allclose(core.distribution(), [[0.5, 0.5]])
    core.update(np.array([0]), np.array([0.5]))  # lhat = 0.5 / 0.5 = 1 -> softmax (1/3, 2/3)
    p1 = np.array([0.8 / 3 + 0.1, 1.6 / 3 + 0.1])
    np.testing.assert_allclose(core.distribution(), [p1], rtol=1e-12)
    core.update(np.array([1]), np.array([1.0]))  # lhat(1) = 1 / p1[1]
    w = np.array([0.5, 2.0 ** (-1.0 / p1[1])])
    np.testing.assert_allclose(core.distribution(), [0.8 * w / w.sum() + 0.1], rtol=1e-12)
    np.testing.assert_array_equal(core.n_updates, [2])


def test_exp3_core_mask_and_negative_feedback():
    core = Exp3Core(rng(2), 3, eta=0.5, gamma=0.3)
    core.update(np.array([0, 1]), np.array([-2.0, 5.0]), mask=np.array([True, False]))
    np.testing.assert_array_equal(core.n_updates, [1, 0])
    np.testing.assert_allclose(core.cum_estimate[1], 0.0)
    assert core.cum_estimate[0, 0] == pytest.approx(-2.0 / (1 / 3))
    p = core.distribution()
    assert np.all(p >= 0.3 / 3 - 1e-15) and np.allclose(p.sum(axis=1), 1)


def test_exp3_agent_known_distribution():
    agent = agents.make("exp3", n_experts=2, horizon=50, n_arms=2, eta=math.log(2), seed=4)
    advice = np.eye(2)
    a1 = agent.act(single_obs(advice, 0, 0.0))
    a2 = agent.act(single_obs(advice, a1, 0.5))  # lhat(a1) = 1
    p = np.where(np.arange(2) == a1, 0.5, 1.0)
    np.testing.assert_allclose(agent.action_distribution(), [p / p.sum()], rtol=1e-12)
    assert isinstance(a2, int)


def test_exp3_anytime_schedule():
    agent = agents.make("exp3", n_experts=3, horizon=50, n_arms=3, rate="anytime", seed=0)
    agent.act(obs_of(np.eye(3)[None], 0, 0.0))
    np.testing.assert_allclose(agent.core.rate(), [math.sqrt(math.log(3) / 3)])
    assert agents.make("exp3", n_experts=3, horizon=50, n_arms=3).eta == pytest.approx(
        math.sqrt(2 * math.log(3) / 150)
    )


# ----------------------------------------------------------------------------- Tsallis-INF
def test_tsallis_solver_matches_root_finding():
    gen = np.random.default_rng(0)
    cum = np.concatenate([gen.normal(0, 20, (5, 6)), np.zeros((1, 6)), -gen.random((1, 6)) * 50])
    beta = gen.uniform(0.5, 30, len(cum))
    x = tsallis_inf_weights(cum, beta)
    assert np.all(x > 0)
    np.testing.assert_allclose(x.sum(axis=1), 1.0, atol=1e-12)
    np.testing.assert_allclose(x[5], 1 / 6)  # equal estimates: uniform
    for row in range(len(cum)):
        lo = beta[row] - cum[row].min()

        def excess(nu, row=row):
            return np.sum(beta[row] ** 2 / (cum[row] + nu) ** 2) - 1.0

        nu = brentq(excess, lo, lo + 10 * beta[row] * math.sqrt(6), xtol=1e-14)
        np.testing.assert_allclose(x[row], beta[row] ** 2 / (cum[row] + nu) ** 2, rtol=1e-9)


def test_tsallis_core_skipping_known_answer():
    core = TsallisInfCore(rng(2), 2, sigma=1.0)
    np.testing.assert_allclose(core.distribution(), 0.5)
    # Round 1: beta = 1, x(arm) = 1/2, threshold THETA_2 * sqrt(1/2) ~ 0.146.
    assert THETA_2 * math.sqrt(0.5) == pytest.approx(0.145876, abs=1e-6)
    core.update(np.array([0, 0]), np.array([0.5, 0.1]))
    np.testing.assert_array_equal(core.n_skipped, [1, 0])
    np.testing.assert_allclose(core.cum_estimate, [[0.0, 0.0], [0.2, 0.0]])
    # Round 2 of run 1: beta = sqrt(2), x = argmin <(0.2, 0), x> - 2 sqrt(2) sum sqrt(x).
    x = core.distribution()[1]
    nu = math.sqrt(2) / math.sqrt(x[1])
    assert math.sqrt(2) / math.sqrt(x[0]) - 0.2 == pytest.approx(nu, rel=1e-9)
    plain = TsallisInfCore(rng(1), 2, skip=False)
    plain.update(np.array([0]), np.array([0.5]))
    np.testing.assert_allclose(plain.cum_estimate, [[1.0, 0.0]])


# ----------------------------------------------------------------------------- FTPL-GR
def test_ftpl_resample_count_matches_geometric_law():
    b, m_cap = 6000, 4
    core = FtplGRCore(rng(b), 3, eta=1.0, max_resamples=m_cap)
    core.cum_estimate[:] = [0.0, 0.5, 1.5]
    arms = core.sample()
    freq = np.bincount(arms, minlength=3) / b  # the law P(I = i), estimated
    core.update(arms, np.ones(b))
    for arm in range(3):
        p = freq[arm]
        expected = (1 - (1 - p) ** m_cap) / p
        got = core.last_resamples[arms == arm].mean()
        assert got == pytest.approx(expected, rel=0.08), arm
    start = np.array([0.0, 0.5, 1.5])[arms]
    np.testing.assert_allclose(core.cum_estimate[np.arange(b), arms] - start, core.last_resamples)
    assert np.all((core.last_resamples >= 1) & (core.last_resamples <= m_cap))


def test_ftpl_cap_of_one_and_no_distribution():
    core = FtplGRCore(rng(5), 4, eta=0.01, max_resamples=1)
    arms = core.sample()
    core.update(arms, np.full(5, 0.7))
    np.testing.assert_array_equal(core.last_resamples, 1)
    np.testing.assert_allclose(core.cum_estimate[np.arange(5), arms], 0.7)
    with pytest.raises(NotImplementedError, match="no closed-form"):
        core.distribution()


# ----------------------------------------------------------------------------- EXP4
def test_exp4_known_answer():
    advice = np.array([[[1.0, 0.0], [0.5, 0.5]]])  # expert 0 says arm 0, expert 1 is uniform
    agent = agents.make("exp4", n_experts=2, horizon=20, n_arms=2, eta=math.log(2), seed=1)
    arm = agent.act(single_obs(advice, 0, 0.0))
    np.testing.assert_allclose(agent.action_distribution(), [[0.75, 0.25]])
    agent.act(single_obs(advice, arm, 1.0))
    q = [0.75, 0.25][arm]
    ytil = advice[0, :, arm] / q  # importance-weighted expert losses
    p = 2.0 ** (-ytil) / np.sum(2.0 ** (-ytil))
    np.testing.assert_allclose(agent.core.expert_distribution(), [p], rtol=1e-12)
    np.testing.assert_allclose(agent.action_distribution(), [p @ advice[0]], rtol=1e-12)


def test_exp4_core_update_protocol():
    core = Exp4Core(rng(2), 3, 2, eta=0.3, gamma=0.5)
    advice = np.tile(np.array([[1.0, 0.0], [0.0, 1.0], [0.5, 0.5]]), (2, 1, 1))
    arms = core.sample(advice)
    np.testing.assert_allclose(core.last_q, 0.5)  # P uniform -> A gives (1/2, 1/2)
    est = core.estimate(np.array([1.0, 0.0]))
    np.testing.assert_allclose(est[0], advice[0, :, arms[0]] / 0.5)
    np.testing.assert_allclose(est[1], 0.0)
    core.update(est, mask=np.array([False, True]))
    np.testing.assert_array_equal(core.n_updates, [0, 1])
    with pytest.raises(ValueError, match="expert_losses must have shape"):
        core.update(np.zeros((2, 4)))


def test_exp4_with_identity_advice_equals_exp3():
    t_max, b, k = 150, 6, 4
    losses = np.random.default_rng(3).random((t_max, b, k))
    advice = identity_advice(t_max, b, k)
    exp3 = agents.make("exp3", n_experts=k, horizon=t_max, n_arms=k, num_envs=b, seed=8)
    exp4 = agents.make("exp4", n_experts=k, horizon=t_max, n_arms=k, num_envs=b, seed=8)
    np.testing.assert_array_equal(
        rollout(exp3, losses, advice=advice).actions, rollout(exp4, losses, advice=advice).actions
    )


# ----------------------------------------------------------------------------- sanity
def planted_problem(t_max, b, n, k, seed):
    """Expert 0 follows the good arm w.p. 0.9; the others recommend uniform random arms."""
    gen = np.random.default_rng(seed)
    good = gen.integers(k, size=(t_max, 1))
    means = np.where(np.arange(k) == good, 0.2, 0.7)  # (T, K)
    losses = np.broadcast_to(
        (gen.random((t_max, 1, k)) < means[:, None]).astype(float), (t_max, b, k)
    )
    picks = gen.integers(k, size=(t_max, n))
    picks[:, 0] = np.where(gen.random(t_max) < 0.9, good[:, 0], picks[:, 0])
    advice = np.broadcast_to(np.eye(k)[picks][:, None], (t_max, b, n, k))
    return losses, advice


def test_exp4_beats_uniform_on_planted_expert():
    t_max, b, n, k = 3000, 8, 16, 4
    losses, advice = planted_problem(t_max, b, n, k, seed=5)
    agent = agents.make("exp4", n_experts=n, horizon=t_max, n_arms=k, num_envs=b, seed=0)
    paid = rollout(agent, losses, advice=advice).losses
    uniform = losses[:, 0].mean(axis=1).sum()  # expected loss of a uniformly random arm
    expert0 = np.einsum("tk,tk->", advice[:, 0, 0], losses[:, 0])
    assert paid.sum(axis=0).mean() < uniform - 0.5 * (uniform - expert0)
    regret = paid.sum(axis=0).mean() - expert0
    assert regret <= math.sqrt(2 * t_max * k * math.log(n))  # EXP4's expected-regret bound


@pytest.mark.parametrize("name", ["exp3", "tsallis-inf", "ftpl-gr"])
def test_k_armed_learners_beat_uniform(name):
    t_max, b, k = 1500, 6, 3
    means = np.array([0.2, 0.6, 0.7])
    losses = np.broadcast_to(
        (np.random.default_rng(1).random((t_max, 1, k)) < means).astype(float), (t_max, b, k)
    )
    agent = agents.make(name, n_experts=k, horizon=t_max, n_arms=k, num_envs=b, seed=2)
    paid = rollout(agent, losses, advice=identity_advice(t_max, b, k)).losses
    best = losses[:, 0].sum(axis=0).min()
    uniform = losses[:, 0].mean(axis=1).sum()
    assert paid.sum(axis=0).mean() - best < 0.4 * (uniform - best)


def test_over_experts_plays_the_advised_arm():
    t_max, b, n, k = 50, 4, 5, 3
    losses, advice = planted_problem(t_max, b, n, k, seed=1)
    agent = agents.make("exp3", n_experts=n, horizon=t_max, n_arms=k, over="experts", num_envs=b)
    actions = rollout(agent, losses, advice=advice).actions
    # One-hot advice: the arm played is always the recommendation of the sampled expert.
    assert agent.core.n_arms == n
    assert np.all(advice[-1, np.arange(b), agent.core_choices, actions[-1]] == 1.0)


# ----------------------------------------------------------------------------- batching
@pytest.mark.parametrize(("name", "params"), BANDIT)
def test_batch_equals_single_runs(name, params):
    t_max, b, n, k, seed = 40, 3, 5, 3, 21
    gen = np.random.default_rng(2)
    losses = gen.random((t_max, b, k))
    advice = gen.dirichlet(np.ones(k), size=(t_max, b, n))
    batch = agents.make(name, n_experts=n, horizon=t_max, n_arms=k, num_envs=b, seed=seed, **params)
    batch_actions = rollout(batch, losses, advice=advice).actions
    for run in range(b):
        single = agents.make(name, n_experts=n, horizon=t_max, n_arms=k, seed=seed + run, **params)
        solo = rollout(single, losses[:, run : run + 1], advice=advice[:, run : run + 1])
        single_actions = solo.actions
        np.testing.assert_array_equal(batch_actions[:, run], single_actions[:, 0])


@pytest.mark.parametrize(("name", "params"), BANDIT)
def test_claim_reset_and_agreement_check(name, params):
    agent = agents.make(name, n_experts=3, horizon=10, n_arms=2, seed=0, **params)
    assert agent.privacy.feedback == "bandit" and not agent.privacy.is_private
    advice = np.full((1, 3, 2), 0.5)
    a = agent.act(obs_of(advice, 0, 0.0))
    with pytest.raises(ValueError, match="differs from the arms this agent played"):
        agent.act(obs_of(advice, 1 - a, 0.3))
    agent.reset(seed=0)
    assert agent.act(obs_of(advice, 0, 0.0)) == a


# ----------------------------------------------------------------------------- bad input
@pytest.mark.parametrize(
    ("name", "params", "error", "match"),
    [
        ("exp3", {"eta": -1.0}, ValueError, "eta must be > 0"),
        ("exp3", {"gamma": 1.5}, ValueError, "gamma must be <= 1"),
        ("exp3", {"over": "contexts"}, ValueError, "over must be one of"),
        ("exp3", {"eta": 0.1, "rate": "anytime"}, ValueError, "rate='fixed' only"),
        ("exp3", {"n_arms": None}, TypeError, "n_arms must be an integer"),
        ("exp3", {"n_arms": 1}, ValueError, "n_arms must be >= 2"),
        ("tsallis-inf", {"sigma": 0.0}, ValueError, "sigma must be > 0"),
        ("tsallis-inf", {"skip": "yes"}, TypeError, "skip must be a bool"),
        ("ftpl-gr", {"max_resamples": 0}, ValueError, "max_resamples must be >= 1"),
        ("exp4", {"gamma": -0.1}, ValueError, "gamma must be >= 0"),
        ("exp4", {"eta": float("nan")}, ValueError, "eta must be a finite"),
        ("no-such-agent", {}, ValueError, "unknown agent 'no-such-agent'"),
    ],
)
def test_bad_parameters(name, params, error, match):
    kwargs = {"n_experts": 3, "horizon": 20, "n_arms": 2, **params}
    with pytest.raises(error, match=match):
        agents.make(name, **kwargs)


def test_bad_observations_and_core_input():
    agent = agents.make("exp4", n_experts=3, horizon=20, n_arms=2, num_envs=2, seed=0)
    with pytest.raises(ValueError, match=r"obs\['advice'\] must hold 2 x 6 values"):
        agent.act({"advice": np.zeros((2, 5)), "last_action": [0, 0], "last_loss": [0, 0]})
    with pytest.raises(TypeError, match="needs bandit observations"):
        agent.act(np.zeros((2, 3)))
    core = Exp3Core(rng(2), 3, eta=0.1)
    with pytest.raises(ValueError, match=r"arms must lie in \[0, 3\)"):
        core.update(np.array([0, 3]), np.zeros(2))
    with pytest.raises(ValueError, match="feedback must be a finite"):
        core.update(np.array([0, 1]), np.array([0.0, np.inf]))
    with pytest.raises(TypeError, match="rng must be a BatchRNG"):
        Exp3Core(np.random.default_rng(0), 3, eta=0.1)
