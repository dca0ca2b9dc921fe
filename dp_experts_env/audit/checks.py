"""The audit's checks beside the event test: noise freshness and provenance, parts, trees, queries.

docs/privacy.md, "Noise freshness" to "svt-restart's query sensitivity, by brute force".
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from dp_experts_env.audit.bounds import AuditResult, epsilon_lower_bound
from dp_experts_env.audit.events import release_families
from dp_experts_env.audit.play import (
    ScenarioRefused,
    build_learner,
    check_advice,
    noise_params,
    play_game,
)
from dp_experts_env.audit.scenarios import (
    Scenario,
    declaration_of,
    declared_kinds,
    learner_feedback,
    make_scenario,
)
from dp_experts_env.audit.selection import evaluate_event, select_event
from dp_experts_env.privacy.declaration import fresh_draws, scalar_draws
from dp_experts_env.privacy.noise import (
    LaterCallsScaled,
    RecordingBackend,
    ScaledBackend,
    get_backend,
)

__all__ = [
    "BACKEND_KINDS",
    "PART_CHUNK",
    "TreeCheck",
    "claim_share",
    "noise_freshness",
    "noise_provenance",
    "part_level_test",
    "part_test_plan",
    "provenance_game",
    "query_sensitivity_check",
    "tree_counter_test",
]


def noise_freshness(
    agent: str, scenario: Scenario, *, n_runs: int = 64, seed: int = 0, multiplier: float = 1.0
) -> str:
    """Check that no Laplace draw reappears across runs or rounds; "" when all are fresh.

    Side 0 is played with every ``add_laplace`` call recorded (at most 256). A noise vector repeated
    across runs or calls in more than 1/8 of the runs is reported, and so is a learner drawing fewer
    Laplace coordinates than :func:`~dp_experts_env.privacy.declaration.fresh_draws` promises.
    """
    params, _ = noise_params(agent, scenario.params, multiplier, record=False)
    base = params.pop("noise", scenario.params.get("noise", "fast"))
    recorder = RecordingBackend(get_backend(base), max_calls=256)
    params["noise"] = recorder
    horizon, width = scenario.losses.shape
    advice = check_advice(scenario.advice, horizon, width)
    n_experts = advice.shape[-2] if advice is not None else width
    try:
        game = {"n": n_experts, "t": horizon, "k": width}
        built = build_learner(agent, n_runs, seed, game, params)
    except (ValueError, TypeError):
        return ""  # the learner takes no noise backend: nothing to check here
    if built.feedback == "bandit" and advice is None:
        advice = np.eye(width)
    play_game(
        built, scenario.losses, advice, n_runs, keyed=scenario.keyed, recorder=recorder, changed=-1
    )
    declared = getattr(built, "declaration", None)
    promised = fresh_draws(declared) if declared is not None else 0
    if recorder.drawn < promised:
        return (
            f"the declaration promises {promised} fresh Laplace coordinates per run in this "
            f"game, the learner drew {recorder.drawn} (noise reused or never drawn)"
        )
    scalars = scalar_draws(declared) if declared is not None else 0
    if recorder.drawn_scalar < scalars:
        return (
            f"the declared sparse vector promises {scalars} fresh query and threshold draws per "
            f"run in this game, the learner drew {recorder.drawn_scalar} (noise kept or dropped)"
        )
    limit = n_runs // 8
    seen: dict[tuple[int, bytes], int] = {}
    repeats_in_run = 0
    for c, (exact, noisy) in enumerate(recorder.releases):
        noise = (noisy - exact).reshape(noisy.shape[0], -1)
        if noise.shape[0] != n_runs or noise.shape[1] == 0:
            continue
        distinct = np.unique(noise, axis=0).shape[0]
        if n_runs - distinct > limit:
            return (
                f"call {c} of add_laplace drew the same noise in {n_runs - distinct + 1} of "
                f"{n_runs} runs (distinct seeds)"
            )
        for b in range(n_runs):
            key = (b, noise[b].tobytes())
            if key in seen:
                repeats_in_run += 1
            else:
                seen[key] = c
    if repeats_in_run > limit:
        return (
            f"{repeats_in_run} Laplace draws repeat an earlier draw of the same run (noise "
            f"reused across rounds) in {n_runs} runs"
        )
    return ""


#: declared kinds whose noise the learner draws through its noise backend
BACKEND_KINDS = frozenset({"laplace", "tree", "noisy-min", "exponential", "sparse-vector"})


def provenance_game(agent: str, params: Mapping[str, Any]) -> Scenario:
    """A game on which any noisy learner's actions depend on its noise: random losses, T = 24.

    N = 4 experts (bandit learners: K = 2 arms, identity advice) from a fixed seed.
    """
    width = 2 if learner_feedback(agent) == "bandit" else 4
    x = np.random.default_rng(12345).random((24, width))
    xp = x.copy()
    xp[0] = 1.0 - x[0]
    return make_scenario("random losses", (x, xp), params)


def _same_actions_without_noise(
    agent: str, scenario: Scenario, n_runs: int, seed: int, multiplier: float, keep: int = 0
) -> bool | None:
    """True when side 0 plays identically with the backend's noise x0; None: not buildable.

    With ``keep``, the first ``keep`` backend calls keep their noise (:class:`LaterCallsScaled`).
    """
    horizon, width = scenario.losses.shape
    advice = check_advice(scenario.advice, horizon, width)
    n_experts = advice.shape[-2] if advice is not None else width
    plays = []
    for factor in (multiplier, 0.0):
        params = dict(scenario.params)
        base = ScaledBackend(get_backend(params.pop("noise", "fast")), multiplier)
        params["noise"] = (
            base if factor == multiplier else LaterCallsScaled(base, 0.0, keep) if keep
            else ScaledBackend(base, 0.0)
        )  # fmt: skip
        try:
            game = {"n": n_experts, "t": horizon, "k": width}
            built = build_learner(agent, n_runs, seed, game, params)
        except (ValueError, TypeError):
            return None  # the learner takes no noise backend (or not these parameters)
        adv = np.eye(width) if built.feedback == "bandit" and advice is None else advice
        actions, _ = play_game(
            built, scenario.losses, adv, n_runs, keyed=scenario.keyed, recorder=None, changed=-1
        )
        plays.append(actions)
    return bool(np.array_equal(plays[0], plays[1]))


def noise_provenance(
    agent: str,
    scenario: Scenario,
    *,
    params: Mapping[str, Any] | None = None,
    n_runs: int = 256,
    seed: int = 0,
    multiplier: float = 1.0,
) -> str:
    """Check that the learner's outputs come from its backend's noise; "" when they do.

    For a learner declaring backend noise (:data:`BACKEND_KINDS`), side 0 is played twice with
    the same seeds, as built and with the backend's noise x0 (:class:`ScaledBackend`), confirmed
    on :func:`provenance_game`; identical actions mean the noise comes from elsewhere. Then the
    first call kept and later ones x0 (:class:`LaterCallsScaled`) catches cached noise. Learners
    declaring no backend noise and noise-removed mutants are not checked.
    """
    declared = declaration_of(agent, scenario.params)
    if declared is None or multiplier == 0.0 or not (set(declared_kinds(declared)) & BACKEND_KINDS):
        return ""
    games = (scenario, provenance_game(agent, dict(params or {})))
    if all(_same_actions_without_noise(agent, g, n_runs, seed, multiplier) for g in games):
        return (
            f"the declaration promises noise through the backend, but the learner played the "
            f"same actions in all {n_runs} runs of two games with the backend's noise removed "
            "(noise drawn outside the backend, e.g. from the learner's own generator)"
        )
    # Cached noise: with every call after the first noiseless, a fresh-noise learner changes.
    if _same_actions_without_noise(agent, games[1], n_runs, seed, multiplier, keep=1):
        return (
            f"the learner played the same actions in all {n_runs} runs of a {games[1].horizon}"
            "-round game when every backend draw after the first carried no noise: the "
            "noise it uses is not the noise it draws each time (cached noise, reused from "
            "the first draw?)"
        )
    return ""


def claim_share(agent: str, scenario: Scenario) -> float:
    """The largest composed part's share of the claim in ``scenario`` (1: not split)."""
    from dp_experts_env.privacy.declaration import largest_share

    declared = declaration_of(agent, scenario.params)
    return largest_share(declared) if declared is not None else 1.0


