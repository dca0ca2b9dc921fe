"""Bandit and expert-advice models: shapes, advice, planted experts, seeding, neighbours, memory."""

from __future__ import annotations

import numpy as np
import pytest

from dp_experts_env import batch_rng
from dp_experts_env.adversaries import families, make_adversary
from dp_experts_env.adversaries.advice import MAX_POLICY_CLASS_EXPERTS
from dp_experts_env.adversaries.base import DATA_STREAM
from dp_experts_env.batch_rng import BatchRNG

ADVICE = families("bandit_advice")


@pytest.fixture(autouse=True)
def _small_rng_chunks(monkeypatch):
    # A stream does not depend on BatchRNG's chunk size (its documented contract); small chunks
    # keep these many short games fast (each fresh stream otherwise fills a 4M-double buffer).
    monkeypatch.setattr(batch_rng, "_BUFFER_DOUBLES", 1 << 10)


BANDIT = families("bandit")
ALL = [("bandit_advice", f) for f in ADVICE] + [("bandit", f) for f in BANDIT]


def replay_data(kind, n_experts, horizon, n_arms):
    """Fixed user data for the replay families: (T, K) arm losses and (T, N, K) advice."""
    rng = np.random.default_rng(99)
    data = {"losses": rng.random((horizon, n_arms))}
    if kind == "bandit_advice":
        data["advice"] = rng.dirichlet(np.ones(n_arms), size=(horizon, n_experts))
    return data


def build(kind, family, n_experts=8, horizon=40, n_arms=3, **knobs):
    if kind == "bandit":
        n_experts = n_arms
    if family == "policy_class":
        n_experts = n_arms**2
    if family == "replay":
        return make_adversary(
            kind, family, **replay_data(kind, n_experts, horizon, n_arms), **knobs
        )
    return make_adversary(
        kind, family, n_experts=n_experts, horizon=horizon, n_arms=n_arms, **knobs
    )


def play(adv, seeds, neighbor=None, actions=None):
    adv.reset(seeds, neighbor=neighbor)
    rounds = []
    for t in range(1, adv.horizon + 1):
        rounds.append(adv.next_round())
        a = np.full(len(seeds), t % adv.n_arms) if actions is None else actions(t)
        adv.record(a)
    return rounds


def stack(rounds, field):
    return np.stack([np.asarray(getattr(r, field)) for r in rounds])


# ------------------------------------------------------------------------------- basics
@pytest.mark.parametrize(("kind", "family"), ALL)
def test_shapes_ranges_and_advice_rows(kind, family):
    adv = build(kind, family)
    assert adv.feedback == "bandit" and adv.oblivious and adv.knows_means
    assert adv.datum_size == adv.n_arms
    rounds = play(adv, [0, 1])
    n, k = adv.n_experts, adv.n_arms
    losses, means, advice = stack(rounds, "losses"), stack(rounds, "means"), stack(rounds, "advice")
    assert losses.shape == (40, 2, k) and means.shape == (40, 2, k)
    assert advice.shape == (40, 2, n, k)
    for arr in (losses, means, advice):
        assert arr.dtype == np.float64 and arr.min() >= 0.0 and arr.max() <= 1.0
    np.testing.assert_allclose(advice.sum(axis=-1), 1.0, atol=1e-12)
    if adv.has_segments:
        assert stack(rounds, "segment").shape == (40, 2)
        assert not stack(rounds, "shift")[0].any()


@pytest.mark.parametrize(("kind", "family"), ALL)
def test_losses_never_depend_on_actions(kind, family):
    a = play(build(kind, family), [3, 4])
    b = play(build(kind, family), [3, 4], actions=lambda t: np.array([(t * 7) % 3, 1]))
    for field in ("losses", "means", "advice"):
        np.testing.assert_array_equal(stack(a, field), stack(b, field))


@pytest.mark.parametrize(("kind", "family"), ALL)
def test_same_seed_same_data_and_batch_equals_single_runs(kind, family):
    seeds = [10, 11, 12]
    batch = play(build(kind, family), seeds)
    again = play(build(kind, family), seeds)
    for field in ("losses", "means", "advice"):
        np.testing.assert_array_equal(stack(batch, field), stack(again, field))
    for b, s in enumerate(seeds):
        single = play(build(kind, family), [s])
        for field in ("losses", "means", "advice"):
            np.testing.assert_array_equal(stack(batch, field)[:, b : b + 1], stack(single, field))


