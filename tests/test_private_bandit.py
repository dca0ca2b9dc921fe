"""Batch-and-Laplace private bandits (PAB Alg. 1 ``private-batched-bandit`` and Thm 7
``private-bandit-over-experts``).

Known answers (tau = 1 and no noise = EXP3; identity experts = the base learner), batching and
update counts, the trailing partial batch, noise scales, tuning formulas, batch = single runs
and bad input.
"""

from __future__ import annotations

import math
from types import SimpleNamespace

import gymnasium as gym
import numpy as np
import pytest
from _played import played_static_regret
from conftest import rollout

import agents
import dp_experts_env  # noqa: F401  (registers the env ids)
from agents.bandit_core import Exp3Core, TsallisInfCore, tsallis_inf_weights
from agents.base import AGENT_STREAM
from agents.private_bandit import PrivateBanditOverExperts, PrivateBatchedBandit
from agents.private_bandit_tuning import base_noisy_regret, base_parameters, tune_batched_bandit
from dp_experts_env.batch_rng import BatchRNG, run_seeds
from dp_experts_env.evaluation.audit import audit_agent

K, T = 3, 50
BASES = ("tsallis-inf", "exp3", "ftpl-gr")


def make_game(horizon=T, n=K, k=K, seed=0, identity=True):
    rng = np.random.default_rng(seed)
    advice = np.broadcast_to(np.eye(k), (horizon, k, k)) if identity else None
    if not identity:
        advice = rng.dirichlet(np.ones(k), size=(horizon, n))
    return np.asarray(advice), rng.random((horizon, k))


def capture_releases(agent):
    """Wrap the base learner's update to record (choices, released feedback) per batch."""
    seen = []
    core = agent.base_learner
    update = core.update

    def spy(arms, feedback, mask=None):
        seen.append((np.array(arms), np.array(feedback), core.distribution().copy()))
        update(arms, feedback, mask)

    core.update = spy
    return seen


# ------------------------------------------------------------------ known answers
def test_tau_one_noise_off_exp3_base_equals_textbook_exp3():
    advice, losses = make_game()
    eta, gamma = 0.4, 0.1
    agent = PrivateBatchedBandit(K, T, n_arms=K, base="exp3", tau=1, eta=eta, gamma=gamma, seed=4)
    agent._noiseless = True
    acts = rollout(agent, losses, advice=advice).actions[:, 0]
    rng = BatchRNG(run_seeds(4, 1), stream=AGENT_STREAM)
    cum = np.zeros(K)
    for t in range(T):
        w = np.exp(-eta * (cum - cum.min()))
        p = (1 - gamma) * w / w.sum() + gamma / K
        a = int(rng.categorical(p[None])[0])
        assert a == acts[t]
        cum[a] += losses[t, a] / p[a]


def test_tau_one_noise_off_equals_registered_exp3_baseline():
    advice, losses = make_game()
    base = agents.make("exp3", n_experts=K, horizon=T, n_arms=K, eta=0.4, gamma=0.1, seed=9)
    mine = PrivateBatchedBandit(K, T, n_arms=K, base="exp3", tau=1, eta=0.4, gamma=0.1, seed=9)
    mine._noiseless = True
    np.testing.assert_array_equal(
        rollout(mine, losses, advice=advice).actions, rollout(base, losses, advice=advice).actions
    )


