"""Empirical privacy audits: a statistically valid LOWER bound on a mechanism's epsilon.

Method (docs/privacy.md §4). Draw outputs of the mechanism on an input ``x`` and on a neighbour
``x'`` with independent seeds. On one set of runs (the *selection* runs) search a family of
candidate events E (and their complements, in both directions) for the one that promises the
largest bound; on a second, independent set (the *test* runs) count E on each side and turn the
counts into one-sided Clopper–Pearson bounds at confidence ``1 - alpha`` (``alpha / 2`` per side,
union bound)::

    epsilon_lower_bound = log((p_hi_lower - delta) / p_lo_upper)

where ``p_hi`` is the probability of E on the side where it is more likely. An
(epsilon, delta)-DP mechanism satisfies ``P(E | x) <= e^epsilon P(E | x') + delta`` for every E,
so with probability at least ``1 - alpha`` the bound does not exceed the true epsilon. Because E
is fixed before the test runs are looked at, no multiple-testing correction is needed.

Reading a result: a bound above the claim is a violation (wrong at most with probability
``alpha``). A bound below it proves nothing; :func:`detectable_epsilon` says how large a true
epsilon the chosen event could have revealed at the run count used (the audit's power).

This module works on outputs only (arrays of indices, reals, action sequences, recorded
releases); the driver that plays learners on loss sequences lives in
:mod:`dp_experts_env.evaluation.audit`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import stats

from dp_experts_env._validation import (
    check_choice,
    check_delta,
    check_epsilon,
    check_float,
    check_int,
)
from dp_experts_env.batch_rng import BatchRNG, run_seeds

__all__ = [
    "AuditResult",
    "Selection",
    "audit_mechanism",
    "audit_samples",
    "clopper_pearson",
    "detectable_epsilon",
    "INCONCLUSIVE_FACTOR",
    "runs_needed",
    "epsilon_lower_bound",
    "release_families",
    "select_event",
    "sequence_families",
    "evaluate_event",
]

_N_CUTS = 120  # threshold events tried for real outputs
_MAX_GRID = 17  # time points delimiting blocks of rounds in agent audits
_CHUNK = 1 << 22  # elements per temporary when counting per-round events
_MAX_CODES = 4096  # largest alphabet of a window of joint actions (k ** length)
_RUNS_PER_CODE = 16  # selection runs per side per joint-window value (fewer: the order is noise)
_SELECTION_ALPHA = 0.05  # per-candidate shrinkage when ranking events on selection runs


# --------------------------------------------------------------------------- statistics
def clopper_pearson(count: Any, n: int, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """One-sided Clopper–Pearson bounds for a binomial proportion.

    Args:
        count: successes (scalar or array; real counts are accepted, for projections).
        n: trials.
        alpha: error probability of EACH one-sided bound.

    Returns:
        ``(lower, upper)``: ``P(p >= lower) >= 1 - alpha`` and ``P(p <= upper) >= 1 - alpha``.
    """
    k = np.asarray(count, dtype=np.float64)
    with np.errstate(invalid="ignore"):
        lower = np.where(k > 0, stats.beta.ppf(alpha, k, n - k + 1), 0.0)
        upper = np.where(k < n, stats.beta.ppf(1.0 - alpha, k + 1, n - k), 1.0)
    return lower, upper


def epsilon_lower_bound(
    count_hi: Any, count_lo: Any, n: int, *, alpha: float, delta: float = 0.0
) -> np.ndarray:
    """Lower bound on epsilon from an event seen ``count_hi`` vs ``count_lo`` times in n runs each.

    ``log((CP_lower(count_hi) - delta) / CP_upper(count_lo))`` with ``alpha / 2`` per bound, so
    the pair holds with confidence ``1 - alpha``. Returns 0 where the bound is not positive.
    """
    lo_hi, _ = clopper_pearson(count_hi, n, alpha / 2.0)
    _, up_lo = clopper_pearson(count_lo, n, alpha / 2.0)
    num = lo_hi - delta
    with np.errstate(divide="ignore", invalid="ignore"):
        lb = np.where(num > 0, np.log(np.maximum(num, 1e-300) / up_lo), 0.0)
    return np.maximum(lb, 0.0)


def detectable_epsilon(
    count_hi: int, n: int, *, alpha: float, claimed_epsilon: float, delta: float = 0.0
) -> float:
    """Power of a test: the smallest true epsilon its event would have shown above the claim.

    The event was seen ``count_hi`` times in ``n`` runs on its favoured side. Had the other side
    seen it ``n (p - delta) e^{-eps}`` times (``p = count_hi / n``: a mechanism exactly
    ``eps``-DP on this event), the bound would exceed ``claimed_epsilon`` for every ``eps``
    above the returned value. ``inf`` when no count on the other side (not even 0) would: the
    event is too rare for this run count to show any violation.
    """
    if not math.isfinite(claimed_epsilon):
        return math.inf

    def bound(k_lo: float) -> float:
        return float(epsilon_lower_bound(count_hi, k_lo, n, alpha=alpha, delta=delta))

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

    The event (seen ``count_hi`` times in ``n`` runs on its favoured side) and the factor
    (:data:`INCONCLUSIVE_FACTOR`) are as in :attr:`AuditResult.inconclusive`. The event's
    frequency is held at ``count_hi / n`` and the run count doubled until
    :func:`detectable_epsilon` falls below ``INCONCLUSIVE_FACTOR * claimed_epsilon`` (``inf``
    when the event was never seen or beyond 2^40 runs). ``share`` (the declaration's
    :func:`~dp_experts_env.privacy.declaration.largest_share`) scales the target: an event
    reading one part of a split claim shows at most ``INCONCLUSIVE_FACTOR x share x claim``,
    and when that is not above the claim no run count suffices (``inf``).
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


def _predicted_bound(
    hi: np.ndarray, lo: np.ndarray, n_sel: int, n_test: int, *, alpha: float, delta: float
) -> np.ndarray:
    """What a test on ``n_test`` runs can be expected to show for events seen hi/lo in n_sel.

    The selection proportions are shrunk to their Clopper–Pearson bounds at level 0.05 (so an
    event seen 3 times against 0 does not look infinite) and projected to the test size.
    """
    p_hi, _ = clopper_pearson(hi, n_sel, _SELECTION_ALPHA)
    _, p_lo = clopper_pearson(lo, n_sel, _SELECTION_ALPHA)
    return epsilon_lower_bound(p_hi * n_test, p_lo * n_test, n_test, alpha=alpha, delta=delta)


# --------------------------------------------------------------------------- result
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
        detectable_epsilon: power: the smallest true epsilon this event, at this run count,
            would have shown above the claim (:func:`detectable_epsilon`; ``inf``: none).
        runs_needed: runs per side at which the event, seen as often as here, would have
            shown a learner spending :data:`INCONCLUSIVE_FACTOR` times its claim (nan: not
            computed; inf: the event was never seen, or the claim is split so that no event
            reading one part can show it, no run count can be read off it).
        part: for a split claim, what a test of one declared part against its own epsilon
            would need (a :class:`~dp_experts_env.privacy.part_power.PartTest`, named in the
            inconclusive verdict; None: not computed, or no part the computation reads).
        share: the largest composed part's share of the claim
            (:func:`~dp_experts_env.privacy.declaration.largest_share`; 1 for a claim that is
            not split): a learner spending twice its claim shows at most ``2 x share x claim``
            on an event reading one part, so a pass needs that much power to carry information.

    A pass is *inconclusive* (:attr:`inconclusive`) when the test could not have shown even a
    learner spending :data:`INCONCLUSIVE_FACTOR` times the claimed epsilon: it then carries no
    information and the verdict says so, with :attr:`runs_needed`.
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
        """A pass that could not have seen a learner spending twice its claim (no information)."""
        power = self.detectable_epsilon
        return self.passed and not power < INCONCLUSIVE_FACTOR * self.share * self.claimed_epsilon

    @property
    def verdict(self) -> str:
        """``"VIOLATION ..."``, ``"inconclusive at this run count ..."`` or a plain pass.

        A plain pass reads ``"no violation found (could detect eps > X)"``.
        """
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


# --------------------------------------------------------------------------- event families
class _Family:
    """Candidate events over samples of shape (n, ...): counted in bulk, evaluated one by one."""

    size: int

    def counts(self, samples: np.ndarray) -> np.ndarray:  # (size,)
        raise NotImplementedError

    def indicator(self, samples: np.ndarray, i: int) -> np.ndarray:  # (n,) bool
        raise NotImplementedError

    def describe(self, i: int) -> str:
        raise NotImplementedError


class _Values(_Family):
    """{out = v} for each value v seen in the selection runs (1-D discrete outputs)."""

    def __init__(self, values: np.ndarray, label: str = "output") -> None:
        self.values = np.unique(values)
        self.size = len(self.values)
        self.label = label

    def counts(self, samples: np.ndarray) -> np.ndarray:
        pos = np.clip(np.searchsorted(self.values, samples), 0, self.size - 1)
        hit = self.values[pos] == samples
        return np.bincount(pos[hit], minlength=self.size)

    def indicator(self, samples: np.ndarray, i: int) -> np.ndarray:
        return samples == self.values[i]

    def describe(self, i: int) -> str:
        return f"{self.label} == {self.values[i]:g}"


class _RatioSets(_Family):
    """{out in S_k}: the k values most favoured by one side in the selection runs."""

    def __init__(self, values: _Values, sel_a: np.ndarray, sel_b: np.ndarray) -> None:
        ca, cb = values.counts(sel_a), values.counts(sel_b)
        order = np.argsort(-np.log((ca + 1.0) / (cb + 1.0)), kind="stable")
        self.ordered = values.values[order]
        self.size = max(len(self.ordered) - 1, 0)
        self._values = values
        self._order = order

    def counts(self, samples: np.ndarray) -> np.ndarray:
        per_value = self._values.counts(samples)[self._order]
        return np.cumsum(per_value)[: self.size]

    def indicator(self, samples: np.ndarray, i: int) -> np.ndarray:
        return np.isin(samples, self.ordered[: i + 1])

    def describe(self, i: int) -> str:
        shown = ", ".join(f"{v:g}" for v in self.ordered[: min(i + 1, 8)])
        more = ", ..." if i + 1 > 8 else ""
        return f"{self._values.label} in {{{shown}{more}}} ({i + 1} values)"


class _Thresholds(_Family):
    """{out[:, col] > c} for cut points at quantiles of the pooled selection runs."""

    def __init__(self, pooled: np.ndarray, columns: int, label: str = "output") -> None:
        tail = np.logspace(-3.5, math.log10(0.5), _N_CUTS // 2)
        levels = np.unique(np.concatenate([tail, 1.0 - tail]))
        cuts = [np.unique(np.quantile(pooled[:, c], levels)) for c in range(columns)]
        self.col = np.concatenate([np.full(len(k), c) for c, k in enumerate(cuts)])
        self.cut = np.concatenate(cuts)
        self.columns = columns
        self.size = len(self.cut)
        self.label = label

    def counts(self, samples: np.ndarray) -> np.ndarray:
        out = np.empty(self.size, dtype=np.int64)
        for c in range(self.columns):
            sel = self.col == c
            srt = np.sort(samples[:, c])
            out[sel] = len(srt) - np.searchsorted(srt, self.cut[sel], side="right")
        return out

    def indicator(self, samples: np.ndarray, i: int) -> np.ndarray:
        return samples[:, self.col[i]] > self.cut[i]

    def describe(self, i: int) -> str:
        where = f"{self.label}[{self.col[i]}]" if self.columns > 1 else self.label
        return f"{where} > {self.cut[i]:.6g}"


class _Mapped(_Family):
    """A family over a per-run statistic ``fn(samples)`` (post-processing of the output)."""

    def __init__(self, fn: Callable[[np.ndarray], np.ndarray], inner: _Family) -> None:
        self.fn, self.inner, self.size = fn, inner, inner.size

    def counts(self, samples: np.ndarray) -> np.ndarray:
        return self.inner.counts(self.fn(samples))

    def indicator(self, samples: np.ndarray, i: int) -> np.ndarray:
        return self.inner.indicator(self.fn(samples), i)

    def describe(self, i: int) -> str:
        return self.inner.describe(i)


def _discrete(
    fn: Callable[[np.ndarray], np.ndarray], sel_a: np.ndarray, sel_b: np.ndarray, label: str
) -> list[_Family]:
    """{stat = v} and likelihood-ordered unions of values, for a discrete per-run statistic."""
    fa, fb = fn(sel_a), fn(sel_b)
    values = _Values(np.concatenate([fa, fb]), label)
    return [_Mapped(fn, values), _Mapped(fn, _RatioSets(values, fa, fb))]


class _RoundValue(_Family):
    """{J_t = j} for each round t >= first and value j (sequence outputs, values in [0, k))."""

    def __init__(self, rounds: int, k: int, first: int, offset: int) -> None:
        self.rounds, self.k, self.first, self.offset = rounds - first, k, first, offset
        self.size = self.rounds * k

    def counts(self, samples: np.ndarray) -> np.ndarray:
        out = np.zeros(self.size, dtype=np.int64)
        step = max(1, _CHUNK // max(samples.shape[0], 1))  # bounded temporaries for long games
        for start in range(0, self.rounds, step):
            block = samples[:, self.first + start : self.first + start + step].astype(np.int64)
            flat = (np.arange(start, start + block.shape[1]) * self.k)[None, :] + block
            out += np.bincount(flat.ravel(), minlength=self.size)
        return out

    def indicator(self, samples: np.ndarray, i: int) -> np.ndarray:
        t, j = divmod(i, self.k)
        return samples[:, self.first + t] == j

    def describe(self, i: int) -> str:
        t, j = divmod(i, self.k)
        return f"J_{t + self.first + self.offset} == {j}"


class _Moves(_RoundValue):
    """{J_t = j and J_t != J_{t-1}} (a switch into j at round t) and {J_t == J_{t-1}} (a stay).

    Counted as values of the move sequence ``M_t = J_t if J_t != J_{t-1} else k``.
    """

    def __init__(self, rounds: int, k: int, first: int, offset: int) -> None:
        super().__init__(rounds, k + 1, max(first, 1), offset)
        self.symbols = k

    @staticmethod
    def moves(samples: np.ndarray, k: int) -> np.ndarray:
        out = samples.astype(np.int64)
        out[:, 1:] = np.where(samples[:, 1:] != samples[:, :-1], out[:, 1:], k)
        return out

    def counts(self, samples: np.ndarray) -> np.ndarray:
        return super().counts(self.moves(samples, self.symbols))

    def indicator(self, samples: np.ndarray, i: int) -> np.ndarray:
        return super().indicator(self.moves(samples, self.symbols), i)

    def describe(self, i: int) -> str:
        t, j = divmod(i, self.k)
        t += self.first + self.offset
        if j == self.symbols:
            return f"J_{t} == J_{t - 1} (a stay)"
        return f"a switch into {j} at J_{t}"


class _Blocks(_Family):
    """{J_t = j for every t in [a, b)} for blocks between grid points of the rounds >= first."""

    def __init__(self, rounds: int, k: int, first: int, offset: int) -> None:
        n = rounds - first
        grid = np.unique(np.linspace(0, n, min(n + 1, _MAX_GRID)).round().astype(int))
        pairs = [(a, b) for i, a in enumerate(grid) for b in grid[i + 1 :] if b - a >= 2]
        self.pairs = np.array(pairs, dtype=np.int64).reshape(-1, 2)
        self.k, self.first, self.offset = k, first, offset
        self.size = len(self.pairs) * k

    def counts(self, samples: np.ndarray) -> np.ndarray:
        out = np.zeros((self.k, len(self.pairs)), dtype=np.int64)
        if not len(self.pairs):
            return out.ravel()
        seq = samples[:, self.first :]
        a, b = self.pairs[:, 0], self.pairs[:, 1]
        for j in range(self.k):
            c = np.zeros((seq.shape[0], seq.shape[1] + 1), dtype=np.int32)
            np.cumsum(seq == j, axis=1, out=c[:, 1:])
            out[j] = ((c[:, b] - c[:, a]) == (b - a)[None, :]).sum(axis=0)
        return out.ravel()

    def indicator(self, samples: np.ndarray, i: int) -> np.ndarray:
        j, p = divmod(i, len(self.pairs))
        a, b = self.pairs[p] + self.first
        return np.all(samples[:, a:b] == j, axis=1)

    def describe(self, i: int) -> str:
        j, p = divmod(i, len(self.pairs))
        a, b = self.pairs[p] + self.first + self.offset
        return f"J_t == {j} for all rounds t in [{a}, {b})"


class _AtLeast(_Family):
    """{stat >= c} for c = 1 .. top, for an integer per-run statistic."""

    def __init__(self, top: int, label: str) -> None:
        self.size, self.label = max(top, 0), label

    def counts(self, samples: np.ndarray) -> np.ndarray:
        hist = np.bincount(np.clip(samples, 0, self.size), minlength=self.size + 1)
        return np.cumsum(hist[::-1])[::-1][1 : self.size + 1]

    def indicator(self, samples: np.ndarray, i: int) -> np.ndarray:
        return samples >= i + 1

    def describe(self, i: int) -> str:
        return f"{self.label} >= {i + 1}"


def _switch_count(first: int) -> Callable[[np.ndarray], np.ndarray]:
    lo = max(first - 1, 0)
    return lambda s: np.count_nonzero(s[:, lo + 1 :] != s[:, lo:-1], axis=1)


def _play_count(first: int, j: int) -> Callable[[np.ndarray], np.ndarray]:
    return lambda s: np.count_nonzero(s[:, first:] == j, axis=1)


def _first_switch(first: int) -> Callable[[np.ndarray], np.ndarray]:
    """Index of the first round t >= first with J_t != J_{t-1} (T if none)."""

    def fn(s: np.ndarray) -> np.ndarray:
        lo = max(first, 1)
        moved = s[:, lo:] != s[:, lo - 1 : -1]
        any_move = moved.any(axis=1)
        return np.where(any_move, lo + np.argmax(moved, axis=1), s.shape[1])

    return fn


def _window_code(start: int, length: int, k: int) -> Callable[[np.ndarray], np.ndarray]:
    weights = k ** np.arange(length, dtype=np.int64)
    return lambda s: s[:, start : start + length].astype(np.int64) @ weights


def sequence_families(
    sel_a: np.ndarray, sel_b: np.ndarray, *, k: int, first: int, offset: int = 0
) -> list[_Family]:
    """Candidate events over action sequences ``(n, T)`` with values in ``[0, k)``.

    Rounds before ``first`` cannot depend on the differing datum; they still enter joint events
    (a window starting before ``first`` conditions on the state the change meets).

    * ``{J_t = j}`` for each round ``t >= first``; a switch into ``j`` at round ``t``
      (``J_t = j != J_{t-1}``) and a stay (``J_t = J_{t-1}``);
    * ``{J_t = j for every t in a block}`` (blocks between up to 17 grid points);
    * joint windows: ``{(J_s, ..., J_{s+L-1}) in S}`` for windows starting at ``first - 2``,
      ``first - 1`` and ``first``, S a single tuple or the tuples most favoured by one side in
      the selection runs; ``k^L`` is at most 4096 and at most ``n / 16`` for ``n`` selection
      runs per side (with fewer runs per tuple the likelihood order is noise);
    * counts: number of switches, plays of each value after ``first`` (``>= c``), and the round
      of the first switch at or after ``first``.

    ``offset`` is added to round indices in the descriptions (the global index of column 0).
    """
    rounds = sel_a.shape[1]
    fams: list[_Family] = []
    if rounds - first <= 0:
        return fams
    fams += [_RoundValue(rounds, k, first, offset), _Blocks(rounds, k, first, offset)]
    if rounds > max(first, 1):
        fams.append(_Moves(rounds, k, first, offset))
    codes = min(_MAX_CODES, sel_a.shape[0] // _RUNS_PER_CODE)
    length = int(math.floor(math.log(max(codes, 1)) / math.log(max(k, 2)) + 1e-9))
    for start in sorted({max(first - 2, 0), max(first - 1, 0), first}):
        span = min(length, rounds - start)
        if span < 2 or start + span <= first:
            continue
        label = f"(J_{start + offset}..J_{start + span - 1 + offset}) as base-{k} digits"
        fams += _discrete(_window_code(start, span, k), sel_a, sel_b, label)
    span = rounds - max(first - 1, 0) - 1
    fams.append(_Mapped(_switch_count(first), _AtLeast(span, "number of switches")))
    for j in range(k):
        fams.append(
            _Mapped(
                _play_count(first, j),
                _AtLeast(rounds - first, f"plays of {j} from round {first + offset}"),
            )
        )
    fams += _discrete(
        _first_switch(first), sel_a, sel_b, f"first switch at or after round {first + offset}"
    )
    return fams


class _LaplaceContrast(_Family):
    """Thresholds on the Laplace likelihood-ratio statistic of recorded releases.

    Samples have shape ``(n, 2, 1 + D)``: column 0 holds a discrete key on both channels (the
    driver puts the action of the changed round there), columns 1.. each release coordinate's
    exact input (channel 0) and noisy output (channel 1). Fitted on the selection runs only:
    the centres ``c_a``, ``c_b`` (means of the exact inputs on each side) and the noise scale
    ``b`` (mean absolute noise) of every coordinate. The statistic
    ``sum_i sign(c_a - c_b) clip(y_i - (c_a + c_b)/2, +-|c_a - c_b|/2) / b_i`` is the
    log-likelihood ratio of independent Laplace releases centred at ``c_a`` vs ``c_b`` (up to a
    constant), the most powerful statistic when the noise is Laplace; for any other law it is
    just another event, and the test stays valid.

    With ``grouped``, the centres are fitted per key: a bandit learner's release reads the loss
    of the arm it played, so its exact input is a mixture over arms, and the key (an output
    the claim covers) separates the components. Keys seen fewer than 20 times on a side add
    nothing.
    """

    def __init__(self, sel_a: np.ndarray, sel_b: np.ndarray, *, grouped: bool = False) -> None:
        keys = np.concatenate([sel_a[:, 0, 0], sel_b[:, 0, 0]])
        self.groups = np.unique(keys) if grouped else np.zeros(1)
        if len(self.groups) > 64:  # too many keys to fit centres per key
            self.groups = np.zeros(1)
        self.grouped = len(self.groups) > 1 or grouped
        g_a, g_b = self._group(sel_a), self._group(sel_b)
        xa, xb = sel_a[:, :, 1:], sel_b[:, :, 1:]
        dim, n_g = xa.shape[-1], len(self.groups) + 1  # the last group: unseen keys
        ca, cb = np.zeros((n_g, dim)), np.zeros((n_g, dim))
        for g in range(n_g - 1):
            in_a, in_b = g_a == g, g_b == g
            if in_a.sum() >= 20 and in_b.sum() >= 20:
                ca[g], cb[g] = xa[in_a, 0].mean(axis=0), xb[in_b, 0].mean(axis=0)
        diff = ca - cb
        self.keep = np.flatnonzero(np.any(diff != 0, axis=0))
        self.mid = 0.5 * (ca + cb)[:, self.keep]
        self.half = 0.5 * np.abs(diff[:, self.keep])
        self.sign = np.sign(diff[:, self.keep])
        noise = np.concatenate([xa[:, 1] - xa[:, 0], xb[:, 1] - xb[:, 0]])[:, self.keep]
        scale = np.mean(np.abs(noise), axis=0) if len(self.keep) else np.ones(0)
        self.scale = np.maximum(scale, 1e-12 * np.maximum(self.half.max(axis=0), 1e-300))
        pooled = np.concatenate([self.statistic(sel_a), self.statistic(sel_b)])[:, None]
        label = "Laplace likelihood-ratio statistic of the releases"
        if grouped:
            label += " (centres fitted per action of the changed round)"
        self._cuts = _Thresholds(pooled, 1, label)
        self.size = self._cuts.size if len(self.keep) else 0

    def _group(self, samples: np.ndarray) -> np.ndarray:
        keys = samples[:, 0, 0]
        pos = np.clip(np.searchsorted(self.groups, keys), 0, len(self.groups) - 1)
        return np.where(self.groups[pos] == keys, pos, len(self.groups))

    def statistic(self, samples: np.ndarray) -> np.ndarray:
        g = self._group(samples)
        y = samples[:, 1, 1:][:, self.keep]
        z = np.clip(y - self.mid[g], -self.half[g], self.half[g]) * self.sign[g] / self.scale
        return z.sum(axis=1)

    def counts(self, samples: np.ndarray) -> np.ndarray:
        return self._cuts.counts(self.statistic(samples)[:, None])

    def indicator(self, samples: np.ndarray, i: int) -> np.ndarray:
        return self._cuts.indicator(self.statistic(samples)[:, None], i)

    def describe(self, i: int) -> str:
        return f"{self._cuts.describe(i)} ({len(self.keep)} released coordinates)"


class _ExactDifferences(_Family):
    """Joint release events: ``{y_i - y_j = d}`` for two released coordinates i, j.

    Fresh noise makes an exact difference between two releases an event of probability 0 on
    both sides; noise reused across rounds (or calls) makes ``y_i - y_j = x_i - x_j`` exactly,
    which differs between the sides when the changed round feeds one of them. Pairs are the
    coordinates (of the first :data:`_MAX_DIFF_COLUMNS`) whose noise was equal in more than half
    of the pooled selection runs; ``d`` is each side's most common exact difference there (a
    constant fitted on the selection runs, so the event is a function of the output alone).
    """

    def __init__(self, sel_a: np.ndarray, sel_b: np.ndarray) -> None:
        cols = slice(1, 1 + _MAX_DIFF_COLUMNS)
        xa, xb = sel_a[:, :, cols], sel_b[:, :, cols]
        noise = np.concatenate([xa[:, 1] - xa[:, 0], xb[:, 1] - xb[:, 0]])
        self.events: list[tuple[int, int, float, str]] = []
        for i in range(noise.shape[1] - 1):
            same = (noise[:, i + 1 :] == noise[:, i : i + 1]).mean(axis=0)
            for j in i + 1 + np.flatnonzero(same > 0.5):
                for side, x in (("input", xa), ("neighbour", xb)):
                    vals, counts = np.unique(x[:, 0, i] - x[:, 0, j], return_counts=True)
                    self.events.append((i, int(j), float(vals[np.argmax(counts)]), side))
                if len(self.events) >= 2 * _MAX_DIFF_PAIRS:
                    break
        self.size = len(self.events)

    def _hit(self, samples: np.ndarray, e: tuple[int, int, float, str]) -> np.ndarray:
        i, j, d, _ = e
        y = samples[:, 1, 1 : 1 + _MAX_DIFF_COLUMNS]
        return np.abs(y[:, i] - y[:, j] - d) <= 1e-9 * (1.0 + abs(d))

    def counts(self, samples: np.ndarray) -> np.ndarray:
        return np.array([self._hit(samples, e).sum() for e in self.events], dtype=np.int64)

    def indicator(self, samples: np.ndarray, i: int) -> np.ndarray:
        return self._hit(samples, self.events[i])

    def describe(self, i: int) -> str:
        a, b, d, side = self.events[i]
        return (
            f"released coordinates {a} and {b} differ by exactly {d:g} (the {side}'s exact "
            "difference: noise reused)"
        )


#: released coordinates examined for exact differences, and pairs kept
_MAX_DIFF_COLUMNS = 64
_MAX_DIFF_PAIRS = 32


def release_families(sel_a: np.ndarray, sel_b: np.ndarray) -> list[_Family]:
    """Candidate events over recorded releases ``(n, 2, 1 + D)``.

    The Laplace likelihood-ratio statistic (:class:`_LaplaceContrast`) with one pair of centres
    per coordinate, and with centres fitted per value of the key in column 0; and joint events
    on exact differences between releases of different rounds (:class:`_ExactDifferences`).
    """
    if sel_a.shape[-1] <= 1:
        return []
    fams = [
        _LaplaceContrast(sel_a, sel_b),
        _LaplaceContrast(sel_a, sel_b, grouped=True),
        _ExactDifferences(sel_a, sel_b),
    ]
    return [f for f in fams if f.size]


def _families(kind: str, sel_a: np.ndarray, sel_b: np.ndarray, **info: Any) -> list[_Family]:
    if kind == "real":
        pooled = np.concatenate([sel_a, sel_b]).reshape(len(sel_a) + len(sel_b), -1)
        return [_Thresholds(pooled, pooled.shape[1])]
    if kind == "discrete":
        values = _Values(np.concatenate([sel_a, sel_b]))
        return [values, _RatioSets(values, sel_a, sel_b)]
    return sequence_families(
        sel_a, sel_b, k=info["k"], first=info.get("first", 0), offset=info.get("offset", 0)
    )


# --------------------------------------------------------------------------- select and test
@dataclass(frozen=True)
class Selection:
    """An event chosen on selection runs, ready to be counted on test runs.

    Attributes:
        family: the event family. index: the event within it. complement: use its complement.
        a_over_b: the event is more likely on the input (else on the neighbour).
        score: the bound a test of ``n_test`` runs was predicted to give.
        description: the event in words, with the side it favours.
    """

    family: _Family
    index: int
    complement: bool
    a_over_b: bool
    score: float
    description: str

    def indicator(self, samples: np.ndarray) -> np.ndarray:
        """(n,) bool: whether each run's output is in the event."""
        hit = self.family.indicator(samples, self.index)
        return ~hit if self.complement else hit


