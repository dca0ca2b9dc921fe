"""Adaptive adversaries: timing, known answers, block structure, seeding, neighbours, memory."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dp_experts_env import batch_rng
from dp_experts_env.adversaries import (
    ActionHistory,
    AdaptivePolicy,
    BaseLosses,
    Neighbor,
    PolicyAdversary,
    families,
    make_adversary,
)
from dp_experts_env.adversaries.adaptive.lower_bounds import _largest_t0
from dp_experts_env.adversaries.base import ADVICE_STREAM, DATA_STREAM
from dp_experts_env.batch_rng import BatchRNG

ADAPTIVE = families("adaptive")


@pytest.fixture(autouse=True)
def _small_rng_chunks(monkeypatch):
    # A stream does not depend on BatchRNG's chunk size (its documented contract); small chunks
    # keep these many short games fast (each fresh stream otherwise fills a 4M-double buffer).
    monkeypatch.setattr(batch_rng, "_BUFFER_DOUBLES", 1 << 10)


def actions_for(seeds, t, n_experts):
    """A per-run action rule that depends only on (seed, t): batch and single runs agree."""
    s = np.asarray(seeds, dtype=np.int64)
    return (s * 7 + t * 3 + (t * t) % 5) % n_experts


def play(adv, seeds, rule=actions_for, neighbor=None):
    adv.reset(seeds, neighbor=neighbor)
    rounds = []
    for t in range(1, adv.horizon + 1):
        rounds.append(adv.next_round())
        adv.record(rule(seeds, t, adv.n_experts))
    return rounds


def losses_of(rounds):
    return np.stack([r.losses for r in rounds])  # (T, B, N)


class CoinPolicy(AdaptivePolicy):
    """User policy: punish the last 3 actions, each with a public coin of probability 1/2."""

    window = 3

    def losses(self, t, z, history):
        coins = self.rng.random((3,))  # fixed count per round, whatever the history
        recent = history.last(3)
        out = z.copy()
        rows = np.arange(self.num_runs)
        for lag in range(recent.shape[1]):
            hit = coins[:, lag] < 0.5
            out[rows[hit], recent[hit, lag]] = 1.0
        return out


class LastActionPolicy(AdaptivePolicy):
    """User policy keeping its own statistic through record(): loss 1 on the last action only."""

    def reset(self, num_runs, n_experts, horizon, rng):
        super().reset(num_runs, n_experts, horizon, rng)
        self.last = np.full(num_runs, -1)

    def record(self, t, actions):
        self.last = actions.copy()

    def losses(self, t, z, history):
        out = np.zeros_like(z)
        ok = self.last >= 0
        out[np.arange(self.num_runs)[ok], self.last[ok]] = 1.0
        return out


# ------------------------------------------------------------------------------- basics
@pytest.mark.parametrize("family", ADAPTIVE)
def test_shapes_ranges_and_flags(family):
    adv = make_adversary("adaptive", family, n_experts=10, horizon=30)
    assert adv.oblivious is False and adv.feedback == "full"
    rounds = play(adv, [0, 1, 2])
    losses = losses_of(rounds)
    assert losses.shape == (30, 3, 10)
    assert losses.dtype == np.float64
    assert losses.min() >= 0.0 and losses.max() <= 1.0
    assert all(r.means is None and r.advice is None for r in rounds)


@pytest.mark.parametrize("family", ADAPTIVE)
def test_round_t_losses_ignore_round_t_action(family):
    """Two action sequences equal up to t-1 and different at t give equal round-t losses."""
    n, horizon, t_diff = 10, 24, 9
    seeds = [3, 4]

    def rule_a(seeds, t, n_experts):
        return actions_for(seeds, t, n_experts)

    def rule_b(seeds, t, n_experts):
        a = actions_for(seeds, t, n_experts)
        return (a + 1) % n_experts if t >= t_diff else a

    la = losses_of(play(make_adversary("adaptive", family, n_experts=n, horizon=horizon), seeds))
    lb = losses_of(
        play(make_adversary("adaptive", family, n_experts=n, horizon=horizon), seeds, rule_b)
    )
    la2 = losses_of(
        play(make_adversary("adaptive", family, n_experts=n, horizon=horizon), seeds, rule_a)
    )
    np.testing.assert_array_equal(la, la2)
    np.testing.assert_array_equal(la[:t_diff], lb[:t_diff])  # rounds 1..t_diff inclusive


def test_the_reaction_is_real_for_punish_last():
    """Round t+1 does change when round t's action changes (the test above is not vacuous)."""
    adv = make_adversary("adaptive", "punish_last", n_experts=5, horizon=3, base="zeros")
    adv.reset([0])
    adv.next_round()
    adv.record(np.array([1]))
    assert adv.next_round().losses[0].tolist() == [0, 1, 0, 0, 0]
    adv.record(np.array([4]))
    assert adv.next_round().losses[0].tolist() == [0, 0, 0, 0, 1]


