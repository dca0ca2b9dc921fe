"""Paper-ready figures: sizes, embedded font type, one colour per learner, references, slopes."""

import itertools

import matplotlib
import matplotlib.colors as mcolors
import numpy as np
import pandas as pd
import pytest

from dp_experts_env.evaluation.plots import (
    COLUMN_WIDTH,
    FULL_WIDTH,
    PALETTE,
    PNG_DPI,
    learner_styles,
    make_figures,
    plot_aggregate,
    plot_regret_vs_epsilon,
    plot_regret_vs_horizon,
    plot_regret_vs_round,
    save_figure,
)
from dp_experts_env.evaluation.stats import fit_loglog_slope

matplotlib.use("Agg")

ENV_ID = "DPExperts-Shift-v0"


def _rows(horizons=(100, 400, 1600), epsilons=(0.5, 2.0), seeds=4):
    """Synthetic result rows: regret = c * T^a * (1 + noise) along 5 recorded rounds."""
    rng = np.random.default_rng(0)
    learners = [("uniform", np.inf, 0.9, 1.0), ("hedge", np.inf, 0.5, 0.5)]
    learners += [("priv-a", e, 1.0 / e, 0.5) for e in epsilons]
    learners += [("priv-b", e, 2.0 / e, 0.6) for e in epsilons]
    rows = []
    for t_max in horizons:
        env = f"{ENV_ID}[horizon={t_max}]"
        for name, eps, c, a in learners:
            for seed in range(seeds):
                noise = 1 + 0.05 * rng.normal()
                for r in np.linspace(t_max / 5, t_max, 5).astype(int):
                    rows.append(
                        dict(
                            agent=name,
                            agent_name=name,
                            env=env,
                            env_id=ENV_ID,
                            horizon=t_max,
                            n_experts=10,
                            epsilon=eps,
                            private=bool(np.isfinite(eps)),
                            certified=True,
                            seed=seed,
                            round=int(r),
                            dynamic_regret=c * r**a * noise,
                            static_regret=0.0,
                        )
                    )
    return pd.DataFrame(rows)


def _line_colours(fig):
    out = {}
    for ax in fig.axes:
        for line in ax.get_lines():
            label = line.get_label()
            if not label.startswith("_"):
                out[label.split(" ε=")[0].split(":")[0]] = mcolors.to_hex(line.get_color())
    for legend in fig.legends:
        for handle, text in zip(legend.legend_handles, legend.get_texts(), strict=True):
            colour = handle.get_color() if hasattr(handle, "get_color") else None
            if colour is not None and not isinstance(colour, np.ndarray):
                out.setdefault(
                    text.get_text().split(" ε=")[0].split(":")[0], mcolors.to_hex(colour)
                )
    return out


def test_sizes_are_column_and_full_width():
    frame = _rows()
    env = f"{ENV_ID}[horizon=400]"
    several = plot_regret_vs_round(frame, env)
    assert several.get_size_inches()[0] == pytest.approx(FULL_WIDTH)
    one = plot_regret_vs_round(frame[frame["epsilon"] != 2.0], env)
    assert one.get_size_inches()[0] == pytest.approx(COLUMN_WIDTH)
    assert plot_regret_vs_epsilon(frame, env).get_size_inches()[0] == pytest.approx(COLUMN_WIDTH)
    assert plot_regret_vs_horizon(frame, ENV_ID).get_size_inches()[0] == pytest.approx(COLUMN_WIDTH)
    # Text is set for print (8 pt body, 7 pt ticks and legend), not matplotlib's 10 pt.
    ax = several.axes[0]
    assert ax.xaxis.label.get_fontsize() == 8
    assert several.legends[0].get_texts()[0].get_fontsize() == 7


def test_pdf_embeds_truetype_not_type3_fonts(tmp_path):
    frame = _rows()
    paths = save_figure(
        plot_regret_vs_round(frame, f"{ENV_ID}[horizon=100]"), tmp_path / "f", ("png", "pdf")
    )
    pdf = next(p for p in paths if p.suffix == ".pdf").read_bytes()
    assert b"/Type3" not in pdf and b"/FontType 3" not in pdf
    assert b"/CIDFontType2" in pdf or b"/TrueType" in pdf  # Type 42 = TrueType outlines


