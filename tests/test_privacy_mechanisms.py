"""Mechanisms: known laws, batching, guarantees; audits: true scale passes, half noise fails."""

import math

import numpy as np
import pytest
from scipy import stats

from dp_experts_env.batch_rng import BatchRNG, run_seeds
from dp_experts_env.privacy import (
    AboveThreshold,
    GridBackend,
    Guarantee,
    TreeCounter,
    audit_mechanism,
    exponential_mechanism,
    exponential_mechanism_probabilities,
    laplace_mechanism,
    report_noisy_min,
    tree_levels,
)

P_MIN = 1e-3  # fixed seeds; a correct sampler fails a test with probability ~1e-3


def brng(n, seed=0):
    return BatchRNG(run_seeds(seed, n))


# --------------------------------------------------------------------------- Laplace
@pytest.mark.parametrize("eps", [0.5, 2.0])
def test_laplace_noise_has_scale_sensitivity_over_epsilon(eps):
    values = np.zeros((2000, 5))
    noisy, g = laplace_mechanism(values, l1_sensitivity=3.0, epsilon=eps, rng=brng(2000))
    assert noisy.shape == (2000, 5)
    assert stats.kstest(noisy.ravel(), stats.laplace(scale=3.0 / eps).cdf).pvalue > P_MIN
    assert (
        g == Guarantee(eps, 0.0, g.accountant)
        and "scale 6"
        in laplace_mechanism(
            values[:1], l1_sensitivity=3.0, epsilon=0.5, rng=brng(1)
        ).guarantee.accountant
    )


def test_laplace_grid_pays_the_rounding_slack_and_stays_on_the_lattice():
    g = GridBackend(bits=12)
    out, guarantee = laplace_mechanism(
        np.full((4, 3), 0.3), l1_sensitivity=1.0, epsilon=1.0, rng=brng(4), noise=g
    )
    assert np.array_equal(out * 2**12, np.round(out * 2**12))
    assert f"scale {1.0 + 3 * 2.0**-12:g}" in guarantee.accountant


def test_laplace_generator_is_unbatched_and_leading_one_broadcasts():
    out, _ = laplace_mechanism(
        np.zeros(3), l1_sensitivity=1.0, epsilon=1.0, rng=np.random.default_rng(0)
    )
    assert out.shape == (3,)
    out, _ = laplace_mechanism(np.zeros((1, 3)), l1_sensitivity=1.0, epsilon=1.0, rng=brng(5))
    assert out.shape == (5, 3)
    assert not np.array_equal(out[0], out[1])  # each run has its own noise


@pytest.mark.parametrize("noise", ["fast", "grid"])
def test_mechanisms_batch_equals_single_runs(noise):
    scores = np.array([[0.3, 0.1, 0.7, 0.2]] * 3)
    calls = [
        lambda r, s: laplace_mechanism(s, l1_sensitivity=1, epsilon=1, rng=r, noise=noise),
        lambda r, s: report_noisy_min(s, sensitivity=1, epsilon=1, rng=r, noise=noise),
        lambda r, s: exponential_mechanism(s, sensitivity=1, epsilon=1, rng=r, noise=noise),
    ]
    for call in calls:
        batch = call(BatchRNG([4, 5, 6]), scores).value
        for b in range(3):
            single = call(BatchRNG([4 + b]), scores[:1]).value
            assert np.array_equal(batch[b], single[0])


# --------------------------------------------------------------------------- selection
def _two_laplace_diff_cdf(d, b):
    """P(Z0 - Z1 < d) for i.i.d. Lap(b)."""
    tail = np.exp(-abs(d) / b) * (2 + abs(d) / b) / 4
    return 1 - tail if d >= 0 else tail


@pytest.mark.parametrize("monotone", [False, True])
def test_report_noisy_min_matches_the_two_candidate_law(monotone):
    n, eps, sens = 20_000, 1.0, 1.0
    scores = np.array([[0.0, 1.5]])
    idx, g = report_noisy_min(scores, sensitivity=sens, epsilon=eps, rng=brng(n), monotone=monotone)
    assert idx.shape == (n,) and idx.dtype == np.int64
    b = (1.0 if monotone else 2.0) * sens / eps
    p0 = _two_laplace_diff_cdf(1.5, b)  # argmin is 0 iff 0 + Z0 < 1.5 + Z1
    assert abs(np.mean(idx == 0) - p0) < 4 * math.sqrt(p0 * (1 - p0) / n)
    assert g.epsilon == eps and g.delta == 0.0