def test_protocol_is_enforced():
    adv = make_adversary("adaptive", "punish_last", n_experts=4, horizon=5)
    with pytest.raises(RuntimeError, match="reset"):
        adv.next_round()
    adv.reset([0])
    with pytest.raises(RuntimeError, match="record"):
        adv.record(np.array([0]))
    adv.next_round()
    with pytest.raises(RuntimeError, match="record"):
        adv.next_round()
    with pytest.raises(TypeError, match="actions"):
        adv.record(np.array([0.5]))
    with pytest.raises(ValueError, match="actions"):
        adv.record(np.array([4]))
    with pytest.raises(ValueError, match="shape"):
        adv.record(np.array([0, 1]))
    adv.record(np.array([2]))
    with pytest.raises(RuntimeError, match="once per round"):
        adv.record(np.array([2]))


# ------------------------------------------------------------------------- known answers
def test_punish_last_known_answer_zeros_base():
    acts = [2, 2, 0, 3, 1, 1, 4]
    adv = make_adversary(
        "adaptive", "punish_last", n_experts=5, horizon=len(acts), k=2, base="zeros"
    )
    rounds = play(adv, [0], rule=lambda s, t, n: np.array([acts[t - 1]]))
    for t, r in enumerate(rounds, start=1):
        expect = np.zeros(5)
        expect[acts[max(0, t - 3) : t - 1]] = 1.0
        np.testing.assert_array_equal(r.losses[0], expect, err_msg=f"round {t}")


def test_punish_last_base_is_the_data_stream():
    """Unpunished entries are Bernoulli(mean) draws: N data uniforms per round, seed by seed."""
    n, horizon, seeds = 6, 12, [11, 12]
    mean = np.linspace(0.1, 0.9, n)
    adv = make_adversary("adaptive", "punish_last", n_experts=n, horizon=horizon, base_mean=mean)
    rounds = play(adv, seeds)
    ref = BatchRNG(seeds, DATA_STREAM)
    for t, r in enumerate(rounds, start=1):
        z = ref.bernoulli(mean, (n,))
        punished = np.zeros((2, n), dtype=bool)
        if t > 1:
            punished[np.arange(2), actions_for(seeds, t - 1, n)] = True
        np.testing.assert_array_equal(r.losses, np.where(punished, 1.0, z))


def test_punish_frequent_matches_brute_force():
    rng = np.random.default_rng(0)
    n, horizon, window, m = 6, 40, 5, 2
    acts = rng.integers(0, 3, size=horizon)  # few distinct experts -> many ties
    adv = make_adversary(
        "adaptive",
        "punish_frequent",
        n_experts=n,
        horizon=horizon,
        window=window,
        n_punished=m,
        base="zeros",
    )
    rounds = play(adv, [0], rule=lambda s, t, nn: np.array([acts[t - 1]]))
    for t, r in enumerate(rounds, start=1):
        recent = acts[max(0, t - 1 - window) : t - 1]
        counts = np.bincount(recent, minlength=n)
        order = sorted(range(n), key=lambda j: (-counts[j], j))[:m]
        expect = np.zeros(n)
        expect[[j for j in order if counts[j] > 0]] = 1.0
        np.testing.assert_array_equal(r.losses[0], expect, err_msg=f"round {t}")


