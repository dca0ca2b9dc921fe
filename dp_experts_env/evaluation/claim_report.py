"""``dp-experts reproduce``'s outputs: claims.csv, the figures and report.md.

:func:`write_outputs` writes the rows (:data:`COLUMNS`), one figure per claim and report.md
(:func:`report_text`: raw and Holm-adjusted verdicts, one paragraph per claim).
"""

from __future__ import annotations

import csv
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from dp_experts_env.evaluation.claim_gates import holm_verdicts
from dp_experts_env.evaluation.claims import LEARNING_FRACTION, UNTESTABLE, VERDICTS, Claim
from dp_experts_env.evaluation.store import write_atomic

__all__ = [
    "COLUMNS",
    "band_text",
    "control_name",
    "report_text",
    "verdict_counts",
    "write_outputs",
    "write_text",
]

COLUMNS = (
    "claim",
    "paper",
    "source",
    "learner",
    "quantity",
    "kind",
    "predicted",
    "tolerance",
    "measured",
    "ci_low",
    "ci_high",
    "verdict",
    "reason",
    "control",
    "control_measured",
    "control_ci_low",
    "control_ci_high",
    "control_verdict",
    "detail",
    "privacy",
    "seconds",
    "code",
    "mode",
    "seeds",
    "seed_verdicts",
    "p_value",
    "holm_verdict",
)


def control_name(claim: Claim) -> str:
    """The control's name with its keywords (``ogd (step=0.0)``), empty for none."""
    if claim.control is None:
        return ""
    params = ", ".join(f"{k}={v}" for k, v in sorted(claim.control.params.items()))
    return claim.control.agent + (f" ({params})" if params else "")


def write_outputs(
    claims: Sequence[Claim],
    results: Sequence[Mapping[str, Any]],
    data: Mapping[str, Mapping[str, pd.DataFrame]],
    out: Path,
    *,
    quick: bool,
    base_seeds: Sequence[int] = (0,),
) -> None:
    """claims.csv, one figure per claim and report.md (each written atomically)."""
    import io

    holm_verdicts(results)
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=list(COLUMNS), lineterminator="\n")
    writer.writeheader()
    for r in results:
        writer.writerow({k: _fmt(r[k]) for k in COLUMNS})
    write_text(out / "claims.csv", buf.getvalue())
    from dp_experts_env.evaluation.store import plain_dir

    figures = plain_dir(out / "figures")  # a planted symlinked folder is refused
    for claim in claims:
        if claim.name in data:
            _figure(claim, data[claim.name], figures / f"{claim.name}.png")
    write_text(out / "report.md", report_text(claims, results, quick=quick, base_seeds=base_seeds))


