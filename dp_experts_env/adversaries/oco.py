"""Gradient models for online linear optimisation on a convex body (the OCO environment).

Round t charges ``<g_t, x>`` with ``||g_t||_2 <= G``; round t is a pure function of (seed, t) and
``reset(seeds, neighbor=(t, g))`` replaces its gradient. Families: docs/environments.md,
"DPExperts-OCO-v0".
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from dp_experts_env._validation import check_choice, check_float, check_int, check_memory
from dp_experts_env.batch_rng import BatchRNG
from dp_experts_env.kinds import KINDS

#: Largest horizon (as the experts envs: int64 arithmetic on k * T; far beyond anything playable).
MAX_HORIZON = 2**31

__all__ = [
    "BODIES",
    "OCO_FAMILIES",
    "OCOParams",
    "OCOAdversary",
    "dual_norm",
    "load_gradients",
]

BODIES = ("box", "ball")
OCO_FAMILIES = ("stochastic", "shifting", "anti_ftl", "rademacher", "replay", "adaptive")
_DATA_STREAM = 21  # per-round randomness
_STRUCTURE_STREAM = 22  # mean directions drawn at reset
_CHUNK_ELEMENTS = 1 << 16  # doubles per run per generated chunk ...
_CHUNK_TOTAL = 1 << 22  # ... and at most 4 M doubles (32 MB) across the batch
_NORM_SLACK = 1e-9


_KIND = KINDS["oco"]


@dataclass(frozen=True)
class OCOParams:
    """The OCO kind's parameters as data: every knob of ``DPExperts-OCO-v0``'s loss model, once.

    Which family a knob applies to is :attr:`APPLIES`; a family-dependent default (None here)
    comes from :attr:`FAMILY_DEFAULTS`; sizes and body from :data:`dp_experts_env.kinds.KINDS`.

    Attributes:
        family: one of :data:`OCO_FAMILIES` (None: ``"replay"`` when ``gradients`` is given,
            else the kind's default family).
        dim: d (None: the kind's default; ``"replay"`` reads it from the matrix).
        horizon: T (same rule).
        body: ``"box"`` or ``"ball"``.
        radius: R > 0.
        grad_bound: G > 0, the bound on ``||g_t||_2`` (also the neighbours' bound).
        gap: the mean's (or, adaptive, the reacting) share of G, in [0, 1].
        n_shifts: change points of ``"shifting"`` (< T; None: the family's default).
        gradients: the (T, d) matrix of ``"replay"`` (array, ``.npy`` or ``.csv`` path).
    """

    #: knob -> the families it applies to (giving it to another family is an error).
    APPLIES: ClassVar[Mapping[str, tuple[str, ...]]] = {
        "gap": ("stochastic", "shifting", "adaptive"),
        "n_shifts": ("shifting",),
        "gradients": ("replay",),
    }
    #: knob -> {family: default} for the knobs whose default depends on the family.
    FAMILY_DEFAULTS: ClassVar[Mapping[str, Mapping[str, Any]]] = {
        "gap": {"stochastic": 0.3, "shifting": 0.3, "adaptive": 0.5},
        "n_shifts": {"shifting": 3},
    }

    family: str | None = None
    dim: int | None = None
    horizon: int | None = None
    body: str = _KIND.defaults["body"]
    radius: float = 1.0
    grad_bound: float = 1.0
    gap: float | None = None
    n_shifts: int | None = None
    gradients: Any = None

    @classmethod
    def knob_names(cls) -> tuple[str, ...]:
        """Every field, in declaration order (for routing and messages)."""
        return tuple(f.name for f in fields(cls))

    @classmethod
    def from_keywords(
        cls, knobs: Mapping[str, Any], where: str = "OCOAdversary", also: Sequence[str] = ()
    ) -> OCOParams:
        """The parameters from keywords; None counts as not given; unknown names are refused.

        ``where`` and ``also`` (the caller's own keywords) are for the message.

        Raises:
            TypeError: a keyword that is not a field (the message names it and lists them).
        """
        names = cls.knob_names()
        unknown = sorted(set(knobs) - set(names))
        if unknown:
            raise TypeError(
                f"{where} got unexpected keyword(s) {unknown}; it accepts {[*names, *also]}"
            )
        return cls(**{k: v for k, v in knobs.items() if v is not None})

    def resolved_family(self) -> str:
        """The family played: ``family``, else ``"replay"`` with a matrix, else the kind's."""
        if self.family is not None:
            return check_choice("family", self.family, OCO_FAMILIES)
        return "replay" if self.gradients is not None else _KIND.family

    def knob(self, name: str, family: str) -> Any:
        """A family-dependent knob's value for ``family`` (the user's, else its default).

        Raises:
            ValueError: the knob was given but does not apply to ``family``.
        """
        value = getattr(self, name)
        applies = self.APPLIES[name]
        if family not in applies:
            if value is not None:
                if len(applies) > 1:
                    scope = ", ".join(applies[:-1]) + " and " + applies[-1]
                else:
                    scope = f"family={applies[0]!r} only"
                raise ValueError(f"{name}= applies to {scope}, not {family!r}")
            return None
        return self.FAMILY_DEFAULTS.get(name, {}).get(family) if value is None else value


def dual_norm(v: np.ndarray, body: str) -> np.ndarray:
    """``max_{x in K} <v, x> / R`` along the last axis: L1 norm (box) or L2 norm (ball)."""
    if body == "box":
        return np.abs(v).sum(axis=-1)
    return np.sqrt(np.einsum("...i,...i->...", v, v))


def load_gradients(data: Any) -> np.ndarray:
    """A (T, d) float array from an array-like, a ``.npy`` or a ``.csv`` path (checked finite)."""
    if isinstance(data, (str, Path)):
        path = Path(data)
        if not path.is_file():
            raise ValueError(f"gradients file {str(path)!r} does not exist")
        if path.suffix == ".npy":
            arr = np.load(path, allow_pickle=False)
        elif path.suffix == ".csv":
            arr = np.loadtxt(path, delimiter=",", ndmin=2)
        else:
            raise ValueError(f"gradients file must be .npy or .csv, got {path.suffix!r}")
    else:
        try:
            arr = np.asarray(data, dtype=np.float64)
        except (TypeError, ValueError) as err:
            raise TypeError(f"gradients must be a (T, d) numeric array, got {data!r:.80}") from err
    arr = np.asarray(arr, dtype=np.float64)
    if arr.ndim != 2 or arr.shape[0] < 1 or arr.shape[1] < 1:
        raise ValueError(f"gradients must be a non-empty (T, d) array, got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError("gradients must be finite (no NaN or inf)")
    return arr


def _check_norms(name: str, g: np.ndarray, bound: float) -> None:
    norms = np.sqrt(np.einsum("...i,...i->...", g, g))
    worst = float(norms.max()) if norms.size else 0.0
    if worst > bound * (1 + _NORM_SLACK):
        raise ValueError(
            f"{name} must have Euclidean norm <= grad_bound={bound:g} in every round, got a row "
            f"of norm {worst:.6g}; pass a larger grad_bound (values are never clipped)"
        )


class OCOAdversary:
    """B runs of one gradient model.

    Args:
        family, dim, horizon: as in :class:`OCOParams` (a ``"replay"`` matrix fixes the sizes).
        params: the knobs as an :class:`OCOParams` (then leave the other knobs unset), or None.
        num_runs: B.
        **knobs: the other fields of :class:`OCOParams`.

    Attributes:
        params: the parameters played, resolved (family, sizes and family defaults filled in).
    """

    def __init__(
        self,
        family: str | None = None,
        dim: int | None = None,
        horizon: int | None = None,
        params: OCOParams | None = None,
        *,
        num_runs: int = 1,
        **knobs: Any,
    ) -> None:
        if params is None:
            params = OCOParams.from_keywords(
                {"family": family, "dim": dim, "horizon": horizon, **knobs}
            )
        elif not isinstance(params, OCOParams):
            raise TypeError(f"params must be an OCOParams, got {type(params).__name__}")
        elif family is not None or dim is not None or horizon is not None or knobs:
            raise TypeError("give params or family/dim/horizon/keywords, not both")
        family = params.resolved_family()
        gradients, dim, horizon = params.gradients, params.dim, params.horizon
        self.family = family
        self.body = check_choice("body", params.body, BODIES)
        self.radius = check_float("radius", params.radius, minimum=0.0, min_inclusive=False)
        self.grad_bound = check_float(
            "grad_bound", params.grad_bound, minimum=0.0, min_inclusive=False
        )
        self.num_runs = check_int("num_runs", num_runs, minimum=1)
        if self.family == "replay":
            if gradients is None:
                raise ValueError("family='replay' needs gradients= (a (T, d) matrix or file)")
            mat = load_gradients(gradients)
            _check_norms("gradients", mat, self.grad_bound)
            for name, value, got in (
                ("horizon", horizon, mat.shape[0]),
                ("dim", dim, mat.shape[1]),
            ):
                if value is not None and check_int(name, value, minimum=1) != got:
                    raise ValueError(f"{name}={value} contradicts the gradient matrix ({got})")
            self._matrix = mat
            self.horizon, self.dim = mat.shape
        else:
            params.knob("gradients", family)  # refuses a matrix given to another family
            defaults = _KIND.defaults
            self.dim = check_int("dim", defaults["dim"] if dim is None else dim, minimum=1)
            self.horizon = check_int(
                "horizon",
                defaults["horizon"] if horizon is None else horizon,
                minimum=1,
                maximum=MAX_HORIZON,
            )
            self._matrix = None
        gap = params.knob("gap", family)
        # Families without a mean share keep gap = 0.3 as an inert attribute.
        fallback = OCOParams.FAMILY_DEFAULTS["gap"]["stochastic"]
        self.gap = check_float("gap", fallback if gap is None else gap, minimum=0.0, maximum=1.0)
        n_shifts = params.knob("n_shifts", family)
        self.n_shifts = 0
        if n_shifts is not None:
            self.n_shifts = check_int("n_shifts", n_shifts, minimum=0, maximum=self.horizon - 1)
        # (B, d) float64 state: env and core arrays, chunked uniforms, one direction per segment.
        check_memory(
            f"dim={self.dim} with {self.num_runs} run(s)",
            8.0 * self.num_runs * self.dim * (8 + self.n_shifts + 1),
        )
        self.params = replace(
            params,
            family=family,
            dim=self.dim,
            horizon=self.horizon,
            gap=self.gap if gap is not None else None,
            n_shifts=self.n_shifts if n_shifts is not None else None,
        )
        self.oblivious = self.family != "adaptive"
        self.knows_means = self.family in ("stochastic", "shifting", "rademacher", "anti_ftl")
        self.has_segments = self.family == "shifting"
        # Uniforms drawn per round per run (fixed, so round t is a pure function of (seed, t)).
        self._per_round = {"stochastic": self.dim, "shifting": self.dim, "adaptive": self.dim,
                           "rademacher": 1}.get(self.family, 0)  # fmt: skip
        per_run = min(_CHUNK_ELEMENTS, _CHUNK_TOTAL // self.num_runs)
        self._chunk = max(1, min(self.horizon, per_run // max(1, self._per_round)))
        self._seeds: tuple[int, ...] | None = None

    def reset(self, seeds: Sequence[int], neighbor: tuple[int, np.ndarray] | None = None) -> None:
        """Start B runs with the given seeds; ``neighbor = (t, g)`` replaces round t's gradient."""
        seeds = [int(s) for s in seeds]
        if len(seeds) != self.num_runs:
            raise ValueError(f"reset needs {self.num_runs} seeds, got {len(seeds)}")
        self._seeds = tuple(seeds)
        if neighbor is not None:
            t, g = neighbor
            t = check_int("neighbor round", t, minimum=1, maximum=self.horizon)
            g = np.asarray(g, dtype=np.float64)
            if g.shape != (self.dim,) or not np.all(np.isfinite(g)):
                raise ValueError(
                    f"neighbor loss must be a finite gradient of shape ({self.dim},), got "
                    f"shape {g.shape}"
                )
            _check_norms("neighbor loss", g, self.grad_bound)
            self._neighbor: tuple[int, np.ndarray] | None = (t, g.copy())
        else:
            self._neighbor = None
        b, d = self.num_runs, self.dim
        self._data_rng = BatchRNG(seeds, stream=_DATA_STREAM)
        if self.family in ("stochastic", "shifting"):
            structure = BatchRNG(seeds, stream=_STRUCTURE_STREAM)
            z = structure.normal((self.n_shifts + 1, d))
            norms = np.linalg.norm(z, axis=-1, keepdims=True)
            self._directions = z / np.where(norms > 0, norms, 1.0)  # (B, n_shifts + 1, d)
        self._play_sum = np.zeros((b, d))
        self._buffer = np.zeros((b, 0, max(1, self._per_round)))
        self._buffer_start = 1
        self.t = 0

    def segment_of(self, t: int) -> int:
        """Index of the segment holding round t (shifting family; 0 otherwise)."""
        if self.n_shifts == 0:
            return 0
        return min(self.n_shifts, (t - 1) * (self.n_shifts + 1) // self.horizon)

    def _uniforms(self, t: int) -> np.ndarray:
        """(B, per_round) uniforms of round t (chunked, sequential)."""
        end = self._buffer_start + self._buffer.shape[1]
        if t >= end:
            count = min(self._chunk, self.horizon - end + 1)
            self._buffer = self._data_rng.random((count, self._per_round))
            self._buffer_start = end
        return self._buffer[:, t - self._buffer_start]

    def means(self, t: int) -> np.ndarray | None:
        """(B, d) expected gradient of round t (None for families without known means)."""
        b, d = self.num_runs, self.dim
        if self.family in ("stochastic", "shifting"):
            return self.gap * self.grad_bound * self._directions[:, self.segment_of(t)]
        if self.family == "rademacher":
            return np.zeros((b, d))
        if self.family == "anti_ftl":
            return self._anti_ftl(t)
        return None

    def _anti_ftl(self, t: int) -> np.ndarray:
        g = np.zeros((self.num_runs, self.dim))
        g[:, 0] = -0.5 * self.grad_bound if t == 1 else self.grad_bound * (1 if t % 2 == 0 else -1)
        return g

    def gradient(self, t: int) -> np.ndarray:
        """(B, d) gradient of round t; call once per round, in order, before the action is read."""
        if self._seeds is None:
            raise RuntimeError("call reset before gradient")
        if t != self.t + 1:
            raise RuntimeError(f"rounds must be fetched in order: expected {self.t + 1}, got {t}")
        self.t = t
        d, big_g = self.dim, self.grad_bound
        u = self._uniforms(t) if self._per_round else None
        fam = self.family
        if fam in ("stochastic", "shifting"):
            signs = np.where(u < 0.5, -1.0, 1.0)
            g = self.means(t) + (1.0 - self.gap) * big_g * signs / math.sqrt(d)
        elif fam == "rademacher":
            g = np.where(u < 0.5, -1.0, 1.0) * (big_g / math.sqrt(d)) * np.ones(d)
        elif fam == "anti_ftl":
            g = self._anti_ftl(t)
        elif fam == "replay":
            g = np.broadcast_to(self._matrix[t - 1], (self.num_runs, d)).copy()
        else:  # adaptive: the mean of the past plays only
            norm = np.linalg.norm(self._play_sum, axis=-1, keepdims=True)
            unit = np.where(norm > 0, self._play_sum / np.where(norm > 0, norm, 1.0), 0.0)
            signs = np.where(u < 0.5, -1.0, 1.0)
            g = big_g * (self.gap * unit + (1.0 - self.gap) * signs / math.sqrt(d))
        if self._neighbor is not None and self._neighbor[0] == t:
            g = np.broadcast_to(self._neighbor[1], g.shape).copy()
        return g

    def next_rounds(self, k: int) -> np.ndarray | None:
        """(k, B, d) gradients as k :meth:`gradient` calls; None: adaptive, neighbour or past T."""
        if self._seeds is None:
            raise RuntimeError("call reset before next_rounds")
        if k < 1 or not self.oblivious or self._neighbor is not None or self.t + k > self.horizon:
            return None
        start = self.t + 1
        rounds = np.arange(start, start + k)
        d, big_g, fam = self.dim, self.grad_bound, self.family
        if self._per_round:
            parts = []
            t = start
            while t < start + k:
                self._uniforms(t)  # refills the chunk exactly where a single round would
                stop = min(start + k, self._buffer_start + self._buffer.shape[1])
                parts.append(self._buffer[:, t - self._buffer_start : stop - self._buffer_start])
                t = stop
            u = np.concatenate(parts, axis=1).transpose(1, 0, 2)  # (k, B, per_round)
        if fam in ("stochastic", "shifting"):
            segments = [self.segment_of(int(t)) for t in rounds]
            means = self.gap * self.grad_bound * self._directions[:, segments].transpose(1, 0, 2)
            signs = np.where(u < 0.5, -1.0, 1.0)
            g = means + (1.0 - self.gap) * big_g * signs / math.sqrt(d)
        elif fam == "rademacher":
            g = np.where(u < 0.5, -1.0, 1.0) * (big_g / math.sqrt(d)) * np.ones(d)
        elif fam == "anti_ftl":
            g = np.zeros((k, self.num_runs, d))
            g[:, :, 0] = np.where(rounds % 2 == 0, big_g * 1, big_g * -1)[:, None]
            if start == 1:
                g[0, :, 0] = -0.5 * big_g
        elif fam == "replay":
            assert self._matrix is not None
            g = np.broadcast_to(self._matrix[start - 1 : start - 1 + k, None, :],
                                (k, self.num_runs, d)).copy()  # fmt: skip
        else:  # pragma: no cover - the oblivious check above
            return None
        self.t = start + k - 1
        return g

    def record(self, actions: np.ndarray) -> None:
        """The points played in the round just charged (adaptive family reads them later)."""
        if self.family == "adaptive":
            self._play_sum += actions