def test_hidden_sign_vector_rules():
    n, horizon = 20, 30  # p = 10 columns, hard phase floor(0.9 * 10) = 9 rounds
    adv = make_adversary("adaptive", "hidden_sign_vector", n_experts=n, horizon=horizon)
    adv.reset([5])
    first = adv.next_round().losses[0]
    pair = first.reshape(10, 2)
    np.testing.assert_array_equal(pair.sum(axis=1), np.ones(10))  # one correct sign per column
    signs = np.where(pair[:, 0] == 0, -1, 1)  # zero loss on the even expert means c_j = -1
    burned = set()
    adv.record(np.array([3]))  # column 1, sign +1
    burned.add(1)
    for t in range(2, horizon + 1):
        losses = adv.next_round().losses[0]
        if t <= 9:
            for j in range(10):
                if j in burned:
                    assert losses[2 * j] == losses[2 * j + 1] == 1.0
                else:
                    assert losses[2 * j + (signs[j] > 0)] == 0.0
                    assert losses[2 * j + (signs[j] < 0)] == 1.0
        else:
            assert not losses.any()  # after the hard phase all losses are 0
        col = t % 10
        adv.record(np.array([2 * col]))
        if t <= 9:
            burned.add(col)


def test_sign_estimation_always_leaves_a_zero_loss_expert():
    n, horizon = 400, 200
    adv = make_adversary("adaptive", "sign_estimation", n_experts=n, horizon=horizon)
    rule = lambda s, t, nn: np.random.default_rng([t, *s]).integers(0, nn, size=len(s))  # noqa: E731
    cum = losses_of(play(adv, [0, 1], rule)).sum(axis=0)
    assert np.all(cum.min(axis=1) == 0.0)
    assert np.all(cum.max(axis=1) > 0.0)


def test_sign_estimation_user_rows_cycle_and_fingerprints():
    """With no column ever burned the losses are the data: user rows in round-robin order."""
    n, users = 41, 3  # odd N: expert 40 is the leftover expert, loss 1, never burns a column
    adv = make_adversary(
        "adaptive",
        "sign_estimation",
        n_experts=n,
        horizon=18,
        n_users=users,
        fingerprint_fraction=1.0,
    )
    rounds = play(adv, [2], rule=lambda s, t, nn: np.array([nn - 1]))
    losses = losses_of(rounds)[:, 0]  # (T, N)
    assert np.all(losses[:, -1] == 1.0)
    pairs = losses[:, :-1].reshape(18, 20, 2)
    np.testing.assert_array_equal(pairs.sum(axis=2), np.ones((18, 20)))
    np.testing.assert_array_equal(losses[:-users], losses[users:])  # round-robin schedule
    distinct = {losses[t].tobytes() for t in range(users)}
    assert len(distinct) > 1  # fingerprinting columns differ across users


def test_sign_estimation_hard_phase_sizes():
    adv = make_adversary("adaptive", "sign_estimation", n_experts=21, horizon=100)
    assert adv.policy.hard_rounds == 9 and adv.policy.p == 10
    adv = make_adversary("adaptive", "sign_estimation", n_experts=21, horizon=5)
    assert adv.policy.hard_rounds == 5
    adv = make_adversary(
        "adaptive", "hidden_sign_vector", n_experts=200, horizon=100, hard_rounds=7
    )
    assert adv.policy.hard_rounds == 7
    # epsilon rule: largest T0 with 200 sqrt(T0) ln(T0) <= 1/eps
    for eps in (1.0, 1e-3, 1e-4):
        t0 = _largest_t0(eps)
        assert 200 * math.sqrt(t0) * math.log(t0) <= 1 / eps
        assert 200 * math.sqrt(t0 + 1) * math.log(t0 + 1) > 1 / eps
    adv = make_adversary(
        "adaptive", "hidden_sign_vector", n_experts=2000, horizon=1000, epsilon=1e-4
    )
    assert adv.policy.hard_rounds == _largest_t0(1e-4)


