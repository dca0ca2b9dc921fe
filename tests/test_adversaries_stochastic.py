"""Change points, shifting-stochastic and stationary loss models."""

from __future__ import annotations

import itertools
import math
import tracemalloc

import numpy as np
import pytest
from scipy import stats

from dp_experts_env import batch_rng as batch_rng_module
from dp_experts_env.adversaries import Neighbor, families, make_adversary
from dp_experts_env.adversaries import changepoints as cp_module
from dp_experts_env.adversaries.changepoints import (
    ChangePointSchedule,
    SegmentClock,
    dyadic_capacity,
    segment_at,
    segment_lengths,
    uniform_subsets,
)
from dp_experts_env.adversaries.shifting import BernoulliGap, SegmentModel, clipped_normal_mean
from dp_experts_env.batch_rng import BatchRNG

# Every registered family of the two kinds (read from the registry: a new family is tested here).
SHIFT = families("shift")
STOCHASTIC = families("stochastic")
# Every (kind, family) plus a few non-default knob settings.
CASES = [("shift", f, {}) for f in SHIFT] + [("stochastic", f, {}) for f in STOCHASTIC]
CASES += [
    ("shift", "bernoulli_gap", {"gap": "hard", "change_points": "uniform"}),
    ("shift", "uniform_means", {"distribution": "beta", "change_points": "min_gap"}),
    ("shift", "disjoint_pools", {"pool_size": 1, "gap": 0.3}),
    ("shift", "correlated", {"common_scale": 0.3, "idio_scale": 0.0, "base": 0.8}),
    ("stochastic", "one_vs_rest", {"gap": "hard"}),
]
IDS = [f"{k}-{f}-{'-'.join(map(str, p.values()))}" for k, f, p in CASES]
DEFAULT_BUFFER = batch_rng_module._BUFFER_DOUBLES


@pytest.fixture(autouse=True)
def _small_rng_buffers(monkeypatch: pytest.MonkeyPatch) -> None:
    # Filling the default 32 MB uniform buffer dominates these short games. The buffer size never
    # changes a number drawn (test_seeds_batches_and_chunks and tests/test_batch_rng.py check
    # that), so most tests use a small one; the memory test restores the default.
    monkeypatch.setattr(batch_rng_module, "_BUFFER_DOUBLES", 1 << 14)


def play(adv, seeds, rounds=None, neighbor=None, actions_rng=None) -> dict[str, np.ndarray]:
    """Reset and play ``rounds`` rounds; stack every Round field over time."""
    adv.reset(seeds, neighbor)
    out: dict[str, list] = {"losses": [], "means": [], "segment": [], "shift": []}
    for _ in range(adv.horizon if rounds is None else rounds):
        rnd = adv.next_round()
        for key in out:
            value = getattr(rnd, key)
            out[key].append(None if value is None else np.array(value))
        if actions_rng is not None:
            adv.record(actions_rng.integers(0, adv.n_experts, size=len(seeds)))
    return {k: (None if v[0] is None else np.stack(v)) for k, v in out.items()}


# ----------------------------------------------------------------------------- change points
@pytest.mark.parametrize(("horizon", "k"), [(1000, 4), (10, 9), (7, 3), (1001, 1), (5, 0)])
def test_even_formula(horizon: int, k: int) -> None:
    cps = ChangePointSchedule(horizon, k, "even").draw(BatchRNG([0, 1]))
    want = [math.floor(i * horizon / (k + 1)) + 1 for i in range(1, k + 1)]
    assert cps.shape == (2, k)
    assert cps[0].tolist() == want and cps[1].tolist() == want
    assert np.all(np.diff(cps, axis=1) > 0) and np.all((cps >= 2) & (cps <= horizon))


def test_default_number_of_shifts() -> None:
    assert ChangePointSchedule(1000).n_shifts == 4
    assert ChangePointSchedule(3).n_shifts == 2
    assert ChangePointSchedule(1).n_shifts == 0
    assert ChangePointSchedule(1000, change_points="anti_doubling").n_shifts == 4
    assert ChangePointSchedule(6, change_points="anti_doubling").n_shifts == 2