@pytest.mark.parametrize("base", ["tsallis-inf", "exp3"])
def test_over_identity_experts_reproduces_the_base_learner(base):
    # Alg. 5 with identity experts plays exactly the chosen meta-arm, and its base learner sees
    # the same releases, hence has the same law, as Alg. 1's base learner forced to the same arms.
    advice, losses = make_game(horizon=40)
    kw = {"n_arms": K, "base": base, "tau": 3, "seed": 2, "num_envs": 4}
    over = PrivateBanditOverExperts(K, 40, **kw)
    over._noiseless = True
    choices = []
    acts = rollout(
        over, losses, advice=advice, record=lambda a: choices.append(a.choice.copy())
    ).actions
    np.testing.assert_array_equal(acts, np.array(choices))

    over = PrivateBanditOverExperts(K, 40, **kw)
    over._noiseless = True
    seen_over = capture_releases(over)
    rollout(over, losses, advice=advice, flush=True)
    plain = PrivateBatchedBandit(K, 40, **kw)
    plain._noiseless = True
    forced = iter([arms for arms, _, _ in seen_over])
    plain.base_learner.sample = lambda: next(forced)
    seen_plain = capture_releases(plain)
    rollout(plain, losses, advice=advice, flush=True)
    assert len(seen_over) == len(seen_plain) == 40 // 3
    for (a1, y1, p1), (a2, y2, p2) in zip(seen_over, seen_plain, strict=True):
        np.testing.assert_array_equal(a1, a2)
        np.testing.assert_array_equal(y1, y2)
        np.testing.assert_allclose(p1, p2, rtol=0, atol=1e-15)


def test_over_experts_samples_only_the_chosen_experts_advice():
    advice, losses = make_game(horizon=30, n=4, k=K, identity=False)
    advice[:, 1] = np.eye(K)[2]  # expert 1 always says arm 2
    agent = PrivateBanditOverExperts(4, 30, n_arms=K, tau=5, epsilon=1.0, num_envs=64, seed=0)
    choices = []
    acts = rollout(
        agent, losses, advice=advice, record=lambda a: choices.append(a.choice.copy())
    ).actions
    choices = np.array(choices)
    assert np.all(acts[choices == 1] == 2)
    for start in range(0, 30, 5):  # the expert is held for the whole batch
        assert np.all(choices[start : start + 5] == choices[start])


def test_htinf_solver_on_negative_cumulative_losses():
    rng = np.random.default_rng(1)
    cum = -np.abs(rng.normal(0, 50, size=(200, 6))) * rng.random((200, 1))
    cum[0] = [-1e4, -1e4 + 1e-9, 0, 3, -7, 1e3]  # near-ties and a wide spread
    beta = rng.uniform(0.1, 30, size=200)
    x = tsallis_inf_weights(cum, beta)
    assert np.all(x > 0)
    np.testing.assert_allclose(x.sum(axis=1), 1.0, rtol=0, atol=1e-12)
    # Stationarity: beta / sqrt(x_i) - L_i is the same nu for every arm.
    nu = beta[:, None] / np.sqrt(x) - cum
    assert np.max(np.ptp(nu, axis=1) / np.maximum(1, np.abs(nu).max(axis=1))) < 1e-9
    # Inside the agent, after large negative noisy releases.
    agent = PrivateBatchedBandit(K, T, n_arms=K, tau=1, epsilon=0.05, sigma=1.0, num_envs=3)
    agent.base_learner.cum_estimate[:] = [[-500.0, -499.0, 0.0]] * 3
    np.testing.assert_allclose(agent.base_learner.distribution().sum(axis=1), 1, atol=1e-12)