# ------------------------------------------------------------------------------ blocks
def test_block_restart_block_structure_with_punish_last():
    adv = make_adversary(
        "adaptive",
        "block_restart",
        n_experts=4,
        horizon=11,
        n_shifts=2,
        inner="punish_last",
        inner_knobs={"base": "zeros"},
    )
    assert adv.default_switches == 2 and adv.has_segments
    rounds = play(adv, [0], rule=lambda s, t, n: np.array([t % 4]))
    # T' = floor(11 / 3) = 3: blocks [1..3], [4..6], [7..11] (the last takes the leftover)
    expect_seg = [0, 0, 0, 1, 1, 1, 2, 2, 2, 2, 2]
    assert [int(r.segment[0]) for r in rounds] == expect_seg
    assert [bool(r.shift[0]) for r in rounds] == [t in (4, 7) for t in range(1, 12)]
    for t, r in enumerate(rounds, start=1):
        expect = np.zeros(4)
        if t not in (1, 4, 7):  # in-block history only: nothing punished at a block start
            expect[(t - 1) % 4] = 1.0
        np.testing.assert_array_equal(r.losses[0], expect, err_msg=f"round {t}")


def test_block_restart_default_restarts_sign_estimation_per_block():
    # N = 10 -> p = 5, each block of 10 rounds has a hard phase of floor(4.5) = 4 rounds
    adv = make_adversary("adaptive", "block_restart", n_experts=10, horizon=20, n_shifts=1)
    rounds = play(adv, [1], rule=lambda s, t, n: np.array([0]))
    losses = losses_of(rounds)[:, 0]
    assert not losses[4:10].any() and not losses[14:20].any()
    for t in (0, 10):  # block starts: no column burned yet, one zero per column pair
        np.testing.assert_array_equal(losses[t].reshape(5, 2).sum(axis=1), np.ones(5))
    for t in (1, 2, 3, 11, 12, 13):  # column 0 burned inside the block
        assert losses[t, 0] == losses[t, 1] == 1.0


def test_block_restart_callable_inner_gets_fresh_policies():
    made = []

    def inner(block):
        made.append(block)
        return LastActionPolicy()

    adv = make_adversary(
        "adaptive", "block_restart", n_experts=3, horizon=6, n_shifts=1, inner=inner
    )
    made.clear()  # the factory is tried once at construction
    rounds = play(adv, [0], rule=lambda s, t, n: np.array([1]))
    assert made == [0, 1]
    firsts = [r.losses[0].sum() for r in rounds]
    assert firsts == [0, 1, 1, 0, 1, 1]


# --------------------------------------------------------------------------- user policies
def test_user_policy_with_coins_and_window():
    n, horizon, seeds = 5, 15, [8, 9]
    adv = PolicyAdversary(n, horizon, policy=CoinPolicy(), base="zeros")
    rounds = play(adv, seeds)
    coins = BatchRNG(seeds, ADVICE_STREAM)  # policy coins are the public ADVICE stream
    for t, r in enumerate(rounds, start=1):
        c = coins.random((3,))
        expect = np.zeros((2, n))
        for b in range(2):
            for lag in range(min(3, t - 1)):
                if c[b, lag] < 0.5:
                    expect[b, actions_for(seeds, t - 1 - lag, n)[b]] = 1.0
        np.testing.assert_array_equal(r.losses, expect)


def test_user_policy_output_is_validated():
    class Bad(AdaptivePolicy):
        def losses(self, t, z, history):
            return z + 2.0

    adv = PolicyAdversary(3, 4, policy=Bad())
    adv.reset([0])
    with pytest.raises(ValueError, match=r"Bad.losses must return finite values in \[0, 1\]"):
        adv.next_round()

    class WrongShape(AdaptivePolicy):
        def losses(self, t, z, history):
            return z[:, :1]

    adv = PolicyAdversary(3, 4, policy=WrongShape())
    adv.reset([0])
    with pytest.raises(ValueError, match="shape"):
        adv.next_round()


