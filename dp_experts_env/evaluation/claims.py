"""Claims of the papers as experiments plus a verdict: the data model and the analyses.

A :class:`Claim` names a paper's statement (a rate exponent, a ratio, a flat line), the
experiment that measures it (one or more :class:`Sweep` s, each a series of points played on the
grid runner, so it is cached per (cell, seed), resumable and runs on any backend), the analysis
that turns the rows into a :class:`Measurement` with a confidence interval, and a
:class:`Control`: a learner that learns nothing, run in the learner's role in the same sweep on
the same loss streams. :func:`judge` gives one of :data:`VERDICTS`:

* ``holds``: the interval lies in the predicted band (see the kinds below), the learner is in the
  theorem's regime (clearly learning: its mean regret below ``learning_fraction`` of the
  control's) and the control does not pass the same test;
* ``fails``: the interval lies outside the band while the learner is in the regime and its local
  slopes (fits over 3 consecutive points) are not moving toward the prediction;
* ``burn-in``: the learner has not left the control's level, or it fails while its local slopes
  still move toward the prediction (the horizon is too short, not the theorem wrong);
* ``vacuous``: the learner passes but so does the control (the test could not have failed), or the
  paper's explicit bound is above the trivial bound at a measured point (the fit runs where the
  theorem says nothing);
* ``inconclusive``: the interval straddles the band's edge, or a failure cannot be told from
  burn-in (fewer than two local-slope windows, e.g. three points in quick mode);
* ``not in regime``: the learner never leaves the control's level and is not moving toward
  leaving it (its regret / the control's does not fall across x): the theorem's learner model
  does not apply (a static learner on a shifting env), so running longer would not help.

The gates of :mod:`dp_experts_env.evaluation.claim_gates` come after: ``not private`` (a claim
whose statement involves epsilon, for a learner without a certificate at each point or whose
short audit finds a violation), ``not specific`` (a lower bound whose twin shows the phenomenon
is not the claimed one) and ``untestable at these sizes`` (a claim the suite's sizes cannot
settle, reported apart from the count).

The band test of the interval against ``predicted +- tolerance`` (:func:`verdict`):

* ``"two_sided"``: ``holds`` when the whole interval lies within ``predicted +- tolerance``,
  ``fails`` when it lies wholly outside, ``inconclusive`` otherwise;
* ``"at_most"`` (an upper bound, e.g. a rate exponent that may be beaten): ``holds`` when the
  upper end is ``<= predicted + tolerance``, ``fails`` when the lower end is above it;
* ``"at_least"``: the mirror image.

Slopes are least-squares fits (``scipy.stats.linregress``) of log mean against log x. Means
and slopes (plain, and above a baseline) have t intervals at 95%
(:mod:`~dp_experts_env.evaluation.claim_intervals`: the delta method with Welch-Satterthwaite
degrees of freedom for slopes; coverage simulated in the tests); the other analyses (ratios,
spreads, the collapse exponent, a power plus a constant) a bootstrap over seeds (seeds resampled
independently at every x, 2,000 resamples, percentile interval at 95%), the seed-level
randomness being what separates two runs of the same experiment.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from dp_experts_env.evaluation.claim_intervals import excess_slope_t, mean_t, slope_t

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
#: Points per local-slope window: a slope over fewer would be a difference of two noisy means.
LOCAL_WINDOW = 3
_BOOTSTRAP = 2_000
_LEVEL = 0.95


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
        custom: for quantities the grid rows do not hold (a learner's switch counter): a
            function ``(sweep, points, seeds) -> rows`` with columns ``x``, ``seed`` and
            ``metric``; its rows are stored with the code fingerprint of learner and env.
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
class Measurement:
    """What an analysis measured: a value, its confidence interval and a one-line account."""

    value: float
    ci_low: float
    ci_high: float
    detail: str = ""
    local: tuple[float, ...] = ()  # local slopes over LOCAL_WINDOW consecutive points (if any)
    # A t interval's standard error and degrees of freedom (NaN for a bootstrap interval) and a
    # bootstrap interval's draws (None for a t interval): what a band p-value is computed from.
    se: float = math.nan
    df: float = math.nan
    draws: np.ndarray | None = field(default=None, repr=False, compare=False)


@dataclass(frozen=True)
class Control:
    """The no-learning learner a claim's learner is checked against.

    Attributes:
        agent: registered learner name (``uniform``; ``ogd`` with ``step=0``, the centre point,
            on OCO).
        params: its keywords.
        why: one line for the report: what the control is and why it cannot learn.
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
        analyse: rows of every sweep (``{sweep key: final rows with an ``x`` column}``) ->
            :class:`Measurement`.
        x_label: the figure's x axis.
        log_x: whether the figure's x axis is logarithmic.
        notes: what a reader needs to interpret the verdict (constants, scale, errata).
        figure: optional ``(rows, ax) -> y label`` drawing the claim's own figure (e.g. the
            measured quantity rather than raw regret); default: mean +- s.e. of every sweep.
        control: the no-learning learner run in the learner's role (:class:`Control`).
        no_control: why the claim has no control (required when ``control`` is None).
        learning_fraction: the learner is "clearly learning" where its mean regret is below this
            fraction of the control's; None for claims whose learner is expected not to learn
            (lower bounds), which then have no learning gate.
        learning_at: where the gate is checked: ``"all"`` x (a rate is judged only in the
            learner's regime) or the ``"largest"`` x (a curve that starts at the control's
            level by design, as the threshold collapse does).
        learner_sweeps: keys of the sweeps in the learner's role (default :meth:`roles`).
        explicit_bound: ``point -> (the paper's explicit bound, the trivial bound)`` where the
            paper states constants; a claim whose bound is above the trivial one at any of its
            points is ``vacuous``.
        no_privacy_gate: why a claim whose learner runs at a finite epsilon is not privacy-gated
            (its statement does not involve epsilon); empty: gated (:attr:`privacy_gated`).
        specific: for a lower bound, ``rows -> ""`` when its twins show the phenomenon is the
            claimed one, else the reason naming the twin that failed (``not specific``).
        untestable: the sizes a claim would need when the suite's cannot settle it (its
            verdict is then ``untestable at these sizes`` unless it holds or fails).
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
        """True when a learner sweep runs at a finite epsilon and no reason exempts the claim.

        Such a statement is about a learner at that privacy level: a learner without a
        certificate there cannot hold it (``claim_gates.privacy_gate``).
        """
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
        """Keys of the sweeps that play the claim's learner (replaced by a control or --agent).

        Default: every sweep of the first sweep's learner (its epsilon = inf contrast too).
        """
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

        The sweeps keep their keys (the analysis reads them) and get a ``~agent`` storage
        suffix, so the control's runs and the learner's never share a results folder unless they
        are the same learner with the same keywords.

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
    """The (learner sweep, point) pairs at a finite epsilon: where a certificate is needed.

    Custom sweeps (a learner's internals) are left out: their rows carry no certificate.
    """
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
    """The verdict of a measurement given its control (see the module docstring).

    Args:
        claim: the claim (band, kind, learning fraction).
        m: the learner's measurement.
        control: the same analysis on the control's rows (None: the claim has no control).
        ratios: ``{x: mean regret of the learner / the control's}`` on the learner's sweep.
        bounds: ``{x: (the paper's explicit bound, the trivial bound)}`` where it gives one.
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
        # A fit over points where the theorem says nothing (its bound above the trivial one)
        # cannot contradict it.
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


def local_slopes(
    xs: np.ndarray, means: np.ndarray, window: int = LOCAL_WINDOW
) -> tuple[float, ...]:
    """Least-squares log-log slopes over every ``window`` consecutive points (x sorted).

    Fewer points than a window give one slope over all of them: a single window, which tells
    no trend (a failure there is reported inconclusive, not fails).
    """
    if xs.size < 2 or np.any(means <= 0):
        return ()
    if xs.size < window:
        return (_slope(xs, means),)
    return tuple(
        _slope(xs[i : i + window], means[i : i + window]) for i in range(xs.size - window + 1)
    )


# ----------------------------------------------------------------------------- analyses
def _per_x(rows: pd.DataFrame, metric: str) -> tuple[np.ndarray, list[np.ndarray]]:
    """Sorted x values and, per x, the seeds' final values of ``metric``."""
    xs = np.sort(rows["x"].unique())
    return xs, [rows.loc[rows["x"] == x, metric].to_numpy(np.float64) for x in xs]


