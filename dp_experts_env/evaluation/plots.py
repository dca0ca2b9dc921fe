"""Figures a paper would use, drawn from tidy result rows (matplotlib, PNG; PDF on request).

Every plotted end point is the ``summary.csv`` mean of its (env, agent, epsilon); the figures
are described in docs/grid.md ("Reading the table and the figures"). The style names of
:mod:`~dp_experts_env.evaluation.figure_style` stay importable from here.
"""

from __future__ import annotations

import hashlib
import io
import math
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import matplotlib
import matplotlib.ticker
import numpy as np
import pandas as pd
from matplotlib.collections import PolyCollection
from matplotlib.figure import Figure

from dp_experts_env.evaluation.claims import loglog_slope
from dp_experts_env.evaluation.figure_bands import bootstrap_cis, curve_bands, round_matrix
from dp_experts_env.evaluation.figure_layout import (
    EDGE,
    axes_title_room,
    env_title,
    fit_text,
    legend_below,
    new_figure,
    pin_titles,
    place_axes,
    round_label,
)
from dp_experts_env.evaluation.figure_style import (
    COLUMN_WIDTH,
    FULL_WIDTH,
    PALETTE,
    REFERENCE_LEARNER,
    STYLE,
    learner_style,
    learner_styles,
    line_kwargs,
)
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




def _private_agents(data: pd.DataFrame) -> set[str]:
    """Learners with a privacy parameter: a finite epsilon anywhere, or flagged private."""
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
    """Whether a learner certifies an epsilon more than 1% away from the requested one."""
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

    The private learners at each epsilon, a last "no noise" panel at epsilon = inf, non-private
    learners as dashed references in every panel.

    Raises:
        ValueError: when no row is of ``env``.
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
        fig, axes = new_figure(
            width, 2.4, grid=True, nrows=1, ncols=len(epsilons), squeeze=False, sharey=True
        )
        curves = _round_curves(data, metric, confidence, n_boot)
        handles: dict[str, Any] = {}
        for ax, eps in zip(axes[0], epsilons, strict=True):
            bands: list[np.ndarray] = []
            band_colours: list[str] = []
            panel = sorted(
                (agent, key)
                for agent, key in curves
                if key == eps or (agent not in private and math.isinf(key))
            )
            for agent, key in panel:
                rounds, mean, lo, hi, gid_eps, spent = curves[agent, key]
                line = line_kwargs(styles[agent], agent, agent in private)
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
                # fill_between's polygon; a panel's bands are drawn as one collection below
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
            # Short round labels (10k) keep neighbouring panels' labels apart.
            ax.xaxis.set_major_locator(matplotlib.ticker.MaxNLocator(nbins=4))
            ax.xaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(round_label))
            ax.set_xlabel("round t")
            ax.set_title(_panel_title(eps))
        axes[0][0].set_ylabel(_NICE.get(metric, metric))
        per_panel = "; a panel per ε" if len(epsilons) > 1 else ""
        note = f"mean, {confidence:.0%} bootstrap band{per_panel}; dashed: non-private"
        options = [f"{env_title(env)}\n{note}"]
        if width > COLUMN_WIDTH:
            options[:0] = [f"{env}: {note}", f"{env}\n{note}"]
        lines = fit_text(fig, fig.suptitle("", fontsize=8), options, width - 2 * EDGE)
        # the suptitle's lines, a gap, then the panel titles; the height (2.4 in) was chosen
        # for one suptitle line at full width and two in a column
        place_axes(fig, lines + 1 + 1, (1 if width > COLUMN_WIDTH else 2) + 1 + 1)
        legend_below(fig, list(handles.values()), list(handles), width)
        pin_titles(fig)
    return fig


def _round_curves(
    data: pd.DataFrame, metric: str, confidence: float, n_boot: int
) -> dict[tuple[str, float], tuple[Any, ...]]:
    """Every curve of one env's rows, each computed once (a reference is drawn in every panel).

    ``{(agent, epsilon, non-finite as inf): (rounds, mean, band low, band high, the group's
    first epsilon, the certified epsilon)}``.
    """
    eps = data["epsilon"].astype(float).to_numpy()
    key = pd.Series(np.where(np.isfinite(eps), eps, np.inf), index=data.index)
    keys, rounds, matrices, extra = [], [], [], []
    for (agent, eps_key), group in data.groupby([data["agent"], key], sort=True):
        keys.append((agent, float(eps_key)))
        r, matrix = round_matrix(group, metric)
        rounds.append(r)
        matrices.append(matrix)
        extra.append((float(group["epsilon"].iloc[0]), _certified(group)))
    bands = curve_bands(matrices, confidence, n_boot, seed=0)
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
    fig, ax = new_figure(COLUMN_WIDTH, 2.6, grid=True)
    # Points at the certified epsilon; epsilon = inf at an "inf" tick past the largest one.
    private = sorted(_private_agents(final))
    epsilons = sorted(e for e in final["epsilon"].unique() if math.isfinite(e))
    x_inf = (epsilons[-1] * 4.0) if epsilons else 1.0
    # A small log-x offset per learner keeps error bars apart.
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
    all_cis = iter(bootstrap_cis(points))
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
            ref = ax.axhline(mean, label=agent, **line_kwargs(styles[agent], agent, private=False))
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
        # With one epsilon the autoscaled axis would span only the offsets.
        reach = 10.0 ** (step * max(len(private) - 1, 0) / 2 + 0.1)
        ax.set_xlim(min(epsilons[0], lowest) / reach, ticks[-1] * reach)
    ax.set_xlabel("certified privacy parameter ε (log scale)")
    ax.set_ylabel(f"final {_NICE.get(metric, metric)}")
    ax.set_title("")
    title = f"{env_title(env)}\nmean, 95% bootstrap CI; dashed: non-private"
    lines = fit_text(fig, ax.title, [title], axes_title_room(COLUMN_WIDTH))
    place_axes(fig, lines, 3)  # 2.6 in high for a three-line title
    legend_below(fig, *ax.get_legend_handles_labels(), COLUMN_WIDTH)
    pin_titles(fig)
    return fig