def test_one_colour_per_learner_across_every_figure():
    frame = _rows()
    env = f"{ENV_ID}[horizon=400]"
    figures = [
        plot_regret_vs_round(frame, env),
        plot_regret_vs_epsilon(frame, env),
        plot_regret_vs_horizon(frame, ENV_ID),
    ]
    expected = {k: mcolors.to_hex(v["color"]) for k, v in learner_styles(frame["agent"]).items()}
    for fig in figures:
        seen = _line_colours(fig)
        for learner, colour in seen.items():
            if learner in expected:
                assert colour == expected[learner], (learner, fig)
    assert expected["uniform"] == "#000000"  # the reference is black in every figure
    others = [c for k, c in expected.items() if k != "uniform"]
    assert len(set(others)) == len(others)


def test_reference_lines_are_dark_and_dashed():
    frame = _rows()
    fig = plot_regret_vs_round(frame, f"{ENV_ID}[horizon=400]")
    uniform = [line for line in fig.axes[0].get_lines() if line.get_label() == "uniform"][0]
    assert mcolors.to_hex(uniform.get_color()) == "#000000"
    assert uniform.get_linestyle() != "-" and uniform.get_linewidth() >= 1.5
    hedge = [line for line in fig.axes[0].get_lines() if line.get_label() == "hedge"][0]
    assert hedge.get_linestyle() != "-"
    assert mcolors.to_rgba(hedge.get_color())[3] == 1.0  # not pale


def _lab(colour):
    rgb = np.array(mcolors.to_rgb(colour))
    lin = np.where(rgb <= 0.04045, rgb / 12.92, ((rgb + 0.055) / 1.055) ** 2.4)
    m = np.array([[0.4124, 0.3576, 0.1805], [0.2126, 0.7152, 0.0722], [0.0193, 0.1192, 0.9505]])
    xyz = m @ lin / np.array([0.95047, 1.0, 1.08883])
    f = np.where(xyz > 0.008856, np.cbrt(xyz), 7.787 * xyz + 16 / 116)
    return np.array([116 * f[1] - 16, 500 * (f[0] - f[1]), 200 * (f[1] - f[2])])


def test_palette_colours_are_far_apart():
    # CIE76 colour distance >= 18 for every pair (tab20's light/dark pairs are about 10-15).
    gaps = [np.linalg.norm(_lab(a) - _lab(b)) for a, b in itertools.combinations(PALETTE, 2)]
    assert min(gaps) >= 18
    assert len(PALETTE) >= 13


def test_horizon_figure_has_error_bars_and_fitted_lines():
    frame = _rows()
    fig = plot_regret_vs_horizon(frame, ENV_ID)
    ax = fig.axes[0]
    n_curves = 2 + 2 * 2  # two non-private learners, two private ones at two epsilons
    assert len(ax.containers) == n_curves  # one errorbar container per learner and epsilon
    texts = [t.get_text() for t in fig.legends[0].get_texts()]
    assert sum("slope" in t for t in texts) == n_curves + 1  # + the reference line
    # The fitted line of hedge is the least-squares power law of its mean final regrets.
    final = frame[(frame["agent"] == "hedge") & (frame["round"] == frame["horizon"])]
    means = final.groupby("horizon")["dynamic_regret"].mean()
    slope, _ = fit_loglog_slope(means.index, means.to_numpy())
    assert any(t.startswith(f"hedge: slope {slope:.2f}") for t in texts)
    assert 0.45 < slope < 0.55


@pytest.mark.slow
def test_no_epsilon_figure_for_a_one_epsilon_grid(tmp_path):
    frame = _rows(horizons=(100,), epsilons=(1.0,))
    names = [p.name for p in make_figures(frame, tmp_path / "one")]
    assert not any(n.startswith("epsilon") for n in names)
    assert any(n.startswith("round") for n in names)
    frame = _rows(horizons=(100,), epsilons=(0.5, 1.0))
    names = [p.name for p in make_figures(frame, tmp_path / "two")]
    assert [n.rsplit(".", 1)[1] for n in names if n.startswith("epsilon")] == ["png"]  # default
    names = [p.name for p in make_figures(frame, tmp_path / "pdf", pdf=True)]
    assert sorted(n.rsplit(".", 1)[1] for n in names if n.startswith("epsilon")) == ["pdf", "png"]


