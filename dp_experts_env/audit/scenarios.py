"""The audit's candidate scenarios: neighbouring pairs, derived from what a learner declares.

docs/privacy.md, "Scenarios: pairs, public settings, adversaries".
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dp_experts_env.audit.play import build_learner

__all__ = [
    "GAUSSIAN_AUDIT_DELTA",
    "Scenario",
    "audit_hints",
    "complement_pair",
    "declaration_of",
    "declared_kinds",
    "declares_releases",
    "default_scenarios",
    "derived_scenarios",
    "differing_row",
    "flip_pair",
    "gaussian_tree",
    "generic_scenarios",
    "learner_feedback",
    "make_scenario",
    "rival_pair",
    "swap_pair",
]


@dataclass(frozen=True, eq=False)
class Scenario:
    """A neighbouring pair of games and the public parameters to play them with.

    Attributes:
        label: the scenario in words (pair, changed round, parameters).
        losses: (T, W) protected rows ``z_t`` in [0, 1] (W = N experts, or K arms).
        neighbor: the same with exactly one row replaced.
        params: public hyper-parameters passed to the learner (privacy must hold for all).
        keyed: adaptive adversary (:mod:`~dp_experts_env.audit.play`).
        advice: bandit learners: (N, K) advice (default: the identity, N = K).
        runs: test runs per side if chosen (None: :data:`DEFAULT_RUNS`).
    """

    label: str
    losses: np.ndarray
    neighbor: np.ndarray
    params: Mapping[str, Any] = field(default_factory=dict)
    keyed: bool = False
    advice: np.ndarray | None = None
    runs: int | None = None

    @property
    def changed_round(self) -> int:
        """The index of the row in which the pair differs."""
        return differing_row(self.losses, self.neighbor)

    @property
    def horizon(self) -> int:
        """T."""
        return int(self.losses.shape[0])


def differing_row(losses: np.ndarray, neighbor: np.ndarray) -> int:
    """The one row in which a neighbouring pair differs (ValueError otherwise)."""
    rows = np.flatnonzero(np.any(losses != neighbor, axis=1))
    if len(rows) != 1:
        raise ValueError(
            "losses and neighbor_losses must differ in exactly one row (one round's loss "
            f"vector: event-level neighbours); they differ in {len(rows)} rows"
            + (f" ({rows[:10].tolist()})" if len(rows) else "")
        )
    return int(rows[0])


def rival_pair(
    horizon: int, width: int, row: int, *, target: int = 0, background: float = 0.5
) -> tuple[np.ndarray, np.ndarray]:
    """One candidate gains while all its rivals lose: the worst case of a private selection.

    Row ``row``: target 1 and rivals 0 on the input, the opposite on the neighbour; every other
    row is ``background``.
    """
    x = np.full((horizon, width), float(background))
    x[row] = 0.0
    x[row, target] = 1.0
    xp = x.copy()
    xp[row] = 1.0 - x[row]
    return x, xp


def flip_pair(
    horizon: int, width: int, row: int, *, background: float = 0.5
) -> tuple[np.ndarray, np.ndarray]:
    """Row ``row`` all zeros on the input, all ones on the neighbour (a bandit release's worst)."""
    x = np.full((horizon, width), float(background))
    x[row] = 0.0
    xp = x.copy()
    xp[row] = 1.0
    return x, xp


def complement_pair(
    horizon: int, width: int, row: int, *, seed: int = 12345
) -> tuple[np.ndarray, np.ndarray]:
    """A random public 0/1 sequence and its neighbour with row ``row`` complemented."""
    x = np.random.default_rng(seed).integers(0, 2, size=(horizon, width)).astype(float)
    xp = x.copy()
    xp[row] = 1.0 - xp[row]
    return x, xp


def make_scenario(
    label: str,
    pair: tuple[np.ndarray, np.ndarray],
    params: Mapping[str, Any] | None = None,
    *,
    keyed: bool = False,
    advice: np.ndarray | None = None,
    runs: int | None = None,
) -> Scenario:
    """A :class:`Scenario` labelled with the pair's name, size, changed round and params."""
    x, xp = pair
    shown = ", ".join(
        f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}" for k, v in (params or {}).items()
    )
    n, t = x.shape[1], x.shape[0]
    size = f"K={n}" if advice is not None else f"N={n}"
    where = f"{label}, {size}, T={t}, changed round {differing_row(x, xp)}"
    where += ", keyed to the previous action" if keyed else ""
    where += f"; {shown}" if shown else ""
    return Scenario(where, x, xp, dict(params or {}), keyed=keyed, advice=advice, runs=runs)


