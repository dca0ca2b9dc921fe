"""The statistics of an audit: Clopper-Pearson bounds on epsilon, power, the result.

``epsilon_lower_bound = log((p_hi_lower - delta) / p_lo_upper)`` on test runs independent of the
event's selection exceeds the true epsilon with probability at most ``alpha``; a bound below
the claim proves nothing (:func:`detectable_epsilon` is its power; docs/privacy.md, "Method").
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = [
    "INCONCLUSIVE_FACTOR",
    "AuditResult",
    "clopper_pearson",
    "clopper_pearson_lower",
    "clopper_pearson_upper",
    "detectable_epsilon",
    "epsilon_lower_bound",
    "runs_needed",
]

#: arrays of at least this many counts are bounded once per distinct count
_DISTINCT_MIN = 32


def clopper_pearson(count: Any, n: int, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """One-sided Clopper–Pearson bounds for a binomial proportion.

    Args:
        count: successes (scalar or array; real counts are accepted, for projections).
        n: trials.
        alpha: error probability of EACH one-sided bound.

    Returns:
        ``(lower, upper)``: ``P(p >= lower) >= 1 - alpha`` and ``P(p <= upper) >= 1 - alpha``.
    """
    return clopper_pearson_lower(count, n, alpha), clopper_pearson_upper(count, n, alpha)


def clopper_pearson_lower(count: Any, n: int, alpha: float) -> np.ndarray:
    """The lower bound of :func:`clopper_pearson` alone (one beta quantile per count, not two)."""
    from scipy import stats  # ~0.7 s to import: paid by the commands that compute a bound only

    def lower(k: np.ndarray) -> np.ndarray:
        with np.errstate(invalid="ignore"):
            return np.where(k > 0, stats.beta.ppf(alpha, k, n - k + 1), 0.0)

    return _per_distinct(np.asarray(count, dtype=np.float64), lower, n, alpha)


def clopper_pearson_upper(count: Any, n: int, alpha: float) -> np.ndarray:
    """The upper bound of :func:`clopper_pearson` alone (one beta quantile per count, not two)."""
    from scipy import stats

    def upper(k: np.ndarray) -> np.ndarray:
        with np.errstate(invalid="ignore"):
            return np.where(k < n, stats.beta.ppf(1.0 - alpha, k + 1, n - k), 1.0)

    return _per_distinct(np.asarray(count, dtype=np.float64), upper, n, alpha)


def _per_distinct(
    k: np.ndarray, bound: Callable[[np.ndarray], np.ndarray], n: Any, alpha: Any
) -> np.ndarray:
    """``bound(k)``, computed once per distinct count (the same floats: elementwise quantiles).

    An audit's event counts repeat (at most ``n + 1`` values among thousands of events), and a
    beta quantile is tens of microseconds. Array ``n`` or ``alpha`` (broadcast against the
    counts) are bounded element by element.
    """
    if k.ndim == 0 or k.size < _DISTINCT_MIN or np.ndim(n) or np.ndim(alpha):
        return bound(k)
    values, where = np.unique(k, return_inverse=True)
    if 2 * values.size > k.size:
        return bound(k)
    return bound(values)[where.reshape(k.shape)]


def epsilon_lower_bound(
    count_hi: Any, count_lo: Any, n: int, *, alpha: float, delta: float = 0.0
) -> np.ndarray:
    """Lower bound on epsilon from an event seen ``count_hi`` vs ``count_lo`` times in n runs each.

    ``log((CP_lower(count_hi) - delta) / CP_upper(count_lo))``, ``alpha / 2`` per bound; 0 where
    not positive.
    """
    lo_hi = clopper_pearson_lower(count_hi, n, alpha / 2.0)
    return _log_ratio(lo_hi - delta, clopper_pearson_upper(count_lo, n, alpha / 2.0))


def _log_ratio(num: np.ndarray, up_lo: np.ndarray) -> np.ndarray:
    """:func:`epsilon_lower_bound` from its numerator ``CP_lower(count_hi) - delta``."""
    with np.errstate(divide="ignore", invalid="ignore"):
        lb = np.where(num > 0, np.log(np.maximum(num, 1e-300) / up_lo), 0.0)
    return np.maximum(lb, 0.0)


def detectable_epsilon(
    count_hi: int, n: int, *, alpha: float, claimed_epsilon: float, delta: float = 0.0
) -> float:
    """Power of a test: the smallest true epsilon its event would have shown above the claim.

    The event was seen ``count_hi`` times in ``n`` runs on its favoured side; an ``eps``-DP
    mechanism would show it ``n (p - delta) e^{-eps}`` times on the other. ``inf`` when no count
    on the other side (not even 0) would exceed ``claimed_epsilon``.
    """
    numbers = (n, alpha, claimed_epsilon, delta)
    if isinstance(count_hi, (int, np.integer)) and isinstance(n, (int, np.integer)) and all(
        isinstance(a, (int, float, np.integer, np.floating)) for a in numbers
    ):  # a pure function of these numbers: computed once per process and key
        return _detectable_epsilon(
            int(count_hi), int(n), float(alpha), float(claimed_epsilon), float(delta)
        )
    return _detectable_epsilon.__wrapped__(count_hi, n, alpha, claimed_epsilon, delta)


@functools.lru_cache(maxsize=4096)
def _detectable_epsilon(
    count_hi: int, n: int, alpha: float, claimed_epsilon: float, delta: float
) -> float:
    if not math.isfinite(claimed_epsilon):
        return math.inf

    # epsilon_lower_bound(count_hi, k_lo, ...) with its count_hi half computed once: the
    # bisection below moves k_lo only (the same floats, one beta quantile per step).
    num = clopper_pearson_lower(count_hi, n, alpha / 2.0) - delta

    def bound(k_lo: float) -> float:
        return float(_log_ratio(num, clopper_pearson_upper(k_lo, n, alpha / 2.0)))

    if bound(0.0) <= claimed_epsilon:
        return math.inf
    lo, hi = 0.0, float(count_hi)  # bound(lo) > claim >= bound(hi) (bound(count_hi) is ~0)
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if bound(mid) > claimed_epsilon else (lo, mid)
    p_hi = count_hi / n - delta
    if lo <= 0.0 or p_hi <= 0.0:
        return math.inf
    return max(math.log(p_hi * n / lo), claimed_epsilon)


#: a pass that could not have shown a learner spending this many times its claim is inconclusive
INCONCLUSIVE_FACTOR = 2.0


def runs_needed(
    count_hi: int,
    n: int,
    *,
    alpha: float,
    claimed_epsilon: float,
    delta: float = 0.0,
    share: float = 1.0,
) -> float:
    """Runs per side at which an event would show a learner spending twice its claim.

    The event's frequency is held and the run count doubled until :func:`detectable_epsilon`
    falls below ``INCONCLUSIVE_FACTOR * share * claimed_epsilon`` (``inf`` when never seen, beyond
    2^40 runs, or when that target is not above the claim). ``share``: the declaration's
    :func:`~dp_experts_env.privacy.declaration.largest_share`.
    """
    target = INCONCLUSIVE_FACTOR * share * claimed_epsilon
    if count_hi <= 0 or not math.isfinite(claimed_epsilon) or target <= claimed_epsilon:
        return math.inf
    p = count_hi / n
    m = n
    for _ in range(41):
        if (
            detectable_epsilon(
                round(p * m), m, alpha=alpha, claimed_epsilon=claimed_epsilon, delta=delta
            )
            < target
        ):
            return float(m)
        m *= 2
    return math.inf


@dataclass(frozen=True)
class AuditResult:
    """Outcome of an audit.

    Attributes:
        epsilon_lower_bound: epsilon any mechanism producing these counts must exceed, with
            confidence ``1 - alpha`` (0 when the counts show nothing).
        claimed_epsilon: the claim under test.
        claimed_delta: the delta of the claim (enters the bound).
        passed: ``epsilon_lower_bound <= claimed_epsilon`` (no violation found; not a proof).
        event: the selected event, in words, and which side it favours.
        counts: test-run occurrences of the event on (input, neighbour).
        n_heldout: test runs per side (the denominators of ``counts``).
        n_runs: runs per side.
        alpha: error probability of the bound.
        detectable_epsilon: the power (:func:`detectable_epsilon`; ``inf``: none).
        runs_needed: :func:`runs_needed` (nan: not computed).
        share: the largest composed part's share of the claim (1: not split).
        part: for a split claim, a :class:`~dp_experts_env.privacy.part_power.PartTest` (or None).
    """

    epsilon_lower_bound: float
    claimed_epsilon: float
    claimed_delta: float
    passed: bool
    event: str
    counts: tuple[int, int]
    n_heldout: int
    n_runs: int
    alpha: float
    detectable_epsilon: float = math.inf
    runs_needed: float = math.nan
    share: float = 1.0
    part: Any = None

    @property
    def inconclusive(self) -> bool:
        """A pass that could not have seen a learner spending twice its claim (share-scaled)."""
        power = self.detectable_epsilon
        return self.passed and not power < INCONCLUSIVE_FACTOR * self.share * self.claimed_epsilon

    @property
    def verdict(self) -> str:
        """``"VIOLATION ..."``, ``"inconclusive at this run count ..."`` or a plain pass."""
        if not self.passed:
            return (
                f"VIOLATION: epsilon >= {self.epsilon_lower_bound:.3f} > claimed "
                f"{self.claimed_epsilon:g} (confidence {1 - self.alpha:g})"
            )
        if self.inconclusive:
            need = self.runs_needed
            split = INCONCLUSIVE_FACTOR * self.share
            if self.share < 1.0 and split * self.claimed_epsilon <= self.claimed_epsilon:
                more = (
                    f"; the claim is split among composed mechanisms (largest share "
                    f"{self.share:.3g}): a learner spending {INCONCLUSIVE_FACTOR:g}x shows at "
                    f"most {split * self.claimed_epsilon:.3g} on an event reading one of them, "
                    "so no run count of such an event suffices against the whole claim; a "
                    "joint event is needed, or "
                    + (
                        self.part.describe()
                        if self.part is not None
                        else "a test of one part against its own share (not implemented: "
                        "docs/privacy.md)"
                    )
                )
            elif math.isnan(need):
                more = ""
            elif math.isinf(need):
                more = "; the event was never seen, so no run count can be read off it"
            else:
                more = f"; about {need:.3g} runs per side would"
            return (
                f"inconclusive at this run count ({self.n_heldout} test runs per side could not "
                f"have shown even a learner spending {INCONCLUSIVE_FACTOR:g}x the claimed "
                f"epsilon {self.claimed_epsilon:g}{more}; no violation found)"
            )
        if math.isinf(self.detectable_epsilon):
            power = "this event could not show any violation at this run count"
        else:
            power = f"could detect eps > {self.detectable_epsilon:.3g}"
        return f"no violation found ({power})"

    def summary(self) -> str:
        """One line for logs and the CLI."""
        bound = ""
        if self.passed:
            lb, claim = self.epsilon_lower_bound, self.claimed_epsilon
            bound = f"; epsilon >= {lb:.3f} vs claimed {claim:g}"
        return (
            f"{self.verdict}{bound}; event {self.event}; counts {self.counts[0]}/"
            f"{self.n_heldout} vs {self.counts[1]}/{self.n_heldout}"
        )