def _drawn_texts(fig):
    """Every text the renderer draws: titles, labels, tick labels in view, annotations, legends."""
    texts = [fig._suptitle] if fig._suptitle is not None else []
    for ax in fig.axes:
        texts += [ax.title, ax._left_title, ax._right_title, ax.xaxis.label, ax.yaxis.label]
        texts += [ax.xaxis.get_offset_text(), ax.yaxis.get_offset_text()]
        for axis in (ax.xaxis, ax.yaxis):
            for tick in axis.get_major_ticks() + axis.get_minor_ticks():
                lo, hi = sorted(axis.get_view_interval())
                if lo <= tick.get_loc() <= hi:
                    texts += [tick.label1, tick.label2]
        texts += list(ax.texts)
    for legend in fig.legends:
        texts += legend.get_texts()
    return [t for t in texts if t.get_visible() and t.get_text().strip()]


def _assert_inside_and_apart(fig, name):
    """Nothing of ``fig`` drawn past its edges, and titles, axes and legend do not overlap.

    Drawn as savefig draws it without bbox_inches="tight": what lies outside is cut off.
    """
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    edge = fig.bbox
    texts = _drawn_texts(fig)
    assert texts
    boxes = [(t.get_text(), t.get_window_extent(renderer)) for t in texts]
    boxes += [("legend", legend.get_window_extent(renderer)) for legend in fig.legends]
    for label, box in boxes:
        assert edge.x0 - 0.5 <= box.x0 and box.x1 <= edge.x1 + 0.5, (name, label, box, edge)
        assert edge.y0 - 0.5 <= box.y0 and box.y1 <= edge.y1 + 0.5, (name, label, box, edge)
    blocks = [(f"axes {i}", ax.get_tightbbox(renderer)) for i, ax in enumerate(fig.axes)]
    blocks += [("legend", legend.get_window_extent(renderer)) for legend in fig.legends]
    if fig._suptitle is not None:
        blocks.append(("suptitle", fig._suptitle.get_window_extent(renderer)))
    for (a, box_a), (b, box_b) in itertools.combinations(blocks, 2):
        assert not box_a.overlaps(box_b), (name, a, box_a, b, box_b)


def _layout_cases():
    frame = _rows()
    env = f"{ENV_ID}[horizon=400]"
    four = _rows(horizons=(400,), epsilons=(0.5, 2.0, 8.0, 32.0))
    # A label too long for one line at full width, and for a column even on two lines.
    long_env = f"{ENV_ID}[gap=0.3,horizon=400,n_experts=10,n_shifts=4,switch_every=25,kind=x]"
    long = frame[frame["env"] == env].assign(env=long_env)
    # Regrets of 10^4-10^6 have y tick labels wider than the margin was set for, and of 10^8 an
    # offset text ("1e8") over the y axis, over which the titles are lifted.
    large = frame[frame["env"] == env].assign(dynamic_regret=frame["dynamic_regret"] * 1e3)
    huge = frame[frame["env"] == env].assign(dynamic_regret=frame["dynamic_regret"] * 1e6)
    return {
        "large scale": (plot_regret_vs_round(large, env), FULL_WIDTH),
        "large scale, epsilon": (plot_regret_vs_epsilon(large, env), COLUMN_WIDTH),
        "offset text": (plot_regret_vs_round(huge, env), FULL_WIDTH),
        "offset text, epsilon": (plot_regret_vs_epsilon(huge, env), COLUMN_WIDTH),
        "several": (plot_regret_vs_round(frame, env), FULL_WIDTH),
        "four epsilons": (plot_regret_vs_round(four, four["env"].iloc[0]), FULL_WIDTH),
        "long title": (plot_regret_vs_round(long, long_env), FULL_WIDTH),
        "one": (plot_regret_vs_round(frame[frame["epsilon"] != 2.0], env), COLUMN_WIDTH),
        "one, long title": (
            plot_regret_vs_round(long[long["epsilon"] != 2.0], long_env),
            COLUMN_WIDTH,
        ),
        "epsilon": (plot_regret_vs_epsilon(frame, env), COLUMN_WIDTH),
        "epsilon, long title": (plot_regret_vs_epsilon(long, long_env), COLUMN_WIDTH),
        "horizon": (plot_regret_vs_horizon(frame, ENV_ID), COLUMN_WIDTH),
        "aggregate": (plot_aggregate(frame), COLUMN_WIDTH),
    }


