"""Paper-mode rows by name: learners whose defaults are the suite's variant, as printed.

``"private-batched-exp4:paper"``, ``"dp-klucb:paper"``, ``"randomized-prefix-softmax:paper"`` and
``"svt-restart:paper"``: the learner with one or two defaults changed, so a grid holds both rows.
"""

from __future__ import annotations

import functools
from typing import Any

from agents.dp_klucb import DPKLUCB
from agents.private_exp4 import PrivateBatchedExp4
from agents.randomized_prefix import RandomizedPrefixSoftmax
from agents.registry import register
from agents.svt_restart import SVTRestart

__all__ = [
    "PrivateBatchedExp4Paper",
    "DPKLUCBPaper",
    "RandomizedPrefixSoftmaxPaper",
    "SVTRestartPaper",
]


@register(
    "private-batched-exp4:paper",
    private=True,
    summary="private-batched-exp4 as printed (PAB Alg. 2): release='estimates'",
)
class PrivateBatchedExp4Paper(PrivateBatchedExp4):
    """``private-batched-exp4`` with ``release="estimates"``: PAB Alg. 2 as printed.

    Source: "Faster Rates for Private Adversarial Bandits", Algorithm 2 and Theorem 10. Everything
    else is :class:`~agents.private_exp4.PrivateBatchedExp4`'s.
    """

    @functools.wraps(PrivateBatchedExp4.__init__)
    def __init__(self, *args: Any, release: str | None = "estimates", **kwargs: Any) -> None:
        super().__init__(*args, release=release, **kwargs)


@register(
    "dp-klucb:paper",
    private=True,
    summary="dp-klucb as printed (Azize & Basu's AdaP-KLUCB): last-episode means",
)
class DPKLUCBPaper(DPKLUCB):
    """``dp-klucb`` with ``means="last"``: AdaP-KLUCB's forgetting, as the source prints it.

    Source: Azize & Basu 2022, AdaP-KLUCB (Section 5). Everything else is
    :class:`~agents.dp_klucb.DPKLUCB`'s.
    """

    @functools.wraps(DPKLUCB.__init__)
    def __init__(self, *args: Any, means: str = "last", **kwargs: Any) -> None:
        super().__init__(*args, means=means, **kwargs)


@register(
    "randomized-prefix-softmax:paper",
    private=True,
    summary="as printed (Cesari & Colomboni): randomized-prefix-softmax with eta <= 1/8",
)
class RandomizedPrefixSoftmaxPaper(RandomizedPrefixSoftmax):
    """``randomized-prefix-softmax`` with ``eta_cap=0.125``: the printed rate, eps <= 0.25.

    Source: Cesari & Colomboni 2026, Section 4 and Theorem 1 (``eta = min(epsilon/2, 1/8)``).
    Everything else is :class:`~agents.randomized_prefix.RandomizedPrefixSoftmax`'s.
    """

    @functools.wraps(RandomizedPrefixSoftmax.__init__)
    def __init__(self, *args: Any, eta_cap: float = 0.125, **kwargs: Any) -> None:
        super().__init__(*args, eta_cap=eta_cap, **kwargs)


@register(
    "svt-restart:paper",
    private=True,
    summary="the paper's detector (ARS Alg. 2): svt-restart with Thm 3.1's slack, every window",
)
class SVTRestartPaper(SVTRestart):
    """``svt-restart`` with ``tuning="paper"`` and ``window_grid="all"``: the paper's detector.

    Source: Asi, Raman & Saha 2025, "Tracking the Best Expert Privately", Section 3.2, Algorithm 2
    with Theorem 3.1's slack (beta = 1/T) over every window start. ``mode`` stays ``"strict"`` (the
    errata E-ARS-6, E-ARS-7, E-ARS-9 apply). Everything else is
    :class:`~agents.svt_restart.SVTRestart`'s.
    """

    @functools.wraps(SVTRestart.__init__)
    def __init__(
        self, *args: Any, tuning: str | None = "paper", window_grid: str = "all", **kwargs: Any
    ) -> None:
        super().__init__(*args, tuning=tuning, window_grid=window_grid, **kwargs)
