"""Shared pieces of the online-convex-optimisation learners (``DPExperts-OCO-v0``).

:class:`OCOAgent`, the agent contract for continuous actions, and exact samplers and normalisers
of the Gibbs law ``exp(-beta (<L, x> + lambda/2 ||x||^2))`` on the body, i.e.
``N(-L/lambda, (beta lambda)^{-1} I)`` conditioned on the box or the ball (Agarwal, Kale, Singh &
Thakurta, eq. (3.1)-(3.3), for linear losses; docs/algorithms.md, "Online convex optimisation").
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np

from agents.base import Agent, PrivacyClaim
from dp_experts_env._validation import check_choice, check_float, check_int, real_array
from dp_experts_env.batch_rng import run_seeds, seeded_generators
from dp_experts_env.fixed_order import dot


class _LazySpecial:
    """``scipy.special``, imported at first use; each function then kept as an attribute."""

    def __getattr__(self, name: str) -> Any:
        from scipy import special as module

        value = getattr(module, name)
        setattr(self, name, value)
        return value


special = _LazySpecial()

__all__ = [
    "OCOAgent",
    "claim",
    "ball_log_normaliser",
    "ball_sample",
    "box_log_normaliser",
    "box_sample",
    "diameter",
    "log1mexp",
    "log_ncx2_cdf",
    "log_normaliser",
    "project",
]

BODIES = ("box", "ball")
SAMPLER_STREAM = 8  # per-run generators of the rejection sampler (never the env's streams)
#: Doubles per (K, B, d) array of one part of a block (bounds the block path's temporaries).
PART_ELEMENTS = 1 << 17


# --------------------------------------------------------------------------- geometry
def diameter(body: str, radius: float, dim: int) -> float:
    """D: ``2 R sqrt(d)`` for the box, ``2 R`` for the ball."""
    return 2.0 * radius * (math.sqrt(dim) if body == "box" else 1.0)


def project(x: np.ndarray, body: str, radius: float) -> np.ndarray:
    """Euclidean projection on the body (coordinate clip, or radial shrink for the ball)."""
    if body == "box":
        return np.clip(x, -radius, radius)
    norm = np.sqrt(np.einsum("...i,...i->...", x, x))[..., None]
    return np.where(norm > radius, x * (radius / np.where(norm > 0, norm, 1.0)), x)


# --------------------------------------------------------------------------- box
def log1mexp(x: np.ndarray) -> np.ndarray:
    """``log(1 - e^x)`` for ``x <= 0``, accurate at both ends."""
    x = np.asarray(x, dtype=np.float64)
    with np.errstate(divide="ignore"):
        return np.where(x > -math.log(2.0), np.log(-np.expm1(x)), np.log1p(-np.exp(x)))


def log_ndtr_diff(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``log(Phi(b) - Phi(a))`` for ``a < b`` (standard normal CDF), stable in both tails."""
    a, b = np.broadcast_arrays(np.asarray(a, float), np.asarray(b, float))
    flip = a > 0  # both limits in the right tail: use Phi(b) - Phi(a) = Phi(-a) - Phi(-b)
    lo = np.where(flip, -b, a)
    hi = np.where(flip, -a, b)
    top, bottom = special.log_ndtr(hi), special.log_ndtr(lo)
    return top + log1mexp(bottom - top)


def box_log_normaliser(cum: np.ndarray, beta: float, lam: float, radius: float) -> np.ndarray:
    """``log Z(L) = log int_box exp(-beta(<L, x> + lam/2 ||x||^2)) dx`` for (..., d) sums L."""
    s = 1.0 / math.sqrt(beta * lam)
    m = -np.asarray(cum, dtype=np.float64) / lam
    per = (
        beta * lam * m * m / 2.0
        + 0.5 * math.log(2.0 * math.pi * s * s)
        + log_ndtr_diff((-radius - m) / s, (radius - m) / s)
    )
    return per.sum(axis=-1)


