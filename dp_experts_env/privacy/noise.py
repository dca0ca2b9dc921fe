"""Noise backends: where every private learner's randomness is turned into noise.

A fixed number of uniforms per variate from a :class:`~dp_experts_env.batch_rng.BatchRNG`
(results ``(B, *shape)``) or a Generator (``shape``). ``fast``: float64, simulation-grade
(Mironov 2012); ``grid``: discrete Laplace on a lattice, its slack added to the sensitivity; the
``Scaled``/``LaterCallsScaled``/``Recording`` wrappers are audit-only and keep the claim.
docs/privacy.md, "Noise backends".
"""

from __future__ import annotations

from typing import Protocol

import numpy as np

from dp_experts_env import samplers
from dp_experts_env._validation import check_choice, check_int
from dp_experts_env.batch_rng import BatchRNG

__all__ = [
    "BACKENDS",
    "FastBackend",
    "GridBackend",
    "LaterCallsScaled",
    "NoiseBackend",
    "RecordingBackend",
    "ScaledBackend",
    "get_backend",
    "noise_multiplier",
    "root_backend",
]

RandomSource = BatchRNG | np.random.Generator


def _uniforms(rng: RandomSource, shape: tuple[int, ...]) -> np.ndarray:
    """Raw uniforms on [0, 1) from either kind of source."""
    if isinstance(rng, BatchRNG):
        return rng.random(shape)
    if isinstance(rng, np.random.Generator):
        return rng.random(shape)
    raise TypeError(f"rng must be a BatchRNG or numpy.random.Generator, got {type(rng).__name__}")


class NoiseBackend(Protocol):
    """What a mechanism needs from a noise source."""

    name: str

    def laplace(self, rng: RandomSource, scale: float, shape: tuple[int, ...]) -> np.ndarray:
        """Laplace(0, scale) noise."""

    def add_laplace(
        self, rng: RandomSource, values: np.ndarray, scale: float, batch_axes: int = 1
    ) -> np.ndarray:
        """``values`` + Laplace noise of the backend's kind (grid: on the lattice)."""

    def gumbel(self, rng: RandomSource, shape: tuple[int, ...]) -> np.ndarray:
        """Standard Gumbel noise (exponential mechanism via Gumbel-max)."""

    def effective_sensitivity(self, sensitivity: float, dim: int = 1) -> float:
        """L1 sensitivity to calibrate to, given the query's true L1 sensitivity."""


class FastBackend:
    """Float64 inverse-CDF sampling (simulation-grade)."""

    name = "fast"

    def laplace(self, rng: RandomSource, scale: float, shape: tuple[int, ...]) -> np.ndarray:
        """Laplace(0, scale) noise of shape ``(B, *shape)`` (BatchRNG) or ``shape``."""
        return samplers.laplace(_uniforms(rng, shape), scale)

    def add_laplace(
        self, rng: RandomSource, values: np.ndarray, scale: float, batch_axes: int = 1
    ) -> np.ndarray:
        """``values + Lap(scale)``; for a BatchRNG the first axis of ``values`` is the run axis."""
        shape = values.shape[batch_axes:] if isinstance(rng, BatchRNG) else values.shape
        return values + self.laplace(rng, scale, shape)

    def gumbel(self, rng: RandomSource, shape: tuple[int, ...]) -> np.ndarray:
        """Standard Gumbel noise."""
        return samplers.gumbel(_uniforms(rng, shape))

    def effective_sensitivity(self, sensitivity: float, dim: int = 1) -> float:
        """No rounding: the true sensitivity."""
        return float(sensitivity)


