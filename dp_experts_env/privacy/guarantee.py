"""The privacy a mechanism or a composition provides, as a small frozen record."""

import math
from dataclasses import dataclass
from typing import Any, NamedTuple

__all__ = ["Guarantee", "Release"]


@dataclass(frozen=True)
class Guarantee:
    """An (epsilon, delta)-DP statement and the rule it comes from.

    Attributes:
        epsilon: privacy loss bound (> 0; ``inf`` means no privacy).
        delta: approximate-DP slack in [0, 1) (0 for pure DP).
        accountant: the theorem or composition rule behind the numbers.
        neighbouring: what neighbouring inputs may differ in, when it needs saying.
    """

    epsilon: float
    delta: float = 0.0
    accountant: str = ""
    neighbouring: str = ""

    def __post_init__(self) -> None:
        eps = float(self.epsilon)
        if math.isnan(eps) or eps <= 0:
            raise ValueError(f"epsilon must be > 0 (inf for no privacy), got {self.epsilon}")
        if not (0.0 <= float(self.delta) < 1.0):
            raise ValueError(f"delta must lie in [0, 1), got {self.delta}")
        object.__setattr__(self, "epsilon", eps)
        object.__setattr__(self, "delta", float(self.delta))

    def summary(self) -> str:
        """One line, e.g. ``'(1, 1e-06)-DP [advanced composition]'``."""
        if math.isinf(self.epsilon):
            return f"not private [{self.accountant}]"
        kind = f"({self.epsilon:g}, {self.delta:g})-DP" if self.delta else f"{self.epsilon:g}-DP"
        return f"{kind} [{self.accountant}]"


class Release(NamedTuple):
    """What a one-shot mechanism returns: ``value, guarantee = mechanism(...)``."""

    value: Any
    guarantee: Guarantee
