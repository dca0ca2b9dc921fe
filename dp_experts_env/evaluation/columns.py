"""A run's rows as columns: how results travel from a worker to the results folder.

Per run, the columns constant over its rows (agent, env, epsilon, seed, ...) are kept once and
the others as one numpy array each (float64, int64 or bool; anything else a list), so a unit
crosses a process or Ray boundary as a few arrays per run. :func:`payload` gives the same bytes
as the row-by-row serialisation. No pandas here: workers import this module.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np

from dp_experts_env.evaluation.grid import json_default

__all__ = ["RunColumns", "by_seed", "payload", "run_columns"]

#: ``{"order": [column names], "const": {name: value}, "cols": {name: array or list}, "n": rows}``
RunColumns = dict[str, Any]

_INT64 = (-(2**63), 2**63 - 1)


def _as_array(values: list[Any]) -> Any:
    """``values`` as a numpy array when it round-trips them exactly (``tolist`` gives them back)."""
    kind = type(values[0])
    if kind not in (float, int, bool) or any(type(v) is not kind for v in values):
        return values
    if kind is int and not all(_INT64[0] <= v <= _INT64[1] for v in values):
        return values
    return np.array(values, dtype={float: np.float64, int: np.int64, bool: np.bool_}[kind])


def run_columns(rows: list[dict[str, Any]]) -> RunColumns:
    """One run's rows as columns; the constant ones (equal, one type, never NaN) once."""
    order = list(rows[0])
    const: dict[str, Any] = {}
    cols: dict[str, Any] = {}
    for name in order:
        values = [row.get(name) for row in rows]
        first = values[0]
        if all(type(v) is type(first) and v == first for v in values):
            const[name] = first
        else:
            cols[name] = _as_array(values)
    return {"order": order, "const": const, "cols": cols, "n": len(rows)}


def by_seed(rows: list[dict[str, Any]]) -> dict[int, RunColumns]:
    """A cell's rows split by their ``seed`` (in order of first appearance), as columns."""
    groups: dict[int, list[dict[str, Any]]] = {}
    for row in rows:
        groups.setdefault(int(row["seed"]), []).append(row)
    return {seed: run_columns(seed_rows) for seed, seed_rows in groups.items()}


def payload(run: RunColumns) -> bytes:
    """The stored JSON of a run: ``{"order", "const", "cols"}`` with every column as a list."""
    cols = {k: v.tolist() if isinstance(v, np.ndarray) else v for k, v in run["cols"].items()}
    data = {"order": run["order"], "const": run["const"], "cols": cols}
    text = json.dumps(data, separators=(",", ":"), allow_nan=True, default=json_default)
    return text.encode()
