"""What a test of one declared part against its own epsilon would need (split claims).

For a :class:`SparseVector` part, from the declaration alone: the best "m BOTTOMs, then a TOP"
event for a learner spending :data:`~dp_experts_env.privacy.audit.INCONCLUSIVE_FACTOR` x (by
numerical integration), the runs a Clopper-Pearson test of it needs (exact for the declared
mechanism, a lower bound for the learner), and the test itself (docs/privacy.md, "Split claims").
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np

from dp_experts_env.privacy.audit import INCONCLUSIVE_FACTOR, epsilon_lower_bound
from dp_experts_env.privacy.declaration import Mechanism, SparseVector, composed_parts

__all__ = [
    "PartCheck",
    "PartTest",
    "part_runs",
    "part_test",
    "run_sparse_vector_part",
    "sparse_vector_part_test",
    "sparse_vector_parts",
]

_BOTTOMS = (0, 1, 2, 4, 8, 16)  # BOTTOM answers before the TOP, in the events tried
_OFFSETS = np.arange(-6.0, 6.01, 0.5)  # query - threshold, in threshold-noise scales
_RHO = np.linspace(-30.0, 30.0, 12001)  # threshold noise, in threshold-noise scales
_RUNS = np.round(2.0 ** np.arange(6.0, 44.0, 0.125))  # run counts tried (per side)
_EXACT = 8  # events counted exactly after the normal-approximation ranking


@dataclass(frozen=True)
class PartTest:
    """The best event of one declared part, for a learner spending ``factor`` x its claim.

    Attributes:
        kind: the part's mechanism kind (``"sparse-vector"``).
        part_epsilon: the part's own epsilon.
        factor: spending factor of the hypothetical learner (noise scales divided by it).
        event_epsilon: the event's true log-ratio for that learner.
        probability: the event's probability on its favoured side.
        runs: runs per side at which a Clopper-Pearson test (``alpha``) at the expected counts
            shows a bound above ``part_epsilon`` (``inf``: no event can).
        event: the event in words.
        bottoms: BOTTOM answers before the TOP in the event.
        bottom_query: each BOTTOM query minus the noiseless threshold (input side).
        top_query: the TOP query minus the noiseless threshold (input side).
        sensitivity: how far the neighbour moves each query (the declared sensitivity).
    """

    kind: str
    part_epsilon: float
    factor: float
    event_epsilon: float
    probability: float
    runs: float
    event: str
    bottoms: int = 0
    bottom_query: float = math.nan
    top_query: float = math.nan
    sensitivity: float = math.nan

    def describe(self) -> str:
        """One clause for a verdict."""
        if not math.isfinite(self.runs):
            return (
                f"no event of the {self.kind} part shows more than its own epsilon "
                f"{self.part_epsilon:.3g} at {self.factor:g}x spending"
            )
        return (
            f"a test of the {self.kind} part against its own epsilon {self.part_epsilon:.3g} "
            f"would need about {self.runs:.2g} runs per side (at {self.factor:g}x spending its "
            f"best event, {self.event}, shows {self.event_epsilon:.3g} at probability "
            f"{self.probability:.2g}; exact for the declared mechanism, a learner whose queries "
            "move less needs more)"
        )


def _laplace_cdf(x: np.ndarray) -> np.ndarray:
    return np.where(x < 0.0, 0.5 * np.exp(np.minimum(x, 0.0)), 1.0 - 0.5 * np.exp(-np.abs(x)))


def sparse_vector_part_test(
    part: SparseVector, *, factor: float = INCONCLUSIVE_FACTOR, alpha: float = 1e-3
) -> PartTest:
    """The cheapest witness of one AboveThreshold segment of ``part`` spending ``factor`` x.

    Events "m BOTTOMs at offset ``b``, then a TOP at offset ``t``" (m in 0..16, offsets on a grid
    of half threshold-noise scales) are evaluated exactly on the input and the neighbour. The
    result is a function of the part's numbers, ``factor`` and ``alpha`` only, so it is computed
    once per process for each (the audit plans the same part in several checks).
    """
    args = (float(part.cost()[0]), part.threshold_scale, part.query_scale, part.sensitivity,
            factor, alpha)  # fmt: skip
    if all(type(a) in (float, int) for a in args):  # hashable, and equal keys compute alike
        return _sparse_vector_part_test(part.kind, *args)
    return _sparse_vector_part_test.__wrapped__(part.kind, *args)


@functools.lru_cache(maxsize=256)
def _sparse_vector_part_test(
    kind: str,
    eps_part: float,
    threshold_scale: float,
    query_scale: float,
    sensitivity: float,
    factor: float,
    alpha: float,
) -> PartTest:
    scale_t = threshold_scale / factor
    scale_q = query_scale / factor
    d = sensitivity / scale_t  # sensitivity in threshold-noise units
    ratio = scale_q / scale_t  # query scale in threshold-noise units
    rho = _RHO[:, None]
    weight = 0.5 * np.exp(-np.abs(_RHO)) * (_RHO[1] - _RHO[0])
    # P(BOTTOM | rho) = P(q + nu <= rho) for a query at offset b (input) or b + d (neighbour)
    below = _laplace_cdf((rho - _OFFSETS[None, :]) / ratio)  # (rho, b)
    below_n = _laplace_cdf((rho - _OFFSETS[None, :] - d) / ratio)
    above = 1.0 - _laplace_cdf((rho - _OFFSETS[None, :]) / ratio)  # TOP at offset t
    above_n = 1.0 - _laplace_cdf((rho - _OFFSETS[None, :] + d) / ratio)
    events = []  # (m, b, t, p_in, p_nb)
    for m in _BOTTOMS:
        p_in = np.einsum("r,rb,rt->bt", weight, below**m, above)
        p_nb = np.einsum("r,rb,rt->bt", weight, below_n**m, above_n)
        for b, t in zip(*np.nonzero(p_in > p_nb * math.exp(eps_part)), strict=True):
            events.append((m, int(b), int(t), float(p_in[b, t]), float(p_nb[b, t])))
    if not events:
        return PartTest(kind, eps_part, factor, math.nan, math.nan, math.inf, "")
    # Rank by a normal approximation, then count exactly (Clopper-Pearson) for the few best.
    hi = np.array([e[3] for e in events])
    lo = np.array([e[4] for e in events])
    spread = np.sqrt((1.0 - hi) / hi + (1.0 - lo) / lo)
    from scipy import stats  # ~0.7 s to import: paid where a part is planned only

    approx = (stats.norm.isf(alpha / 2.0) * spread / (np.log(hi / lo) - eps_part)) ** 2
    best = (math.inf, 0)
    for i in np.argsort(approx)[:_EXACT]:
        n = _RUNS
        ok = epsilon_lower_bound(hi[i] * n, lo[i] * n, n, alpha=alpha) > eps_part
        if ok.any() and n[np.argmax(ok)] < best[0]:
            best = (float(n[np.argmax(ok)]), int(i))
    if not math.isfinite(best[0]):
        return PartTest(kind, eps_part, factor, math.nan, math.nan, math.inf, "")
    m, b, t, p_hi, p_lo = events[best[1]]
    label = (
        f"{m} BOTTOM(s) with queries at threshold {_OFFSETS[b] * scale_t:+.3g}, then a TOP "
        f"with the query at threshold {_OFFSETS[t] * scale_t:+.3g} (noiseless threshold; the "
        f"neighbour moves BOTTOM queries up and the TOP query down by {sensitivity:g})"
    )
    return PartTest(
        kind,
        eps_part,
        factor,
        math.log(p_hi / p_lo),
        p_hi,
        best[0],
        label,
        bottoms=m,
        bottom_query=float(_OFFSETS[b] * scale_t),
        top_query=float(_OFFSETS[t] * scale_t),
        sensitivity=float(sensitivity),
    )


def sparse_vector_parts(declaration: Mechanism) -> list[SparseVector]:
    """A split claim's single-segment pure sparse-vector parts ([] if not split)."""
    parts = composed_parts(declaration)
    if len(parts) < 2:
        return []
    return [
        p
        for p in parts
        if isinstance(p, SparseVector)
        and p.positives == 1
        and p.delta == 0.0
        and math.isfinite(p.segment_epsilon())
    ]