def select_event(
    families: list[_Family],
    sel_a: np.ndarray,
    sel_b: np.ndarray,
    *,
    n_test: int,
    alpha: float,
    delta: float = 0.0,
) -> Selection | None:
    """The event (or complement, either direction) with the best predicted test bound.

    Every candidate is scored by :func:`_predicted_bound` at the test size ``n_test``. When no
    candidate promises a positive bound, the one with the largest smoothed log-ratio is kept
    (the test will then show what it can). ``None`` when the families are empty.
    """
    n_sel = sel_a.shape[0]
    cand = [(f, i) for f, fam in enumerate(families) for i in range(fam.size)]
    if not cand:
        return None
    ca = np.concatenate([fam.counts(sel_a) for fam in families]).astype(np.float64)
    cb = np.concatenate([fam.counts(sel_b) for fam in families]).astype(np.float64)
    # Each candidate event, its complement, and both directions (a over b, b over a).
    hi = np.concatenate([ca, n_sel - ca, cb, n_sel - cb])
    lo = np.concatenate([cb, n_sel - cb, ca, n_sel - ca])
    scores = _predicted_bound(hi, lo, n_sel, n_test, alpha=alpha, delta=delta)
    if scores.max() > 0:
        best = int(np.argmax(scores))
    else:
        best = int(np.argmax(np.log((hi + 1.0) / (lo + 1.0))))
    quarter, which = divmod(best, len(cand))
    complement, a_over_b = quarter % 2 == 1, quarter < 2
    f, i = cand[which]
    desc = families[f].describe(i)
    desc = f"not ({desc})" if complement else desc
    side = "input" if a_over_b else "neighbour"
    return Selection(
        families[f],
        i,
        complement,
        a_over_b,
        float(scores[best]),
        f"{desc} [more likely on the {side}]",
    )


