"""The audit of a learner: :func:`audit_learner` (every private learner) and :func:`audit_agent`.

The search scores scenarios on selection runs, then counts the best (scenario, event) once on
fresh test runs, so the bound holds at ``1 - alpha`` (docs/privacy.md, "Method").
"""

from __future__ import annotations

import dataclasses
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from dp_experts_env._validation import check_loss_array
from dp_experts_env.audit.bounds import INCONCLUSIVE_FACTOR, AuditResult
from dp_experts_env.audit.checks import (
    claim_share,
    noise_freshness,
    noise_provenance,
    part_level_test,
    part_test_plan,
    query_sensitivity_check,
    tree_counter_test,
)
from dp_experts_env.audit.events import release_families, sequence_families
from dp_experts_env.audit.play import ScenarioRefused, play_scenario
from dp_experts_env.audit.report import UNDECLARED, AuditReport, Candidate
from dp_experts_env.audit.scenarios import (
    Scenario,
    audit_hints,
    declaration_of,
    declared_kinds,
    declares_releases,
    derived_scenarios,
    generic_scenarios,
)
from dp_experts_env.audit.search import (
    TEST_SEED_OFFSET,
    first_difference,
    path_check,
    search_args,
    search_scenarios,
)
from dp_experts_env.audit.selection import check_audit_args, evaluate_event, select_event

__all__ = ["DEFAULT_RUNS", "audit_agent", "audit_learner"]

#: test runs per side when neither the caller nor the chosen scenario says otherwise
DEFAULT_RUNS = 100_000
#: Laplace releases kept per run after the changed row (tree nodes holding the first of 2^16


def audit_agent(
    agent: str | Callable[[int, int], Any],
    losses: Any,
    neighbor_losses: Any,
    *,
    n_runs: int = 20_000,
    alpha: float = 1e-3,
    seed: int = 0,
    advice: Any = None,
    keyed: bool = False,
    multiplier: float = 1.0,
    **agent_params: Any,
) -> AuditResult:
    """Audit a learner's privacy claim on one pair of neighbouring loss sequences.

    Each side plays ``n_runs`` runs (seeds ``2 k n`` and ``(2k + 1) n`` for ``seed = k``); half
    select the event (:func:`~dp_experts_env.audit.events.sequence_families`), half test it.

    Args:
        agent: a registered agent name (``agents.make(name, n_experts=N, horizon=T,
            num_envs=n_runs, seed=..., **agent_params)``) or a factory ``f(num_envs, seed)``.
        losses: (T, N) losses in [0, 1] (bandit agents: (T, K) losses of the arms).
        neighbor_losses: the same with exactly one row changed.
        n_runs: runs per side (>= 200).
        alpha: error probability of the lower bound.
        seed: first agent seed.
        advice: bandit agents only: (N, K) or (T, N, K) advice; default the identity (N = K).
        keyed: rows are rotated onto the previous action (an adaptive adversary).
        multiplier: noise factor of an audit mutant (1: the learner as built).
        **agent_params: passed to ``agents.make`` (e.g. ``epsilon=1.0``).

    Returns:
        An :class:`AuditResult` for the agent's ``privacy`` claim.
    """
    n, alpha, seed = check_audit_args(n_runs, alpha, seed)
    x = check_loss_array("losses", losses, ndim=2)
    xp = check_loss_array("neighbor_losses", neighbor_losses, ndim=2, shape=x.shape)
    scenario = Scenario("given pair", x, xp, agent_params, keyed=keyed, advice=advice)
    row = scenario.changed_round
    sides = [
        play_scenario(
            agent, scenario, side=s, n_runs=n, seed=(2 * seed + s) * n, multiplier=multiplier
        )
        for s in (0, 1)
    ]
    claim = sides[0].claim
    try:
        _check_adversary(scenario, claim)
    except ScenarioRefused as err:
        raise ValueError(str(err)) from None
    k = int(scenario.losses.shape[1])
    half = n // 2
    a, b = sides[0].actions, sides[1].actions
    fams = sequence_families(a[:half], b[:half], k=k, first=row + 1)
    selection = select_event(
        fams, a[:half], b[:half], n_test=n - half, alpha=alpha, delta=float(claim.delta)
    )
    return evaluate_event(
        selection,
        a[half:],
        b[half:],
        alpha=alpha,
        claimed_epsilon=float(claim.epsilon),
        claimed_delta=float(claim.delta),
        n_runs=n,
    )