def part_test_plan(agent: str, scenario: Scenario, alpha: float) -> Any:
    """What a test of one declared part against its own epsilon would need (None: no such part).

    Computed from the built learner's declaration, never from its name.
    """
    from dp_experts_env.privacy.part_power import part_test

    declared = declaration_of(agent, scenario.params)
    return part_test(declared, alpha=alpha) if declared is not None else None


#: Runs per side in one learner built for a part-level test (memory stays flat at any total).
PART_CHUNK = 25_000


def _detector_of(built: Any, found: list[Any], part: Any) -> Any:
    """The recorded AboveThreshold instance that runs ``part`` (None: none matches)."""
    for inst in reversed(found):
        sigma = np.asarray(inst.sigma, dtype=np.float64)
        if (
            inst.num_runs == built.num_envs
            and inst.max_tops == part.positives
            and np.all(sigma == part.threshold_scale)
        ):
            return inst
    return None


def part_level_test(
    agent: str,
    scenario: Scenario,
    *,
    seed: int = 0,
    multiplier: float = 1.0,
    alpha: float = 1e-3,
) -> Any:
    """Test a split claim's sparse-vector part on the learner's own instance (None: no such part).

    From the declaration of the learner built with ``scenario``'s parameters (two experts, else
    the scenario's shape): the part with the cheapest planned event
    (:func:`~dp_experts_env.privacy.part_power.sparse_vector_part_test`) is run on the learner's
    own AboveThreshold (its backend and a mutant's ``multiplier``), ``2 x``
    :data:`PART_CHUNK` runs per build, with the queries placed by the test.

    Returns:
        The :class:`~dp_experts_env.privacy.part_power.PartCheck`, or None (no split claim, no
        readable part, or no matching instance).
    """
    from dp_experts_env.privacy.mechanisms import recording_sparse_vectors
    from dp_experts_env.privacy.part_power import (
        PartCheck,
        part_runs,
        run_sparse_vector_part,
        sparse_vector_part_test,
        sparse_vector_parts,
    )

    began = time.process_time()
    params, _ = noise_params(agent, scenario.params, multiplier, record=False)
    horizon, width = scenario.losses.shape

    def build(runs: int, at: int) -> tuple[Any, list[Any]]:
        with recording_sparse_vectors() as found:
            try:
                built = build_learner(agent, runs, at, {"n": 2, "t": horizon, "k": 2}, params)
            except (ValueError, TypeError):
                game = {"n": width, "t": horizon, "k": width}
                built = build_learner(agent, runs, at, game, params)
        return built, found

    built, found = build(2, seed)
    declared = getattr(built, "declaration", None)
    if declared is None:
        return None
    plans = [(p, sparse_vector_part_test(p, alpha=alpha)) for p in sparse_vector_parts(declared)]
    plans = [(p, t) for p, t in plans if part_runs(t) and _detector_of(built, found, p)]
    if not plans:
        return None
    part, plan = min(plans, key=lambda pt: pt[1].runs)
    n_total = part_runs(plan)
    counts = [0, 0]
    done = 0
    while done < n_total:
        n = min(PART_CHUNK, n_total - done)
        built, found = build(2 * n, seed + 2 * done)
        check = run_sparse_vector_part(_detector_of(built, found, part), plan, alpha=alpha)
        counts[0] += check.counts[0]
        counts[1] += check.counts[1]
        done += n
    bound = float(epsilon_lower_bound(counts[0], counts[1], n_total, alpha=alpha))
    return PartCheck(
        plan, (counts[0], counts[1]), n_total, bound, alpha, time.process_time() - began
    )


