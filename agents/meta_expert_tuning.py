"""meta-expert-reduction's public quantities: meta-expert counts, suffix counts and the rate.

Functions of (N, T, S, epsilon) only, never of losses (docs/algorithms.md, "Calibration").
"""

from __future__ import annotations

import functools
import io
import math

import numpy as np

__all__ = [
    "count_meta_experts",
    "log_count_meta_experts",
    "log_sum_exp",
    "noisy_hedge_eta",
    "public_tables",
    "suffix_rows",
]

# np.max / np.sum without their Python wrappers (the same values; small arrays, every round).
_max_reduce = np.maximum.reduce
_min_reduce = np.minimum.reduce
_add_reduce = np.add.reduce


def count_meta_experts(n_experts: int, horizon: int, n_switches: int) -> int:
    """|E| = sum_{c=0}^{S} C(T-1, c) N^(c+1): switch points in {2..T}, labels in [N] (E-ARS-14).

    Consecutive labels may coincide (the paper's counting).
    """
    s = min(n_switches, horizon - 1)
    return sum(math.comb(horizon - 1, c) * n_experts ** (c + 1) for c in range(s + 1))


def log_count_meta_experts(n_experts: int, horizon: int, n_switches: int) -> float:
    """Natural log of :func:`count_meta_experts`, computed without forming huge integers."""
    s = min(n_switches, horizon - 1)
    c = np.arange(s + 1)
    terms = _log_comb(horizon - 1, c) + (c + 1) * math.log(n_experts)
    return float(log_sum_exp(terms, axis=0))


def _log_comb(n: int | np.ndarray, k: np.ndarray) -> np.ndarray:
    from scipy.special import gammaln  # ~0.25 s to import: paid only where used

    return gammaln(np.asarray(n) + 1.0) - gammaln(k + 1.0) - gammaln(np.asarray(n) - k + 1.0)


def log_sum_exp(x: np.ndarray, axis: int) -> np.ndarray:
    """log-sum-exp that returns -inf (without warnings) where every entry is -inf."""
    m = _max_reduce(x, axis=axis, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    total = _add_reduce(np.exp(x - m), axis=axis, keepdims=True)
    if _min_reduce(total, axis=None) > 0.0:
        out = np.log(total)
    else:  # some slice is all -inf: log(0) = -inf, without the divide warning
        with np.errstate(divide="ignore"):
            out = np.log(total)
    out += m
    return np.squeeze(out, axis=axis)


#: Largest (T + 1) x (S + 1) table of suffix counts kept whole (in memory and on disk).
_TABLE_MAX = 1 << 20


def suffix_rows(n: int, t_max: int, s: int, rounds: np.ndarray) -> np.ndarray:
    """(len(rounds), S+1) log G_t(c) for each t in ``rounds`` (elementwise, as one t)."""
    c = np.arange(s + 1)
    rest = np.maximum(t_max - rounds, 0)[:, None]  # (R, 1)
    terms = _log_comb(rest, c) + c * math.log(n)
    terms = np.where(c <= rest, terms, -np.inf)  # (R, S+1)
    # G(c) sums terms[0 .. S - c]
    mask = c[None, :] <= (s - c)[:, None]  # (S+1, S+1)
    return log_sum_exp(np.where(mask, terms[:, None, :], -np.inf), axis=2)


@functools.lru_cache(maxsize=16)
def public_tables(n: int, t_max: int, s: int) -> tuple[float, np.ndarray] | None:
    """``log |E|`` and the suffix counts of rounds 0..T; None when too large.

    Kept signed on disk (:mod:`agents._public_cache`) so that a new process skips scipy's
    import; the returned table is read-only (shared by every agent of the process).
    """
    if (t_max + 1) * (s + 1) > _TABLE_MAX:
        return None
    from agents._public_cache import cache_dir, read_entry, write_entry

    name = None
    if cache_dir() is not None:
        name = f"meta-expert-tables-{n}-{t_max}-{s}.npz"
        payload = read_entry(name, "meta-expert-tables")
        try:
            if payload is not None:
                with np.load(io.BytesIO(payload), allow_pickle=False) as stored:
                    log_count, table = float(stored["log_count"]), stored["suffix"]
                if table.shape == (t_max + 1, s + 1) and table.dtype == np.float64:
                    table.flags.writeable = False
                    return log_count, table
        except (OSError, ValueError, KeyError):
            pass  # signed but not this layout: compute again
    log_count = log_count_meta_experts(n, t_max, s)
    table = suffix_rows(n, t_max, s, np.arange(t_max + 1))
    if name is not None:  # signed and written atomically (agents._public_cache)
        buffer = io.BytesIO()
        np.savez(buffer, log_count=np.float64(log_count), suffix=table)
        write_entry(name, "meta-expert-tables", buffer.getvalue())
    table.flags.writeable = False
    return log_count, table


def noisy_hedge_eta(
    n: int, t_max: int, s: int, log_meta_experts: float, tuning: str, noise_scale: float
) -> float:
    """The noisy-Hedge rate over the meta-experts for Laplace noise of scale ``noise_scale``.

    ``eta = sqrt(log K / (T (1/8 + b^2)))`` capped at ``1/(2b)``, with ``log K`` the exact
    ``log |E|`` (``"calibrated"``) or Corollary 4.1.1's ``max(log N, 2 S log(NT))`` (``"paper"``).
    """
    if tuning == "paper":
        log_k = max(math.log(n), 2.0 * s * math.log(n * t_max)) if n > 1 else 1.0
    else:
        log_k = max(log_meta_experts, 1e-12)
    eta = math.sqrt(log_k / (t_max * (0.125 + noise_scale**2)))
    if noise_scale > 0:
        eta = min(eta, 0.5 / noise_scale)
    return eta
