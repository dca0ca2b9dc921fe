"""dp-klucb (agents/dp_klucb.py, issue #38): AdaP-UCB's private episodes with a KL-UCB index.

Known answers: the index against a scalar root-finder reference, never above AdaP-UCB's
Hoeffding index (Pinsker), the releases and claim equal to AdaP-UCB's, the episodes double; the
issue's utility claim (no more pseudo-regret than adap-ucb) on Bandit-v0 at a test size. The
contract, monotonicity in epsilon and the audit (x0.5, x0) run registry-wide.
"""

import math

import numpy as np
import pytest
from conftest import use_jit_path
from scipy.optimize import brentq

import agents
from agents.ucb import bernoulli_kl


def _obs(k, runs, last_action, last_loss):
    return {
        "advice": np.broadcast_to(np.eye(k), (runs, k, k)),
        "last_action": np.asarray(last_action, dtype=np.int64),
        "last_loss": np.asarray(last_loss, dtype=np.float64),
    }


def _play(name, losses, *, seed=0, **params):
    horizon, runs, k = losses.shape
    agent = agents.make(
        name, n_experts=k, n_arms=k, horizon=horizon, num_envs=runs, seed=seed, **params
    )
    actions = np.zeros((horizon, runs), dtype=np.int64)
    last_a, last_l = np.zeros(runs, dtype=np.int64), np.zeros(runs)
    for t in range(horizon):
        a = agent.act(_obs(k, runs, last_a, last_l))
        actions[t] = a
        last_a, last_l = a, losses[t, np.arange(runs), a]
    return actions, agent


def _bernoulli(horizon, runs, means, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.random((horizon, runs, len(means))) < np.asarray(means)).astype(float)


@pytest.mark.parametrize("means", ["last", "all"])
def test_index_matches_a_scalar_reference_and_never_exceeds_the_hoeffding_index(means):
    losses = _bernoulli(300, 4, [0.2, 0.5, 0.7], seed=1)
    _, agent = _play("dp-klucb", losses, epsilon=2.0, means=means)
    t = agent.t + 1
    index = agent.episode_index(t)
    log_t = math.log(t)
    for b in range(4):
        for i in range(3):
            if means == "last":
                n, raw, width = agent.last_length[b, i], agent.private_mean[b, i], 3.1 * log_t
            else:
                n = agent.released_count[b, i]
                raw = agent.released_sum[b, i] / n
                k = agent.released_episodes[b, i]
                us = np.linspace(0.005, 0.995, 199)  # the Chernoff bound's grid
                width = min((3.1 * log_t - k * math.log(1 - u * u)) / u for u in us)
            m = min(max(raw, 0.0), 1.0)
            level = agent.alpha * log_t / n
            if m == 0.0 or bernoulli_kl(np.array(m), np.array(0.0)) <= level:
                ref = 0.0
            else:
                ref = brentq(lambda q, m=m, lv=level: bernoulli_kl(m, q) - lv, 0.0, m)
            privacy = width / (2.0 * n)  # width / (eps n) at eps = 2
            assert index[b, i] == pytest.approx(ref - privacy, abs=1e-8), (b, i)
            hoeffding = m - math.sqrt(level / 2.0) - privacy  # AdaP-UCB's index, same mean
            assert index[b, i] >= hoeffding - 1e-12


def test_all_means_total_every_released_episode():
    """With the noise scaled to zero the released totals are the exact sums of all completed
    episodes (every play but the open episode's)."""
    from dp_experts_env.privacy.noise import ScaledBackend

    losses = _bernoulli(400, 2, [0.3, 0.6], seed=4)
    actions, agent = _play("dp-klucb", losses, noise=ScaledBackend("fast", 0.0))
    for b in range(2):
        for i in range(2):
            n = int(agent.released_count[b, i])
            rounds = np.flatnonzero(actions[:, b] == i)[:n]  # the completed episodes come first
            np.testing.assert_allclose(agent.released_sum[b, i], losses[rounds, b, i].sum())
            assert n <= len(np.flatnonzero(actions[:, b] == i))


def test_chernoff_width_is_valid_and_tight_for_one_draw():
    from agents.dp_klucb import laplace_sum_width

    level = 3.1 * math.log(1000)
    one = laplace_sum_width(np.array(1.0), level)
    assert level - math.log(2) <= one <= 1.25 * (level - math.log(2))  # exact: level - ln 2
    # k draws: far below k separate widths; and the tail holds (Monte Carlo, 10^6 sums, seed 0).
    ten = float(laplace_sum_width(np.array(10.0), 2.0))
    assert ten < 10 * float(laplace_sum_width(np.array(1.0), 2.0)) / 2
    z = np.random.default_rng(0).laplace(size=(1_000_000, 10)).sum(axis=1)
    assert np.mean(z > ten) <= math.exp(-2.0)


def test_releases_and_claim_are_adap_ucbs():
    losses = _bernoulli(200, 3, [0.3, 0.6], seed=2)
    ours = agents.make("dp-klucb", n_experts=2, n_arms=2, horizon=200, epsilon=0.5)
    theirs = agents.make("adap-ucb", n_experts=2, n_arms=2, horizon=200, epsilon=0.5)
    assert ours.privacy.epsilon == theirs.privacy.epsilon == 0.5
    assert ours.declaration == theirs.declaration
    # Episodes double (the bookkeeping is AdaP-UCB's): at eps = inf the means are exact.
    actions, agent = _play("dp-klucb", losses, epsilon=math.inf)
    for b in range(3):
        a, counts, t = actions[:, b], np.zeros(2, dtype=int), 0
        while t < len(a):
            length = 1 if t < 2 else counts[a[t]]
            assert np.all(a[t : t + length] == a[t]), (b, t)
            counts[a[t]] += length
            t += length
    with pytest.raises(ValueError, match="delta"):
        agents.make("dp-klucb", n_experts=2, n_arms=2, horizon=10, delta=1e-6)


@pytest.mark.parametrize("epsilon", [1.0, 8.0])
def test_less_pseudo_regret_than_adap_ucb_on_bandit_v0(epsilon, monkeypatch):
    """Bandit-v0 defaults (K = 5, gap 0.1), T = 10^4, 10 runs (env seeds 0-9, agent seed
    10000): dp-klucb's mean pseudo-regret <= 0.9x adap-ucb's (T = 1e4 in
    benchmarks/strongest_baselines.py)."""
    # Users' path; the numpy path's plays equal it bit for bit (test_path_equivalence.py, the
    # locks on both paths), so CI's numpy pass need not replay this utility check (tests/README.md).
    use_jit_path("compiled", monkeypatch)
    import gymnasium as gym

    from dp_experts_env.evaluation.episode import play

    def regret(name):
        env = gym.make_vec(
            "DPExperts-Bandit-v0", num_envs=10, vectorization_mode="vector_entry_point",
            horizon=10_000,
        )  # fmt: skip
        agent = agents.make(name, env=env, seed=10_000, epsilon=epsilon)
        out = play(env, agent, list(range(10)), np.array([10_000]))
        env.close()
        return out["static_pseudo_regret"][-1].mean()

    ours, theirs = regret("dp-klucb"), regret("adap-ucb")
    assert ours <= 0.9 * theirs, (ours, theirs)