@pytest.mark.slow
def test_figures_hold_their_titles_and_legend_at_their_width(tmp_path):
    # Saved as laid out (no bbox_inches="tight"): the PNG is the figure's own size, so the
    # figure itself must hold every title, label and the legend below the axes, unclipped.
    from PIL import Image

    for name, (fig, width) in _layout_cases().items():
        assert fig.get_size_inches()[0] == pytest.approx(width), name
        png = next(p for p in save_figure(fig, tmp_path / name) if p.suffix == ".png")
        expected = np.round(fig.get_size_inches() * PNG_DPI)
        assert np.abs(np.array(Image.open(png).size) - expected).max() <= 1, (name, expected)
        _assert_inside_and_apart(fig, name)


def test_layout_check_catches_a_clipped_legend():
    # Control: a legend hanging below the figure's edge (what bbox_inches="tight" used to
    # rescue) and a title wider than the figure fail the check.
    fig = plot_regret_vs_round(_rows(), f"{ENV_ID}[horizon=400]")
    fig.legends[0].set_bbox_to_anchor((0.5, 0.0), transform=fig.transFigure)
    with pytest.raises(AssertionError, match="legend"):
        _assert_inside_and_apart(fig, "legend moved")
    fig = plot_regret_vs_epsilon(_rows(), f"{ENV_ID}[horizon=400]")
    fig.axes[0].set_title("x" * 120)
    with pytest.raises(AssertionError, match="xxx"):
        _assert_inside_and_apart(fig, "wide title")


def test_long_titles_are_wrapped_not_widened():
    frame = _rows(horizons=(400,))
    long_env = f"{ENV_ID}[gap=0.3,horizon=400,n_experts=10,n_shifts=4,switch_every=25,kind=x]"
    frame = frame.assign(env=long_env)
    fig = plot_regret_vs_round(frame, long_env)
    assert fig.get_size_inches()[0] == pytest.approx(FULL_WIDTH)
    assert fig._suptitle.get_text() == (
        f"{long_env}\nmean, 95% bootstrap band; a panel per ε; dashed: non-private"
    )
    title = plot_regret_vs_epsilon(frame, long_env).axes[0].get_title()
    assert title.count("\n") >= 3 and title.replace("\n", "").startswith(ENV_ID)


@pytest.mark.slow
def test_aggregate_figure_for_several_envs_only(tmp_path):
    from dp_experts_env.evaluation.report import aggregate_table

    frame = _rows()
    fig = plot_aggregate(frame)
    labels = [t.get_text() for t in fig.axes[0].get_yticklabels()]
    table = aggregate_table(frame)
    assert len(labels) == len(table) == 6  # 2 non-private + 2 private x 2 epsilons
    assert labels[0] == "uniform"  # worst at the bottom (normalised score about 0)
    names = [p.name for p in make_figures(frame, tmp_path / "many", pdf=True)]
    assert sum(n.startswith("aggregate_") for n in names) == 2  # png + pdf
    one_env = frame[frame["horizon"] == 100]
    assert plot_aggregate(one_env) is None
    names = [p.name for p in make_figures(one_env, tmp_path / "one")]
    assert not any(n.startswith("aggregate_") for n in names)


