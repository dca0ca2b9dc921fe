"""Figures a paper would use, drawn from tidy result rows (matplotlib, PNG and PDF).

* :func:`plot_regret_vs_round` -- mean regret curve per agent with a bootstrap confidence band,
  one panel per epsilon (non-private agents appear in every panel as references).
* :func:`plot_regret_vs_epsilon` -- the privacy-utility trade-off: final regret against epsilon
  per private agent; non-private agents as horizontal dashed lines.
* :func:`plot_regret_vs_horizon` -- final regret against T on log-log axes with the fitted slope
  of each agent and a theory slope drawn beside for reference.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping
from pathlib import Path

import matplotlib

matplotlib.use("Agg", force=False)
import matplotlib.pyplot as plt  # noqa: E402
import matplotlib.ticker  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from dp_experts_env.evaluation.stats import bootstrap_ci, fit_loglog_slope  # noqa: E402

__all__ = [
    "plot_regret_vs_round",
    "plot_regret_vs_epsilon",
    "plot_regret_vs_horizon",
    "make_figures",
    "save_figure",
]

_NICE = {
    "dynamic_regret": "dynamic regret",
    "static_regret": "static regret",
    "per_round_best_regret": "per-round-best regret",
    "pseudo_regret": "pseudo-regret",
}


def _curve_band(matrix: np.ndarray, confidence: float, n_boot: int, seed: int):
    """Mean over seeds (axis 1) with a percentile bootstrap band, vectorised over rounds."""
    n_seeds = matrix.shape[1]
    mean = matrix.mean(axis=1)
    if n_seeds < 2:
        return mean, mean, mean
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, n_seeds, size=(n_boot, n_seeds))
    boots = matrix[:, idx].mean(axis=2)  # (rounds, n_boot)
    tail = (1 - confidence) / 2
    lo, hi = np.quantile(boots, [tail, 1 - tail], axis=1)
    return mean, lo, hi


def _eps_text(eps: float) -> str:
    return "non-private" if not math.isfinite(eps) else f"ε = {eps:g}"


def _colours(agents: list[str]) -> dict[str, tuple]:
    """One colour per agent, stable across the figures of a frame (up to 20 distinct)."""
    cmap = matplotlib.colormaps["tab20"]
    return {agent: cmap(i % 20) for i, agent in enumerate(sorted(agents))}


def _title(env: str) -> str:
    """Env label on two lines when it carries parameters (long labels get cut otherwise)."""
    return env.replace("[", "\n[", 1) if "[" in env else env


def _legend_outside(fig: Figure, ax) -> None:
    handles, labels = ax.get_legend_handles_labels()
    fig.legend(
        handles, labels, loc="center left", bbox_to_anchor=(1.0, 0.5), fontsize=8, frameon=False
    )


def plot_regret_vs_round(
    frame: pd.DataFrame,
    env: str,
    metric: str = "dynamic_regret",
    *,
    confidence: float = 0.95,
    n_boot: int = 500,
) -> Figure:
    """Regret against round for every agent on ``env``; one panel per epsilon."""
    data = frame[frame["env"] == env]
    if data.empty:
        raise ValueError(f"no rows for env {env!r}")
    epsilons = sorted(e for e in data["epsilon"].unique() if math.isfinite(e)) or [math.inf]
    colours = _colours(list(data["agent"].unique()))
    fig, axes = plt.subplots(
        1, len(epsilons), figsize=(4.6 * len(epsilons), 4.2), squeeze=False, sharey=True
    )
    for ax, eps in zip(axes[0], epsilons, strict=True):
        panel = data[(data["epsilon"] == eps) | ~np.isfinite(data["epsilon"])]
        for agent, group in panel.groupby("agent", sort=True):
            table = group.pivot_table(index="round", columns="seed", values=metric)
            mean, lo, hi = _curve_band(table.to_numpy(), confidence, n_boot, seed=0)
            private = bool(np.isfinite(group["epsilon"].iloc[0]))
            colour = colours[agent]
            ax.plot(
                table.index,
                mean,
                label=agent,
                color=colour,
                linestyle="-" if private else "--",
                linewidth=1.6 if private else 1.2,
            )
            ax.fill_between(table.index, lo, hi, color=colour, alpha=0.15, linewidth=0)
        ax.set_xlim(0, data["round"].max())
        ax.set_xlabel("round t")
        ax.set_title(_eps_text(eps))
        ax.grid(True, alpha=0.3)
    axes[0][0].set_ylabel(_NICE.get(metric, metric))
    _legend_outside(fig, axes[0][-1])
    fig.suptitle(
        f"{_NICE.get(metric, metric)} on {_title(env)}\n"
        f"mean over seeds, {confidence:.0%} bootstrap band; dashed = non-private",
        fontsize=10,
    )
    fig.tight_layout()
    return fig


def plot_regret_vs_epsilon(frame: pd.DataFrame, env: str, metric: str = "dynamic_regret") -> Figure:
    """Final regret against epsilon per private agent (privacy-utility curve)."""
    data = frame[frame["env"] == env]
    if data.empty:
        raise ValueError(f"no rows for env {env!r}")
    last = data.groupby(["agent", "epsilon", "seed"])["round"].transform("max")
    final = data[data["round"] == last]
    colours = _colours(list(final["agent"].unique()))
    fig, ax = plt.subplots(figsize=(6.4, 4.4))
    private = sorted(a for a, g in final.groupby("agent") if np.isfinite(g["epsilon"]).all())
    # Learners sit side by side around each epsilon (a small log-x offset) so that their error
    # bars do not hide one another.
    step = min(0.02, 0.12 / max(len(private) - 1, 1))
    references: list[float] = []
    for agent, group in final.groupby("agent", sort=True):
        stats = group.groupby("epsilon")[metric].agg(["mean"])
        if np.isfinite(stats.index).all():
            # The same percentile bootstrap interval as summary.csv (ci_low, ci_high).
            cis = np.array(
                [bootstrap_ci(g[metric].to_numpy())[1:] for _, g in group.groupby("epsilon")]
            )
            means = stats["mean"].to_numpy()
            shift = 10.0 ** ((private.index(agent) - (len(private) - 1) / 2) * step)
            ax.errorbar(
                np.asarray(stats.index, dtype=float) * shift,
                means,
                yerr=np.vstack([means - cis[:, 0], cis[:, 1] - means]),
                marker="o",
                capsize=3,
                label=agent,
                color=colours[agent],
            )
        else:
            ax.axhline(
                stats["mean"].iloc[0],
                linestyle="--",
                linewidth=1.2,
                color=colours[agent],
                label=f"{agent} (non-private)",
            )
            references.append(float(stats["mean"].iloc[0]))
    if references:
        # Keep the reference lines off the frame: autoscaling adds no margin beyond them.
        low, high = ax.get_ylim()
        pad = 0.05 * (max(high, *references) - min(low, *references) or 1.0)
        ax.set_ylim(min(low, min(references) - pad), max(high, max(references) + pad))
    epsilons = sorted(e for e in final["epsilon"].unique() if math.isfinite(e))
    ax.set_xscale("log")
    if epsilons:
        ax.set_xticks(epsilons, [f"{e:g}" for e in epsilons])
        ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
        # Room for the side-by-side offsets plus a margin; with one epsilon the autoscaled axis
        # would span only the offsets and push the points to the frame.
        reach = 10.0 ** (step * max(len(private) - 1, 0) / 2 + 0.1)
        ax.set_xlim(epsilons[0] / reach, epsilons[-1] * reach)
    ax.set_xlabel("privacy parameter ε (log scale)")
    ax.set_ylabel(f"final {_NICE.get(metric, metric)}")
    ax.set_title(
        f"privacy-utility on {_title(env)}\nmean over seeds, 95% bootstrap CI (as in summary.csv)",
        fontsize=10,
    )
    ax.grid(True, alpha=0.3)
    _legend_outside(fig, ax)
    fig.tight_layout()
    return fig


def plot_regret_vs_horizon(
    frame: pd.DataFrame,
    env_id: str,
    metric: str = "dynamic_regret",
    *,
    theory_slope: float | Mapping[str, float] = 0.5,
) -> Figure:
    """Final regret against T on log-log axes with fitted slopes (needs >= 2 horizons)."""
    data = frame[frame["env_id"] == env_id]
    last = data.groupby(["env", "agent", "epsilon", "seed"])["round"].transform("max")
    final = data[data["round"] == last]
    if final["horizon"].nunique() < 2:
        raise ValueError(f"regret vs T needs at least two horizons for {env_id!r}")
    fig, ax = plt.subplots(figsize=(6.4, 4.4))
    for (agent, eps), group in final.groupby(["agent", "epsilon"], sort=True):
        means = group.groupby("horizon")[metric].mean()
        label = agent if not math.isfinite(eps) else f"{agent} ε={eps:g}"
        positive = means[means > 0]
        if len(positive) >= 2:
            slope, intercept = fit_loglog_slope(positive.index, positive.to_numpy())
            label += f" (slope {slope:.2f})"
        (line,) = ax.plot(means.index, means.to_numpy(), marker="o", label=label)
        reference = (
            theory_slope.get(agent, 0.5) if isinstance(theory_slope, Mapping) else theory_slope
        )
        if len(positive):
            t0, r0 = positive.index[0], positive.iloc[0]
            ts = np.asarray(means.index, dtype=float)
            ax.plot(
                ts, r0 * (ts / t0) ** reference, linestyle=":", color=line.get_color(), linewidth=1
            )
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("horizon T")
    ax.set_ylabel(f"final {_NICE.get(metric, metric)}")
    ax.set_title(f"regret vs T on {env_id}\ndotted: reference slope", fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
    _legend_outside(fig, ax)
    fig.tight_layout()
    return fig


def save_figure(fig: Figure, path_stem: str | Path) -> list[Path]:
    """Save as PNG and PDF; returns both paths."""
    stem = Path(path_stem)
    stem.parent.mkdir(parents=True, exist_ok=True)
    # Append the suffix: with_suffix() would replace whatever follows the stem's last "." (an
    # env label "gap=0.1" and "gap=0.2" would both be saved as "...gap=0.png").
    paths = [stem.parent / f"{stem.name}.png", stem.parent / f"{stem.name}.pdf"]
    for path in paths:
        # "tight" keeps the legend placed outside the axes inside the saved image.
        fig.savefig(path, dpi=130, bbox_inches="tight")
    plt.close(fig)
    return paths


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
    frame: pd.DataFrame, out_dir: str | Path, metric: str = "dynamic_regret"
) -> list[Path]:
    """Every figure the rows support, written under ``out_dir``.

    Files are named ``<kind>_<metric>_<env label>.png|pdf`` (:func:`figure_stem`), so figures of
    different envs or metrics never overwrite one another.
    """
    out = Path(out_dir)
    paths: list[Path] = []
    for env in sorted(frame["env"].unique()):
        paths += save_figure(
            plot_regret_vs_round(frame, env, metric), out / figure_stem("round", metric, env)
        )
        if (
            frame[frame["env"] == env]["epsilon"].map(math.isfinite).sum()
            and frame[frame["env"] == env]["epsilon"].nunique() > 1
        ):
            paths += save_figure(
                plot_regret_vs_epsilon(frame, env, metric),
                out / figure_stem("epsilon", metric, env),
            )
    for env_id in sorted(frame["env_id"].unique()):
        if frame[frame["env_id"] == env_id]["horizon"].nunique() >= 2:
            paths += save_figure(
                plot_regret_vs_horizon(frame, env_id, metric),
                out / figure_stem("horizon", metric, env_id),
            )
    return paths
