"""Noise backends: where every private learner's randomness is turned into noise.

A backend draws from a :class:`~dp_experts_env.batch_rng.BatchRNG` (B per-run streams; results
have shape ``(B, *shape)``) or from a plain :class:`numpy.random.Generator` (results have shape
``shape``). Each variate consumes a fixed number of uniforms, so batches reproduce single runs.

* ``fast`` -- textbook inverse-CDF sampling in float64. Simulation-grade: the low-order bits of a
  floating-point Laplace sample leak the input (Mironov 2012), so it must not be used to protect
  real data. Fine for measuring regret.
* ``grid`` -- discrete Laplace (two-sided geometric) on the lattice ``2**-k``: the input is rounded
  to the lattice and integer noise is added, so every output is a lattice point whatever the input
  and the floating-point attack has nothing to read. The geometric variates behind it are
  drawn so that float resolution distorts their law only beyond ~40 e-folds (probability ~e^-40,
  see ``GridBackend._geometric``). The rounding can move a value by half a
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

# Memoryless split point of the grid backend's geometric sampler, in e-folds (see _geometric).
_TAIL_CUT = 20.0


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
        if isinstance(rng, BatchRNG):
            # The same operations in the same order, in place (fewer temporaries and calls).
            return rng.laplace(scale, shape)
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
        if isinstance(rng, BatchRNG):
            return rng.gumbel(shape)  # -log(-log(u)), in place
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

    @staticmethod
    def _geometric(t: np.ndarray, u: np.ndarray) -> np.ndarray:
        """Geometric variates on {0, 1, ...} with ``P(G >= m) = exp(-m / t)`` from uniforms ``u``.

        ``u`` holds three open uniforms per variate on its last axis.

        ``floor(t * Exp(1))`` has this law in exact arithmetic, but a float uniform resolves its
        far tail badly (the probability of a value there can be off by a large factor, a leak
        like the one ``grid`` exists to close). So ``G = k M + R`` with block length
        ``k = ceil(t)``: ``R`` is the geometric truncated to ``[0, k)`` (inverse CDF on a
        well-conditioned range) and ``M`` is geometric with ratio ``exp(-k/t) >= e^-1``, drawn
        with the memoryless split ``M = M1 if M1 < c else c + M2`` so that only runs beyond
        ``2 * _TAIL_CUT`` e-folds (probability ~e^-40) meet the poorly resolved tail.
        """
        k = np.maximum(1.0, np.ceil(t))
        with np.errstate(divide="ignore", invalid="ignore"):
            span = -np.expm1(-k / t)  # 1 - q^k, q = exp(-1/t); 1 when t == 0
            s = t / k  # M = floor(s * Exp(1))
        r = np.minimum(np.floor(-t * np.log1p(-u[..., 0] * span)), k - 1.0)
        c = np.maximum(1.0, np.ceil(_TAIL_CUT * s))
        m1 = np.floor(-np.log(u[..., 1]) * s)
        m2 = np.floor(-np.log(u[..., 2]) * s)
        return k * np.where(m1 < c, m1, c + m2) + r

    def _discrete_laplace(self, rng: RandomSource, scale: float, shape: tuple[int, ...]):
        # Two-sided geometric with P(X = k) proportional to exp(-|k| step / scale): the difference
        # of two i.i.d. geometrics with ratio exp(-step / scale). Six uniforms per variate, drawn
        # in one call (the per-call cost of a BatchRNG dominates for small arrays).
        t = np.asarray(scale, dtype=np.float64) / self.step
        if np.any(t < 0) or not np.all(np.isfinite(t)):
            raise ValueError(f"scale must be finite and >= 0, got {scale}")
        u = _uniform(rng, (*shape, 6))
        return (self._geometric(t, u[..., :3]) - self._geometric(t, u[..., 3:])) * self.step

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
