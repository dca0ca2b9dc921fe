"""Non-private full-information baselines: known answers, regret sanity, batch = single runs."""

import math

import numpy as np
import pytest
from conftest import rollout, use_jit_path

import agents
from agents.full_info import fixed_share_tuning, hedge_eta
from dp_experts_env.regret import RegretTracker

FULL = ["uniform", "follow-the-leader", "hedge", "fixed-share", "shrinking-dartboard"]


def law(agent):
    """The law of the action just played (recorded every round, as the evaluation does)."""
    return agent.action_distribution().copy()


def pseudo_regret(laws, losses, n_switches=0):
    """Regret of the expected losses <p_t, l_t> against the best S-switch sequence (batched)."""
    t_max, b, n = losses.shape
    tracker = RegretTracker(b, n, n_switches, horizon=t_max)
    for t in range(t_max):
        tracker.update(losses[t], np.sum(laws[t] * losses[t], axis=1))
    return tracker.static_regret if n_switches == 0 else tracker.dynamic_regret


# ----------------------------------------------------------------------------- known answers
def test_hedge_known_weights_fixed_rate():
    agent = agents.make("hedge", n_experts=2, horizon=10, eta=math.log(2), seed=0)
    np.testing.assert_allclose(agent.action_distribution(), [[0.5, 0.5]])
    agent.act(np.zeros(2))
    agent.act(np.array([1.0, 0.0]))  # weights (1/2, 1) -> (1/3, 2/3)
    np.testing.assert_allclose(agent.action_distribution(), [[1 / 3, 2 / 3]], rtol=1e-12)
    agent.act(np.array([0.0, 1.0]))  # L = (1, 1)
    np.testing.assert_allclose(agent.action_distribution(), [[0.5, 0.5]], rtol=1e-12)
    agent.act(np.array([0.5, 0.0]))  # L = (1.5, 1): weights (2^-1.5, 2^-1)
    w = np.array([2**-1.5, 0.5])
    np.testing.assert_allclose(agent.action_distribution(), [w / w.sum()], rtol=1e-12)


def test_hedge_anytime_rate_and_default_eta():
    agent = agents.make("hedge", n_experts=2, horizon=100, rate="anytime", seed=0)
    agent.act(np.zeros(2))
    agent.act(np.array([1.0, 0.0]))  # round 2: eta_2 = sqrt(8 ln 2 / 2)
    eta2 = math.sqrt(4 * math.log(2))
    p = np.array([math.exp(-eta2), 1.0])
    np.testing.assert_allclose(agent.action_distribution(), [p / p.sum()], rtol=1e-12)
    assert agent.rate_at(5) == pytest.approx(math.sqrt(8 * math.log(2) / 5))
    fixed = agents.make("hedge", n_experts=8, horizon=200)
    assert fixed.eta == pytest.approx(math.sqrt(8 * math.log(8) / 200)) == hedge_eta(8, 200)


def test_fixed_share_known_weights():
    agent = agents.make("fixed-share", n_experts=2, horizon=10, eta=math.log(2), alpha=0.1, seed=0)
    agent.act(np.zeros(2))
    agent.act(np.array([1.0, 0.0]))  # v = (1/3, 2/3); w = 0.9 v + 0.05 = (0.35, 0.65)
    np.testing.assert_allclose(agent.action_distribution(), [[0.35, 0.65]], rtol=1e-12)
    agent.act(np.array([0.0, 1.0]))  # v ∝ (0.35, 0.325)
    v = np.array([0.35, 0.325]) / 0.675
    np.testing.assert_allclose(agent.action_distribution(), [0.9 * v + 0.05], rtol=1e-12)


def test_fixed_share_default_tuning():
    # N = 4, T = 101, S = 2: alpha = 2/100, C = 3 ln 4 + 2 ln(e * 100 / 2), eta = sqrt(8 C / T).
    alpha, eta = fixed_share_tuning(4, 101, 2)
    c = 3 * math.log(4) + 2 * (1 + math.log(50))
    assert alpha == pytest.approx(0.02)
    assert eta == pytest.approx(math.sqrt(8 * c / 101))
    assert eta == pytest.approx(1.052406, abs=1e-6)
    agent = agents.make("fixed-share", n_experts=4, horizon=101, n_switches=2)
    assert (agent.alpha, agent.eta) == (alpha, eta)
    # S = 0 is Hedge; S >= T - 1 is tuned as T - 1 (alpha = 1: the unconstrained comparator).
    assert fixed_share_tuning(4, 101, 0) == (0.0, hedge_eta(4, 101))
    big = agents.make("fixed-share", n_experts=4, horizon=101, n_switches=500)
    assert (big.alpha, big.eta) == fixed_share_tuning(4, 101, 100) and big.alpha == 1.0
    assert agents.make("fixed-share", n_experts=4, horizon=1).alpha == 0.0