def test_anti_doubling_positions() -> None:
    sched = ChangePointSchedule(1000, 4, "anti_doubling")
    assert sched.draw(BatchRNG([0])).tolist() == [[65, 129, 257, 513]]
    full = ChangePointSchedule(1000, dyadic_capacity(1000), "anti_doubling")
    assert full.draw(BatchRNG([0])).tolist() == [[2**m + 1 for m in range(1, 10)]]
    assert dyadic_capacity(1025) == 10 and dyadic_capacity(1024) == 9
    assert dyadic_capacity(3) == 1 and dyadic_capacity(2) == 0
    with pytest.raises(ValueError, match="2\\^m"):
        ChangePointSchedule(1000, 10, "anti_doubling")


def test_uniform_mode_is_uniform_over_subsets() -> None:
    horizon, k = 6, 2
    runs = 3000
    cps = ChangePointSchedule(horizon, k, "uniform").draw(BatchRNG(list(range(runs))))
    assert np.all(np.diff(cps, axis=1) > 0) and cps.min() >= 2 and cps.max() <= horizon
    subsets = list(itertools.combinations(range(2, horizon + 1), k))
    index = {s: i for i, s in enumerate(subsets)}
    counts = np.bincount([index[tuple(row)] for row in cps.tolist()], minlength=len(subsets))
    assert stats.chisquare(counts).pvalue > 1e-3


def test_min_gap_respected_and_uniform() -> None:
    horizon, k, g = 12, 2, 3
    runs = 3000
    sched = ChangePointSchedule(horizon, k, "min_gap", min_length=g)
    cps = sched.draw(BatchRNG(list(range(runs))))
    assert segment_lengths(cps, horizon).min() >= g
    valid = [
        c
        for c in itertools.combinations(range(2, horizon + 1), k)
        if segment_lengths(np.array([c]), horizon).min() >= g
    ]
    index = {s: i for i, s in enumerate(valid)}
    counts = np.bincount([index[tuple(row)] for row in cps.tolist()], minlength=len(valid))
    assert counts.min() > 0
    assert stats.chisquare(counts).pvalue > 1e-3
    # Default minimum length T // (4 (K + 1)), and large instances.
    big = ChangePointSchedule(10_000, 9, "min_gap")
    assert big.min_length == 250
    assert segment_lengths(big.draw(BatchRNG(range(50))), 10_000).min() >= 250
    tight = ChangePointSchedule(10, 4, "min_gap", min_length=2)  # the only schedule: 3,5,7,9
    assert tight.draw(BatchRNG([0, 1])).tolist() == [[3, 5, 7, 9]] * 2


def test_explicit_list() -> None:
    sched = ChangePointSchedule(100, None, [10, np.int64(20), 99])
    assert sched.n_shifts == 3 and sched.mode == "explicit"
    assert sched.draw(BatchRNG([0, 1])).tolist() == [[10, 20, 99]] * 2
    assert ChangePointSchedule(100, 2, np.array([2, 100])).n_shifts == 2
    assert ChangePointSchedule(100, None, []).n_shifts == 0


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"change_points": [5, 5]}, ValueError, "strictly increasing"),
        ({"change_points": [9, 5]}, ValueError, "strictly increasing"),
        ({"change_points": [1, 5]}, ValueError, "change_points\\[0\\]"),
        ({"change_points": [5, 101]}, ValueError, "change_points\\[1\\]"),
        ({"change_points": [5.0]}, TypeError, "change_points\\[0\\]"),
        ({"change_points": [[5, 6]]}, ValueError, "flat list"),
        ({"change_points": [5, 6], "n_shifts": 3}, ValueError, "disagrees"),
        ({"change_points": "explicit"}, ValueError, "rounds themselves"),
        ({"change_points": "bogus"}, ValueError, "change_points must be one of"),
        ({"change_points": 3}, TypeError, "change_points"),
        ({"n_shifts": 100}, ValueError, "n_shifts"),
        ({"n_shifts": -1}, ValueError, "n_shifts"),
        ({"n_shifts": 2, "min_length": 5}, ValueError, "min_length applies"),
        ({"n_shifts": 4, "change_points": "min_gap", "min_length": 21}, ValueError, "min_length"),
    ],
)
def test_change_point_errors(kwargs: dict, error: type, match: str) -> None:
    with pytest.raises(error, match=match):
        ChangePointSchedule(100, kwargs.pop("n_shifts", None), **kwargs)


