"""Oblivious loss sequences (Asi, Raman & Saha, Section 2.1): fixed before play, never reactive.

None reads the learner's actions, and none holds a T x N matrix except ``replay`` (the user's):
round ``t`` is a pure function of (seed, t). ``default_switches`` is the number of planted
switches. The ``"oblivious"`` families and knobs: docs/environments.md.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from dp_experts_env._validation import check_float, check_int, check_loss_array
from dp_experts_env.adversaries.base import Adversary, Round
from dp_experts_env.adversaries.changepoints import dyadic_capacity
from dp_experts_env.adversaries.params import (  # noqa: F401  (ChangePoints annotates inherited fields; the API reference resolves it here)
    ChangePoints,
    FamilyParams,
    LevelParams,
    ShiftParams,
)
from dp_experts_env.adversaries.registry import (
    families,
    family_factory,
    family_params,
    register_family,
)
from dp_experts_env.adversaries.shifting import PlantedModel, SegmentModel
from dp_experts_env.batch_rng import BatchRNG

__all__ = [
    "SwitchingDeterministic",
    "AntiLazy",
    "FtlTrap",
    "DyadicAlternating",
    "SampledStochastic",
    "sampled_stochastic",
    "Replay",
    "load_losses",
    "SwitchingDeterministicParams",
    "AntiLazyParams",
    "SampledStochasticParams",
    "ReplayParams",
    "FROM_LOSSES",
    "FromLosses",
]


@dataclass(frozen=True)
class SwitchingDeterministicParams(ShiftParams, LevelParams):
    """Knobs of :class:`SwitchingDeterministic`: the schedule and the two loss levels."""


@dataclass(frozen=True)
class AntiLazyParams(LevelParams):
    """Knobs of :class:`AntiLazy`: the number of switches and the two loss levels."""

    n_shifts: int | None = None


@dataclass(frozen=True)
class SampledStochasticParams(FamilyParams):
    """Knobs of :class:`SampledStochastic`: ``model``, and that family's in ``model_knobs``."""

    model: str = "bernoulli_gap"
    model_knobs: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def from_keywords(cls, given: Mapping[str, Any]) -> SampledStochasticParams:
        """``model`` from its keyword, every other keyword into ``model_knobs``."""
        knobs = {k: v for k, v in given.items() if k != "model"}
        return cls(model=given.get("model", cls.model), model_knobs=knobs)

    def knobs(self) -> dict[str, Any]:
        """``model`` and the forwarded knobs, as the constructor takes them."""
        return {"model": self.model, **self.model_knobs}

    @classmethod
    def knob_names(cls, given: Mapping[str, Any] | None = None) -> tuple[str, ...]:
        """``model`` plus the knobs of the shift family it names (when it is one)."""
        model = (given or {}).get("model", cls.model)
        inner: tuple[str, ...] = ()
        if isinstance(model, str) and model in families("shift"):
            inner = family_params("shift", model).knob_names()
        return ("model", *inner)


@dataclass(frozen=True)
class ReplayParams(FamilyParams):
    """Knobs of :class:`Replay`; the matrix sets N and T, so an env fills no size."""

    FILLED: ClassVar[tuple[str, ...] | None] = ()

    losses: Any = None
    rescale: bool = False


def _check_levels(best_loss: float, other_loss: float) -> tuple[float, float]:
    best = check_float("best_loss", best_loss, minimum=0.0, maximum=1.0)
    other = check_float("other_loss", other_loss, minimum=0.0, maximum=1.0)
    if best >= other:
        raise ValueError(
            f"best_loss must be < other_loss so that the planted expert is best; got "
            f"best_loss={best}, other_loss={other}"
        )
    return best, other