# ------------------------------------------------------------------ batching
@pytest.mark.parametrize("tau", [1, 2, 3, 7, 50])
@pytest.mark.parametrize("cls", [PrivateBatchedBandit, PrivateBanditOverExperts])
def test_base_learner_updated_floor_t_over_tau_times(cls, tau):
    advice, losses = make_game()
    agent = cls(K, T, n_arms=K, tau=tau, base="exp3", epsilon=0.5, num_envs=5, seed=1)
    choices = []
    acts = rollout(
        agent, losses, advice=advice, record=lambda a: choices.append(a.choice.copy()), flush=True
    ).actions
    assert np.all(agent.base_learner.n_updates == T // tau)
    choices = np.array(choices)
    if cls is PrivateBatchedBandit:
        np.testing.assert_array_equal(acts, choices)
    for start in range(0, T, tau):  # one choice per batch; the tail holds the last one (E-PAB-2)
        block = choices[start : start + tau]
        assert np.all(block == block[0])
    tail = T - (T // tau) * tau
    if tail:
        assert np.all(choices[-tail:] == choices[-tail - 1])


def test_tail_sample_draws_a_fresh_choice_without_learning():
    advice, losses = make_game()
    agent = PrivateBatchedBandit(K, T, n_arms=K, tau=7, tail="sample", num_envs=400, seed=0)
    choices = []
    rollout(
        agent, losses, advice=advice, record=lambda a: choices.append(a.choice.copy()), flush=True
    )
    choices = np.array(choices)
    assert np.all(agent.base_learner.n_updates == T // 7)
    assert np.all(choices[49] == choices[-1])  # rounds 50..51 (1-based) form the tail
    assert np.mean(choices[49] != choices[48]) > 0.2  # a fresh draw, not the held arm


# ------------------------------------------------------------------ noise
@pytest.mark.parametrize(
    ("kwargs", "tau"),
    [
        ({"epsilon": 0.1}, 10),  # paper: tau = ceil(1/epsilon)
        ({"epsilon": 0.3}, 4),
        ({"epsilon": 2.0}, 1),
        ({"epsilon": 0.1, "tau": 6}, 6),
    ],
)
def test_noise_scale_is_one_over_tau_epsilon(kwargs, tau):
    agent = PrivateBatchedBandit(K, 1000, n_arms=K, tuning="paper", **kwargs)
    assert agent.tau == tau
    assert agent.noise_scale == pytest.approx(1 / (tau * kwargs["epsilon"]), rel=1e-15)
    grid = PrivateBatchedBandit(K, 1000, n_arms=K, noise="grid", tuning="paper", **kwargs)
    assert grid.noise_scale == pytest.approx((1 / tau + 2.0**-20) / kwargs["epsilon"], rel=1e-15)
    cal = PrivateBatchedBandit(K, 1000, n_arms=K, tuning="calibrated", epsilon=kwargs["epsilon"])
    assert cal.noise_scale == pytest.approx(1 / (cal.tau * kwargs["epsilon"]), rel=1e-15)


@pytest.mark.parametrize("cls", [PrivateBatchedBandit, PrivateBanditOverExperts])
def test_released_batch_means_carry_the_claimed_laplace_noise(cls):
    tau, b = 4, 5000
    advice = np.broadcast_to(np.eye(K), (tau, K, K))
    losses = np.full((tau, K), 0.25)
    # A fixed seed: unseeded, the median check below failed about once in 2,500 runs (its
    # standard error is 1.4% of the scale against a 5% bound) -- once in CI.
    agent = cls(K, tau, n_arms=K, tau=tau, epsilon=0.5, base="exp3", gamma=0.1, num_envs=b, seed=0)
    seen = capture_releases(agent)
    rollout(agent, losses, advice=advice, flush=True)
    ((_, released, _),) = seen
    noise = released - 0.25
    # E|Lap(s)| = s; the mean of 5000 draws has a 1.4 % standard error: allow 5 %.
    assert np.mean(np.abs(noise)) == pytest.approx(agent.noise_scale, rel=0.05)
    assert agent.noise_scale == pytest.approx(1 / (tau * 0.5))
    assert abs(np.median(noise)) < 0.05 * agent.noise_scale


# ------------------------------------------------------------------ tuning
def test_paper_tuning_uses_lemma_level_constants_at_the_base_horizon():
    horizon, eps = 10_000, 0.1
    for base in BASES:
        tuned = tune_batched_bandit(base, 4, horizon, eps, "paper")
        assert tuned.tau == 10 and tuned.n_batches == 1000 and tuned.lam == pytest.approx(1.0)
    lg = math.log(4 * 1000)
    eta = math.sqrt(math.log(4) / (2 * 1000 * 4 * (1 + 10 * lg**2)))
    exp3 = base_parameters("exp3", 4, 1000, 1.0)
    assert exp3["eta"] == pytest.approx(eta) and exp3["gamma"] == pytest.approx(4 * eta * 4 * lg)
    ftpl = base_parameters("ftpl-gr", 4, 1000, 1.0)
    assert ftpl["resample_cap"] == math.ceil(math.sqrt(4000))
    assert ftpl["eta"] == pytest.approx(
        min(
            math.sqrt(math.log(4) / (4000 * (1 + 10 * lg**2))),
            1 / (ftpl["resample_cap"] * (1 + 4 * math.log(1000))),
        )
    )
    assert base_parameters("tsallis-inf", 4, 1000, 0.5)["sigma"] == pytest.approx(math.sqrt(3))


def test_calibrated_tau_minimises_the_bound_over_all_batch_lengths():
    horizon, eps, m = 3000, 0.05, 4
    for base in BASES:
        tuned = tune_batched_bandit(base, m, horizon, eps, "calibrated")
        bounds = [
            t * base_noisy_regret(base, m, horizon // t, 1 / (eps * t), "calibrated") + t
            for t in range(1, horizon // 10 + 1)
        ]
        assert tuned.bound == pytest.approx(min(bounds))
        assert tuned.tau <= horizon // 10
    # HTINF's bound is minimised near tau = sqrt(2)/epsilon.
    assert abs(tune_batched_bandit("tsallis-inf", 4, 10**6, 0.01, "calibrated").tau - 141) <= 2


def test_paper_tuning_refuses_invalid_theorem_parameters():
    with pytest.raises(ValueError, match=r"epsilon >= 1/T"):
        PrivateBatchedBandit(K, 100, n_arms=K, epsilon=0.001, tuning="paper")
    with pytest.raises(ValueError, match="EXP3 mixing gamma"):
        PrivateBatchedBandit(8, 10, n_arms=8, epsilon=1.0, base="exp3", tuning="paper")


# ------------------------------------------------------------------ claims, batches, errors
@pytest.mark.parametrize("name", ["private-batched-bandit", "private-bandit-over-experts"])
def test_claim(name):
    agent = agents.make(name, n_experts=K, horizon=T, n_arms=K, epsilon=0.5)
    claim = agent.privacy
    assert (claim.epsilon, claim.delta, claim.model, claim.feedback) == (
        0.5,
        0,
        "central",
        "bandit",
    )
    assert claim.certified and "Lemma 3" in claim.accountant
    assert agents.spec(name).private


def test_over_experts_claim_does_not_extend_advice_privacy_to_the_played_arms():
    # Every expert recommends arm 0, except at round 5 where every expert recommends arm 1: the
    # played arm at round 5 follows the advice with certainty, so the actions are not private
    # with respect to the advice (only the chosen experts are, Thm 7's remark).
    n, b = 3, 64
    adv = np.broadcast_to(np.eye(K)[0], (T, n, K)).copy()
    adv_changed = adv.copy()
    adv_changed[5] = np.eye(K)[1]
    _, losses = make_game()
    acts = rollout(
        PrivateBanditOverExperts(n, T, n_arms=K, num_envs=b, seed=0), losses, advice=adv
    ).actions
    agent = PrivateBanditOverExperts(n, T, n_arms=K, num_envs=b, seed=0)
    acts_changed = rollout(agent, losses, advice=adv_changed).actions
    assert np.all(acts[5] == 0) and np.all(acts_changed[5] == 1)
    assert "played arms are not" in agent.privacy.notes


@pytest.mark.parametrize("name", ["private-batched-bandit", "private-bandit-over-experts"])
@pytest.mark.parametrize(("base", "noise"), [(b, "fast") for b in BASES] + [("exp3", "grid")])
def test_batch_equals_single_runs(name, base, noise):
    advice, losses = make_game(horizon=40, n=4, identity=False)
    params = {"n_experts": 4, "horizon": 40, "n_arms": K, "epsilon": 0.5, "tau": 3}
    params |= {"base": base, "noise": noise, "tuning": "calibrated"}
    batch = rollout(agents.make(name, num_envs=3, seed=7, **params), losses, advice=advice).actions
    for b in range(3):
        single = rollout(agents.make(name, seed=7 + b, **params), losses, advice=advice).actions
        np.testing.assert_array_equal(batch[:, b], single[:, 0])


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"base": "ucb"}, "base must be one of"),
        ({"tau": 0}, "tau must be >= 1"),
        ({"tau": T + 1}, f"tau must be <= {T}"),
        ({"tail": "drop"}, "tail must be one of"),
        ({"gamma": 0.1}, "gamma does not apply to base='tsallis-inf'"),
        ({"base": "exp3", "sigma": 1.0}, "sigma does not apply to base='exp3'"),
        ({"base": "exp3", "gamma": 1.5}, "gamma must be <= 1"),
        ({"base": "ftpl-gr", "resample_cap": 0}, "resample_cap must be >= 1"),
        ({"sigma": -1.0}, "sigma must be > 0"),
        ({"delta": 1e-6}, "delta must be 0"),
        ({"epsilon": -1.0}, "epsilon must be > 0"),
        ({"tuning": "magic"}, "tuning must be one of"),
        ({"mode": "lax"}, "mode must be one of"),
    ],
)
def test_bad_parameters(kwargs, match):
    with pytest.raises(ValueError, match=match):
        PrivateBatchedBandit(K, T, n_arms=K, **kwargs)


def test_feedback_of_another_arm_is_refused():
    agent = PrivateBatchedBandit(K, T, n_arms=K, tau=2)
    obs = {"advice": np.eye(K).reshape(-1), "last_action": 0, "last_loss": 0.0}
    a = agent.act(obs)
    with pytest.raises(ValueError, match="differs from the arms this agent played"):
        agent.act({**obs, "last_action": (a + 1) % K})


def test_exp3_core_and_tsallis_core_are_the_bases_used():
    assert isinstance(PrivateBatchedBandit(K, T, n_arms=K, base="exp3").base_learner, Exp3Core)
    assert isinstance(PrivateBatchedBandit(K, T, n_arms=K).base_learner, TsallisInfCore)


# ------------------------------------------------------------------ privacy audits
# PAB's Lemma 11 / Fig. 1 pair (K = 2): arm 2 has loss 0 in round 1 on one side, 1 on the other;
# every other loss is 1. Agents are built by factories so the noise can be removed (mutants).
FIG1 = np.ones((12, 2))
FIG1[0, 1] = 0.0
FIG1_NEIGHBOUR = np.ones((12, 2))
ADVICE3 = np.array([[1.0, 0.0], [0.0, 1.0], [0.5, 0.5]])  # N = 3 experts over K = 2 arms
# Fast-reacting constants make a leak visible; privacy holds for any constants.
LOUD = {"base": "exp3", "tau": 1, "eta": 3.0, "gamma": 0.05, "epsilon": 0.5}


def factory(cls, n_experts=2, noise_factor=1.0, **kw):
    def build(num_envs, seed):
        agent = cls(n_experts, 12, n_arms=2, num_envs=num_envs, seed=seed, **kw)
        if noise_factor == 0:
            agent._noiseless = True
        else:
            # A mutant that releases with less noise than its (unchanged) claim accounts for.
            agent._release_epsilon /= noise_factor
        return agent

    return build


@pytest.mark.parametrize(
    ("cls", "n_experts", "advice"),
    [(PrivateBatchedBandit, 2, None), (PrivateBanditOverExperts, 3, ADVICE3)],
)
def test_audit_passes_and_catches_the_noise_removed(cls, n_experts, advice):
    kw = {"n_runs": 10_000, "seed": 3, "advice": advice}
    ok = audit_agent(factory(cls, n_experts, **LOUD), FIG1, FIG1_NEIGHBOUR, **kw)
    assert ok.passed, ok.summary()
    assert ok.claimed_epsilon == 0.5
    bad = audit_agent(factory(cls, n_experts, 0.0, **LOUD), FIG1, FIG1_NEIGHBOUR, **kw)
    assert not bad.passed and bad.epsilon_lower_bound > 2.0, bad.summary()
    # Noise ten times too small (true epsilon 5) is caught as well.
    weak = audit_agent(factory(cls, n_experts, 0.1, **LOUD), FIG1, FIG1_NEIGHBOUR, **kw)
    assert not weak.passed, weak.summary()


@pytest.mark.parametrize("base", BASES)
def test_audit_passes_with_the_default_tuning(base):
    res = audit_agent(
        "private-batched-bandit", FIG1, FIG1_NEIGHBOUR, n_runs=10_000, epsilon=0.5, base=base
    )
    assert res.passed, res.summary()


def test_plain_exp3_is_caught_on_the_fig1_pair():
    class ClaimedExp3(agents.spec("exp3").cls):
        @property
        def privacy(self):
            return agents.PrivacyClaim(epsilon=1.0, feedback="bandit", accountant="none (mutant)")

    def build(num_envs, seed):
        return ClaimedExp3(2, 12, n_arms=2, eta=3.0, gamma=0.05, num_envs=num_envs, seed=seed)

    res = audit_agent(build, FIG1, FIG1_NEIGHBOUR, n_runs=10_000, seed=3)
    assert not res.passed and res.epsilon_lower_bound > 2.0, res.summary()


# ------------------------------------------------------------------ utility on the envs
HORIZON = 4000


def final_regret(env_id, name, seed=0, **params):
    """Mean final static regret over 8 runs (name None: uniform play), fixed seeds."""
    env_kw = {"n_arms": 4, "gap": 0.3} if env_id == "DPExperts-Bandit-v0" else {}
    if env_id == "DPExperts-BanditAdvice-v0":  # planted expert
        env_kw = {"n_arms": 2, "n_experts": 8, "gap": 0.4, "rho": 0.0}
    env = gym.make_vec(
        env_id, num_envs=8, vectorization_mode="vector_entry_point", horizon=HORIZON, **env_kw
    )
    coins = np.random.default_rng(seed + 100)
    if name is None:  # uniform play from its own coins
        agent = SimpleNamespace(act=lambda obs: coins.integers(env_kw["n_arms"], size=8))
        regret = rollout(agent, env=env, seed=seed, rounds=HORIZON).info["static_regret"]
    else:
        agent = agents.make(name, env=env, seed=seed + 100, **params)
        regret = played_static_regret(env, agent, seed)
    env.close()
    return float(np.mean(regret))


@pytest.mark.slow
def test_batched_bandit_utility_on_the_k_armed_bandit():
    # Alg. 1 ignores advice and competes with the best arm, so its home is DPExperts-Bandit-v0.
    uniform = final_regret("DPExperts-Bandit-v0", None)
    for base in BASES:
        kw = {"base": base, "tuning": "calibrated"}
        low = final_regret("DPExperts-Bandit-v0", "private-batched-bandit", epsilon=0.5, **kw)
        high = final_regret("DPExperts-Bandit-v0", "private-batched-bandit", epsilon=16.0, **kw)
        assert high < 0.9 * uniform and high < low - 50 and low < uniform, (
            base,
            uniform,
            low,
            high,
        )


@pytest.mark.slow
def test_bandit_over_experts_utility_on_the_planted_expert():
    env_id, name = "DPExperts-BanditAdvice-v0", "private-bandit-over-experts"
    uniform = final_regret(env_id, None)
    low = final_regret(env_id, name, epsilon=0.5, tuning="calibrated")
    high = final_regret(env_id, name, epsilon=16.0, tuning="calibrated")
    assert high < 0.5 * uniform and high < low - 100 and low < 0.9 * uniform, (uniform, low, high)
