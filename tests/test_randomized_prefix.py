"""randomized-prefix-softmax (CC): schedule, exact selection law, forgetfulness, restarts,
batch = single runs, privacy audit and mutant, horizon-free utility."""

import math

import numpy as np
import pytest
from conftest import rollout

import agents
from agents.randomized_prefix import RandomizedPrefixSoftmax, selection_law

NAME = "randomized-prefix-softmax"


def bernoulli_losses(rng, t_max, b, means):
    return (rng.random((t_max, b, len(means))) < means).astype(np.float64)


def pseudo_regret(acts, means):
    gaps = means - means.min()
    return np.cumsum(gaps[acts], axis=0)  # (T, B)


# --------------------------------------------------------------------------- parameters
@pytest.mark.parametrize("eps", [0.1, 0.25, 4.0])
def test_temperature_and_claim_follow_epsilon(eps):
    """The default spends the whole request (eta = eps / 2, uncapped); the paper-mode row caps
    eta at 1/8 (Theorem 1), so it spends and certifies min(eps, 0.25), never the request."""
    for name, spent in ((NAME, eps), (NAME + ":paper", min(eps, 0.25))):
        a = agents.make(name, n_experts=3, horizon=100, epsilon=eps)
        assert a.eta == spent / 2 and a.epsilon_spent == pytest.approx(spent)
        claim = a.privacy
        assert claim.epsilon == spent and claim.delta == 0 and claim.certified
        assert claim.requested_epsilon == eps
        assert claim.holds_against == "oblivious" and "Lemma 3" in claim.accountant
    assert agents.make(NAME, n_experts=3, horizon=9, epsilon=4.0, eta_cap=0.125).eta == 0.125
    assert agents.make(NAME + ":paper", n_experts=3, horizon=9, eta_cap=math.inf).eta == 0.5


def test_paper_row_is_the_default_with_the_printed_cap():
    """``randomized-prefix-softmax:paper`` plays what the default plays with eta_cap = 1/8,
    bit for bit, and the same as the default wherever the cap does not bind (eps <= 0.25)."""
    t, b, n = 200, 3, 4
    losses = np.random.default_rng(2).random((t, b, n))

    def actions(name, **kw):
        a = agents.make(name, n_experts=n, horizon=t, num_envs=b, seed=4, **kw)
        return rollout(a, losses).actions

    paper = actions(NAME + ":paper", epsilon=2.0)
    np.testing.assert_array_equal(paper, actions(NAME, epsilon=2.0, eta_cap=0.125))
    assert not np.array_equal(paper, actions(NAME, epsilon=2.0))
    np.testing.assert_array_equal(actions(NAME + ":paper", epsilon=0.2), actions(NAME, epsilon=0.2))


def test_epsilon_inf_is_follow_the_leader_on_the_prefix():
    """At eps = inf the default is its non-private twin: each block plays the exact argmin of
    the previous block's random-prefix sums (FTL on the prefix; continuous losses, no ties)."""
    t, b, n = 127, 5, 4
    losses = np.random.default_rng(6).random((t, b, n))
    a = agents.make(NAME, n_experts=n, horizon=t, num_envs=b, seed=1, epsilon=math.inf)
    assert not a.privacy.is_private
    prefixes = {}
    out = rollout(a, losses, record=lambda g: np.r_[g.block_index, g.prefix_length])
    for row in out.records:
        prefixes.setdefault(int(row[0]), row[1:])
    for r in range(1, 6):  # block r = rounds 2^r .. 2^(r+1) - 1 plays block r - 1's pick
        start = (1 << (r - 1)) - 1  # 0-based first round of block r - 1
        sums = np.cumsum(losses[start:], axis=0)[prefixes[r - 1] - 1, np.arange(b)]
        np.testing.assert_array_equal(out.actions[(1 << r) - 1], sums.argmin(axis=1))


def test_block_schedule_and_prefix_laws():
    b = 4000
    a = RandomizedPrefixSoftmax(2, 64, epsilon=1.0, num_envs=b, seed=3)
    zeros = np.zeros((b, 2))
    seen = {}
    a.act(zeros)  # round 1
    for rnd in range(2, 64):
        # Block r starts at round 2^r: the prefix for block r is in place before it is played.
        a.act(zeros)
        if rnd & (rnd - 1) == 0:
            seen[a.block_index] = a.prefix_length.copy()
    assert sorted(seen) == [1, 2, 3, 4, 5]
    assert np.all(seen[1] == 2)  # M_1 = 2 always (uniform on {2})
    for r in (2, 3, 4, 5):
        lo, hi = 2 ** (r - 1) + 1, 2**r
        m = seen[r]
        assert m.min() == lo and m.max() == hi
        freq = np.bincount(m - lo, minlength=hi - lo + 1) / b
        k = hi - lo + 1
        assert np.max(np.abs(freq - 1 / k)) < 5 * math.sqrt((1 / k) * (1 - 1 / k) / b)


