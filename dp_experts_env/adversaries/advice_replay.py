"""Replay of a user's bandit game: a (T, K) arm-loss matrix and the experts' advice.

Family ``replay`` of both bandit kinds. The advice is ``"identity"`` (the ``bandit`` kind), an
(N, K) matrix, a (T, N, K) tensor or a pure function ``rule(t) -> (N, K)`` of the 1-based round;
rows are checked to be distributions, never renormalised; a neighbour keeps the advice and the
original means (docs/environments.md, "Families and their knobs").
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from dp_experts_env._validation import check_int, check_loss_array
from dp_experts_env.adversaries.advice import AdviceAdversary
from dp_experts_env.adversaries.oblivious import load_losses
from dp_experts_env.adversaries.params import BanditParams
from dp_experts_env.adversaries.registry import register_family

__all__ = ["BanditReplay", "ADVICE_SUM_TOLERANCE", "bandit_replay"]

#: Largest accepted |sum of an advice row - 1| (rows are checked, never renormalised).
ADVICE_SUM_TOLERANCE = 1e-9

_ADVICE_FORMS = (
    "advice must be 'identity', an (N, K) matrix, a (T, N, K) tensor (array or .npy path) or a "
    "rule t -> (N, K) array"
)


def check_advice(name: str, value: Any, shape: tuple[int | None, ...]) -> np.ndarray:
    """A float64 copy of advice rows, each a distribution over the arms (checked, not fixed)."""
    arr = check_loss_array(name, value, ndim=len(shape), shape=shape)
    sums = arr.sum(axis=-1)
    bad = np.abs(sums - 1.0) > ADVICE_SUM_TOLERANCE
    if bad.any():
        idx = tuple(int(i) for i in np.argwhere(bad)[0])
        raise ValueError(
            f"{name} rows must be distributions over the arms (sum 1 within "
            f"{ADVICE_SUM_TOLERANCE}); the row at index {idx} sums to {float(sums[idx])!r} "
            "(advice is never renormalised silently)"
        )
    return arr


def _read_advice(advice: Any) -> Any:
    """A ``.npy`` path becomes its array; anything else is returned as is."""
    if not isinstance(advice, (str, os.PathLike)) or advice == "identity":
        return advice
    path = Path(advice)
    if path.suffix.lower() != ".npy" or not path.is_file():
        raise ValueError(f"{_ADVICE_FORMS}; got {str(advice)!r} (not 'identity' nor a .npy file)")
    try:
        return np.load(path, allow_pickle=False)
    except (ValueError, OSError) as err:
        raise ValueError(f"advice file {str(path)!r} is not a readable .npy file") from err


class BanditReplay(AdviceAdversary):
    """Replay a user (T, K) arm-loss matrix with user advice (identity, matrix, tensor or rule).

    Args:
        n_experts: N; unset (None) takes it from the advice; if given, it must match.
        horizon: T; unset takes it from the matrix; if given, it must match.
        n_arms: K; unset takes it from the matrix; if given, it must match.
        params: :class:`BanditReplayParams` (``losses``, read as
            :func:`~dp_experts_env.adversaries.oblivious.load_losses` does; ``advice``;
            ``rescale``), or its knobs as keywords.
    """

    stochastic_losses = False

    def __init__(
        self,
        n_experts: int | None = None,
        horizon: int | None = None,
        n_arms: int | None = None,
        params: BanditReplayParams | None = None,
        **knobs: Any,
    ) -> None:
        p = BanditReplayParams.resolve(params, knobs)
        losses, advice, rescale = p.losses, p.advice, p.rescale
        if not isinstance(rescale, bool):
            raise TypeError(f"rescale must be True or False, got {rescale!r}")
        if losses is None:
            raise ValueError(
                "family 'replay' needs losses=: a (T, K) arm-loss matrix (array, .npy or .csv "
                "path), row t = the K arm losses of round t"
            )
        matrix = load_losses(losses, rescale=rescale)
        rows, cols = matrix.shape
        if cols < 2:
            raise ValueError(
                f"losses must have at least 2 columns (arms), got shape {matrix.shape}"
            )
        self._rule: Callable[[int], Any] | None = None
        self._fixed: np.ndarray | None = None
        self._tensor: np.ndarray | None = None
        self.identity = False
        advice = _read_advice(advice)
        if advice is None:
            raise ValueError(
                f"family 'replay' of the BanditAdvice env needs advice=: {_ADVICE_FORMS}"
            )
        if isinstance(advice, str):
            if advice != "identity":
                raise ValueError(f"{_ADVICE_FORMS}; got {advice!r}")
            self.identity = True
            n = cols
        elif callable(advice):
            self._rule = advice
            n = self._call_rule(1, None, cols).shape[0]
        else:
            arr = np.asarray(advice) if not isinstance(advice, np.ndarray) else advice
            if arr.ndim == 2:
                self._fixed = check_advice("advice", arr, (None, cols))
                n = self._fixed.shape[0]
            elif arr.ndim == 3:
                self._tensor = check_advice("advice", arr, (rows, None, cols))
                n = self._tensor.shape[1]
            else:
                raise ValueError(f"{_ADVICE_FORMS}; got an array of shape {arr.shape}")
        for name, value, actual in (
            ("horizon", horizon, rows),
            ("n_arms", n_arms, cols),
            ("n_experts", n_experts, n),
        ):
            if value is not None and check_int(name, value, minimum=1) != actual:
                source = "the advice" if name == "n_experts" else f"losses of shape {matrix.shape}"
                raise ValueError(
                    f"{name}={value} disagrees with {source} ({name} = {actual}); leave {name} "
                    "unset or make them agree"
                )
        super().__init__(n, rows, cols)
        for arr in (matrix, self._fixed, self._tensor):
            if arr is not None:
                arr.flags.writeable = False
        self.losses = matrix
        self.rescale = rescale

    def _call_rule(self, t: int, n: int | None, k: int) -> np.ndarray:
        assert self._rule is not None
        try:
            out = self._rule(t)
        except Exception as err:
            raise ValueError(f"the advice rule failed at round {t}: {err!r}") from err
        return check_advice(f"advice rule output at round {t}", out, (n, k))

    def _public(self, t: int) -> np.ndarray:
        return np.broadcast_to(self.losses[t - 1], (self.num_runs, self.n_arms))

    def _advice(self, t: int) -> np.ndarray:
        if self.identity:
            return self._identity_advice()
        shape = (self.num_runs, self.n_experts, self.n_arms)
        if self._fixed is not None:
            return np.broadcast_to(self._fixed, shape)
        if self._tensor is not None:
            return np.broadcast_to(self._tensor[t - 1], shape)
        return np.broadcast_to(self._call_rule(t, self.n_experts, self.n_arms), shape)


@dataclass(frozen=True)
class BanditReplayParams(BanditParams):
    """Knobs of :class:`BanditReplay` (bandit-with-advice kind)."""

    losses: Any = None
    advice: Any = None
    rescale: bool = False


@dataclass(frozen=True)
class ArmReplayParams(BanditParams):
    """Knobs of :func:`bandit_replay` (bandit kind: the advice is the identity)."""

    losses: Any = None
    rescale: bool = False


register_family("bandit_advice", "replay", BanditReplayParams)(BanditReplay)


@register_family("bandit", "replay", ArmReplayParams)
def bandit_replay(
    n_experts: int | None = None,
    horizon: int | None = None,
    n_arms: int | None = None,
    params: ArmReplayParams | None = None,
    **knobs: Any,
) -> BanditReplay:
    """Replay a user (T, K) arm-loss matrix with the K identity experts (N = K)."""
    if n_experts is not None and n_arms is not None and n_experts != n_arms:
        raise ValueError(
            f"the bandit kind uses identity experts: n_experts must equal n_arms, got "
            f"n_experts={n_experts}, n_arms={n_arms}"
        )
    p = ArmReplayParams.resolve(params, knobs)
    return BanditReplay(
        n_experts, horizon, n_arms, losses=p.losses, advice="identity", rescale=p.rescale
    )
