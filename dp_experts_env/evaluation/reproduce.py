"""``dp-experts reproduce``: run the papers' claims and write claims.csv, figures and report.md.

Each claim's sweeps run on the grid runner (:func:`~dp_experts_env.evaluation.sweep.run_grid`),
one results folder per (claim, sweep, epsilon) under ``OUT/runs/``, so a second call reuses every
stored (cell, seed) and an interrupted call resumes; any backend of the runner works. Claims that
read a learner's internals (a switch counter) run :func:`custom` experiments whose results are
stored with the code fingerprint of the learner and env, so a code change re-runs them.

Outputs in ``OUT``: ``claims.csv`` (one row per claim: paper, source, predicted, measured,
ci_low, ci_high, verdict, ...), ``figures/<claim>.png`` and ``report.md``.
"""

from __future__ import annotations

import csv
import json
import math
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from dp_experts_env.evaluation.claims import Claim, Measurement, Sweep, verdict
from dp_experts_env.evaluation.grid import AgentEntry, EnvEntry, Grid
from dp_experts_env.evaluation.store import write_atomic

__all__ = ["COLUMNS", "run_claims", "sweep_rows", "write_outputs"]

COLUMNS = (
    "claim",
    "paper",
    "source",
    "quantity",
    "kind",
    "predicted",
    "tolerance",
    "measured",
    "ci_low",
    "ci_high",
    "verdict",
    "detail",
    "seconds",
)


def _label(x: float) -> str:
    return f"x={x!r}"


def _x_of(label: str) -> float:
    return float(label.partition("=")[2])


def sweep_rows(
    claim: Claim,
    sweep: Sweep,
    out: Path,
    *,
    quick: bool,
    backend: str = "local",
    n_jobs: int | None = None,
    address: str | None = None,
    noise: str | None = None,
) -> pd.DataFrame:
    """Final rows of one sweep (one row per seed and point) with its ``x`` column.

    Points with the same epsilon share one grid (their envs labelled by x); each grid has its
    own results folder, so stored runs are reused.
    """
    import agents
    from dp_experts_env.evaluation.sweep import final_rows, run_grid

    points, seeds = sweep.chosen(quick)
    if sweep.custom is not None:
        return _custom_rows(claim, sweep, out, points, seeds)
    params = dict(sweep.agent_params)
    spec = agents.spec(sweep.agent)
    allowed = getattr(spec.cls, "noise_backends", None)
    if callable(getattr(spec.cls, "noise_backends_for", None)):  # depends on the parameters
        allowed = spec.cls.noise_backends_for(params)
    # Learners that refuse a backend (the lazy samplers draw no Laplace noise) keep their own,
    # as `compare --noise` does.
    if noise is not None and spec.private and (allowed is None or noise in allowed):
        params["noise"] = noise
    by_eps: dict[float | None, list] = {}
    for p in points:
        by_eps.setdefault(p.epsilon, []).append(p)
    frames = []
    for eps, pts in by_eps.items():
        grid = Grid(
            agents=[AgentEntry(sweep.agent, params)],
            envs=[EnvEntry(sweep.env_id, dict(p.env_params), label=_label(p.x)) for p in pts],
            epsilons=[1.0 if eps is None else eps],
            n_seeds=seeds,
            n_record=2,
        )
        tag = "np" if eps is None else f"e{eps:g}"
        folder = out / "runs" / claim.name / f"{sweep.key}-{tag}"
        frame = run_grid(
            grid,
            folder,
            backend=backend,
            n_jobs=n_jobs,
            address=address,
            progress=False,
            report=False,
        )
        rows = final_rows(frame).copy()
        rows["x"] = rows["env"].map(_x_of)
        frames.append(rows)
    return pd.concat(frames, ignore_index=True)


def _custom_rows(claim: Claim, sweep: Sweep, out: Path, points: tuple, seeds: int) -> pd.DataFrame:
    """Rows of a custom sweep, reused when its configuration and code are unchanged."""
    config = {
        "agent": sweep.agent,
        "params": dict(sweep.agent_params),
        "env": sweep.env_id,
        "points": [[p.x, dict(p.env_params), p.epsilon] for p in points],
        "seeds": seeds,
    }
    key = results_key(config, sweep.agent, sweep.env_id)
    path = out / "runs" / claim.name / f"{sweep.key}-custom.json"
    if path.exists():
        try:
            stored = json.loads(path.read_text())
            if stored.get("key") == key:
                return pd.DataFrame(stored["rows"])
        except (OSError, ValueError, KeyError):
            pass  # unreadable or stale: run again
    assert sweep.custom is not None
    rows = sweep.custom(sweep, points, seeds)
    path.parent.mkdir(parents=True, exist_ok=True)
    _write_text(path, json.dumps({"key": key, "rows": rows.to_dict(orient="list")}))
    return rows