def test_batched_bands_are_the_per_curve_bootstrap():
    # The old per-curve computation: gather the resamples, average, take the percentiles.
    from dp_experts_env.evaluation.figure_bands import curve_bands as _curve_bands

    rng = np.random.default_rng(3)
    matrices = [rng.normal(size=(r, s)) * 100 for r, s in [(7, 5), (3, 5), (4, 2), (5, 1)]]
    matrices.append(np.where(rng.random((6, 5)) < 0.2, np.nan, rng.normal(size=(6, 5))))
    for matrix, (mean, lo, hi) in zip(matrices, _curve_bands(matrices, 0.9, 300, 0), strict=True):
        n_seeds = matrix.shape[1]
        assert np.array_equal(mean, matrix.mean(axis=1), equal_nan=True)
        if n_seeds < 2:
            assert np.array_equal(lo, mean) and np.array_equal(hi, mean)
            continue
        idx = np.random.default_rng(0).integers(0, n_seeds, size=(300, n_seeds))
        old_lo, old_hi = np.quantile(matrix[:, idx].mean(axis=2), [0.05, 0.95], axis=1)
        np.testing.assert_allclose(lo, old_lo, rtol=1e-13, atol=1e-12)
        np.testing.assert_allclose(hi, old_hi, rtol=1e-13, atol=1e-12)
        assert np.all(lo <= hi + 1e-12) or np.isnan(matrix).any()


def test_titles_are_pinned_only_where_the_automatic_place_is_the_top():
    frame = _rows(horizons=(400,))
    env = frame["env"].iloc[0]
    fig = plot_regret_vs_round(frame, env)
    renderer = fig.canvas.get_renderer()
    fig.canvas.draw()
    pinned = [ax.title.get_window_extent(renderer).bounds for ax in fig.axes]
    assert all(ax._autotitlepos is False for ax in fig.axes)
    for ax in fig.axes:  # matplotlib's own placement puts them at the same place
        ax._autotitlepos = None
    fig.canvas.draw()
    assert [ax.title.get_window_extent(renderer).bounds for ax in fig.axes] == pinned
    # Regrets of order 1e7 carry an offset text ("1e7") over the y axis: the titles keep
    # matplotlib's placement, which lifts them over it.
    big = frame.assign(dynamic_regret=frame["dynamic_regret"] * 1e7)
    fig = plot_regret_vs_round(big, env)
    assert all(ax._autotitlepos is not False for ax in fig.axes)
    _assert_inside_and_apart(fig, "offset text")


def test_sorted_quantiles_are_numpys():
    from dp_experts_env.evaluation.figure_bands import _sorted_quantiles

    rng = np.random.default_rng(5)
    for n in (1, 2, 10, 499, 500):
        rows = np.sort(rng.normal(size=(50, n)) * 10 ** rng.uniform(-3, 6, size=(50, 1)), axis=1)
        rows[7, -1] = np.nan  # a row with a missing value: NaN, as np.quantile gives
        qs = (0.0, 0.025, 0.3, 0.5, 0.975, 1.0)
        for q, got in zip(qs, _sorted_quantiles(rows, qs), strict=True):
            expected = np.quantile(rows, q, axis=1)
            assert np.isnan(got[7]) and np.isnan(expected[7])
            np.testing.assert_allclose(got, expected, rtol=1e-15, atol=0)


def test_batched_bootstrap_cis_equal_summary_cis():
    # The epsilon figure's error bars: the same floats as summary.csv's bootstrap_ci.
    from dp_experts_env.evaluation.figure_bands import bootstrap_cis as _bootstrap_cis
    from dp_experts_env.evaluation.stats import bootstrap_ci

    rng = np.random.default_rng(11)
    groups = [rng.normal(size=n) * 10 ** rng.uniform(-2, 4) for n in (10, 10, 3, 1, 10, 7, 3)]
    got = _bootstrap_cis(groups)
    expected = np.array([bootstrap_ci(g) for g in groups])
    assert np.array_equal(got, expected)
    many = [rng.normal(size=150) for _ in range(20)]  # several chunks of 6 groups
    assert np.array_equal(_bootstrap_cis(many), np.array([bootstrap_ci(g) for g in many]))