def write_text(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` atomically."""
    write_atomic(path, lambda handle: handle.write(text))


def _fmt(value: Any) -> Any:
    if isinstance(value, float):
        return "nan" if math.isnan(value) else f"{value:.6g}"
    return value


def _figure(
    claim: Claim,
    rows: tuple[Mapping[str, pd.DataFrame], Mapping[str, pd.DataFrame] | None],
    path: Path,
) -> None:
    """The claim's figure: the learner's curves and, dashed grey, the control's on the same axes."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    mine, control = rows
    fig, ax = plt.subplots(figsize=(4.8, 3.4), layout="constrained")
    if claim.figure is not None:
        ax.set_ylabel(claim.figure(mine, ax))
        if control is not None:
            _as_control(ax, lambda: claim.figure(control, ax), control_name(claim))
        if claim.log_x:
            ax.set_xscale("log")
    else:
        _sweep_curves(claim, mine, ax)
        if control is not None:
            roles = set(claim.roles())
            _as_control(
                ax,
                lambda: _sweep_curves(claim, control, ax, only=roles),
                control_name(claim),
            )
        positive = all((mine[s.key][s.metric] > 0).all() for s in claim.sweeps)
        if control is not None:
            positive &= all((control[s.key][s.metric] > 0).all() for s in claim.sweeps)
        if positive:
            ax.set_yscale("log")
    ax.set_xlabel(claim.x_label)
    ax.set_title(claim.name, fontsize=9)
    ax.legend(fontsize=7)
    from dp_experts_env.evaluation.plots import write_figure

    write_figure(fig, path, dpi=110)  # atomic, never through a planted link
    plt.close(fig)


def _as_control(ax: Any, draw: Any, name: str) -> None:
    """Draw with ``draw()`` and restyle what it added as the control's (grey, dashed)."""
    lines, containers = len(ax.lines), len(ax.containers)
    draw()
    for line in ax.lines[lines:]:
        line.set_color("0.45")
        line.set_markerfacecolor("0.45")
        line.set_markeredgecolor("0.45")
        if line.get_linestyle() not in ("None", "none", "", " "):  # not an error bar's caps
            line.set_linestyle("--")
        label = line.get_label()
        if not label.startswith("_"):
            line.set_label(f"control {name}: {label}")
    for container in ax.containers[containers:]:
        label = container.get_label()
        if label and not label.startswith("_"):
            container.set_label(f"control {name}: {label}")
        for artist in container.get_children():
            if hasattr(artist, "set_color"):
                artist.set_color("0.45")


def _sweep_curves(
    claim: Claim,
    rows: Mapping[str, pd.DataFrame],
    ax: Any,
    only: set[str] | None = None,
) -> None:
    """The default figure: every sweep's mean +- s.e. of its metric against x."""
    for sweep in claim.sweeps:
        if only is not None and sweep.key not in only:
            continue
        frame = rows[sweep.key]
        grouped = frame.groupby("x")[sweep.metric]
        mean, se = grouped.mean(), grouped.std(ddof=1) / np.sqrt(grouped.count())
        if len(mean) == 1:
            ax.axhline(float(mean.iloc[0]), ls="--", lw=1, label=sweep.key, color="0.5")
            continue
        ax.errorbar(
            mean.index,
            mean.values,
            yerr=se.fillna(0).values,
            marker="o",
            ms=3,
            capsize=2,
            label=sweep.key,
        )
    if claim.log_x:
        ax.set_xscale("log")
    ax.set_ylabel(claim.sweeps[0].metric.replace("_", " "))


def report_text(
    claims: Sequence[Claim],
    results: Sequence[Mapping[str, Any]],
    *,
    quick: bool,
    base_seeds: Sequence[int] = (0,),
) -> str:
    """The report: a table of verdicts, then one paragraph and figure per claim."""
    by_name = {r["claim"]: r for r in results}
    seeds = ", ".join(map(str, base_seeds))
    lines = [
        "# Reproducing the papers' claims",
        "",
        f"Mode: **{'quick' if quick else 'full'}**; base seeds: **{seeds}**"
        + (
            " (each claim judged at every base seed: a verdict that differs between them is "
            "`unstable`, with each seed's verdict in `seed_verdicts`)."
            if len(base_seeds) > 1
            else " (one base seed: no stability check)."
        ),
        "",
        "Generated by `dp-experts reproduce`"
        + (" --quick (smaller horizons and fewer seeds)" if quick else "")
        + ". Each claim is a statement of a paper (a rate exponent, a ratio, a flat line), an "
        "experiment on this suite's environments and learners, a no-learning control run in the "
        "learner's role on the same loss streams, and a verdict: `holds` when the 95% confidence "
        "interval of the measured quantity lies within the predicted band, the learner is "
        f"clearly learning (its regret below {LEARNING_FRACTION:g} x the control's at every x) "
        "and the control does not pass the same test; `fails` when the interval lies outside "
        "the band while the learner learns and its local slopes (fits over 3 consecutive points) "
        "are not moving toward the prediction; `burn-in` when the learner has not left the "
        "control's level or is still moving toward the prediction; `vacuous` when the control "
        "passes too (or the paper's explicit bound is above the trivial one at every point), so "
        "the test could not have failed; `inconclusive` when the interval straddles the band's "
        "edge or one local-slope window cannot tell burn-in from failure; `not in regime` when "
        "the learner never leaves the control's level and is not moving toward leaving it. "
        "Gates come after: `not private` for a claim whose statement involves epsilon when the "
        "learner's certified epsilon exceeds a point's epsilon (or it has no certificate) or a "
        "short audit finds a violation; `not specific` for a lower bound whose twin shows "
        "another cause; `untestable at these sizes` (counted apart) for a claim the suite's "
        "sizes cannot settle. Slopes are "
        "least-squares fits of log mean regret against log x; their intervals bootstrap the "
        "seeds. Nothing here is tuned to make a claim hold.",
        "",
        "| claim | learner | predicted | measured [95% CI] | control: measured | verdict | "
        "Holm-adjusted |",
        "|---|---|---|---|---|---|---|",
    ]
    for c in claims:
        r = by_name.get(c.name)
        if r is None:
            continue
        lines.append(
            f"| {c.name} | {r['learner']} | {band_text(c)} | {r['measured']:.3g} "
            f"[{r['ci_low']:.3g}, {r['ci_high']:.3g}] | {_control_cell(r)} | "
            f"**{r['verdict']}** | {r.get('holm_verdict', '')} |"
        )
    shown = [(c.name, by_name[c.name]["verdict"]) for c in claims if c.name in by_name]
    adjusted = [
        (c.name, by_name[c.name].get("holm_verdict", "")) for c in claims if c.name in by_name
    ]
    lines += [
        "",
        verdict_counts(shown),
        "",
        "Read together: each verdict above is a test at the 95% level of its own claim. The "
        "Holm-adjusted column reads the claims as one family (Holm's step-down over the "
        "one-sided p-values of every `holds` and `fails` at 0.025, the untestable claims left "
        "out): a `holds` or `fails` that does not survive the adjustment is `inconclusive` "
        "there. Adjusted: " + verdict_counts(adjusted).removeprefix("Verdicts of "),
    ]
    for c in claims:
        r = by_name.get(c.name)
        if r is None:
            continue
        lines += ["", f"## {c.name}", "", f"*{c.paper}, {c.source}.* {c.statement}", ""]
        runs = []
        for s in c.sweeps:
            points, seeds = s.chosen(quick)
            xs = ", ".join(f"{p.x:g}" for p in points)
            params = ", ".join(f"{k}={v}" for k, v in sorted(s.agent_params.items()))
            runs.append(
                f"`{s.agent}`{f' ({params})' if params else ''} on `{s.env_id}` at "
                f"{c.x_label} = {xs}, {seeds} seeds ({s.metric.replace('_', ' ')})"
            )
        lines.append("Run: " + "; ".join(runs) + ".")
        lines.append("")
        if c.control is not None:
            lines.append(
                f"Control: `{r['control']}` in the learner's role, same envs and seeds"
                + (f" ({c.control.why})" if c.control.why else "")
                + f": measured {r['control_measured']:.3g} [{r['control_ci_low']:.3g}, "
                f"{r['control_ci_high']:.3g}], verdict {r['control_verdict']}."
            )
        else:
            lines.append(f"No control: {c.no_control}")
        lines.append("")
        lines.append(
            f"Measured {c.quantity}: {r['measured']:.3g} (95% CI [{r['ci_low']:.3g}, "
            f"{r['ci_high']:.3g}]) against the predicted band {band_text(c)}: **{r['verdict']}** "
            f"({r['reason']}). {r['detail']}."
        )
        if r.get("privacy"):
            lines += ["", f"Privacy gate: {r['privacy']}."]
        if len(base_seeds) > 1 and r.get("seed_verdicts"):
            lines += ["", f"At each base seed: {r['seed_verdicts']}."]
        if c.notes:
            lines += ["", c.notes]
        lines += ["", f"![{c.name}](figures/{c.name}.png)"]
    lines.append("")
    return "\n".join(lines)


def verdict_counts(verdicts: Sequence[tuple[str, str]]) -> str:
    """One line: each verdict's count over ``(claim, verdict)`` pairs, the untestable apart."""
    judged = [v for _, v in verdicts if v != UNTESTABLE]
    apart = [name for name, v in verdicts if v == UNTESTABLE]
    text = f"Verdicts of {len(judged)} claims: " + ", ".join(
        f"{judged.count(v)} {v}" for v in VERDICTS if v != UNTESTABLE
    )
    if apart:
        text += f"; apart from the count, {len(apart)} {UNTESTABLE} ({', '.join(apart)})"
    return text + "."


def _control_cell(r: Mapping[str, Any]) -> str:
    if not r.get("control"):
        return "-"
    value = r["control_measured"]
    shown = "nan" if not math.isfinite(value) else f"{value:.3g}"
    return f"{r['control']}: {shown} ({r['control_verdict']})"


def band_text(c: Claim) -> str:
    """The predicted band as a reader checks it: ``<= 0.6``, ``>= 0.9`` or ``0 +- 0.1``."""
    if c.kind == "at_most":
        return f"<= {c.predicted + c.tolerance:.3g}"
    if c.kind == "at_least":
        return f">= {c.predicted - c.tolerance:.3g}"
    return f"{c.predicted:.3g} +- {c.tolerance:.3g}"
