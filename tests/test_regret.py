"""RegretTracker: known answers, brute force over comparator sequences, batching, memory."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from dp_experts_env.regret import RegretTracker


def _feed(tracker: RegretTracker, losses: np.ndarray, learner: np.ndarray) -> list[dict]:
    """Feed (T, B, N) losses and (T, B) learner losses; return the prefix values."""
    out = []
    for t in range(losses.shape[0]):
        tracker.update(losses[t], learner[t])
        out.append(
            {
                "static": tracker.static_regret.copy(),
                "dynamic": tracker.dynamic_regret.copy(),
                "per_round": tracker.per_round_best_regret.copy(),
                "comparator": tracker.comparator_loss.copy(),
            }
        )
    return out


# ----------------------------------------------------------------------------- known answers
ALTERNATING = np.array([[0.0, 1.0], [1.0, 0.0], [0.0, 1.0], [1.0, 0.0]])
# The learner always picks the expert about to lose: loss 1 per round.
WRONG_PICKS = np.array([1, 0, 1, 0])


@pytest.mark.parametrize(
    ("n_switches", "comparator"),
    [(0, 2.0), (1, 1.0), (2, 1.0), (3, 0.0), (10, 0.0)],
)
def test_known_answer_alternating(n_switches: int, comparator: float) -> None:
    tracker = RegretTracker(1, 2, n_switches)
    for t in range(4):
        tracker.update(ALTERNATING[t][None], np.array([ALTERNATING[t, WRONG_PICKS[t]]]))
    assert tracker.round == 4
    assert tracker.cumulative_loss[0] == 4.0
    assert tracker.static_regret[0] == 2.0  # both experts lose 2
    assert tracker.per_round_best_regret[0] == 4.0  # some expert has loss 0 every round
    assert tracker.comparator_loss[0] == comparator
    assert tracker.dynamic_regret[0] == 4.0 - comparator
    assert tracker.static_pseudo_regret is None
    assert tracker.per_round_best_pseudo_regret is None


def test_known_answer_prefix_values() -> None:
    # Losses chosen by hand; the prefix optimum with one switch is computed on paper.
    losses = np.array([[0.5, 0.25], [0.0, 1.0], [1.0, 0.0]])
    learner = np.array([0.5, 1.0, 1.0])
    tracker = RegretTracker(1, 2, 1)
    expected = [
        # (static, dynamic S=1, per-round best)
        (0.5 - 0.25, 0.5 - 0.25, 0.5 - 0.25),
        (1.5 - 0.5, 1.5 - 0.25, 1.5 - 0.25),  # experts 0.5 / 1.25; best switch 0.25 + 0 = 0.25
        (2.5 - 1.25, 2.5 - 0.5, 2.5 - 0.25),  # experts 1.5 / 1.25; switch after round 2: 0.5
    ]
    for t in range(3):
        tracker.update(losses[t][None], learner[t : t + 1])
        static, dynamic, per_round = expected[t]
        assert tracker.static_regret[0] == static
        assert tracker.dynamic_regret[0] == dynamic
        assert tracker.per_round_best_regret[0] == per_round


def test_per_round_best_pseudo_regret_formula() -> None:
    rng = np.random.default_rng(3)
    b, n, t_max = 3, 4, 20
    tracker = RegretTracker(b, n, 2)
    expected = np.zeros(b)
    for _ in range(t_max):
        means = rng.integers(0, 9, size=(b, n)) / 8.0
        losses = rng.integers(0, 9, size=(b, n)) / 8.0
        a = rng.integers(0, n, size=b)
        rows = np.arange(b)
        tracker.update(losses, losses[rows, a], means, means[rows, a])
        expected += means[rows, a] - means.min(axis=1)
        np.testing.assert_array_equal(tracker.per_round_best_pseudo_regret, expected)
    # A copy: changing it does not change the tracker.
    tracker.per_round_best_pseudo_regret[:] = -1.0
    np.testing.assert_array_equal(tracker.per_round_best_pseudo_regret, expected)


@pytest.mark.parametrize("case", range(8))
def test_static_pseudo_regret_matches_brute_force(case: int) -> None:
    # Against every fixed expert, summed round by round: the least of N brute-force totals.
    rng = np.random.default_rng(4000 + case)
    b, n, t_max = 2, int(rng.integers(1, 6)), int(rng.integers(1, 25))
    means = rng.integers(0, 9, size=(t_max, b, n)) / 8.0  # dyadic: sums are exact, so ==
    actions = rng.integers(0, n, size=(t_max, b))
    rows = np.arange(b)
    tracker = RegretTracker(b, n, int(rng.integers(0, 3)))
    for t in range(t_max):
        learner_mean = means[t, rows, actions[t]]
        tracker.update(means[t], learner_mean, means[t], learner_mean)
        played = means[: t + 1][np.arange(t + 1)[:, None], rows, actions[: t + 1]].sum(axis=0)
        fixed = np.array([[means[: t + 1, r, j].sum() for j in range(n)] for r in range(b)])
        np.testing.assert_array_equal(tracker.static_pseudo_regret, played - fixed.min(axis=1))
        # The per-round best is at least as good as any fixed expert, so its regret is larger.
        assert np.all(tracker.per_round_best_pseudo_regret >= tracker.static_pseudo_regret)


def test_static_and_per_round_best_pseudo_regret_differ_when_the_best_expert_moves() -> None:
    # Expert 0 is best in round 1, expert 1 in round 2; the learner plays expert 0 twice.
    tracker = RegretTracker(1, 2, 0)
    for means, a in (([0.0, 0.5], 0), ([1.0, 0.25], 0)):
        mu = np.array([means])
        tracker.update(mu, mu[:, a], mu, mu[:, a])
    # Fixed experts total 1.0 and 0.75; the per-round best totals 0.25.
    assert tracker.static_pseudo_regret[0] == 1.0 - 0.75
    assert tracker.per_round_best_pseudo_regret[0] == 1.0 - 0.25


def test_static_pseudo_regret_can_be_left_out() -> None:
    tracker = RegretTracker(2, 3, 1, static_pseudo=False)
    kept = RegretTracker(2, 3, 1)
    for t in range(3):
        means = np.full((2, 3), 0.25 * t)
        for tr in (tracker, kept):
            tr.update(means, means[:, 0], means, means[:, 0])
    assert tracker.static_pseudo_regret is None
    np.testing.assert_array_equal(
        tracker.per_round_best_pseudo_regret, kept.per_round_best_pseudo_regret
    )
    assert tracker.state_nbytes() == kept.state_nbytes() - 8 * 2 * 4  # no (B, N) + (B,) sums
    with pytest.raises(TypeError, match="static_pseudo"):
        RegretTracker(2, 3, 1, static_pseudo=1)


def test_reset_forgets_everything() -> None:
    tracker = RegretTracker(2, 3, 1)
    tracker.update(np.ones((2, 3)), np.ones(2), np.ones((2, 3)), np.ones(2))
    tracker.reset()
    assert tracker.round == 0
    assert tracker.static_pseudo_regret is None and tracker.per_round_best_pseudo_regret is None
    np.testing.assert_array_equal(tracker.dynamic_regret, np.zeros(2))
    np.testing.assert_array_equal(tracker.static_regret, np.zeros(2))


# ----------------------------------------------------------------------------- brute force
def _brute_force_opt(losses: np.ndarray, n_switches: int) -> float:
    """Least loss over every expert sequence of len(losses) rounds with <= n_switches switches."""
    t, n = losses.shape
    seqs = np.array(list(itertools.product(range(n), repeat=t)), dtype=np.int64)
    switches = np.count_nonzero(seqs[:, 1:] != seqs[:, :-1], axis=1)
    totals = losses[np.arange(t), seqs].sum(axis=1)
    return float(totals[switches <= n_switches].min())


# (N, T) pairs keep N^T <= 16384 sequences.
SIZES = [(2, 12), (2, 9), (3, 8), (3, 6), (4, 7), (4, 5)]


@pytest.mark.parametrize("case", range(12))
def test_dynamic_regret_matches_brute_force(case: int) -> None:
    rng = np.random.default_rng(1000 + case)
    n, t_max = SIZES[case % len(SIZES)]
    s = int(rng.integers(0, 4))
    # Dyadic grid k/8: every partial sum is exact in float64, so == is the right comparison.
    losses = rng.integers(0, 9, size=(t_max, n)) / 8.0
    learner = rng.integers(0, 9, size=t_max) / 8.0
    for horizon in (None, t_max):
        tracker = RegretTracker(1, n, s, horizon=horizon)
        cum = 0.0
        for t in range(t_max):
            tracker.update(losses[t][None], learner[t : t + 1])
            cum += learner[t]
            opt = _brute_force_opt(losses[: t + 1], s)
            assert tracker.comparator_loss[0] == opt, (case, t, s, horizon)
            assert tracker.dynamic_regret[0] == cum - opt
            assert tracker.static_regret[0] == cum - _brute_force_opt(losses[: t + 1], 0)
            assert tracker.per_round_best_regret[0] == cum - losses[: t + 1].min(axis=1).sum()


@pytest.mark.parametrize("case", range(6))
def test_special_budgets(case: int) -> None:
    rng = np.random.default_rng(2000 + case)
    b, n, t_max = 3, int(rng.integers(2, 6)), int(rng.integers(2, 15))
    losses = rng.integers(0, 9, size=(t_max, b, n)) / 8.0
    learner = rng.integers(0, 9, size=(t_max, b)) / 8.0
    static = _feed(RegretTracker(b, n, 0), losses, learner)
    unconstrained_t = _feed(RegretTracker(b, n, t_max - 1, horizon=t_max), losses, learner)
    unconstrained_table = _feed(RegretTracker(b, n, t_max - 1), losses, learner)
    huge = _feed(RegretTracker(b, n, 10 * t_max, horizon=t_max), losses, learner)
    for t in range(t_max):
        # S = 0 is the static comparator.
        np.testing.assert_array_equal(static[t]["dynamic"], static[t]["static"])
        # S >= T - 1 is the per-round best, whether or not the table is kept.
        for rows in (unconstrained_t, unconstrained_table, huge):
            np.testing.assert_array_equal(rows[t]["dynamic"], rows[t]["per_round"])
        np.testing.assert_array_equal(
            unconstrained_t[t]["dynamic"], unconstrained_table[t]["dynamic"]
        )


def test_comparator_is_monotone_in_budget() -> None:
    rng = np.random.default_rng(7)
    n, t_max = 5, 30
    losses = rng.integers(0, 9, size=(t_max, 1, n)) / 8.0
    learner = rng.integers(0, 9, size=(t_max, 1)) / 8.0
    finals = [_feed(RegretTracker(1, n, s), losses, learner)[-1]["comparator"][0] for s in range(8)]
    assert all(a >= b for a, b in zip(finals, finals[1:], strict=False))


# ----------------------------------------------------------------------------- batching
@pytest.mark.parametrize("n_switches", [0, 1, 3])
def test_batch_equals_single_trackers(n_switches: int) -> None:
    rng = np.random.default_rng(11)
    b, n, t_max = 4, 5, 40
    losses = rng.random((t_max, b, n))
    learner = rng.random((t_max, b))
    means = rng.random((t_max, b, n))
    learner_means = rng.random((t_max, b))
    batch = RegretTracker(b, n, n_switches, horizon=t_max)
    singles = [RegretTracker(1, n, n_switches, horizon=t_max) for _ in range(b)]
    for t in range(t_max):
        batch.update(losses[t], learner[t], means[t], learner_means[t])
        for i, single in enumerate(singles):
            sl = slice(i, i + 1)
            single.update(losses[t, sl], learner[t, sl], means[t, sl], learner_means[t, sl])
        for name in (
            "static_regret",
            "dynamic_regret",
            "per_round_best_regret",
            "static_pseudo_regret",
            "per_round_best_pseudo_regret",
        ):
            got = getattr(batch, name)
            want = np.concatenate([getattr(single, name) for single in singles])
            np.testing.assert_array_equal(got, want)


# ----------------------------------------------------------------------------- memory
def test_state_nbytes_independent_of_horizon() -> None:
    rng = np.random.default_rng(5)
    short = RegretTracker(2, 7, 3, horizon=10)
    long = RegretTracker(2, 7, 3, horizon=10**9)
    before = long.state_nbytes()
    for _ in range(500):
        losses = rng.random((2, 7))
        short.update(losses, losses[:, 0])
        long.update(losses, losses[:, 0], losses, losses[:, 0])
    assert long.state_nbytes() == before
    # O(B (S + 2) N) numbers at most (the table, the fixed experts' losses and means), whatever T.
    assert before <= 8 * 2 * (3 + 2) * 7 + 8 * 2 * 9
    # S >= T - 1 skips the table.
    assert RegretTracker(2, 7, 9, horizon=10).state_nbytes() < long.state_nbytes()


@pytest.mark.parametrize(
    ("args", "error"),
    [
        ((0, 3, 1), ValueError),
        ((1, 0, 1), ValueError),
        ((1, 3, -1), ValueError),
        ((1.5, 3, 1), TypeError),
        ((1, 3, True), TypeError),
    ],
)
def test_bad_arguments(args: tuple, error: type) -> None:
    with pytest.raises(error):
        RegretTracker(*args)


def test_pickled_tracker_continues_exactly():
    import pickle

    rng = np.random.default_rng(5)
    losses = rng.integers(0, 9, size=(30, 2, 4)) / 8
    a = RegretTracker(2, 4, 3)
    for t in range(10):
        a.update(losses[t], losses[t, :, 0])
    b = pickle.loads(pickle.dumps(a))
    for t in range(10, 30):
        a.update(losses[t], losses[t, :, 0])
        b.update(losses[t], losses[t, :, 0])
    np.testing.assert_array_equal(a.dynamic_regret, b.dynamic_regret)
    np.testing.assert_array_equal(a.static_regret, b.static_regret)


@pytest.mark.parametrize("static_pseudo", [True, False])
def test_shared_streams_equal_one_tracker_per_run(static_pseudo: bool) -> None:
    """copies = 2: run r plays stream r % 2; every regret equals a tracker of its own."""
    rng = np.random.default_rng(17)
    streams, copies, n, t_max = 2, 2, 4, 30
    losses = rng.random((t_max, streams, n))
    means = rng.random((t_max, streams, n))
    learner = rng.random((t_max, streams * copies))
    learner_means = rng.random((t_max, streams * copies))
    shared = RegretTracker(
        streams * copies, n, 2, horizon=t_max, copies=copies, static_pseudo=static_pseudo
    )
    alone = [RegretTracker(1, n, 2, horizon=t_max, static_pseudo=static_pseudo) for _ in range(4)]
    for t in range(t_max):
        shared.update(losses[t], learner[t], means[t], learner_means[t])
        for r, single in enumerate(alone):
            s, sl = r % streams, slice(r, r + 1)
            single.update(
                losses[t, s : s + 1], learner[t, sl], means[t, s : s + 1], learner_means[t, sl]
            )
    names = ["static_regret", "dynamic_regret", "per_round_best_pseudo_regret"]
    for name in names + (["static_pseudo_regret"] if static_pseudo else []):
        want = np.concatenate([getattr(single, name) for single in alone])
        np.testing.assert_array_equal(getattr(shared, name), want)
    if not static_pseudo:
        assert shared.static_pseudo_regret is None
