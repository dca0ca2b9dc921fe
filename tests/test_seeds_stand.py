"""The generated "Where the seeds stand" table (benchmarks/seeds_stand.py, issue #38).

The docs hold the script's rendering of its checked-in measurement (a change of either without
the other fails here); the paired ratio interval and the table's choices are checked on known
answers.
"""

import copy
import math
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

import seeds_stand  # noqa: E402

import agents  # noqa: E402


def test_docs_equal_the_rendering_of_the_checked_in_measurement():
    data = seeds_stand._load(seeds_stand.CHECKED_IN)
    assert seeds_stand.docs_block(seeds_stand.DOCS.read_text()) == seeds_stand.render(data)
    # Every seed learner at every epsilon, T = 10^4, 10 runs.
    assert data["horizon"] == 10_000 and data["runs"] == 10
    pairs = {(r["learner"], r["epsilon"]) for r in data["rows"]}
    assert pairs == {(n, e) for n in seeds_stand.SEEDS for e in seeds_stand.EPSILONS}
    # A changed number is seen (the mutant the equality catches).
    changed = copy.deepcopy(data)
    changed["rows"][0]["ratio"][0] += 0.01
    assert seeds_stand.render(changed) != seeds_stand.render(data)


def test_the_best_baseline_is_the_lowest_mean_of_its_setting():
    data = seeds_stand._load(seeds_stand.CHECKED_IN)
    table = seeds_stand.settings(data["horizon"])
    labels = {s.label: s for s in table.values()}
    for r in data["rows"]:
        assert r["baseline"] in labels[r["setting"]].baselines
        q, lo, hi = r["ratio"]
        assert lo <= q <= hi
        assert q == pytest.approx(r["regret"][0] / r["baseline_regret"][0], rel=1e-9)


def test_seed_learners_and_baselines_are_registered_private_and_disjoint():
    names = {a["name"]: a for a in agents.available()}
    for name in seeds_stand.SEEDS:
        assert names[name]["private"], name
    for setting in seeds_stand.settings(100).values():
        for b in setting.baselines:
            assert names[b]["private"] and b not in seeds_stand.SEEDS


def test_paired_ratio_interval_known_answers():
    x = np.array([1.0, 2.0, 3.0, 4.0])
    assert seeds_stand.ratio_ci(x, x) == (1.0, 1.0, 1.0)
    assert seeds_stand.ratio_ci(2 * x, x) == (2.0, 2.0, 2.0)  # pairing: every resample is 2
    q, lo, hi = seeds_stand.ratio_ci(np.array([1.0, 3.0]), np.array([2.0, 2.0]))
    assert q == 1.0 and lo == pytest.approx(0.5) and hi == pytest.approx(1.5)
    m, lo, hi = seeds_stand.mean_ci(x)
    assert m == 2.5 and lo < m < hi
    assert math.isinf(seeds_stand._load(seeds_stand.CHECKED_IN)["rows"][-1]["epsilon"])
