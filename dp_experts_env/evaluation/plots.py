"""Figures a paper would use, drawn from tidy result rows (matplotlib, PNG; PDF on request).

* :func:`plot_regret_vs_round` -- mean regret curve per agent with a bootstrap confidence band,
  one panel per requested epsilon holding only the runs at that epsilon, and one "no noise"
  panel for the private learners at epsilon = inf (non-private agents appear in every panel as
  references).
* :func:`plot_regret_vs_epsilon` -- the privacy-utility trade-off: final regret against the
  epsilon each learner's accountant certifies (the requested one written where it differs) per
  private agent; non-private agents as horizontal dashed lines.
* :func:`plot_regret_vs_horizon` -- final regret against T on log-log axes: bootstrap error bars,
  each learner's fitted power law (slope and its seed-bootstrap 95% interval in the legend) and
  a reference slope.

Every plotted end point (last round of a curve, point of the epsilon and horizon figures) is the
``summary.csv`` mean of its (env, agent, epsilon); tests/test_figures_equal_table.py checks it.

Styling is for papers: figures are :data:`COLUMN_WIDTH` (one panel) or :data:`FULL_WIDTH` wide
with 7-8 pt text, PDFs embed TrueType (Type 42) fonts, and every learner keeps one colour and
marker in every figure and every results folder (:func:`learner_style`, a function of the
learner's name; colour-blind-safe hues). Uniform play, the reference of every score, is a black
dashed line; other non-private learners are dashed, private ones solid.

Figures are built without pyplot (a bare :class:`~matplotlib.figure.Figure` with an Agg canvas:
nothing to close) and saved as laid out, without ``bbox_inches="tight"``: each figure holds its
own titles (wrapped or shrunk to its width) and its legend below the axes (measured, the figure
grown to fit), so a saved PNG is the figure's own size and is drawn once.
"""

from __future__ import annotations

import hashlib
import io
import math
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import matplotlib
import matplotlib.ticker
import numpy as np
import pandas as pd
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.collections import PolyCollection
from matplotlib.figure import Figure
from matplotlib.transforms import Bbox

from dp_experts_env.evaluation.claims import loglog_slope
from dp_experts_env.evaluation.stats import bootstrap_ci, fit_loglog_slope
from dp_experts_env.evaluation.summary import aggregate_table
from dp_experts_env.evaluation.table import learner_label

__all__ = [
    "COLUMN_WIDTH",
    "FULL_WIDTH",
    "PALETTE",
    "PNG_DPI",
    "STYLE",
    "learner_style",
    "learner_styles",
    "plot_regret_vs_round",
    "plot_regret_vs_epsilon",
    "plot_regret_vs_horizon",
    "plot_aggregate",
    "make_figures",
    "save_figure",
]

_NICE = {
    "dynamic_regret": "dynamic regret",
    "static_regret": "static regret",
    "per_round_best_regret": "per-round-best regret",
    "static_pseudo_regret": "static pseudo-regret",
    "per_round_best_pseudo_regret": "per-round-best pseudo-regret",
}


def _curve_band(matrix: np.ndarray, confidence: float, n_boot: int, seed: int):
    """Mean over seeds (axis 1) with a percentile bootstrap band, vectorised over rounds."""
    return _curve_bands([matrix], confidence, n_boot, seed)[0]


def _curve_bands(
    matrices: list[np.ndarray], confidence: float, n_boot: int, seed: int
) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """:func:`_curve_band` of several (rounds, seeds) matrices: (mean, low, high) of each.

    Each curve is resampled as if alone: ``n_boot`` draws of its seeds with replacement from a
    generator seeded with ``seed`` (the same draws for every curve of as many seeds), the band
    the percentile interval of the resample means. A resample mean is computed as the seeds'
    values times how often the resample drew each, over the seed count: one matrix product
    per group of curves instead of a (rounds, n_boot, seeds) gather per curve (the same
    resamples, sums in another order: within 1e-15 relative of the gathered means). Curves
    with a missing or infinite value keep the gather, where a seed not drawn cannot turn a
    mean into NaN (0 x inf). The percentiles of all the curves' resample means are taken at
    once, from sorted rows (:func:`_sorted_quantiles`).
    """
    out: list[Any] = [None] * len(matrices)
    by_seeds: dict[tuple[int, bool], list[int]] = {}
    for i, matrix in enumerate(matrices):
        key = (matrix.shape[1], bool(np.isfinite(matrix).all()))
        by_seeds.setdefault(key, []).append(i)
    tail = (1 - confidence) / 2
    for (n_seeds, finite), members in by_seeds.items():
        means = [matrices[i].mean(axis=1) for i in members]
        if n_seeds < 2:
            for i, mean in zip(members, means, strict=True):
                out[i] = (mean, mean, mean)
            continue
        idx = np.random.default_rng(seed).integers(0, n_seeds, size=(n_boot, n_seeds))
        stacked = np.concatenate([matrices[i] for i in members])
        if finite:
            draws = np.arange(n_boot)[:, None] * n_seeds + idx
            counts = np.bincount(draws.ravel(), minlength=n_boot * n_seeds)
            boots = stacked @ (counts.reshape(n_boot, n_seeds).T / n_seeds)
        else:
            boots = stacked[:, idx].mean(axis=2)  # (rounds, n_boot)
        lows, highs = _sorted_quantiles(np.sort(boots, axis=1), (tail, 1 - tail))
        ends = np.cumsum([len(mean) for mean in means])[:-1]
        for i, mean, lo, hi in zip(
            members, means, np.split(lows, ends), np.split(highs, ends), strict=True
        ):
            out[i] = (mean, lo, hi)
    return out