RANDOM = [(k, f) for k, f in ALL if f not in ("lemma11_switch", "periodic_swap", "replay")]


@pytest.mark.parametrize(("kind", "family"), RANDOM)
def test_different_seeds_differ(kind, family):
    a, b = play(build(kind, family), [0]), play(build(kind, family), [1])
    assert not np.array_equal(stack(a, "losses"), stack(b, "losses"))


def test_bernoulli_losses_come_from_the_data_stream():
    seeds = [5, 6]
    rounds = play(build("bandit_advice", "planted_expert"), seeds)
    ref = BatchRNG(seeds, DATA_STREAM)
    for r in rounds:
        np.testing.assert_array_equal(r.losses, (ref.random((3,)) < r.means).astype(float))


@pytest.mark.parametrize(("kind", "family"), ALL)
def test_neighbor_replaces_exactly_one_round(kind, family):
    seeds, t_star = [7, 8], 6
    vec = np.array([0.25, 0.5, 1.0])
    base = play(build(kind, family), seeds)
    nb = play(build(kind, family), seeds, neighbor={"round": t_star, "loss": vec})
    losses_a, losses_b = stack(base, "losses"), stack(nb, "losses")
    other = np.arange(40) != t_star - 1
    np.testing.assert_array_equal(losses_a[other], losses_b[other])
    np.testing.assert_array_equal(losses_b[t_star - 1], np.broadcast_to(vec, (2, 3)))
    for field in ("means", "advice"):  # public data is untouched
        np.testing.assert_array_equal(stack(base, field), stack(nb, field))


def test_neighbor_validation_uses_arm_count():
    adv = build("bandit_advice", "planted_expert")
    with pytest.raises(ValueError, match="neighbor"):
        adv.reset([0], neighbor={"round": 1, "loss": np.zeros(8)})  # N values, K expected
    with pytest.raises(ValueError, match="neighbor"):
        adv.reset([0], neighbor={"round": 1, "loss": np.full(3, 1.5)})


# ---------------------------------------------------------------------- planted experts
def expected_expert_losses(rounds):
    advice, means = stack(rounds, "advice"), stack(rounds, "means")
    return np.einsum("tbnk,tbk->bn", advice, means) / len(rounds)


def test_planted_expert_has_the_smallest_expected_loss():
    n, k, horizon = 12, 4, 3000
    gap, rho_star, rho = 0.2, 0.9, 0.4
    adv = make_adversary(
        "bandit_advice",
        "planted_expert",
        n_experts=n,
        horizon=horizon,
        n_arms=k,
        gap=gap,
        rho_star=rho_star,
        rho=rho,
    )
    rounds = play(adv, [0, 1, 2])
    c = expected_expert_losses(rounds)
    planted = adv.planted
    np.testing.assert_array_equal(np.argmin(c, axis=1), planted)
    # per-round gap gap (rho* - rho)(1 - 1/K) = 0.075; std of a 3000-round mean of the
    # difference is below 0.2 * 0.5 / sqrt(3000) ~ 0.002, so 0.01 is a > 4-sigma tolerance
    others = c.copy()
    rows = np.arange(3)
    others[rows, planted] = np.nan
    diff = np.nanmean(others, axis=1) - c[rows, planted]
    np.testing.assert_allclose(diff, gap * (rho_star - rho) * (1 - 1 / k), atol=0.01)


def test_planted_expert_smoothing_mixes_with_uniform():
    adv = make_adversary(
        "bandit_advice", "planted_expert", n_experts=5, horizon=3, n_arms=4, smoothing=0.2
    )
    rounds = play(adv, [0])
    advice = stack(rounds, "advice")
    np.testing.assert_allclose(np.sort(advice, axis=-1)[..., :3], 0.05)
    np.testing.assert_allclose(advice.max(axis=-1), 0.85)


def test_good_arm_means():
    rounds = play(build("bandit_advice", "planted_expert", gap=0.3), [0, 1])
    means = stack(rounds, "means")
    np.testing.assert_allclose(
        np.sort(means, axis=-1), np.broadcast_to([0.2, 0.5, 0.5], means.shape)
    )


