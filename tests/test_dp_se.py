"""dp-se (agents/dp_se.py, issue #38): private successive elimination (Sajed & Sheffet 2019).

Known answers: the epoch lengths and margins against hand-computed values; at epsilon = inf the
actions equal a plain scalar successive elimination written here (the non-private twin, bit for
bit); at a finite epsilon every epoch's release holds the exact per-arm sums of that epoch and
the eliminations follow the released means; a batch equals single runs; the claim and
dp-accounting; bad parameters refused by name. The audit catches a planted bug (sums kept across
epochs: a loss enters every later release) and passes a harmless change (twice the noise); the
x0.5 and x0 mutants and monotonicity in epsilon run registry-wide (test_audit_zoo.py,
test_learner_contract.py).
"""

import math

import numpy as np
import pytest

import agents
from agents.dp_se import DPSE, elimination_margin, epoch_length
from agents.registry import _REGISTRY, register
from dp_experts_env.evaluation.audit import Scenario, audit_learner, flip_pair
from dp_experts_env.privacy.declaration import library_epsilon
from dp_experts_env.privacy.noise import RecordingBackend


def _obs(k, runs, last_action, last_loss):
    return {
        "advice": np.broadcast_to(np.eye(k), (runs, k, k)),
        "last_action": np.asarray(last_action, dtype=np.int64),
        "last_loss": np.asarray(last_loss, dtype=np.float64),
    }


def _play(agent, losses, offsets=None):
    horizon, runs, k = losses.shape
    actions = np.zeros((horizon, runs), dtype=np.int64)
    last_a, last_l = np.zeros(runs, dtype=np.int64), np.zeros(runs)
    for t in range(horizon):
        a = agent.act(_obs(k, runs, last_a, last_l))
        actions[t] = a
        if offsets is not None:
            offsets.append(agent.offset.copy())
        last_a, last_l = a, losses[t, np.arange(runs), a]
    return actions


def _bernoulli(horizon, runs, means, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.random((horizon, runs, len(means))) < np.asarray(means)).astype(float)


def test_epoch_length_and_margin_are_the_documented_formulas():
    # K = 5, beta = 1e-4, epsilon 1: 32 ln(4e5) / 0.25 = 1651.1 (the privacy term 195.3 is less)
    assert epoch_length(np.array([1]), np.array([5]), 1e-4, 1.0).tolist() == [1652]
    # epsilon 0.01: 8 ln(2e5) / (0.01 * 0.5) = 19,529.2 dominates
    assert epoch_length(np.array([1]), np.array([5]), 1e-4, 0.01).tolist() == [19530]
    assert epoch_length(np.array([2]), np.array([2]), 0.5, math.inf).tolist() == [
        math.ceil(32 * math.log(8 * 2 * 4 / 0.5) * 16)
    ]
    assert epoch_length(np.array([3]), np.array([4]), 0.1, 1.0, scale=0.0).tolist() == [1]
    r, s, e, beta = 100, 3, 2, 0.01
    h = math.sqrt(math.log(8 * s * e * e / beta) / (2 * r))
    c = math.log(4 * s * e * e / beta) / (r * 0.5)
    got = elimination_margin(np.array([e]), np.array([s]), np.array([r]), beta, 0.5)
    assert got[0] == pytest.approx(2 * (h + c), rel=1e-12)
    assert elimination_margin(np.array([e]), np.array([s]), np.array([r]), beta, math.inf)[
        0
    ] == pytest.approx(2 * h, rel=1e-12)


def _successive_elimination(losses, beta, scale, offsets):
    """Plain scalar successive elimination (exact means), round-robin within an epoch from the
    rank ``offsets[t]`` given at the epoch's first round t (the learner's own draw)."""
    horizon, k = losses.shape
    active, epoch, pos, sums, first = list(range(k)), 1, 0, np.zeros(k), 0

    def length(e, s):
        return max(1, math.ceil(scale * 32 * math.log(8 * s * e * e / beta) * 4.0**e))

    r, acts = length(1, k), []
    for t in range(horizon):
        if pos == 0:
            first = offsets[t]
            assert 0 <= first < len(active)
        arm = active[(first + pos) % len(active)]
        acts.append(arm)
        sums[arm] += losses[t, arm]
        pos += 1
        if len(active) > 1 and pos >= r * len(active):
            means = sums / r
            best = min(means[i] for i in active)
            margin = 2 * math.sqrt(math.log(8 * len(active) * epoch * epoch / beta) / (2 * r))
            active = [i for i in active if means[i] - best <= margin]
            epoch, pos, sums = epoch + 1, 0, np.zeros(k)
            r = length(epoch, len(active))
    return np.array(acts)