def _bootstrap_means(groups: Sequence[np.ndarray], seed: int) -> np.ndarray:
    """(n_boot, n_x) means of seeds resampled with replacement, independently per x."""
    rng = np.random.default_rng(seed)
    out = np.empty((_BOOTSTRAP, len(groups)))
    for j, values in enumerate(groups):
        idx = rng.integers(0, values.size, size=(_BOOTSTRAP, values.size))
        out[:, j] = values[idx].mean(axis=1)
    return out


def _slope(x: np.ndarray, y: np.ndarray) -> float:
    from scipy.stats import linregress

    return float(linregress(np.log(x), np.log(y)).slope)


def _interval(samples: np.ndarray) -> tuple[float, float]:
    finite = samples[np.isfinite(samples)]
    if finite.size < samples.size * 0.9:
        return math.nan, math.nan
    tail = 100 * (1 - _LEVEL) / 2
    return float(np.percentile(finite, tail)), float(np.percentile(finite, 100 - tail))


def loglog_slope(
    rows: pd.DataFrame, metric: str, *, floor: float = 1e-9, seed: int = 0
) -> Measurement:
    """Slope of log(mean ``metric``) against log(x), with a t interval (``seed`` is unused).

    Means at or below ``floor`` cannot be placed on a log scale; the fit then reports NaN (the
    claim is judged inconclusive rather than silently dropping points).
    """
    xs, groups = _per_x(rows, metric)
    if xs.size < 2:
        raise ValueError("a slope needs at least two x values")
    means = np.array([g.mean() for g in groups])
    if np.any(means <= floor):
        return Measurement(math.nan, math.nan, math.nan, "a mean regret is <= 0: no log-log fit")
    value = _slope(xs, means)
    _, lo, hi, se, df = slope_t(xs, groups)
    pairs = ", ".join(f"{x:g}: {m:.4g}" for x, m in zip(xs, means, strict=True))
    return Measurement(
        value, lo, hi, f"mean {metric} at x = {pairs}", local_slopes(xs, means), se, df
    )