def test_shifting_planted_expert_changes_at_change_points():
    horizon, shifts = 3000, 2
    adv = make_adversary(
        "bandit_advice",
        "shifting_planted_expert",
        n_experts=6,
        horizon=horizon,
        n_arms=2,
        n_shifts=shifts,
        gap=0.3,
        rho=0.0,
        rho_star=1.0,
    )
    assert adv.default_switches == shifts and adv.has_segments
    adv.reset([4, 5])
    starts = np.array([1001, 2001])  # "even": floor(k T / (S + 1)) + 1
    planted, segs, shift = [], [], []
    advice, means = [], []
    for _ in range(horizon):
        r = adv.next_round()
        planted.append(adv.planted.copy())
        segs.append(r.segment)
        shift.append(r.shift)
        advice.append(r.advice)
        means.append(r.means)
        adv.record(np.zeros(2, dtype=np.int64))
    planted, segs, shift = np.array(planted), np.array(segs), np.array(shift)
    changed = planted[1:] != planted[:-1]
    np.testing.assert_array_equal(
        changed, np.isin(np.arange(2, horizon + 1), starts)[:, None].repeat(2, axis=1)
    )
    np.testing.assert_array_equal(shift[:, 0], np.isin(np.arange(1, horizon + 1), starts))
    np.testing.assert_array_equal(
        segs[:, 0], np.searchsorted(starts, np.arange(1, horizon + 1), "right")
    )
    # with rho* = 1 the planted expert always recommends the good arm
    advice, means = np.array(advice), np.array(means)
    rows = np.arange(2)
    for t in (0, 1500, 2999):
        rec = advice[t][rows, planted[t]].argmax(axis=-1)
        np.testing.assert_array_equal(means[t][rows, rec], 0.2)


def test_duplicated_experts_share_behaviours():
    n, d = 10, 3
    adv = make_adversary(
        "bandit_advice",
        "duplicated_experts",
        n_experts=n,
        horizon=2000,
        n_arms=3,
        n_behaviours=d,
        perturbation=0.3,
        gap=0.3,
    )
    rounds = play(adv, [0, 1])
    advice = stack(rounds, "advice")
    rec = advice.argmax(axis=-1)  # (T, B, N)
    for j in range(n - d):
        np.testing.assert_array_equal(rec[..., j], rec[..., j + d])
    assert not np.array_equal(advice[..., 0, :], advice[..., d, :])  # perturbed copies
    c = expected_expert_losses(rounds)
    np.testing.assert_array_equal(np.argmin(c, axis=1), adv.best_expert)