def plot_regret_vs_horizon(
    frame: pd.DataFrame,
    env_id: str,
    metric: str = "dynamic_regret",
    *,
    theory_slope: float = 0.5,
) -> Figure:
    """Final regret against T on log-log axes, with fitted power laws (needs >= 2 horizons).

    ``theory_slope`` draws a grey dotted reference line.

    Raises:
        ValueError: with fewer than two horizons for ``env_id``.
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
        fig, ax = new_figure(COLUMN_WIDTH, 2.8)
        anchors = []
        for (agent, eps), group in final.groupby(["agent", "epsilon"], sort=True):
            per_t = {t: g[metric].to_numpy() for t, g in group.groupby("horizon")}
            ts = np.array(sorted(per_t), dtype=float)
            cis = np.array([bootstrap_ci(per_t[t]) for t in sorted(per_t)])  # est, lo, hi
            means = cis[:, 0]
            label = _eps_label(agent, float(eps), agent in private, _certified(group))
            line = line_kwargs(styles[agent], agent, agent in private)
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
                # markevery=[]: the marker in the legend only.
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
        if anchors:
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
        fit_text(fig, ax.title, [title], COLUMN_WIDTH - 2 * EDGE)
        ax.grid(True, which="both")
        fig.tight_layout()
        legend_below(fig, *ax.get_legend_handles_labels(), COLUMN_WIDTH)
        pin_titles(fig)
    return fig


def plot_aggregate(frame: pd.DataFrame, metric: str = "dynamic_regret") -> Figure | None:
    """IQM of normalised scores across envs per learner, 95% CIs (None: one env or no uniform)."""
    table = aggregate_table(frame, metric, reference=REFERENCE_LEARNER)
    if table is None or table.empty:
        return None
    styles = learner_styles(frame["agent"].unique())
    table = table.iloc[::-1].reset_index(drop=True)  # best at the top
    labels = [
        a if not math.isfinite(e) else f"{a} ε={e:g}"
        for a, e in zip(table["agent"], table["epsilon"], strict=True)
    ]
    with matplotlib.rc_context(STYLE):
        fig, ax = new_figure(COLUMN_WIDTH, 0.8 + 0.17 * len(table))
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
        fit_text(fig, ax.title, [title], COLUMN_WIDTH - 2 * EDGE)
        ax.grid(True, axis="x")
        fig.tight_layout()
        pin_titles(fig)
    return fig


#: Formats a figure can be saved in; PNG is the default, PDF on request.
FORMATS = ("png", "pdf")
#: Resolution of the PNGs (a paper takes the vector PDF).
PNG_DPI = 200
#: zlib level of the PNGs (docs/grid.md, "Reading the table and the figures").
PNG_COMPRESSION = 3


def save_figure(
    fig: Figure, path_stem: str | Path, formats: Iterable[str] = ("png",)
) -> list[Path]:
    """Save in each of ``formats`` (PNG by default; ``("png", "pdf")`` for both); returns the paths.

    Written atomically (:func:`write_figure`) into a real folder, never through a link.

    Raises:
        ValueError: for an unknown format.
    """
    from dp_experts_env.evaluation.store import plain_dir

    stem = Path(path_stem)
    plain_dir(stem.parent)
    # Appended, not with_suffix(): "gap=0.1" and "gap=0.2" would both become "gap=0.png".
    formats = tuple(formats)
    if not formats or any(f not in FORMATS for f in formats):
        raise ValueError(f"formats must be a non-empty subset of {FORMATS}, got {formats!r}")
    paths = [stem.parent / f"{stem.name}.{fmt}" for fmt in formats]
    with matplotlib.rc_context(STYLE):  # fonttype is read when the PDF is written
        for path in paths:
            # As laid out: bbox_inches="tight" would draw the figure twice.
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
    """File-name-safe label of at most 64 characters, tagged with a hash when changed."""
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
    """Every figure the rows support under ``out_dir`` (PDFs too with ``pdf``)."""
    out = Path(out_dir)
    paths: list[Path] = []
    formats = FORMATS if pdf else ("png",)
    for env in sorted(frame["env"].unique()):
        paths += save_figure(
            plot_regret_vs_round(frame, env, metric),
            out / figure_stem("round", metric, env),
            formats,
        )
        # A privacy-utility curve needs two finite epsilons.
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
    if frame["env"].nunique() >= 2 and REFERENCE_LEARNER in set(frame["agent"]):
        fig = plot_aggregate(frame, metric)
        if fig is not None:
            paths += save_figure(fig, out / figure_stem("aggregate", metric, "all-envs"), formats)
    return paths
