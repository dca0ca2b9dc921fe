"""The default comparison: what ``dp-experts compare`` runs with no arguments.

DPExperts-Shift-v0 with N = 10, T = 10,000, 4 shifts and gap 0.3; the non-private baselines and
every registered private full-information learner; epsilon in {0.5, 2, 8, 32, inf}; 10 seeds
(docs/grid.md, "The default comparison").
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from dp_experts_env.evaluation.grid import AgentEntry, EnvEntry, Grid

__all__ = ["BASELINES", "AGENT_DEFAULTS", "default_grid", "default_agents"]

#: Non-private full-information references, in the order a reader expects them.
BASELINES = ("uniform", "follow-the-leader", "hedge", "fixed-share", "shrinking-dartboard")

#: Per-learner settings for the default grid (data-independent choices only; none needed now).
AGENT_DEFAULTS: dict[str, dict[str, object]] = {}


def default_agents() -> list[AgentEntry]:
    """Baselines, then every registered private full-information learner (paper modes by name)."""
    import agents

    listing = agents.available()
    names = {a["name"] for a in listing}
    entries = [AgentEntry(n, AGENT_DEFAULTS.get(n, {})) for n in BASELINES if n in names]
    for item in listing:
        if item["private"] and item["feedback"] == "full" and ":" not in item["name"]:
            entries.append(AgentEntry(item["name"], AGENT_DEFAULTS.get(item["name"], {})))
    return entries


def default_grid(
    *,
    horizon: int = 10_000,
    n_experts: int = 10,
    n_shifts: int = 4,
    gap: float = 0.3,
    seeds: int = 10,
    epsilons: Sequence[float] = (0.5, 2.0, 8.0, 32.0, math.inf),
    agents: Sequence[str] | None = None,
) -> Grid:
    """The default grid (parameters shrink it for smoke tests)."""
    env = EnvEntry(
        "DPExperts-Shift-v0",
        {"n_experts": n_experts, "horizon": horizon, "n_shifts": n_shifts, "gap": gap},
    )
    chosen = default_agents()
    if agents is not None:
        wanted = list(agents)
        chosen = [a for a in chosen if a.name in wanted]
        missing = sorted(set(wanted) - {a.name for a in chosen})
        if missing:
            raise ValueError(
                f"agents {missing} are not full-information learners in the suite; "
                f"pick from {sorted({a.name for a in default_agents()})}"
            )
    return Grid(agents=chosen, envs=[env], epsilons=list(epsilons), n_seeds=seeds)