def ratio_of_means(
    num: pd.DataFrame, den: pd.DataFrame, metric: str, *, seed: int = 0
) -> Measurement:
    """Ratio of the mean ``metric`` of two row sets (pooled over x), seed-bootstrap interval."""
    a = num[metric].to_numpy(np.float64)
    b = den[metric].to_numpy(np.float64)
    if a.size == 0 or b.size == 0:
        raise ValueError("ratio_of_means needs rows on both sides")
    boots = _bootstrap_means([a, b], seed)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratios = boots[:, 0] / boots[:, 1]
    lo, hi = _interval(ratios)
    value = float(a.mean() / b.mean()) if b.mean() != 0 else math.nan
    return Measurement(value, lo, hi, f"mean {a.mean():.4g} / {b.mean():.4g}", draws=ratios)


def largest_ratio_over_x(
    rows: pd.DataFrame, ref: pd.DataFrame, metric: str, *, seed: int = 0
) -> Measurement:
    """Largest, over x, of mean ``metric`` of ``rows`` / mean of ``ref`` at the same x.

    ``ref`` is a reference played on the same envs and seeds (uniform play); the interval
    bootstraps the seeds of both at every x.
    """
    xs, groups = _per_x(rows, metric)
    _, ref_groups = _per_x(ref[ref["x"].isin(xs)], metric)
    if len(ref_groups) != len(groups):
        raise ValueError("largest_ratio_over_x needs the reference at every x")
    boots = _bootstrap_means([*groups, *ref_groups], seed)
    n = len(groups)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratios = boots[:, :n] / boots[:, n:]
        means = np.array([g.mean() for g in groups]) / np.array([g.mean() for g in ref_groups])
    draws = ratios.max(axis=1)
    lo, hi = _interval(draws)
    pairs = ", ".join(f"{x:g}: {r:.3f}" for x, r in zip(xs, means, strict=True))
    return Measurement(
        float(means.max()), lo, hi, f"mean {metric} / the reference's at x = {pairs}",
        draws=draws,
    )  # fmt: skip


def _profile_exponent(xs: np.ndarray, means: np.ndarray, grid: np.ndarray) -> np.ndarray:
    """Best exponent p of ``means ~ a x^p + b`` per row of ``means`` (rows: bootstrap samples).

    For each p on ``grid`` the model is linear in (a, b): a least-squares fit with relative
    weights (1 / mean) gives its residual; the p of the smallest residual is returned.
    """
    means = np.atleast_2d(means)
    w = 1.0 / np.where(means > 0, means, np.nan)
    best = np.full(means.shape[0], np.nan)
    best_res = np.full(means.shape[0], np.inf)
    for p in grid:
        f = xs**p
        # weighted normal equations of [f, 1] per row
        s_ff = np.sum((w * f) ** 2, axis=1)
        s_f1 = np.sum(w * w * f, axis=1)
        s_11 = np.sum(w * w, axis=1)
        s_fy = np.sum(w * w * f * means, axis=1)
        s_1y = np.sum(w * w * means, axis=1)
        det = s_ff * s_11 - s_f1**2
        with np.errstate(divide="ignore", invalid="ignore"):
            a = (s_fy * s_11 - s_1y * s_f1) / det
            b = (s_ff * s_1y - s_f1 * s_fy) / det
        res = np.sum((w * (means - a[:, None] * f - b[:, None])) ** 2, axis=1)
        better = res < best_res
        best[better], best_res[better] = p, res[better]
    return best