def test_exponential_mechanism_probabilities_known_answer():
    p = exponential_mechanism_probabilities([0.0, 1.0], sensitivity=1.0, epsilon=2.0)
    assert np.allclose(p, [1 / (1 + math.e**-1), math.e**-1 / (1 + math.e**-1)])
    pm = exponential_mechanism_probabilities(
        [0.0, 1.0], sensitivity=1.0, epsilon=1.0, monotone=True
    )
    assert np.allclose(pm, p)
    many = exponential_mechanism_probabilities(np.zeros((3, 4)), sensitivity=1, epsilon=1)
    assert np.allclose(many, 0.25)
    huge = exponential_mechanism_probabilities([0.0, 1e6], sensitivity=1, epsilon=1)
    assert np.allclose(huge, [1.0, 0.0])


def test_exponential_mechanism_samples_its_probabilities():
    n = 20_000
    scores = np.array([0.0, 0.5, 1.0, 3.0])
    idx, _ = exponential_mechanism(scores[None], sensitivity=0.5, epsilon=1.0, rng=brng(n))
    p = exponential_mechanism_probabilities(scores, sensitivity=0.5, epsilon=1.0)
    observed = np.bincount(idx, minlength=4)
    assert stats.chisquare(observed, p * n).pvalue > P_MIN
    single, _ = exponential_mechanism(
        scores, sensitivity=0.5, epsilon=1.0, rng=np.random.default_rng(0)
    )
    assert np.ndim(single) == 0


# --------------------------------------------------------------------------- audits
def _selection_scores(x, n=10):
    # x = 0: candidate 0 best by one unit; x = 1: candidate 0 worst by one unit. Every score
    # moves by at most 1 (sensitivity 1), and the crowd of rivals makes the tail ratio visible.
    s = np.zeros(n)
    s[1:] = 1.0
    return (s if x == 0 else 1.0 - s)[None]


@pytest.mark.parametrize(
    ("name", "fn"),
    [
        (
            "laplace",
            lambda sens: (
                lambda x, rng: laplace_mechanism(
                    np.full((1, 1), float(x)), l1_sensitivity=sens, epsilon=1.0, rng=rng
                ).value[:, 0]
            ),
        ),
        (
            "report-noisy-min",
            lambda sens: (
                lambda x, rng: (
                    report_noisy_min(
                        _selection_scores(x), sensitivity=sens, epsilon=1.0, rng=rng
                    ).value
                )
            ),
        ),
        (
            "exponential",
            lambda sens: (
                lambda x, rng: (
                    exponential_mechanism(
                        _selection_scores(x), sensitivity=sens, epsilon=1.0, rng=rng
                    ).value
                )
            ),
        ),
    ],
)
def test_mechanism_passes_audit_and_half_noise_mutant_is_caught(name, fn):
    true = audit_mechanism(fn(1.0), 0, 1, n_runs=10_000, claimed_epsilon=1.0)
    assert true.passed, true.summary()
    # The mutant is calibrated for half the change it sees: half the noise.
    mutant = audit_mechanism(fn(0.5), 0, 1, n_runs=10_000, claimed_epsilon=1.0)
    assert not mutant.passed, mutant.summary()
    assert mutant.epsilon_lower_bound > 1.2


def _svt_halting_time(sens, eps=2.0, k=5):
    # x: k-1 queries at 1 then one at 0; x': k-1 at 0 then one at 1 (each moves by 1). Runs
    # that answer BOTTOM k-1 times need high threshold noise, where the Laplace density ratio
    # is exact, and then a TOP from the upper tail of the query noise: the proof's worst case.
    def fn(x, rng):
        at = AboveThreshold(epsilon=eps, sensitivity=sens, rng=rng)
        halt = np.full(rng.num_runs, k)
        for i in range(k):
            last = i == k - 1
            q = (0.0 if last else 1.0) if x == 0 else (1.0 if last else 0.0)
            top = at.test(np.full(rng.num_runs, q))
            halt = np.where(top & (halt == k), i, halt)
        return halt

    return fn


