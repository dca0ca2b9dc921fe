"""The exact worst case of a two-expert learner whose law depends only on its past losses.

For N = 2 and losses in {0, 1}^2, a learner playing expert 0 at round t with probability
``p_t(L0, L1)`` of its cumulative losses alone (Hedge, follow-the-leader) has an exact worst case,
a dynamic program over (t, L0, L1):

    V_T(a, b) = -min(a, b),
    V_t(a, b) = max over l in {0, 1}^2 of
                p_t(a, b) l0 + (1 - p_t(a, b)) l1 + V_{t+1}(a + l0, b + l1).

``V_0(0, 0)`` is the largest expected static regret any adversary with {0, 1} losses can force
(an adaptive one gains nothing over the argmax path; fractional losses can force more). It is
the yardstick of ``dp-experts attack`` (docs/attack.md, "The exact yardstick").
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["WorstCase", "exact_worst_case", "loss_law"]

#: Largest horizon the program accepts (T^2 runs of T rounds read the law; T^3 floats held).
MAX_HORIZON = 256
_TOL = 1e-9


@dataclass(frozen=True)
class WorstCase:
    """The exact worst case: its expected static regret and a loss sequence that forces it."""

    regret: float
    losses: np.ndarray  # (T, 2) in {0, 1}


def _round_losses(r: int, a: np.ndarray, b: np.ndarray, reverse: bool) -> np.ndarray:
    """Round r's loss vectors of the runs reaching (a, b).

    min(a, b) rounds (1, 1), |a - b| rounds (1, 0) or (0, 1) (``reverse``: first), then (0, 0).
    """
    both, lead = np.minimum(a, b), np.abs(a - b)
    first, second = (lead, both) if reverse else (both, lead)
    in_both = (r >= first) & (r < first + second) if reverse else r < first
    in_lead = r < first if reverse else (r >= first) & (r < first + second)
    out = np.zeros((a.size, 2))
    out[in_both] = 1.0
    out[in_lead, 0] = a[in_lead] > b[in_lead]
    out[in_lead, 1] = b[in_lead] > a[in_lead]
    return out


def loss_law(
    agent: str,
    horizon: int,
    params: Mapping[str, Any] | None = None,
    *,
    reverse: bool = False,
    seed: int = 0,
) -> list[np.ndarray]:
    """``laws[t][a, b]``: the learner's probability of expert 0 at round t after losses (a, b).

    One batch of T^2 runs, run (a, b) at state (a, b) from round max(a, b) on (O(T^3) work);
    entries not reached by round t are NaN.
    """
    import agents

    a, b = (g.ravel() for g in np.meshgrid(np.arange(horizon), np.arange(horizon), indexing="ij"))
    built = agents.make(
        agent, n_experts=2, horizon=horizon, num_envs=a.size, seed=seed, **dict(params or {})
    )
    built.act(np.zeros((a.size, 2)))
    reached = np.maximum(a, b)
    laws = []
    for t in range(horizon):
        if t:
            built.act(_round_losses(t - 1, a, b, reverse))
        p = np.asarray(built.action_distribution(), dtype=np.float64)[:, 0]
        law = np.full((horizon + 1, horizon + 1), np.nan)
        here = reached <= t
        law[a[here], b[here]] = p[here]
        laws.append(law)
    return laws


def exact_worst_case(
    agent: str, horizon: int, params: Mapping[str, Any] | None = None
) -> WorstCase:
    """The exact worst-case expected static regret of ``agent`` with N = 2 (see the module).

    The law is first checked to be the same under another order of the losses and another seed.

    Args:
        agent: a registered full-information learner with ``action_distribution()``.
        horizon: T (1..256).
        params: its keywords.

    Raises:
        ValueError: a horizon out of range, or a learner whose law is not a function of its
            cumulative losses (Fixed-Share, a lazy sampler).
    """
    if isinstance(horizon, bool) or not isinstance(horizon, int) or not 1 <= horizon <= MAX_HORIZON:
        raise ValueError(f"horizon must be an int in [1, {MAX_HORIZON}], got {horizon!r}")
    laws = loss_law(agent, horizon, params)
    for other in (loss_law(agent, horizon, params, reverse=True),
                  loss_law(agent, horizon, params, seed=1)):  # fmt: skip
        for t, (x, y) in enumerate(zip(laws, other, strict=True)):
            if not np.allclose(x, y, atol=_TOL, equal_nan=True):
                raise ValueError(
                    f"{agent}'s law at round {t} is not a function of its cumulative losses (it "
                    "changes with their order or the seed): the program over (t, L0, L1) does "
                    "not apply"
                )
    size = horizon + 1
    idx = np.arange(size)
    value = -np.minimum.outer(idx, idx).astype(np.float64)  # V_T(a, b)
    choice = []
    moves = [(0, 0), (1, 0), (0, 1), (1, 1)]
    for t in range(horizon - 1, -1, -1):
        p = np.nan_to_num(laws[t][:size, :size])
        best = np.full((size, size), -np.inf)
        arg = np.zeros((size, size), dtype=np.int64)
        for k, (l0, l1) in enumerate(moves):
            nxt = np.full((size, size), -np.inf)
            nxt[: size - l0, : size - l1] = value[l0:, l1:]
            cand = p * l0 + (1 - p) * l1 + nxt
            better = cand > best + _TOL
            best = np.where(better, cand, best)
            arg = np.where(better, k, arg)
        value = best
        choice.append(arg)
    choice.reverse()
    a = b = 0
    losses = np.zeros((horizon, 2))
    for t in range(horizon):
        l0, l1 = moves[int(choice[t][a, b])]
        losses[t] = (l0, l1)
        a, b = a + l0, b + l1
    return WorstCase(float(value[0, 0]), losses)
