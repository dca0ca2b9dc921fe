"""Mechanisms as data: what a private learner runs, declared once, composed by one accountant.

A declaration is a tree of frozen records (leaves and compositions, modelled on dp-accounting's
``DpEvent``); :func:`account` composes it into a :class:`~.guarantee.Guarantee` with generated
text, :func:`library_epsilon` cross-checks it with dp-accounting, and the audit reads it.
Sensitivities are those the noise is calibrated to. docs/privacy.md, "Privacy as data".
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, ClassVar

from dp_experts_env.privacy.accounting import (
    advanced_composition_heterogeneous,
    compose,
)
from dp_experts_env.privacy.guarantee import Guarantee

__all__ = [
    "ExponentialMechanism",
    "LaplaceRelease",
    "Mechanism",
    "Parallel",
    "PostProcessing",
    "Repeated",
    "ReportNoisyMin",
    "SamplingSteps",
    "Sequential",
    "SparseVector",
    "TreeAggregation",
    "account",
    "dp_event",
    "fresh_draws",
    "scalar_draws",
    "library_epsilon",
    "leaves",
]


def _g(x: float) -> str:
    return f"{x:.6g}"


def _positive(name: str, value: float, *, allow_inf: bool = False) -> float:
    v = float(value)
    if math.isnan(v) or v <= 0 or (math.isinf(v) and not allow_inf):
        raise ValueError(f"{name} must be a finite number > 0, got {value!r}")
    return v


def _laplace_epsilon(sensitivity: float, scale: float) -> float:
    return math.inf if scale == 0.0 else sensitivity / scale


def advanced_composition_epsilon(epsilon: float, k: int, delta: float) -> float:
    """Epsilon of ``k`` adaptive epsilon-DP mechanisms at extra ``delta`` (Dwork & Roth Thm 3.20).

    ``sqrt(2 k ln(1/delta)) epsilon + k epsilon (e^epsilon - 1)``, valid for every epsilon.
    """
    if math.isinf(epsilon):
        return math.inf
    return math.sqrt(2.0 * k * math.log(1.0 / delta)) * epsilon + k * epsilon * math.expm1(epsilon)


def _total_delta(delta: float) -> float:
    # Guarantee needs delta < 1; a composition that reaches 1 says nothing.
    return min(delta, math.nextafter(1.0, 0.0))


class Mechanism:
    """Base of every declared mechanism and composition (frozen dataclasses).

    Subclasses define :meth:`cost` and :meth:`describe`; ``kind`` names the class for the audit.
    """

    kind: ClassVar[str] = ""
    #: True for mechanisms whose noisy values are released (the audit records them).
    releases: ClassVar[bool] = False

    def cost(self) -> tuple[float, float]:
        """(epsilon, delta) of the mechanism, per datum (one round's loss vector)."""
        raise NotImplementedError

    def describe(self) -> str:
        """The accountant text generated from the declaration."""
        raise NotImplementedError

    def children(self) -> tuple[Mechanism, ...]:
        """The declared parts (empty for a leaf)."""
        return ()


@dataclass(frozen=True)
class LaplaceRelease(Mechanism):
    """A noisy vector released to the learner: ``value + Lap(scale)`` per coordinate.

    Attributes:
        what: the released value in words ("the round's loss vector").
        shape: shape of one release (per run).
        sensitivity: L1 sensitivity the noise is calibrated to.
        scale: Laplace scale per coordinate (0: no noise, epsilon = inf).
    """

    what: str
    shape: tuple[int, ...]
    sensitivity: float
    scale: float
    kind: ClassVar[str] = "laplace"
    releases: ClassVar[bool] = True

    def cost(self) -> tuple[float, float]:
        """(epsilon, delta) per datum."""
        return _laplace_epsilon(self.sensitivity, self.scale), 0.0

    def describe(self) -> str:
        """The accountant text."""
        return (
            f"Laplace release of {self.what} (shape {self.shape}, L1 sensitivity "
            f"{_g(self.sensitivity)}, scale {_g(self.scale)}: {_g(self.cost()[0])}-DP)"
        )


@dataclass(frozen=True)
class _Selection(Mechanism):
    """A private choice of one of ``candidates``: ``2 sensitivity / scale`` (1x if monotone)."""

    what: str
    candidates: int
    sensitivity: float
    scale: float
    monotone: bool = False
    #: the mechanism's name in the accountant text, and how its scale is named there
    label: ClassVar[str] = ""

    def cost(self) -> tuple[float, float]:
        """(epsilon, delta) per datum."""
        factor = 1.0 if self.monotone else 2.0
        return _laplace_epsilon(factor * self.sensitivity, self.scale), 0.0

    def _scale_text(self) -> str:
        raise NotImplementedError

    def describe(self) -> str:
        """The accountant text."""
        kind = "monotone " if self.monotone else ""
        return (
            f"{self.label} over {self.candidates} {self.what} ({kind}sensitivity "
            f"{_g(self.sensitivity)}, {self._scale_text()}: {_g(self.cost()[0])}-DP)"
        )


@dataclass(frozen=True)
class ReportNoisyMin(_Selection):
    """Index of the smallest ``score + Lap(scale)`` (Dwork & Roth, Claim 3.9)."""

    kind: ClassVar[str] = "noisy-min"
    label: ClassVar[str] = "report-noisy-min"

    def _scale_text(self) -> str:
        return f"Laplace {_g(self.scale)}"


@dataclass(frozen=True)
class ExponentialMechanism(_Selection):
    """``P(j) ~ exp(-score_j / scale)``, Gumbel scale ``scale`` (McSherry & Talwar 2007)."""

    kind: ClassVar[str] = "exponential"
    label: ClassVar[str] = "exponential mechanism"

    def _scale_text(self) -> str:
        return f"temperature 1/{_g(self.scale)}"


@dataclass(frozen=True)
class SparseVector(Mechanism):
    """Sparse vector: noisy queries against a noisy threshold, halting after ``positives`` TOPs.

    A segment costs ``sensitivity / threshold_scale + 2 sensitivity / query_scale`` (Lyu, Su & Li
    2017, Thm 2), composed basically or (``delta > 0``) by advanced composition if smaller;
    ``draws``: scalar draws per run in one game (:func:`scalar_draws`).
    """

    what: str
    sensitivity: float
    threshold_scale: float
    query_scale: float
    positives: int = 1
    delta: float = 0.0
    draws: int | None = None
    kind: ClassVar[str] = "sparse-vector"

    def segment_epsilon(self) -> float:
        """Epsilon of one AboveThreshold segment."""
        if self.threshold_scale == 0.0 or self.query_scale == 0.0:
            return math.inf
        return self.sensitivity / self.threshold_scale + 2.0 * self.sensitivity / self.query_scale

    def cost(self) -> tuple[float, float]:
        """(epsilon, delta) per datum."""
        seg = self.segment_epsilon()
        basic = self.positives * seg
        if self.delta > 0.0:
            advanced = advanced_composition_epsilon(seg, self.positives, self.delta)
            if advanced < basic:
                return advanced, self.delta
        return basic, 0.0

    def describe(self) -> str:
        """The accountant text."""
        how = "advanced composition" if self.cost()[1] else "basic composition"
        return (
            f"sparse vector on {self.what}, {self.positives} TOP(s) ({how} of AboveThreshold), "
            f"query sensitivity {_g(self.sensitivity)}, threshold noise "
            f"Lap({_g(self.threshold_scale)}), query noise Lap({_g(self.query_scale)}): "
            f"{_g(self.cost()[0])}-DP"
        )


@dataclass(frozen=True)
class TreeAggregation(Mechanism):
    """Binary-tree running sums: each dyadic node released once with noise.

    Laplace (``sensitivity`` L1): ``levels sensitivity / scale``. Gaussian (L2, ``scale`` the
    standard deviation): ``rho``-zCDP converted at ``delta`` (Bun & Steinke 2016, Prop. 1.3), or
    with ``profile="gdp"`` ``mu = sqrt(levels) sensitivity / scale``-GDP by the exact profile
    (Dong, Roth & Su 2019).
    """

    what: str
    leaves: int
    levels: int
    shape: tuple[int, ...]
    sensitivity: float
    scale: float
    noise: str = "laplace"
    delta: float = 0.0
    profile: str = "zcdp"
    kind: ClassVar[str] = "tree"
    releases: ClassVar[bool] = True

    def __post_init__(self) -> None:
        # A misspelt law or profile must not fall back silently to another formula.
        if self.noise not in ("laplace", "gaussian"):
            raise ValueError(f"noise must be 'laplace' or 'gaussian', got {self.noise!r}")
        if self.profile not in ("zcdp", "gdp"):
            raise ValueError(f"profile must be 'zcdp' or 'gdp', got {self.profile!r}")

    def rho(self) -> float:
        """The zCDP rho of the Gaussian tree (inf with no noise)."""
        if self.scale == 0.0:
            return math.inf
        return self.levels * self.sensitivity**2 / (2.0 * self.scale**2)

    def cost(self) -> tuple[float, float]:
        """(epsilon, delta) per datum."""
        if self.noise == "gaussian" and self.profile == "gdp":
            from dp_experts_env.privacy.gaussian import gdp_epsilon

            if self.scale == 0.0:
                return math.inf, self.delta
            mu = math.sqrt(self.levels) * self.sensitivity / self.scale
            return gdp_epsilon(mu, self.delta), self.delta
        if self.noise == "gaussian":
            rho = self.rho()
            return rho + 2.0 * math.sqrt(rho * math.log(1.0 / self.delta)), self.delta
        return _laplace_epsilon(self.levels * self.sensitivity, self.scale), 0.0

    def describe(self) -> str:
        """The accountant text."""
        if self.noise == "gaussian" and self.profile == "gdp":
            return (
                f"Gaussian binary tree on {self.what} ({self.leaves} leaves, {self.levels} "
                f"levels, L2 sensitivity {_g(self.sensitivity)}, sigma {_g(self.scale)} per "
                f"node: the levels compose to mu = "
                f"{math.sqrt(self.levels) * self.sensitivity / self.scale:.6g}-GDP, converted by "
                f"the exact Gaussian privacy profile)"
            )
        if self.noise == "gaussian":
            return (
                f"Gaussian binary tree on {self.what} ({self.leaves} leaves, {self.levels} "
                f"levels, L2 sensitivity {_g(self.sensitivity)}, sigma {_g(self.scale)} per "
                f"node: rho = {self.rho():.4g}-zCDP over the levels, eps = rho + 2 sqrt(rho "
                f"ln(1/delta)))"
            )
        return (
            f"binary-tree counter on {self.what} ({self.leaves} leaves, {self.levels} levels, "
            f"L1 sensitivity {_g(self.sensitivity)}, Laplace {_g(self.scale)} per node, basic "
            f"composition over the levels: {_g(self.cost()[0])}-DP)"
        )


@dataclass(frozen=True)
class SamplingSteps(Mechanism):
    """Lazy sampling (a data-dependent coin plus resamples) bounded by an exact accountant.

    ``accountant`` names the hand-written accountant and its result; ``coin_epsilon``,
    ``resample_epsilon`` and ``resamples`` are what it composed (the audit reads them).
    """

    what: str
    epsilon: float
    delta: float
    accountant: str
    coin_epsilon: float = math.nan
    resample_epsilon: float = math.nan
    resamples: int = 0
    kind: ClassVar[str] = "sampling"

    def cost(self) -> tuple[float, float]:
        """(epsilon, delta) per datum."""
        return float(self.epsilon), float(self.delta)

    def describe(self) -> str:
        """The accountant text."""
        return f"{self.what}: {self.accountant}"


@dataclass(frozen=True)
class Sequential(Mechanism):
    """Mechanisms reading the same data: basic composition, or heterogeneous advanced if smaller."""

    parts: tuple[Mechanism, ...]
    delta_prime: float = 0.0
    what: str = ""
    kind: ClassVar[str] = "sequential"

    def children(self) -> tuple[Mechanism, ...]:
        """The declared parts."""
        return self.parts

    def _costs(self) -> list[tuple[float, float]]:
        return [p.cost() for p in self.parts]

    def cost(self) -> tuple[float, float]:
        """(epsilon, delta) per datum."""
        costs = self._costs()
        eps = float(sum(c[0] for c in costs))
        delta = float(sum(c[1] for c in costs))
        if self.delta_prime > 0.0 and math.isfinite(eps):
            adv = advanced_composition_heterogeneous(
                [c[0] for c in costs], self.delta_prime, [c[1] for c in costs]
            )
            if adv.epsilon < eps:
                return adv.epsilon, adv.delta
        return eps, _total_delta(delta)

    def describe(self) -> str:
        """The accountant text."""
        inner = "; ".join(p.describe() for p in self.parts)
        label = "basic composition" + (f" of {self.what}" if self.what else "")
        if self.delta_prime > 0.0:
            label = f"min(basic, advanced with delta' = {self.delta_prime:g}) composition" + (
                f" of {self.what}" if self.what else ""
            )
        return f"{label}: {inner}"


@dataclass(frozen=True)
class Repeated(Mechanism):
    """``times`` adaptive copies of ``part`` on the same data (basic, or advanced if smaller)."""

    part: Mechanism
    times: int
    delta_prime: float = 0.0
    what: str = ""
    kind: ClassVar[str] = "repeated"

    def children(self) -> tuple[Mechanism, ...]:
        """The declared parts."""
        return (self.part,)

    def cost(self) -> tuple[float, float]:
        """(epsilon, delta) per datum."""
        eps, delta = self.part.cost()
        if math.isinf(eps):
            return eps, delta
        g = compose(eps, self.times, delta=delta, delta_prime=self.delta_prime)
        return g.epsilon, g.delta

    def describe(self) -> str:
        """The accountant text."""
        how = "basic" if self.delta_prime == 0.0 else "best of basic and advanced"
        of = f" ({self.what})" if self.what else ""
        return f"{self.times} copies{of}, {how} composition, of: {self.part.describe()}"


@dataclass(frozen=True)
class Parallel(Mechanism):
    """Copies of ``part`` on disjoint data (windows, epochs, batches, rounds): one copy's cost.

    The learner vouches that the partition depends on no protected data beyond its other declared
    releases. ``copies``: copies per game, each a fresh draw (:func:`fresh_draws`).
    """

    part: Mechanism
    over: str
    copies: int | None = None
    kind: ClassVar[str] = "parallel"

    def children(self) -> tuple[Mechanism, ...]:
        """The declared parts."""
        return (self.part,)

    def cost(self) -> tuple[float, float]:
        """(epsilon, delta) per datum."""
        return self.part.cost()

    def describe(self) -> str:
        """The accountant text."""
        return f"{self.part.describe()}; parallel composition over {self.over}"


@dataclass(frozen=True)
class PostProcessing(Mechanism):
    """What the learner computes from ``part``'s outputs alone (free)."""

    part: Mechanism
    what: str = "plays"
    kind: ClassVar[str] = "post-processing"

    def children(self) -> tuple[Mechanism, ...]:
        """The declared parts."""
        return (self.part,)

    def cost(self) -> tuple[float, float]:
        """(epsilon, delta) per datum."""
        return self.part.cost()

    def describe(self) -> str:
        """The accountant text."""
        return f"{self.part.describe()}; {self.what} are post-processing"


def fresh_draws(mechanism: Mechanism) -> int:
    """Laplace coordinates per run declared fresh in one game (counted ``Parallel`` copies)."""
    if isinstance(mechanism, Parallel) and mechanism.copies is not None:
        inner = mechanism.part
        while isinstance(inner, (PostProcessing, Repeated)):
            times = inner.times if isinstance(inner, Repeated) else 1
            inner = inner.part
            if times != 1:
                return mechanism.copies * times * fresh_draws_leaf(inner)
        return mechanism.copies * fresh_draws_leaf(inner)
    return sum(fresh_draws(kid) for kid in mechanism.children())


def scalar_draws(mechanism: Mechanism) -> int:
    """Scalar noise draws per run (sparse-vector queries and thresholds) declared for a game."""
    if isinstance(mechanism, SparseVector):
        return int(mechanism.draws or 0)
    return sum(scalar_draws(kid) for kid in mechanism.children())


def fresh_draws_leaf(mechanism: Mechanism) -> int:
    """Coordinates of one Laplace release (0 for other mechanisms)."""
    if isinstance(mechanism, LaplaceRelease):
        return int(math.prod(mechanism.shape))
    return 0


def leaves(mechanism: Mechanism) -> Iterator[Mechanism]:
    """Every leaf mechanism of a declaration, depth first."""
    kids = mechanism.children()
    if not kids:
        yield mechanism
    for kid in kids:
        yield from leaves(kid)


def account(mechanism: Mechanism, *, source: str = "") -> Guarantee:
    """The guarantee a declaration certifies, its text generated from the declaration.

    Args:
        mechanism: the declaration (a leaf or a composition).
        source: the algorithm and the proof the composition follows (appended in the text).
    """
    if not isinstance(mechanism, Mechanism):
        raise TypeError(f"mechanism must be a declared Mechanism, got {type(mechanism).__name__}")
    eps, delta = mechanism.cost()
    text = mechanism.describe() + (f" ({source})" if source else "")
    if math.isinf(eps):
        return Guarantee(math.inf, 0.0, text)
    return Guarantee(eps, delta, text)


def dp_event(mechanism: Mechanism) -> Any:
    """The dp-accounting ``DpEvent`` of a declaration, or None where the library has none.

    Laplace and Gaussian releases and trees, their parallel, repeated and sequential compositions
    map to events; selections, the sparse vector and lazy sampling do not.
    """
    import dp_accounting

    if isinstance(mechanism, LaplaceRelease):
        return dp_accounting.LaplaceDpEvent(mechanism.scale / mechanism.sensitivity)
    if isinstance(mechanism, TreeAggregation):
        if mechanism.noise == "gaussian":
            node = dp_accounting.GaussianDpEvent(mechanism.scale / mechanism.sensitivity)
        else:
            node = dp_accounting.LaplaceDpEvent(mechanism.scale / mechanism.sensitivity)
        return dp_accounting.SelfComposedDpEvent(node, mechanism.levels)
    if isinstance(mechanism, (Parallel, PostProcessing)):
        return dp_event(mechanism.part)
    if isinstance(mechanism, Repeated):
        inner = dp_event(mechanism.part)
        return None if inner is None else dp_accounting.SelfComposedDpEvent(inner, mechanism.times)
    if isinstance(mechanism, Sequential):
        events = [dp_event(p) for p in mechanism.parts]
        return None if any(e is None for e in events) else dp_accounting.ComposedDpEvent(events)
    return None


def library_epsilon(mechanism: Mechanism, delta: float, *, accountant: str = "pld") -> float:
    """Epsilon at ``delta`` of a declaration by dp-accounting's PLD or RDP accountant.

    Neighbours are ``ADD_OR_REMOVE_ONE`` (see :func:`~.accounting.pld_laplace_composition`).

    Raises:
        ValueError: the declaration has a part without a library event.
    """
    import dp_accounting
    from dp_accounting.pld import pld_privacy_accountant
    from dp_accounting.rdp import rdp_privacy_accountant

    event = dp_event(mechanism)
    if event is None:
        raise ValueError("this declaration has a mechanism dp-accounting has no event for")
    relation = dp_accounting.NeighboringRelation.ADD_OR_REMOVE_ONE
    if accountant == "pld":
        acc: Any = pld_privacy_accountant.PLDAccountant(
            relation, value_discretization_interval=1e-4
        )
    elif accountant == "rdp":
        acc = rdp_privacy_accountant.RdpAccountant(neighboring_relation=relation)
    else:
        raise ValueError(f"accountant must be 'pld' or 'rdp', got {accountant!r}")
    acc.compose(event)
    return float(acc.get_epsilon(delta))


def composed_parts(mechanism: Mechanism) -> tuple[Mechanism, ...]:
    """The parts a sequential composition splits the claim among.

    ``Parallel`` and ``PostProcessing`` are looked through, ``Sequential`` flattened; anything else
    (``Repeated`` included) is one part.
    """
    if isinstance(mechanism, (Parallel, PostProcessing)):
        return composed_parts(mechanism.part)
    if isinstance(mechanism, Sequential):
        return tuple(p for part in mechanism.parts for p in composed_parts(part))
    return (mechanism,)


def largest_share(mechanism: Mechanism) -> float:
    """The largest part's epsilon over the whole claim's (1 when not split).

    The audit scales the power it requires of a pass by this share.
    """
    parts = composed_parts(mechanism)
    total = mechanism.cost()[0]
    if len(parts) < 2 or not math.isfinite(total) or total <= 0.0:
        return 1.0
    if all(p.releases for p in parts):
        return 1.0  # released values of every part: one likelihood-ratio statistic reads all
    return min(1.0, max(p.cost()[0] for p in parts) / total)