def test_above_threshold_passes_audit_and_understated_sensitivity_is_caught():
    true = audit_mechanism(_svt_halting_time(1.0), 0, 1, claimed_epsilon=2.0)
    assert true.passed, true.summary()
    mutant = audit_mechanism(_svt_halting_time(0.5), 0, 1, claimed_epsilon=2.0)
    assert not mutant.passed, mutant.summary()


def _tree_min_of_power_outputs(sens, horizon=7, eps=1.0):
    # The first item lies in the nodes released alone at t = 1, 2, 4: three independent
    # Lap(3 / eps) samples all shifted by the item, whose joint ratio reaches e^eps exactly on
    # {all three large}, i.e. {min > c}.
    def fn(x, rng):
        tc = TreeCounter(horizon, 1, l1_sensitivity=sens, epsilon=eps, rng=rng)
        outs = []
        for t in range(1, horizon + 1):
            v = tc.add(np.full((rng.num_runs, 1), float(x) if t == 1 else 0.0))
            if t in (1, 2, 4):
                outs.append(v[:, 0])
        return np.min(outs, axis=0)

    return fn


def test_tree_counter_passes_audit_and_half_noise_mutant_is_caught():
    fn = _tree_min_of_power_outputs
    true = audit_mechanism(fn(1.0), 0, 1, n_runs=10_000, claimed_epsilon=1.0)
    assert true.passed, true.summary()
    mutant = audit_mechanism(fn(0.5), 0, 1, n_runs=10_000, claimed_epsilon=1.0)
    assert not mutant.passed, mutant.summary()


# --------------------------------------------------------------------------- AboveThreshold
def test_above_threshold_noise_scales_and_guarantee():
    at = AboveThreshold(epsilon=0.5, sensitivity=2.0, rng=brng(3))
    assert at.sigma == pytest.approx(2 * 2.0 / 0.5)  # threshold Lap(2 D / eps), query 2 sigma
    assert at.guarantee.epsilon == 0.5 and at.guarantee.delta == 0.0
    c = AboveThreshold(epsilon=1.0, sensitivity=1.0, rng=brng(3), max_tops=4)
    assert c.sigma == pytest.approx(2 * 4 / 1.0)
    # Advanced calibration only when it is smaller: c = 400 TOPs, delta = 1e-6.
    adv = AboveThreshold(epsilon=1.0, sensitivity=1.0, rng=brng(3), max_tops=400, delta=1e-6)
    assert adv.sigma == pytest.approx(math.sqrt(32 * 400 * math.log(1e6)))
    assert adv.guarantee.delta == 1e-6
    small = AboveThreshold(epsilon=1.0, sensitivity=1.0, rng=brng(3), max_tops=2, delta=1e-6)
    assert small.sigma == pytest.approx(4.0) and small.guarantee.delta == 0.0


def test_above_threshold_halts_at_first_top_and_restarts_a_subset():
    n = 6
    at = AboveThreshold(epsilon=1.0, sensitivity=1.0, rng=brng(n), threshold=0.0)
    far_below, far_above = np.full(n, -1e6), np.full(n, 1e6)
    assert not at.test(far_below).any()
    top = at.test(np.where(np.arange(n) < 3, 1e6, -1e6))
    assert top.tolist() == [True] * 3 + [False] * 3
    assert at.halted.tolist() == [True] * 3 + [False] * 3
    assert at.test(far_above).tolist() == [False] * 3 + [True] * 3  # halted runs answer nothing
    assert at.halted.all()
    mask = np.array([True, False, True, False, False, False])
    at.restart(mask)
    assert at.halted.tolist() == [False, True, False, True, True, True]
    assert at.test(far_above).tolist() == mask.tolist()


def test_above_threshold_c_tops_halts_after_c():
    at = AboveThreshold(epsilon=1.0, sensitivity=1.0, rng=brng(2), max_tops=3)
    answers = [at.test(np.full(2, 1e6)) for _ in range(5)]
    assert [a.all() for a in answers] == [True, True, True, False, False]
    assert at.n_tops.tolist() == [3, 3]