def learner_feedback(agent: str) -> str:
    """The registered learner's feedback kind (``full``, ``bandit``, ``oco``, ``any``)."""
    import agents

    return str(agents.spec(agent).feedback)


def declaration_of(agent: str, params: Mapping[str, Any] | None = None) -> Any:
    """The mechanisms ``agent`` declares on a small game, or None.

    Built with N = 4 (bandits: K = 2, N = 2) and T = 8, else N = K = 8 and T = 64, with
    ``params``; None when the learner declares nothing or cannot be built.
    """
    bandit = learner_feedback(agent) == "bandit"
    games = ({"n": 2 if bandit else 4, "t": 8, "k": 2}, {"n": 8, "t": 64, "k": 8})
    for game in games:
        try:
            built = build_learner(agent, 1, 0, game, dict(params or {}))
        except (ValueError, TypeError):
            continue
        return getattr(built, "declaration", None)
    return None


def audit_hints(agent: str) -> Mapping[str, Any]:
    """The learner's declared audit hints (``audit_hints``; see :class:`agents.PrivateAgent`)."""
    import agents

    return dict(getattr(agents.spec(agent).cls, "audit_hints", {}) or {})


def declared_kinds(declaration: Any) -> list[str]:
    """Kinds of the declared leaf mechanisms, in declaration order, without repeats."""
    from dp_experts_env.privacy.declaration import leaves

    return list(dict.fromkeys(leaf.kind for leaf in leaves(declaration)))


def declares_releases(declaration: Any) -> bool:
    """True when a declared mechanism releases noisy values (the audit records them)."""
    from dp_experts_env.privacy.declaration import leaves

    return declaration is not None and any(leaf.releases for leaf in leaves(declaration))


def _opposite_pair(horizon: int, width: int, row: int) -> tuple[np.ndarray, np.ndarray]:
    """Expert 0 leads, then row ``row`` moves a sparse-vector query up (input) or down.

    Two queries moving in opposite directions, the sparse vector's worst case; later rows keep
    every expert at 1/2 so later queries stay near the threshold.
    """
    x = np.full((horizon, width), 0.5)
    x[:row, 0] = 0.0
    x[row] = 0.5
    x[row, 0], x[row, 1] = 1.0, 0.0
    xp = x.copy()
    xp[row, 0], xp[row, 1] = 0.0, 1.0
    return x, xp