def test_clock_matches_segment_at() -> None:
    horizon = 60
    cps = ChangePointSchedule(horizon, 7, "uniform").draw(BatchRNG(range(5)))
    clock = SegmentClock(cps, horizon)
    for t in range(1, horizon + 1):
        segment, shift = clock.advance(t)
        np.testing.assert_array_equal(segment, segment_at(cps, t))
        np.testing.assert_array_equal(shift, np.any(cps == t, axis=1))
    np.testing.assert_array_equal(segment_at(cps, np.full(5, horizon)), np.full(5, 7))


def test_uniform_subsets_chunking_and_batching(monkeypatch: pytest.MonkeyPatch) -> None:
    ref = uniform_subsets(BatchRNG([3, 4, 5]), 500, 6)
    single = uniform_subsets(BatchRNG([4]), 500, 6)
    np.testing.assert_array_equal(ref[1:2], single)
    monkeypatch.setattr(cp_module, "_SUBSET_CHUNK", 7)
    np.testing.assert_array_equal(uniform_subsets(BatchRNG([3, 4, 5]), 500, 6), ref)
    assert uniform_subsets(BatchRNG([0]), 5, 5).tolist() == [[1, 2, 3, 4, 5]]


# ----------------------------------------------------------------------------- every family
@pytest.mark.parametrize(("kind", "family", "knobs"), CASES, ids=IDS)
def test_shapes_ranges_and_flags(kind: str, family: str, knobs: dict) -> None:
    adv = make_adversary(kind, family, n_experts=10, horizon=1000, **knobs)
    assert isinstance(adv, SegmentModel)
    assert adv.knows_means and adv.oblivious
    assert adv.has_segments == (kind == "shift")
    assert adv.default_switches == (adv.n_shifts if kind == "shift" else 0)
    data = play(adv, [0, 1, 2], rounds=300)
    assert data["losses"].shape == (300, 3, 10) and data["losses"].dtype == np.float64
    assert data["losses"].min() >= 0.0 and data["losses"].max() <= 1.0
    assert data["means"].shape == (300, 3, 10)
    assert data["means"].min() >= 0.0 and data["means"].max() <= 1.0
    assert data["segment"].shape == (300, 3) and data["shift"].dtype == bool
    assert not data["shift"][0].any()
    # Segments advance exactly at the flagged shifts and match the change points.
    np.testing.assert_array_equal(np.diff(data["segment"], axis=0), data["shift"][1:])
    for t in range(300):
        np.testing.assert_array_equal(data["segment"][t], segment_at(adv.change_points, t + 1))


@pytest.mark.parametrize(("kind", "family", "knobs"), CASES, ids=IDS)
def test_empirical_means_match_stated_means(kind: str, family: str, knobs: dict) -> None:
    # 8 runs x 4000 rounds; per (segment, expert) at least 8000 samples in the shift cases
    # (even schedule, K = 3): the pooled mean of (loss - stated mean) has sd <= 0.5/sqrt(8000)
    # = 0.0056, so the tolerance 0.03 is > 5 sd for each of the <= 40 comparisons.
    extra = {"n_shifts": 3} if kind == "shift" else {}
    adv = make_adversary(kind, family, n_experts=10, horizon=4000, **{**extra, **knobs})
    data = play(adv, list(range(100, 108)))
    residual = data["losses"] - data["means"]
    seg = data["segment"]
    for k in range(seg.max() + 1):
        mask = seg == k
        assert mask.sum() >= 4000
        assert np.abs(residual[mask].mean(axis=0)).max() < 0.03, (family, k)
    # Stated means are the segment means.
    seg_means = adv.segment_means()
    rows = np.arange(8)
    for t in (0, 1999, 3999):
        np.testing.assert_array_equal(data["means"][t], seg_means[rows, seg[t]])