def run_claims(
    claims: Sequence[Claim],
    out: str | Path,
    *,
    quick: bool = False,
    backend: str = "local",
    n_jobs: int | None = None,
    address: str | None = None,
    noise: str | None = None,
    log: Any = None,
) -> list[dict[str, Any]]:
    """Run each claim's experiment and analysis; write the outputs; return the table rows."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    results: list[dict[str, Any]] = []
    data: dict[str, Mapping[str, pd.DataFrame]] = {}
    for claim in claims:
        start = time.perf_counter()
        rows = {
            s.key: sweep_rows(
                claim,
                s,
                out,
                quick=quick,
                backend=backend,
                n_jobs=n_jobs,
                address=address,
                noise=noise,
            )
            for s in claim.sweeps
        }
        data[claim.name] = rows
        m = claim.analyse(rows)
        row = _row(claim, m, time.perf_counter() - start)
        results.append(row)
        if log is not None:
            print(
                f"{claim.name}: {row['verdict']} (measured {m.value:.3g} "
                f"[{m.ci_low:.3g}, {m.ci_high:.3g}], predicted {claim.predicted:g})",
                file=log,
                flush=True,
            )
    write_outputs(*_with_earlier(claims, results, out, quick), data, out, quick=quick)
    return results


def _with_earlier(
    claims: Sequence[Claim], results: list[dict[str, Any]], out: Path, quick: bool
) -> tuple[list[Claim], list[dict[str, Any]]]:
    """The claims and rows of this call plus those an earlier call wrote to ``out``.

    Re-running one claim must not drop the others from claims.csv and report.md; earlier rows
    are kept only for claims that are still registered (their figures are already on disk).
    """
    from dp_experts_env.evaluation.paper_claims import get_claims

    path = out / "claims.csv"
    if not path.exists():
        return list(claims), results
    done = {c.name for c in claims}
    with open(path, newline="") as handle:
        earlier = [r for r in csv.DictReader(handle) if r.get("claim") not in done]
    registry = {c.name: c for c in get_claims(quick=quick)}
    kept = [r for r in earlier if r.get("claim") in registry]
    for r in kept:
        for key in ("predicted", "tolerance", "measured", "ci_low", "ci_high", "seconds"):
            r[key] = float(r[key])
    merged = {c.name: c for c in [*(registry[r["claim"]] for r in kept), *claims]}
    order = [merged[name] for name in registry if name in merged]
    order += [c for c in claims if c.name not in registry]
    by_name = {r["claim"]: r for r in [*kept, *results]}
    return order, [by_name[c.name] for c in order]


def _row(claim: Claim, m: Measurement, seconds: float) -> dict[str, Any]:
    return {
        "claim": claim.name,
        "paper": claim.paper,
        "source": claim.source,
        "quantity": claim.quantity,
        "kind": claim.kind,
        "predicted": claim.predicted,
        "tolerance": claim.tolerance,
        "measured": m.value,
        "ci_low": m.ci_low,
        "ci_high": m.ci_high,
        "verdict": verdict(claim, m),
        "detail": m.detail,
        "seconds": round(seconds, 1),
    }


# ----------------------------------------------------------------------------- outputs
def write_outputs(
    claims: Sequence[Claim],
    results: Sequence[Mapping[str, Any]],
    data: Mapping[str, Mapping[str, pd.DataFrame]],
    out: Path,
    *,
    quick: bool,
) -> None:
    """claims.csv, one figure per claim and report.md (each written atomically)."""
    import io

    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=list(COLUMNS), lineterminator="\n")
    writer.writeheader()
    for r in results:
        writer.writerow({k: _fmt(r[k]) for k in COLUMNS})
    _write_text(out / "claims.csv", buf.getvalue())
    figures = out / "figures"
    figures.mkdir(exist_ok=True)
    for claim in claims:
        if claim.name in data:
            _figure(claim, data[claim.name], figures / f"{claim.name}.png")
    _write_text(out / "report.md", report_text(claims, results, quick=quick))


def _write_text(path: Path, text: str) -> None:
    write_atomic(path, lambda handle: handle.write(text))


def _fmt(value: Any) -> Any:
    if isinstance(value, float):
        return "nan" if math.isnan(value) else f"{value:.6g}"
    return value


def _figure(claim: Claim, rows: Mapping[str, pd.DataFrame], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(4.8, 3.4), layout="constrained")
    if claim.figure is not None:
        ax.set_ylabel(claim.figure(rows, ax))
        if claim.log_x:
            ax.set_xscale("log")
    else:
        _sweep_curves(claim, rows, ax)
    ax.set_xlabel(claim.x_label)
    ax.set_title(claim.name, fontsize=9)
    ax.legend(fontsize=7)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _sweep_curves(claim: Claim, rows: Mapping[str, pd.DataFrame], ax: Any) -> None:
    """The default figure: every sweep's mean +- s.e. of its metric against x."""
    for sweep in claim.sweeps:
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
    if all((rows[s.key][s.metric] > 0).all() for s in claim.sweeps):
        ax.set_yscale("log")
    ax.set_ylabel(claim.sweeps[0].metric.replace("_", " "))