class GridBackend:
    """Discrete Laplace on the lattice ``2**-bits`` (closes the floating-point attack).

    Args:
        bits: lattice exponent k; outputs are integer multiples of ``2**-k``.
    """

    name = "grid"

    def __init__(self, bits: int = 20) -> None:
        self.bits = check_int("bits", bits, minimum=1, maximum=40)
        self.step = 2.0**-self.bits

    def _discrete_laplace(self, rng: RandomSource, scale: float, shape: tuple[int, ...]):
        # One call for all six uniforms per variate: a BatchRNG's per-call cost dominates.
        t = np.asarray(scale, dtype=np.float64) / self.step
        if np.any(t < 0) or not np.all(np.isfinite(t)):
            raise ValueError(f"scale must be finite and >= 0, got {scale}")
        u = _uniforms(rng, (*shape, samplers.DISCRETE_LAPLACE_UNIFORMS))
        return samplers.discrete_laplace(u, t) * self.step

    def laplace(self, rng: RandomSource, scale: float, shape: tuple[int, ...]) -> np.ndarray:
        """Discrete Laplace noise on the lattice, same scale as Lap(scale)."""
        return self._discrete_laplace(rng, scale, shape)

    def add_laplace(
        self, rng: RandomSource, values: np.ndarray, scale: float, batch_axes: int = 1
    ) -> np.ndarray:
        """Round ``values`` to the lattice, then add lattice noise: outputs are lattice points."""
        shape = values.shape[batch_axes:] if isinstance(rng, BatchRNG) else values.shape
        snapped = np.round(np.asarray(values) / self.step) * self.step
        return snapped + self._discrete_laplace(rng, scale, shape)

    def gumbel(self, rng: RandomSource, shape: tuple[int, ...]) -> np.ndarray:
        """Standard Gumbel noise (selection mechanisms release an index, not a float)."""
        return samplers.gumbel(_uniforms(rng, shape))

    def effective_sensitivity(self, sensitivity: float, dim: int = 1) -> float:
        """True sensitivity plus the rounding slack: each coordinate moves by <= step/2 per side."""
        return float(sensitivity) + dim * self.step


class ScaledBackend:
    """Audit-only: the noise of ``base`` multiplied by ``multiplier`` (the claim is unchanged).

    Laplace scales and Gumbel variates are scaled (so 0.5 weakens selections too); the sensitivity
    is the base's. Backend-free samplers read :func:`noise_multiplier`. ``multiplier = 0`` removes
    the noise but still consumes the uniforms.

    Args:
        base: the backend to weaken (``"fast"``, ``"grid"`` or a backend object).
        multiplier: noise factor, >= 0 (1 is the base backend itself).
    """

    def __init__(self, base: str | NoiseBackend, multiplier: float) -> None:
        inner = get_backend(base)
        try:
            m = float(multiplier)
        except (TypeError, ValueError) as err:
            raise TypeError(f"multiplier must be a number, got {multiplier!r}") from err
        if not (m >= 0.0 and np.isfinite(m)):
            raise ValueError(f"multiplier must be a finite number >= 0, got {multiplier!r}")
        if isinstance(inner, ScaledBackend):  # scaling twice multiplies the factors
            m, inner = m * inner.multiplier, inner.base
        self.base = inner
        self.multiplier = m
        self.name = f"{root_backend(self.base).name} x{self.multiplier:g} (audit mutant)"

    def laplace(self, rng: RandomSource, scale: float, shape: tuple[int, ...]) -> np.ndarray:
        """The base's Laplace noise at ``multiplier * scale``."""
        return self.base.laplace(rng, scale * self.multiplier, shape)

    def add_laplace(
        self, rng: RandomSource, values: np.ndarray, scale: float, batch_axes: int = 1
    ) -> np.ndarray:
        """The base's release at ``multiplier * scale``."""
        return self.base.add_laplace(rng, values, scale * self.multiplier, batch_axes)

    def gumbel(self, rng: RandomSource, shape: tuple[int, ...]) -> np.ndarray:
        """``multiplier`` times the base's Gumbel noise."""
        return self.multiplier * self.base.gumbel(rng, shape)

    def effective_sensitivity(self, sensitivity: float, dim: int = 1) -> float:
        """The base's: calibration (and so the claim) is that of the unweakened learner."""
        return self.base.effective_sensitivity(sensitivity, dim)


class LaterCallsScaled(ScaledBackend):
    """Audit-only: the first ``keep`` calls of ``base`` unchanged, every later one scaled.

    With ``multiplier = 0`` a learner that keeps using its first draw (cached noise) plays as
    before, one whose later draws reach its outputs does not (the audit's noise provenance).

    Args:
        base: the backend (a name or a backend object).
        multiplier: factor on the calls after the first ``keep``.
        keep: calls left unchanged (>= 0).
    """

    def __init__(self, base: str | NoiseBackend, multiplier: float, keep: int = 1) -> None:
        super().__init__(base, multiplier)
        self.keep = check_int("keep", keep, minimum=0)
        self.calls = 0

    def _factor(self) -> float:
        self.calls += 1
        return 1.0 if self.calls <= self.keep else self.multiplier

    def laplace(self, rng: RandomSource, scale: float, shape: tuple[int, ...]) -> np.ndarray:
        """The base's Laplace noise, scaled after the first ``keep`` calls."""
        return self.base.laplace(rng, scale * self._factor(), shape)

    def add_laplace(
        self, rng: RandomSource, values: np.ndarray, scale: float, batch_axes: int = 1
    ) -> np.ndarray:
        """The base's release, its noise scaled after the first ``keep`` calls."""
        return self.base.add_laplace(rng, values, scale * self._factor(), batch_axes)

    def gumbel(self, rng: RandomSource, shape: tuple[int, ...]) -> np.ndarray:
        """The base's Gumbel noise, scaled after the first ``keep`` calls."""
        return self._factor() * self.base.gumbel(rng, shape)