# --------------------------------------------------------------------------- exact law
@pytest.mark.parametrize(("eta_cap", "eps"), [(math.inf, 2.0), (0.125, 1.0)])
def test_selection_law_matches_the_exact_formula(eta_cap, eps):
    b, n = 20_000, 3
    rng = np.random.default_rng(11)
    seq = rng.integers(0, 2, size=(15, n)).astype(np.float64)
    seq[3:7] = [[0, 1, 1], [1, 0, 1], [0, 1, 0], [1, 1, 0]]  # block 2 (rounds 4..7)
    a = RandomizedPrefixSoftmax(n, 15, epsilon=eps, eta_cap=eta_cap, num_envs=b, seed=5)
    acts = rollout(a, np.broadcast_to(seq[:, None, :], (15, b, n))).actions
    blocks = {1: seq[0:1], 2: seq[1:3], 3: seq[3:7]}  # block r-1 decides the action of block r
    for r, first_round in ((1, 2), (2, 4), (3, 8)):
        exact = selection_law(blocks[r], a.eta)
        emp = np.bincount(acts[first_round - 1], minlength=n) / b
        tol = 5 * np.sqrt(exact * (1 - exact) / b) + 1e-12
        assert np.all(np.abs(emp - exact) <= tol), (r, emp, exact)
        # The action is held for the whole block.
        assert np.all(acts[first_round - 1 : 2 * first_round - 1] == acts[first_round - 1])
    # The round-2 law is a plain softmax of round 1's losses.
    soft = np.exp(-a.eta * seq[0])
    np.testing.assert_allclose(selection_law(seq[0:1], a.eta), soft / soft.sum())


def test_selection_law_formula_is_the_prefix_average():
    x = np.array([[0.0, 1.0], [1.0, 0.0], [0.0, 1.0], [0.0, 1.0]])
    eta = 0.7

    def soft(v):
        w = np.exp(-eta * v)
        return w / w.sum()

    want = 0.5 * (soft(x[:3].sum(0)) + soft(x.sum(0)))
    np.testing.assert_allclose(selection_law(x, eta), want)
    np.testing.assert_allclose(selection_law(x, eta, prefix="full"), soft(x.sum(0)))
    with pytest.raises(ValueError, match="even"):
        selection_law(x[:3], eta)


def test_forgetful_earlier_blocks_do_not_move_later_picks():
    # Same seed, same random draws: changing block 1's data changes A_2 only, never A_3 (forgetful).
    b, n = 500, 4
    rng = np.random.default_rng(2)
    seq = rng.random((15, b, n))
    other = seq.copy()
    other[1:3] = rng.random((2, b, n))  # block 1 = rounds 2, 3
    acts = rollout(
        RandomizedPrefixSoftmax(n, 15, epsilon=8.0, eta_cap=math.inf, num_envs=b, seed=9), seq
    ).actions
    acts2 = rollout(
        RandomizedPrefixSoftmax(n, 15, epsilon=8.0, eta_cap=math.inf, num_envs=b, seed=9), other
    ).actions
    assert np.array_equal(acts[:3], acts2[:3])
    assert not np.array_equal(acts[3:7], acts2[3:7])  # A_2 reads block 1
    assert np.array_equal(acts[7:], acts2[7:])  # A_3 reads block 2 only
    # Data after the prefix of a block is never read: the last round of block 3 (round 15)
    # only matters for A_4, which this horizon never plays.


# --------------------------------------------------------------------------- restarts
def test_periodic_restart_plays_a_fresh_uniform_expert():
    b, n, w = 20_000, 4, 6
    seq = np.zeros((2 * w, n))
    seq[:, 1:] = 1.0  # expert 0 is perfect: by round w most runs play it
    a = RandomizedPrefixSoftmax(
        n, 2 * w, epsilon=10.0, eta_cap=math.inf, restarts="periodic", window=w, num_envs=b, seed=1
    )
    acts = rollout(a, np.broadcast_to(seq[:, None, :], (2 * w, b, n))).actions
    assert np.mean(acts[w - 1] == 0) > 0.95
    freq = np.bincount(acts[w], minlength=n) / b  # round w + 1: new epoch, uniform A_0
    assert np.max(np.abs(freq - 1 / n)) < 5 * math.sqrt(0.25 * 0.75 / b)
    # Block 1 of the new epoch (rounds w + 2, w + 3) reads round w + 1 only.
    assert np.mean(acts[w + 1] == 0) > 0.95


def test_capped_blocks_switch_only_at_block_starts():
    b, n, w, t_max = 300, 3, 8, 60
    rng = np.random.default_rng(4)
    a = RandomizedPrefixSoftmax(
        n, t_max, epsilon=1.0, restarts="capped", window=w, num_envs=b, seed=2
    )
    acts = rollout(a, rng.random((t_max, b, n))).actions
    starts = {1, 2, 4, 8} | set(range(16, t_max + 1, 8))
    changed = {t + 2 for t in np.flatnonzero(np.any(acts[1:] != acts[:-1], axis=1))}
    assert changed <= starts
    assert {16, 24, 32} <= changed  # capped blocks of length 8 after the first 8 rounds