def test_user_base_losses_object():
    class Ramp(BaseLosses):
        def draw(self, t):
            return np.full((self.num_runs, self.n_experts), t / self.horizon)

    adv = PolicyAdversary(3, 4, policy=LastActionPolicy(), base=Ramp())
    rounds = play(adv, [0], rule=lambda s, t, n: np.array([0]))
    assert rounds[0].losses.sum() == 0 and rounds[1].losses[0].tolist() == [1, 0, 0]


def test_action_history_ring_buffer():
    h = ActionHistory(2, 3)
    assert h.last().shape == (2, 0)
    for t in range(1, 6):
        evicted = h.push(np.array([t, 10 * t]))
        assert (evicted is None) == (t <= 3)
    np.testing.assert_array_equal(h.last(), [[5, 4, 3], [50, 40, 30]])
    np.testing.assert_array_equal(h.last(2), [[5, 4], [50, 40]])
    np.testing.assert_array_equal(h.last(9), [[5, 4, 3], [50, 40, 30]])
    assert h.count == 5


# ------------------------------------------------------------------ seeds and neighbours
@pytest.mark.parametrize("family", ADAPTIVE)
def test_same_seed_same_data_and_batch_equals_single_runs(family):
    seeds = [21, 22, 23]
    make = lambda: make_adversary("adaptive", family, n_experts=12, horizon=20)  # noqa: E731
    batch = losses_of(play(make(), seeds))
    again = losses_of(play(make(), seeds))
    np.testing.assert_array_equal(batch, again)
    for b, s in enumerate(seeds):
        single = losses_of(play(make(), [s]))
        np.testing.assert_array_equal(batch[:, b : b + 1], single)


def test_user_policy_batch_equals_single_runs():
    seeds = [1, 2, 3]
    batch = losses_of(play(PolicyAdversary(6, 12, policy=CoinPolicy()), seeds))
    for b, s in enumerate(seeds):
        single = losses_of(play(PolicyAdversary(6, 12, policy=CoinPolicy()), [s]))
        np.testing.assert_array_equal(batch[:, b : b + 1], single)


def test_different_seeds_differ():
    a = losses_of(play(make_adversary("adaptive", "punish_last", n_experts=8, horizon=10), [0]))
    b = losses_of(play(make_adversary("adaptive", "punish_last", n_experts=8, horizon=10), [1]))
    assert not np.array_equal(a, b)


@pytest.mark.parametrize("family", ["punish_last", "sign_estimation", "block_restart"])
def test_neighbor_replaces_exactly_one_datum(family):
    n, horizon, t_star, seeds = 10, 16, 3, [4, 5]
    vec = np.linspace(0.0, 1.0, n)
    make = lambda: make_adversary("adaptive", family, n_experts=n, horizon=horizon)  # noqa: E731
    base = losses_of(play(make(), seeds))
    nb = losses_of(play(make(), seeds, neighbor={"round": t_star, "loss": vec}))
    other = np.arange(horizon) != t_star - 1
    np.testing.assert_array_equal(base[other], nb[other])
    # round t*: the policy applied to the replaced datum (1 where it punishes, vec elsewhere)
    got = nb[t_star - 1]
    changed = base[t_star - 1] != 1.0
    np.testing.assert_array_equal(got[changed], np.broadcast_to(vec, got.shape)[changed])
    assert np.all((got == 1.0) | np.isclose(got, np.broadcast_to(vec, got.shape)))


def test_neighbor_object_and_validation():
    adv = make_adversary("adaptive", "punish_last", n_experts=4, horizon=5)
    adv.reset([0], neighbor=Neighbor(2, np.zeros(4)))
    with pytest.raises(ValueError, match="neighbor"):
        adv.reset([0], neighbor={"round": 6, "loss": np.zeros(4)})
    with pytest.raises(ValueError, match="neighbor"):
        adv.reset([0], neighbor={"round": 1, "loss": np.zeros(3)})


