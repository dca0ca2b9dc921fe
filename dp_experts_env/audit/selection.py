"""Select an event on selection runs, count it on test runs: the audit's test.

:func:`audit_samples` and :func:`audit_mechanism` do both on outputs already drawn or on a
batched mechanism.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from dp_experts_env._validation import (
    check_choice,
    check_delta,
    check_epsilon,
    check_float,
    check_int,
)
from dp_experts_env.audit.bounds import (
    INCONCLUSIVE_FACTOR,
    AuditResult,
    clopper_pearson_lower,
    clopper_pearson_upper,
    detectable_epsilon,
    epsilon_lower_bound,
    runs_needed,
)
from dp_experts_env.audit.events import EventFamily, families_for
from dp_experts_env.batch_rng import BatchRNG, run_seeds

__all__ = [
    "Selection",
    "audit_mechanism",
    "audit_samples",
    "check_audit_args",
    "evaluate_event",
    "select_and_test",
    "select_event",
]

_SELECTION_ALPHA = 0.05  # per-candidate shrinkage when ranking events on selection runs


def _predicted_bound(
    hi: np.ndarray, lo: np.ndarray, n_sel: int, n_test: int, *, alpha: float, delta: float
) -> np.ndarray:
    """Expected test bound at ``n_test`` runs of events seen hi/lo in n_sel (CP-shrunk at 0.05)."""
    p_hi = clopper_pearson_lower(hi, n_sel, _SELECTION_ALPHA)
    p_lo = clopper_pearson_upper(lo, n_sel, _SELECTION_ALPHA)
    return epsilon_lower_bound(p_hi * n_test, p_lo * n_test, n_test, alpha=alpha, delta=delta)


@dataclass(frozen=True)
class Selection:
    """An event chosen on selection runs, ready to be counted on test runs.

    Attributes:
        family: the event family.
        index: the event within it.
        complement: use its complement.
        a_over_b: the event is more likely on the input (else on the neighbour).
        score: the bound a test of ``n_test`` runs was predicted to give.
        description: the event in words, with the side it favours.
    """

    family: EventFamily
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
    families: list[EventFamily],
    sel_a: np.ndarray,
    sel_b: np.ndarray,
    *,
    n_test: int,
    alpha: float,
    delta: float = 0.0,
) -> Selection | None:
    """The event (or complement, either direction) with the best predicted test bound.

    Without a positive prediction, the largest smoothed log-ratio; ``None`` when no family.
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
    """Count a selected event on test runs and bound epsilon (with the test's power)."""
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


def select_and_test(
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
        families: list[EventFamily] = []
    else:
        families = families_for(kind, shaped(sel_a), shaped(sel_b), **info)
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


def check_audit_args(n_runs: Any, alpha: Any, seed: Any) -> tuple[int, float, int]:
    """Validated ``(n_runs >= 200, 0 < alpha <= 0.5, seed >= 0)`` of an audit's arguments."""
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
    """Audit from outputs already drawn: half of each side selects the event, half tests it.

    Args:
        samples: (n,) or (n, m) outputs of n independent runs on the input.
        neighbor_samples: the same on the neighbour (same shape).
        claimed_epsilon: the claim under test (``inf`` always passes).
        claimed_delta: delta of the claim.
        alpha: error probability of the lower bound.
        output: ``"discrete"`` (1-D), ``"real"`` (thresholds per column), ``"sequence"`` ((n, T)
            in [0, k)) or ``"auto"`` (by dtype and shape).
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
    return select_and_test(
        a, b, kind=output, alpha=alpha, claimed_epsilon=eps, claimed_delta=dlt, **info
    )


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

    ``fn`` gets a :class:`BatchRNG` and returns one output per run (a ``Release`` is unwrapped);
    post-processing inside ``fn`` is allowed. Run seeds ``2 k n ..`` on ``x`` and the next ``n``
    on ``x_neighbor``, so audit seeds never share runs.

    Args:
        fn: the mechanism.
        x: the input.
        x_neighbor: a neighbouring input (for the sensitivity the mechanism assumes).
        n_runs: runs per side (>= 200).
        alpha: error probability of the lower bound.
        seed: first seed.
        claimed_epsilon: the claim under test.
        claimed_delta: delta of the claim.
        output: see :func:`audit_samples`.
    """
    n, alpha, seed = check_audit_args(n_runs, alpha, seed)
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
