"""limited-updates (ARS Alg. 1 / AFKT Alg. 2): update times, selection laws, privacy."""

import math

import numpy as np
import pytest
from conftest import rollout

import agents
import dp_experts_env  # noqa: F401  (registers the env ids)
from agents.limited_updates import LimitedUpdates
from dp_experts_env.evaluation.audit import audit_agent
from dp_experts_env.privacy.mechanisms import exponential_mechanism_probabilities


def laplace_difference_cdf(d, b):
    """P(Z0 - Z1 <= d) for i.i.d. Laplace(b) noises."""
    d = abs(d)
    tail = 0.5 * math.exp(-d / b) * (1 + d / (2 * b))
    return 1 - tail


# ----------------------------------------------------------------------------- mechanics
@pytest.mark.parametrize("selector", ["rnm", "em"])
def test_switches_only_at_powers_of_two(selector):
    rng = np.random.default_rng(0)
    losses = rng.random((300, 16, 5))
    agent = agents.make(
        "limited-updates", n_experts=5, horizon=300, num_envs=16, seed=3, selector=selector
    )
    actions = rollout(agent, losses).actions
    changed_rounds = np.flatnonzero(np.any(actions[1:] != actions[:-1], axis=1)) + 2
    assert len(changed_rounds) > 3  # it does switch
    assert all(r & (r - 1) == 0 for r in changed_rounds), changed_rounds


def test_selection_uses_only_the_disjoint_window():
    # Huge epsilon: each selection is the exact argmin of the window [t/2, t-1].
    t_max, n = 32, 5
    losses = np.random.default_rng(7).random((t_max, n))
    actions = rollout(LimitedUpdates(n, t_max, epsilon=1e9, seed=0), losses[:, None, :]).actions[
        :, 0
    ]
    differs_from_history = 0
    for t in (2, 4, 8, 16, 32):
        window_best = np.argmin(losses[t // 2 - 1 : t - 1].sum(axis=0))  # rows are 0-based
        assert np.all(actions[t - 1 : 2 * t - 1] == window_best), (t, actions)
        differs_from_history += window_best != np.argmin(losses[: t - 1].sum(axis=0))
    assert differs_from_history >= 1  # the data tell window use from history use


def test_first_round_uniform_and_data_independent():
    agent = LimitedUpdates(6, 10, num_envs=6000, seed=0)
    first = agent.act(np.zeros((6000, 6)))
    counts = np.bincount(first, minlength=6)
    assert np.all(np.abs(counts / 6000 - 1 / 6) < 0.02)


def test_rnm_selection_law_known_answer():
    # Round 2 selects from the window {l_1} with Lap(2/eps) noise: P(J_2 = 0) is the CDF of a
    # difference of two Laplace variables at S(1) - S(0).
    eps, runs = 1.0, 20000
    agent = LimitedUpdates(2, 2, epsilon=eps, num_envs=runs, seed=1)
    agent.act(np.zeros((runs, 2)))
    second = agent.act(np.tile([0.2, 0.9], (runs, 1)))
    want = laplace_difference_cdf(0.7, 2 / eps)
    assert abs(np.mean(second == 0) - want) < 4 * math.sqrt(want * (1 - want) / runs)


def test_em_selection_law_known_answer():
    eps, runs = 2.0, 20000
    window = np.array([0.0, 1.0, 0.5])
    agent = LimitedUpdates(3, 2, epsilon=eps, selector="em", num_envs=runs, seed=2)
    agent.act(np.zeros((runs, 3)))
    second = agent.act(np.tile(window, (runs, 1)))
    want = exponential_mechanism_probabilities(window, sensitivity=1.0, epsilon=eps)
    np.testing.assert_allclose(want, np.exp(-eps * window / 2) / np.exp(-eps * window / 2).sum())
    freq = np.bincount(second, minlength=3) / runs
    assert np.all(np.abs(freq - want) < 4 * np.sqrt(want * (1 - want) / runs))


def test_recorded_scales_follow_the_parameters():
    fast = LimitedUpdates(4, 100, epsilon=0.5)
    assert fast.selection_epsilon == 0.5 and fast.selection_scale == pytest.approx(4.0)
    grid = LimitedUpdates(4, 100, epsilon=0.5, noise="grid")
    assert grid.selection_scale == pytest.approx(2 * (1 + 2.0**-20) / 0.5)
    em = LimitedUpdates(4, 100, epsilon=0.5, selector="em")
    assert em.selection_scale == pytest.approx(4.0)


@pytest.mark.parametrize("params", [{}, {"selector": "em"}, {"noise": "grid"}])
def test_batch_equals_single_runs(params):
    rng = np.random.default_rng(5)
    losses = rng.random((40, 3, 4))
    batch = rollout(LimitedUpdates(4, 40, num_envs=3, seed=11, **params), losses).actions
    for b in range(3):
        single = rollout(LimitedUpdates(4, 40, seed=11 + b, **params), losses[:, b : b + 1]).actions
        np.testing.assert_array_equal(batch[:, b], single[:, 0])


def test_claim_and_bad_input():
    claim = agents.make("limited-updates", n_experts=3, horizon=10, epsilon=0.7).privacy
    assert claim.epsilon == 0.7 and claim.delta == 0 and claim.certified
    assert claim.holds_against == "adaptive" and "parallel composition" in claim.accountant
    with pytest.raises(ValueError, match="selector"):
        LimitedUpdates(3, 10, selector="argmax")
    with pytest.raises(ValueError, match="epsilon"):
        LimitedUpdates(3, 10, epsilon=0.0)


# ----------------------------------------------------------------------------- privacy audits
PAIRS = {
    "swap": ([0.0, 1.0], [1.0, 0.0]),
    "zeros-vs-ones": ([0.0, 0.0], [1.0, 1.0]),
    "one-expert-flipped": ([0.0, 0.0], [1.0, 0.0]),
}


def neighbours(t_max, n, row, a, b):
    x = np.full((t_max, n), 0.5)
    xp = x.copy()
    x[row], xp[row] = a, b
    return x, xp


# The default (report-noisy-min) learner's audit and mutants are in test_audit_zoo.py; the
# exponential-mechanism selector is audited here on every neighbouring pair.
@pytest.mark.parametrize("pair", sorted(PAIRS))
def test_audit_strict_passes_with_the_exponential_mechanism(pair):
    x, xp = neighbours(4, 2, 1, *PAIRS[pair])  # row 1 lies in the window of round 4
    res = audit_agent("limited-updates", x, xp, n_runs=3000, seed=1, epsilon=1.0, selector="em")
    assert res.passed, res.summary()


def test_claim_follows_the_selection_noise():
    # The learner's own claim follows the noise it adds: it cannot under-report silently.
    honest = LimitedUpdates(2, 2, epsilon=1.0)
    honest.selection_epsilon *= 10
    assert honest.privacy.epsilon == 10.0
