"""gaussian-tree-hedge (agents/gaussian_tree_hedge.py, issue #38): Hedge on a Gaussian tree.

Known answers: the tree's sums with the noise scaled to zero equal the running sums, the node
noise's variance, epsilon = inf equal to hedge bit for bit, the claim against dp-accounting and
the zCDP conversion, bad input; the release-level audit (the audit's statistics on the released
node) passes the learner and catches its noise-halved mutant, which no action event shows
(tests/test_audit_zoo.py pins that); the issue's static-regret claim at a test size.
"""

import math

import numpy as np
import pytest
from conftest import rollout

import agents
from agents.gaussian_tree_hedge import GaussianTreeHedge
from dp_experts_env.privacy.audit import audit_mechanism
from dp_experts_env.privacy.declaration import library_epsilon
from dp_experts_env.privacy.gaussian import gdp_mu
from dp_experts_env.privacy.noise import ScaledBackend


def _losses(t, b, n, seed=0):
    return np.random.default_rng(seed).random((t, b, n))


def test_calibration_is_the_gaussian_tree_seam():
    agent = GaussianTreeHedge(10, 10_000, epsilon=1.0)
    assert agent.delta == 1e-6 and agent.levels == (9999).bit_length() == 14
    mu = gdp_mu(1.0, 1e-6)
    assert agent.node_scale == pytest.approx(math.sqrt(14 * 10) / mu, rel=1e-9)
    assert agent.eta == math.sqrt(8 * math.log(10) / 10_000)
    claim = agent.privacy
    assert claim.epsilon == pytest.approx(1.0, abs=1e-9) and claim.delta == 1e-6
    assert claim.certified and claim.holds_against == "adaptive"


def test_claim_matches_dp_accounting_and_beats_zcdp():
    from dataclasses import replace

    agent = GaussianTreeHedge(10, 2000, epsilon=1.0)
    tree = agent.declaration.part
    zcdp = replace(tree, profile="zcdp").cost()[0]  # the same noise through zCDP: looser
    assert zcdp > 1.2 * agent.privacy.epsilon
    pytest.importorskip("dp_accounting")
    assert library_epsilon(agent.declaration, 1e-6) == pytest.approx(1.0, abs=2e-3)


def test_epsilon_inf_is_hedge_bit_for_bit():
    t, b, n = 200, 3, 6
    losses = _losses(t, b, n)
    ours = GaussianTreeHedge(n, t, epsilon=math.inf, num_envs=b, seed=4)
    twin = agents.make("hedge", n_experts=n, horizon=t, num_envs=b, seed=4)
    assert ours.eta == twin.eta and not ours.privacy.is_private
    np.testing.assert_array_equal(rollout(ours, losses).actions, rollout(twin, losses).actions)


def test_tree_sums_are_the_running_sums_when_the_noise_is_scaled_to_zero():
    t, b, n = 37, 2, 3
    losses = _losses(t, b, n, seed=1)
    agent = GaussianTreeHedge(n, t, num_envs=b, seed=0, noise=ScaledBackend("fast", 0.0))
    out = rollout(agent, losses, record=lambda g: g._sums.copy())
    # After act of round r + 1 the sums hold rounds 1..r.
    expected = np.cumsum(losses[:-1], axis=0)
    np.testing.assert_allclose(out.records[1:], expected, rtol=1e-12, atol=1e-12)


def test_node_noise_variance_is_popcount_times_sigma_squared():
    """At t = 7 the sums read 3 noisy nodes: variance 3 sigma^2 per coordinate (4000 runs,
    seed 0; tolerance 10%, about 4 standard errors of a variance estimate)."""
    b, n, t = 4000, 2, 9
    agent = GaussianTreeHedge(n, t, epsilon=1.0, num_envs=b, seed=0)
    zero = np.zeros((b, n))
    for _ in range(8):  # act of round 8 has fed rounds 1..7
        agent.act(zero)
    var = agent._sums.var(axis=0)
    np.testing.assert_allclose(var, 3 * agent.node_scale**2, rtol=0.1)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"delta": 0.0}, "delta"),
        ({"noise": "grid"}, "grid"),
        ({"eta": -1.0}, "eta"),
        ({"epsilon": -1.0}, "epsilon"),
    ],
)
def test_bad_parameters_are_refused_by_name(kwargs, match):
    with pytest.raises(ValueError, match=match):
        GaussianTreeHedge(4, 100, **kwargs)


def _release_audit(multiplier, epsilon=2.0, runs=100_000):
    """The audit's statistics on the released node of a T = 2 game (the first loss vector's
    node, the one release of a one-level tree: the whole budget), post-processed to the
    difference of the two experts' noisy sums; neighbours swap the round's losses."""

    def fn(x, rng):
        m = len(rng.seeds)
        agent = GaussianTreeHedge(
            2,
            2,
            epsilon=epsilon,
            num_envs=m,
            seed=list(rng.seeds),
            noise=ScaledBackend("fast", multiplier),
        )
        agent.act(np.zeros((m, 2)))
        agent.act(np.broadcast_to(x, (m, 2)))
        return agent._sums[:, 0] - agent._sums[:, 1]

    return audit_mechanism(
        fn,
        np.array([0.0, 1.0]),
        np.array([1.0, 0.0]),
        n_runs=runs,
        seed=0,
        claimed_epsilon=epsilon,
        claimed_delta=1e-6,
        output="real",
    )


@pytest.mark.slow
def test_release_audit_passes_the_learner_and_catches_half_noise():
    """Pinned at seed 0, 100,000 runs a side, epsilon 2, delta 1e-6: the learner shows 0.99
    (no violation), its x0.5 mutant (true epsilon 4.3 at this delta) 2.09 > 2."""
    good, half = _release_audit(1.0), _release_audit(0.5)
    assert good.passed and good.epsilon_lower_bound < 2.0, good
    assert not half.passed and half.epsilon_lower_bound > 2.0, half


def test_release_audit_catches_removed_noise():
    rep = _release_audit(0.0, runs=2000)
    assert not rep.passed and rep.epsilon_lower_bound > 4.0, rep


def test_beats_the_shrinking_dartboard_on_anti_lazy():
    """The issue's static-regret claim at a test size: Oblivious-v0 `anti_lazy`, T = 2000,
    16 runs (env seeds 0-15, agent seed 10000), epsilon 1, both at delta 1e-6: mean static regret
    at most 0.6x private-shrinking-dartboard's."""
    import gymnasium as gym

    from dp_experts_env.evaluation.episode import play

    def regret(name):
        env = gym.make_vec(
            "DPExperts-Oblivious-v0",
            num_envs=16,
            vectorization_mode="vector_entry_point",
            family="anti_lazy",
            horizon=2000,
        )
        agent = agents.make(name, env=env, seed=10_000, epsilon=1.0, delta=1e-6)
        out = play(env, agent, list(range(16)), np.array([2000]))
        env.close()
        return out["static_regret"][-1]

    ours, theirs = regret("gaussian-tree-hedge"), regret("private-shrinking-dartboard")
    assert ours.mean() <= 0.6 * theirs.mean(), (ours.mean(), theirs.mean())
