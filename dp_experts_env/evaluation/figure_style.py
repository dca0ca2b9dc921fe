"""How every figure looks: paper widths, matplotlib settings, one colour and marker per learner.

Every learner keeps one colour and marker in every figure and results folder; uniform play
(:data:`REFERENCE_LEARNER`) is black dashed, other non-private learners dashed, private ones
solid (docs/grid.md, "Reading the table and the figures").
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from typing import Any

#: Width in inches of one column of a two-column paper, and of the full text width.
COLUMN_WIDTH = 3.5


FULL_WIDTH = 7.0


#: Matplotlib settings of every figure (``matplotlib.rc_context`` while drawing and saving).
STYLE: dict[str, Any] = {
    # TrueType (Type 42) fonts in PDF/PS: publishers' checkers reject Type 3 bitmap fonts.
    "pdf.fonttype": 42,
    "ps.fonttype": 42,
    "font.size": 8,
    "axes.titlesize": 8,
    "axes.labelsize": 8,
    "legend.fontsize": 7,
    "xtick.labelsize": 7,
    "ytick.labelsize": 7,
    "lines.linewidth": 1.3,
    "lines.markersize": 3.5,
    "axes.linewidth": 0.6,
    "grid.linewidth": 0.4,
    "grid.alpha": 0.35,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "savefig.dpi": 300,
}


#: Colour-blind-safe colours: Okabe & Ito (2008) without black (uniform's) and yellow, then
#: Paul Tol's "muted" (CIE76 distance >= 20 for every pair); past the 14th, another marker.
PALETTE = (
    "#0072B2",  # blue
    "#E69F00",  # orange
    "#009E73",  # bluish green
    "#CC79A7",  # reddish purple
    "#D55E00",  # vermillion
    "#56B4E9",  # sky blue
    "#332288",  # indigo
    "#999933",  # olive
    "#882255",  # wine
    "#DDCC77",  # sand
    "#AA4499",  # purple
    "#117733",  # green
    "#CC6677",  # rose
    "#777777",  # grey (Tol's teal sat too close to Okabe-Ito's bluish green)
    "#661100",  # dark brown (#38's baselines joined the default comparison)
    "#FF1493",  # deep pink
)


_MARKERS = ("o", "s", "^", "D", "v", "P", "X", "<", ">", "h")


REFERENCE_LEARNER = "uniform"


def _is_reference(label: str) -> bool:
    return label.split("[", 1)[0] == REFERENCE_LEARNER


#: Fixed palette index of each registered learner, distinct within one feedback type; other
#: labels take a colour and marker from a hash of the label.
_FIXED_COLOUR = {
    # full information
    "hedge": 0,
    "fixed-share": 1,
    "follow-the-leader": 2,
    "shrinking-dartboard": 3,
    "noisy-clipped-hedge": 4,
    "svt-restart": 5,
    "private-lazy-hedge": 6,
    "dp-ftrl-tree": 7,
    "limited-updates": 8,
    "meta-expert-reduction": 9,
    "private-shrinking-dartboard": 10,
    "batched-private-shrinking-dartboard": 11,
    "randomized-prefix-softmax": 12,
    "ppo": 13,
    "private-fixed-share": 14,
    "gaussian-tree-hedge": 15,
    # bandit (with and without advice)
    "exp3": 0,
    "exp4": 1,
    "tsallis-inf": 2,
    "ftpl-gr": 3,
    "ldp-exp4": 4,
    "private-bandit-over-experts": 5,
    "private-batched-bandit": 6,
    "private-batched-exp4": 7,
    # online convex optimisation
    "ogd": 0,
    "ftrl-oco": 1,
    "p-comw-lazy": 2,
    "dp-ftrl-oco": 4,
    "p-comw": 5,
}


def learner_style(label: str) -> dict[str, Any]:
    """Colour and marker of a label, a function of the label alone (fixed if registered)."""
    if _is_reference(label):
        return {"color": "black", "marker": None}
    if label in _FIXED_COLOUR:
        i = _FIXED_COLOUR[label]
        return {"color": PALETTE[i], "marker": _MARKERS[i % len(_MARKERS)]}
    h = int(hashlib.sha1(label.encode()).hexdigest(), 16)
    return {
        "color": PALETTE[h % len(PALETTE)],
        "marker": _MARKERS[(h // len(PALETTE)) % len(_MARKERS)],
    }


def learner_styles(labels: Iterable[str]) -> dict[str, dict[str, Any]]:
    """:func:`learner_style` of every label (the same in every figure and every folder)."""
    return {label: learner_style(label) for label in sorted(set(labels))}


def line_kwargs(style: dict[str, Any], label: str, private: bool) -> dict[str, Any]:
    """Line style of a learner: private solid, non-private dashed, the reference black dashed."""
    if _is_reference(label):
        return {"color": "black", "linestyle": (0, (5, 2)), "linewidth": 1.6, "zorder": 3}
    return {
        "color": style["color"],
        "linestyle": "-" if private else (0, (4, 1.5)),
        "linewidth": 1.3 if private else 1.5,
    }