def power_plus_constant(
    rows: pd.DataFrame, metric: str, *, grid: np.ndarray | None = None, seed: int = 0
) -> Measurement:
    """Exponent p of the theorem's shape ``a x^p + b`` (b free), with a seed-bootstrap interval.

    A regret that is a power of x plus an x-independent term (``a / gap + b``) bends a pure
    power-law fit toward 0; fitting the constant too measures the power itself. Needs at least
    4 x values (3 parameters); the exponent is searched on ``grid`` (default -3..3, step 0.01).
    """
    xs, groups = _per_x(rows, metric)
    if xs.size < 4:
        raise ValueError("a power plus a constant needs at least four x values")
    grid = np.round(np.arange(-3.0, 3.0 + 1e-9, 0.01), 2) if grid is None else grid
    means = np.array([g.mean() for g in groups])
    value = float(_profile_exponent(xs, means, grid)[0])
    draws = _profile_exponent(xs, _bootstrap_means(groups, seed), grid)
    lo, hi = _interval(draws)
    pairs = ", ".join(f"{x:g}: {m:.4g}" for x, m in zip(xs, means, strict=True))
    return Measurement(value, lo, hi, f"mean {metric} at x = {pairs}; fit a x^p + b", draws=draws)


def spread_of_normalised_gain(
    curves: Mapping[str, pd.DataFrame],
    low: Mapping[str, pd.DataFrame],
    high: Mapping[str, pd.DataFrame],
    metric: str,
    *,
    seed: int = 0,
) -> Measurement:
    """Largest gap, across series at the same x, of the normalised gain ``(L - R)/(L - H)``.

    ``curves[k]`` are a learner's rows of series k (one series per horizon), ``low[k]`` the
    rows of the weak reference (uniform play, L) and ``high[k]`` those of the strong one (the
    non-private tracker, H). A privacy transition that depends on x only (a collapse) gives a
    small spread. The interval bootstraps seeds within every (series, x).
    """
    rng_seed = seed
    keys = list(curves)
    xs = np.sort(np.unique(np.concatenate([curves[k]["x"].unique() for k in keys])))
    boots = []
    value_rows = []
    for k in keys:
        lo_v = low[k][metric].to_numpy(np.float64)
        hi_v = high[k][metric].to_numpy(np.float64)
        _, groups = _per_x(curves[k], metric)
        b = _bootstrap_means([*groups, lo_v, hi_v], rng_seed)
        rng_seed += 1
        denom = b[:, -2] - b[:, -1]
        with np.errstate(divide="ignore", invalid="ignore"):
            boots.append((b[:, -2:-1] - b[:, :-2]) / denom[:, None])
        means = np.array([g.mean() for g in groups])
        value_rows.append((lo_v.mean() - means) / (lo_v.mean() - hi_v.mean()))
    gain = np.stack(value_rows)  # (series, x)
    samples = np.stack(boots, axis=1)  # (boot, series, x)
    spread = float(np.max(gain.max(axis=0) - gain.min(axis=0)))
    boot_spread = np.max(samples.max(axis=1) - samples.min(axis=1), axis=1)
    lo, hi = _interval(boot_spread)
    table = "; ".join(
        f"{k}: " + ", ".join(f"{g:.2f}" for g in row) for k, row in zip(keys, gain, strict=True)
    )
    return Measurement(
        spread, lo, hi, f"normalised gain at x = {list(map(float, xs))}: {table}",
        draws=boot_spread,
    )  # fmt: skip


def mean_with_ci(rows: pd.DataFrame, metric: str, *, seed: int = 0) -> Measurement:
    """Mean of ``metric`` over every row, with a t interval over rows (``seed`` is unused)."""
    v = rows[metric].to_numpy(np.float64)
    if v.size == 0:
        raise ValueError("mean_with_ci needs at least one row")
    mean, lo, hi, se, df = mean_t(v)
    return Measurement(mean, lo, hi, f"mean {metric} over {v.size} runs", (), se, df)


