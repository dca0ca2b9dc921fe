"""Figure layout without pyplot: bare figures, fitted titles, legends below, measured margins.

Figures are built as a bare :class:`~matplotlib.figure.Figure` with an Agg canvas
(:func:`new_figure`) and laid out before saving, without ``bbox_inches="tight"``: titles are
wrapped or shrunk to the width (:func:`fit_text`, :func:`pin_titles`), the legend sits below the
axes with the figure grown to fit (:func:`legend_below`), and the side margins follow the drawn
tick labels (:func:`place_axes`), so a saved PNG is the figure's own size.
"""

from __future__ import annotations

from typing import Any

import matplotlib
import matplotlib.ticker
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.transforms import Bbox

from dp_experts_env.evaluation.table import learner_label

#: Margins (inches) around the axes of the default comparison's figures, set directly instead
#: of by ``tight_layout``, which lays out every tick label and title once more before the
#: figure is drawn (~0.1-0.2 s of CPU per figure). Sized for 7-8 pt text: y tick labels of up to
#: five characters and the y label on the left, tick labels and the x label below, the title
#: lines above (titles too wide for the figure are wrapped or shrunk by :func:`fit_text`); the
#: legend below is measured and the figure grown to hold it (:func:`legend_below`). Figures
#: are saved as laid out, without ``bbox_inches="tight"``, which would draw each figure twice
#: (once to measure everything, once to render).
_MARGIN_LEFT, _MARGIN_RIGHT, _MARGIN_BOTTOM, _PANEL_GAP = 0.55, 0.12, 0.4, 0.32

def round_label(value: float, _pos: int) -> str:
    """Tick label of a round: 2500 -> '2.5k'."""
    return f"{value / 1000:g}k" if abs(value) >= 1000 else f"{value:g}"


def env_title(env: str) -> str:
    """Env label on two lines when it carries parameters (long labels get cut otherwise)."""
    return env.replace("[", "\n[", 1) if "[" in env else env


def new_figure(
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
EDGE = 0.05


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


def fit_text(fig: Figure, text: Any, options: list[str], width: float) -> int:
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


def legend_below(fig: Figure, handles: list[Any], labels: list[str], width: float) -> Any:
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
        if ncol == 1 or box.width <= fig.get_size_inches()[0] - 2 * EDGE:
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
    below = legend_height + pad + EDGE
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


_LINE = 8 * 1.25 / 72  # one 8 pt text line, in inches


def place_axes(fig: Figure, title_lines: int, planned_lines: int | None = None) -> None:
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
        grow_left = max(0.0, EDGE - reach)
    if long_x:
        reach = max(ax.xaxis.get_tightbbox(renderer).transformed(to_inches).x1 for ax in last)
        grow_right = max(0.0, reach - (width - EDGE))
    if grow_left or grow_right:
        _set_sides(fig, left + grow_left, right + grow_right)


def pin_titles(fig: Figure) -> None:
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


def axes_title_room(width: float) -> float:
    """Width (inches) a title centred over a single axes placed by :func:`place_axes` has."""
    centre = _MARGIN_LEFT + (width - _MARGIN_LEFT - _MARGIN_RIGHT) / 2
    return 2 * (min(centre, width - centre) - EDGE)
