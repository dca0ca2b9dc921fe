"""Figure layout without pyplot: bare figures, fitted titles, legends below, measured margins.

Figures are laid out before saving, without ``bbox_inches="tight"`` (which draws twice), so a
saved PNG is the figure's own size.
"""

from __future__ import annotations

from typing import Any

import matplotlib
import matplotlib.ticker
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.transforms import Bbox

from dp_experts_env.evaluation.table import learner_label

#: Margins (inches) around the axes, set directly (``tight_layout`` lays out every label once
#: more); sized for 7-8 pt text and y tick labels of up to five characters.
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

    A bare figure with an Agg canvas (the renderer that measures the layout) is freed like any
    object. ``grid=True``: the axes' major grid on from the start (cheaper than ``ax.grid``).
    """
    fig = Figure(figsize=(width, height))
    FigureCanvasAgg(fig)
    with matplotlib.rc_context({"axes.grid": True} if grid else {}):
        return fig, fig.subplots(**subplots)


def _inches(fig: Figure, artist: Any) -> Bbox:
    """Extent of ``artist`` in inches from the figure's lower left corner (laid out alone)."""
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

    When none fits, the last is broken after commas and, if still too wide, shrunk (down to
    :data:`_MIN_TITLE_SIZE`).
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
    """One legend under the axes in as many columns as fit; the figure grows, not the axes."""
    labels = [learner_label(label) for label in labels]
    longest = max((len(label) for label in labels), default=10)
    # A first guess at 7 pt (0.05 in per character, 0.45 in per handle), then measured.
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
    """Put a legend below the axes, growing the figure (axes and suptitle fixed in inches)."""
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

    A title longer than ``planned_lines`` (default: ``title_lines``) grows the figure, so the
    axes keep their height; a y offset text (the "1e7") takes one line more.
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
    """Widen a side margin that long y tick labels or the last x tick label pass (measured)."""
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
    """Pin each axes title where matplotlib would place it (``y=1``), once the layout is final."""
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