def part_test(
    declaration: Mechanism, *, factor: float = INCONCLUSIVE_FACTOR, alpha: float = 1e-3
) -> PartTest | None:
    """The cheapest part-level witness among :func:`sparse_vector_parts`, or None."""
    found = [
        sparse_vector_part_test(p, factor=factor, alpha=alpha)
        for p in sparse_vector_parts(declaration)
    ]
    return min(found, key=lambda r: r.runs) if found else None


#: Runs per side of a part-level test: this many times the run count at which the event's
#: expected counts first clear the part's epsilon (power to spare against count noise) ...
PART_RUNS_FACTOR = 4.0
#: ... within these bounds (the lower keeps a known-answer control meaningful, the upper the CPU).
PART_RUNS_RANGE = (20_000, 200_000)


def part_runs(found: PartTest) -> int:
    """Runs per side the audit spends on ``found``'s event (0: no event can show anything)."""
    if not math.isfinite(found.runs):
        return 0
    lo, hi = PART_RUNS_RANGE
    return int(min(max(PART_RUNS_FACTOR * found.runs, lo), hi))


@dataclass(frozen=True)
class PartCheck:
    """A part-level test's result: one declared part's event against the part's own epsilon.

    Attributes:
        plan: the event tested (chosen from the declaration alone, before any run).
        counts: how often the event occurred on the input and on the neighbour.
        n_runs: runs per side.
        epsilon_lower_bound: the Clopper-Pearson lower bound on the event's log-ratio.
        alpha: the bound's error probability.
        seconds: CPU seconds of the test (building the learner included).
    """

    plan: PartTest
    counts: tuple[int, int]
    n_runs: int
    epsilon_lower_bound: float
    alpha: float
    seconds: float

    @property
    def violation(self) -> bool:
        """True when the bound exceeds the part's own epsilon."""
        return self.epsilon_lower_bound > self.plan.part_epsilon

    def describe(self) -> str:
        """One sentence for a verdict or a summary line."""
        head = (
            f"the {self.plan.kind} part shows epsilon >= {self.epsilon_lower_bound:.3f}"
            f" {'>' if self.violation else '<='} its own epsilon {self.plan.part_epsilon:.3g}"
        )
        return (
            f"{head} (part-level test on the learner's own instance, confidence "
            f"{1 - self.alpha:g}: {self.plan.event}; counts {self.counts[0]} vs "
            f"{self.counts[1]} of {self.n_runs} runs per side, {self.seconds:.1f} s CPU)"
        )