def test_ftl_plays_leader_and_breaks_ties_uniformly():
    b = 3000
    agent = agents.make("follow-the-leader", n_experts=3, horizon=5, num_envs=b, seed=1)
    first = agent.act(np.zeros((b, 3)))
    counts = np.bincount(first, minlength=3) / b
    np.testing.assert_allclose(counts, [1 / 3] * 3, atol=0.03)  # ~3.5 standard errors
    second = agent.act(np.tile([0.5, 0.0, 0.0], (b, 1)))  # experts 1 and 2 tie
    assert set(np.unique(second)) == {1, 2}
    assert abs(np.mean(second == 1) - 0.5) < 0.035
    np.testing.assert_allclose(agent.action_distribution()[0], [0, 0.5, 0.5])
    third = agent.act(np.tile([0.0, 0.3, 0.2], (b, 1)))  # L = (0.5, 0.3, 0.2)
    assert np.all(third == 2)


def test_ftl_ties_survive_float_rounding():
    agent = agents.make("follow-the-leader", n_experts=2, horizon=5, num_envs=400, seed=0)
    agent.act(np.zeros((400, 2)))
    agent.act(np.tile([0.1, 0.3], (400, 1)))
    agent.act(np.tile([0.2, 0.0], (400, 1)))  # 0.1 + 0.2 != 0.3 in floats, yet a tie
    assert set(np.unique(agent.last_actions)) == {0, 1}


def test_ftl_trap_has_linear_regret():
    t_max = 400
    trap = np.zeros((t_max, 1, 2))
    trap[0, 0] = [0.5, 0.0]
    trap[1::2, 0] = [0.0, 1.0]
    trap[2::2, 0] = [1.0, 0.0]
    agent = agents.make("follow-the-leader", n_experts=2, horizon=t_max, seed=0)
    actions = rollout(agent, trap, record=law).actions
    learner = trap[np.arange(t_max), 0, actions[:, 0]].sum()
    regret = learner - trap.sum(axis=0).min()
    assert learner >= t_max - 1  # every round after the first costs 1
    assert regret >= 0.49 * t_max
    hedge = agents.make("hedge", n_experts=2, horizon=t_max, seed=0)
    laws = rollout(hedge, trap, record=law).records
    assert pseudo_regret(laws, trap)[0] <= math.sqrt(t_max * math.log(2) / 2)


def test_uniform_is_uniform():
    agent = agents.make("uniform", n_experts=4, horizon=50, num_envs=500, seed=3)
    actions, _, laws, _ = rollout(agent, np.random.default_rng(0).random((50, 500, 4)), record=law)
    np.testing.assert_allclose(laws, 0.25)
    np.testing.assert_allclose(
        np.bincount(actions.ravel(), minlength=4) / actions.size, 0.25, atol=0.01
    )


# ----------------------------------------------------------------------------- dartboard
@pytest.mark.slow
def test_dartboard_marginal_equals_hedge_and_switches_less():
    b, n, t_max = 20_000, 4, 30
    seq = np.random.default_rng(11).random((t_max, 1, n))
    losses = np.broadcast_to(seq, (t_max, b, n))
    eta = 0.8
    dart = agents.make(
        "shrinking-dartboard", n_experts=n, horizon=t_max, eta=eta, num_envs=b, seed=5
    )
    hedge = agents.make("hedge", n_experts=n, horizon=t_max, eta=eta, num_envs=b, seed=5)
    d_actions, _, d_laws, _ = rollout(dart, losses, record=law)
    h_actions, _, h_laws, _ = rollout(hedge, losses, record=law)
    np.testing.assert_allclose(d_laws, h_laws, rtol=1e-12)  # reported marginal is Hedge's law
    empirical = np.stack([np.bincount(a, minlength=n) / b for a in d_actions])
    # 120 frequencies, each with standard error <= 0.5 / sqrt(b) = 0.0035: 0.02 is > 5.5 s.e.
    assert np.max(np.abs(empirical - h_laws[:, 0])) < 0.02
    d_switches = np.mean(np.sum(d_actions[1:] != d_actions[:-1], axis=0))
    h_switches = np.mean(np.sum(h_actions[1:] != h_actions[:-1], axis=0))
    assert d_switches == pytest.approx(np.mean(dart.switches))
    assert d_switches < 0.5 * h_switches
    # Geulen et al.: E[switches] <= eta * E[cumulative loss] (1 - e^-x <= x), with 3 s.e. slack.
    learner = np.mean(np.sum(seq[:-1, 0][np.arange(t_max - 1)[:, None], d_actions[:-1]], axis=0))
    assert d_switches <= eta * learner + 3 * math.sqrt(t_max / b)


