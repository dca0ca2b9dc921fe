"""Empirical privacy audits: a statistically valid LOWER bound on a mechanism's epsilon.

Method (DESIGN §4). Run the mechanism (or a batched agent) ``n_runs`` times on an input ``x`` and
``n_runs`` times on a neighbour ``x'`` with independent seeds. Split each side's runs in two
halves. On the *selection* half, search a family of candidate events E (and their complements,
in both directions) for the one with the largest lower bound. On the *held-out* half, count E on
each side and turn the counts into one-sided Clopper–Pearson bounds at confidence ``1 - alpha``
(``alpha / 2`` per side, union bound)::

    epsilon_lower_bound = log((p_hi_lower - delta) / p_lo_upper)

where ``p_hi`` is the probability of E on the side where it is more likely. An
(epsilon, delta)-DP mechanism satisfies ``P(E | x) <= e^epsilon P(E | x') + delta`` for every E,
so with probability at least ``1 - alpha`` the bound does not exceed the true epsilon. Because E
is chosen on data the test never reuses, no multiple-testing correction is needed.

Reading a result: ``passed`` means the runs found no evidence against the claim (it does not
prove the claim); a failed audit of a correct mechanism happens with probability at most
``alpha``. Power depends on the neighbouring inputs: pick the pair that makes the mechanism's
worst case visible.
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
    check_loss_array,
)
from dp_experts_env.batch_rng import BatchRNG, run_seeds

__all__ = [
    "AuditResult",
    "audit_agent",
    "audit_mechanism",
    "audit_samples",
    "clopper_pearson",
    "epsilon_lower_bound",
]

_N_CUTS = 120  # threshold events tried for real outputs
_MAX_GRID = 17  # time points delimiting blocks of rounds in agent audits
_CHUNK = 1 << 22  # elements per temporary when counting per-round events


# --------------------------------------------------------------------------- statistics
def clopper_pearson(count: Any, n: int, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """One-sided Clopper–Pearson bounds for a binomial proportion.

    Args:
        count: successes (scalar or array).
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


