"""benchmarks/fused_loop.py ("fused_loop"): the limit's arithmetic has known answers.

The fused loop is what benchmarks/default_vs_fused.py divides the suite's CPU by; a loop that
skipped work would flatter the suite, so its regret must come out right where it is known.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
pytest.importorskip("numba")
fused_loop = pytest.importorskip("fused_loop")


def test_a_learner_that_follows_the_leader_finds_the_zero_loss_expert():
    # gap 0.5: the best expert's mean is 0, the others' 0.5; no shifts, S = 0.
    regrets = fused_loop.fused_cell(2000, 5, 0, 0.5, 4, 0, 50.0, 0.0)
    assert (regrets >= 0).all() and regrets.max() < 20


def test_uniform_play_pays_the_gap_every_round():
    t, n = 4000, 5
    regrets = fused_loop.fused_cell(t, n, 0, 0.5, 4, 0, 0.0, 0.0)  # eta = 0: uniform
    expected = t * (n - 1) / n * 0.5
    assert abs(regrets.mean() - expected) < 4 * math.sqrt(t)


def test_the_switch_comparator_beats_the_fixed_one_on_shifts():
    # With shifts the S-switch comparator's loss is lower, so dynamic regret >= a no-shift run's.
    shifted = fused_loop.fused_cell(3000, 5, 4, 0.5, 4, 1, 0.0, 0.0)
    assert (shifted > 0).all()


def test_the_default_grid_has_the_suites_cells():
    cells = fused_loop.default_cells()
    assert len(cells) == len(set(cells)) >= 10
    assert fused_loop.fused_grid(cells[:3], 50, 2) > 0