def evaluate_event(
    selection: Selection | None,
    out_a: np.ndarray,
    out_b: np.ndarray,
    *,
    alpha: float,
    claimed_epsilon: float,
    claimed_delta: float = 0.0,
    n_runs: int | None = None,
    share: float = 1.0,
) -> AuditResult:
    """Count a selected event on test runs and bound epsilon (with the test's power).

    ``share`` is the declaration's largest part's share of the claim (see
    :attr:`AuditResult.share`).
    """
    m = out_a.shape[0]
    if selection is None:
        return AuditResult(
            0.0,
            claimed_epsilon,
            claimed_delta,
            True,
            "none: no output depends on the differing datum",
            (0, 0),
            m,
            n_runs or m,
            alpha,
        )
    k_a = int(selection.indicator(out_a).sum())
    k_b = int(selection.indicator(out_b).sum())
    k_hi, k_lo = (k_a, k_b) if selection.a_over_b else (k_b, k_a)
    lb = float(epsilon_lower_bound(k_hi, k_lo, m, alpha=alpha, delta=claimed_delta))
    power = detectable_epsilon(
        k_hi, m, alpha=alpha, claimed_epsilon=claimed_epsilon, delta=claimed_delta
    )
    need = math.nan
    if lb <= claimed_epsilon and not power < INCONCLUSIVE_FACTOR * share * claimed_epsilon:
        need = runs_needed(
            k_hi,
            m,
            alpha=alpha,
            claimed_epsilon=claimed_epsilon,
            delta=claimed_delta,
            share=share,
        )
    return AuditResult(
        lb,
        claimed_epsilon,
        claimed_delta,
        lb <= claimed_epsilon,
        selection.description,
        (k_a, k_b),
        m,
        n_runs or m,
        alpha,
        power,
        need,
        share,
    )