def _restart_chain(horizon: int, width: int, row: int) -> tuple[np.ndarray, np.ndarray]:
    """The leader changes every 4 rounds (a chain of detector restarts); ``row`` flips one."""
    x = np.full((horizon, width), 0.5)
    for t in range(horizon):
        x[t, (t // 4) % width] = 0.0
    xp = x.copy()
    xp[row] = 1.0 - x[row]
    return x, xp


def _sampling_scenarios(h: Mapping[str, Any]) -> list[Scenario]:
    # One data-dependent resample: nearly tight, evidence close to the claim (large runs).
    base = dict(h.get("params", {}))
    top = float(h.get("p_top", 0.45))
    runs = h.get("runs")
    batches = tuple(h.get("batch_sizes", (None,)))
    out = []
    for n, p in ((32, top), (16, 0.3), (4, 0.2), (16, top), (4, 0.45)):
        for b in batches:
            params: dict[str, Any] = {"p": p, **base}
            t = 3
            if b is not None:
                params["batch_size"] = b
                t = 2 * b + 1
            out.append(make_scenario("rival", rival_pair(t, n, 0), params, runs=runs))
    keyed: dict[str, Any] = {"p": 0.3, **base}
    if batches != (None,):
        keyed["batch_size"] = 1
    out.append(make_scenario("rival", rival_pair(4, 8, 1, target=1), keyed, keyed=True, runs=runs))
    return out


#: the public delta at which a Gaussian tree's claim is also audited (events an audit reaches)
GAUSSIAN_AUDIT_DELTA = 1e-2


def gaussian_tree(declaration: Any) -> bool:
    """True when the declaration holds a Gaussian tree with delta > 0 (audited at delta 1e-2)."""
    from dp_experts_env.privacy.declaration import leaves

    return declaration is not None and any(
        leaf.kind == "tree" and getattr(leaf, "noise", "laplace") == "gaussian" and leaf.delta > 0
        for leaf in leaves(declaration)
    )


def _tree_scenarios(h: Mapping[str, Any], gaussian: bool = False) -> list[Scenario]:
    # T = 2^m + 1: the first loss enters all m + 1 tree nodes released before the last play.
    p, x = dict(h.get("params", {})), {**h.get("params", {}), **h.get("exposed", {})}
    cap = int(h.get("max_horizon", 64))
    d = {**p, "delta": GAUSSIAN_AUDIT_DELTA}
    out = [make_scenario("rival", rival_pair(t, 2, 0), d) for t in (9, 5)] if gaussian else []
    out += [
        make_scenario("rival", rival_pair(5, 2, 0), p),
        make_scenario("rival", rival_pair(9, 2, 0), p),
        make_scenario("rival", rival_pair(5, 16, 0), x),
    ]
    out += [
        make_scenario("rival, tree fed all T items", rival_pair(t, 2, 0), p)
        for t in (17, 33)
        if t <= cap
    ]
    return out


def _release_scenarios(h: Mapping[str, Any], bandit: bool) -> list[Scenario]:
    p, x = dict(h.get("params", {})), {**h.get("params", {}), **h.get("exposed", {})}
    cap = int(h.get("max_horizon", 64))
    if bandit:
        out = []
        if h.get("agree"):
            # Importance weights 1/Q(arm 0) near the bound the noise is calibrated to.
            agree = np.array([[1.0, 0.0], [1.0, 0.0]])
            out += [
                make_scenario(
                    "flip, all experts on arm 0",
                    flip_pair(2, 2, 0),
                    {**x, **v},
                    advice=agree,
                    runs=h.get("runs"),
                )
                for v in h.get("variants", [{}])
            ]
            return out + [make_scenario("flip", flip_pair(2, 2, 0), p, advice=np.eye(2))]
        return out + [
            make_scenario("flip", flip_pair(2, 2, 0), p, advice=np.eye(2)),
            make_scenario("flip", flip_pair(3, 2, 0), p, advice=np.eye(2)),
            make_scenario("flip", flip_pair(3, 4, 0), p, advice=np.eye(4)),
        ]
    return [
        make_scenario("rival", rival_pair(3, 2, 0), p),
        make_scenario("rival", rival_pair(3, 4, 0), p),
        make_scenario("rival", rival_pair(min(64, cap), 16, 0), x),
        make_scenario("rival, long game", rival_pair(min(32, cap), 4, 0), p),
    ]


def _selection_scenarios(h: Mapping[str, Any]) -> list[Scenario]:
    p = dict(h.get("params", {}))
    out = [
        make_scenario("rival", rival_pair(4, 16, 0), p),
        make_scenario("rival", rival_pair(4, 8, 0), p),
        make_scenario("rival", rival_pair(4, 32, 0), p),
        make_scenario("rival before an update", rival_pair(8, 8, 2), p),
        make_scenario("rival in block 1", rival_pair(5, 16, 1), p),
    ]
    out += [make_scenario("rival", rival_pair(4, 16, 0), {**p, **v}) for v in h.get("variants", [])]
    return out


def _sparse_vector_scenarios(h: Mapping[str, Any]) -> list[Scenario]:
    x = {**h.get("params", {}), **h.get("exposed", {})}
    cap = int(h.get("max_horizon", 64))
    long = min(32, cap)
    return [
        make_scenario("rival", rival_pair(4, 8, 0), x),
        make_scenario("rival before an update", rival_pair(8, 8, 2), x),
        make_scenario("opposite-direction queries", _opposite_pair(min(16, cap), 4, 4), x),
        make_scenario("restart chain", _restart_chain(long, 4, long // 2), x),
    ]


def derived_scenarios(agent: str, declaration: Any) -> list[Scenario]:
    """Scenarios derived from the declared mechanisms (and the learner's ``audit_hints``).

    Each declared kind brings the pairs where it is most exposed (docs/privacy.md, "Scenarios");
    no declaration gives none.
    """
    if declaration is None:
        return []
    h = audit_hints(agent)
    bandit = learner_feedback(agent) == "bandit"
    builders: dict[str, Callable[[], list[Scenario]]] = {
        "sampling": lambda: _sampling_scenarios(h),
        "tree": lambda: _tree_scenarios(h, gaussian_tree(declaration)),
        "laplace": lambda: _release_scenarios(h, bandit),
        "noisy-min": lambda: _selection_scenarios(h),
        "exponential": lambda: _selection_scenarios(h),
        "sparse-vector": lambda: _sparse_vector_scenarios(h),
    }
    out: list[Scenario] = []
    seen: set[str] = set()
    for kind in declared_kinds(declaration):
        for sc in builders.get(kind, list)():
            if sc.label not in seen:
                seen.add(sc.label)
                out.append(sc)
    return out


def swap_pair(horizon: int, width: int, row: int) -> tuple[np.ndarray, np.ndarray]:
    """Expert 0 leads every round; in ``row`` of the neighbour experts 0 and 1 swap losses."""
    x = np.full((horizon, width), 0.5)
    x[:, 0] = 0.25
    xp = x.copy()
    xp[row, 0], xp[row, 1] = x[row, 1], x[row, 0]
    return x, xp


def _long_generic(bandit: bool) -> list[Scenario]:
    """The longer search for a learner declaring nothing: swap and rival pairs, T = 16, 32, 64."""
    if bandit:
        eye = np.eye(2)
        return [
            make_scenario("flip, long game", flip_pair(t, 2, r), advice=eye)
            for t in (16, 32, 64)
            for r in (0, t // 2)
        ]
    out = []
    for t in (16, 32, 64):
        out += [
            make_scenario("swap, long game", swap_pair(t, 4, 0)),
            make_scenario("rival, long game", rival_pair(t, 2, 0)),
            make_scenario("swap, long game, middle", swap_pair(t, 4, t // 2)),
        ]
    return out


def generic_scenarios(agent: str, *, undeclared: bool = False) -> list[Scenario]:
    """Candidates for every learner (the long games too when ``undeclared``)."""
    import agents

    bandit = agents.spec(agent).feedback == "bandit"
    longer = _long_generic(bandit) if undeclared else []
    if bandit:
        eye = np.eye(2)
        return [
            make_scenario("flip", flip_pair(4, 2, 0), advice=eye),
            make_scenario("flip, middle", flip_pair(8, 2, 4), advice=eye),
            make_scenario("rival", rival_pair(8, 2, 3), advice=eye),
            *longer,
        ]
    # Expert 0 leads every round; in round 7 of the neighbour it alone loses (a leader flip).
    lead = np.full((16, 8), 0.5)
    lead[:, 0] = 0.0
    flipped = lead.copy()
    flipped[7] = 0.0
    flipped[7, 0] = 1.0
    return [
        make_scenario("rival", rival_pair(4, 2, 0)),
        make_scenario("rival", rival_pair(4, 8, 0)),
        make_scenario("rival before an update", rival_pair(8, 8, 6)),
        make_scenario("leader flip after a long identical run", (lead, flipped)),
        make_scenario("rival, last used round", rival_pair(8, 4, 6)),
        make_scenario("complement of a random row", complement_pair(8, 4, 4)),
        *longer,
    ]


def default_scenarios(
    agent: str, *, epsilon: float = 1.0, mode: str | None = None
) -> list[Scenario]:
    """The default search of ``dp-experts audit`` for ``agent``: derived, then generic.

    Derived candidates come first so a short budget still tries them; a learner that declares
    nothing gets the generic ones with long games added.
    """
    params: dict[str, Any] = {"epsilon": epsilon}
    if mode is not None:
        params["mode"] = mode
    declared = declaration_of(agent, params)
    generic = generic_scenarios(agent, undeclared=declared is None)
    return derived_scenarios(agent, declared) + generic
