"""The privacy side of a card: certified epsilons, audit and claim verdicts (docs/bench.md)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from dp_experts_env.bench.scores import eps_key

__all__ = [
    "AUDIT_EPSILON",
    "QUICK_AUDIT",
    "QUICK_CLAIMS",
    "applicable_claims",
    "audit_verdict",
    "certified_epsilons",
    "claim_verdicts",
    "stated_claims",
]

#: The epsilon the card's audit runs at.
AUDIT_EPSILON = 1.0
#: What a ``--quick`` card says instead of an audit verdict.
QUICK_AUDIT = (
    "not run in --quick: the default audit searches scenarios for up to 120 s and then tests "
    "the best one on 100,000 runs per side; run the full card"
)
#: What a ``--quick`` card says instead of claim verdicts.
QUICK_CLAIMS = "not run in --quick: each claim's quick sweeps take minutes; run the full card"


def certified_epsilons(per_task_rows: Mapping[str, Any], label: str) -> dict[str, Any]:
    """Per requested epsilon: the largest certified epsilon over the tasks, and if all certify."""
    out: dict[str, Any] = {}
    for rows in per_task_rows.values():
        frame = rows.frame
        mine = frame[frame["agent"] == label]
        for eps, group in mine.groupby("epsilon"):
            key = eps_key(float(eps))
            value = float(group["epsilon_certified"].max())
            entry = out.setdefault(key, {"certified_epsilon": value, "certified": True})
            entry["certified_epsilon"] = max(entry["certified_epsilon"], value)
            entry["certified"] = bool(entry["certified"] and group["certified"].all())
    for entry in out.values():
        if math.isinf(entry["certified_epsilon"]):
            entry["certified_epsilon"] = "inf"
    return dict(sorted(out.items(), key=lambda kv: float(kv[0])))


def stated_claims(
    name: str, params: Mapping[str, Any], task: Any, epsilons: Sequence[float]
) -> dict[str, dict[str, Any]]:
    """The learner's own claim at each epsilon, built on ``task``'s env.

    Returns:
        ``{"<eps>": {"delta", "claim"}}``: the claim's delta and ``PrivacyClaim.summary()``.
    """
    import gymnasium as gym

    import agents

    private = agents.spec(name).private
    env = gym.make(task.env, **task.env_params())
    out = {}
    try:
        for eps in epsilons if private else (math.inf,):
            kw = {**dict(params), **({"epsilon": eps} if private else {})}
            claim = agents.make(name, env=env, seed=0, **kw).privacy
            out[eps_key(eps)] = {"delta": float(claim.delta), "claim": claim.summary()}
    finally:
        env.close()
    return out


def audit_verdict(
    name: str, params: Mapping[str, Any], *, quick: bool, private: bool, feedback: str
) -> dict[str, Any]:
    """``{"verdict", "reason", "epsilon"}``: ``violation``, ``pass``, ``not run`` or ``n/a``."""
    if not private:
        return {
            "verdict": "n/a",
            "reason": "n/a: a non-private learner has no claim to audit",
            "epsilon": AUDIT_EPSILON,
        }
    if quick:
        return {"verdict": "not run", "reason": QUICK_AUDIT, "epsilon": AUDIT_EPSILON}
    if feedback == "oco":
        from dp_experts_env.evaluation.audit_oco import audit_oco_learner as audit
    else:
        from dp_experts_env.evaluation.audit import audit_learner as audit
    report = audit(name, epsilon=AUDIT_EPSILON, params=dict(params))
    return {
        "verdict": "violation" if report.violation else "pass",
        "reason": report.summary(),
        "epsilon": AUDIT_EPSILON,
    }


def _plays(mine: str, env_feedback: str) -> bool:
    return mine == env_feedback or (mine == "any" and env_feedback != "oco")


def applicable_claims(name: str) -> list[tuple[Any, str]]:
    """Every registered claim with ``""`` when it applies to ``name``, else why not."""
    import agents
    from dp_experts_env.bench.runner import learner_feedback
    from dp_experts_env.evaluation.paper_claims import get_claims
    from dp_experts_env.kinds import KINDS

    feedback_of = {spec.env_id: spec.feedback for spec in KINDS.values()}
    mine = learner_feedback(name)
    private = agents.spec(name).private
    out = []
    for claim in get_claims(quick=True):
        roles = [s for s in claim.sweeps if s.key in set(claim.roles())]
        reason = ""
        kinds = sorted({feedback_of.get(s.env_id, "?") for s in roles})
        finite = any(
            p.epsilon is not None and math.isfinite(p.epsilon)
            for s in roles
            for p in (s.quick_points or s.points)
        )
        if not all(_plays(mine, k) for k in kinds):
            reason = f"n/a: its learner plays {'/'.join(kinds)} feedback; this learner plays {mine}"
        elif any(s.custom is not None for s in roles):
            reason = f"n/a: it reads {roles[0].agent}'s internals, another learner cannot stand in"
        elif finite and not private:
            reason = "n/a: it measures a private learner at finite epsilon; this one is non-private"
        out.append((claim, reason))
    return out


def claim_verdicts(
    name: str,
    params: Mapping[str, Any],
    out: str | Path,
    *,
    quick: bool,
    backend: str = "local",
    n_jobs: int | None = None,
    address: str | None = None,
) -> list[dict[str, Any]]:
    """One record per registered claim: its verdict for ``name`` and the reason.

    The claims that apply run as ``reproduce --agent NAME --quick`` (results in ``out``), unless
    ``quick``; the others are ``n/a``.
    """
    from dp_experts_env.evaluation.reproduce import run_claims

    listed = applicable_claims(name)
    records = []
    runnable = [claim for claim, reason in listed if not reason]
    rows = {}
    if runnable and not quick:
        found = run_claims(
            runnable,
            out,
            quick=True,
            backend=backend,
            n_jobs=n_jobs,
            address=address,
            agent=name,
            agent_params=dict(params),
        )
        rows = {r["claim"]: r for r in found}
    for claim, reason in listed:
        if reason:
            records.append(
                {
                    "claim": claim.name,
                    "paper": claim.paper,
                    "source": claim.source,
                    "verdict": "n/a",
                    "reason": reason,
                }
            )
        elif quick:
            records.append(
                {
                    "claim": claim.name,
                    "paper": claim.paper,
                    "source": claim.source,
                    "verdict": "not run",
                    "reason": QUICK_CLAIMS,
                }
            )
        else:
            row = rows[claim.name]
            records.append(
                {
                    "claim": claim.name,
                    "paper": claim.paper,
                    "source": claim.source,
                    "verdict": row["verdict"],
                    "reason": row["reason"],
                }
            )
    return records