@dataclass(frozen=True)
class TreeCheck:
    """:func:`tree_counter_test`: the learner's own tree counter audited on its releases.

    Attributes:
        horizon: the learner's T.
        items: the items its counter holds (T or T - 1).
        levels: the counter's levels.
        result: the test of the nodes holding item 1.
    """

    horizon: int
    items: int
    levels: int
    result: AuditResult

    @property
    def violation(self) -> bool:
        """True when the nodes show more than the counter's epsilon."""
        return not self.result.passed

    def describe(self) -> str:
        """One line for reports."""
        r = self.result
        word = "VIOLATION" if self.violation else "no violation"
        return (
            f"tree counter at T = {self.horizon} ({self.items} items, {self.levels} levels): "
            f"{word}, the nodes holding item 1 show epsilon >= {r.epsilon_lower_bound:.3f} "
            f"against the counter's {r.claimed_epsilon:g} ({r.n_heldout} runs per side)"
        )


def _tree_of(agent: Any) -> Any:
    from dp_experts_env.privacy.mechanisms import TreeCounter

    for value in vars(agent).values():
        if isinstance(value, TreeCounter):
            return value
    return None


def _tree_releases(agent: str, params: Mapping[str, Any], horizon: int, side: int, n: int,
                   seed: int, multiplier: float) -> tuple[np.ndarray, Any]:
    """Feed the learner's own counter its items; (n, 2, 1 + D) releases of item 1's nodes."""
    params, _ = noise_params(agent, params, multiplier, False)
    built = build_learner(agent, n, seed, {"n": 2, "t": horizon, "k": 2}, params)
    tree = _tree_of(built)
    if tree is None:
        raise ScenarioRefused(f"{agent} holds no TreeCounter")
    change = np.full(tree.dim, tree.l1_sensitivity / tree.dim)
    exact_sum = np.zeros(tree.dim)
    exact, noisy = [], []
    for t in range(1, tree.horizon + 1):
        item = change if (t == 1 and side == 1) else np.zeros(tree.dim)
        exact_sum = exact_sum + item
        released = np.array(tree.add(np.broadcast_to(item, (n, tree.dim))))
        if t & (t - 1) == 0:  # t = 2^l: the released sum is the one node of level l
            exact.append(np.broadcast_to(exact_sum, (n, tree.dim)))
            noisy.append(released)
    key = np.zeros((n, 2, 1))
    values = np.stack([np.concatenate(exact, axis=1), np.concatenate(noisy, axis=1)], axis=1)
    return np.concatenate([key, values], axis=2), tree