def test_bernoulli_gap_structure_and_changing_best() -> None:
    adv = BernoulliGap(6, 100, n_shifts=10, gap=0.2, base=0.6)
    adv.reset(list(range(40)))
    means = adv.segment_means()
    best = adv.best_experts()
    assert means.shape == (40, 11, 6)
    np.testing.assert_array_equal(means.argmin(axis=2), best)
    assert np.all(best[:, 1:] != best[:, :-1])  # the best expert changes at every shift
    np.testing.assert_allclose(means.min(axis=2), 0.4)
    assert np.all(np.sort(means, axis=2)[:, :, 1:] == 0.6)
    # Every expert is the first best about equally often (no index-0 bias).
    assert len(np.unique(best[:, 0])) == 6


@pytest.mark.parametrize("family", ["correlated", "disjoint_pools"])
def test_best_changes_at_every_shift(family: str) -> None:
    adv = make_adversary("shift", family, n_experts=12, horizon=200, n_shifts=5)
    adv.reset(list(range(30)))
    best = adv.segment_means().argmin(axis=2)
    assert np.all(best[:, 1:] != best[:, :-1])
    np.testing.assert_array_equal(best, adv.best_experts())


def test_disjoint_pools_structure() -> None:
    adv = make_adversary("shift", "disjoint_pools", n_experts=10, horizon=100, n_shifts=4)
    assert adv.pool_size == 2
    adv.reset([0, 1, 2])
    pools = adv.pools()
    means = adv.segment_means()
    for b in range(3):
        assert len(set(pools[b].ravel().tolist())) == 10  # disjoint, covering all experts
        for k in range(5):
            active = np.zeros(10, bool)
            active[pools[b, k]] = True
            assert np.all(means[b, k, ~active] == 1.0)
            assert sorted(means[b, k, active].tolist()) == pytest.approx([0.4, 0.5])
    with pytest.raises(ValueError, match="n_shifts \\+ 1 <= n_experts"):
        make_adversary("shift", "disjoint_pools", n_experts=3, horizon=100, n_shifts=3)


def test_hard_gap() -> None:
    adv = BernoulliGap(10, 1000, n_shifts=3, change_points=[2, 11, 500], gap="hard")
    adv.reset([0])
    lengths = np.array([1, 9, 489, 501])
    want = np.minimum(0.5, np.sqrt(math.log(10) / lengths))
    np.testing.assert_allclose(adv.segment_means()[0].min(axis=1), 0.5 - want)
    one = make_adversary("stochastic", "one_vs_rest", n_experts=10, horizon=1000, gap="hard")
    one.reset([0])
    gap = math.sqrt(math.log(10) / 1000)
    assert sorted(set(one.segment_means()[0, 0].round(12))) == pytest.approx(
        [0.5 - gap / 2, 0.5 + gap / 2]
    )


def test_stationary_profiles() -> None:
    geo = make_adversary("stochastic", "geometric_gaps", n_experts=6, horizon=10)
    geo.reset([0, 1])
    np.testing.assert_allclose(
        np.sort(geo.segment_means()[:, 0], axis=1), [[0.25, 0.35, 0.45, 0.65, 1.0, 1.0]] * 2
    )
    mixed = make_adversary("stochastic", "mixed_gaps", n_experts=6, horizon=10)
    mixed.reset([0])
    np.testing.assert_allclose(
        np.sort(mixed.segment_means()[0, 0]), [0.25, 0.3, 0.3, 0.3, 0.65, 0.65]
    )
    one = make_adversary("stochastic", "one_vs_rest", n_experts=4, horizon=10)
    one.reset(list(range(20)))
    m = one.segment_means()[:, 0]
    assert np.all(np.sort(m, axis=1) == [0.45, 0.55, 0.55, 0.55])
    assert len(np.unique(m.argmin(axis=1))) == 4  # random best index
    priv = make_adversary("stochastic", "privacy_dominated", n_experts=3, horizon=10)
    priv.reset([0])
    assert sorted(priv.segment_means()[0, 0]) == [0.25, 0.75, 0.75]