def _select_and_test(
    a: np.ndarray,
    b: np.ndarray,
    *,
    kind: str,
    alpha: float,
    claimed_epsilon: float,
    claimed_delta: float,
    **info: Any,
) -> AuditResult:
    """Pick the event on the first halves of ``a`` and ``b``, test it on the second halves."""
    n = a.shape[0]
    half = n // 2
    sel_a, sel_b, out_a, out_b = a[:half], b[:half], a[half:], b[half:]
    shaped = (lambda s: s) if kind != "real" else (lambda s: s.reshape(len(s), -1))
    if kind == "sequence" and a.shape[1] == 0:
        families: list[_Family] = []
    else:
        families = _families(kind, shaped(sel_a), shaped(sel_b), **info)
    selection = select_event(
        families, shaped(sel_a), shaped(sel_b), n_test=n - half, alpha=alpha, delta=claimed_delta
    )
    return evaluate_event(
        selection,
        shaped(out_a),
        shaped(out_b),
        alpha=alpha,
        claimed_epsilon=claimed_epsilon,
        claimed_delta=claimed_delta,
        n_runs=n,
    )


def _check_common(n_runs: Any, alpha: Any, seed: Any) -> tuple[int, float, int]:
    n = check_int("n_runs", n_runs, minimum=200)
    a = check_float("alpha", alpha, minimum=0.0, maximum=0.5, min_inclusive=False)
    s = check_int("seed", seed, minimum=0)
    return n, a, s


