"""Claims of the papers as experiments plus a verdict: the data model and the judge.

A :class:`Claim` is a paper's statement, the :class:`Sweep` s measuring it, the analysis giving
a :class:`Measurement` and a no-learning :class:`Control`; :func:`verdict` is the band test and
:func:`judge` the verdict (docs/reproduce.md, "What a claim is", "Verdicts").
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

# Re-exported: claims and their tests import the analyses from here.
from dp_experts_env.evaluation.claim_analyses import (
    LOCAL_WINDOW,
    Measurement,
    collapse_exponent,
    excess_loglog_slope,
    largest_ratio_over_x,
    local_slopes,
    loglog_slope,
    mean_with_ci,
    power_plus_constant,
    ratio_of_means,
    spread_of_normalised_gain,
    worst_case_loglog_slope,
)

__all__ = [
    "KINDS",
    "REGIME_DROP",
    "UNSTABLE",
    "UNTESTABLE",
    "VERDICTS",
    "LEARNING_FRACTION",
    "Claim",
    "Control",
    "gated_points",
    "Judgement",
    "judge",
    "local_slopes",
    "Measurement",
    "Point",
    "Sweep",
    "verdict",
    "loglog_slope",
    "mean_with_ci",
    "excess_loglog_slope",
    "worst_case_loglog_slope",
    "ratio_of_means",
    "largest_ratio_over_x",
    "power_plus_constant",
    "spread_of_normalised_gain",
    "collapse_exponent",
]

KINDS = ("two_sided", "at_most", "at_least")
VERDICTS = (
    "holds",
    "fails",
    "burn-in",
    "vacuous",
    "inconclusive",
    "not in regime",
    "not private",
    "not specific",
    "untestable at these sizes",
    "unstable",
)
#: A verdict that differs between base seeds (``reproduce``'s default judges three).
UNSTABLE = "unstable"
#: Verdicts of the claims the suite's sizes cannot settle: listed apart from the count.
UNTESTABLE = "untestable at these sizes"
#: A learner at the control's level whose ratio to it falls by less than this across x is
#: ``not in regime`` (not moving toward leaving it), rather than ``burn-in``.
REGIME_DROP = 0.05
#: A learner is "clearly learning" when its mean regret is below this fraction of the control's.
LEARNING_FRACTION = 0.8


@dataclass(frozen=True)
class Point:
    """One point of a sweep: its x value, the env parameters and the epsilon played there."""

    x: float
    env_params: Mapping[str, Any]
    epsilon: float | None = None


@dataclass(frozen=True)
class Sweep:
    """A learner measured at several points (the x axis of one curve of a claim's figure).

    Attributes:
        key: short name, unique within the claim (a folder name and a legend entry).
        agent: registered learner name.
        env_id: registered env id.
        points: the points (full run).
        quick_points: the points of ``--quick`` (default: ``points``).
        agent_params: learner keywords.
        metric: the regret column read (``dynamic_regret``, ``static_regret``, ...).
        seeds: seeds per point (full run); ``quick_seeds`` for ``--quick``.
        custom: ``(sweep, points, seeds) -> rows`` (columns ``x``, ``seed``, ``metric``) for a
            quantity the grid rows do not hold (a learner's switch counter).
        store_as: results folder of a substitute learner (set by :meth:`Claim.with_learner`).
    """

    key: str
    agent: str
    env_id: str
    points: tuple[Point, ...]
    quick_points: tuple[Point, ...] = ()
    agent_params: Mapping[str, Any] = field(default_factory=dict)
    metric: str = "dynamic_regret"
    seeds: int = 16
    quick_seeds: int = 8
    custom: Callable[[Sweep, tuple[Point, ...], int], pd.DataFrame] | None = None
    store_as: str = ""

    @property
    def folder(self) -> str:
        """Name of the sweep's results folders (its key, or where a substitute learner stores)."""
        return self.store_as or self.key

    def chosen(self, quick: bool) -> tuple[tuple[Point, ...], int]:
        """The points and seed count of a full or quick run."""
        if quick:
            return (self.quick_points or self.points), self.quick_seeds
        return self.points, self.seeds


@dataclass(frozen=True)
class Control:
    """The no-learning learner a claim's learner is checked against.

    Attributes:
        agent: registered learner name (``uniform``; ``ogd`` with ``step=0`` on OCO).
        params: its keywords.
        why: one line for the report: why the control cannot learn.
    """

    agent: str
    params: Mapping[str, Any] = field(default_factory=dict)
    why: str = ""


@dataclass(frozen=True)
class Claim:
    """A paper's statement, the experiment that measures it and how to judge it.

    Attributes:
        name: stable identifier (``claims.csv`` row, figure file name, CLI argument).
        paper: authors and title.
        source: theorem / table / corollary.
        statement: the statement in words (what a reader of the paper expects).
        quantity: what is measured, e.g. "log-log slope of dynamic regret in T".
        predicted: the predicted value of ``quantity``.
        tolerance: the band around ``predicted`` within which the claim holds.
        kind: ``"two_sided"``, ``"at_most"`` or ``"at_least"``.
        sweeps: the experiment.
        analyse: ``{sweep key: final rows with an x column} -> Measurement``.
        x_label: the figure's x axis.
        log_x: whether the figure's x axis is logarithmic.
        notes: what a reader needs to interpret the verdict (constants, scale, errata).
        figure: optional ``(rows, ax) -> y label`` drawing the claim's own figure; default:
            mean +- s.e. of every sweep.
        control: the no-learning learner run in the learner's role.
        no_control: why the claim has no control (required when ``control`` is None).
        learning_fraction: "clearly learning" below this fraction of the control's mean
            regret; None: no learning gate (lower bounds).
        learning_at: where the gate is checked: ``"all"`` x or the ``"largest"`` x (a curve
            that starts at the control's level by design).
        learner_sweeps: keys of the sweeps in the learner's role (default :meth:`roles`).
        explicit_bound: ``point -> (paper's explicit bound, trivial bound)``; a bound above the
            trivial one at any point makes the claim ``vacuous``.
        no_privacy_gate: why a claim at a finite epsilon is not privacy-gated; empty: gated.
        specific: for a lower bound, ``rows -> ""`` when its twins show the claimed
            phenomenon, else the reason naming the failing twin (``not specific``).
        untestable: the sizes a claim would need when the suite's cannot settle it.
    """

    name: str
    paper: str
    source: str
    statement: str
    quantity: str
    predicted: float
    tolerance: float
    kind: str
    sweeps: tuple[Sweep, ...]
    analyse: Callable[[Mapping[str, pd.DataFrame]], Measurement]
    x_label: str = "x"
    log_x: bool = True
    notes: str = ""
    figure: Callable[[Mapping[str, pd.DataFrame], Any], str] | None = None
    control: Control | None = None
    no_control: str = ""
    learning_fraction: float | None = LEARNING_FRACTION
    learning_at: str = "all"
    learner_sweeps: tuple[str, ...] = ()
    explicit_bound: Callable[[Point], tuple[float, float]] | None = None
    no_privacy_gate: str = ""
    specific: Callable[[Mapping[str, pd.DataFrame]], str] | None = None
    untestable: str = ""

    @property
    def privacy_gated(self) -> bool:
        """True when a learner sweep runs at a finite epsilon and no reason exempts the claim."""
        if self.no_privacy_gate:
            return False
        return bool(gated_points(self, quick=False) or gated_points(self, quick=True))

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"kind must be one of {KINDS}, got {self.kind!r}")
        keys = [s.key for s in self.sweeps]
        if len(set(keys)) != len(keys):
            raise ValueError(f"claim {self.name!r}: sweep keys must be distinct, got {keys}")
        if self.learning_at not in ("all", "largest"):
            raise ValueError(f"learning_at must be 'all' or 'largest', got {self.learning_at!r}")
        unknown = [k for k in self.learner_sweeps if k not in keys]
        if unknown:
            raise ValueError(f"claim {self.name!r}: learner_sweeps {unknown} are not sweeps")
        if self.control is None and self.sweeps and not self.no_control:
            raise ValueError(
                f"claim {self.name!r}: name a no-learning control, or say in no_control why "
                "the claim has none"
            )

    def roles(self) -> tuple[str, ...]:
        """Keys of the sweeps in the learner's role; default: every sweep of the first's learner."""
        if self.learner_sweeps:
            return self.learner_sweeps
        if not self.sweeps:
            return ()
        first = self.sweeps[0]
        return tuple(
            s.key
            for s in self.sweeps
            if s.agent == first.agent and dict(s.agent_params) == dict(first.agent_params)
        )

    def with_learner(self, agent: str, params: Mapping[str, Any] | None = None) -> Claim:
        """This claim with ``agent`` in the learner's role (every sweep of :meth:`roles`).

        The sweeps keep their keys and store under a ``~agent`` suffix of their own.

        Raises:
            ValueError: for a sweep that reads a learner's internals (a switch counter).
        """
        from dataclasses import replace

        params = dict(params or {})
        roles = set(self.roles())
        sweeps = []
        for s in self.sweeps:
            if s.key in roles:
                if s.custom is not None:
                    raise ValueError(
                        f"claim {self.name!r} reads {s.agent!r}'s internals ({s.metric}); "
                        "another learner cannot take its role"
                    )
                s = replace(
                    s, agent=agent, agent_params=params, store_as=_store_key(s, agent, params)
                )
            sweeps.append(s)
        return replace(self, sweeps=tuple(sweeps))


def gated_points(claim: Claim, *, quick: bool) -> list[tuple[Sweep, Point]]:
    """The (learner sweep, point) pairs at a finite epsilon, custom sweeps left out."""
    roles = set(claim.roles())
    out = []
    for s in claim.sweeps:
        if s.key not in roles or s.custom is not None:
            continue
        for p in s.chosen(quick)[0]:
            if p.epsilon is not None and math.isfinite(p.epsilon):
                out.append((s, p))
    return out


def verdict(claim: Claim, m: Measurement) -> str:
    """``holds`` / ``fails`` / ``inconclusive`` for the measurement's interval (see module)."""
    if not (math.isfinite(m.ci_low) and math.isfinite(m.ci_high)):
        return "inconclusive"
    lo, hi = claim.predicted - claim.tolerance, claim.predicted + claim.tolerance
    if claim.kind == "at_most":
        return "holds" if m.ci_high <= hi else ("fails" if m.ci_low > hi else "inconclusive")
    if claim.kind == "at_least":
        return "holds" if m.ci_low >= lo else ("fails" if m.ci_high < lo else "inconclusive")
    if lo <= m.ci_low and m.ci_high <= hi:
        return "holds"
    if m.ci_high < lo or m.ci_low > hi:
        return "fails"
    return "inconclusive"


def _store_key(sweep: Sweep, agent: str, params: Mapping[str, Any]) -> str:
    import hashlib
    import json

    tag = agent
    if params:
        blob = json.dumps(dict(params), sort_keys=True, default=repr).encode()
        tag += "-" + hashlib.sha1(blob).hexdigest()[:8]
    return f"{sweep.key}~{tag}"


@dataclass(frozen=True)
class Judgement:
    """A verdict and the reason a reader needs (control's level, ratios, local slopes)."""

    verdict: str
    reason: str
    band: str  # the band test alone (holds / fails / inconclusive)


def _distance(claim: Claim, value: float) -> float:
    """How far a value lies outside the claim's band (0 inside)."""
    lo, hi = claim.predicted - claim.tolerance, claim.predicted + claim.tolerance
    if claim.kind == "at_most":
        return max(0.0, value - hi)
    if claim.kind == "at_least":
        return max(0.0, lo - value)
    return max(0.0, lo - value, value - hi)


def _fmt_list(values: Sequence[float]) -> str:
    return "[" + ", ".join(f"{v:.2f}" for v in values) + "]"


def judge(
    claim: Claim,
    m: Measurement,
    control: Measurement | None = None,
    ratios: Mapping[float, float] | None = None,
    bounds: Mapping[float, tuple[float, float]] | None = None,
) -> Judgement:
    """The verdict of a measurement given its control (docs/reproduce.md, "Verdicts").

    Args:
        claim: the claim (band, kind, learning fraction).
        m: the learner's measurement.
        control: the same analysis on the control's rows (None: no control).
        ratios: ``{x: learner's mean regret / the control's}``.
        bounds: ``{x: (paper's explicit bound, trivial bound)}`` where the paper gives one.
    """
    band = verdict(claim, m)
    parts = []
    control_band = None
    if control is not None:
        control_band = verdict(claim, control)
        name = claim.control.agent if claim.control is not None else "control"
        parts.append(
            f"control {name}: {control.value:.3g} [{control.ci_low:.3g}, {control.ci_high:.3g}]"
            f" (band test: {control_band})"
        )
    if ratios:
        parts.append(
            "regret / control's at x = "
            + ", ".join(f"{x:g}: {r:.2f}" for x, r in sorted(ratios.items()))
        )
    if m.local:
        parts.append(f"local slopes (windows of {LOCAL_WINDOW} points) {_fmt_list(m.local)}")
    if bounds:
        parts.append(
            "explicit bound / trivial bound at x = "
            + ", ".join(f"{x:g}: {b / t:.2f}" for x, (b, t) in sorted(bounds.items()))
        )

    def out(v: str, why: str) -> Judgement:
        return Judgement(v, "; ".join([why, *parts]), band)

    loose = sorted(x for x, (b, t) in (bounds or {}).items() if b >= t)
    if loose:
        # Where the theorem says nothing, a fit cannot contradict it.
        return out(
            "vacuous",
            "the paper's explicit bound is above the trivial bound at x = "
            + ", ".join(f"{x:g}" for x in loose),
        )
    fraction = claim.learning_fraction
    if fraction is not None and ratios:
        gated = ratios[max(ratios)] if claim.learning_at == "largest" else max(ratios.values())
        ordered = [ratios[x] for x in sorted(ratios)]
        if (
            gated >= fraction
            and len(ordered) >= 2
            and min(ordered) >= fraction
            and ordered[-1] > ordered[0] - REGIME_DROP
        ):
            # Flat at the control's level: a longer run would not change it.
            return out(
                "not in regime",
                f"the learner has not left the control's level (regret >= {fraction:g} x the "
                f"control's at every x) and is not moving toward leaving it (the ratio falls "
                f"by less than {REGIME_DROP:g} across x): the claim's learner model does not "
                "apply here",
            )
        if gated >= fraction:
            return out(
                "burn-in",
                f"the learner has not left the control's level (regret >= {fraction:g} x the "
                f"control's at {'the largest' if claim.learning_at == 'largest' else 'some'} x)",
            )
    if band == "holds" and control_band == "holds":
        return out("vacuous", "the control passes the same test")
    if band == "fails" and m.local:
        if len(m.local) < 2:
            return out(
                "inconclusive",
                "outside the band, but one local-slope window cannot tell burn-in from failure",
            )
        first, last = _distance(claim, m.local[0]), _distance(claim, m.local[-1])
        if last < first:
            return out("burn-in", "outside the band, local slopes still moving toward it")
    why = {
        "holds": "inside the band",
        "fails": "outside the band",
        "inconclusive": "the interval straddles the band's edge",
    }[band]
    return out(band, why)
