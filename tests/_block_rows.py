"""Rows of cells played on the compiled or the numpy path, and their float-for-float comparison.

Shared by the block-episode tests (full information and bandit feedback): a cell's rows must not
depend on whether its rounds were played in compiled blocks or one by one.
"""

from __future__ import annotations

import math
from typing import Any

from conftest import use_jit_path


def rows_on_path(cells: list, monkeypatch: Any, jit: bool) -> list[dict]:
    """Every row of ``cells``, played in their episode groups with the JIT on or off."""
    from dp_experts_env.evaluation.episode import group_key, run_cells

    use_jit_path("compiled" if jit else "numpy", monkeypatch)
    groups: dict = {}
    for cell in cells:
        groups.setdefault(group_key(cell), []).append(cell)
    return [row for group in groups.values() for _, rows in run_cells(group) for row in rows]


def assert_same_rows(a: list[dict], b: list[dict]) -> None:
    """Equal rows, key for key (NaN equals NaN); at least one row."""
    assert len(a) == len(b) and a
    for x, y in zip(a, b, strict=True):
        assert x.keys() == y.keys()
        for key in x:
            same = x[key] == y[key] or (
                isinstance(x[key], float) and math.isnan(x[key]) and math.isnan(y[key])
            )
            assert same, (x["agent"], x["round"], key, x[key], y[key])