def audit_samples(
    samples: Any,
    neighbor_samples: Any,
    *,
    claimed_epsilon: float,
    claimed_delta: float = 0.0,
    alpha: float = 1e-3,
    output: str = "auto",
) -> AuditResult:
    """Audit from outputs already drawn: ``samples`` on x, ``neighbor_samples`` on x'.

    The first half of each side's runs selects the event, the second half tests it.

    Args:
        samples: (n,) or (n, m) outputs of n independent runs on the input.
        neighbor_samples: the same on the neighbour (same shape).
        claimed_epsilon: the claim under test (``inf`` always passes).
        claimed_delta: delta of the claim.
        alpha: error probability of the lower bound.
        output: ``"discrete"`` (indices, booleans; 1-D), ``"real"`` (threshold events per
            column), ``"sequence"`` (integer sequences (n, T) with values in [0, k): the events
            of :func:`sequence_families`) or ``"auto"`` (bool/int 1-D -> discrete, int 2-D ->
            sequence, float -> real).
    """
    eps = check_epsilon("claimed_epsilon", claimed_epsilon, allow_inf=True)
    dlt = check_delta("claimed_delta", claimed_delta)
    alpha = check_float("alpha", alpha, minimum=0.0, maximum=0.5, min_inclusive=False)
    check_choice("output", output, ("auto", "discrete", "real", "sequence"))
    a, b = np.asarray(samples), np.asarray(neighbor_samples)
    if a.shape != b.shape or a.ndim not in (1, 2) or a.shape[0] < 4:
        raise ValueError(
            "samples and neighbor_samples must have the same shape (n,) or (n, m) with n >= 4, "
            f"got {a.shape} and {b.shape}"
        )
    discrete = a.dtype.kind in "biu" and b.dtype.kind in "biu"
    if output == "auto":
        output = ("discrete" if a.ndim == 1 else "sequence") if discrete else "real"
    info: dict[str, Any] = {}
    if output == "discrete":
        if a.ndim != 1:
            raise ValueError(f"discrete outputs must be 1-D (n,), got shape {a.shape}")
        a, b = a.astype(np.float64), b.astype(np.float64)
    elif output == "sequence":
        if a.ndim != 2 or not discrete or min(a.min(), b.min()) < 0:
            raise ValueError("sequence outputs must be non-negative integers of shape (n, T)")
        info = {"k": int(max(a.max(), b.max())) + 1, "first": 0, "offset": 0}
    else:
        a, b = a.astype(np.float64), b.astype(np.float64)
        if not (np.all(np.isfinite(a)) and np.all(np.isfinite(b))):
            raise ValueError("real outputs must be finite")
    return _select_and_test(
        a, b, kind=output, alpha=alpha, claimed_epsilon=eps, claimed_delta=dlt, **info
    )