def _sorted_quantiles(rows: np.ndarray, qs: tuple[float, ...]) -> list[np.ndarray]:
    """``np.quantile(rows, q, axis=1)`` (method "linear") of each q, for rows sorted ascending.

    numpy's own interpolation between the two order statistics around ``(n - 1) q`` (the same
    formula, so the same floats), read off the sorted rows: np.quantile would copy the rows
    and select the statistics again, ~3x the cost of numpy's sort for the default figure's
    3,000 rows of 500 resample means. A row holding NaN (sorted last) gives NaN, as there.
    """
    n = rows.shape[1]
    has_nan = np.isnan(rows[:, -1])
    out = []
    for q in qs:
        virtual = (n - 1) * q
        below = min(int(np.floor(virtual)), n - 1)
        above = min(below + 1, n - 1)
        t = virtual - below
        a, b = rows[:, below], rows[:, above]
        diff = b - a
        value = b - diff * (1 - t) if t >= 0.5 else a + diff * t
        out.append(np.where(has_nan, np.nan, value))
    return out


def _bootstrap_cis(groups: list[np.ndarray], n_boot: int = 2000) -> np.ndarray:
    """:func:`~dp_experts_env.evaluation.stats.bootstrap_ci` (mean) of each group: (k, 3).

    The same floats as one call per group (the same draws: a generator seeded 0 per group,
    the same row means, numpy's percentiles; tests/test_plots_style.py checks equality), for
    all groups of one size at once: the epsilon figure's 45 points cost one gather, not 45.
    """
    out = np.empty((len(groups), 3))
    by_size: dict[int, list[int]] = {}
    for i, values in enumerate(groups):
        by_size.setdefault(len(values), []).append(i)
    tail = (1.0 - 0.95) / 2.0
    for size, members in by_size.items():
        if size == 0:
            raise ValueError("values must not be empty")
        idx = np.random.default_rng(0).integers(0, size, size=(n_boot, size))
        # at most ~2e6 resampled values in memory at once (1,000 seeds: one group at a time)
        chunk = max(1, 2_000_000 // (n_boot * size))
        for start in range(0, len(members), chunk):
            part = members[start : start + chunk]
            values = np.stack([np.asarray(groups[i], dtype=np.float64) for i in part])
            # Row means of a 2-D (groups x resamples, size) gather: numpy sums each row as it
            # does bootstrap_ci's (resamples, size) matrix (a 3-D mean over the last axis
            # sums in another order).
            boots = values[:, idx].reshape(-1, size).mean(axis=1).reshape(len(part), n_boot)
            boots = np.sort(boots, axis=1)
            out[part, 0] = values.mean(axis=1)
            out[part, 1], out[part, 2] = _sorted_quantiles(boots, (tail, 1.0 - tail))
    return out


def _round_matrix(group: pd.DataFrame, metric: str) -> tuple[np.ndarray, np.ndarray]:
    """Rounds (sorted) and the (rounds, seeds) matrix of ``metric``, seeds in sorted order.

    What ``group.pivot_table(index="round", columns="seed", values=metric)`` gives, without its
    cost (~6 ms a call, 70 calls for the default figure): when every (round, seed) pair occurs
    once and no value is missing, the rows are placed directly; otherwise the pivot (mean of
    repeated pairs, missing values skipped) is taken.
    """
    values = group[metric].to_numpy(dtype=np.float64)
    rounds, r_idx = np.unique(group["round"].to_numpy(), return_inverse=True)
    seeds, s_idx = np.unique(group["seed"].to_numpy(), return_inverse=True)
    cells = r_idx.astype(np.int64) * len(seeds) + s_idx
    if (
        len(values) == len(rounds) * len(seeds)
        and not np.isnan(values).any()
        and len(np.unique(cells)) == len(values)
    ):
        matrix = np.empty(len(values))
        matrix[cells] = values
        return rounds, matrix.reshape(len(rounds), len(seeds))
    table = group.pivot_table(index="round", columns="seed", values=metric)
    return table.index.to_numpy(), table.to_numpy()


def _eps_text(eps: float) -> str:
    return "non-private" if not math.isfinite(eps) else f"ε = {eps:g}"


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

#: Colour-blind-safe qualitative colours: the Okabe & Ito (2008) set without black (kept for the
#: uniform reference) and yellow (too pale on white), then Paul Tol's "muted" colours for larger
#: comparisons. No two are light and dark shades of one hue (CIE76 distance >= 20 for every
#: pair); learners past the 14th reuse colours with another marker.
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
_REFERENCE = "uniform"


def _is_reference(label: str) -> bool:
    return label.split("[", 1)[0] == _REFERENCE


#: Fixed palette index of each learner the suite registers, so that a learner has the same
#: colour in every results folder (whatever else the grid holds). Learners that share a figure
#: (one feedback type: full information, bandit, OCO) have distinct colours; other names
#: (plug-ins, labelled variants such as ``hedge[eta=0.1]``) take a colour and marker from a
#: hash of their label.
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
    """Colour and marker of one learner label, a function of the label alone.

    Uniform play (the reference of every score) is black without marker; a registered learner
    has its fixed colour (:data:`_FIXED_COLOUR`); any other label a colour and marker from a
    hash of the label, so it too keeps them across results folders.
    """
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


def _line_kwargs(style: dict[str, Any], label: str, private: bool) -> dict[str, Any]:
    """Line style of a learner: private solid, non-private dashed, the reference black dashed."""
    if _is_reference(label):
        return {"color": "black", "linestyle": (0, (5, 2)), "linewidth": 1.6, "zorder": 3}
    return {
        "color": style["color"],
        "linestyle": "-" if private else (0, (4, 1.5)),
        "linewidth": 1.3 if private else 1.5,
    }


def _round_label(value: float, _pos: int) -> str:
    """Tick label of a round: 2500 -> '2.5k'."""
    return f"{value / 1000:g}k" if abs(value) >= 1000 else f"{value:g}"


def _title(env: str) -> str:
    """Env label on two lines when it carries parameters (long labels get cut otherwise)."""
    return env.replace("[", "\n[", 1) if "[" in env else env


def _new_figure(
    width: float, height: float, grid: bool = False, **subplots: Any
) -> tuple[Figure, Any]:
    """A figure and its axes outside pyplot; call it under ``matplotlib.rc_context(STYLE)``.

    pyplot would register the figure with a manager that has to be closed (and costs its import);
    a bare :class:`~matplotlib.figure.Figure` is freed like any object. The Agg canvas gives the
    renderer that measures the legend and the titles for the layout (:func:`_inches`).
    ``grid=True`` creates the axes with their major grid on (what ``ax.grid(True)`` sets, without
    its pass over every tick already made).
    """
    fig = Figure(figsize=(width, height))
    FigureCanvasAgg(fig)
    with matplotlib.rc_context({"axes.grid": True} if grid else {}):
        return fig, fig.subplots(**subplots)


def _inches(fig: Figure, artist: Any) -> Bbox:
    """Extent of ``artist`` in inches from the figure's lower left corner.

    Lays out that artist alone (its text lines, or a legend's entries), not the whole figure.
    """
    box = artist.get_window_extent(fig.canvas.get_renderer())
    return box.transformed(fig.dpi_scale_trans.inverted())


#: Blank edge (inches) kept between the figure's border and any text of it.
_EDGE = 0.05
#: Smallest size (pt) a title is shrunk to when no wrapping of it fits the width.
_MIN_TITLE_SIZE = 5.0


def _comma_wrapped(text: str, fraction: float) -> str:
    """``text`` with every line longer than ``fraction`` of the longest broken after commas."""
    longest = max(len(line) for line in text.split("\n"))
    room = max(8, int(longest * fraction))
    lines: list[str] = []
    for line in text.split("\n"):
        current = ""
        for piece in line.replace(",", ",\0").split("\0"):
            if current and len(current) + len(piece) > room:
                lines.append(current)
                current = piece
            else:
                current += piece
        lines.append(current)
    return "\n".join(lines)


def _fit_text(fig: Figure, text: Any, options: list[str], width: float) -> int:
    """Give ``text`` the first of ``options`` at most ``width`` inches wide; its line count.

    When none fits, the last option is broken after commas and, if still too wide, set in a
    smaller font (down to :data:`_MIN_TITLE_SIZE`): a title is never cut at the figure's edge.
    """
    for option in options:
        text.set_text(option)
        measured = _inches(fig, text).width
        if measured <= width:
            return option.count("\n") + 1
    wrapped = _comma_wrapped(options[-1], width / measured)
    text.set_text(wrapped)
    measured = _inches(fig, text).width
    if measured > width:
        text.set_fontsize(max(_MIN_TITLE_SIZE, text.get_fontsize() * width / measured * 0.98))
    return wrapped.count("\n") + 1


def _legend_below(fig: Figure, handles: list[Any], labels: list[str], width: float) -> Any:
    """One legend under the axes, as many columns as the figure width holds; the figure grows.

    The figure's height grows by the legend's measured height (the axes keep their size in
    inches), so that the saved image holds the legend without ``bbox_inches="tight"``. A bare
    learner name whose defaults are the suite's variant gets "(suite variant)", as in the table.
    """
    labels = [learner_label(label) for label in labels]
    longest = max((len(label) for label in labels), default=10)
    # About 0.05 in per character at 7 pt (measured on the default comparison's legend) plus
    # 0.45 in for the handle and the spacing; checked against the measured width below.
    ncol = max(1, min(len(labels), int(width // (0.05 * longest + 0.45))))
    while True:
        legend = fig.legend(
            handles,
            labels,
            loc="upper center",
            bbox_to_anchor=(0.5, 0.0),
            ncol=ncol,
            frameon=False,
            handlelength=2.6,
            columnspacing=1.0,
            labelspacing=0.3,
        )
        box = _inches(fig, legend)
        if ncol == 1 or box.width <= fig.get_size_inches()[0] - 2 * _EDGE:
            break
        legend.remove()
        ncol -= 1
    _room_below(fig, legend, box.height)
    return legend


def _room_below(fig: Figure, legend: Any, legend_height: float) -> None:
    """Grow the figure at the bottom by a legend's height and put the legend there.

    The axes keep their margins in inches (the subplot parameters are fractions, recomputed for
    the new height), the suptitle keeps its distance to the top, and the legend's upper edge
    sits where the figure's bottom edge was (less the legend's ``borderaxespad``).
    """
    width, height = fig.get_size_inches()
    pad = legend.borderaxespad * legend._fontsize / 72  # what the legend keeps off its anchor
    below = legend_height + pad + _EDGE
    params = fig.subplotpars
    bottom, top = params.bottom * height, (1.0 - params.top) * height
    suptitle = fig._suptitle
    title_gap = (1.0 - suptitle.get_position()[1]) * height if suptitle is not None else 0.0
    grown = height + below
    fig.set_size_inches(width, grown)
    fig.subplots_adjust(bottom=(bottom + below) / grown, top=1.0 - top / grown)
    if suptitle is not None:
        suptitle.set_y(1.0 - title_gap / grown)
    legend.set_bbox_to_anchor((0.5, below / grown), transform=fig.transFigure)


#: Margins (inches) around the axes of the default comparison's figures, set directly instead
#: of by ``tight_layout``, which lays out every tick label and title once more before the
#: figure is drawn (~0.1-0.2 s of CPU per figure). Sized for 7-8 pt text: y tick labels of up to
#: five characters and the y label on the left, tick labels and the x label below, the title
#: lines above (titles too wide for the figure are wrapped or shrunk by :func:`_fit_text`); the
#: legend below is measured and the figure grown to hold it (:func:`_legend_below`). Figures
#: are saved as laid out, without ``bbox_inches="tight"``, which would draw each figure twice
#: (once to measure everything, once to render).
_MARGIN_LEFT, _MARGIN_RIGHT, _MARGIN_BOTTOM, _PANEL_GAP = 0.55, 0.12, 0.4, 0.32
_LINE = 8 * 1.25 / 72  # one 8 pt text line, in inches


def _place_axes(fig: Figure, title_lines: int, planned_lines: int | None = None) -> None:
    """Margins for axes with a title (``title_lines`` lines of 8 pt text above the top axes).

    The figure's height was chosen for ``planned_lines`` title lines (default: as many as it
    has); a title wrapped onto more lines grows the figure, so the axes keep their height.
    An offset text over a y axis (the "1e7" of a large scale), over which matplotlib lifts
    the titles, takes one line more. The side margins are then checked against the axes' tick
    labels (:func:`_fit_sides`).
    """
    width, height = fig.get_size_inches()
    planned = title_lines if planned_lines is None else planned_lines
    for extra in (0, 1):
        lines = title_lines + extra
        grown = height + max(0, lines - planned) * _LINE
        fig.set_size_inches(width, grown)
        top = 0.12 + lines * _LINE
        _set_sides(fig, _MARGIN_LEFT, _MARGIN_RIGHT)
        fig.subplots_adjust(bottom=_MARGIN_BOTTOM / grown, top=1.0 - top / grown)
        if extra or not any(_has_offset_text(ax) for ax in fig.axes):
            break
    _fit_sides(fig)


def _has_offset_text(ax: Any) -> bool:
    """Whether ``ax``'s y axis will show an offset text (its ticks as laid out now)."""
    _tick_labels(ax.yaxis)  # sets the formatter's locations, hence its offset
    return bool(ax.yaxis.get_major_formatter().get_offset())


def _set_sides(fig: Figure, left: float, right: float) -> None:
    """Side margins in inches, panels :data:`_PANEL_GAP` apart."""
    width = fig.get_size_inches()[0]
    n_cols = max(1, fig.axes[0].get_subplotspec().get_gridspec().ncols) if fig.axes else 1
    inner = width - left - right - (n_cols - 1) * _PANEL_GAP
    fig.subplots_adjust(
        left=left / width, right=1.0 - right / width, wspace=_PANEL_GAP / (inner / n_cols)
    )


def _tick_labels(axis: Any) -> list[str]:
    """The major tick labels ``axis`` will draw (locator and formatter only, no tick made)."""
    low, high = sorted(axis.get_view_interval())
    locs = [loc for loc in axis.get_majorticklocs() if low <= loc <= high]
    return [str(label) for label in axis.get_major_formatter().format_ticks(locs)]


def _fit_sides(fig: Figure) -> None:
    """Widen a side margin that the y tick labels and label, or the last x tick label, pass.

    The left margin holds y tick labels of up to four characters ("3000", the default
    comparison's, leave 0.04 in to the edge) and the right one a last x tick label of three
    ("10k"). Longer ones (regrets of 10,000 and more) are measured: the axes' ticks are laid
    out (and kept for the drawing), and the margin widened by what passes the figure's edge.
    """
    first = [ax for ax in fig.axes if ax.get_subplotspec().is_first_col()]
    last = [ax for ax in fig.axes if ax.get_subplotspec().is_last_col()]
    long_y = any(len(label) > 4 for ax in first for label in _tick_labels(ax.yaxis))
    long_x = any(len((_tick_labels(ax.xaxis) or [""])[-1]) > 3 for ax in last)
    if not (long_y or long_x):
        return
    renderer = fig.canvas.get_renderer()
    to_inches = fig.dpi_scale_trans.inverted()
    width = fig.get_size_inches()[0]
    params = fig.subplotpars
    left, right = params.left * width, (1.0 - params.right) * width
    grow_left = grow_right = 0.0
    if long_y:
        reach = min(ax.yaxis.get_tightbbox(renderer).transformed(to_inches).x0 for ax in first)
        grow_left = max(0.0, _EDGE - reach)
    if long_x:
        reach = max(ax.xaxis.get_tightbbox(renderer).transformed(to_inches).x1 for ax in last)
        grow_right = max(0.0, reach - (width - _EDGE))
    if grow_left or grow_right:
        _set_sides(fig, left + grow_left, right + grow_right)


def _pin_titles(fig: Figure) -> None:
    """Fix each axes title where matplotlib's automatic placement would leave it.

    The automatic placement lays out every axes' y tick labels once more at each draw, to lift
    the title over x tick labels at the top or a y offset text (the "1e6" of a large scale)
    under it. The axes here have their x ticks and label at the bottom, so where no offset text
    shows, the title stays at the top of the axes: pinned there (``y=1``), the drawing skips
    that search (~0.03 s of CPU per axes). Call it when the layout is final (the offset text
    depends on the ticks, and they on the axes' size).
    """
    for ax in fig.axes:
        if not ax.get_title():
            continue
        top = ax.xaxis.get_ticks_position() not in ("bottom", "none")
        if top or ax.xaxis.get_label_position() == "top" or _has_offset_text(ax):
            continue
        ax.set_title(ax.get_title(), y=1.0, fontsize=ax.title.get_fontsize())


def _axes_title_room(width: float) -> float:
    """Width (inches) a title centred over a single axes placed by :func:`_place_axes` has."""
    centre = _MARGIN_LEFT + (width - _MARGIN_LEFT - _MARGIN_RIGHT) / 2
    return 2 * (min(centre, width - centre) - _EDGE)


def _private_agents(data: pd.DataFrame) -> set[str]:
    """Learners with a privacy parameter: a finite epsilon anywhere, or flagged private."""
    # unique() first: a set of the column itself would iterate every row in Python
    private = set(data.loc[np.isfinite(data["epsilon"].astype(float)), "agent"].unique())
    if "private" in data.columns:
        private |= set(data.loc[data["private"].astype(bool), "agent"].unique())
    return private


def _certified(group: pd.DataFrame) -> float:
    """The epsilon the learner's accountant certified for a run group (NaN when not recorded)."""
    if "epsilon_certified" not in group.columns:
        return math.nan
    return float(group["epsilon_certified"].astype(float).max())


def _spends_other(requested: float, certified: float) -> bool:
    """Whether a learner certifies an epsilon more than 1% away from the requested one.

    Float-tolerant: an accountant's 31.96 for a requested 32 is not worth a label on a figure
    (summary.csv keeps the exact value); 7.73 for 8 or 0.25 for 2 is.
    """
    if not (math.isfinite(requested) and math.isfinite(certified)):
        return False
    return not math.isclose(requested, certified, rel_tol=0.01)


def _eps_label(agent: str, eps: float, private: bool, certified: float) -> str:
    """Legend label of a learner at one epsilon: the requested and, if other, the spent one."""
    agent = learner_label(agent)  # "(suite variant)" as in the table
    if not private:
        return agent
    if not math.isfinite(eps):
        return f"{agent} (no noise)"
    spent = f" (spends {certified:.3g})" if _spends_other(eps, certified) else ""
    return f"{agent} ε={eps:g}{spent}"


def _panel_title(eps: float) -> str:
    return "no noise (ε = ∞)" if not math.isfinite(eps) else f"ε = {eps:g} requested"


def plot_regret_vs_round(
    frame: pd.DataFrame,
    env: str,
    metric: str = "dynamic_regret",
    *,
    confidence: float = 0.95,
    n_boot: int = 500,
) -> Figure:
    """Regret against round for every agent on ``env``; one panel per requested epsilon.

    Each panel holds the private learners run at its epsilon only; a last panel, "no noise",
    holds the private learners run at epsilon = inf (their noise removed). Non-private learners
    (one run each) appear in every panel as dashed references. A learner whose accountant
    certifies another epsilon than the panel's (say a learner that spends 0.25 for any request
    >= 0.25) is annotated with the epsilon it spends at the end of its curve. Every curve's end
    point is the ``summary.csv`` mean of its (agent, epsilon). One panel is
    :data:`COLUMN_WIDTH` wide, several share :data:`FULL_WIDTH`; the legend sits below.
    """
    data = frame[frame["env"] == env]
    if data.empty:
        raise ValueError(f"no rows for env {env!r}")
    private = _private_agents(data)
    eps_of = data["epsilon"].astype(float)
    epsilons: list[float] = sorted(e for e in eps_of.unique() if math.isfinite(e))
    if not epsilons or (~np.isfinite(eps_of) & data["agent"].isin(private)).any():
        epsilons.append(math.inf)  # drawn once, as its own "no noise" panel
    styles = learner_styles(frame["agent"].unique())  # the whole frame: same colours everywhere
    width = COLUMN_WIDTH if len(epsilons) == 1 else FULL_WIDTH
    with matplotlib.rc_context(STYLE):
        fig, axes = _new_figure(
            width, 2.4, grid=True, nrows=1, ncols=len(epsilons), squeeze=False, sharey=True
        )
        curves = _round_curves(data, metric, confidence, n_boot)
        handles: dict[str, Any] = {}
        for ax, eps in zip(axes[0], epsilons, strict=True):
            bands: list[np.ndarray] = []
            band_colours: list[str] = []
            # The panel's rows: its epsilon's, and the non-private learners' (which have no
            # finite epsilon); the "no noise" panel: every row at a non-finite epsilon.
            panel = sorted(
                (agent, key)
                for agent, key in curves
                if key == eps or (agent not in private and math.isinf(key))
            )
            for agent, key in panel:
                rounds, mean, lo, hi, gid_eps, spent = curves[agent, key]
                line = _line_kwargs(styles[agent], agent, agent in private)
                (drawn,) = ax.plot(
                    rounds,
                    mean,
                    label=agent,
                    marker=styles[agent]["marker"],
                    markevery=max(1, len(mean) // 6),
                    **line,
                )
                # What the end point stands for (tests read it back against summary.csv).
                drawn.set_gid(f"{agent}|{gid_eps!r}")
                handles.setdefault(agent, drawn)
                # fill_between's polygon (along lo, back along hi), all of a panel's bands
                # drawn as one collection below
                bands.append(
                    np.column_stack([np.r_[rounds, rounds[::-1]], np.r_[lo, hi[::-1]]])
                )
                band_colours.append(line["color"])
                if _spends_other(eps, spent):
                    ax.annotate(
                        f"spends ε={spent:.3g}",
                        (rounds[-1], mean[-1]),
                        xytext=(-2, 2),
                        textcoords="offset points",
                        ha="right",
                        fontsize=5.5,
                        color=line["color"],
                    )
            if bands:
                ax.add_collection(
                    PolyCollection(bands, facecolors=band_colours, alpha=0.15, linewidths=0)
                )
            ax.set_xlim(0, data["round"].max())
            # Few, short round labels (10k, not 10000) so that neighbouring panels' last and
            # first labels do not run into each other at full width.
            ax.xaxis.set_major_locator(matplotlib.ticker.MaxNLocator(nbins=4))
            ax.xaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(_round_label))
            ax.set_xlabel("round t")
            ax.set_title(_panel_title(eps))
        axes[0][0].set_ylabel(_NICE.get(metric, metric))
        per_panel = "; a panel per ε" if len(epsilons) > 1 else ""
        note = f"mean, {confidence:.0%} bootstrap band{per_panel}; dashed: non-private"
        # One line across the page if it fits, else the env label and the note on lines of
        # their own (the default comparison's label is too long for one line with the note).
        options = [f"{_title(env)}\n{note}"]
        if width > COLUMN_WIDTH:
            options[:0] = [f"{env}: {note}", f"{env}\n{note}"]
        lines = _fit_text(fig, fig.suptitle("", fontsize=8), options, width - 2 * _EDGE)
        # the suptitle's lines, a gap, then the panel titles; the height (2.4 in) was chosen
        # for one suptitle line at full width and two in a column
        _place_axes(fig, lines + 1 + 1, (1 if width > COLUMN_WIDTH else 2) + 1 + 1)
        _legend_below(fig, list(handles.values()), list(handles), width)
        _pin_titles(fig)
    return fig


def _round_curves(
    data: pd.DataFrame, metric: str, confidence: float, n_boot: int
) -> dict[tuple[str, float], tuple[Any, ...]]:
    """Every curve of one env's rows, each computed once (a reference is drawn in every panel).

    Keyed by (agent, epsilon), every non-finite epsilon as inf (the "no noise" panel's rows);
    values: rounds, mean, band low and high (:func:`_curve_bands`), the epsilon of the group's
    first row (the drawn line's gid) and the certified epsilon (:func:`_certified`).
    """
    eps = data["epsilon"].astype(float).to_numpy()
    key = pd.Series(np.where(np.isfinite(eps), eps, np.inf), index=data.index)
    keys, rounds, matrices, extra = [], [], [], []
    for (agent, eps_key), group in data.groupby([data["agent"], key], sort=True):
        keys.append((agent, float(eps_key)))
        r, matrix = _round_matrix(group, metric)
        rounds.append(r)
        matrices.append(matrix)
        extra.append((float(group["epsilon"].iloc[0]), _certified(group)))
    bands = _curve_bands(matrices, confidence, n_boot, seed=0)
    return {
        k: (r, *band, *more)
        for k, r, band, more in zip(keys, rounds, bands, extra, strict=True)
    }


def plot_regret_vs_epsilon(frame: pd.DataFrame, env: str, metric: str = "dynamic_regret") -> Figure:
    """Final regret against epsilon per private agent (privacy-utility curve), column width."""
    with matplotlib.rc_context(STYLE):
        return _draw_regret_vs_epsilon(frame, env, metric)


def _draw_regret_vs_epsilon(frame: pd.DataFrame, env: str, metric: str) -> Figure:
    data = frame[frame["env"] == env]
    if data.empty:
        raise ValueError(f"no rows for env {env!r}")
    last = data.groupby(["agent", "epsilon", "seed"])["round"].transform("max")
    final = data[data["round"] == last]
    styles = learner_styles(frame["agent"].unique())
    fig, ax = _new_figure(COLUMN_WIDTH, 2.6, grid=True)
    # A private learner has at least one finite epsilon; its epsilon = inf run (noise removed)
    # is the right end of its curve, drawn at an "inf" tick past the largest finite epsilon.
    # Each point sits at the epsilon the learner's accountant certifies (a learner that spends
    # 0.25 for any request >= 0.25 is drawn at 0.25, its requests written next to the point).
    private = sorted(_private_agents(final))
    epsilons = sorted(e for e in final["epsilon"].unique() if math.isfinite(e))
    x_inf = (epsilons[-1] * 4.0) if epsilons else 1.0
    # Learners sit side by side around each epsilon (a small log-x offset) so that their error
    # bars do not hide one another.
    step = min(0.02, 0.12 / max(len(private) - 1, 1))
    references: list[float] = []
    lowest = epsilons[0] if epsilons else 1.0
    learners = list(final.groupby("agent", sort=True))
    by_eps_of = {
        agent: sorted(group.groupby("epsilon"), key=lambda item: float(item[0]))
        for agent, group in learners
        if agent in private
    }
    # The same mean and percentile bootstrap interval as summary.csv, all points at once.
    points = [g[metric].to_numpy() for by_eps in by_eps_of.values() for _, g in by_eps]
    all_cis = iter(_bootstrap_cis(points))
    for agent, group in learners:
        if agent in private:
            by_eps = by_eps_of[agent]
            requested = np.array([float(e) for e, _ in by_eps])
            certified = np.array([_certified(g) for _, g in by_eps])
            xs = np.where(np.isfinite(certified), certified, requested)
            xs = np.where(np.isfinite(xs), xs, x_inf)
            cis = np.array([next(all_cis) for _ in by_eps])
            means = cis[:, 0]
            shift = 10.0 ** ((private.index(agent) - (len(private) - 1) / 2) * step)
            bars = ax.errorbar(
                xs * shift,
                means,
                yerr=np.vstack([means - cis[:, 1], cis[:, 2] - means]),
                marker=styles[agent]["marker"] or "o",
                capsize=2,
                label=agent,
                color=styles[agent]["color"],
            )
            bars.lines[0].set_gid(f"{agent}|" + ",".join(repr(float(e)) for e in requested))
            lowest = min(lowest, float(xs.min()))
            moved: dict[float, list[float]] = {}
            for req, cert in zip(requested, certified, strict=True):
                if _spends_other(req, cert):
                    moved.setdefault(round(float(cert), 12), []).append(req)
            for cert, reqs in moved.items():
                y = float(means[list(requested).index(reqs[0])])
                ax.annotate(
                    "requested " + ", ".join(f"{r:g}" for r in reqs),
                    (cert * shift, y),
                    xytext=(3, 3),
                    textcoords="offset points",
                    fontsize=5.5,
                    color=styles[agent]["color"],
                )
        else:
            mean = float(group[metric].mean())
            ref = ax.axhline(mean, label=agent, **_line_kwargs(styles[agent], agent, private=False))
            ref.set_gid(f"{agent}|inf")
            references.append(mean)
    if references:
        # Keep the reference lines off the frame: autoscaling adds no margin beyond them.
        low, high = ax.get_ylim()
        pad = 0.05 * (max(high, *references) - min(low, *references) or 1.0)
        ax.set_ylim(min(low, min(references) - pad), max(high, max(references) + pad))
    ax.set_xscale("log")
    if epsilons:
        has_inf = bool((~np.isfinite(final[final["agent"].isin(private)]["epsilon"])).any())
        ticks = epsilons + ([x_inf] if has_inf else [])
        ax.set_xticks(ticks, [f"{e:g}" for e in epsilons] + (["∞"] if has_inf else []))
        ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
        # Room for the side-by-side offsets plus a margin; with one epsilon the autoscaled axis
        # would span only the offsets and push the points to the frame.
        reach = 10.0 ** (step * max(len(private) - 1, 0) / 2 + 0.1)
        ax.set_xlim(min(epsilons[0], lowest) / reach, ticks[-1] * reach)
    ax.set_xlabel("certified privacy parameter ε (log scale)")
    ax.set_ylabel(f"final {_NICE.get(metric, metric)}")
    ax.set_title("")
    title = f"{_title(env)}\nmean, 95% bootstrap CI; dashed: non-private"
    lines = _fit_text(fig, ax.title, [title], _axes_title_room(COLUMN_WIDTH))
    _place_axes(fig, lines, 3)  # 2.6 in high for a three-line title
    _legend_below(fig, *ax.get_legend_handles_labels(), COLUMN_WIDTH)
    _pin_titles(fig)
    return fig


def plot_regret_vs_horizon(
    frame: pd.DataFrame,
    env_id: str,
    metric: str = "dynamic_regret",
    *,
    theory_slope: float | Mapping[str, float] = 0.5,
) -> Figure:
    """Final regret against T on log-log axes (needs >= 2 horizons).

    Each learner (and epsilon) shows its mean final regret per T with the 95% bootstrap
    interval of summary.csv as error bars, and its least-squares power law ``c T^slope`` as a
    line (slope in the legend). ``theory_slope`` draws a grey dotted reference line (one value)
    or, given per learner, a dotted line in the learner's colour.
    """
    data = frame[frame["env_id"] == env_id]
    last = data.groupby(["env", "agent", "epsilon", "seed"])["round"].transform("max")
    final = data[data["round"] == last]
    if final["horizon"].nunique() < 2:
        raise ValueError(f"regret vs T needs at least two horizons for {env_id!r}")
    styles = learner_styles(frame["agent"].unique())
    private = _private_agents(final)
    eps_dashes = {}
    for eps in sorted(e for e in final["epsilon"].unique() if math.isfinite(e)):
        eps_dashes[eps] = ("-", (0, (1, 1)), (0, (3, 1, 1, 1)), (0, (6, 2)))[len(eps_dashes) % 4]
    with matplotlib.rc_context(STYLE):
        fig, ax = _new_figure(COLUMN_WIDTH, 2.8)
        anchors = []
        for (agent, eps), group in final.groupby(["agent", "epsilon"], sort=True):
            per_t = {t: g[metric].to_numpy() for t, g in group.groupby("horizon")}
            ts = np.array(sorted(per_t), dtype=float)
            cis = np.array([bootstrap_ci(per_t[t]) for t in sorted(per_t)])  # est, lo, hi
            means = cis[:, 0]
            label = _eps_label(agent, float(eps), agent in private, _certified(group))
            line = _line_kwargs(styles[agent], agent, agent in private)
            if math.isfinite(eps):
                line["linestyle"] = eps_dashes[eps]
            positive = means > 0
            marker = styles[agent]["marker"] or "o"
            fitted = positive.sum() >= 2
            if fitted:
                slope, intercept = fit_loglog_slope(ts[positive], means[positive])
                kept = group[group["horizon"].isin(ts[positive])]
                interval = loglog_slope(kept.assign(x=kept["horizon"].astype(float)), metric)
                ci = (
                    f" [{interval.ci_low:.2f}, {interval.ci_high:.2f}]"
                    if math.isfinite(interval.ci_low)
                    else ""
                )
                grid_t = np.geomspace(ts[positive][0], ts[positive][-1], 50)
                # The legend entry is the fitted line (its dash tells epsilons apart) with the
                # learner's marker; markevery=[] keeps the marker off the line itself.
                ax.plot(
                    grid_t,
                    np.exp(intercept) * grid_t**slope,
                    marker=marker,
                    markevery=[],
                    label=f"{label}: slope {slope:.2f}{ci}",
                    **line,
                )
                anchors.append((ts[positive][0], means[positive][0]))
            bars = ax.errorbar(
                ts,
                means,
                yerr=np.vstack([means - cis[:, 1], cis[:, 2] - means]),
                linestyle="none",
                marker=marker,
                color=line["color"],
                capsize=2,
                label="_nolegend_" if fitted else label,
            )
            bars.lines[0].set_gid(f"{agent}|{float(eps)!r}")
            if isinstance(theory_slope, Mapping) and agent in theory_slope and positive.any():
                t0, r0 = ts[positive][0], means[positive][0]
                ax.plot(ts, r0 * (ts / t0) ** theory_slope[agent], ":", color=line["color"], lw=1)
        if not isinstance(theory_slope, Mapping) and anchors:
            # One reference line through the geometric middle of the smallest-T points.
            t0 = min(a[0] for a in anchors)
            r0 = float(np.exp(np.mean([np.log(a[1]) for a in anchors])))
            ts = np.asarray(sorted(final["horizon"].unique()), dtype=float)
            ax.plot(
                ts,
                r0 * (ts / t0) ** float(theory_slope),
                linestyle=(0, (1, 1.5)),
                color="0.55",
                lw=1.0,
                label=f"reference slope {float(theory_slope):g}",
            )
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("horizon T")
        ax.set_ylabel(f"final {_NICE.get(metric, metric)}")
        ax.set_title("")
        title = f"{env_id}\nmean, 95% CI; lines: power-law fits, slope [95% CI]"
        _fit_text(fig, ax.title, [title], COLUMN_WIDTH - 2 * _EDGE)
        ax.grid(True, which="both")
        fig.tight_layout()
        _legend_below(fig, *ax.get_legend_handles_labels(), COLUMN_WIDTH)
        _pin_titles(fig)
    return fig


def plot_aggregate(frame: pd.DataFrame, metric: str = "dynamic_regret") -> Figure | None:
    """IQM of uniform-normalised scores across envs per learner, with 95% CIs (aggregate.csv).

    rliable's interval-estimate plot: one row per learner (and epsilon), best on top, the IQM
    as a point and its stratified-bootstrap interval as a bar; the mean as a hollow marker.
    None when the rows hold one env or no uniform play.
    """
    table = aggregate_table(frame, metric, reference=_REFERENCE)
    if table is None or table.empty:
        return None
    styles = learner_styles(frame["agent"].unique())
    table = table.iloc[::-1].reset_index(drop=True)  # best at the top
    labels = [
        a if not math.isfinite(e) else f"{a} ε={e:g}"
        for a, e in zip(table["agent"], table["epsilon"], strict=True)
    ]
    with matplotlib.rc_context(STYLE):
        fig, ax = _new_figure(COLUMN_WIDTH, 0.8 + 0.17 * len(table))
        for i, row in table.iterrows():
            colour = styles[row["agent"]]["color"]
            ax.plot([row["iqm_low"], row["iqm_high"]], [i, i], color=colour, lw=2.5, alpha=0.6)
            ax.plot(row["iqm"], i, "o", color=colour, ms=4)
            ax.plot(row["mean"], i, "o", mfc="none", mec=colour, ms=4)
        ax.axvline(0.0, color="black", linestyle=(0, (5, 2)), lw=1.0)
        ax.set_yticks(range(len(table)), labels)
        ax.set_ylim(-0.6, len(table) - 0.4)
        ax.set_xlabel(f"normalised score 1 - {_NICE.get(metric, metric)} / uniform's")
        ax.set_title("")
        title = f"IQM over {frame['env'].nunique()} envs (filled), mean (hollow), 95% CIs"
        _fit_text(fig, ax.title, [title], COLUMN_WIDTH - 2 * _EDGE)
        ax.grid(True, axis="x")
        fig.tight_layout()
        _pin_titles(fig)
    return fig


#: Formats a figure can be saved in; PNG is the default, PDF on request (``pdf=True``,
#: ``dp-experts compare --pdf``): a PDF with embedded, subset TrueType fonts costs ~0.1 s of CPU
#: per figure, more than the PNG.
FORMATS = ("png", "pdf")

#: Resolution of the PNGs: 200 dpi (1,400 pixels across a full-width figure) is sharp on a
#: screen and costs ~0.15 s less CPU for the default comparison's two figures than 300 dpi
#: (rendering and PNG encoding grow with the pixels); a paper takes the vector PDF (``pdf=True``).
PNG_DPI = 200

#: zlib level of the PNGs: 3 encodes the default comparison's round figure in ~30 ms of CPU
#: instead of ~44 ms at zlib's default 6, for a file ~4% larger (the same pixels).
PNG_COMPRESSION = 3


def save_figure(
    fig: Figure, path_stem: str | Path, formats: Iterable[str] = ("png",)
) -> list[Path]:
    """Save in each of ``formats`` (PNG by default; ``("png", "pdf")`` for both); returns the paths.

    Each file is rendered to memory and written like every other output of a results folder
    (:func:`~dp_experts_env.evaluation.store.write_atomic`: a temporary file in the same folder
    renamed over the destination), so a symbolic link planted at a figure's name is replaced,
    never followed, and a kill leaves the previous figure. The folder itself must be a real
    folder (:func:`~dp_experts_env.evaluation.store.plain_dir`).
    """
    from dp_experts_env.evaluation.store import plain_dir

    stem = Path(path_stem)
    plain_dir(stem.parent)
    # Append the suffix: with_suffix() would replace whatever follows the stem's last "." (an
    # env label "gap=0.1" and "gap=0.2" would both be saved as "...gap=0.png").
    formats = tuple(formats)
    if not formats or any(f not in FORMATS for f in formats):
        raise ValueError(f"formats must be a non-empty subset of {FORMATS}, got {formats!r}")
    paths = [stem.parent / f"{stem.name}.{fmt}" for fmt in formats]
    with matplotlib.rc_context(STYLE):  # fonttype is read when the PDF is written
        for path in paths:
            # As laid out: the figure holds its titles and legend (_legend_below, _fit_text);
            # bbox_inches="tight" would draw it twice, once to measure and once to render.
            png = path.suffix == ".png"
            extra = {"pil_kwargs": {"compress_level": PNG_COMPRESSION}} if png else {}
            write_figure(fig, path, dpi=PNG_DPI, **extra)
    return paths


def write_figure(fig: Figure, path: str | Path, **savefig: Any) -> Path:
    """Render ``fig`` (format from the suffix) and write it atomically, never through a link."""
    from dp_experts_env.evaluation.store import write_atomic

    path = Path(path)
    buffer = io.BytesIO()
    fig.savefig(buffer, format=path.suffix.lstrip(".") or "png", **savefig)
    return write_atomic(path, lambda fh: fh.write(buffer.getvalue()), text=False)


def _slug(text: str) -> str:
    """File-name-safe label, at most 64 characters, distinct for distinct labels.

    A label that had to be changed (characters replaced, or cut) is tagged with a hash of the
    whole label, so two envs that differ only in a replaced character or past the cut (say
    n_experts=32 and 64, or "a b" and "a_b") do not overwrite each other's figures. 64 keeps the
    longest file name (kind, metric, label, suffix) within 100 characters.
    """
    slug = "".join(c if c.isalnum() or c in "-_." else "_" for c in text)
    if slug == text and len(slug) <= 64:
        return slug
    return f"{slug[:55]}_{hashlib.sha1(text.encode()).hexdigest()[:8]}"


def figure_stem(kind: str, metric: str, label: str) -> str:
    """File stem of a figure: one per (kind, metric, env label), so nothing overwrites."""
    return f"{kind}_{metric}_{_slug(label)}"


def make_figures(
    frame: pd.DataFrame,
    out_dir: str | Path,
    metric: str = "dynamic_regret",
    *,
    pdf: bool = False,
) -> list[Path]:
    """Every figure the rows support, written under ``out_dir``.

    Files are named ``<kind>_<metric>_<env label>.png`` (:func:`figure_stem`), so figures of
    different envs or metrics never overwrite one another; ``pdf=True`` writes a ``.pdf`` of
    each as well.
    """
    out = Path(out_dir)
    paths: list[Path] = []
    formats = FORMATS if pdf else ("png",)
    for env in sorted(frame["env"].unique()):
        paths += save_figure(
            plot_regret_vs_round(frame, env, metric),
            out / figure_stem("round", metric, env),
            formats,
        )
        # A privacy-utility curve needs two privacy levels: non-private rows (epsilon = inf)
        # do not count, so a one-epsilon grid draws no epsilon figure.
        finite = [e for e in frame[frame["env"] == env]["epsilon"].unique() if math.isfinite(e)]
        if len(finite) >= 2:
            paths += save_figure(
                plot_regret_vs_epsilon(frame, env, metric),
                out / figure_stem("epsilon", metric, env),
                formats,
            )
    for env_id in sorted(frame["env_id"].unique()):
        if frame[frame["env_id"] == env_id]["horizon"].nunique() >= 2:
            paths += save_figure(
                plot_regret_vs_horizon(frame, env_id, metric),
                out / figure_stem("horizon", metric, env_id),
                formats,
            )
    if frame["env"].nunique() >= 2 and _REFERENCE in set(frame["agent"]):
        fig = plot_aggregate(frame, metric)
        if fig is not None:
            paths += save_figure(fig, out / figure_stem("aggregate", metric, "all-envs"), formats)
    return paths