@pytest.mark.parametrize("means", [[0.2, 0.5, 0.8], [0.2, 0.35, 0.5, 0.8]])
def test_epsilon_inf_is_plain_successive_elimination(means):
    t, b = 3000, 4
    losses = _bernoulli(t, b, means, seed=2)
    agent = agents.make(
        "dp-se", n_experts=len(means), n_arms=len(means), horizon=t, epsilon=math.inf,
        num_envs=b, seed=0, epoch_scale=0.02, beta=0.05,
    )  # fmt: skip
    assert not agent.privacy.is_private
    offsets = []
    actions = _play(agent, losses, offsets)
    offsets = np.array(offsets)
    for i in range(b):
        reference = _successive_elimination(losses[:, i], 0.05, 0.02, offsets[:, i])
        np.testing.assert_array_equal(actions[:, i], reference)
    assert len(set(offsets[0])) > 1  # the first arm is drawn, not always arm 0
    assert agent.releases.min() >= 2  # several epochs were played and arms eliminated
    assert np.all(agent.active.sum(axis=1) < len(means))


def test_each_epoch_releases_its_own_sums_and_eliminates_on_the_noisy_means():
    t, b, k = 4000, 3, 3
    losses = np.random.default_rng(5).random((t, b, k)) * np.array([0.2, 0.6, 1.0])
    rec = RecordingBackend("fast")
    agent = DPSE(k, t, n_arms=k, epsilon=2.0, noise=rec, num_envs=b, seed=1, epoch_scale=0.01)
    actions = _play(agent, losses)
    # A (K,) release after every round but the last (round j's loss is learnt at round j + 1).
    assert len(rec.releases) == t - 1 and rec.drawn == k * (t - 1)
    for run in range(b):
        start, ended, active = 0, 0, np.ones(k, dtype=bool)
        for j, (exact, noisy) in enumerate(rec.releases):
            if not np.any(exact[run]):
                continue  # a data-free zero: the epoch goes on
            played = actions[start : j + 1, run]
            sums = np.bincount(
                played, losses[start : j + 1, run][np.arange(len(played)), played], k
            )
            np.testing.assert_allclose(exact[run], sums, rtol=1e-12)  # this epoch's losses only
            assert set(played) == set(np.flatnonzero(active))  # every arm in play, in turn
            r = len(played) // active.sum()
            means = noisy[run] / r
            best = means[active].min()
            margin = elimination_margin(
                np.array([ended + 1]), np.array([active.sum()]), np.array([r]), 1 / t, 2.0
            )[0]
            active &= means - best <= margin
            start, ended = j + 1, ended + 1
        assert ended == agent.releases[run] >= 2
        np.testing.assert_array_equal(active, agent.active[run])


def test_batch_equals_single_runs():
    t, b, k = 1500, 3, 4
    losses = _bernoulli(t, b, [0.3, 0.5, 0.6, 0.7], seed=3)
    params = {"n_arms": k, "epsilon": 1.0, "epoch_scale": 0.02}
    batch = _play(DPSE(k, t, num_envs=b, seed=[4, 5, 6], **params), losses)
    for i, s in enumerate([4, 5, 6]):
        single = _play(DPSE(k, t, seed=s, **params), losses[:, i : i + 1])
        np.testing.assert_array_equal(single[:, 0], batch[:, i])