def test_policy_class_experts_and_advice():
    k, contexts = 3, 4
    adv = make_adversary(
        "bandit_advice",
        "policy_class",
        n_experts=None,
        horizon=200,
        n_arms=k,
        n_contexts=contexts,
        gap=0.2,
    )
    assert adv.n_experts == k**contexts == 81
    derived = make_adversary("bandit_advice", "policy_class", n_experts=81, horizon=5, n_arms=3)
    assert derived.n_contexts == 4
    adv.reset([0, 1])
    best_losses = []
    for _ in range(200):
        r = adv.next_round()
        ctx = adv.context
        for b in range(2):
            for j in (0, 1, 5, 40, 80):
                digit = (j // k ** int(ctx[b])) % k
                expect = np.zeros(k)
                expect[digit] = 1.0
                np.testing.assert_array_equal(r.advice[b, j], expect)
        expert_means = np.einsum("bnk,bk->bn", r.advice, r.means)
        best_losses.append(expert_means[np.arange(2), adv.best_expert])
        np.testing.assert_allclose(expert_means.min(axis=1), 0.3)  # 1/2 - gap
        adv.record(np.zeros(2, dtype=np.int64))
    np.testing.assert_allclose(best_losses, 0.3)


# ------------------------------------------------------------------ deterministic instances
def test_lemma11_switch_known_answer():
    adv = make_adversary(
        "bandit_advice", "lemma11_switch", n_experts=5, horizon=8, n_arms=2, switch_round=4
    )
    assert adv.default_switches == 1 and adv.stochastic_losses is False
    rounds = play(adv, [0])
    losses = stack(rounds, "losses")[:, 0]
    expect = np.array([[0.5, 1.0]] * 3 + [[0.5, 0.0]] * 5)
    np.testing.assert_array_equal(losses, expect)
    np.testing.assert_array_equal(stack(rounds, "means")[:, 0], expect)
    advice = rounds[0].advice[0]
    np.testing.assert_array_equal(advice, [[1, 0], [0, 1], [1, 0], [1, 0], [1, 0]])
    assert [bool(r.shift[0]) for r in rounds] == [t == 4 for t in range(1, 9)]
    default = make_adversary("bandit", "lemma11_switch", horizon=100, n_arms=2)
    assert default.switch_round == 26 and default.n_experts == 2


def test_periodic_swap_known_answer():
    adv = make_adversary("bandit", "periodic_swap", horizon=7, n_arms=3, period=2)
    assert adv.default_switches == 3
    rounds = play(adv, [0])
    zero_arm = [int(np.argmin(r.losses[0])) for r in rounds]
    assert zero_arm == [0, 0, 1, 1, 0, 0, 1]
    assert all(r.losses[0].sum() == 2.0 for r in rounds)
    assert [bool(r.shift[0]) for r in rounds] == [t in (3, 5, 7) for t in range(1, 8)]


def test_identity_advice_is_a_cheap_view():
    adv = make_adversary("bandit", "bernoulli_gap", horizon=5, n_arms=4)
    adv.reset([0, 1, 2])
    r = adv.next_round()
    np.testing.assert_array_equal(r.advice, np.broadcast_to(np.eye(4), (3, 4, 4)))
    assert r.advice.strides[0] == 0 and not r.advice.flags.writeable


def test_bernoulli_gap_best_arm_is_best():
    adv = make_adversary("bandit", "bernoulli_gap", horizon=4000, n_arms=3, gap=0.1)
    rounds = play(adv, [0, 1])
    best = adv.best
    losses = stack(rounds, "losses").mean(axis=0)  # (B, K)
    # each mean of 4000 Bernoulli(1/2) has std <= 0.008; the gap 0.1 is > 8 sigma of a difference
    np.testing.assert_array_equal(np.argmin(losses, axis=1), best)
    fixed = make_adversary("bandit", "bernoulli_gap", horizon=3, n_arms=3, best_arm=2)
    fixed.reset([0, 1])
    assert fixed.next_round().means[:, 2].tolist() == [0.4, 0.4]


def test_shifting_bernoulli_changes_best_arm():
    adv = make_adversary(
        "bandit",
        "shifting_bernoulli",
        horizon=64,
        n_arms=3,
        n_shifts=3,
        change_points="anti_doubling",
    )
    assert adv.default_switches == 3
    adv.reset([1, 2])
    best = []
    for _ in range(64):
        r = adv.next_round()
        best.append(np.argmin(r.means, axis=1))
        adv.record(np.zeros(2, dtype=np.int64))
    best = np.array(best)
    starts = np.array([9, 17, 33])  # geometric spacing 2^m + 1: the last three dyadic blocks
    changed = best[1:] != best[:-1]
    np.testing.assert_array_equal(changed, np.isin(np.arange(2, 65), starts)[:, None].repeat(2, 1))


# -------------------------------------------------------------------------------- memory
# A replay holds the user's (T, K) matrix (and advice): its memory is the user's data.
@pytest.mark.parametrize(("kind", "family"), [(k, f) for k, f in ALL if f != "replay"])
def test_memory_does_not_grow_with_horizon(kind, family):
    sizes = []
    for horizon in (100, 10**6):
        adv = build(kind, family, horizon=horizon)
        adv.reset([0, 1])
        for _ in range(20):
            adv.next_round()
            adv.record(np.zeros(2, dtype=np.int64))
        sizes.append(adv.state_nbytes())
    assert sizes[0] == sizes[1] < 20_000


# ---------------------------------------------------------------------------- bad input
@pytest.mark.parametrize(
    ("kind", "family", "kwargs", "err", "match"),
    [
        ("bandit_advice", "planted_expert", {"gap": 0.0}, ValueError, "gap"),
        ("bandit_advice", "planted_expert", {"gap": 0.6}, ValueError, "gap"),
        ("bandit_advice", "planted_expert", {"rho": 0.95}, ValueError, "rho must be < rho_star"),
        ("bandit_advice", "planted_expert", {"rho_star": 1.2}, ValueError, "rho_star"),
        ("bandit_advice", "planted_expert", {"smoothing": 1.0}, ValueError, "smoothing"),
        ("bandit_advice", "planted_expert", {"n_arms": 1}, ValueError, "n_arms"),
        ("bandit_advice", "planted_expert", {"n_arms": None}, TypeError, "n_arms"),
        ("bandit_advice", "planted_expert", {"horizon": 0}, ValueError, "horizon"),
        ("bandit_advice", "planted_expert", {"colour": 1}, TypeError, "colour"),
        ("bandit_advice", "shifting_planted_expert", {"n_shifts": 50}, ValueError, "n_shifts"),
        ("bandit_advice", "shifting_planted_expert", {"change_points": "x"}, ValueError, "change_"),
        ("bandit_advice", "shifting_planted_expert", {"change_points": [5, 3]}, ValueError, "incr"),
        ("bandit", "shifting_bernoulli", {"min_length": 3}, ValueError, "min_length"),
        ("bandit_advice", "shifting_planted_expert", {"n_experts": 1}, ValueError, "2 experts"),
        ("bandit_advice", "duplicated_experts", {"n_behaviours": 9}, ValueError, "n_behaviours"),
        ("bandit_advice", "duplicated_experts", {"perturbation": -0.1}, ValueError, "perturb"),
        (
            "bandit_advice",
            "policy_class",
            {"n_experts": 10, "n_contexts": None},
            ValueError,
            "power",
        ),
        ("bandit_advice", "policy_class", {"n_contexts": 2, "n_experts": 10}, ValueError, "n_ex"),
        ("bandit_advice", "policy_class", {"n_contexts": 30}, ValueError, "MAX_POLICY_CLASS"),
        ("bandit_advice", "policy_class", {"spread": 2.0}, ValueError, "spread"),
        ("bandit_advice", "lemma11_switch", {"n_experts": 2}, ValueError, "n_experts >= n_arms"),
        ("bandit_advice", "lemma11_switch", {"switch_round": 42}, ValueError, "switch_round"),
        ("bandit", "bernoulli_gap", {"n_experts": 4}, ValueError, "identity experts"),
        ("bandit", "bernoulli_gap", {"best_arm": 3}, ValueError, "best_arm"),
        ("bandit", "periodic_swap", {"period": 0}, ValueError, "period"),
        ("bandit", "periodic_swap", {"n_experts": 2}, ValueError, "identity experts"),
        ("bandit", "lemma11_switch", {"n_experts": 5}, ValueError, "identity experts"),
        ("bandit", "shifting_bernoulli", {"n_shifts": -1}, ValueError, "n_shifts"),
    ],
)
def test_bad_parameters_raise(kind, family, kwargs, err, match):
    params = {"n_experts": 8 if kind == "bandit_advice" else None, "horizon": 40, "n_arms": 3}
    if family == "policy_class":
        params["n_experts"] = None
        params["n_contexts"] = 2
    params.update(kwargs)
    with pytest.raises(err, match=match):
        make_adversary(kind, family, **params)


def test_policy_class_needs_contexts_or_experts():
    with pytest.raises(ValueError, match="n_contexts"):
        make_adversary("bandit_advice", "policy_class", n_experts=None, horizon=5, n_arms=2)
    assert MAX_POLICY_CLASS_EXPERTS >= 4096


def test_random_change_points_differ_per_run_and_drive_the_planted_expert():
    adv = make_adversary(
        "bandit_advice",
        "shifting_planted_expert",
        n_experts=5,
        horizon=60,
        n_arms=2,
        n_shifts=3,
        change_points="uniform",
    )
    adv.reset([0, 1, 2])
    planted, shifts = [], []
    for _ in range(60):
        r = adv.next_round()
        planted.append(adv.planted.copy())
        shifts.append(r.shift)
        adv.record(np.zeros(3, dtype=np.int64))
    planted, shifts = np.array(planted), np.array(shifts)
    assert np.all(shifts.sum(axis=0) == 3)
    assert len({shifts[:, b].tobytes() for b in range(3)}) > 1  # per-run schedules
    np.testing.assert_array_equal(planted[1:] != planted[:-1], shifts[1:])


def test_explicit_change_points_and_best_arm():
    adv = make_adversary(
        "bandit", "shifting_bernoulli", horizon=10, n_arms=4, change_points=[3, 8], best_arm=1
    )
    assert adv.default_switches == 2
    rounds = play(adv, [0, 1])
    best = np.array([np.argmin(r.means, axis=1) for r in rounds])
    assert np.all(best[:2] == 1)
    assert np.all(best[2] != best[1]) and np.all(best[7] != best[6])
    assert [bool(r.shift[0]) for r in rounds] == [t in (3, 8) for t in range(1, 11)]
