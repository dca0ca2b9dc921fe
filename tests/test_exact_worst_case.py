"""The exact worst case of a two-expert learner (issue 36 item 8's yardstick): the dynamic program
against brute force over every loss sequence, its forcing sequence, and the learners it refuses."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import agents
from dp_experts_env.evaluation.exact_worst_case import exact_worst_case

MOVES = [(0, 0), (1, 0), (0, 1), (1, 1)]


def _expected_regrets(agent, seqs, **params):
    """Expected static regret of each (T, 2) sequence, played by one batched learner."""
    seqs = np.asarray(seqs, dtype=np.float64)
    n, horizon, _ = seqs.shape
    built = agents.make(agent, n_experts=2, horizon=horizon, num_envs=n, seed=3, **params)
    loss = np.zeros(n)
    built.act(np.zeros((n, 2)))
    for t in range(horizon):
        p = np.asarray(built.action_distribution(), dtype=np.float64)
        loss += (p * seqs[:, t, :]).sum(axis=1)
        if t + 1 < horizon:
            built.act(seqs[:, t, :])
    return loss - seqs.sum(axis=1).min(axis=1)


@pytest.mark.parametrize(("agent", "params"), [("hedge", {"eta": 0.7}), ("follow-the-leader", {})])
def test_the_program_equals_brute_force_over_every_sequence(agent, params):
    """T = 5: the largest expected regret over all 4^5 sequences (played by the learner itself,
    its law read each round) equals the program's value, and its sequence forces that value."""
    horizon = 5
    seqs = [list(s) for s in itertools.product(MOVES, repeat=horizon)]
    brute = _expected_regrets(agent, seqs, **params)
    worst = exact_worst_case(agent, horizon, params)
    assert worst.regret == pytest.approx(brute.max(), abs=1e-9)
    forced = _expected_regrets(agent, [worst.losses], **params)
    assert forced[0] == pytest.approx(worst.regret, abs=1e-9)


def test_follow_the_leader_is_linear_in_the_worst_case():
    values = [exact_worst_case("follow-the-leader", t).regret for t in (8, 16)]
    assert values[1] / values[0] > 1.8  # ~T/4 with {0, 1} losses (ties every other round)
    assert values[1] == pytest.approx(16 / 4, abs=0.5)
    # Hedge at its fixed rate: below its proven bound sqrt(T ln N / 2) (2.35 at T = 16, N = 2)
    hedge = exact_worst_case("hedge", 16).regret
    assert 1.0 < hedge <= (16 * np.log(2) / 2) ** 0.5


def test_a_law_that_depends_on_the_order_of_the_losses_is_refused():
    with pytest.raises(ValueError, match="not a function of its cumulative losses"):
        exact_worst_case("fixed-share", 6, {"n_switches": 1})
    with pytest.raises(ValueError, match="horizon must be an int"):
        exact_worst_case("hedge", 0)