def report_text(
    claims: Sequence[Claim], results: Sequence[Mapping[str, Any]], *, quick: bool
) -> str:
    """The report: a table of verdicts, then one paragraph and figure per claim."""
    by_name = {r["claim"]: r for r in results}
    lines = [
        "# Reproducing the papers' claims",
        "",
        "Generated by `dp-experts reproduce`"
        + (" --quick (smaller horizons and fewer seeds)" if quick else "")
        + ". Each claim is a statement of a paper (a rate exponent, a ratio, a flat line), an "
        "experiment on this suite's environments and learners, and a verdict: `holds` when the "
        "95% confidence interval of the measured quantity lies within the predicted band, "
        "`fails` when it lies outside, `inconclusive` when it straddles the band's edge. Slopes "
        "are least-squares fits of log mean regret against log x; their intervals bootstrap the "
        "seeds. A claim that does not hold is reported as measured, with the reason where it is "
        "known; nothing here is tuned to make a claim hold.",
        "",
        "| claim | paper | source | predicted | measured [95% CI] | verdict |",
        "|---|---|---|---|---|---|",
    ]
    for c in claims:
        r = by_name.get(c.name)
        if r is None:
            continue
        pred = _band(c)
        lines.append(
            f"| {c.name} | {c.paper} | {c.source} | {pred} | {r['measured']:.3g} "
            f"[{r['ci_low']:.3g}, {r['ci_high']:.3g}] | **{r['verdict']}** |"
        )
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
        lines.append(
            f"Measured {c.quantity}: {r['measured']:.3g} (95% CI [{r['ci_low']:.3g}, "
            f"{r['ci_high']:.3g}]) against the predicted band {_band(c)}: **{r['verdict']}**. "
            f"{r['detail']}."
        )
        if c.notes:
            lines += ["", c.notes]
        lines += ["", f"![{c.name}](figures/{c.name}.png)"]
    lines.append("")
    return "\n".join(lines)


def _band(c: Claim) -> str:
    """The predicted band as a reader checks it: ``<= 0.6``, ``>= 0.9`` or ``0 +- 0.1``."""
    if c.kind == "at_most":
        return f"<= {c.predicted + c.tolerance:.3g}"
    if c.kind == "at_least":
        return f">= {c.predicted - c.tolerance:.3g}"
    return f"{c.predicted:.3g} +- {c.tolerance:.3g}"


def results_key(config: Mapping[str, Any], agent: str, env_id: str) -> str:
    """Identity of a custom experiment's result: its configuration and the code it ran."""
    from dp_experts_env.evaluation.store import code_fingerprint

    return json.dumps(
        {"config": dict(config), "code": code_fingerprint(agent, env_id)}, sort_keys=True
    )


# ----------------------------------------------------------------------------- command line
def add_parser(sub: Any) -> None:
    """The ``reproduce`` subcommand (registered by :mod:`dp_experts_env.cli`)."""
    from dp_experts_env.evaluation.paper_claims import claim_names

    p = sub.add_parser(
        "reproduce",
        help="check the papers' claims (rates, thresholds) and write claims.csv and report.md",
        description="Run each named claim (all by default) as an experiment on the grid runner "
        "and judge it: holds / fails / inconclusive from the 95% interval of the measured "
        "quantity. Stored runs are reused, so an interrupted call resumes. Claims: "
        + ", ".join(claim_names()),
    )
    p.add_argument("claims", nargs="*", metavar="CLAIM", help="claim names (default: all)")
    p.add_argument("--quick", action="store_true", help="smaller horizons and fewer seeds")
    p.add_argument("--out", default=None, help="output folder (default results/reproduce)")
    p.add_argument(
        "--backend",
        default="local",
        choices=("serial", "local", "ray"),
        help="where cells run (default local: a process per core)",
    )
    p.add_argument("--jobs", type=int, default=None, help="worker processes (local backend)")
    p.add_argument("--address", default=None, help="Ray cluster address (default RAY_ADDRESS)")
    p.add_argument(
        "--noise",
        default=None,
        choices=("fast", "grid"),
        help="noise backend of every private learner (default: each learner's own, fast)",
    )


def cmd_reproduce(args: Any) -> int:
    """Run the ``reproduce`` subcommand; exit code 0 whatever the verdicts (they are results)."""
    import sys

    from dp_experts_env.evaluation.paper_claims import get_claims

    claims = get_claims(list(args.claims), quick=args.quick)
    out = Path(args.out or ("results/reproduce-quick" if args.quick else "results/reproduce"))
    rows = run_claims(
        claims,
        out,
        quick=args.quick,
        backend=args.backend,
        n_jobs=args.jobs,
        address=args.address,
        noise=args.noise,
        log=sys.stdout,
    )
    counts = {v: sum(r["verdict"] == v for r in rows) for v in ("holds", "fails", "inconclusive")}
    print(
        f"{len(rows)} claims: {counts['holds']} hold, {counts['fails']} fail, "
        f"{counts['inconclusive']} inconclusive -> {out / 'claims.csv'}, {out / 'report.md'}"
    )
    return 0