# -------------------------------------------------------------------------------- memory
@pytest.mark.parametrize("family", ADAPTIVE)
def test_memory_does_not_grow_with_horizon(family):
    sizes = []
    for horizon in (200, 10**6):
        adv = make_adversary("adaptive", family, n_experts=10, horizon=horizon)
        play_rounds = 50
        seeds = [0, 1]
        adv.reset(seeds)
        for t in range(1, play_rounds + 1):
            adv.next_round()
            adv.record(actions_for(seeds, t, 10))
        sizes.append(adv.state_nbytes())
    assert sizes[0] == sizes[1]
    assert sizes[1] < 50_000


def test_full_history_policy_costs_what_it_asks():
    class Full(AdaptivePolicy):
        window = 10**6

        def losses(self, t, z, history):
            return z

    adv = PolicyAdversary(3, 1000, policy=Full())
    adv.reset([0])
    assert adv.state_nbytes() >= 1000 * 8  # window capped at the horizon, not 10^6


# ---------------------------------------------------------------------------- bad input
@pytest.mark.parametrize(
    ("family", "kwargs", "err", "match"),
    [
        ("punish_last", {"k": 0}, ValueError, "k must be >= 1"),
        ("punish_last", {"k": 1.5}, TypeError, "k must be an integer"),
        ("punish_last", {"base": "gauss"}, ValueError, "base must be one of"),
        ("punish_last", {"base": 3}, TypeError, "base must be one of"),
        ("punish_last", {"base_mean": 1.5}, ValueError, "base_mean"),
        ("punish_last", {"base_mean": [0.5, 0.5]}, ValueError, "base_mean"),
        ("punish_last", {"base": "zeros", "base_mean": 0.2}, ValueError, "base_mean"),
        ("punish_frequent", {"window": 0}, ValueError, "window"),
        ("punish_frequent", {"n_punished": 11}, ValueError, "n_punished"),
        ("sign_estimation", {"n_users": 0}, ValueError, "n_users"),
        ("sign_estimation", {"fingerprint_fraction": 1.5}, ValueError, "fingerprint_fraction"),
        ("sign_estimation", {"hard_rounds": 6}, ValueError, "hard_rounds"),
        ("hidden_sign_vector", {"epsilon": 0.0}, ValueError, "epsilon"),
        ("block_restart", {"n_shifts": 20}, ValueError, "n_shifts"),
        ("block_restart", {"n_shifts": -1}, ValueError, "n_shifts"),
        ("block_restart", {"inner": "block_restart"}, ValueError, "inner must be one of"),
        ("block_restart", {"inner": 3}, TypeError, "inner must be"),
        ("block_restart", {"inner_knobs": {"k": 0}, "inner": "punish_last"}, ValueError, "k"),
        ("block_restart", {"inner_knobs": [1]}, TypeError, "inner_knobs"),
        ("block_restart", {"base": "zeros"}, ValueError, "base"),
        ("block_restart", {"inner": lambda b: 3}, TypeError, "AdaptivePolicy"),
    ],
)
def test_bad_parameters_raise(family, kwargs, err, match):
    with pytest.raises(err, match=match):
        make_adversary("adaptive", family, n_experts=10, horizon=20, **kwargs)


def test_bad_constructor_arguments():
    with pytest.raises(TypeError, match="AdaptivePolicy"):
        PolicyAdversary(3, 10, policy=lambda t, z, h: z)
    with pytest.raises(ValueError, match="n_experts"):
        make_adversary("adaptive", "sign_estimation", n_experts=1, horizon=10)
    with pytest.raises(ValueError, match="horizon"):
        make_adversary("adaptive", "punish_last", n_experts=3, horizon=0)

    class NegSwitch(AdaptivePolicy):
        default_switches = -1

        def losses(self, t, z, history):
            return z

    with pytest.raises(ValueError, match="default_switches"):
        PolicyAdversary(3, 10, policy=NegSwitch())