class RecordingBackend:
    """Audit-only: ``base`` unchanged, keeping every ``add_laplace`` output and its inputs.

    ``releases`` holds ``(values, noisy)`` float64 pairs, run axis first, while ``enabled`` and
    fewer than ``max_calls`` are kept. Only values a claim covers as releases may be audited.

    Args:
        base: the backend to record (a name or a backend object, possibly a ScaledBackend).
        max_calls: the most calls kept.
    """

    def __init__(self, base: str | NoiseBackend = "fast", max_calls: int = 1 << 30) -> None:
        self.base = get_backend(base)
        self.name = self.base.name
        self.max_calls = check_int("max_calls", max_calls, minimum=0)
        self.enabled = True
        self.releases: list[tuple[np.ndarray, np.ndarray]] = []
        #: Laplace coordinates drawn per run so far (checked against the declaration)
        self.drawn = 0
        #: calls that drew one scalar per run (sparse-vector queries and thresholds)
        self.drawn_scalar = 0

    @property
    def multiplier(self) -> float:
        """The base's noise multiplier (1 unless it is a :class:`ScaledBackend`)."""
        return noise_multiplier(self.base)

    def laplace(self, rng: RandomSource, scale: float, shape: tuple[int, ...]) -> np.ndarray:
        """The base's Laplace noise (not a release: only counted)."""
        self.drawn += int(np.prod(shape))
        self.drawn_scalar += int(np.prod(shape)) == 1
        return self.base.laplace(rng, scale, shape)

    def add_laplace(
        self, rng: RandomSource, values: np.ndarray, scale: float, batch_axes: int = 1
    ) -> np.ndarray:
        """The base's release, recorded with its exact input."""
        out = self.base.add_laplace(rng, values, scale, batch_axes)
        per_run = np.shape(out)[batch_axes:] if isinstance(rng, BatchRNG) else np.shape(out)
        self.drawn += int(np.prod(per_run))
        self.drawn_scalar += int(np.prod(per_run)) == 1
        if self.enabled and len(self.releases) < self.max_calls:
            exact = np.broadcast_to(np.asarray(values, dtype=np.float64), np.shape(out))
            self.releases.append((exact.copy(), np.array(out, dtype=np.float64)))
        return out

    def gumbel(self, rng: RandomSource, shape: tuple[int, ...]) -> np.ndarray:
        """The base's Gumbel noise."""
        return self.base.gumbel(rng, shape)

    def effective_sensitivity(self, sensitivity: float, dim: int = 1) -> float:
        """The base's."""
        return self.base.effective_sensitivity(sensitivity, dim)


def root_backend(backend: NoiseBackend) -> NoiseBackend:
    """The noise source under any audit wrappers (ScaledBackend, RecordingBackend)."""
    while isinstance(backend, (ScaledBackend, RecordingBackend)):
        backend = backend.base
    return backend


def noise_multiplier(backend: NoiseBackend) -> float:
    """The factor an audit wrapper applies to the noise (1.0 for ``fast`` and ``grid``)."""
    return float(getattr(backend, "multiplier", 1.0))


BACKENDS = ("fast", "grid")


def get_backend(name: str | NoiseBackend = "fast") -> NoiseBackend:
    """The backend called ``name`` (``"fast"`` or ``"grid"``), or ``name`` itself if a backend."""
    if not isinstance(name, str):
        if all(hasattr(name, a) for a in ("laplace", "add_laplace", "gumbel")):
            return name
        raise TypeError(f"noise must be one of {BACKENDS} or a backend, got {type(name).__name__}")
    check_choice("noise", name, BACKENDS)
    return FastBackend() if name == "fast" else GridBackend()