def run_sparse_vector_part(detector: object, plan: PartTest, *, alpha: float = 1e-3) -> PartCheck:
    """Test one AboveThreshold instance (2n runs) on ``plan``'s event: input vs neighbour.

    Every run is restarted; the first half answers the input's queries, the second the
    neighbour's; the event is counted per side. The test places the queries, so it checks the
    instance's noise against the declared part, not how the learner computes its queries.

    Args:
        detector: an :class:`~dp_experts_env.privacy.mechanisms.AboveThreshold` over a
            BatchRNG with an even number of runs.
        plan: the event, from :func:`sparse_vector_part_test` (finite ``runs``).
        alpha: error probability of the bound.
    """
    import time

    began = time.process_time()
    runs = int(detector.num_runs)
    if runs < 2 or runs % 2:
        raise ValueError(f"the instance must have an even number of runs >= 2, got {runs}")
    if plan.bottoms < 0 or not math.isfinite(plan.top_query):
        raise ValueError("plan must name an event (a finite top query)")
    n = runs // 2
    shift = float(plan.sensitivity)
    side = np.repeat([0.0, 1.0], n)
    base = detector.threshold
    detector.restart()
    ok = np.ones(runs, dtype=bool)
    for _ in range(plan.bottoms):
        ok &= ~np.asarray(detector.test(base + plan.bottom_query + shift * side), dtype=bool)
    ok &= np.asarray(detector.test(base + plan.top_query - shift * side), dtype=bool)
    counts = (int(ok[:n].sum()), int(ok[n:].sum()))
    bound = float(epsilon_lower_bound(counts[0], counts[1], n, alpha=alpha))
    return PartCheck(plan, counts, n, bound, alpha, time.process_time() - began)