def test_above_threshold_batch_equals_single_runs_with_restarts():
    queries = np.random.default_rng(0).normal(0, 3, size=(12, 3))
    masks = np.random.default_rng(1).random((12, 3)) < 0.3

    def play(rng, cols):
        at = AboveThreshold(epsilon=1.0, sensitivity=1.0, rng=rng, max_tops=2, noise="grid")
        out = []
        for q, m in zip(queries[:, cols], masks[:, cols], strict=True):
            out.append(at.test(q))
            at.restart(m)
        return np.array(out)

    batch = play(BatchRNG([10, 11, 12]), slice(None))
    for b in range(3):
        assert np.array_equal(batch[:, b], play(BatchRNG([10 + b]), slice(b, b + 1))[:, 0])


def test_above_threshold_generator_gives_python_bools():
    at = AboveThreshold(epsilon=1.0, sensitivity=1.0, rng=np.random.default_rng(0))
    assert at.test(1e6) is True
    assert at.test(1e6) is False  # halted


# --------------------------------------------------------------------------- TreeCounter
@pytest.mark.parametrize("horizon", [1, 2, 3, 7, 8, 9, 15, 16, 17])
def test_tree_counter_exact_sums_without_noise(horizon):
    items = np.random.default_rng(horizon).integers(-3, 4, size=(horizon, 4, 2)).astype(float)
    tc = TreeCounter(horizon, 2, l1_sensitivity=1.0, epsilon=math.inf, rng=brng(4))
    outs = np.array([tc.add(items[t]) for t in range(horizon)])
    assert np.array_equal(outs, np.cumsum(items, axis=0))
    assert tc.levels == horizon.bit_length()
    assert tc._exact.shape == (4, horizon.bit_length(), 2)  # O(d log T) per run
    with pytest.raises(ValueError, match="at most horizon"):
        tc.add(items[0])


@pytest.mark.parametrize(("horizon", "levels"), [(7, 3), (8, 4), (9, 4)])
def test_tree_counter_node_noise_scale(horizon, levels):
    n, eps, sens = 4000, 2.0, 1.5
    tc = TreeCounter(horizon, 1, l1_sensitivity=sens, epsilon=eps, rng=brng(n, seed=3))
    assert tc.node_scale == pytest.approx(levels * sens / eps)
    assert tc.guarantee.epsilon == eps
    outs = [tc.add(np.zeros((n, 1)))[:, 0] for _ in range(horizon)]
    # At t = 2^j the release is a single node: Laplace(node_scale).
    for t in (1, 2, 4):
        assert stats.kstest(outs[t - 1], stats.laplace(scale=tc.node_scale).cdf).pvalue > P_MIN
    # At t = 3 it is two independent nodes: variance 2 * 2 * scale^2.
    assert np.var(outs[2]) == pytest.approx(4 * tc.node_scale**2, rel=0.1)


def _nodes_per_item_brute_force(items):
    """Most released dyadic nodes one item lies in, by enumeration of what the prefixes read.

    Prefix t (1 <= t <= items) is the sum of the blocks of t's binary digits; collect every
    block any prefix reads and count, for each item, the blocks containing it.
    """
    read = set()
    for t in range(1, items + 1):
        end = 0
        for j in reversed(range(t.bit_length())):
            if (t >> j) & 1:
                read.add((end, end + 2**j))  # items end+1 .. end+2^j
                end += 2**j
    return max(sum(lo < i <= hi for lo, hi in read) for i in range(1, items + 1))


@pytest.mark.parametrize("items", [1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 32, 33, 64, 65])
def test_tree_levels_is_the_brute_force_node_count(items):
    """The exact level count: the most released nodes any item lies in (T = 1, 2, 3, 4, 2^k,
    2^k + 1), counted by enumeration and on the counter itself (each item a unit vector, so a
    released node's exact value names the items in it)."""
    assert tree_levels(items) == _nodes_per_item_brute_force(items)
    seen = []

    class _Spy:  # a backend that records each released node's exact value, adds no noise
        name = "spy"

        def effective_sensitivity(self, sensitivity, dim):
            return sensitivity

        def add_laplace(self, rng, values, scale, batch_axes=1):
            seen.append(np.array(values[0]))
            return np.array(values)

        laplace = gumbel = None  # never called by the counter

    tc = TreeCounter(items, items, l1_sensitivity=1.0, epsilon=1.0, rng=brng(1), noise=_Spy())
    for t in range(items):
        tc.add(np.eye(items)[t][None, :])
    per_item = (np.array(seen) != 0).sum(axis=0)
    assert tc.levels == per_item.max() == tree_levels(items)
    assert tc._exact.shape[1] == tc.levels  # no level is allocated that no item reaches