def worst_case_loglog_slope(
    frames: Mapping[str, pd.DataFrame], metric: str, *, seed: int = 0
) -> Measurement:
    """Slope of log(the largest mean ``metric`` over a family of sequences) against log(x).

    ``frames[name]`` are the rows of one sequence of the family (the same x everywhere); at
    each x the worst sequence's mean is taken. The interval is the seed bootstrap's (every
    sequence's seeds resampled independently at every x, the maximum taken per resample): a
    maximum over sequences has no t interval.
    """
    names = list(frames)
    per = {n: _per_x(frames[n], metric) for n in names}
    xs = per[names[0]][0]
    if any(not np.array_equal(per[n][0], xs) for n in names) or xs.size < 2:
        raise ValueError("worst_case_loglog_slope needs every sequence at the same x (two or more)")
    means = np.stack([[g.mean() for g in per[n][1]] for n in names])  # (family, x)
    worst = means.max(axis=0)
    which = [names[i] for i in means.argmax(axis=0)]
    pairs = ", ".join(f"{x:g}: {m:.4g} ({w})" for x, m, w in zip(xs, worst, which, strict=True))
    if np.any(worst <= 0):
        return Measurement(math.nan, math.nan, math.nan, f"worst mean {metric} <= 0 ({pairs})")
    boots = np.max(
        np.stack([_bootstrap_means(per[n][1], seed + i) for i, n in enumerate(names)]), axis=0
    )
    with np.errstate(divide="ignore", invalid="ignore"):
        logs = np.log(np.where(boots > 0, boots, np.nan))
    lx = np.log(xs) - np.log(xs).mean()
    draws = (logs - logs.mean(axis=1, keepdims=True)) @ lx / float(lx @ lx)
    lo, hi = _interval(draws)
    return Measurement(
        _slope(xs, worst), lo, hi, f"worst mean {metric} over {names} at x = {pairs}",
        local_slopes(xs, worst), draws=draws,
    )  # fmt: skip


def excess_loglog_slope(
    rows: pd.DataFrame, base: pd.DataFrame, metric: str, *, seed: int = 0
) -> Measurement:
    """Slope in log-log of ``mean(rows at x) - mean(base)``: the part of regret x explains.

    ``base`` is the same learner without the effect (e.g. epsilon = inf), so the excess is the
    cost of privacy; its t interval (delta method) counts both. Non-positive excesses give NaN
    (inconclusive); ``seed`` is unused.
    """
    xs, groups = _per_x(rows, metric)
    b = base[metric].to_numpy(np.float64)
    means = np.array([g.mean() for g in groups]) - b.mean()
    pairs = ", ".join(f"{x:g}: {m:.4g}" for x, m in zip(xs, means, strict=True))
    if np.any(means <= 0):
        return Measurement(
            math.nan, math.nan, math.nan, f"excess {metric} <= 0 at some x ({pairs})"
        )
    _, lo, hi, se, df = excess_slope_t(xs, groups, b)
    return Measurement(
        _slope(xs, means), lo, hi, f"excess mean {metric} at x = {pairs}",
        local_slopes(xs, means), se, df,
    )  # fmt: skip


