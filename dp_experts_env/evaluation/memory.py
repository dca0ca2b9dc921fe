"""The memory a sweep needs: a per-run model measured on the serial sweep, and its check.

Per run, with N experts (plus arms), T rounds and R = ``min(n_record, T)`` recorded rounds:
played ``37 kB + 500 B x N + 8 B x T + 140 B x R`` (the largest unit at once), kept
``3.6 kB + 150 B x R`` (every run), plus :data:`FIXED_BYTES`. Fitted to the peak resident
memory of a serial ``run_grid`` (docs/grid.md, "Memory and progress of a large sweep").
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from dp_experts_env._validation import MEMORY_LIMIT

__all__ = [
    "FIXED_BYTES",
    "EnvSize",
    "check_grid_memory",
    "env_size",
    "kept_bytes",
    "memory_limit",
    "play_bytes",
    "sweep_bytes",
]

#: Interpreter, imports and compiled kernels (measured, rounded up).
FIXED_BYTES = 230 * 2**20


@dataclass(frozen=True)
class EnvSize:
    """What the per-run model reads of an env: experts (plus arms), rounds, recorded rounds."""

    n_experts: int
    horizon: int
    recorded: int
    dim: int | None = None  # OCO: the decision dimension


def play_bytes(size: EnvSize) -> float:
    """Bytes per run of the unit being played."""
    extra = 64.0 * size.dim if size.dim is not None else 0.0
    return 37_000.0 + 500.0 * size.n_experts + 8.0 * size.horizon + 140.0 * size.recorded + extra


def kept_bytes(size: EnvSize) -> float:
    """Bytes per run of the grid kept in the returned table."""
    return 3_600.0 + 150.0 * size.recorded


def sweep_bytes(units: list[tuple[EnvSize, int, int]]) -> float:
    """Peak bytes of a serial sweep of ``units``: per env, (size, largest unit's runs, runs)."""
    largest = max((play_bytes(s) * unit for s, unit, _ in units), default=0.0)
    return FIXED_BYTES + largest + sum(kept_bytes(s) * total for s, _, total in units)


def memory_limit() -> int:
    """The ceiling a grid is held to: :data:`MEMORY_LIMIT`, or 80% of the machine's memory."""
    try:
        physical = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):  # not POSIX
        return MEMORY_LIMIT
    return int(min(MEMORY_LIMIT, 0.8 * physical)) if physical > 0 else MEMORY_LIMIT


def env_size(env_id: str, params: dict, n_record: int) -> EnvSize:
    """Build the env once (one run) and read what the model needs of it."""
    import gymnasium as gym

    instance = gym.make(env_id, **dict(params))
    try:
        base = instance.unwrapped
        horizon = int(base.horizon)
        dim = getattr(base, "dim", None)
        width = int(getattr(base, "n_experts", 0) or 0) + int(getattr(base, "n_arms", 0) or 0)
    finally:
        instance.close()
    return EnvSize(width, horizon, min(int(n_record), horizon), None if dim is None else int(dim))


def check_grid_memory(grid: Any, limit: int | None = None) -> float:
    """Refuse a grid whose serial sweep would pass the memory limit, before it runs.

    The message names a ``seeds_per_cell`` that fits, if any. Call it on a validated grid.

    Returns:
        The estimate in bytes (below the limit).

    Raises:
        ValueError: the estimate passes ``limit`` (default :func:`memory_limit`).
    """
    limit = memory_limit() if limit is None else limit
    block = grid.seeds_per_cell or grid.n_seeds
    cells_per_env: dict[str, int] = {}
    for cell in grid.cells():
        if cell.seed_indices[0] == 0:  # one cell per (agent, epsilon) of the env
            cells_per_env[cell.env.display] = cells_per_env.get(cell.env.display, 0) + 1
    plan = []
    for env in grid.envs:
        count = cells_per_env.get(env.display, 0)
        size = env_size(env.id, env.params, grid.n_record)
        plan.append((size, block * count, grid.n_seeds * count))
    need = sweep_bytes(plan)
    if need <= limit:
        return need
    gib = 2**30
    what = (
        f"this grid ({sum(t for _, _, t in plan):,} runs, {block} seeds per cell played at once) "
        f"would need about {need / gib:,.1f} GiB of memory (the limit is {limit / gib:.3g} GiB; "
        "per-run model in docs/grid.md)"
    )
    kept = sweep_bytes([(s, 0, t) for s, _, t in plan])
    per_seed = max(play_bytes(s) * (u // block) for s, u, _ in plan)
    fits = int((limit - kept) // per_seed) if per_seed > 0 and kept < limit else 0
    if fits >= 1 and fits < block:
        raise ValueError(f"{what}: set seeds_per_cell to {fits} or less")
    raise ValueError(f"{what}: fewer seeds or a smaller n_record, please")