def test_comonotone_coordinates_move_together() -> None:
    adv = make_adversary("stochastic", "comonotone", n_experts=5, horizon=500)
    data = play(adv, [0, 1])
    best = adv.segment_means()[:, 0].argmin(axis=1)
    losses = data["losses"]
    # One shared uniform: the best expert's loss never exceeds another's in the same round.
    for b in range(2):
        assert np.all(losses[:, b, best[b]][:, None] <= losses[:, b, :])
        rest = np.delete(losses[:, b], best[b], axis=1)
        assert np.all(rest == rest[:, :1])


def test_correlated_means_are_exact_clipped_expectations() -> None:
    loc = np.array([0.0, 0.2, 0.5, 0.9, 1.0])
    z = stats.norm.rvs(size=400_000, random_state=np.random.default_rng(0))
    for sigma in (0.05, 0.3):
        mc = np.clip(loc[:, None] + sigma * z, 0, 1).mean(axis=1)
        np.testing.assert_allclose(clipped_normal_mean(loc, sigma), mc, atol=3e-3)
    np.testing.assert_array_equal(clipped_normal_mean(loc, 0.0), loc)


# ----------------------------------------------------------------------------- reproducibility
@pytest.mark.parametrize(("kind", "family", "knobs"), CASES, ids=IDS)
def test_seeds_batches_and_chunks(kind, family, knobs, monkeypatch: pytest.MonkeyPatch) -> None:
    def build():
        return make_adversary(kind, family, n_experts=7, horizon=120, **knobs)

    seeds = [11, 12, 13]
    batch = play(build(), seeds)
    again = play(build(), seeds)
    other = play(build(), [14, 15, 16])
    for key in ("losses", "means", "segment", "shift"):
        np.testing.assert_array_equal(batch[key], again[key])
    assert not np.array_equal(batch["losses"], other["losses"])
    # Run b of a batch equals a single run seeded seeds[b].
    for b, seed in enumerate(seeds):
        single = play(build(), [seed])
        for key in ("losses", "means", "segment", "shift"):
            np.testing.assert_array_equal(batch[key][:, b : b + 1], single[key])
    # Round t does not depend on how the streams are buffered, nor on the actions recorded.
    monkeypatch.setattr(batch_rng_module, "_BUFFER_DOUBLES", 5)
    monkeypatch.setattr(batch_rng_module, "_MIN_CHUNK", 1)
    monkeypatch.setattr(cp_module, "_SUBSET_CHUNK", 3)
    chunked = play(build(), seeds, actions_rng=np.random.default_rng(0))
    for key in ("losses", "means", "segment", "shift"):
        np.testing.assert_array_equal(chunked[key], batch[key])


@pytest.mark.parametrize(("kind", "family", "knobs"), CASES, ids=IDS)
def test_neighbor_replaces_exactly_one_round(kind: str, family: str, knobs: dict) -> None:
    adv = make_adversary(kind, family, n_experts=5, horizon=50, **knobs)
    base = play(adv, [3, 4])
    vector = np.array([1.0, 0.0, 0.25, 1.0, 0.5])
    for t in (1, 17, 50):
        nb = play(adv, [3, 4], neighbor=Neighbor(t, vector))
        np.testing.assert_array_equal(nb["losses"][t - 1], np.stack([vector, vector]))
        keep = np.arange(50) != t - 1
        np.testing.assert_array_equal(nb["losses"][keep], base["losses"][keep])
        for key in ("means", "segment", "shift"):
            np.testing.assert_array_equal(nb[key], base[key])
    with pytest.raises(ValueError):
        adv.reset([0], neighbor={"round": 51, "loss": vector})