def test_default_windows_come_from_horizon_and_switch_budget():
    assert RandomizedPrefixSoftmax(2, 1000, restarts="periodic", n_switches=3).window == 250
    assert RandomizedPrefixSoftmax(2, 1000, restarts="capped", n_switches=3).window == 128
    assert RandomizedPrefixSoftmax(2, 1000).window is None


# --------------------------------------------------------------------------- batch = single
@pytest.mark.parametrize(
    "params",
    [
        {},
        {"restarts": "periodic", "window": 5},
        {"restarts": "capped", "window": 4},
        {"prefix": "full"},
    ],
)
def test_batch_equals_single_runs(params):
    b, n, t_max = 3, 4, 40
    losses = np.random.default_rng(8).random((t_max, b, n))
    batch = rollout(
        RandomizedPrefixSoftmax(n, t_max, epsilon=2.0, num_envs=b, seed=5, **params), losses
    ).actions
    for i in range(b):
        single = RandomizedPrefixSoftmax(n, t_max, epsilon=2.0, seed=5 + i, **params)
        assert np.array_equal(rollout(single, losses[:, i : i + 1]).actions, batch[:, i : i + 1])


# --------------------------------------------------------------------------- utility
MEANS = np.array([0.7, 0.7, 0.3, 0.7, 0.7])  # Delta = 0.4, best expert 2


def test_regret_stops_growing_with_the_horizon_unlike_hedge():
    b, t0 = 200, 2048
    losses = bernoulli_losses(np.random.default_rng(0), 4 * t0, b, MEANS)
    rps = pseudo_regret(
        rollout(agents.make(NAME, n_experts=5, horizon=4 * t0, num_envs=b, seed=0), losses).actions,
        MEANS,
    )
    r_t0, r_4t0 = rps[t0 - 1].mean(), rps[-1].mean()
    assert r_4t0 - r_t0 < 0.05 * r_t0 + 1.0  # plateau: no growth after T0
    hedge = []
    for t_max in (t0, 4 * t0):  # Hedge tuned to each horizon keeps growing like sqrt(T)
        h = agents.make("hedge", n_experts=5, horizon=t_max, num_envs=b, seed=0)
        hedge.append(pseudo_regret(rollout(h, losses[:t_max]).actions, MEANS)[-1].mean())
    assert hedge[1] > 1.5 * hedge[0]
    assert r_4t0 < 1 + 800 * math.log(5) / 0.4 + 16 * math.log(5) / 0.125  # Theorem 1


def test_restarts_recover_from_a_shift_that_plain_rps_misses():
    b, t_max, half = 100, 4096, 2048
    before = np.array([0.3, 0.7, 0.7, 0.7])
    after = before[::-1].copy()  # expert 3 becomes the best at round half + 1
    rng = np.random.default_rng(7)
    losses = np.concatenate(
        [bernoulli_losses(rng, half, b, before), bernoulli_losses(rng, half, b, after)]
    )
    regret = {}
    for restarts, window in (("none", None), ("periodic", half), ("capped", 256)):
        a = RandomizedPrefixSoftmax(
            4, t_max, epsilon=1.0, restarts=restarts, window=window, num_envs=b, seed=3
        )
        acts = rollout(a, losses).actions
        gaps = np.concatenate(
            [
                np.broadcast_to(before - before.min(), (half, 4)),
                np.broadcast_to(after - after.min(), (half, 4)),
            ]
        )
        regret[restarts] = np.take_along_axis(gaps, acts, axis=1).sum(0).mean()
    # Plain RPS plays block 11 (rounds 2048..4095) with a pre-shift pick: regret ~ 0.4 * 2048.
    assert regret["none"] > 600
    assert regret["periodic"] < 0.25 * regret["none"]
    assert regret["capped"] < 0.5 * regret["none"]


# --------------------------------------------------------------------------- bad input
@pytest.mark.parametrize(
    ("params", "error", "match"),
    [
        ({"restarts": "sometimes"}, ValueError, "restarts"),
        ({"restarts": "capped", "window": 6}, ValueError, "power of two"),
        ({"restarts": "periodic", "window": 0}, ValueError, "window"),
        ({"eta_cap": 0.0}, ValueError, "eta_cap"),
        ({"prefix": "half"}, ValueError, "prefix"),
        ({"epsilon": -1.0}, ValueError, "epsilon"),
        ({"n_switches": -1, "restarts": "periodic"}, ValueError, "n_switches"),
        ({"window": 2.5, "restarts": "periodic"}, TypeError, "window"),
    ],
)
def test_bad_parameters_raise(params, error, match):
    with pytest.raises(error, match=match):
        RandomizedPrefixSoftmax(3, 100, **params)
