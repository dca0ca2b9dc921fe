"""Gates a claim's verdict passes before ``holds``: privacy, specificity, testability.

:func:`apply_gates` gives ``not private`` (:func:`privacy_gate`), ``not specific`` and
``untestable at these sizes``; :func:`combine_seeds` and :func:`holm_verdicts` read verdicts
across base seeds and claims (docs/reproduce.md, "Gates an outside learner cannot game").
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from dp_experts_env.evaluation.claim_intervals import holm
from dp_experts_env.evaluation.claims import (
    UNSTABLE,
    UNTESTABLE,
    Claim,
    Judgement,
    gated_points,
)

__all__ = [
    "AUDIT_RUNS",
    "AUDIT_SELECTION_RUNS",
    "POINT_HORIZON",
    "POINT_WIDTH",
    "Gate",
    "apply_gates",
    "combine_seeds",
    "holm_verdicts",
    "audit_once",
    "certificate_check",
    "privacy_gate",
]

#: Test runs per side of the gate's audit (tests/test_audit_zoo.py's noise-removed mutants).
AUDIT_RUNS = 1_000
#: Selection runs per side of the gate's audit.
AUDIT_SELECTION_RUNS = 400
#: The point scenario's game is capped at this horizon and width (a short audit).
POINT_HORIZON = 512
POINT_WIDTH = 10
#: Relative slack of ``epsilon_certified <= epsilon`` (a bisection's last bit is not a leak).
_EPS_SLACK = 1e-9
#: Verdicts an untestable claim's label replaces (a holds or a fails is still reported).
_UNSETTLED = frozenset({"vacuous", "burn-in", "not in regime", "inconclusive"})

_AUDITS: dict[str, tuple[bool, str]] = {}


@dataclass(frozen=True)
class Gate:
    """The privacy gate's outcome: ``passed`` and the reason a reader needs."""

    passed: bool
    reason: str


def certificate_check(claim: Claim, rows: Mapping[str, pd.DataFrame], *, quick: bool) -> Gate:
    """Every gated point's rows certified at an epsilon <= the point's.

    Args:
        claim: the claim as run (its learner in the role).
        rows: final rows per sweep key (with ``x``, ``certified``, ``epsilon_certified``).
        quick: which points ran.
    """
    worst: list[str] = []
    for sweep, point in gated_points(claim, quick=quick):
        frame = rows.get(sweep.key)
        if frame is None or "epsilon_certified" not in frame.columns:
            return Gate(False, f"no certificate in the rows of sweep {sweep.key!r}")
        at = frame[frame["x"] == point.x]
        if at.empty:
            return Gate(False, f"sweep {sweep.key!r} has no rows at x = {point.x:g}")
        if not bool(at["certified"].astype(bool).all()):
            return Gate(
                False,
                f"{sweep.agent}'s claim at x = {point.x:g} is not certified (it knowingly "
                "departs from a correct accounting)",
            )
        certified = float(at["epsilon_certified"].astype(float).max())
        limit = float(point.epsilon) * (1 + _EPS_SLACK)
        if not certified <= limit:
            shown = "inf (no privacy claim)" if math.isinf(certified) else f"{certified:.4g}"
            worst.append(f"x = {point.x:g}: certified epsilon {shown} > {point.epsilon:.4g}")
    if worst:
        return Gate(False, "certificate above the point's epsilon at " + "; ".join(worst[:3]))
    return Gate(True, "certified at every point")


def _point_scenario(agent: str, params: Mapping[str, Any], game: tuple[int, int]) -> list:
    """A rival pair on the point's own game (``game``: T and N, capped), changed in round 0.

    A leak that starts late (a warm-up before noiseless play) shows only on a longer game than
    the audit's own. Full-information learners only.
    """
    import agents
    from dp_experts_env.evaluation.audit import Scenario, rival_pair

    if agents.spec(agent).feedback != "full":
        return []
    horizon, width = game
    x, xp = rival_pair(horizon, width, 0)
    label = f"rival on the claim's point (T = {horizon}, N = {width}), changed round 0"
    return [Scenario(label, x, xp, dict(params))]


