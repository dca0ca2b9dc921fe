"""Noise backends: where every private learner's randomness is turned into noise.

A backend draws from a :class:`~dp_experts_env.batch_rng.BatchRNG` (B per-run streams; results
have shape ``(B, *shape)``) or from a plain :class:`numpy.random.Generator` (results have shape
``shape``). Each variate consumes a fixed number of uniforms, so batches reproduce single runs.

* ``fast`` -- textbook inverse-CDF sampling in float64. Simulation-grade: the low-order bits of a
  floating-point Laplace sample leak the input (Mironov 2012), so it must not be used to protect
  real data. Fine for measuring regret.
* ``grid`` -- discrete Laplace (two-sided geometric) on the lattice ``2**-k``: the input is rounded
  to the lattice and integer noise is added, so every output is a lattice point whatever the input
  and the floating-point attack has nothing to read. The rounding can move a value by half a
  lattice step, so the effective L1 sensitivity grows by at most ``dim * 2**-k``; the backend adds
  that to the sensitivity it is told (see :meth:`NoiseBackend.effective_sensitivity`).
"""

from __future__ import annotations

from typing import Protocol

import numpy as np

from dp_experts_env._validation import check_choice, check_int
from dp_experts_env.batch_rng import BatchRNG

__all__ = ["NoiseBackend", "FastBackend", "GridBackend", "get_backend", "BACKENDS"]

RandomSource = BatchRNG | np.random.Generator


def _uniform(rng: RandomSource, shape: tuple[int, ...]) -> np.ndarray:
    """Uniforms on the open interval (0, 1) from either kind of source."""
    if isinstance(rng, BatchRNG):
        return rng.open_uniform(shape)
    if isinstance(rng, np.random.Generator):
        return np.clip(rng.random(shape), 2.0**-54, 1.0 - 2.0**-54)
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
        u = _uniform(rng, shape) - 0.5
        return -scale * np.sign(u) * np.log1p(-2.0 * np.abs(u))

    def add_laplace(
        self, rng: RandomSource, values: np.ndarray, scale: float, batch_axes: int = 1
    ) -> np.ndarray:
        """``values + Lap(scale)``; for a BatchRNG the first axis of ``values`` is the run axis."""
        shape = values.shape[batch_axes:] if isinstance(rng, BatchRNG) else values.shape
        return values + self.laplace(rng, scale, shape)

    def gumbel(self, rng: RandomSource, shape: tuple[int, ...]) -> np.ndarray:
        """Standard Gumbel noise."""
        return -np.log(-np.log(_uniform(rng, shape)))

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
        # Two-sided geometric with P(X = k) proportional to exp(-|k| step / scale): the difference
        # of two i.i.d. geometrics, each floor(E * scale/step) with E ~ Exp(1).
        t = scale / self.step
        e1 = -np.log(_uniform(rng, shape))
        e2 = -np.log(_uniform(rng, shape))
        return (np.floor(e1 * t) - np.floor(e2 * t)) * self.step

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
        return -np.log(-np.log(_uniform(rng, shape)))

    def effective_sensitivity(self, sensitivity: float, dim: int = 1) -> float:
        """True sensitivity plus the rounding slack: each coordinate moves by <= step/2 per side."""
        return float(sensitivity) + dim * self.step


BACKENDS = ("fast", "grid")


def get_backend(name: str | NoiseBackend = "fast") -> NoiseBackend:
    """The backend called ``name`` (``"fast"`` or ``"grid"``), or ``name`` itself if a backend."""
    if not isinstance(name, str):
        if all(hasattr(name, a) for a in ("laplace", "add_laplace", "gumbel")):
            return name
        raise TypeError(f"noise must be one of {BACKENDS} or a backend, got {type(name).__name__}")
    check_choice("noise", name, BACKENDS)
    return FastBackend() if name == "fast" else GridBackend()