def test_dartboard_rejects_negative_losses():
    agent = agents.make("shrinking-dartboard", n_experts=2, horizon=5, seed=0)
    agent.act(np.zeros(2))
    # Refused at the agent boundary (agents/base.py), before the dartboard sees it.
    with pytest.raises(ValueError, match=r"round 1\): losses must be finite and lie in \[0, 1\]"):
        agent.act(np.array([-0.1, 0.0]))


# ----------------------------------------------------------------------------- regret sanity
def test_hedge_static_regret_within_bound():
    t_max, n = 2000, 8
    rng = np.random.default_rng(2)
    means = rng.uniform(0.3, 0.7, n)
    losses = (rng.random((t_max, 1, n)) < means).astype(float)
    for rate, bound in [
        ("fixed", math.sqrt(t_max * math.log(n) / 2)),
        ("anytime", 2 * math.sqrt(t_max * math.log(n) / 2) + math.sqrt(math.log(n) / 8)),
    ]:
        agent = agents.make("hedge", n_experts=n, horizon=t_max, rate=rate, seed=0)
        actions, _, laws, _ = rollout(agent, losses, record=law)
        regret = pseudo_regret(laws, losses)[0]
        assert 0 < regret <= bound, rate  # the bound holds for every sequence (expected loss)
    # Realised regret over 64 runs: mean within the bound plus 3 standard errors.
    b = 64
    agent = agents.make("hedge", n_experts=n, horizon=t_max, num_envs=b, seed=0)
    actions = rollout(agent, np.broadcast_to(losses, (t_max, b, n)), record=law).actions
    realised = losses[np.arange(t_max)[:, None], 0, actions].sum(axis=0) - losses.sum(0).min()
    assert realised.mean() <= math.sqrt(t_max * math.log(n) / 2) + 3 * math.sqrt(t_max / 4 / b)