def test_tree_levels_at_a_learners_horizon():
    """A learner of horizon T feeds its tree T - 1 items: one level fewer at T = 2^k."""
    assert [tree_levels(t - 1) for t in (1, 2, 3, 4, 8, 9, 16, 17)] == [1, 1, 2, 2, 3, 4, 4, 5]
    assert [t.bit_length() for t in (4, 8, 16)] == [3, 4, 5]  # the old count: one too many
    with pytest.raises(ValueError, match="items must be >= 0"):
        tree_levels(-1)
    with pytest.raises(TypeError, match="items must be an int"):
        tree_levels(2.0)


def test_tree_counter_generator_and_grid():
    tc = TreeCounter(
        5, 3, l1_sensitivity=1.0, epsilon=1.0, rng=np.random.default_rng(0), noise="grid"
    )
    out = tc.add(np.ones(3))
    assert out.shape == (3,) and np.array_equal(out * 2**20, np.round(out * 2**20))
    assert tc.node_scale == pytest.approx(3 * (1 + 3 * 2.0**-20))


# --------------------------------------------------------------------------- bad input
@pytest.mark.parametrize(
    ("call", "err", "match"),
    [
        (
            lambda: laplace_mechanism(np.zeros((2, 2)), l1_sensitivity=1, epsilon=0, rng=brng(2)),
            ValueError,
            "epsilon must be > 0",
        ),
        (
            lambda: laplace_mechanism(np.zeros((2, 2)), l1_sensitivity=-1, epsilon=1, rng=brng(2)),
            ValueError,
            "l1_sensitivity must be > 0",
        ),
        (
            lambda: laplace_mechanism(np.zeros((3, 2)), l1_sensitivity=1, epsilon=1, rng=brng(2)),
            ValueError,
            "leading run axis of length 2",
        ),
        (
            lambda: laplace_mechanism(np.zeros(2), l1_sensitivity=1, epsilon=1, rng="seed"),
            TypeError,
            "rng must be a BatchRNG",
        ),
        (
            lambda: report_noisy_min(np.zeros(4), sensitivity=1, epsilon=1, rng=brng(2)),
            ValueError,
            "scores must have shape",
        ),
        (
            lambda: report_noisy_min(np.zeros((2, 4)), sensitivity=0, epsilon=1, rng=brng(2)),
            ValueError,
            "sensitivity must be > 0",
        ),
        (
            lambda: exponential_mechanism(np.zeros((2, 4)), sensitivity=1, epsilon=-1, rng=brng(2)),
            ValueError,
            "epsilon must be > 0",
        ),
        (
            lambda: report_noisy_min(
                np.zeros((2, 2)), sensitivity=1, epsilon=1, rng=brng(2), noise="x"
            ),
            ValueError,
            "noise must be one of",
        ),
        (
            lambda: AboveThreshold(epsilon=1, sensitivity=1, rng=brng(2), delta=1.0),
            ValueError,
            "delta must be < 1",
        ),
        (
            lambda: AboveThreshold(epsilon=1, sensitivity=1, rng=brng(2), max_tops=0),
            ValueError,
            "max_tops must be >= 1",
        ),
        (
            lambda: AboveThreshold(epsilon=1, sensitivity=1, rng=brng(2)).test(np.zeros(3)),
            ValueError,
            "queries must have shape",
        ),
        (
            lambda: AboveThreshold(epsilon=1, sensitivity=1, rng=brng(2)).restart(np.ones(3)),
            ValueError,
            "mask must have shape",
        ),
        (
            lambda: TreeCounter(0, 1, l1_sensitivity=1, epsilon=1, rng=brng(2)),
            ValueError,
            "horizon must be >= 1",
        ),
        (
            lambda: TreeCounter(4, 2, l1_sensitivity=1, epsilon=1, rng=brng(2)).add(
                np.zeros((2, 3))
            ),
            ValueError,
            "2 coordinate",
        ),
        (lambda: Guarantee(0.0), ValueError, "epsilon must be > 0"),
        (lambda: Guarantee(1.0, 1.5), ValueError, "delta must lie in"),
    ],
)
def test_bad_parameters_raise_clear_errors(call, err, match):
    with pytest.raises(err, match=match):
        call()