# ----------------------------------------------------------------------------- defaults, errors
@pytest.mark.parametrize("n_experts", [2, 3, 10])
@pytest.mark.parametrize(
    ("kind", "family"), [("shift", f) for f in SHIFT] + [("stochastic", f) for f in STOCHASTIC]
)
def test_defaults_work_for_small_games(kind: str, family: str, n_experts: int) -> None:
    if family == "disjoint_pools" and n_experts < 5:
        pytest.skip("needs n_shifts + 1 <= n_experts; covered by the error test")
    for horizon in (1, 2, 1000):
        adv = make_adversary(kind, family, n_experts=n_experts, horizon=horizon)
        data = play(adv, [0], rounds=min(horizon, 50))
        assert data["losses"].shape == (min(horizon, 50), 1, n_experts)


@pytest.mark.parametrize(
    ("kind", "family", "kwargs", "error"),
    [
        ("shift", "bernoulli_gap", {"n_experts": 1}, ValueError),
        ("shift", "bernoulli_gap", {"gap": 0.0}, ValueError),
        ("shift", "bernoulli_gap", {"gap": 0.6}, ValueError),
        ("shift", "bernoulli_gap", {"gap": "easy"}, ValueError),
        ("shift", "bernoulli_gap", {"base": 1.5}, ValueError),
        ("shift", "bernoulli_gap", {"n_shifts": 1000}, ValueError),
        ("shift", "uniform_means", {"low": 0.5, "high": 0.5}, ValueError),
        ("shift", "uniform_means", {"distribution": "gamma"}, ValueError),
        ("shift", "uniform_means", {"concentration": 0.0}, ValueError),
        ("shift", "correlated", {"common_scale": -0.1}, ValueError),
        ("shift", "disjoint_pools", {"pool_size": 3}, ValueError),
        ("shift", "disjoint_pools", {"outside_loss": 0.2}, ValueError),
        ("stochastic", "one_vs_rest", {"gap": 0.3, "center": 0.1}, ValueError),
        ("stochastic", "one_vs_rest", {"center": 1.0}, ValueError),
        ("stochastic", "geometric_gaps", {"gap": 0.8}, ValueError),
        ("stochastic", "mixed_gaps", {"gap": 0.5, "large_gap": 0.4}, ValueError),
        ("stochastic", "one_vs_rest", {"n_shifts": 2}, TypeError),
        ("shift", "bernoulli_gap", {"gap": True}, TypeError),
    ],
)
def test_bad_knobs(kind: str, family: str, kwargs: dict, error: type) -> None:
    params = {"n_experts": 10, "horizon": 1000, **kwargs}
    with pytest.raises(error):
        make_adversary(kind, family, **params)


def test_protocol_errors() -> None:
    adv = BernoulliGap(3, 2)
    with pytest.raises(RuntimeError):
        adv.next_round()
    adv.reset([0])
    adv.next_round()
    adv.next_round()
    with pytest.raises(RuntimeError):
        adv.next_round()
    with pytest.raises(RuntimeError):
        BernoulliGap(3, 2).segment_means()


def test_means_are_read_only() -> None:
    adv = BernoulliGap(3, 10)
    adv.reset([0])
    rnd = adv.next_round()
    with pytest.raises(ValueError):
        rnd.means[0, 0] = 0.0


# ----------------------------------------------------------------------------- memory
@pytest.mark.parametrize(
    ("kind", "family"),
    [("shift", f) for f in SHIFT]
    + [("stochastic", "one_vs_rest"), ("stochastic", "geometric_gaps")],
)
def test_memory_is_bounded_for_huge_horizons(
    kind: str, family: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    horizon, n = 10**6, 100
    monkeypatch.setattr(batch_rng_module, "_BUFFER_DOUBLES", DEFAULT_BUFFER)
    tracemalloc.start()
    try:
        adv = make_adversary(kind, family, n_experts=n, horizon=horizon)
        adv.reset([0])
        for _ in range(2000):
            rnd = adv.next_round()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert rnd.losses.shape == (1, n) and adv.t == 2000
    assert adv.state_nbytes() < 64 * 1024  # O((K + 1) N), no trace of T
    # The (T, N) matrix alone would take 800 MB; the random buffers are bounded (~32 MB each).
    assert peak < 200 * 2**20