def tree_counter_test(
    agent: str,
    *,
    params: Mapping[str, Any] | None = None,
    horizons: Sequence[int] = (3, 5),
    runs: int = 20_000,
    selection_runs: int = 4_000,
    alpha: float = 1e-3,
    seed: int = 0,
    multiplier: float = 1.0,
) -> TreeCheck | None:
    """Part-level test of a learner's binary-tree counter, on the learner's own instance.

    At each T (3 and 2^m + 1, where a level count one short shows), item 1 moves by the counter's
    L1 sensitivity and the nodes holding it are tested against the counter's own epsilon. Returns
    the strongest check, or None when the learner holds no counter.
    """
    params = {"epsilon": 1.0, **dict(params or {})}
    worst = None
    for i, horizon in enumerate(horizons):
        base = seed + 4 * i * (runs + selection_runs)
        try:
            sel = [
                _tree_releases(agent, params, horizon, s, selection_runs,
                               base + s * selection_runs, multiplier)[0]
                for s in (0, 1)
            ]  # fmt: skip
            test_seed = base + 2 * selection_runs
            test = [
                _tree_releases(agent, params, horizon, s, runs, test_seed + s * runs, multiplier)
                for s in (0, 1)
            ]
        except (ScenarioRefused, ValueError, TypeError):
            continue
        tree = test[0][1]
        eps = float(tree.epsilon)
        fams = release_families(sel[0][: selection_runs // 2], sel[1][: selection_runs // 2])
        chosen = select_event(fams, sel[0][selection_runs // 2 :], sel[1][selection_runs // 2 :],
                              n_test=runs, alpha=alpha, delta=0.0)  # fmt: skip
        result = evaluate_event(chosen, test[0][0], test[1][0], alpha=alpha, claimed_epsilon=eps,
                                claimed_delta=0.0, n_runs=runs)  # fmt: skip
        check = TreeCheck(horizon, int(tree.horizon), int(tree.levels), result)
        if worst is None or check.result.epsilon_lower_bound > worst.result.epsilon_lower_bound:
            worst = check
    return worst


def _above_threshold_of(agent: Any) -> Any:
    from dp_experts_env.privacy.mechanisms import AboveThreshold

    for value in vars(agent).values():
        if isinstance(value, AboveThreshold):
            return value
    return None


def query_sensitivity_check(
    agent: str,
    *,
    params: Mapping[str, Any] | None = None,
    horizon: int = 4,
    width: int = 2,
    values: Sequence[float] = (0.0, 1.0),
    seed: int = 0,
) -> str:
    """Brute force: the largest change of a sparse vector's query against its declaration.

    Every loss sequence over ``values`` and every one-row neighbour is played on the learner's own
    detector, same seed; while the histories agree, ``|q - q'|`` must not exceed the declared
    sensitivity. Returns "" when it holds (or nothing is declared), else the worst pair.
    """
    from dp_experts_env.privacy.declaration import leaves

    params = {"epsilon": 1.0, **dict(params or {})}
    declared = declaration_of(agent, params)
    parts = [m for m in leaves(declared) if m.kind == "sparse-vector"] if declared else []
    if not parts:
        return ""
    limit = max(float(m.sensitivity) for m in parts)
    rows = np.array(np.meshgrid(*[values] * width, indexing="ij")).reshape(width, -1).T
    seqs = rows[np.stack(np.meshgrid(*[np.arange(len(rows))] * horizon, indexing="ij"),
                         axis=-1).reshape(-1, horizon)]  # fmt: skip
    pairs = [(i, t, r) for i in range(len(seqs)) for t in range(horizon)
             for r in range(len(rows)) if not np.array_equal(rows[r], seqs[i, t])]  # fmt: skip
    x = seqs[[p[0] for p in pairs]]
    xp = x.copy()
    xp[np.arange(len(pairs)), [p[1] for p in pairs]] = rows[[p[2] for p in pairs]]
    n = len(pairs)
    runs = []
    for side in (x, xp):
        built = build_learner(agent, n, seed, {"n": width, "t": horizon, "k": width}, params)
        detector = _above_threshold_of(built)
        if detector is None:
            return ""
        seen: list[np.ndarray] = []
        test = detector.test

        def watched(queries: Any, test: Any = test, seen: list = seen) -> Any:
            seen.append(np.array(queries, dtype=np.float64))
            return test(queries)

        detector.test = watched
        actions, obs = [], np.zeros((n, width))
        for t in range(horizon):
            actions.append(np.asarray(built.act(obs)))
            obs = side[:, t]
        runs.append((np.stack(actions, axis=1), seen, detector))
    (a, qa, _), (b, qb, _) = runs
    worst, where = 0.0, ""
    for k, (q, qq) in enumerate(zip(qa, qb, strict=True)):
        same = np.all(a[:, : k + 2] == b[:, : k + 2], axis=1)  # actions up to the next round
        gap = np.where(same & np.isfinite(q) & np.isfinite(qq) & (q > -1e299), np.abs(q - qq), 0)
        j = int(np.argmax(gap))
        if gap[j] > worst:
            worst, where = float(gap[j]), f"query {k + 1}, pair {pairs[j]}"
    if worst > limit * (1 + 1e-9):
        return (
            f"a query moves by {worst:.6g} between neighbouring windows ({where}; brute force "
            f"over {n} pairs, T = {horizon}, N = {width}), above the declared sensitivity "
            f"{limit:g}"
        )
    return ""
