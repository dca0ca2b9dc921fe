"""dp_experts_env.fixed_order.dot: products summed left to right, the same on every machine."""

from __future__ import annotations

import numpy as np
import pytest

from dp_experts_env.fixed_order import dot


def test_the_sum_runs_left_to_right():
    # (1e16 + 1) rounds to 1e16, so left to right gives 0; other orders give 1 or 2.
    a = np.array([1e16, 1.0, -1e16, 1.0])
    assert dot(a, np.ones(4)) == 1.0
    assert dot(a[[0, 1, 2]], np.ones(3)) == 0.0
    assert dot(a[[1, 0, 2]], np.ones(3)) == 0.0
    assert dot(a[[0, 2, 1]], np.ones(3)) == 1.0


def test_broadcasting_and_known_values():
    rng = np.random.default_rng(0)
    v, signs = rng.normal(size=(5, 3)), np.array([[1.0, -1, 1], [-1, -1, 1]])
    out = dot(v[:, None, :], signs)
    assert out.shape == (5, 2)
    expected = ((v[:, None, 0] * signs[:, 0]) + v[:, None, 1] * signs[:, 1]) + v[
        :, None, 2
    ] * signs[:, 2]
    assert np.array_equal(out, expected)
    assert np.allclose(out, v @ signs.T, rtol=1e-15, atol=1e-15)
    ints = np.arange(12.0).reshape(4, 3)
    assert np.array_equal(dot(ints, np.array([1.0, 2.0, 3.0])), ints @ np.array([1.0, 2.0, 3.0]))
    assert dot(np.zeros((2, 0)), np.zeros(0)).shape == (2,)


def test_mismatched_lengths_are_refused():
    with pytest.raises(ValueError, match="last axes differ"):
        dot(np.ones(3), np.ones(2))