def _gain_samples(
    curve: pd.DataFrame, low: pd.DataFrame, high: pd.DataFrame, metric: str, seed: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Sorted x, the mean normalised gain per x and its (bootstrap, x) samples."""
    xs, groups = _per_x(curve, metric)
    lo_v = low[metric].to_numpy(np.float64)
    hi_v = high[metric].to_numpy(np.float64)
    b = _bootstrap_means([*groups, lo_v, hi_v], seed)
    with np.errstate(divide="ignore", invalid="ignore"):
        samples = (b[:, -2:-1] - b[:, :-2]) / (b[:, -2] - b[:, -1])[:, None]
    means = np.array([g.mean() for g in groups])
    gain = (lo_v.mean() - means) / (lo_v.mean() - hi_v.mean())
    return xs, gain, samples


def _spreads(
    logx: Sequence[np.ndarray], gains: Sequence[np.ndarray], shifts: np.ndarray, n_grid: int = 25
) -> np.ndarray:
    """Largest spread across curves, per candidate shift set, after linear interpolation.

    ``shifts[j, k]`` moves curve k along log x for candidate j; the spread is taken on a grid
    over the range every shifted curve covers (NaN where the ranges do not overlap). ``gains[k]``
    is (rows, n_x); the result is (rows, candidates).
    """
    rows = gains[0].shape[0]
    out = np.full((rows, shifts.shape[0]), np.nan)
    for j, shift in enumerate(shifts):
        moved = [lx + d for lx, d in zip(logx, shift, strict=True)]
        left, right = max(m[0] for m in moved), min(m[-1] for m in moved)
        if right - left <= 1e-9:
            continue
        grid = np.linspace(left, right, n_grid)
        curves = []
        for m, g in zip(moved, gains, strict=True):
            # interpolation is linear in the gain, so one weight matrix serves every row
            weights = np.stack([np.interp(grid, m, np.eye(m.size)[i]) for i in range(m.size)])
            curves.append(g @ weights)
        stacked = np.stack(curves)  # (curves, rows, grid)
        out[:, j] = np.max(stacked.max(axis=0) - stacked.min(axis=0), axis=1)
    return out


def collapse_exponent(
    curves: Mapping[float, pd.DataFrame],
    low: Mapping[float, pd.DataFrame],
    high: Mapping[float, pd.DataFrame],
    metric: str,
    *,
    predicted: float = 0.5,
    grid: np.ndarray | None = None,
    max_spread: float = 0.25,
    min_rise: float = 0.5,
    seed: int = 0,
) -> Measurement:
    """Exponent b of S in the abscissa under which the normalised-gain curves of several S collapse.

    ``curves[s]`` are a learner's rows at S = s, each x being ``epsilon / (N sqrt(S/T))`` (the
    abscissa with S^(1/2)); ``low[s]`` / ``high[s]`` the rows of the weak and strong references
    (uniform play, the non-private tracker). Plotting against ``x S^(1/2 - b)`` puts S^b in the
    abscissa: b = 1/2 is the theorem's threshold, b = 0 drops S. The measured b minimises the
    largest spread across S of the interpolated gain curves (searched on ``grid``, default
    -0.5..1.5 step 0.05); its interval is the seed bootstrap's. NaN (no fit) when a curve does
    not cross the transition (its gain rises by less than ``min_rise``) or when no b brings the
    spread to ``max_spread`` or below (nothing collapses).
    """
    grid = np.round(np.arange(-0.5, 1.5 + 1e-9, 0.05), 2) if grid is None else grid
    ss = sorted(curves)
    logx, gains, boots, rises = [], [], [], []
    for i, s in enumerate(ss):
        xs, gain, samples = _gain_samples(curves[s], low[s], high[s], metric, seed + i)
        logx.append(np.log(xs))
        gains.append(gain[None, :])
        boots.append(samples)
        rises.append(float(gain[-1] - gain[0]))
    shifts = np.array([[(predicted - b) * math.log(s) for s in ss] for b in grid])
    spread = _spreads(logx, gains, shifts)[0]
    at = {b: spread[j] for j, b in enumerate(grid)}
    table = "; ".join(
        f"S={s:g}: " + ", ".join(f"{g:.2f}" for g in gain[0])
        for s, gain in zip(ss, gains, strict=True)
    )
    detail = (
        f"spread across S with S in the abscissa (b = {predicted:g}): "
        f"{at.get(predicted, math.nan):.2f}, with S dropped (b = 0): "
        f"{at.get(0.0, math.nan):.2f}; gain at x = "
        f"{[round(float(v), 3) for v in np.exp(logx[0])]}: {table}"
    )
    if min(rises) < min_rise:
        return Measurement(
            math.nan, math.nan, math.nan,
            f"the gain rises by {min(rises):.2f} < {min_rise} across x at some S: no transition "
            f"to collapse; {detail}",
        )  # fmt: skip
    if not np.nanmin(spread) <= max_spread:
        return Measurement(
            math.nan, math.nan, math.nan,
            f"no exponent brings the spread to {max_spread} or below (smallest "
            f"{np.nanmin(spread):.2f}): nothing collapses; {detail}",
        )  # fmt: skip
    value = float(grid[int(np.nanargmin(spread))]) + 0.0  # no "-0"
    boot_spread = _spreads(logx, boots, shifts)
    filled = np.where(np.isfinite(boot_spread), boot_spread, np.inf)
    best = grid[np.argmin(filled, axis=1)].astype(np.float64)
    best[~np.isfinite(filled.min(axis=1))] = np.nan
    lo, hi = _interval(best)
    smallest = float(np.nanmin(spread))
    text = f"best b {value:g} (smallest spread {smallest:.2f}); {detail}"
    return Measurement(value, lo, hi, text, draws=best)