def shifting_losses(t_max, n, n_switches, seed):
    rng = np.random.default_rng(seed)
    segment = np.minimum(np.arange(t_max) * (n_switches + 1) // t_max, n_switches)
    best = np.arange(n_switches + 1) % n  # a new best expert in every segment
    means = np.full((t_max, n), 0.6)
    means[np.arange(t_max), best[segment]] = 0.1
    return (rng.random((t_max, 1, n)) < means[:, None, :]).astype(float)


def test_fixed_share_beats_hedge_on_dynamic_regret():
    t_max, n, s = 1500, 5, 4
    losses = shifting_losses(t_max, n, s, seed=4)
    fs = agents.make("fixed-share", n_experts=n, horizon=t_max, n_switches=s, seed=0)
    hedge = agents.make("hedge", n_experts=n, horizon=t_max, seed=0)
    fs_laws = rollout(fs, losses, record=law).records
    hedge_laws = rollout(hedge, losses, record=law).records
    fs_regret = pseudo_regret(fs_laws, losses, n_switches=s)[0]
    hedge_regret = pseudo_regret(hedge_laws, losses, n_switches=s)[0]
    assert fs_regret < 0.5 * hedge_regret
    c = (s + 1) * math.log(n) + s * math.log(math.e * (t_max - 1) / s)
    assert fs_regret <= math.sqrt(t_max * c / 2)  # C-B&L tracking bound (expected loss)


# ----------------------------------------------------------------------------- batching
@pytest.mark.parametrize("name", FULL)
def test_batch_equals_single_runs(name):
    b, n, t_max, seed = 4, 5, 40, 17
    losses = np.random.default_rng(9).random((t_max, b, n))
    batch = agents.make(name, n_experts=n, horizon=t_max, num_envs=b, seed=seed)
    batch_actions = rollout(batch, losses, record=law).actions
    for run in range(b):
        single = agents.make(name, n_experts=n, horizon=t_max, seed=seed + run)
        single_actions = rollout(single, losses[:, run : run + 1], record=law).actions
        np.testing.assert_array_equal(batch_actions[:, run], single_actions[:, 0])


@pytest.mark.parametrize("name", FULL)
def test_reset_with_seed_reproduces_and_single_obs_gives_int(name):
    agent = agents.make(name, n_experts=3, horizon=20, seed=2)
    losses = np.random.default_rng(1).random((20, 1, 3))
    first = rollout(agent, losses, record=law).actions
    agent.reset(seed=2)
    again = rollout(agent, losses, record=law).actions
    np.testing.assert_array_equal(first, again)
    agent.reset(seed=2)
    assert isinstance(agent.act(np.zeros(3)), int)
    assert agent.privacy.epsilon == math.inf and agent.privacy.feedback == "full"
    assert not agent.privacy.is_private


def test_long_game_no_overflow():
    # horizon 200: a learner refuses to act past its horizon.
    agent = agents.make("hedge", n_experts=3, horizon=200, eta=50.0, num_envs=2, seed=0)
    obs = np.zeros((2, 3))
    for _ in range(200):
        agent.act(obs)
        obs = np.array([[1.0, 0.0, 1.0], [0.0, 1.0, 1.0]])
    law = agent.action_distribution()
    assert np.all(np.isfinite(law)) and np.allclose(law.sum(axis=1), 1)
    fs = agents.make("fixed-share", n_experts=3, horizon=200, eta=50.0, alpha=0.0, seed=0)
    for _ in range(200):
        fs.act(np.array([1.0, 0.0, 1.0]))
    assert np.all(np.isfinite(fs.log_weights)) and fs.action_distribution()[0, 1] == 1.0


# ----------------------------------------------------------------------------- bad input
@pytest.mark.parametrize(
    ("name", "params", "error", "match"),
    [
        ("hedge", {"eta": -0.1}, ValueError, "eta must be > 0"),
        ("hedge", {"eta": 0.1, "rate": "anytime"}, ValueError, "rate='fixed' only"),
        ("hedge", {"rate": "sometimes"}, ValueError, "rate must be one of"),
        ("fixed-share", {"alpha": 1.5}, ValueError, "alpha must be <= 1"),
        ("fixed-share", {"n_switches": -1}, ValueError, "n_switches must be >= 0"),
        ("fixed-share", {"n_switches": 1.5}, TypeError, "n_switches must be an integer"),
        ("shrinking-dartboard", {"eta": 0.0}, ValueError, "eta must be > 0"),
        ("hedge", {"n_experts": 0}, ValueError, "n_experts must be >= 1"),
        ("uniform", {"unknown": 1}, TypeError, "unknown"),
    ],
)
def test_bad_parameters(name, params, error, match):
    kwargs = {"n_experts": 3, "horizon": 20, **params}
    with pytest.raises(error, match=match):
        agents.make(name, **kwargs)


def test_bad_observations():
    agent = agents.make("hedge", n_experts=3, horizon=20, num_envs=2, seed=0)
    with pytest.raises(ValueError, match=r"obs must have shape \(2, 3\)"):
        agent.act(np.zeros((2, 4)))
    with pytest.raises(TypeError, match="full-information"):
        agent.act({"advice": np.zeros(6), "last_action": 0, "last_loss": 0.0})


# ----------------------------------------------------------------------------- example
def test_compare_baselines_example_runs_every_baseline():
    import runpy
    from pathlib import Path

    example = Path(__file__).resolve().parents[1] / "examples" / "compare_baselines.py"
    results = runpy.run_path(str(example))["main"](horizon=60, seeds=2, seed=0)
    played = {key[1].split("(")[0] for key in results}
    assert played == set(FULL) | {"exp3", "tsallis-inf", "ftpl-gr", "exp4"}
    for value in results.values():
        assert value["static"].shape == (2,) and np.all(np.isfinite(value["dynamic"]))
        assert np.all(value["dynamic"] >= value["static"] - 1e-9)  # S-switch comparator is better
    # Identity advice: EXP4 is EXP3 on the same random stream.
    bandit = "DPExperts-Bandit-v0"
    np.testing.assert_array_equal(
        results[bandit, "exp4"]["static"], results[bandit, "exp3"]["static"]
    )


@pytest.mark.parametrize("params", [{}, {"alpha": 0.3, "eta": 5.0}, {"alpha": 1e-9}])
def test_fixed_share_compiled_block_is_the_numpy_loop(monkeypatch, params):
    """Fixed-Share's compiled recursion (kernels around numpy's exp/log) equals its numpy loop
    bit for bit: actions, log-weights and the stream, in uneven blocks (N = 9: pairwise sums)."""
    pytest.importorskip("numba")
    losses = np.random.default_rng(2).random((300, 4, 9))
    losses[losses < 0.3] = 0.0
    states = []
    for jit in (True, False):
        use_jit_path("compiled" if jit else "numpy", monkeypatch)
        agent = agents.make("fixed-share", n_experts=9, horizon=300, num_envs=4, seed=3, **params)
        cuts = (0, 1, 3, 120, 300)
        actions = [agent.play_block(losses[a:b]) for a, b in zip(cuts[:-1], cuts[1:], strict=True)]
        states.append((np.concatenate(actions), agent.log_weights, agent.rng.random((2,))))
    for got, want in zip(*states, strict=True):
        assert got.tobytes() == want.tobytes()