def box_sample(mean: np.ndarray, scale: float, radius: float, u: np.ndarray) -> np.ndarray:
    """Inverse-CDF draws of ``N(mean, scale^2)`` truncated to ``[-R, R]``, one uniform each.

    In log space with right-tail intervals mirrored, so accurate however far the mean lies.
    """
    mean = np.asarray(mean, dtype=np.float64)
    a = (-radius - mean) / scale
    b = (radius - mean) / scale
    flip = a > 0  # both limits in the right tail: sample the mirror image in the left one
    lo = np.where(flip, -b, a)
    hi = np.where(flip, -a, b)
    v = np.where(flip, 1.0 - u, u)  # keeps the map increasing in u after the mirror
    log_lo, log_hi = special.log_ndtr(lo), special.log_ndtr(hi)
    gap = log_lo - log_hi  # <= 0
    with np.errstate(divide="ignore"):
        target = log_hi + np.log(np.exp(gap) - v * np.expm1(gap))
    z = np.clip(special.ndtri_exp(target), lo, hi)
    x = mean + scale * np.where(flip, -z, z)
    return np.clip(x, -radius, radius)


# --------------------------------------------------------------------------- ball
def _log_gammainc_lower(a: np.ndarray, y: np.ndarray, terms: int = 400) -> np.ndarray:
    """``log P(a, y)`` (regularised lower incomplete gamma), no underflow for small ``y/a``."""
    a, y = np.broadcast_arrays(np.asarray(a, float), np.asarray(y, float))
    with np.errstate(divide="ignore"):
        direct = np.log(special.gammainc(a, y))
    # Series P(a, y) = y^a e^-y / Gamma(a + 1) * sum_n y^n / ((a + 1) ... (a + n)).
    n = np.arange(1, terms + 1)
    steps = np.log(y[..., None]) - np.log(a[..., None] + n)
    log_terms = np.concatenate([np.zeros((*a.shape, 1)), np.cumsum(steps, axis=-1)], axis=-1)
    with np.errstate(divide="ignore"):
        series = a * np.log(y) - y - special.gammaln(a + 1) + special.logsumexp(log_terms, -1)
    use_series = ~(direct > -600.0) & (y < a + 1.0)
    return np.where(use_series, series, direct)