def test_claim_is_pure_epsilon_against_adaptive_and_matches_dp_accounting():
    agent = DPSE(4, 1000, n_arms=3, epsilon=0.7)
    claim = agent.privacy
    assert claim.epsilon == pytest.approx(0.7, rel=1e-12) and claim.delta == 0.0
    assert claim.holds_against == "adaptive" and claim.certified
    assert agent.beta == 1e-3 and agent.noise_scale == pytest.approx(1 / 0.7)
    pytest.importorskip("dp_accounting")
    assert library_epsilon(agent.declaration, 1e-12) == pytest.approx(0.7, rel=2e-3)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"beta": 0.0}, "beta"),
        ({"beta": 1.5}, "beta"),
        ({"epoch_scale": -1.0}, "epoch_scale"),
        ({"threshold_scale": -0.1}, "threshold_scale"),
        ({"delta": 1e-6}, "delta"),
        ({"epsilon": 0.0}, "epsilon"),
        ({"tuning": "calibrated"}, "tuning"),
    ],
)
def test_bad_parameters_are_refused_by_name(kwargs, match):
    with pytest.raises(ValueError, match=match):
        DPSE(3, 100, n_arms=3, **kwargs)


class SumsKept(DPSE):
    """Planted bug: the epoch sums are never cleared, so a loss enters every later release."""

    def _learn(self, obs):
        kept = self.sums.copy()
        super()._learn(obs)
        self.sums[self._rows, self.arm] = 0.0  # undo this round's addition, then re-add below
        self.sums = kept.copy()
        self.sums[self._rows, self.arm] += np.clip(obs.last_loss, 0.0, 1.0)


@pytest.mark.slow
def test_audit_catches_sums_kept_across_epochs():
    """A 16-round flip game (round 1's loss 0 or 1, K = 2) with one-round epochs and no
    elimination: the releases of the planted bug all carry round 1's loss (7 releases of
    sensitivity 1 against the declared 1), the correct learner's only the first."""
    x, xp = flip_pair(16, 2, 0)
    game = Scenario(
        "flip, long game, no elimination", x, xp,
        {"epoch_scale": 0.0, "threshold_scale": 1e9}, advice=np.eye(2),
    )  # fmt: skip
    register("test-dp-se-sums-kept", private=True, summary="planted bug")(SumsKept)
    try:
        reports = {
            name: audit_learner(
                name, epsilon=1.0, scenarios=[game], runs=4000, selection_runs=2000, seed=0,
                releases=True,
            )  # fmt: skip
            for name in ("test-dp-se-sums-kept", "dp-se")
        }
    finally:
        _REGISTRY.pop("test-dp-se-sums-kept", None)
    assert reports["test-dp-se-sums-kept"].violation, reports["test-dp-se-sums-kept"].summary()
    assert not reports["dp-se"].violation, reports["dp-se"].summary()


def test_audit_passes_twice_the_noise():
    """A harmless change (noise x2, claim unchanged) must pass the audit that catches x0.5."""
    rep = audit_learner(
        "dp-se", epsilon=1.0, multiplier=2.0, runs=10_000, selection_runs=2000, pairs=2, seed=0
    )
    assert not rep.violation, rep.summary()


def test_a_large_gap_is_eliminated_after_the_first_epoch():
    """K = 3, gap 0.5, T = 2 x 10^4, epsilon 1: R_1 = 1,562 pulls each, then the best arm only
    (the margin 2 (h_1 + c_1) = 0.13 is far below the gap) in all 20 runs."""
    t, b = 20_000, 20
    losses = _bernoulli(t, b, [0.2, 0.7, 0.7], seed=7)
    agent = DPSE(3, t, n_arms=3, epsilon=1.0, num_envs=b, seed=3)
    r1 = int(agent.length[0])
    # One bandit block (the game is oblivious): bit for bit the act calls (test_dp_se_block.py)
    first = _obs(3, b, np.zeros(b, dtype=np.int64), np.zeros(b))
    actions = agent.play_bandit_block(first, None, losses, np.arange(b))
    assert np.all(agent.active.sum(axis=1) == 1) and np.all(agent.active[:, 0])
    assert np.all(actions[3 * r1 :] == 0)
    regret = (actions != 0).sum(axis=0) * 0.5
    assert np.all(regret == r1)