@register_family("oblivious", "switching_deterministic", SwitchingDeterministicParams)
class SwitchingDeterministic(PlantedModel):
    """Oblivious family ``switching_deterministic``: a 0/1 sequence with K planted switches.

    The planted expert has ``best_loss`` in [0, 1), the others ``other_loss`` in (best_loss, 1],
    on any change-point schedule. Knobs: :class:`SwitchingDeterministicParams` (K None:
    ``min(4, T - 1)``).
    """

    knows_means = False

    def __init__(
        self,
        n_experts: int,
        horizon: int,
        params: SwitchingDeterministicParams | None = None,
        **knobs: Any,
    ) -> None:
        p = SwitchingDeterministicParams.resolve(params, knobs)
        super().__init__(n_experts, horizon, p)
        self.best_loss, self.other_loss = _check_levels(p.best_loss, p.other_loss)

    def _segment_values(self, lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return np.full(lengths.shape, self.best_loss), np.full(lengths.shape, self.other_loss)

    def _sample(self, rng: BatchRNG, params: np.ndarray) -> np.ndarray:
        return params.copy()  # deterministic given the structure: no data uniforms


@register_family("oblivious", "anti_lazy", AntiLazyParams)
class AntiLazy(SwitchingDeterministic):
    """Oblivious family ``anti_lazy``: the best expert switches just after every ``t = 2^m``.

    The switches at ``t = 2^m + 1`` follow the data-independent update times of lazy learners
    (ARS Algorithms 1 and 2); the new best is uniform over the others. Knobs:
    :class:`AntiLazyParams` (``n_shifts``: how many of those rounds, the largest kept; None: all).
    """

    def __init__(
        self,
        n_experts: int,
        horizon: int,
        params: AntiLazyParams | None = None,
        **knobs: Any,
    ) -> None:
        p = AntiLazyParams.resolve(params, knobs)
        horizon = check_int("horizon", horizon, minimum=1)
        PlantedModel.__init__(
            self,
            n_experts,
            horizon,
            ShiftParams(n_shifts=p.n_shifts, change_points="anti_doubling"),
            default_shifts=dyadic_capacity(horizon),
        )
        self.best_loss, self.other_loss = _check_levels(p.best_loss, p.other_loss)


@register_family("oblivious", "dyadic_alternating", LevelParams)
class DyadicAlternating(SegmentModel):
    """Oblivious family ``dyadic_alternating``: expert ``r mod 2`` is perfect on block r.

    Blocks are ``B_r = [2^r, 2^(r+1) - 1]`` (defeats block-lazy learners); experts 2..N-1 get
    ``other_loss``. Knobs: :class:`LevelParams`.
    """

    knows_means = False

    def __init__(
        self,
        n_experts: int,
        horizon: int,
        params: LevelParams | None = None,
        **knobs: Any,
    ) -> None:
        p = LevelParams.resolve(params, knobs)
        horizon = check_int("horizon", horizon, minimum=1)
        points = [1 << r for r in range(1, horizon.bit_length()) if (1 << r) <= horizon]
        super().__init__(n_experts, horizon, ShiftParams(change_points=points))
        self.best_loss, self.other_loss = _check_levels(p.best_loss, p.other_loss)

    def _build(self, rng: BatchRNG, change_points: np.ndarray) -> None:
        return None

    def _rows(self, segment: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        loss = np.full((segment.size, self.n_experts), self.other_loss)
        loss[np.arange(segment.size), segment % 2] = self.best_loss
        return loss, loss

    def _sample(self, rng: BatchRNG, params: np.ndarray) -> np.ndarray:
        return params.copy()


@register_family("oblivious", "ftl_trap", FamilyParams)
class FtlTrap(Adversary):
    """Oblivious family ``ftl_trap``: ``(1/2, 0)``, then ``(0, 1)``, ``(1, 0)``, ``(0, 1)``, ...

    Follow-the-Leader always picks the expert about to lose; experts 2..N-1 have loss 1. No knobs.
    """

    def __init__(
        self, n_experts: int, horizon: int, params: FamilyParams | None = None, **knobs: Any
    ) -> None:
        FamilyParams.resolve(params, knobs)  # no knobs: refuses any keyword by name
        super().__init__(n_experts, horizon)
        if self.n_experts < 2:
            raise ValueError(f"n_experts must be >= 2 for ftl_trap, got {self.n_experts}")

    def _reset(self, seeds: list[int]) -> None:
        return None

    def _draw(self, t: int) -> np.ndarray:
        row = np.ones(self.n_experts)
        if t == 1:
            row[:2] = (0.5, 0.0)
        elif t % 2 == 0:
            row[:2] = (0.0, 1.0)
        else:
            row[:2] = (1.0, 0.0)
        return np.repeat(row[None, :], self.num_runs, axis=0)


class SampledStochastic(Adversary):
    """Oblivious family ``sampled_stochastic``: a shifting-stochastic model played as a sequence.

    One realisation of the shift family ``model``, generated round by round; rounds carry the
    model's means and segments. Knobs: :class:`SampledStochasticParams` (``model=`` and that
    family's keywords).
    """

    knows_means = True
    has_segments = True

    def __init__(
        self,
        n_experts: int,
        horizon: int,
        params: SampledStochasticParams | None = None,
        **knobs: Any,
    ) -> None:
        super().__init__(n_experts, horizon)
        if params is None:
            params = SampledStochasticParams.from_keywords(knobs)
        else:
            SampledStochasticParams.resolve(params, knobs)  # type and "not both" checks
        model, knobs = params.model, dict(params.model_knobs)
        if model not in families("shift"):
            raise ValueError(
                f"model must be one of the shift families {families('shift')}, got {model!r}"
            )
        factory = family_factory("shift", model)
        accepted = list(family_params("shift", model).knob_names())
        unknown = sorted(set(knobs) - set(accepted))
        if unknown:
            raise TypeError(
                f"{unknown} are not parameters of shift family {model!r} (sampled_stochastic "
                f"model); it accepts {accepted}"
            )
        inner = factory(self.n_experts, self.horizon, **knobs)
        if not isinstance(inner, SegmentModel):
            raise ValueError(f"model must name a shifting-stochastic family, got {model!r}")
        self.model = model
        self.inner = inner
        self.default_switches = inner.default_switches

    def _reset(self, seeds: list[int]) -> None:
        self.inner.reset(seeds)  # the neighbour, if any, is applied by this wrapper

    def _draw(self, t: int) -> np.ndarray:
        self.inner.t = t
        return self.inner._draw(t)

    def _finish(self, t: int, z: np.ndarray) -> Round:
        return self.inner._finish(t, z)

    @property
    def change_points(self) -> np.ndarray:
        """(B, K) change rounds of the sampled model (after reset)."""
        return self.inner.change_points

    def segment_means(self) -> np.ndarray:
        """(B, K + 1, N) means of the sampled model (after reset)."""
        return self.inner.segment_means()


@register_family("oblivious", "sampled_stochastic", SampledStochasticParams)
def sampled_stochastic(
    n_experts: int, horizon: int, params: SampledStochasticParams | None = None, **knobs: Any
) -> SampledStochastic:
    """Oblivious family ``sampled_stochastic``: build a :class:`SampledStochastic`."""
    return SampledStochastic(n_experts, horizon, params, **knobs)


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _read_csv(path: Path) -> np.ndarray:
    """Numbers separated by commas, one row per round; one header line is tolerated."""

    def fail(err: Exception) -> ValueError:
        return ValueError(
            f"losses file {str(path)!r} is not a numeric CSV (numbers separated by commas, one "
            f"row per round, optionally one header line): {err}"
        )

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # numpy warns on an empty file
        try:
            return np.loadtxt(path, delimiter=",", ndmin=2, dtype=np.float64)
        except ValueError as first:
            with open(path) as handle:
                header = handle.readline()
            if any(_is_number(cell) for cell in header.split(",")):
                raise fail(first) from first  # the first line is data: the error is real
            # A first line without any number is a header: skip it.
            try:
                return np.loadtxt(path, delimiter=",", ndmin=2, dtype=np.float64, skiprows=1)
            except ValueError as second:
                raise fail(second) from second


def load_losses(losses: Any, *, rescale: bool = False) -> np.ndarray:
    """Read and validate a user loss matrix: a (T, N) float64 copy with values in [0, 1].

    Args:
        losses: an array-like, or a path (``str``/``PathLike``) to a ``.npy`` or ``.csv`` file.
        rescale: map the matrix affinely onto [0, 1] (min to 0, max to 1) before the range check.

    Raises:
        ValueError: missing or unreadable file, unknown extension, wrong dimension, empty matrix,
            non-finite values, or values outside [0, 1] (never clipped).
        TypeError: a non-numeric array.
    """
    if isinstance(losses, (str, os.PathLike)):
        path = Path(losses)
        if not path.is_file():
            raise ValueError(f"losses file {str(path)!r} does not exist")
        suffix = path.suffix.lower()
        if suffix == ".npy":
            try:
                losses = np.load(path, allow_pickle=False)
            except (ValueError, OSError) as err:
                raise ValueError(f"losses file {str(path)!r} is not a readable .npy file") from err
        elif suffix == ".csv":
            losses = _read_csv(path)
        else:
            raise ValueError(
                f"losses file must end in .npy or .csv, got {str(path)!r} (or pass an array)"
            )
    if losses is None:
        raise ValueError("family 'replay' needs losses=: a (T, N) array, .npy path or .csv path")
    if rescale:
        arr = check_loss_array("losses", losses, ndim=2, low=-np.inf, high=np.inf)
        low, high = arr.min(), arr.max()
        arr = (arr - low) / (high - low) if high > low else np.zeros_like(arr)
        return check_loss_array("losses", arr, ndim=2)
    return check_loss_array("losses", losses, ndim=2)


class FromLosses:
    """The type of :data:`FROM_LOSSES`: a size read from the replayed matrix (as None does)."""

    def __repr__(self) -> str:
        return "FROM_LOSSES"


#: Default of the size arguments of the families that replay a loss matrix (read from it).
FROM_LOSSES = FromLosses()


@register_family("oblivious", "replay", ReplayParams)
class Replay(Adversary):
    """Oblivious family ``replay``: play a user's (T, N) loss matrix row by row.

    Args:
        n_experts: N; unset or None: from the matrix, else it must match.
        horizon: T; as ``n_experts``.
        params: :class:`ReplayParams` (``losses``, copied and read by :func:`load_losses`;
            ``rescale``), or its knobs as keywords.
    """

    def __init__(
        self,
        n_experts: int | None | FromLosses = FROM_LOSSES,
        horizon: int | None | FromLosses = FROM_LOSSES,
        params: ReplayParams | None = None,
        **knobs: Any,
    ) -> None:
        p = ReplayParams.resolve(params, knobs)
        losses, rescale = p.losses, p.rescale
        if not isinstance(rescale, bool):
            raise TypeError(f"rescale must be True or False, got {rescale!r}")
        matrix = load_losses(losses, rescale=rescale)
        rows, cols = matrix.shape
        for name, value, actual in (("horizon", horizon, rows), ("n_experts", n_experts, cols)):
            if value is FROM_LOSSES or value is None:
                continue
            if check_int(name, value, minimum=1) != actual:
                raise ValueError(
                    f"{name}={value} disagrees with the losses matrix of shape {matrix.shape} "
                    f"(T={rows} rows, N={cols} columns); leave {name} unset or make them agree"
                )
        super().__init__(cols, rows)
        matrix.flags.writeable = False
        self.losses = matrix
        self.rescale = rescale

    def _reset(self, seeds: list[int]) -> None:
        return None

    def _draw(self, t: int) -> np.ndarray:
        return np.repeat(self.losses[t - 1][None, :], self.num_runs, axis=0)