def audit_once(
    agent: str,
    params: Mapping[str, Any],
    epsilon: float,
    *,
    game: tuple[int, int] | None = None,
    seed: int = 0,
) -> tuple[bool, str]:
    """``(no violation, one line)`` of the gate's short audit of ``agent`` at ``epsilon``.

    The candidates: the audit's first default scenario and, with ``game = (T, N)``, a rival
    pair on that game. Memoised per (learner class, keywords, epsilon, game, seed).
    """
    import agents

    spec = agents.spec(agent)
    if game is not None:  # capped first, so that points of one learner share one audit
        game = (min(int(game[0]), POINT_HORIZON), max(2, min(int(game[1]), POINT_WIDTH)))
    if not spec.private:
        return False, f"{agent} is registered as non-private: no privacy claim to certify"
    key = json.dumps(
        [agent, f"{spec.cls.__module__}.{spec.cls.__qualname__}", id(spec.cls),
         dict(params), repr(float(epsilon)), game, seed],
        sort_keys=True, default=repr,
    )  # fmt: skip
    if key in _AUDITS:
        return _AUDITS[key]
    kw = {"runs": AUDIT_RUNS, "selection_runs": AUDIT_SELECTION_RUNS, "pairs": 1, "seed": seed}
    try:
        if getattr(spec, "feedback", "full") == "oco":
            from dp_experts_env.evaluation.audit_oco import audit_oco_learner

            report = audit_oco_learner(agent, epsilon=epsilon, params=dict(params), **kw)
        else:
            from dp_experts_env.evaluation.audit import audit_learner, default_scenarios

            scenarios = default_scenarios(agent, epsilon=epsilon)[:1]
            if game is not None:
                scenarios = _point_scenario(agent, params, game) + scenarios
            kw["pairs"] = len(scenarios)
            report = audit_learner(
                agent,
                epsilon=epsilon,
                params=dict(params),
                scenarios=scenarios,
                part_tests=False,
                **kw,
            )
    except (ValueError, TypeError) as err:
        result = (False, f"the audit could not play {agent} at epsilon {epsilon:g}: {err}")
    else:
        first = report.verdict.split(";")[0]
        result = (
            not report.violation,
            f"audit of {agent} at epsilon {epsilon:g} ({AUDIT_RUNS} runs per side): {first}",
        )
    _AUDITS[key] = result
    return result


def privacy_gate(
    claim: Claim, rows: Mapping[str, pd.DataFrame], *, quick: bool, seed: int = 0
) -> Gate | None:
    """The privacy gate of a gated claim (None when the claim is not gated)."""
    if not claim.privacy_gated:
        return None
    points = gated_points(claim, quick=quick)
    if not points:
        return None
    cert = certificate_check(claim, rows, quick=quick)
    if not cert.passed:
        return cert
    sweep, point = min(points, key=lambda sp: float(sp[1].epsilon))
    env = point.env_params
    game = None
    if "horizon" in env:
        game = (int(env["horizon"]), int(env.get("n_experts", POINT_WIDTH)))
    ok, line = audit_once(
        sweep.agent, sweep.agent_params, float(point.epsilon), game=game, seed=seed
    )
    if not ok:
        return Gate(False, line)
    return Gate(True, f"{cert.reason}; {line}")


def apply_gates(
    claim: Claim,
    judgement: Judgement,
    rows: Mapping[str, pd.DataFrame],
    *,
    quick: bool,
    seed: int = 0,
) -> tuple[Judgement, str]:
    """The verdict after the gates, and the privacy gate's line for claims.csv ("" if ungated).

    Args:
        claim: the claim as run.
        judgement: :func:`~dp_experts_env.evaluation.claims.judge`'s verdict.
        rows: the learner's final rows per sweep key.
        quick: which points ran.
        seed: the audit's seed.
    """
    gate = privacy_gate(claim, rows, quick=quick, seed=seed)
    privacy = "" if gate is None else ("passed: " if gate.passed else "failed: ") + gate.reason
    measured = f"the measurement alone: {judgement.verdict} ({judgement.reason})"
    if gate is not None and not gate.passed:
        return Judgement("not private", f"{gate.reason}; {measured}", judgement.band), privacy
    if judgement.verdict == "holds" and claim.specific is not None:
        why = claim.specific(rows)
        if why:
            return Judgement("not specific", f"{why}; {measured}", judgement.band), privacy
    if claim.untestable and judgement.verdict in _UNSETTLED:
        return (
            Judgement(UNTESTABLE, f"{claim.untestable}; {measured}", judgement.band),
            privacy,
        )
    return judgement, privacy


def combine_seeds(base_seeds: Sequence[int], judgements: Sequence[Judgement]) -> Judgement:
    """One verdict from several base seeds' verdicts: theirs if equal, else ``unstable``."""
    first = judgements[0]
    verdicts = [j.verdict for j in judgements]
    if len(set(verdicts)) == 1:
        if len(judgements) == 1:
            return first
        return Judgement(
            first.verdict,
            f"the same at base seeds {', '.join(map(str, base_seeds))}; {first.reason}",
            first.band,
        )
    shown = ", ".join(f"{k}: {v}" for k, v in zip(base_seeds, verdicts, strict=True))
    return Judgement(
        UNSTABLE,
        f"the verdict depends on the base seed ({shown}); base seed {base_seeds[0]}: "
        f"{first.reason}",
        first.band,
    )


def holm_verdicts(results: Sequence[dict[str, Any]]) -> None:
    """Fill ``holm_verdict``: the verdicts read together (Holm's step-down, in place).

    Over every row but the untestable ones, a ``holds`` or ``fails`` whose ``p_value`` Holm's
    step-down does not reject at 0.025 becomes ``inconclusive``.
    """
    family = [r for r in results if r["verdict"] != UNTESTABLE]
    kept = holm([float(r["p_value"]) for r in family])
    for r, ok in zip(family, kept, strict=True):
        decided = r["verdict"] in ("holds", "fails")
        r["holm_verdict"] = r["verdict"] if ok or not decided else "inconclusive"
    for r in results:
        r.setdefault("holm_verdict", r["verdict"])
        if r["verdict"] == UNTESTABLE:
            r["holm_verdict"] = UNTESTABLE
