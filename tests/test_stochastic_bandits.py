"""UCB1, KL-UCB, Thompson sampling and AdaP-UCB: known answers, privacy bookkeeping, log T rate.

The contract (batching, seeding, claims, docs rows), the epsilon-monotonicity of AdaP-UCB and its
audit (correct, noise x0.5, noise removed) run in test_learner_contract.py and test_audit_zoo.py;
here: each policy against a scalar re-implementation (brute force), the KL bound against a root
finder, the episode bookkeeping of AdaP-UCB, and the rate check -- on a gapped Bernoulli instance
regret grows by about the same amount per decade of T (log T), where EXP3 (sqrt T) fails.
"""

import math

import numpy as np
import pytest
from scipy.optimize import brentq

import agents
from agents.ucb import bernoulli_kl, kl_lower_bound


def _obs(k, runs, last_action, last_loss):
    return {
        "advice": np.broadcast_to(np.eye(k), (runs, k, k)),
        "last_action": np.asarray(last_action, dtype=np.int64),
        "last_loss": np.asarray(last_loss, dtype=np.float64),
    }


def play(name, losses, *, seed=0, **params):
    """Actions (T, B) of ``name`` on a (T, B, K) loss array (bandit feedback)."""
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


def bernoulli_losses(horizon, runs, means, seed):
    rng = np.random.default_rng(seed)
    return (rng.random((horizon, runs, len(means))) < np.asarray(means)).astype(float)


# ----------------------------------------------------------------------------- known answers
def _reference_index_policy(losses, index):
    """Scalar loop: round robin, then argmin of ``index(mean, n, t)`` (lowest arm on ties)."""
    horizon, k = losses.shape
    sums, counts, out = np.zeros(k), np.zeros(k, dtype=int), []
    for t in range(horizon):
        if t < k:
            a = t
        else:
            scores = [index(sums[i] / counts[i], counts[i], t) for i in range(k)]
            a = int(np.argmin(scores))
        out.append(a)
        sums[a] += losses[t, a]
        counts[a] += 1
    return np.array(out)


def test_ucb1_matches_a_scalar_reference():
    losses = bernoulli_losses(400, 3, [0.4, 0.5, 0.55], seed=1)
    actions, _ = play("ucb1", losses)
    for b in range(3):
        ref = _reference_index_policy(
            losses[:, b], lambda m, n, t: m - math.sqrt(2.0 * math.log(t) / n)
        )
        np.testing.assert_array_equal(actions[:, b], ref)


def _kl_root(p, level):
    if p == 0.0:
        return 0.0
    f = lambda q: bernoulli_kl(np.array(p), np.array(q)) - level  # noqa: E731
    return 0.0 if f(1e-300) <= 0 else brentq(f, 1e-300, p, xtol=1e-15)


def test_kl_lower_bound_matches_a_root_finder():
    rng = np.random.default_rng(0)
    p = np.concatenate([rng.random(200), [0.0, 1.0, 0.5, 1e-3]])
    level = np.concatenate([rng.exponential(0.2, 200), [0.3, 0.5, 0.0, 1.0]])
    q = kl_lower_bound(p, level)
    exact = np.array([_kl_root(a, b) for a, b in zip(p, level, strict=True)])
    assert np.all(q <= exact + 1e-12)  # never above the exact bound (Newton from below)
    np.testing.assert_allclose(q, exact, atol=1e-8)


def test_kl_ucb_matches_a_scalar_reference():
    losses = bernoulli_losses(300, 2, [0.3, 0.5, 0.6], seed=2)
    actions, _ = play("kl-ucb", losses)
    for b in range(2):
        ref = _reference_index_policy(losses[:, b], lambda m, n, t: _kl_root(m, math.log(t) / n))
        np.testing.assert_array_equal(actions[:, b], ref)


def test_thompson_posterior_counts_and_concentration():
    # 0/1 losses: the Bernoulli trial returns the loss itself, so the Beta counts are the
    # numbers of 1-losses; with arm 0 never losing, the posterior piles onto it.
    horizon, runs = 300, 4
    losses = np.ones((horizon, runs, 3))
    losses[:, :, 0] = 0.0
    actions, agent = play("thompson", losses)
    np.testing.assert_array_equal(actions[:3], np.tile([[0], [1], [2]], (1, runs)))
    played = np.stack([(actions[:-1] == i).sum(0) for i in range(3)], axis=1)
    np.testing.assert_array_equal(agent.counts, played)
    np.testing.assert_array_equal(agent.sums[:, 0], 0.0)  # arm 0 never lost
    np.testing.assert_array_equal(agent.sums[:, 1:], agent.counts[:, 1:])
    assert (actions[100:] == 0).mean() > 0.97


def test_thompson_beta_draws_have_the_posterior_mean():
    # Fixed counts: the index is a Beta(1 + F, 1 + n - F) draw, mean (1 + F) / (2 + n).
    agent = agents.make("thompson", n_experts=2, n_arms=2, horizon=10, num_envs=4000, seed=0)
    agent.counts[:] = [10, 40]
    agent.sums[:] = [3, 30]
    agent.t = 5
    draws = agent._index()
    np.testing.assert_allclose(draws.mean(0), [4 / 12, 31 / 42], atol=0.01)
    np.testing.assert_allclose(
        draws.var(0), [4 * 8 / (12**2 * 13), 31 * 11 / (42**2 * 43)], rtol=0.1
    )


