"""Paper-mode rows by name: learners whose defaults are the suite's variant, as printed.

``agents.make("private-batched-exp4:paper")`` and ``agents.make("dp-klucb:paper")`` build the
paper's algorithm under its own name, so a grid, a table or a figure can hold both rows (the
compare table marks the defaults "(suite variant)"; docs/algorithms.md has both rows). Each is
its learner with one default changed; every other keyword is the learner's.
"""

from __future__ import annotations

import functools
from typing import Any

from agents.dp_klucb import DPKLUCB
from agents.private_exp4 import PrivateBatchedExp4
from agents.registry import register

__all__ = ["PrivateBatchedExp4Paper", "DPKLUCBPaper"]


@register(
    "private-batched-exp4:paper",
    private=True,
    summary="private-batched-exp4 as printed (PAB Alg. 2): release='estimates'",
)
class PrivateBatchedExp4Paper(PrivateBatchedExp4):
    """``private-batched-exp4`` with ``release="estimates"``: PAB Alg. 2 as printed.

    Source: "Faster Rates for Private Adversarial Bandits", Algorithm 2 and Theorem 10 (the
    paper's release of the experts' batch estimates; the default ``release="loss"`` is the
    suite's addition). Everything else, the claim included, is
    :class:`~agents.private_exp4.PrivateBatchedExp4`'s.
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

    Source: Azize & Basu 2022, AdaP-KLUCB (Section 5): the index reads each arm's last episode
    only. Everything else, the claim included, is :class:`~agents.dp_klucb.DPKLUCB`'s.
    """

    @functools.wraps(DPKLUCB.__init__)
    def __init__(self, *args: Any, means: str = "last", **kwargs: Any) -> None:
        super().__init__(*args, means=means, **kwargs)
