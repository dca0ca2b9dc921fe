import numpy as np
import pytest
from scipy import stats as sps

from dp_experts_env.evaluation.stats import (
    aggregate,
    bootstrap_ci,
    fit_loglog_slope,
    iqm,
    stratified_bootstrap_ci,
    stratified_bootstrap_cis,
)


def test_iqm_known_answers():
    # n divisible by 4: plain mean of the middle half.
    assert iqm([1, 2, 3, 4, 5, 6, 7, 8]) == pytest.approx(4.5)
    assert iqm([10, 0, 0, 0, 0, 0, 0, 100]) == pytest.approx(0.0)
    # rliable's IQM is trim_mean(x, 0.25): floor(n/4) values cut from each end.
    # n = 5: cut 1 each side of [1..5] -> mean(2, 3, 4) = 3.
    assert iqm([5, 1, 4, 2, 3]) == pytest.approx(3.0)
    # n = 10 (the default seed count): cut 2 each side -> mean of the 3rd..8th smallest.
    # Sorted: 0 1 2 3 4 5 6 7 8 90 -> mean(2..7) = 4.5 (fractional quartile weights gave 4.5 too
    # only by symmetry; the next case separates the two definitions).
    assert iqm([90, 1, 2, 3, 4, 5, 6, 7, 8, 0]) == pytest.approx(4.5)
    # n = 6 on [0, 0, 0, 1, 10, 100]: cut 1 each side -> mean(0, 0, 1, 10) = 2.75
    # (the fractional-weight IQM would give (0/12 + 0/6 + 1/6 + 10/12) / (1/2) = 2.0).
    assert iqm([0, 0, 0, 1, 10, 100]) == pytest.approx(2.75)


@pytest.mark.parametrize("n", [5, 6, 7, 10, 13, 400])
def test_iqm_is_scipy_trim_mean_for_every_size(n):
    x = np.random.default_rng(n).normal(size=n)
    assert iqm(x) == pytest.approx(sps.trim_mean(x, 0.25), abs=1e-15)


def test_aggregate_names_and_errors():
    assert aggregate([1, 2, 3], "median") == 2
    with pytest.raises(ValueError, match="statistic"):
        aggregate([1, 2], "mode")
    with pytest.raises(ValueError, match="empty"):
        aggregate([], "mean")


def test_bootstrap_ci_covers_and_is_reproducible():
    x = np.random.default_rng(1).normal(loc=3.0, size=200)
    est, lo, hi = bootstrap_ci(x, "mean", seed=7)
    assert est == pytest.approx(x.mean())
    assert lo < est < hi
    # Half-width close to the normal-theory 1.96 * sem (within 20%).
    half = (hi - lo) / 2
    assert half == pytest.approx(1.96 * x.std(ddof=1) / np.sqrt(x.size), rel=0.2)
    assert bootstrap_ci(x, "mean", seed=7) == (est, lo, hi)


def test_stratified_bootstrap_keeps_group_sizes():
    # One group constant 0 (size 10), one constant 1 (size 30): every stratified resample has
    # mean exactly 0.75, so the interval collapses; an unstratified bootstrap would not.
    est, lo, hi = stratified_bootstrap_ci([np.zeros(10), np.ones(30)], "mean", n_boot=300)
    assert est == lo == hi == pytest.approx(0.75)
    with pytest.raises(ValueError):
        stratified_bootstrap_ci([[]])
    with pytest.raises(ValueError, match="confidence"):
        bootstrap_ci([1.0, 2.0], confidence=1.5)


def test_iqm_bootstrap_runs():
    est, lo, hi = bootstrap_ci(np.arange(20.0), "iqm", n_boot=200)
    assert lo <= est <= hi


def test_loglog_slope_recovers_known_slope():
    t = np.array([1e2, 1e3, 1e4, 1e5])
    slope, intercept = fit_loglog_slope(t, 3.0 * t**0.5)
    assert slope == pytest.approx(0.5, abs=1e-12)
    assert np.exp(intercept) == pytest.approx(3.0)
    noisy = 2.0 * t ** (1 / 3) * np.exp(np.random.default_rng(0).normal(scale=0.01, size=4))
    assert fit_loglog_slope(t, noisy)[0] == pytest.approx(1 / 3, abs=0.02)
    with pytest.raises(ValueError, match="positive"):
        fit_loglog_slope([1, 2], [0.0, 1.0])


def _bootstrap_before(groups, statistic, n_boot, seed, confidence=0.95):
    """stratified_bootstrap_ci as written before the resamples were shared (the reference)."""
    from dp_experts_env.evaluation.stats import AGGREGATES, _rowwise

    arrays = [np.asarray(g, dtype=np.float64).ravel() for g in groups]
    estimate = AGGREGATES[statistic](np.concatenate(arrays))
    rng = np.random.default_rng(seed)
    resampled = [a[rng.integers(0, a.size, size=(n_boot, a.size))] for a in arrays]
    boots = _rowwise(statistic, np.concatenate(resampled, axis=1))
    tail = (1.0 - confidence) / 2.0
    low, high = np.quantile(boots, [tail, 1.0 - tail], axis=0)
    return float(estimate), float(low), float(high)


def test_shared_resamples_give_each_statistics_interval_bit_for_bit():
    """stratified_bootstrap_cis (what summary.csv and aggregate.csv read) draws the resamples
    once for all statistics; each triple equals the old one-statistic computation exactly."""
    rng = np.random.default_rng(5)
    cases = [
        [rng.normal(size=1303)],  # one task (summary.csv: a learner's seeds on one env)
        [rng.normal(size=7)],
        [rng.exponential(size=10), rng.normal(size=3), np.arange(6.0)],  # stratified
        [np.round(rng.normal(size=40), 1)],  # ties
    ]
    names = ("mean", "iqm", "median")
    for groups in cases:
        for seed, n_boot in ((0, 2000), (11, 301)):
            got = stratified_bootstrap_cis(groups, names, n_boot=n_boot, seed=seed)
            assert list(got) == list(names)
            for name in names:
                want = _bootstrap_before(groups, name, n_boot, seed)
                assert got[name] == want, (name, len(groups), seed)
                assert stratified_bootstrap_ci(groups, name, n_boot=n_boot, seed=seed) == want
            if len(groups) == 1:
                assert bootstrap_ci(groups[0], "iqm", n_boot=n_boot, seed=seed) == got["iqm"]
    # Control: a second statistic read from the generator's continued stream (resamples drawn
    # again, not shared) gives other intervals, which the comparison above would catch.
    rng = np.random.default_rng(0)
    x = cases[0][0]
    rng.integers(0, x.size, size=(2000, x.size))
    moved = np.quantile(
        x[rng.integers(0, x.size, size=(2000, x.size))].mean(axis=1), [0.025, 0.975]
    )
    assert tuple(moved) != _bootstrap_before([x], "mean", 2000, 0)[1:]
    with pytest.raises(ValueError, match="statistic"):
        stratified_bootstrap_cis([x], ("mean", "mode"))
    with pytest.raises(TypeError, match="statistics must be a sequence"):
        stratified_bootstrap_cis([x], "mean")
    with pytest.raises(TypeError, match="statistics must be a sequence"):
        stratified_bootstrap_cis([x], 5)
    with pytest.raises(ValueError, match="statistics must name at least one"):
        stratified_bootstrap_cis([x], ())
