"""dp-ftrl-tree (prior-work baseline): tree noise, Hedge on noisy sums, privacy, utility."""

import math

import numpy as np
import pytest
from conftest import rollout, use_jit_path

import agents
import dp_experts_env  # noqa: F401  (registers the env ids)
from agents.dp_ftrl import DPFTRLTree
from agents.full_info import hedge_eta


def test_tree_parameters_follow_the_parameters():
    agent = DPFTRLTree(5, 100, epsilon=0.5)
    assert agent.levels == 7 == (100).bit_length()
    assert agent.node_scale == pytest.approx(7 * 5 / 0.5)  # levels * L1 sensitivity N / eps
    assert agent.tree.node_scale == pytest.approx(agent.node_scale)
    assert agent.tree.l1_sensitivity == 5 and agent.tree.epsilon == 0.5
    assert agent.eta == pytest.approx(hedge_eta(5, 100))
    assert DPFTRLTree(5, 100, tuning="calibrated").eta == agent.eta
    assert DPFTRLTree(5, 100, eta=0.2).eta == 0.2
    grid = DPFTRLTree(5, 100, epsilon=0.5, noise="grid")
    assert grid.node_scale == pytest.approx(7 * (5 + 5 * 2.0**-20) / 0.5)


@pytest.mark.parametrize(("horizon", "levels"), [(1, 1), (2, 1), (3, 2), (4, 2), (8, 3), (9, 4)])
def test_the_tree_holds_the_t_minus_1_losses_a_game_feeds_it(horizon, levels):
    """Round T's loss is never used, so the tree holds T - 1 items: at T = 2^k one level fewer
    than T.bit_length() (the exact count, tests/test_privacy_mechanisms.py), and noise to match;
    a full game of T rounds feeds it exactly that many."""
    from agents.oco_baselines import DPFTRLOCO
    from agents.oco_fair import GaussianDPFTRLOCO

    agent = DPFTRLTree(3, horizon, epsilon=1.0, seed=0)
    assert agent.levels == levels == agent.tree.levels
    assert agent.node_scale == pytest.approx(levels * 3 / 1.0)
    decl = agent.declaration.part
    assert (decl.levels, decl.leaves) == (levels, max(1, horizon - 1))
    for _ in range(horizon):
        agent.act(np.ones(3))
    assert agent.tree.t == horizon - 1
    for oco in (DPFTRLOCO(2, horizon), DPFTRLOCO(2, horizon, law="gaussian")):
        assert oco.levels == levels == oco.declaration.part.levels
    assert GaussianDPFTRLOCO(2, horizon).levels == levels


def test_noisy_sums_are_exact_sums_plus_popcount_nodes_of_noise():
    # After t rounds the released sum holds popcount(t) noisy nodes: variance 2 s^2 popcount(t).
    runs = 20000
    losses = np.random.default_rng(0).random((7, 3))
    agent = DPFTRLTree(3, 8, epsilon=1.0, num_envs=runs, seed=1)
    obs = np.zeros((runs, 3))
    for t in range(8):
        agent.act(obs)
        if t:
            err = agent._noisy_sums - losses[:t].sum(axis=0)
            want = 2 * agent.node_scale**2 * bin(t).count("1")
            assert np.var(err) == pytest.approx(want, rel=0.05), t
            assert abs(np.mean(err)) < 5 * math.sqrt(want / (3 * runs))
        obs = np.tile(losses[t], (runs, 1)) if t < 7 else obs


def test_plays_hedge_on_the_released_sums():
    losses = np.random.default_rng(2).random((20, 4))
    agent = DPFTRLTree(4, 20, epsilon=1e12, eta=0.7, seed=0)  # noise ~ 1e-11
    obs = np.zeros(4)
    for t in range(20):
        agent.act(obs)
        logits = -0.7 * losses[:t].sum(axis=0)
        want = np.exp(logits - logits.max())
        np.testing.assert_allclose(agent.action_distribution()[0], want / want.sum(), atol=1e-9)
        obs = losses[t]


@pytest.mark.parametrize("params", [{}, {"noise": "grid"}])
def test_batch_equals_single_runs(params):
    losses = np.random.default_rng(3).random((33, 3, 4))
    batch = rollout(DPFTRLTree(4, 33, num_envs=3, seed=5, eta=2.0, **params), losses).actions
    for b in range(3):
        single = rollout(
            DPFTRLTree(4, 33, seed=5 + b, eta=2.0, **params), losses[:, b : b + 1]
        ).actions
        np.testing.assert_array_equal(batch[:, b], single[:, 0])


def test_claim_and_bad_input():
    claim = agents.make("dp-ftrl-tree", n_experts=3, horizon=10, epsilon=0.4).privacy
    assert claim.epsilon == 0.4 and claim.certified and claim.holds_against == "adaptive"
    assert "binary-tree" in claim.accountant
    with pytest.raises(ValueError, match="eta"):
        DPFTRLTree(3, 10, eta=-1.0)
    with pytest.raises(ValueError, match="tuning"):
        DPFTRLTree(3, 10, tuning="tuned")


@pytest.mark.parametrize("epsilons", [None, (0.5, 2.0, 8.0), (math.inf,)])
def test_compiled_tree_block_is_the_per_round_tree(monkeypatch, epsilons):
    """play_block's compiled tree (one kernel call) equals TreeCounter.add per round, bit for bit.

    Uneven blocks cross dyadic boundaries (levels up to 7 at T = 200); per-run epsilons, one
    epsilon and no noise; the counter's state and the stream agree afterwards too.
    """
    pytest.importorskip("numba")
    losses = np.random.default_rng(8).random((200, 3, 4))
    losses[losses < 0.2] = 0.0
    states = []
    for jit in (True, False):
        use_jit_path("compiled" if jit else "numpy", monkeypatch)
        eps = 1.0 if epsilons is None or len(epsilons) > 1 else epsilons[0]
        agent = agents.make(
            "dp-ftrl-tree", n_experts=4, horizon=200, num_envs=3, seed=4, epsilon=eps
        )
        if epsilons is not None and len(epsilons) > 1:
            assert agent.set_run_epsilons(epsilons)
        cuts = (0, 1, 2, 9, 64, 130, 200)
        actions = np.concatenate(
            [agent.play_block(losses[a:b]) for a, b in zip(cuts[:-1], cuts[1:], strict=True)]
        )
        tree = agent.tree
        states.append(
            (
                actions,
                agent._noisy_sums,
                tree._exact,
                tree._noisy,
                tree._value,
                agent.rng.random((2,)),
            )
        )
    for got, want in zip(*states, strict=True):
        assert got.tobytes() == want.tobytes()