# --------------------------------------------------------------------------- mechanisms
def audit_mechanism(
    fn: Callable[[Any, BatchRNG], Any],
    x: Any,
    x_neighbor: Any,
    *,
    n_runs: int = 20_000,
    alpha: float = 1e-3,
    seed: int = 0,
    claimed_epsilon: float,
    claimed_delta: float = 0.0,
    output: str = "auto",
) -> AuditResult:
    """Audit a batched mechanism ``fn(x, rng) -> outputs of n_runs runs``.

    ``fn`` receives a :class:`BatchRNG` of ``n_runs`` runs and must return one output per run:
    a (n_runs,) array of indices, booleans or reals (or (n_runs, m); a
    :class:`~dp_experts_env.privacy.guarantee.Release` is unwrapped). Runs on ``x`` use run
    seeds ``2 k n .. (2k+1) n - 1`` for ``seed = k`` and ``n = n_runs``; runs on ``x_neighbor``
    the next ``n_runs`` seeds, so different audit seeds never share runs. Post-processing
    the mechanism's output inside ``fn`` is allowed (it cannot raise the true epsilon), which is
    how special events (e.g. low-order bits of a float) are audited.

    Args:
        fn: the mechanism.
        x: the input.
        x_neighbor: a neighbouring input (the caller vouches that they are neighbours for the
            sensitivity the mechanism assumes).
        n_runs: runs per side (>= 200).
        alpha: error probability of the lower bound.
        seed: first seed.
        claimed_epsilon: the claim under test.
        claimed_delta: delta of the claim.
        output: see :func:`audit_samples`.
    """
    n, alpha, seed = _check_common(n_runs, alpha, seed)
    if not callable(fn):
        raise TypeError(f"fn must be callable fn(x, rng), got {type(fn).__name__}")
    outs = []
    for data, first in ((x, 2 * seed * n), (x_neighbor, (2 * seed + 1) * n)):
        out = fn(data, BatchRNG(run_seeds(first, n)))
        if hasattr(out, "guarantee") and hasattr(out, "value"):
            out = out.value
        out = np.asarray(out)
        if out.ndim == 0 or out.shape[0] != n:
            raise ValueError(
                f"fn must return one output per run (leading axis {n}), got {out.shape}"
            )
        outs.append(out)
    return audit_samples(
        outs[0],
        outs[1],
        claimed_epsilon=claimed_epsilon,
        claimed_delta=claimed_delta,
        alpha=alpha,
        output=output,
    )