def _check_adversary(scenario: Scenario, claim: Any) -> None:
    """A keyed (adaptive) pair is outside a claim that holds against oblivious adversaries."""
    if scenario.keyed and getattr(claim, "holds_against", "adaptive") == "oblivious":
        raise ScenarioRefused(
            f"{scenario.label}: a keyed pair is an adaptive adversary, and the claim holds "
            "against oblivious adversaries only"
        )


def _score_scenario(
    agent: str,
    scenario: Scenario,
    *,
    n_sel: int,
    n_test: int,
    seed: int,
    multiplier: float,
    record: bool,
    alpha: float,
) -> tuple[list[Candidate], Any]:
    began = time.perf_counter()
    sides = [
        play_scenario(
            agent,
            scenario,
            side=s,
            n_runs=n_sel,
            seed=seed + s * n_sel,
            multiplier=multiplier,
            record=record,
            refusable=True,
        )
        for s in (0, 1)
    ]
    claim = sides[0].claim
    _check_adversary(scenario, claim)
    delta = float(claim.delta)
    # Families fitted on one half of the selection runs, scored on the other (else noise wins).
    fit, score = slice(0, n_sel // 2), slice(n_sel // 2, n_sel)
    a, b = sides[0].actions, sides[1].actions
    k = int(scenario.losses.shape[1])
    first = scenario.changed_round + 1
    out = []
    fams = sequence_families(a[fit], b[fit], k=k, first=first)
    sel = select_event(fams, a[score], b[score], n_test=n_test, alpha=alpha, delta=delta)
    seconds = time.perf_counter() - began
    out.append(Candidate(scenario, "actions", sel, seconds, float(claim.epsilon)))
    if record and sides[0].releases is not None:
        ra, rb = sides[0].releases, sides[1].releases
        fams = release_families(ra[fit], rb[fit])
        rel = select_event(fams, ra[score], rb[score], n_test=n_test, alpha=alpha, delta=delta)
        out.append(Candidate(scenario, "releases", rel, seconds, float(claim.epsilon)))
    return out, claim


def audit_learner(
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
    releases: bool | None = None,
    part_tests: bool = True,
) -> AuditReport:
    """Search scenarios for the strongest evidence against a learner's claim, then test it once.

    Args:
        agent: a registered private learner; OCO learners go to
            :func:`~dp_experts_env.audit.oco.audit_oco_learner` (arguments up to ``seed``).
        epsilon: the epsilon the learner is built with.
        params: extra learner parameters, applied to every scenario and winning over its own
            (scenarios the learner then refuses are skipped and reported).
        multiplier: noise factor of an audit mutant (0.5 halves the noise, 0 removes it; the
            claim is unchanged).
        scenarios: candidate scenarios, in search order (default :func:`default_scenarios`).
        runs: test runs per side (>= 200; default the chosen scenario's, else
            :data:`DEFAULT_RUNS`).
        selection_runs: runs per side for scoring each scenario (>= 200; default 4,000, or
            :data:`~dp_experts_env.audit.oco.DEFAULT_OCO_SELECTION_RUNS`).
        pairs: search at most this many scenarios (default all).
        time_budget: seconds for the search (the test always runs).
        alpha: error probability of the final bound.
        seed: audit seed; selection and test runs use disjoint seed ranges.
        releases: audit recorded Laplace releases too (default: when the declaration releases).
        part_tests: run :func:`part_level_test` for a split claim (unless already violated) and
            :func:`tree_counter_test` for a declared tree counter.

    Returns:
        An :class:`AuditReport`; ``report.violation`` is the verdict.
    """
    import agents

    entry = agents.spec(agent)  # unknown names raise, listing the learners
    if not entry.private:
        raise ValueError(f"agent {agent!r} is non-private, so it has no claim to audit")
    if entry.feedback == "oco":
        from dp_experts_env.audit.oco import audit_oco_learner

        return audit_oco_learner(
            agent, epsilon=epsilon, params=params, multiplier=multiplier, scenarios=scenarios,
            runs=runs, selection_runs=selection_runs, pairs=pairs, time_budget=time_budget,
            alpha=alpha, seed=seed,
        )  # fmt: skip
    args = search_args(
        epsilon=epsilon, params=params, multiplier=multiplier, runs=runs, seed=seed,
        selection_runs=4_000 if selection_runs is None else selection_runs, alpha=alpha,
        time_budget=time_budget,
    )  # fmt: skip
    user, mult, alpha = args.user, args.multiplier, args.alpha
    declared = declaration_of(agent, user)
    if declared is None:
        warnings.warn(UNDECLARED.format(agent=agent), UserWarning, stacklevel=2)
    if scenarios is None:
        scenarios = derived_scenarios(agent, declared) + generic_scenarios(
            agent, undeclared=declared is None
        )
    scenarios, total = args.with_params(scenarios, pairs)
    record = declares_releases(declared) if releases is None else bool(releases)
    base = args.base
    began = time.perf_counter()

    def score(i: int, scenario: Scenario) -> tuple[list[Candidate], Any]:
        return _score_scenario(
            agent,
            scenario,
            n_sel=args.selection_runs,
            n_test=args.test_runs(scenario, DEFAULT_RUNS),
            seed=base + 2 * i * args.selection_runs,
            multiplier=mult,
            record=record,
            alpha=alpha,
        )

    found = search_scenarios(agent, scenarios, score, budget=args.budget, began=began)
    best = found[2]
    n_test = args.test_runs(best.scenario, DEFAULT_RUNS)
    test_seed = base + TEST_SEED_OFFSET

    def test_sides(**how: bool) -> list[Any]:  # both sides' test runs (act, or block=True)
        return [
            play_scenario(agent, best.scenario, side=s, n_runs=n_test,
                          seed=test_seed + s * n_test, multiplier=mult, **how)
            for s in (0, 1)
        ]  # fmt: skip

    sides = test_sides(record=best.view == "releases")
    claim = sides[0].claim
    stale = noise_freshness(agent, best.scenario, seed=test_seed + 2 * n_test, multiplier=mult)
    # Under the hints' settings: at defaults a learner may not use its noise in 24 rounds.
    exposed = {**audit_hints(agent).get("params", {}), **user}
    foreign = noise_provenance(
        agent, best.scenario, params=exposed, seed=test_seed + 2 * n_test, multiplier=mult
    )
    view = (lambda o: o.releases) if best.view == "releases" else (lambda o: o.actions)
    share = claim_share(agent, best.scenario)
    result = args.count(best.selection, view(sides[0]), view(sides[1]), claim, n_test, share=share)
    if result.inconclusive and INCONCLUSIVE_FACTOR * result.share <= 1.0:
        # A split claim: the verdict names what a test of one part would need instead.
        result = dataclasses.replace(result, part=part_test_plan(agent, best.scenario, alpha))
    paths, differ = path_check(agent, user)
    block_result = None
    if not best.scenario.keyed and _has_block(agent):
        # The test runs replayed through the block entry point (seeds unchanged), event counted too.
        block_sides = test_sides(block=True)
        differ = differ or first_difference(sides, block_sides)
    if not best.scenario.keyed and _has_block(agent) and best.view == "actions":
        block_result = args.count(
            best.selection, block_sides[0].actions, block_sides[1].actions, claim, n_test,
            share=share,
        )  # fmt: skip
    tree_check = None
    if part_tests and declared is not None and "tree" in declared_kinds(declared):
        tree_check = tree_counter_test(
            agent, params=user, runs=min(n_test, 20_000), seed=base + TEST_SEED_OFFSET // 4,
            multiplier=mult, alpha=alpha,
        )  # fmt: skip
    query_check = ""
    if declared is not None and "sparse-vector" in declared_kinds(declared):
        query_check = query_sensitivity_check(agent, params=user)
    checked = None
    if part_tests and result.passed and not stale and not foreign:
        checked = part_level_test(
            agent,
            best.scenario,
            seed=base + TEST_SEED_OFFSET // 2,
            multiplier=mult,
            alpha=alpha,
        )
    return args.report(
        agent,
        found,
        result=result,
        claim=claim,
        n_test=n_test,
        total=total,
        declared=declared,
        began=began,
        stale_noise=stale,
        foreign_noise=foreign,
        part_check=checked,
        paths=paths,
        paths_differ=differ,
        block_result=block_result,
        tree_check=tree_check,
        query_check=query_check,
    )


def _has_block(agent: str) -> bool:
    import agents
    from dp_experts_env.block_entry import block_entry

    entry = agents.spec(agent)
    name = "play_bandit_block" if entry.feedback == "bandit" else "play_block"
    return block_entry(entry.cls, name) is not None