def log_ncx2_cdf(x: float, df: int, nc: np.ndarray) -> np.ndarray:
    """``log P(noncentral chi^2_df(nc) <= x)`` as a log-space Poisson mixture (no underflow)."""
    nc = np.asarray(nc, dtype=np.float64)
    half = nc / 2.0
    top = int(np.max(half) + 12.0 * math.sqrt(float(np.max(half)) + 1.0) + 60.0)
    j = np.arange(top + 1, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        log_pois = np.where(
            half[..., None] > 0,
            -half[..., None]
            + j * np.log(np.where(half > 0, half, 1.0))[..., None]
            - special.gammaln(j + 1.0),
            np.where(j == 0, 0.0, -np.inf),
        )
    log_chi = _log_gammainc_lower(df / 2.0 + j, np.full(j.shape, x / 2.0))
    return special.logsumexp(log_pois + log_chi, axis=-1)


def ball_log_normaliser(
    cum: np.ndarray, beta: float, lam: float, radius: float, dim: int
) -> np.ndarray:
    """``log Z(L)`` on the ball for (..., d) cumulative gradients L (a noncentral chi^2 CDF)."""
    from scipy import stats  # slow to import: paid only here

    s2 = 1.0 / (beta * lam)
    cum = np.asarray(cum, dtype=np.float64)
    sq = np.einsum("...i,...i->...", cum, cum)
    nc = sq / (lam * lam) / s2
    x = radius * radius / s2
    with np.errstate(divide="ignore"):
        log_p = np.asarray(stats.ncx2.logcdf(x, dim, nc), dtype=np.float64)
    deep = ~(log_p > -600.0)  # scipy underflows there: the log-space Poisson mixture instead
    if np.any(deep):
        log_p = log_p.copy()
        log_p[deep] = log_ncx2_cdf(x, dim, nc[deep])
    return beta * sq / (2.0 * lam) + 0.5 * dim * math.log(2.0 * math.pi * s2) + log_p


def log_normaliser(
    body: str, cum: np.ndarray, beta: float, lam: float, radius: float
) -> np.ndarray:
    """``log Z(L)`` of the body (box or ball) for (..., d) cumulative gradients."""
    if body == "box":
        return box_log_normaliser(cum, beta, lam, radius)
    return ball_log_normaliser(cum, beta, lam, radius, np.shape(cum)[-1])


def _dot_floats(a: list[float], b: list[float]) -> float:
    """:func:`~dp_experts_env.fixed_order.dot` of two vectors given as lists of floats."""
    total = a[0] * b[0]
    for i in range(1, len(a)):
        total += a[i] * b[i]
    return total


def ball_sample(
    mean: np.ndarray, scale: float, radius: float, gen: np.random.Generator, max_tries: int
) -> np.ndarray:
    """One exact draw of ``N(mean, scale^2 I)`` conditioned on the ball, by rejection.

    From a Gaussian at the projected mean or the uniform law, whichever accepts more often
    (docs/algorithms.md, "Ball sampler").

    Raises:
        RuntimeError: no acceptance in ``max_tries`` proposals (an extreme regime).
    """
    d = mean.shape[-1]
    s2 = scale * scale
    c = project(mean, "ball", radius)
    gap = mean - c
    gap_sq = float(dot(gap, gap))  # fixed order: the draws must not depend on the CPU
    log_vol = d / 2 * math.log(math.pi) + d * math.log(radius) - special.gammaln(d / 2 + 1)
    gaussian = d / 2 * math.log(2 * math.pi * s2) <= log_vol
    # Each proposal's inner products in Python floats: fixed_order.dot's products and sums in
    # its order (the same doubles), without its array overhead per proposal.
    c_list, gap_list, mean_list = c.tolist(), gap.tolist(), mean.tolist()
    r2 = radius * radius
    # The proposal's coordinates too: c + scale z and (r u^(1/d) z) / |z| elementwise in
    # Python floats are numpy's elementwise doubles (one IEEE operation each, the same order).
    for _ in range(max_tries):
        if gaussian:
            zs = gen.standard_normal(d).tolist()
            xs = [a + scale * b for a, b in zip(c_list, zs, strict=True)]
            if _dot_floats(xs, xs) > r2:
                continue
            log_acc = _dot_floats([a - b for a, b in zip(xs, c_list, strict=True)], gap_list) / s2
        else:
            zs = gen.standard_normal(d).tolist()
            shrink = radius * gen.random() ** (1.0 / d)
            norm = math.sqrt(_dot_floats(zs, zs))
            xs = [shrink * z / norm for z in zs]
            diff = [a - b for a, b in zip(xs, mean_list, strict=True)]
            log_acc = -(_dot_floats(diff, diff) - gap_sq) / (2 * s2)
        if math.log(gen.random() + 1e-300) < log_acc:
            return np.array(xs, dtype=np.float64)
    raise RuntimeError(
        f"ball sampler: no acceptance in {max_tries} proposals (mean norm "
        f"{np.linalg.norm(mean):.3g}, scale {scale:.3g}, R {radius:g})"
    )


# --------------------------------------------------------------------------- agent contract
def claim(**fields: Any) -> PrivacyClaim:
    """A :class:`PrivacyClaim` from the given fields the claim type defines (others dropped)."""
    known = set(getattr(PrivacyClaim, "__dataclass_fields__", fields))
    return PrivacyClaim(**{k: v for k, v in fields.items() if k in known})


class OCOAgent(Agent):
    """An agent for ``DPExperts-OCO-v0``: points of a box or a ball from gradient feedback.

    ``act`` takes the last round's gradient ((d,) or (B, d); zeros before round 1) and returns
    float64 points; a gradient longer than G or not finite raises ``ValueError``.

    Args:
        n_experts: d, the dimension (``dim=`` also accepted).
        horizon: T.
        body: ``"box"`` (default) or ``"ball"``. radius: R. grad_bound: G, the public bound on
            ``||g_t||_2`` the claims rely on.
        num_envs: B. seed: as :class:`~agents.base.Agent`.
    """

    feedback: ClassVar[str] = "oco"

    def __init__(
        self,
        n_experts: int | None = None,
        horizon: int | None = None,
        *,
        dim: int | None = None,
        body: str = "box",
        radius: float = 1.0,
        grad_bound: float = 1.0,
        num_envs: int = 1,
        seed: int | Sequence[int] | None = None,
        n_arms: int | None = None,
    ) -> None:
        if dim is not None and n_experts is not None and dim != n_experts:
            raise ValueError(f"dim={dim} contradicts n_experts={n_experts} (both are d)")
        d = dim if dim is not None else n_experts
        if d is None or horizon is None:
            raise TypeError("an OCO learner needs dim= (or n_experts=) and horizon=")
        super().__init__(check_int("dim", d, minimum=1), horizon, num_envs=num_envs, seed=seed)
        if n_arms is not None:
            raise ValueError("OCO learners take no n_arms")
        self.dim = self.n_experts
        self.body = check_choice("body", body, BODIES)
        self.radius = check_float("radius", radius, minimum=0.0, min_inclusive=False)
        self.grad_bound = check_float("grad_bound", grad_bound, minimum=0.0, min_inclusive=False)
        self.diameter = diameter(self.body, self.radius, self.dim)

    def reset(self, seed: int | Sequence[int] | None = None) -> None:
        """New episode; with a seed the streams (coins and rejection sampler) restart from it."""
        fresh = seed is not None or not hasattr(self, "rng")
        if fresh:
            self._sampler_seeds = run_seeds(seed if seed is not None else self._seed, self.num_envs)
            self._sampler_streams: list[np.random.Generator] | None = None
        super().reset(seed)

    @property
    def _sampler_gens(self) -> list[np.random.Generator]:
        """The rejection sampler's per-run generators, made at their first use.

        Only the ball's sampler reads them: a learner that never samples (the box, the
        leader) does not pay for B generators at each seeded reset. Made later from the same
        seeds, unused generators are the ones a reset would have made.
        """
        if self._sampler_streams is None:
            self._sampler_streams = seeded_generators(self._sampler_seeds, SAMPLER_STREAM)
        return self._sampler_streams

    def act(self, obs: Any) -> np.ndarray:
        """Learn from last round's gradient (if a round was played), then return the points."""
        g, single = self._parse_gradients(obs)
        if self.t >= self.horizon:
            raise ValueError(
                f"agent {self.name!r} has played its horizon={self.horizon} rounds; call reset()"
            )
        if self.t > 0:
            self._learn(g)
        points = np.asarray(self._choose(g), dtype=np.float64)
        self.t += 1
        return points[0].copy() if single else points.copy()

    def play_block(self, obs: Any) -> np.ndarray:
        """K rounds of :meth:`act` at once: (K, B, d) gradients in, (K, B, d) points out."""
        from agents._oco_kernels import check_oco_block

        grads = check_oco_block(self, obs)
        t0 = self.t
        if not len(grads):
            return np.empty((0, self.num_envs, self.dim))
        if type(self).act is not OCOAgent.act:  # a learner with its own act: that act is the law
            return np.stack([np.asarray(self.act(g), dtype=np.float64) for g in grads])
        points = np.empty(grads.shape)
        step = max(1, PART_ELEMENTS // (self.num_envs * self.dim))
        for lo in range(0, len(grads), step):  # parts: the temporaries stay a few megabytes
            part = grads[lo : lo + step]
            points[lo : lo + len(part)] = self._block(part)
            self.t = t0 + lo + len(part)
        return points

    def _block(self, grads: np.ndarray) -> np.ndarray:
        """The (K, B, d) points of K rounds on checked gradients (learners override it)."""
        from agents._oco_kernels import oco_hook_loop

        return oco_hook_loop(self, grads)

    def predict(
        self,
        observation: Any,
        state: Any = None,
        episode_start: np.ndarray | None = None,
        deterministic: bool = False,
    ) -> tuple[np.ndarray, Any]:
        """Stable-Baselines3-style prediction: (B, d) points (a new episode after T rounds)."""
        starts = None if episode_start is None else np.asarray(episode_start, bool).reshape(-1)
        if (starts is not None and starts.all() and self.t > 0) or self.t >= self.horizon:
            self.reset()
        points = self.act(observation)
        return np.atleast_2d(points), state

    def _parse_gradients(self, obs: Any) -> tuple[np.ndarray, bool]:
        if isinstance(obs, dict):
            raise TypeError(f"agent {self.name!r} needs gradient observations, got a dict")
        g = real_array("obs", obs)
        single = g.ndim == 1
        if single:
            g = g[None, :]
        if g.shape != (self.num_envs, self.dim) or (single and self.num_envs != 1):
            raise ValueError(
                f"obs must be gradients of shape ({self.dim},) or ({self.num_envs}, {self.dim}), "
                f"got {np.shape(obs)}"
            )
        norms = np.sqrt(np.einsum("bi,bi->b", g, g))
        if not np.all(norms <= self.grad_bound * (1 + 1e-9)):
            raise ValueError(
                f"obs for round {self.t + 1}: gradients must be finite with norm <= grad_bound="
                f"{self.grad_bound:g}; got norm {float(np.nanmax(norms)):.6g}"
            )
        return g, single