# ----------------------------------------------------------------------------- AdaP-UCB
def test_adap_ucb_episodes_double_and_release_last_episode_means():
    losses = bernoulli_losses(500, 3, [0.2, 0.6], seed=3)
    actions, agent = play("adap-ucb", losses, epsilon=math.inf)
    for b in range(3):
        a = actions[:, b]
        np.testing.assert_array_equal(a[:2], [0, 1])
        # Cut the run into episodes: after the first K, each one is as long as all earlier
        # plays of its arm, so its arm's count doubles.
        counts, t = np.zeros(2, dtype=int), 0
        means = np.zeros(2)
        while t < len(a):
            arm = a[t]
            length = 1 if t < 2 else counts[arm]
            assert np.all(a[t : t + length] == arm), (b, t)
            if t + length <= len(a):  # a completed episode: its exact mean at eps = inf
                means[arm] = losses[t : t + length, b, arm].mean()
                counts[arm] += length
            t += length
        np.testing.assert_allclose(agent.private_mean[b], means)


def test_adap_ucb_claim_and_noise_scale():
    agent = agents.make("adap-ucb", n_experts=4, n_arms=4, horizon=100, epsilon=0.5, seed=0)
    claim = agent.privacy
    assert claim.epsilon == 0.5 and claim.delta == 0.0 and claim.certified
    assert "parallel composition" in claim.accountant and agent.noise_scale == 2.0
    with pytest.raises(ValueError, match="delta"):
        agents.make("adap-ucb", n_experts=2, n_arms=2, horizon=10, delta=1e-6)
    with pytest.raises(ValueError, match="alpha"):
        agents.make("adap-ucb", n_experts=2, n_arms=2, horizon=10, alpha=0.0)


def test_adap_ucb_release_noise_is_laplace_of_scale_one_over_epsilon():
    # Identical losses, eps = 1 vs eps = inf, same seed: every released mean differs by
    # Lap(1/eps) / episode length; the length-1 episodes of the round robin show it directly.
    runs = 10_000  # standard error of the mean |z|: 0.01
    losses = np.full((3, runs, 2), 0.5)
    _, noisy = play("adap-ucb", losses, epsilon=1.0)
    _, exact = play("adap-ucb", losses, epsilon=math.inf)
    z = (noisy.private_mean - exact.private_mean)[:, 0]
    assert abs(np.mean(np.abs(z)) - 1.0) < 0.03  # E|Lap(1)| = 1
    assert abs(np.median(z)) < 0.03


# ----------------------------------------------------------------------------- log T rate
def regret_per_run(name, horizon, *, runs=8, gap=0.2, seed=0, **params):
    """Mean pseudo-regret of a K = 2 bandit: arm 0 Bernoulli(0.5 - gap), arm 1 Bernoulli(0.5).

    The game is oblivious (both arms' losses drawn up front), so a learner with a bandit block
    path plays it in one ``play_bandit_block`` call -- bit for bit its ``act`` calls
    (test_klucb_block.py, test_ucb_block.py, test_ucb1_block.py, test_tsallis_block.py) at a
    fraction of the interpreter's cost; the others play round by round on the same losses.
    """
    agent = agents.make(
        name, n_experts=2, n_arms=2, horizon=horizon, num_envs=runs, seed=seed, **params
    )
    rng = np.random.default_rng(seed + 1)
    losses = (rng.random((horizon, runs, 2)) < np.array([0.5 - gap, 0.5])).astype(float)
    first = _obs(2, runs, np.zeros(runs, dtype=np.int64), np.zeros(runs))
    if hasattr(agent, "play_bandit_block"):
        actions = agent.play_bandit_block(first, None, losses, np.arange(runs))
    else:
        actions, obs, every = np.zeros((horizon, runs), dtype=np.int64), first, np.arange(runs)
        for t in range(horizon):
            actions[t] = agent.act(obs)
            obs = _obs(2, runs, actions[t], losses[t, every, actions[t]])
    return gap * int(actions.sum()) / runs


#: per decade of T, a log-T learner's regret grows by about the same amount (ratio of successive
#: increments ~ 1), a sqrt-T learner's by sqrt(10) = 3.16 times more; the check allows 2.
MAX_INCREMENT_RATIO = 2.0


def _increment_ratio(regrets):
    r1, r2, r3 = regrets
    return (r3 - r2) / max(r2 - r1, 1e-9)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("name", "params"),
    [("ucb1", {}), ("kl-ucb", {}), ("thompson", {}), ("adap-ucb", {"epsilon": 1.0})],
)
def test_regret_grows_like_log_t_on_a_gapped_instance(name, params):
    regrets = [regret_per_run(name, t, **params) for t in (1_000, 10_000, 100_000)]
    assert regrets[0] < regrets[1] < regrets[2], regrets  # it keeps paying (not vacuous)
    assert _increment_ratio(regrets) < MAX_INCREMENT_RATIO, regrets
    assert regrets[2] < 0.05 * 0.2 * 100_000, regrets  # far below uniform play (T gap / 2)


@pytest.mark.slow
def test_the_rate_check_rejects_sqrt_t_learners():
    """Control: EXP3 (sqrt T regret) and uniform play fail the same check."""
    regrets = [regret_per_run("exp3", t) for t in (1_000, 10_000, 100_000)]
    assert _increment_ratio(regrets) > MAX_INCREMENT_RATIO, regrets
    uniform = [0.2 * t / 2 for t in (1_000, 10_000, 100_000)]
    assert _increment_ratio(uniform) > MAX_INCREMENT_RATIO