# --------------------------------------------------------------------------- result
@dataclass(frozen=True)
class AuditResult:
    """Outcome of an audit.

    Attributes:
        epsilon_lower_bound: epsilon any mechanism producing these counts must exceed, with
            confidence ``1 - alpha`` (0 when the counts show nothing).
        claimed_epsilon: the claim under test.
        claimed_delta: the delta of the claim (enters the bound).
        passed: ``epsilon_lower_bound <= claimed_epsilon``.
        event: the selected event, in words, and which side it favours.
        counts: held-out occurrences of the event on (input, neighbour).
        n_heldout: held-out runs per side (the denominators of ``counts``).
        n_runs: runs per side.
        alpha: error probability of the bound.
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

    def summary(self) -> str:
        """One line for logs and the CLI."""
        verdict = "passed" if self.passed else "FAILED"
        return (
            f"audit {verdict}: epsilon >= {self.epsilon_lower_bound:.3f} (confidence "
            f"{1 - self.alpha:g}) vs claimed {self.claimed_epsilon:g}; event {self.event}; "
            f"counts {self.counts[0]}/{self.n_heldout} vs {self.counts[1]}/{self.n_heldout}"
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
    """{out = v} for each value v seen in the selection half (1-D discrete outputs)."""

    def __init__(self, values: np.ndarray) -> None:
        self.values = np.unique(values)
        self.size = len(self.values)

    def counts(self, samples: np.ndarray) -> np.ndarray:
        pos = np.clip(np.searchsorted(self.values, samples), 0, self.size - 1)
        hit = self.values[pos] == samples
        return np.bincount(pos[hit], minlength=self.size)

    def indicator(self, samples: np.ndarray, i: int) -> np.ndarray:
        return samples == self.values[i]

    def describe(self, i: int) -> str:
        return f"output == {self.values[i]:g}"


class _RatioSets(_Family):
    """{out in S_k}: the k values most favoured by one side on the selection half."""

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
        return f"output in {{{shown}{more}}} ({i + 1} values)"


class _Thresholds(_Family):
    """{out[:, col] > c} for cut points at quantiles of the pooled selection half."""

    def __init__(self, pooled: np.ndarray, columns: int) -> None:
        tail = np.logspace(-3.5, math.log10(0.5), _N_CUTS // 2)
        levels = np.unique(np.concatenate([tail, 1.0 - tail]))
        cuts = [np.unique(np.quantile(pooled[:, c], levels)) for c in range(columns)]
        self.col = np.concatenate([np.full(len(k), c) for c, k in enumerate(cuts)])
        self.cut = np.concatenate(cuts)
        self.columns = columns
        self.size = len(self.cut)

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
        where = f"output[{self.col[i]}]" if self.columns > 1 else "output"
        return f"{where} > {self.cut[i]:.6g}"


class _RoundValue(_Family):
    """{J_t = j} for each round t and value j (sequence outputs, values in [0, k))."""

    def __init__(self, rounds: int, k: int, offset: int) -> None:
        self.rounds, self.k, self.offset = rounds, k, offset
        self.size = rounds * k

    def counts(self, samples: np.ndarray) -> np.ndarray:
        out = np.zeros(self.size, dtype=np.int64)
        step = max(1, _CHUNK // max(samples.shape[0], 1))  # bounded temporaries for long games
        for start in range(0, self.rounds, step):
            block = samples[:, start : start + step].astype(np.int64)
            flat = (np.arange(start, start + block.shape[1]) * self.k)[None, :] + block
            out += np.bincount(flat.ravel(), minlength=self.size)
        return out

    def indicator(self, samples: np.ndarray, i: int) -> np.ndarray:
        t, j = divmod(i, self.k)
        return samples[:, t] == j

    def describe(self, i: int) -> str:
        t, j = divmod(i, self.k)
        return f"J_{t + self.offset} == {j} (round index from 0)"


class _Blocks(_Family):
    """{J_t = j for every t in [a, b)} for blocks between grid points of the rounds."""

    def __init__(self, rounds: int, k: int, offset: int) -> None:
        grid = np.unique(np.linspace(0, rounds, min(rounds + 1, _MAX_GRID)).round().astype(int))
        pairs = [(a, b) for i, a in enumerate(grid) for b in grid[i + 1 :] if b - a >= 2]
        self.pairs = np.array(pairs, dtype=np.int64).reshape(-1, 2)
        self.grid, self.k, self.offset = grid, k, offset
        self.size = len(self.pairs) * k

    def counts(self, samples: np.ndarray) -> np.ndarray:
        out = np.zeros((self.k, len(self.pairs)), dtype=np.int64)
        if not len(self.pairs):
            return out.ravel()
        a, b = self.pairs[:, 0], self.pairs[:, 1]
        for j in range(self.k):
            c = np.zeros((samples.shape[0], samples.shape[1] + 1), dtype=np.int32)
            np.cumsum(samples == j, axis=1, out=c[:, 1:])
            out[j] = ((c[:, b] - c[:, a]) == (b - a)[None, :]).sum(axis=0)
        return out.ravel()

    def indicator(self, samples: np.ndarray, i: int) -> np.ndarray:
        j, p = divmod(i, len(self.pairs))
        a, b = self.pairs[p]
        return np.all(samples[:, a:b] == j, axis=1)

    def describe(self, i: int) -> str:
        j, p = divmod(i, len(self.pairs))
        a, b = self.pairs[p] + self.offset
        return f"J_t == {j} for all rounds t in [{a}, {b}) (round index from 0)"


class _Switches(_Family):
    """{number of switches >= s} for s = 1 .. rounds - 1."""

    def __init__(self, rounds: int) -> None:
        self.size = max(rounds - 1, 0)

    @staticmethod
    def _switches(samples: np.ndarray) -> np.ndarray:
        return np.count_nonzero(samples[:, 1:] != samples[:, :-1], axis=1)

    def counts(self, samples: np.ndarray) -> np.ndarray:
        hist = np.bincount(self._switches(samples), minlength=self.size + 1)
        return np.cumsum(hist[::-1])[::-1][1 : self.size + 1]

    def indicator(self, samples: np.ndarray, i: int) -> np.ndarray:
        return self._switches(samples) >= i + 1

    def describe(self, i: int) -> str:
        return f"number of switches >= {i + 1}"


def _families(kind: str, sel_a: np.ndarray, sel_b: np.ndarray, **info: Any) -> list[_Family]:
    if kind == "real":
        pooled = np.concatenate([sel_a, sel_b]).reshape(len(sel_a) + len(sel_b), -1)
        return [_Thresholds(pooled, pooled.shape[1])]
    if kind == "discrete":
        values = _Values(np.concatenate([sel_a, sel_b]))
        return [values, _RatioSets(values, sel_a, sel_b)]
    rounds, k, offset = sel_a.shape[1], info["k"], info["offset"]
    return [_RoundValue(rounds, k, offset), _Blocks(rounds, k, offset), _Switches(rounds)]


# --------------------------------------------------------------------------- core audit
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
    if kind == "sequence" and a.shape[1] == 0:
        return AuditResult(
            0.0,
            claimed_epsilon,
            claimed_delta,
            True,
            "none: no output depends on the differing datum",
            (0, 0),
            n - half,
            n,
            alpha,
        )
    shaped = (lambda s: s) if kind != "real" else (lambda s: s.reshape(len(s), -1))
    families = _families(kind, shaped(sel_a), shaped(sel_b), **info)
    cand: list[tuple[int, int]] = [
        (f, i) for f, fam in enumerate(families) for i in range(fam.size)
    ]
    ca = np.concatenate([fam.counts(shaped(sel_a)) for fam in families]).astype(np.float64)
    cb = np.concatenate([fam.counts(shaped(sel_b)) for fam in families]).astype(np.float64)
    # Each candidate event, its complement, and both directions (a over b, b over a).
    hi = np.concatenate([ca, half - ca, cb, half - cb])
    lo = np.concatenate([cb, half - cb, ca, half - ca])
    scores = epsilon_lower_bound(hi, lo, half, alpha=alpha, delta=claimed_delta)
    if scores.max() > 0:
        best = int(np.argmax(scores))
    else:  # nothing significant on the selection half: take the largest smoothed ratio
        best = int(np.argmax(np.log((hi + 1.0) / (lo + 1.0))))
    quarter, which = divmod(best, len(cand))
    complement, a_over_b = quarter % 2 == 1, quarter < 2
    f, i = cand[which]
    fam = families[f]
    hit_a = fam.indicator(shaped(out_a), i)
    hit_b = fam.indicator(shaped(out_b), i)
    if complement:
        hit_a, hit_b = ~hit_a, ~hit_b
    k_a, k_b = int(hit_a.sum()), int(hit_b.sum())
    m = n - half
    k_hi, k_lo = (k_a, k_b) if a_over_b else (k_b, k_a)
    lb = float(epsilon_lower_bound(k_hi, k_lo, m, alpha=alpha, delta=claimed_delta))
    desc = fam.describe(i)
    desc = f"not ({desc})" if complement else desc
    side = "input" if a_over_b else "neighbour"
    return AuditResult(
        lb,
        claimed_epsilon,
        claimed_delta,
        lb <= claimed_epsilon,
        f"{desc} [more likely on the {side}]",
        (k_a, k_b),
        m,
        n,
        alpha,
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

    Args:
        samples: (n,) or (n, m) outputs of n independent runs on the input.
        neighbor_samples: the same on the neighbour (same shape).
        claimed_epsilon: the claim under test (``inf`` always passes).
        claimed_delta: delta of the claim.
        alpha: error probability of the lower bound.
        output: ``"discrete"`` (indices, booleans; 1-D), ``"real"`` (threshold events per
            column), ``"sequence"`` (integer sequences (n, T) with values in [0, k): per-round,
            block and switch-count events) or ``"auto"`` (bool/int 1-D -> discrete, int 2-D ->
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
        info = {"k": int(max(a.max(), b.max())) + 1, "offset": 0}
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


# --------------------------------------------------------------------------- agents
def _differing_row(losses: np.ndarray, neighbor: np.ndarray) -> int:
    rows = np.flatnonzero(np.any(losses != neighbor, axis=1))
    if len(rows) != 1:
        raise ValueError(
            "losses and neighbor_losses must differ in exactly one row (one round's loss "
            f"vector: event-level neighbours); they differ in {len(rows)} rows"
            + (f" ({rows[:10].tolist()})" if len(rows) else "")
        )
    return int(rows[0])


def _build_agent(agent: Any, n: int, seed: int, shape: dict[str, int], params: dict) -> Any:
    if isinstance(agent, str):
        import agents  # lazy: privacy must not import agents at module level

        kw = {"n_experts": shape["n"], "horizon": shape["t"], "num_envs": n, "seed": seed}
        if agents.spec(agent).feedback == "bandit":
            kw["n_arms"] = shape["k"]
        return agents.make(agent, **kw, **params)
    if params:
        raise TypeError(
            f"agent parameters {sorted(params)} are only accepted with a registered agent name; "
            "a factory f(num_envs, seed) must bind its own parameters"
        )
    if not callable(agent):
        raise TypeError(
            f"agent must be a registered name or a factory f(num_envs, seed), got "
            f"{type(agent).__name__}"
        )
    return agent(n, seed)


def _play(agent: Any, losses: np.ndarray, advice: np.ndarray | None, n: int, k: int) -> np.ndarray:
    """Feed the agent the game directly; return its (n, T) actions."""
    horizon, width = losses.shape
    dtype = np.int16 if k < 2**15 else np.int64
    actions = np.empty((n, horizon), dtype=dtype)
    if agent.feedback == "bandit":
        last_action = np.zeros(n, dtype=np.int64)
        last_loss = np.zeros(n)
        for t in range(horizon):
            adv = advice if advice.ndim == 2 else advice[t]
            obs = {
                "advice": np.broadcast_to(adv, (n, *adv.shape)),
                "last_action": last_action,
                "last_loss": last_loss,
            }
            a = _check_actions(agent.act(obs), n, k)
            actions[:, t] = a
            last_action, last_loss = a, losses[t, a]
    else:
        obs = np.zeros((n, width))
        for t in range(horizon):
            a = _check_actions(agent.act(obs), n, k)
            actions[:, t] = a
            obs = np.broadcast_to(losses[t], (n, width)).copy()
    return actions


def _check_actions(actions: Any, n: int, k: int) -> np.ndarray:
    a = np.asarray(actions, dtype=np.int64).reshape(-1)
    if a.shape != (n,) or a.min() < 0 or a.max() >= k:
        raise ValueError(f"agent returned actions outside [0, {k}) or of the wrong shape {a.shape}")
    return a


def audit_agent(
    agent: str | Callable[[int, int], Any],
    losses: Any,
    neighbor_losses: Any,
    *,
    n_runs: int = 20_000,
    alpha: float = 1e-3,
    seed: int = 0,
    advice: Any = None,
    **agent_params: Any,
) -> AuditResult:
    """Audit a learner's privacy claim on a pair of neighbouring loss sequences.

    One batched agent of ``n_runs`` runs plays each side (agent seeds ``2 k n`` and
    ``(2k + 1) n`` for ``seed = k``, ``n = n_runs``: sides and audit seeds never share runs).
    Observations are fed directly, without an env: full-information agents get the previous
    round's loss vector (zeros before round 0); bandit agents get the advice for the round, the
    arm they played and its loss read from the matrix. The recorded (n_runs, T) action
    sequences are audited with per-round, block and switch-count events, restricted to the
    rounds after the differing one (earlier actions cannot depend on it).

    Args:
        agent: a registered agent name (built with ``agents.make(name, n_experts=N, horizon=T,
            num_envs=n_runs, seed=..., **agent_params)``) or a factory ``f(num_envs, seed)``.
        losses: (T, N) losses in [0, 1] (bandit agents: (T, K) losses of the arms).
        neighbor_losses: the same with exactly one row changed.
        n_runs: runs per side (>= 200).
        alpha: error probability of the lower bound.
        seed: first agent seed.
        advice: bandit agents only: (N, K) or (T, N, K) expert advice (rows are distributions);
            default the identity (N = K).
        **agent_params: passed to ``agents.make`` (e.g. ``epsilon=1.0``).

    Returns:
        An :class:`AuditResult` for the agent's ``privacy`` claim.
    """
    n, alpha, seed = _check_common(n_runs, alpha, seed)
    x = check_loss_array("losses", losses, ndim=2)
    xp = check_loss_array("neighbor_losses", neighbor_losses, ndim=2, shape=x.shape)
    row = _differing_row(x, xp)
    horizon, width = x.shape
    adv = None
    if advice is not None:
        adv = np.asarray(advice, dtype=np.float64)
        if (
            adv.ndim not in (2, 3)
            or adv.shape[-1] != width
            or (adv.ndim == 3 and adv.shape[0] != horizon)
        ):
            raise ValueError(
                f"advice must have shape (N, K) or (T, N, K) with K = {width} arms and "
                f"T = {horizon}, got {adv.shape}"
            )
        if np.any(adv < 0) or not np.allclose(adv.sum(axis=-1), 1.0):
            raise ValueError("advice rows must be probability distributions over the arms")
    n_experts = adv.shape[-2] if adv is not None else width
    shape = {"n": n_experts, "t": horizon, "k": width}
    results = []
    for data, first in ((x, 2 * seed * n), (xp, (2 * seed + 1) * n)):
        ag = _build_agent(agent, n, first, shape, dict(agent_params))
        if getattr(ag, "num_envs", n) != n:
            raise ValueError(f"the factory built {ag.num_envs} runs, expected num_envs={n}")
        if ag.feedback == "bandit":
            if adv is None:
                adv = np.eye(width)
            k = width
        else:
            if advice is not None:
                raise ValueError("advice is only for bandit agents")
            if ag.n_experts != width:
                raise ValueError(f"agent has {ag.n_experts} experts but losses have {width}")
            k = width
        results.append((_play(ag, data, adv, n, k), ag))
    claim = results[0][1].privacy
    actions_x, actions_xp = results[0][0], results[1][0]
    # Actions at index <= row were chosen before the differing loss was fed.
    a, b = actions_x[:, row + 1 :], actions_xp[:, row + 1 :]
    return _select_and_test(
        a,
        b,
        kind="sequence",
        alpha=alpha,
        claimed_epsilon=float(claim.epsilon),
        claimed_delta=float(claim.delta),
        k=k,
        offset=row + 1,
    )
