"""rliable's definitions, checked against values worked out by hand on fixed arrays.

rliable is not a dependency; each reference below is rliable's formula written out
(``metrics.aggregate_iqm``, ``metrics.probability_of_improvement``,
``library.StratifiedBootstrap`` with the percentile method, ``run_score_deviation``).
"""

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

from dp_experts_env.evaluation.stats import (
    aggregate_scores,
    normalized_scores,
    performance_profile,
    probability_of_improvement,
    probability_of_improvement_ci,
    stratified_bootstrap_ci,
)

# (runs, tasks) matrices as rliable takes them.
X = np.array([[1.0, 5.0], [3.0, 5.0]])
Y = np.array([[2.0, 5.0], [2.0, 6.0]])


def test_probability_of_improvement_by_hand():
    # Task 0: x = (1, 3) vs y = (2, 2): pairs 1>2 no, 1>2 no, 3>2 yes, 3>2 yes -> 2/4.
    # Task 1: x = (5, 5) vs y = (5, 6): ties 5=5 twice (1/2 each), 5<6 twice -> 1/4.
    assert probability_of_improvement(X, Y) == pytest.approx((0.5 + 0.25) / 2)
    # rliable's formula: Mann-Whitney U (alternative='greater') / (n_x n_y), averaged over tasks.
    u = [
        sps.mannwhitneyu(X[:, j], Y[:, j], alternative="greater").statistic / 4 for j in range(2)
    ]
    assert probability_of_improvement(X, Y) == pytest.approx(np.mean(u))
    # Identical scores -> exactly 0.5; P(X > Y) + P(Y > X) = 1.
    assert probability_of_improvement(X, X) == 0.5
    assert probability_of_improvement(X, Y) + probability_of_improvement(Y, X) == pytest.approx(1)


def test_probability_of_improvement_unequal_runs_and_errors():
    # One task, x = (0, 1, 2), y = (1,): 0<1, 1=1 (1/2), 2>1 -> 1.5 / 3.
    assert probability_of_improvement([[0, 1, 2]], [[1]]) == pytest.approx(0.5)
    with pytest.raises(ValueError, match="same tasks"):
        probability_of_improvement(X, Y[:, :1])
    with pytest.raises(ValueError, match="scores_y"):
        probability_of_improvement([[1.0]], [[]])


def test_probability_of_improvement_interval():
    rng = np.random.default_rng(0)
    better, worse = rng.normal(1.0, 1.0, size=(20, 3)), rng.normal(0.0, 1.0, size=(20, 3))
    est, lo, hi = probability_of_improvement_ci(better, worse, n_boot=500)
    assert lo < est < hi and lo > 0.5  # clearly better: the interval excludes 0.5
    # Separated samples: every resample gives 1.
    assert probability_of_improvement_ci(worse + 100, worse, n_boot=50) == (1.0, 1.0, 1.0)


def _reference_stratified_bootstrap(matrix, fn, reps, rng):
    """rliable's StratifiedBootstrap (percentile), one task at a time, one replicate at a time."""
    runs, tasks = matrix.shape
    stats = []
    for _ in range(reps):
        idx = rng.integers(0, runs, size=(runs, tasks))
        stats.append(fn(matrix[idx, np.arange(tasks)[None, :]]))
    return np.quantile(stats, [0.025, 0.975])


def test_stratified_bootstrap_iqm_agrees_with_rliable_procedure():
    matrix = np.random.default_rng(3).gamma(2.0, size=(10, 3))
    est, lo, hi = stratified_bootstrap_ci(matrix, "iqm", n_boot=4000, seed=1)
    # rliable: aggregate_iqm = trim_mean of all runs and tasks.
    assert est == pytest.approx(sps.trim_mean(matrix, 0.25, axis=None))
    ref = _reference_stratified_bootstrap(
        matrix, lambda m: sps.trim_mean(m, 0.25, axis=None), 4000, np.random.default_rng(9)
    )
    width = ref[1] - ref[0]
    # Two Monte Carlo estimates of the same interval: endpoints agree within 10% of the width.
    assert lo == pytest.approx(ref[0], abs=0.1 * width)
    assert hi == pytest.approx(ref[1], abs=0.1 * width)


def test_stratified_bootstrap_enumerable_case():
    # Two tasks of two runs: task 0 = (0, 0) never moves; task 1 = (0, 4) resamples to
    # (0,0), (0,4), (4,0), (4,4) -> pooled mean 0, 1, 1, 2 with probs 1/4, 1/2, 1/4.
    # The 2.5% and 97.5% percentiles are then 0 and 2.
    est, lo, hi = stratified_bootstrap_ci([[0, 0], [0, 4]], "mean", n_boot=4000)
    assert (est, lo, hi) == (1.0, 0.0, 2.0)


def test_performance_profile_by_hand():
    # rliable run-score distribution: mean(scores > tau) over all runs and tasks (strict).
    scores = np.array([[0.1, 0.5], [0.3, 0.9], [0.7, 0.5]])
    frac, lo, hi = performance_profile(scores, [0.0, 0.3, 0.5, 0.9], n_boot=200)
    np.testing.assert_allclose(frac, [6 / 6, 4 / 6, 2 / 6, 0 / 6])
    np.testing.assert_allclose(frac, [np.mean(scores > t) for t in [0.0, 0.3, 0.5, 0.9]])
    assert np.all(lo <= frac) and np.all(frac <= hi)
    assert lo[0] == hi[0] == 1.0 and lo[-1] == hi[-1] == 0.0  # no run above 0.9 in any resample
    with pytest.raises(ValueError, match="taus"):
        performance_profile(scores, [])


def _final_rows():
    rows = []
    # Two envs; uniform's mean regret 10 on env a, 20 on env b.
    for env, ref in (("a", 10.0), ("b", 20.0)):
        for seed, (u, h) in enumerate([(8.0, 1.0), (12.0, 3.0)]):
            scale = ref / 10.0
            rows.append(dict(agent="uniform", epsilon=np.inf, env=env, seed=seed, r=u * scale))
            rows.append(dict(agent="hedge", epsilon=np.inf, env=env, seed=seed, r=h * scale))
    rows.append(dict(agent="lonely", epsilon=1.0, env="a", seed=0, r=1.0))  # misses env b
    return pd.DataFrame(rows)


def test_normalized_scores_and_aggregate_by_hand():
    scores = normalized_scores(_final_rows(), "r")
    assert set(scores) == {("uniform", np.inf), ("hedge", np.inf)}  # "lonely" lacks env b
    # hedge: 1 - (1, 3)/10 on a and 1 - (2, 6)/20 on b -> (0.9, 0.7) on both tasks.
    np.testing.assert_allclose(scores[("hedge", np.inf)], [[0.9, 0.7], [0.9, 0.7]])
    np.testing.assert_allclose(scores[("uniform", np.inf)], [[0.2, -0.2], [0.2, -0.2]])
    table = aggregate_scores(scores, n_boot=200)
    assert [r["agent"] for r in table] == ["hedge", "uniform"]
    hedge = table[0]
    # IQM of (0.9, 0.7, 0.9, 0.7): trim one each side -> (0.7 + 0.9) / 2.
    assert hedge["iqm"] == pytest.approx(0.8) and hedge["mean"] == pytest.approx(0.8)
    assert hedge["tasks"] == 2 and hedge["runs"] == 4
    assert hedge["iqm_low"] <= 0.8 <= hedge["iqm_high"]
    with pytest.raises(ValueError, match="reference"):
        normalized_scores(_final_rows(), "r", reference="nobody")
    with pytest.raises(ValueError, match="column"):
        normalized_scores(_final_rows(), "missing")
