"""The audit of continuous-action (OCO) learners: their scenarios, views and path check.

The plan of :func:`~dp_experts_env.audit.learner.audit_learner` on gradient pairs, with the
views of :mod:`~dp_experts_env.audit.oco_statistics` (docs/privacy.md, "Continuous actions").
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from dp_experts_env._validation import check_float
from dp_experts_env.audit.events import families_for
from dp_experts_env.audit.oco_statistics import (
    OCOAuditResult,
    audit_oco_paths,
    check_gradient_pair,
    encode_points,
)
from dp_experts_env.audit.play import ScenarioRefused
from dp_experts_env.audit.report import AuditReport, Candidate
from dp_experts_env.audit.scenarios import GAUSSIAN_AUDIT_DELTA, Scenario
from dp_experts_env.audit.search import (
    TEST_SEED_OFFSET,
    first_difference,
    path_check,
    search_args,
    search_scenarios,
)
from dp_experts_env.audit.selection import check_audit_args, select_event
from dp_experts_env.evaluation.paths import BLOCKS, block_method


def OCOScenario(  # noqa: N802 - the former class's name, kept as its constructor
    label: str,
    losses: np.ndarray,
    neighbor: np.ndarray,
    params: Mapping[str, Any] | None = None,
    runs: int | None = None,
) -> Scenario:
    """The OCO audit's scenario in the former class's argument order (``runs`` fifth)."""
    return Scenario(label, losses, neighbor, dict(params or {}), runs=runs)

__all__ = [
    "DEFAULT_OCO_RUNS",
    "DEFAULT_OCO_SELECTION_RUNS",
    "GAUSSIAN_AUDIT_DELTA",
    "OCOScenario",
    "audit_oco_agent",
    "audit_oco_learner",
    "default_oco_scenarios",
    "derived_oco_scenarios",
    "fed_pair",
    "first_round_pair",
    "oco_declaration_of",
    "sign_pair",
]

#: test runs per side when neither the caller nor the chosen scenario says otherwise
DEFAULT_OCO_RUNS = 100_000
#: selection runs per side and scenario by default (OCO games here are short and cheap)
DEFAULT_OCO_SELECTION_RUNS = 20_000


def first_round_pair(
    horizon: int, dim: int = 1, grad: float = 1.0
) -> tuple[np.ndarray, np.ndarray]:
    """``g_1 = +G e_1`` on the input, ``-G e_1`` on the neighbour, zero gradients afterwards."""
    x = np.zeros((horizon, dim))
    x[0, 0] = grad
    xp = x.copy()
    xp[0, 0] = -grad
    return x, xp


def sign_pair(horizon: int, dim: int, grad: float = 1.0, *, seed: int = 12345):
    """Random gradients ``+-G/sqrt(d)`` per coordinate; the neighbour negates row ``T // 2``."""
    signs = np.random.default_rng(seed).integers(0, 2, size=(horizon, dim)).astype(float)
    x = (2.0 * signs - 1.0) * grad / math.sqrt(dim)
    xp = x.copy()
    xp[horizon // 2] *= -1.0
    return x, xp


def oco_declaration_of(agent: str, params: Mapping[str, Any] | None = None) -> Any:
    """The mechanisms an OCO learner declares at d = 1, T = 8 and ``params``, or None."""
    try:
        built = _build_oco_agent(agent, 1, 0, 8, 1, dict(params or {}))
    except (ValueError, TypeError):
        return None
    return getattr(built, "declaration", None)


def _first(t: int, why: str, g: float, params: Mapping[str, Any] | None = None) -> Scenario:
    shown = "; " + ", ".join(f"{k}={v:g}" for k, v in (params or {}).items()) if params else ""
    return Scenario(
        f"first-round +-G, d=1, T={t} ({why}){shown}",
        *first_round_pair(t, 1, g),
        dict(params or {}),
    )


def fed_pair(horizon: int, grad: float = 1.0, *, seed: int = 12345) -> tuple[np.ndarray, ...]:
    """One dimension, a gradient ``+-G`` every round (random signs); the neighbour negates row 0."""
    x, _ = sign_pair(horizon, 1, grad, seed=seed)
    xp = x.copy()
    xp[0] *= -1.0
    return x, xp


def derived_oco_scenarios(declaration: Any, *, grad_bound: float = 1.0) -> list[Scenario]:
    """Scenarios derived from an OCO learner's declared mechanisms (none without one).

    A tree: first-round pairs at T = 3, 5, 2, then :func:`fed_pair` at T = 17 and 33 (Gaussian
    trees first at ``GAUSSIAN_AUDIT_DELTA``); lazy sampling: first-round pairs at T = 2, 3, 4, 8,
    then long games at T = 16 and 32.
    """
    from dp_experts_env.privacy.declaration import leaves

    if declaration is None:
        return []
    g = check_float("grad_bound", grad_bound, minimum=0.0, min_inclusive=False)
    out: list[Scenario] = []
    for leaf in leaves(declaration):
        if leaf.kind == "tree":
            if getattr(leaf, "noise", "laplace") == "gaussian" and leaf.delta > 0:
                d = {"delta": GAUSSIAN_AUDIT_DELTA}
                out += [
                    _first(3, "g_1 in both nodes read later", g, d),
                    _first(5, "g_1 in the nodes read at rounds 2, 3, 5", g, d),
                ]
            out += [
                _first(3, "g_1 lies in both tree nodes read by later plays", g),
                _first(5, "g_1 lies in the three nodes read at rounds 2, 3 and 5", g),
                _first(2, "one node read", g),
            ]
            out += [
                Scenario(f"tree fed all T items, d=1, T={t}, row 0 negated", *fed_pair(t, g))
                for t in (17, 33)
            ]
        elif leaf.kind == "sampling":
            out += [
                _first(2, "one coin and one fresh Gibbs sample", g),
                _first(3, "two coins", g),
                _first(4, "three coins", g),
                _first(8, "a longer path", g),
            ]
            out += [
                Scenario(f"long game, d=1, T={t}, row 0 negated", *fed_pair(t, g))
                for t in (16, 32)
            ]
    seen: set[str] = set()
    return [s for s in out if not (s.label in seen or seen.add(s.label))]


def default_oco_scenarios(
    agent: str, *, grad_bound: float = 1.0, params: Mapping[str, Any] | None = None
) -> list[Scenario]:
    """The default search of an OCO learner: derived from its declaration, then generic.

    The generic pair: random signs, d = 4, T = 8, row 4 negated. A learner that declares nothing
    gets first-round pairs at T = 2, 3, 4 and the generic one.
    """
    g = check_float("grad_bound", grad_bound, minimum=0.0, min_inclusive=False)
    declared = oco_declaration_of(agent, params)
    out = derived_oco_scenarios(declared, grad_bound=g)
    if not out:
        out = [_first(t, "generic", g) for t in (2, 3, 4)]
    out.append(Scenario("random signs, d=4, T=8, row 4 negated", *sign_pair(8, 4, g)))
    return out


def _play(
    agent: str,
    scenario: Scenario,
    side: int,
    n: int,
    seed: int,
    params: Mapping[str, Any],
    *,
    block: bool = False,
) -> tuple[np.ndarray, Any]:
    """(n, T, d) points of one side of a scenario (``block``: by ``play_block``), the learner."""
    data = scenario.losses if side == 0 else scenario.neighbor
    horizon, dim = data.shape
    try:
        built = _build_oco_agent(agent, n, seed, horizon, dim, dict(params))
    except (ValueError, TypeError) as err:
        raise ScenarioRefused(f"{scenario.label}: {err}") from err
    return (_play_blocks if block else _play_points)(built, data, n), built


def _play_blocks(built: Any, data: np.ndarray, n: int) -> np.ndarray:
    """(n, T, d) points of ``play_block`` on the (T, d) gradients: block k sees rows t-1.."""
    horizon, dim = data.shape
    points = np.empty((n, horizon, dim))
    t, i = 0, 0
    while t < horizon:
        k = min(BLOCKS[i % len(BLOCKS)], horizon - t)
        i += 1
        obs = np.empty((k, n, dim))
        obs[0] = data[t - 1] if t else 0.0
        obs[1:] = data[t : t + k - 1, None, :]
        chosen = np.asarray(built.play_block(obs), dtype=np.float64).reshape(k, n, dim)
        points[:, t : t + k] = chosen.transpose(1, 0, 2)
        t += k
    return points


def _play_points(built: Any, data: np.ndarray, n: int) -> np.ndarray:
    """(n, T, d) points a learner of ``n`` runs plays on the (T, d) gradients ``data``."""
    horizon, dim = data.shape
    obs = np.zeros((n, dim))
    points = np.empty((n, horizon, dim))
    for t in range(horizon):
        points[:, t] = np.asarray(built.act(obs)).reshape(n, dim)
        obs = np.broadcast_to(data[t], (n, dim)).copy()
    return points


def _views(scenario: Scenario, paths: list[np.ndarray], built: Any) -> dict[str, tuple]:
    """Each view's (input, neighbour) data, its event kind and family options."""
    x, xp = scenario.losses, scenario.neighbor
    row = scenario.changed_round
    seq = [encode_points(p, x[row] - xp[row])[:, row:] for p in paths]
    out = {"sequence": (seq[0], seq[1], "sequence", {"k": 4, "offset": row})}
    density = getattr(built, "path_log_likelihood", None)
    if density is not None and not getattr(built, "leader_only", False):
        with np.errstate(invalid="ignore"):
            llr = [np.nan_to_num(density(p, x) - density(p, xp))[:, None] for p in paths]
        out["likelihood ratio"] = (llr[0], llr[1], "real", {})
    return out


def audit_oco_learner(
    agent: str,
    *,
    epsilon: float = 1.0,
    params: Mapping[str, Any] | None = None,
    multiplier: float = 1.0,
    scenarios: Sequence[Scenario] | None = None,
    runs: int | None = None,
    selection_runs: int | None = None,
    pairs: int | None = None,
    time_budget: float = 120.0,
    alpha: float = 1e-3,
    seed: int = 0,
) -> AuditReport:
    """:func:`~dp_experts_env.audit.learner.audit_learner` for a private OCO learner.

    The same arguments up to ``seed`` (``multiplier`` sets the learner's audit-only
    ``noise_multiplier``; ``runs`` and ``selection_runs`` default to :data:`DEFAULT_OCO_RUNS` and
    :data:`DEFAULT_OCO_SELECTION_RUNS`), the scenarios of :func:`default_oco_scenarios`, and the
    views ``"sequence"`` and ``"likelihood ratio"``.

    Returns:
        An :class:`~dp_experts_env.audit.report.AuditReport`; ``report.violation`` is the verdict.
    """
    import agents

    entry = agents.spec(agent)  # unknown names raise, listing the learners
    if not entry.private or entry.feedback != "oco":
        raise ValueError(f"agent {agent!r} is not a private OCO learner")
    args = search_args(
        epsilon=epsilon, params=params, multiplier=multiplier, runs=runs, seed=seed,
        selection_runs=DEFAULT_OCO_SELECTION_RUNS if selection_runs is None else selection_runs,
        alpha=alpha, time_budget=time_budget,
    )  # fmt: skip
    user, mult, alpha = args.user, args.multiplier, args.alpha
    if mult != 1.0:
        if "noise_multiplier" in user:
            raise ValueError(
                "give the mutant's noise factor once: multiplier or noise_multiplier, not both"
            )
        user["noise_multiplier"] = mult
    declared = oco_declaration_of(agent, {k: v for k, v in user.items() if k != "noise_multiplier"})
    if scenarios is None:
        scenarios = default_oco_scenarios(
            agent,
            grad_bound=float(user.get("grad_bound", 1.0)),
            params={k: v for k, v in user.items() if k != "noise_multiplier"},
        )
    scenarios, total = args.with_params(scenarios, pairs)
    base, n_sel = args.base, args.selection_runs
    began = time.perf_counter()

    def score(i: int, scenario: Scenario) -> tuple[list[Candidate], Any]:
        start = time.perf_counter()
        played = [
            _play(agent, scenario, s, n_sel, base + (2 * i + s) * n_sel, scenario.params)
            for s in (0, 1)
        ]
        claim = played[0][1].privacy
        n_test = args.test_runs(scenario, DEFAULT_OCO_RUNS)
        # Families are fitted on one half of the selection runs and scored on the other.
        fit, held = slice(0, n_sel // 2), slice(n_sel // 2, n_sel)
        views = _views(scenario, [played[0][0], played[1][0]], played[0][1])
        found = []
        for view, (a, b, kind, info) in views.items():
            fams = families_for(kind, a[fit], b[fit], **info)
            sel = select_event(
                fams, a[held], b[held], n_test=n_test, alpha=alpha, delta=float(claim.delta)
            )
            seconds = time.perf_counter() - start
            found.append(Candidate(scenario, view, sel, seconds, float(claim.epsilon)))
        return found, claim

    found = search_scenarios(agent, scenarios, score, budget=args.budget, began=began)
    best = found[2]
    chosen: Scenario = best.scenario  # type: ignore[assignment]
    n_test = args.test_runs(chosen, DEFAULT_OCO_RUNS)
    test_seed = base + TEST_SEED_OFFSET
    played = [
        _play(agent, chosen, s, n_test, test_seed + s * n_test, chosen.params) for s in (0, 1)
    ]
    claim = played[0][1].privacy
    a, b, _, _ = _views(chosen, [played[0][0], played[1][0]], played[0][1])[best.view]
    result = args.count(best.selection, a, b, claim, n_test)
    if best.view == "likelihood ratio":
        result = replace(result, event=result.event.replace("output", "log-likelihood ratio"))
    # The path check, and the test runs replayed through the block entry point (same seeds).
    paths, differ = path_check(agent, user)
    block_result = None
    if block_method(played[0][1]) is not None:
        block = [
            _play(agent, chosen, s, n_test, test_seed + s * n_test, chosen.params, block=True)
            for s in (0, 1)
        ]
        differ = differ or first_difference([p for p, _ in played], [p for p, _ in block])
        a, b, _, _ = _views(chosen, [block[0][0], block[1][0]], block[0][1])[best.view]
        block_result = args.count(best.selection, a, b, claim, n_test)
    return args.report(
        agent,
        found,
        result=result,
        claim=claim,
        n_test=n_test,
        total=total,
        declared=declared,
        began=began,
        paths=paths,
        paths_differ=differ,
        block_result=block_result,
    )


def _build_oco_agent(agent: Any, n: int, seed: int, horizon: int, dim: int, params: dict) -> Any:
    if isinstance(agent, str):
        import agents  # the evaluation layer may import learners

        return agents.make(agent, dim=dim, horizon=horizon, num_envs=n, seed=seed, **params)
    if params:
        raise TypeError("agent parameters are only accepted with a registered agent name")
    if not callable(agent):
        raise TypeError(f"agent must be a name or a factory f(num_envs, seed), got {agent!r}")
    return agent(n, seed)


def audit_oco_agent(
    agent: Any,
    gradients: Any,
    neighbor_gradients: Any,
    *,
    n_runs: int = 20_000,
    alpha: float = 1e-3,
    seed: int = 0,
    direction: Any = None,
    threshold: float = 0.0,
    likelihood: bool = True,
    **agent_params: Any,
) -> OCOAuditResult:
    """Audit an OCO learner's claim on two gradient sequences differing in one round.

    Args:
        agent: a registered OCO learner or a factory ``f(num_envs, seed)``.
        gradients: (T, d) gradients fed as observations (round t's agent sees row t - 1).
        neighbor_gradients: the same with exactly one row changed.
        n_runs: runs per side (>= 200); sides use agent seeds ``2 k n`` and ``(2k + 1) n``.
        alpha: error probability of the lower bound (split between the two reductions).
        seed: first agent seed.
        direction: the half-space normal (default: the difference of the two differing rows).
        threshold: the half-space offset.
        likelihood: also audit likelihood-ratio events (learners with ``path_log_likelihood``).
        **agent_params: passed to ``agents.make`` with a registered name (e.g. ``epsilon=1.0``).

    Returns:
        The :class:`~dp_experts_env.audit.oco_statistics.OCOAuditResult`.
    """
    n, alpha, seed = check_audit_args(n_runs, alpha, seed)
    x = np.asarray(gradients, dtype=np.float64)
    xp = np.asarray(neighbor_gradients, dtype=np.float64)
    (horizon, dim), _, _ = check_gradient_pair(x, xp, direction)
    check_float("threshold", threshold)
    paths, first = [], None
    for data, start in ((x, 2 * seed * n), (xp, (2 * seed + 1) * n)):
        ag = _build_oco_agent(agent, n, start, horizon, dim, dict(agent_params))
        paths.append(_play_points(ag, data, n))
        first = first or ag
    claim = first.privacy
    density = getattr(first, "path_log_likelihood", None) if likelihood else None
    if density is not None and getattr(first, "leader_only", False):
        density = None  # a deterministic path has no density
    return audit_oco_paths(
        paths[0],
        paths[1],
        x,
        xp,
        claimed_epsilon=float(claim.epsilon),
        claimed_delta=float(claim.delta),
        density=density,
        alpha=alpha,
        direction=direction,
        threshold=threshold,
    )
