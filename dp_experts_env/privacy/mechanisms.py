"""Differentially private mechanisms, batched over runs (docs/privacy.md, "Mechanisms").

``rng`` is a :class:`~dp_experts_env.batch_rng.BatchRNG` of B runs (a leading run axis; length 1
broadcast; run ``b`` equals a single run seeded ``seeds[b]``) or a Generator (no run axis).
Scores are LOSSES: selections pick small scores (erratum E-ARS-1).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np

from dp_experts_env._validation import check_delta, check_epsilon, check_float, check_int
from dp_experts_env.batch_rng import BatchRNG
from dp_experts_env.privacy.guarantee import Guarantee, Release
from dp_experts_env.privacy.noise import NoiseBackend, get_backend

__all__ = [
    "Guarantee",
    "Release",
    "laplace_mechanism",
    "laplace_calibration",
    "laplace_epsilon",
    "report_noisy_min",
    "exponential_mechanism",
    "exponential_mechanism_probabilities",
    "run_epsilons",
    "report_noisy_min_runs",
    "exponential_mechanism_runs",
    "AboveThreshold",
    "recording_sparse_vectors",
    "TreeCounter",
    "tree_levels",
]

RandomSource = BatchRNG | np.random.Generator


def _check_rng(rng: object) -> None:
    if not isinstance(rng, (BatchRNG, np.random.Generator)):
        raise TypeError(
            f"rng must be a BatchRNG (batched runs) or a numpy.random.Generator (one run), "
            f"got {type(rng).__name__}"
        )


def _num_runs(rng: RandomSource) -> int:
    return rng.num_runs if isinstance(rng, BatchRNG) else 1


def _batched(name: str, values: object, rng: RandomSource, min_dims: int) -> np.ndarray:
    """``values`` as float64 with a leading run axis of length B (added for a Generator).

    ``min_dims`` is the number of axes of one run's value (0 scalars, 1 vectors).
    """
    try:
        arr = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError) as err:
        raise TypeError(f"{name} must be a numeric array, got {type(values).__name__}") from err
    if isinstance(rng, np.random.Generator):
        if arr.ndim != min_dims:
            raise ValueError(
                f"{name} must have {min_dims} dimension(s) for an unbatched run (numpy "
                f"Generator), got shape {arr.shape}"
            )
        return arr[None]
    b = rng.num_runs
    if arr.ndim != min_dims + 1:
        raise ValueError(
            f"{name} must have shape (B, ...) with B = {b} runs and {min_dims + 1} dimension(s), "
            f"got shape {arr.shape}"
        )
    if arr.shape[0] == 1 and b != 1:
        return np.broadcast_to(arr, (b, *arr.shape[1:])).copy()
    if arr.shape[0] != b:
        raise ValueError(
            f"{name} must have a leading run axis of length {b} (or 1, broadcast), "
            f"got shape {arr.shape}"
        )
    return arr


def _unbatch(arr: np.ndarray, rng: RandomSource) -> np.ndarray:
    return arr[0] if isinstance(rng, np.random.Generator) else arr


def _gumbel(backend: NoiseBackend, rng: RandomSource, shape: tuple[int, ...]) -> np.ndarray:
    if isinstance(rng, BatchRNG):
        return backend.gumbel(rng, shape)
    return backend.gumbel(rng, (1, *shape))


def _argmin_random_ties(scores: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """Row-wise argmin, ties broken by ``keys`` (every selection's epsilon = inf limit)."""
    tied = scores == scores.min(axis=-1, keepdims=True)
    return np.argmin(np.where(tied, keys, np.inf), axis=-1).astype(np.int64)


def _sensitivity(name: str, value: object) -> float:
    return check_float(name, value, minimum=0.0, min_inclusive=False)


def laplace_epsilon(l1_sensitivity: float, scale: float) -> float:
    """Epsilon of Laplace noise of ``scale`` for ``l1_sensitivity`` (``inf`` at scale 0)."""
    return math.inf if scale == 0.0 else l1_sensitivity / scale


def laplace_calibration(
    l1_sensitivity: float,
    epsilon: float,
    *,
    noise: str | NoiseBackend = "fast",
    dim: int = 1,
) -> tuple[float, Guarantee]:
    """``(scale, Guarantee(epsilon, 0))`` that :func:`laplace_mechanism` uses for a query.

    ``dim`` is the query's coordinates (for the backend's slack); ``epsilon = inf`` gives scale 0.
    """
    sens = _sensitivity("l1_sensitivity", l1_sensitivity)
    eps = check_epsilon("epsilon", epsilon, allow_inf=True)
    dim = check_int("dim", dim, minimum=1)
    scale = get_backend(noise).effective_sensitivity(sens, dim) / eps
    return scale, Guarantee(
        eps, 0.0, f"Laplace mechanism, L1 sensitivity {sens:g}, scale {scale:g}"
    )


def laplace_mechanism(
    values: object,
    *,
    l1_sensitivity: float,
    epsilon: float,
    rng: RandomSource,
    noise: str | NoiseBackend = "fast",
    per_coordinate: bool = False,
) -> Release:
    """Release ``values + Lap(l1_sensitivity / epsilon)`` coordinatewise (Dwork–Roth Thm 3.6).

    Args:
        values: ``(B, *shape)`` (BatchRNG) or ``shape`` (Generator); one run's array is one query.
        l1_sensitivity: L1 sensitivity of one run's array (> 0), or of each coordinate with
            ``per_coordinate``.
        epsilon: privacy parameter (> 0); ``math.inf`` releases the exact values, drawing nothing.
        rng: a BatchRNG or a numpy Generator.
        noise: ``"fast"``, ``"grid"`` or a backend object.
        per_coordinate: each coordinate is its own epsilon-DP query (the caller composes them).

    Returns:
        ``Release(noisy_values, Guarantee(epsilon))``.
    """
    _check_rng(rng)
    backend = get_backend(noise)
    arr = np.asarray(values, dtype=np.float64)
    if isinstance(rng, BatchRNG) and arr.ndim == 0:
        raise ValueError("values must have a leading run axis (shape (B, ...)) with a BatchRNG")
    arr = _batched("values", arr, rng, arr.ndim - (1 if isinstance(rng, BatchRNG) else 0))
    dim = 1 if per_coordinate else int(np.prod(arr.shape[1:], dtype=np.int64))
    scale, guarantee = laplace_calibration(l1_sensitivity, epsilon, noise=backend, dim=max(dim, 1))
    # epsilon = inf draws nothing (one epsilon for the whole batch: batches still equal runs).
    noisy = arr.copy() if scale == 0.0 else backend.add_laplace(rng, arr, scale)
    return Release(_unbatch(noisy, rng), guarantee)


def report_noisy_min(
    scores: object,
    *,
    sensitivity: float,
    epsilon: float,
    rng: RandomSource,
    noise: str | NoiseBackend = "fast",
    monotone: bool = False,
) -> Release:
    """Index of the smallest ``score + Lap(2 * sensitivity / epsilon)`` (Dwork–Roth Claim 3.9).

    Args:
        scores: ``(B, N)`` losses (BatchRNG) or ``(N,)`` (Generator).
        sensitivity: max change of any single score between neighbours (> 0).
        epsilon: privacy parameter (> 0); ``math.inf``: exact argmin, random ties, same draws.
        rng: a BatchRNG or a numpy Generator.
        noise: noise backend.
        monotone: scores move the same way between neighbours: ``Lap(sensitivity / epsilon)``.

    Returns:
        ``Release(indices, Guarantee(epsilon))``: ``(B,)`` int64 (BatchRNG) or an int64 scalar.
    """
    _check_rng(rng)
    sens = _sensitivity("sensitivity", sensitivity)
    eps = check_epsilon("epsilon", epsilon, allow_inf=True)
    backend = get_backend(noise)
    arr = _batched("scores", scores, rng, 1)
    factor = 1.0 if monotone else 2.0
    scale = factor * backend.effective_sensitivity(sens, 1) / eps
    if scale == 0.0:
        idx = _argmin_random_ties(arr, backend.laplace(rng, 1.0, arr.shape[1:]))
    else:
        idx = np.argmin(backend.add_laplace(rng, arr, scale), axis=-1).astype(np.int64)
    kind = "monotone " if monotone else ""
    return Release(
        _unbatch(idx, rng),
        Guarantee(eps, 0.0, f"report-noisy-min, {kind}sensitivity {sens:g}, Laplace {scale:g}"),
    )


def _temperature(sensitivity: float, epsilon: float, monotone: bool) -> float:
    return epsilon / ((1.0 if monotone else 2.0) * sensitivity)


def exponential_mechanism_probabilities(
    scores: object, *, sensitivity: float, epsilon: float, monotone: bool = False
) -> np.ndarray:
    """Exact output law of :func:`exponential_mechanism`: ``softmax(-eps * score / (2 sens))``.

    Over the last axis of ``scores`` (any leading shape); ``eps / sens`` when ``monotone``.
    """
    sens = _sensitivity("sensitivity", sensitivity)
    eps = check_epsilon("epsilon", epsilon, allow_inf=True)
    arr = np.asarray(scores, dtype=np.float64)
    if arr.ndim < 1 or arr.shape[-1] < 1:
        raise ValueError(f"scores must have a candidate axis, got shape {arr.shape}")
    if math.isinf(eps):  # the limit: uniform over the minimisers
        best = arr == arr.min(axis=-1, keepdims=True)
        return best / best.sum(axis=-1, keepdims=True)
    logits = -_temperature(sens, eps, monotone) * arr
    logits -= logits.max(axis=-1, keepdims=True)
    w = np.exp(logits)
    return w / w.sum(axis=-1, keepdims=True)


def exponential_mechanism(
    scores: object,
    *,
    sensitivity: float,
    epsilon: float,
    rng: RandomSource,
    monotone: bool = False,
    noise: str | NoiseBackend = "fast",
) -> Release:
    """Sample ``i`` with probability proportional to ``exp(-eps * score_i / (2 sens))``.

    The exponential mechanism (McSherry–Talwar; Dwork–Roth Thm 3.10) for losses, by Gumbel-max:
    one Gumbel per candidate per run, whatever the data.

    Args:
        scores: ``(B, N)`` losses (BatchRNG) or ``(N,)`` (Generator).
        sensitivity: max change of any single score between neighbours (> 0).
        epsilon: privacy parameter (> 0).
        rng: a BatchRNG or a numpy Generator.
        monotone: scores are monotone: ``eps / sens``.
        noise: noise backend.

    Returns:
        ``Release(indices, Guarantee(epsilon))``.
    """
    _check_rng(rng)
    sens = _sensitivity("sensitivity", sensitivity)
    eps = check_epsilon("epsilon", epsilon, allow_inf=True)
    backend = get_backend(noise)
    arr = _batched("scores", scores, rng, 1)
    gumbel = _gumbel(backend, rng, arr.shape[1:])
    if math.isinf(eps):  # the limit: exact argmin, uniformly random among ties
        idx = _argmin_random_ties(arr, gumbel)
    else:
        logits = -_temperature(sens, eps, monotone) * arr
        idx = np.argmax(logits + gumbel, axis=-1).astype(np.int64)
    kind = "monotone " if monotone else ""
    return Release(
        _unbatch(idx, rng),
        Guarantee(eps, 0.0, f"exponential mechanism, {kind}sensitivity {sens:g}"),
    )


def run_epsilons(epsilons: object, rng: RandomSource) -> np.ndarray:
    """``epsilons`` as a (B,) array of finite values > 0, one per run of a BatchRNG.

    Run b of a ``*_runs`` mechanism computes exactly what the mechanism at ``epsilons[b]`` does
    (same floats) and is ``epsilons[b]``-DP; these forms release values only (docs/privacy.md,
    "Per-run epsilons").
    """
    if not isinstance(rng, BatchRNG):
        raise TypeError(
            f"per-run epsilons need a BatchRNG (batched runs), got {type(rng).__name__}"
        )
    eps = np.asarray(epsilons, dtype=np.float64)
    if eps.shape != (rng.num_runs,) or not np.all(np.isfinite(eps) & (eps > 0)):
        raise ValueError(
            f"epsilons must be a ({rng.num_runs},) array of finite values > 0, got {epsilons!r}"
        )
    return eps


def report_noisy_min_runs(
    scores: object,
    *,
    sensitivity: float,
    epsilons: object,
    rng: BatchRNG,
    noise: str | NoiseBackend = "fast",
    monotone: bool = False,
) -> np.ndarray:
    """:func:`report_noisy_min` with a finite epsilon per run: (B,) int64 indices."""
    sens = _sensitivity("sensitivity", sensitivity)
    eps = run_epsilons(epsilons, rng)
    backend = get_backend(noise)
    arr = _batched("scores", scores, rng, 1)
    factor = 1.0 if monotone else 2.0
    scale = factor * backend.effective_sensitivity(sens, 1) / eps
    return np.argmin(backend.add_laplace(rng, arr, scale[:, None]), axis=-1).astype(np.int64)


def exponential_mechanism_runs(
    scores: object,
    *,
    sensitivity: float,
    epsilons: object,
    rng: BatchRNG,
    monotone: bool = False,
    noise: str | NoiseBackend = "fast",
) -> np.ndarray:
    """:func:`exponential_mechanism` with a finite epsilon per run: (B,) int64 indices."""
    sens = _sensitivity("sensitivity", sensitivity)
    eps = run_epsilons(epsilons, rng)
    backend = get_backend(noise)
    arr = _batched("scores", scores, rng, 1)
    gumbel = _gumbel(backend, rng, arr.shape[1:])
    logits = -_temperature(sens, eps, monotone)[:, None] * arr
    return np.argmax(logits + gumbel, axis=-1).astype(np.int64)


class AboveThreshold:
    """Sparse vector technique, batched over runs (Dwork–Roth Alg. 1 and 2).

    Each run halts after ``c = max_tops`` TOPs. ``sigma = 2 c Delta / epsilon``, or
    ``sqrt(32 c ln(1/delta)) Delta / epsilon`` when ``delta > 0`` and advanced composition certifies
    it (Thm 3.26); threshold noise ``Lap(sigma)`` at start and after each TOP, query noise
    ``Lap(2 sigma)`` per query. Noise is drawn for every run on every call (halted runs discard it).

    Args:
        epsilon: privacy of the instance (> 0; ``math.inf``: exact comparisons), or a (B,) array
            of finite per-run values (BatchRNG only; :attr:`guarantee` then raises).
        sensitivity: sensitivity of each query (> 0).
        rng: a BatchRNG (B runs) or a numpy Generator (one run, scalar queries and answers).
        threshold: public threshold, a float or a (B,) array.
        max_tops: c, the number of TOP answers before a run halts.
        delta: 0 for pure DP; > 0 allows the advanced-composition calibration.
        noise: noise backend.

    Attributes:
        halted: (B,) bool, runs that have used up their TOPs.
        n_tops: (B,) int, TOP answers since the last restart.
        sigma: the threshold noise scale (query noise is ``2 * sigma``).
    """

    def __init__(
        self,
        *,
        epsilon: float | np.ndarray,
        sensitivity: float,
        rng: RandomSource,
        threshold: float | np.ndarray = 0.0,
        max_tops: int = 1,
        delta: float = 0.0,
        noise: str | NoiseBackend = "fast",
    ) -> None:
        _check_rng(rng)
        per_run = isinstance(epsilon, np.ndarray)
        if per_run:
            self.epsilon: float | np.ndarray = run_epsilons(epsilon, rng)
        else:
            self.epsilon = check_epsilon("epsilon", epsilon, allow_inf=True)
        self.sensitivity = _sensitivity("sensitivity", sensitivity)
        self.max_tops = check_int("max_tops", max_tops, minimum=1)
        delta = check_delta("delta", delta)
        self.rng = rng
        self.backend = get_backend(noise)
        self.num_runs = _num_runs(rng)
        if per_run:
            # Each run's scale as an instance at its own epsilon computes it (the same floats).
            found = {e: self._calibrate(e, delta) for e in dict.fromkeys(self.epsilon.tolist())}
            self.sigma: float | np.ndarray = np.array([found[e][0] for e in self.epsilon])
            self.delta = max(found[e][1] for e in found)
        else:
            self.sigma, self.delta = self._calibrate(self.epsilon, delta)
        self._threshold = self._thresholds(threshold)
        self.halted = np.zeros(self.num_runs, dtype=bool)
        self.n_tops = np.zeros(self.num_runs, dtype=np.int64)
        self._noisy_threshold = self._draw_threshold()
        for log in _SPARSE_VECTOR_LOGS:
            log.append(self)

    @property
    def threshold(self) -> np.ndarray:
        """(B,) public (noiseless) thresholds, a copy."""
        return self._threshold.copy()

    def _calibrate(self, epsilon: float, delta: float) -> tuple[float, float]:
        """(sigma, delta used) of an instance at ``epsilon``."""
        c = self.max_tops
        sens = self.backend.effective_sensitivity(self.sensitivity, 1)
        sigma = 2.0 * c * sens / epsilon
        if delta > 0.0 and math.isfinite(epsilon):
            from dp_experts_env.privacy.declaration import advanced_composition_epsilon

            sigma_adv = math.sqrt(32.0 * c * math.log(1.0 / delta)) * sens / epsilon
            # Thm 3.26's scale only where the exact advanced composition certifies it.
            segment = 2.0 * sens / sigma_adv  # threshold Lap(sigma) + query Lap(2 sigma)
            if sigma_adv < sigma and advanced_composition_epsilon(segment, c, delta) <= epsilon:
                return sigma_adv, delta
        return sigma, 0.0

    def _thresholds(self, threshold: float | np.ndarray) -> np.ndarray:
        arr = np.asarray(threshold, dtype=np.float64)
        if arr.ndim == 0:
            arr = np.full(self.num_runs, float(arr))
        if arr.shape != (self.num_runs,) or not np.all(np.isfinite(arr)):
            raise ValueError(
                f"threshold must be a finite float or a ({self.num_runs},) array, got shape "
                f"{arr.shape}"
            )
        return arr.copy()

    @property
    def query_scale(self) -> float | np.ndarray:
        """The query noise's Laplace scale, ``2 sigma`` (the threshold's is ``sigma``)."""
        return 2.0 * self.sigma

    def _draw_threshold(self) -> np.ndarray:
        return self.backend.add_laplace(self.rng, self._threshold, self.sigma)

    @property
    def guarantee(self) -> Guarantee:
        """Privacy of one instance (per run) until it halts or is restarted."""
        if isinstance(self.epsilon, np.ndarray):
            raise ValueError(
                "this instance's runs have their own epsilons: each run has its own guarantee"
            )
        how = "advanced" if self.delta else "basic"
        return Guarantee(
            self.epsilon,
            self.delta,
            f"sparse vector, {self.max_tops} TOP(s) ({how} composition of AboveThreshold), "
            f"query sensitivity {self.sensitivity:g}, threshold noise Lap({self.sigma:g}), "
            f"query noise Lap({2 * self.sigma:g})",
        )

    def test(self, queries: float | np.ndarray) -> np.ndarray | bool:
        """Answer one query per run: True (TOP) when ``query + noise >= noisy threshold``.

        Args:
            queries: (B,) query values (BatchRNG) or a scalar (Generator). Values of halted runs
                are ignored.

        Returns:
            (B,) bool (or a bool for a Generator); halted runs answer False.
        """
        q = np.asarray(queries, dtype=np.float64)
        if isinstance(self.rng, np.random.Generator):
            if q.ndim != 0:
                raise ValueError(f"queries must be a scalar for one run, got shape {q.shape}")
            q = q[None]
        elif q.shape != (self.num_runs,):
            raise ValueError(f"queries must have shape ({self.num_runs},), got shape {q.shape}")
        noisy = self.backend.add_laplace(self.rng, q, self.query_scale)
        top = (noisy >= self._noisy_threshold) & ~self.halted
        if top.any():
            self.n_tops += top
            self.halted |= self.n_tops >= self.max_tops
        if self.max_tops > 1:
            # Sparse redraws the threshold after each TOP; draw for all runs, keep where TOP.
            fresh = self._draw_threshold()
            self._noisy_threshold = np.where(top, fresh, self._noisy_threshold)
        if isinstance(self.rng, np.random.Generator):
            return bool(top[0])
        return top

    def restart(
        self, mask: np.ndarray | None = None, threshold: float | np.ndarray | None = None
    ) -> None:
        """Start a fresh instance (a new privacy cost) for the runs in ``mask`` (all when None).

        Threshold noise is drawn for every run and kept where ``mask``; those runs' TOPs and halt
        flags are cleared. A new public ``threshold`` (float or (B,)) applies to them.
        """
        if mask is None:
            m = np.ones(self.num_runs, dtype=bool)
        else:
            m = np.asarray(mask, dtype=bool).reshape(-1)
            if m.shape != (self.num_runs,):
                raise ValueError(f"mask must have shape ({self.num_runs},), got {np.shape(mask)}")
        if threshold is not None:
            self._threshold = np.where(m, self._thresholds(threshold), self._threshold)
        fresh = self._draw_threshold()
        self._noisy_threshold = np.where(m, fresh, self._noisy_threshold)
        self.n_tops = np.where(m, 0, self.n_tops)
        self.halted = self.halted & ~m


#: Open recording lists (:func:`recording_sparse_vectors`); empty outside such a context.
_SPARSE_VECTOR_LOGS: list[list[AboveThreshold]] = []


@contextmanager
def recording_sparse_vectors() -> Iterator[list[AboveThreshold]]:
    """Collect every :class:`AboveThreshold` built inside the context (the audit's hook).

    Yields:
        A list that receives each instance as it is constructed, in order.
    """
    log: list[AboveThreshold] = []
    _SPARSE_VECTOR_LOGS.append(log)
    try:
        yield log
    finally:
        _SPARSE_VECTOR_LOGS.remove(log)


def tree_levels(items: int) -> int:
    """Levels a binary-tree counter over ``items`` items needs: ``max(1, items.bit_length())``.

    The exact number of released nodes one item lies in (docs/privacy.md, "Mechanisms"); a learner
    of horizon T builds its counter over ``max(1, T - 1)`` items (round T's feedback is unused).
    """
    if isinstance(items, bool) or not isinstance(items, (int, np.integer)):
        raise TypeError(f"items must be an int, got {type(items).__name__}")
    if items < 0:
        raise ValueError(f"items must be >= 0, got {items}")
    return max(1, int(items).bit_length())


class TreeCounter:
    """Binary-tree counter for running sums (Dwork et al. 2010; Chan, Shi & Song 2011).

    Releases ``S_t = x_1 + ... + x_t`` of (B, d) items for t = 1..T; each dyadic block is a node
    released once, when it completes, with ``Lap(levels * Delta_1 / epsilon)``, so the stream is
    epsilon-DP. Memory O(d log T) per run.

    Args:
        horizon: T, the number of items.
        dim: d, the length of each item vector.
        l1_sensitivity: max L1 change of one item between neighbours (> 0).
        epsilon: privacy parameter (> 0); ``math.inf``: exact sums, no draws.
        rng: a BatchRNG (B runs, items (B, d)) or a numpy Generator (one run, items (d,)).
        noise: noise backend.

    Attributes:
        t: items added so far.
        levels: number of tree levels (:func:`tree_levels`).
        node_scale: Laplace scale of each node's noise (0 with noise off).
    """

    def __init__(
        self,
        horizon: int,
        dim: int = 1,
        *,
        l1_sensitivity: float,
        epsilon: float,
        rng: RandomSource,
        noise: str | NoiseBackend = "fast",
    ) -> None:
        _check_rng(rng)
        self.horizon = check_int("horizon", horizon, minimum=1)
        self.dim = check_int("dim", dim, minimum=1)
        self.l1_sensitivity = _sensitivity("l1_sensitivity", l1_sensitivity)
        self.epsilon = check_epsilon("epsilon", epsilon, allow_inf=True)
        self.rng = rng
        self.backend = get_backend(noise)
        self.num_runs = _num_runs(rng)
        self.levels = tree_levels(self.horizon)
        if math.isinf(self.epsilon):
            self.node_scale = 0.0
        else:
            sens = self.backend.effective_sensitivity(self.l1_sensitivity, self.dim)
            self.node_scale = self.levels * sens / self.epsilon
        shape = (self.num_runs, self.levels, self.dim)
        self._exact = np.zeros(shape)  # exact partial sums of the open/closed dyadic blocks
        self._noisy = np.zeros(shape)  # their noisy releases
        self.t = 0
        self._value = np.zeros((self.num_runs, self.dim))
        self._run_epsilons: list[float] | None = None

    def set_run_epsilons(self, epsilons: object) -> None:
        """Give each run of a BatchRNG its own finite epsilon (before the first item).

        Run b's nodes get the scale of a counter at ``epsilons[b]``; :attr:`guarantee` then raises.
        """
        if not isinstance(self.rng, BatchRNG):
            raise TypeError("per-run epsilons need a BatchRNG (batched runs)")
        if self.t:
            raise ValueError("set_run_epsilons must come before the first add()")
        eps = np.asarray(epsilons, dtype=np.float64).reshape(-1)
        if eps.shape != (self.num_runs,) or not np.all(np.isfinite(eps) & (eps > 0)):
            raise ValueError(
                f"epsilons must hold {self.num_runs} finite values > 0, got {epsilons!r}"
            )
        sens = self.backend.effective_sensitivity(self.l1_sensitivity, self.dim)
        self._run_epsilons = [float(e) for e in eps]
        self.node_scale = (self.levels * sens / eps)[:, None]

    @property
    def guarantee(self) -> Guarantee:
        """Privacy of the whole stream of running sums."""
        if self._run_epsilons is not None and any(e != self.epsilon for e in self._run_epsilons):
            raise ValueError(
                "this counter's runs have their own epsilons (set_run_epsilons): each run has "
                "its own guarantee"
            )
        return Guarantee(
            self.epsilon,
            0.0,
            f"binary-tree counter, {self.levels} levels, L1 sensitivity "
            f"{self.l1_sensitivity:g}, Laplace {self.node_scale:g} per node",
        )

    @property
    def value(self) -> np.ndarray:
        """The current (noisy) running sum: (B, d), or (d,) for a Generator."""
        return _unbatch(self._value, self.rng).copy()

    def add(self, values: object) -> np.ndarray:
        """Add item ``x_t`` for every run and return the released running sum ``S_t``."""
        if self.t >= self.horizon:
            raise ValueError(f"TreeCounter holds at most horizon={self.horizon} items")
        x = _batched("values", values, self.rng, 1)
        if x.shape[1] != self.dim:
            raise ValueError(f"values must have {self.dim} coordinate(s), got shape {x.shape}")
        self.t += 1
        t = self.t
        level = (t & -t).bit_length() - 1  # lowest set bit: the block completing now
        node = self._exact[:, :level].sum(axis=1) + x
        self._exact[:, level] = node
        self._exact[:, :level] = 0.0
        if self._run_epsilons is not None or self.node_scale > 0.0:
            self._noisy[:, level] = self.backend.add_laplace(self.rng, node, self.node_scale)
        else:
            self._noisy[:, level] = node
        bits = [j for j in range(self.levels) if (t >> j) & 1]
        self._value = self._noisy[:, bits].sum(axis=1)
        return self.value
