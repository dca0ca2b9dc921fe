"""``dp-experts reproduce``: run the papers' claims and write claims.csv, figures and report.md.

Each claim's sweeps and control run on the grid runner under ``OUT/runs/``; every claims.csv
row carries its claim's code version (:func:`claim_code_version`), and an earlier row of changed
code is dropped (docs/reproduce.md, "Code versions", "Base seeds and stability").
"""

from __future__ import annotations

import csv
import hashlib
import json
import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from dp_experts_env.evaluation.claim_gates import apply_gates, combine_seeds, holm_verdicts
from dp_experts_env.evaluation.claim_intervals import band_p_value
from dp_experts_env.evaluation.claim_report import (
    COLUMNS,
    band_text,
    control_name,
    verdict_counts,
    write_outputs,
    write_text,
)
from dp_experts_env.evaluation.claims import (
    Claim,
    Judgement,
    Measurement,
    Sweep,
    judge,
)
from dp_experts_env.evaluation.grid import AgentEntry, EnvEntry, Grid
from dp_experts_env.evaluation.store import loads, plain_dir, read_plain

__all__ = [
    "COLUMNS",
    "DEFAULT_BASE_SEEDS",
    "claim_code_version",
    "combine_seeds",
    "holm_verdicts",
    "run_claims",
    "stale_claims",
    "sweep_rows",
    "verdict_counts",
    "write_outputs",
]

#: The base seeds the command judges every claim at by default (``--seed K``: one).
DEFAULT_BASE_SEEDS = (0, 1, 2)
_FLOATS = (
    "p_value",
    "predicted",
    "tolerance",
    "measured",
    "ci_low",
    "ci_high",
    "control_measured",
    "control_ci_low",
    "control_ci_high",
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
    base_seed: int = 0,
) -> pd.DataFrame:
    """Final rows of one sweep with its ``x`` column (base seed K > 0: ``<sweep>@sK`` folders)."""
    import agents

    points, seeds = sweep.chosen(quick)
    if sweep.custom is not None:
        return _custom_rows(claim, sweep, out, points, seeds, base_seed)
    params = dict(sweep.agent_params)
    spec = agents.spec(sweep.agent)
    allowed = getattr(spec.cls, "noise_backends", None)
    if callable(getattr(spec.cls, "noise_backends_for", None)):  # depends on the parameters
        allowed = spec.cls.noise_backends_for(params)
    # A learner that refuses the backend keeps its own, as `compare --noise` does.
    if noise is not None and spec.private and (allowed is None or noise in allowed):
        params["noise"] = noise
    by_eps: dict[float | None, list] = {}
    for p in points:
        by_eps.setdefault(p.epsilon, []).append(p)
    run = {"backend": backend, "n_jobs": n_jobs, "address": address, "base_seed": base_seed}
    suffix = f"@s{base_seed}" if base_seed else ""
    labels = [_label(p.x) for p in points]
    if len(set(labels)) < len(labels) and len(by_eps) > 1:
        # Two points share an x (the env label): one grid per epsilon, as before.
        frames = []
        for eps, pts in by_eps.items():
            tag = "np" if eps is None else f"e{eps:g}"
            folder = out / "runs" / claim.name / f"{sweep.folder}-{tag}{suffix}"
            frames.append(_point_rows(sweep.agent, params, sweep.env_id, pts, seeds, folder, run))
        return pd.concat(frames, ignore_index=True)
    # One grid for the whole sweep (the same rows as one grid per epsilon, in less work).
    rows = _point_rows(
        sweep.agent, params, sweep.env_id, points, seeds,
        out / "runs" / claim.name / f"{sweep.folder}{suffix}", run,
    )  # fmt: skip
    # The order of one grid per epsilon (the analyses' bootstraps read rows in order).
    old = [_label(p.x) for pts in by_eps.values() for p in pts]
    rank = rows["env"].map({label: i for i, label in enumerate(old)}).to_numpy()
    return rows.iloc[np.argsort(rank, kind="stable")].reset_index(drop=True)


def _point_rows(
    agent: str,
    params: Mapping[str, Any],
    env_id: str,
    points: Sequence[Any],
    seeds: int,
    folder: Path,
    run: Mapping[str, Any],
) -> pd.DataFrame:
    """Final rows of ``points`` (each its env labelled by x at its epsilon), one grid."""
    from dp_experts_env.evaluation.sweep import final_rows, run_grid

    epsilons = list(dict.fromkeys(1.0 if p.epsilon is None else p.epsilon for p in points))
    run = dict(run)
    base_seed = int(run.pop("base_seed", 0))
    grid = Grid(
        base_seed=base_seed,
        agents=[AgentEntry(agent, params)],
        envs=[EnvEntry(env_id, dict(p.env_params), label=_label(p.x)) for p in points],
        epsilons=epsilons,
        n_seeds=seeds,
        n_record=2,
        # Each point's env at its own epsilon only (a cross product would play them all).
        pairs=(
            None
            if len(epsilons) == 1
            else [(_label(p.x), 1.0 if p.epsilon is None else p.epsilon) for p in points]
        ),
    )
    frame = run_grid(grid, folder, progress=False, report=False, **run)
    rows = final_rows(frame).copy()
    rows["x"] = rows["env"].map(_x_of)
    return rows


def _custom_rows(
    claim: Claim, sweep: Sweep, out: Path, points: tuple, seeds: int, base_seed: int = 0
) -> pd.DataFrame:
    """Rows of a custom sweep, reused while its configuration and code are unchanged."""
    config = {
        "agent": sweep.agent,
        "params": dict(sweep.agent_params),
        "env": sweep.env_id,
        "points": [[p.x, dict(p.env_params), p.epsilon] for p in points],
        "seeds": seeds,
    }
    if base_seed:
        config["base_seed"] = base_seed
    key = results_key(config, sweep.agent, sweep.env_id, claim=claim)
    folder = plain_dir(plain_dir(out / "runs") / claim.name)
    path = folder / f"{sweep.folder}-custom{f'@s{base_seed}' if base_seed else ''}.json"
    try:
        stored = loads(read_plain(path))  # deep nesting: a ValueError, the rows run again
        if stored.get("key") == key:
            return pd.DataFrame(stored["rows"])
    except (OSError, ValueError, KeyError, AttributeError):
        pass  # absent, unreadable, a planted link or stale: run again
    assert sweep.custom is not None
    rows = (
        sweep.custom(sweep, points, seeds, base_seed=base_seed)  # type: ignore[call-arg]
        if base_seed
        else sweep.custom(sweep, points, seeds)
    )
    write_text(path, json.dumps({"key": key, "rows": rows.to_dict(orient="list")}))
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
    agent: str | None = None,
    agent_params: Mapping[str, Any] | None = None,
    base_seeds: Sequence[int] = (0,),
) -> list[dict[str, Any]]:
    """Run each claim's experiment, its control and the analysis; write the outputs.

    Args:
        claims: the claims to run.
        out: output folder (results under ``out/runs``, reused by a later call).
        quick: the claims' quick sizes.
        backend: where cells run (``serial``, ``local``, ``ray``).
        n_jobs: worker processes of the local backend.
        address: Ray cluster address.
        noise: noise backend of every private learner (None: each learner's own).
        log: a stream for one line per claim (None: silent).
        agent: a registered learner to put in every claim's learner role (None: the claim's own).
        agent_params: its keywords.
        base_seeds: the root seeds; the verdicts at each are combined (:func:`combine_seeds`).

    Returns:
        The claims.csv rows of these claims.
    """
    from dp_experts_env.evaluation.store import forget_fingerprints

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    forget_fingerprints()  # code versions of the code on disk now
    results: list[dict[str, Any]] = []
    data: dict[str, tuple[Mapping[str, pd.DataFrame], Mapping[str, pd.DataFrame] | None]] = {}
    run = {
        "quick": quick,
        "backend": backend,
        "n_jobs": n_jobs,
        "address": address,
        "noise": noise,
    }
    chosen_claims = []
    from dp_experts_env.evaluation.backends import shared_pool

    base_seeds = _check_base_seeds(base_seeds)
    with shared_pool():
        for claim in claims:
            start = time.perf_counter()
            tested = claim if agent is None else claim.with_learner(agent, agent_params)
            chosen_claims.append(tested)
            # The control runs at the first base seed only (docs/reproduce.md, "Base seeds and
            # stability").
            judged = [_judge_at(claim, tested, out, run, base_seed=base_seeds[0], quick=quick)]
            judged += [
                _judge_at(
                    claim, tested, out, run, base_seed=k, quick=quick,
                    control_rows=judged[0].control_rows,
                )
                for k in base_seeds[1:]
            ]  # fmt: skip
            first = judged[0]
            m, mc, control_judgement = first.m, first.mc, first.control_judgement
            judgement = combine_seeds(base_seeds, [j.judgement for j in judged])
            data[claim.name] = (first.rows, first.control_rows)
            row = _row(tested, m, judgement, mc, control_judgement, time.perf_counter() - start)
            row["privacy"] = first.privacy
            row["code"] = claim_code_version(tested)
            row["mode"] = "quick" if quick else "full"
            row["seeds"] = " ".join(str(k) for k in base_seeds)
            row["p_value"] = band_p_value(
                tested.kind,
                tested.predicted - tested.tolerance,
                tested.predicted + tested.tolerance,
                judgement.verdict,
                value=m.value,
                se=m.se,
                df=m.df,
                draws=m.draws,
            )
            row["seed_verdicts"] = "; ".join(
                f"{k}: {j.judgement.verdict} {j.m.value:.3g} [{j.m.ci_low:.3g}, {j.m.ci_high:.3g}]"
                for k, j in zip(base_seeds, judged, strict=True)
            )
            results.append(row)
            if log is not None:
                control_text = (
                    f"; control {claim.control.agent} {mc.value:.3g} -> {control_judgement.verdict}"
                    if mc is not None and claim.control is not None and control_judgement
                    else ""
                )
                seeds_text = f"; base seeds {row['seed_verdicts']}" if len(base_seeds) > 1 else ""
                print(
                    f"{claim.name}: {row['verdict']} (measured {m.value:.3g} "
                    f"[{m.ci_low:.3g}, {m.ci_high:.3g}], predicted {band_text(claim)}{control_text}"
                    f"{seeds_text})",
                    file=log,
                    flush=True,
                )
    write_outputs(
        *_with_earlier(chosen_claims, results, out, quick, log), data, out, quick=quick,
        base_seeds=base_seeds,
    )  # fmt: skip
    return results


@dataclass(frozen=True)
class _Judged:
    """One base seed's run of a claim: rows, measurements, the verdict after the gates."""

    rows: Mapping[str, pd.DataFrame]
    control_rows: Mapping[str, pd.DataFrame] | None
    m: Measurement
    mc: Measurement | None
    judgement: Judgement
    control_judgement: Judgement | None
    privacy: str


def _judge_at(
    claim: Claim,
    tested: Claim,
    out: Path,
    run: Mapping[str, Any],
    *,
    base_seed: int,
    quick: bool,
    control_rows: Mapping[str, pd.DataFrame] | None = None,
) -> _Judged:
    """Run and judge ``tested`` at one base seed (``control_rows``: another seed's, not re-run)."""
    rows = {s.key: sweep_rows(tested, s, out, base_seed=base_seed, **run) for s in tested.sweeps}
    m = tested.analyse(rows)
    mc = None
    ratios: dict[float, float] | None = None
    if claim.control is not None:
        control = claim.with_learner(claim.control.agent, claim.control.params)
        if control_rows is None:
            control_rows = {
                s.key: sweep_rows(control, s, out, base_seed=base_seed, **run)
                for s in control.sweeps
            }
        mc = control.analyse(control_rows)
        ratios = learner_ratios(tested, rows, control_rows)
    bounds = explicit_bounds(tested, quick)
    judgement, privacy = apply_gates(
        tested, judge(tested, m, mc, ratios, bounds), rows, quick=quick
    )
    control_judgement = (
        judge(tested, mc, mc, dict.fromkeys(ratios, 1.0) if ratios else None, bounds)
        if mc is not None
        else None
    )
    return _Judged(rows, control_rows, m, mc, judgement, control_judgement, privacy)


def _check_base_seeds(base_seeds: Sequence[int]) -> tuple[int, ...]:
    seeds = tuple(base_seeds)
    if not seeds or any(
        isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 0 for k in seeds
    ):
        raise ValueError(f"base_seeds must be non-negative ints (at least one), got {base_seeds!r}")
    if len(set(seeds)) != len(seeds):
        raise ValueError(f"base_seeds must be distinct, got {base_seeds!r}")
    return tuple(int(k) for k in seeds)


def _role_means(claim: Claim, rows: Mapping[str, pd.DataFrame]) -> pd.Series | None:
    """Mean of the first learner sweep's metric per x."""
    roles = claim.roles()
    if not roles:
        return None
    sweep = next(s for s in claim.sweeps if s.key == roles[0])
    frame = rows[sweep.key]
    if sweep.metric not in frame.columns:
        return None
    return frame.groupby("x")[sweep.metric].mean()


def learner_ratios(
    claim: Claim, rows: Mapping[str, pd.DataFrame], control_rows: Mapping[str, pd.DataFrame]
) -> dict[float, float] | None:
    """``{x: learner's mean regret / the control's}``; None without a learning gate or level."""
    if claim.learning_fraction is None:
        return None
    mine, theirs = _role_means(claim, rows), _role_means(claim, control_rows)
    if mine is None or theirs is None:
        return None
    both = pd.concat([mine, theirs], axis=1, keys=["a", "b"]).dropna()
    if both.empty or (both["b"] <= 0).any():
        return None
    return {float(x): float(r["a"] / r["b"]) for x, r in both.iterrows()}


def explicit_bounds(claim: Claim, quick: bool) -> dict[float, tuple[float, float]] | None:
    """``{x: (the paper's explicit bound, the trivial bound)}`` at the learner's points."""
    if claim.explicit_bound is None or not claim.roles():
        return None
    sweep = next(s for s in claim.sweeps if s.key == claim.roles()[0])
    points, _ = sweep.chosen(quick)
    return {float(p.x): claim.explicit_bound(p) for p in points}


def _with_earlier(
    claims: Sequence[Claim],
    results: list[dict[str, Any]],
    out: Path,
    quick: bool,
    log: Any = None,
) -> tuple[list[Claim], list[dict[str, Any]]]:
    """This call's claims and rows plus earlier, registered and current ones (others logged)."""
    from dp_experts_env.evaluation.paper_claims import get_claims

    earlier = _earlier_rows(out)
    if earlier is None:
        return list(claims), results
    done = {c.name for c in claims}
    earlier = [r for r in earlier if r.get("claim") not in done]
    mode = "quick" if quick else "full"
    other = [r.get("claim", "") for r in earlier if r.get("mode") != mode]
    if other and log is not None:
        print(
            f"dropped the earlier verdicts of {', '.join(other)} from claims.csv: they were of "
            f"another mode than this {mode} run (or unlabelled); a folder holds one mode's "
            "verdicts (run them again in this mode, or use another --out)",
            file=log,
            flush=True,
        )
    earlier = [r for r in earlier if r.get("mode") == mode]
    registry = {c.name: c for c in get_claims(quick=quick)}
    kept = [r for r in earlier if r.get("claim") in registry]
    kept = [r for r in kept if all(r.get(k) is not None for k in COLUMNS)]  # an older format
    stale = [
        r["claim"]
        for r in kept
        if r.get("code") != claim_code_version(_as_run(registry[r["claim"]], r))
    ]
    if stale and log is not None:
        print(
            f"dropped the earlier verdicts of {', '.join(stale)} from claims.csv: their code "
            "changed since they ran (run them again to get current verdicts)",
            file=log,
            flush=True,
        )
    kept = [r for r in kept if r["claim"] not in stale]
    for r in kept:
        for key in _FLOATS:
            r[key] = float(r[key])
    merged = {c.name: c for c in [*(_as_run(registry[r["claim"]], r) for r in kept), *claims]}
    order = [merged[name] for name in registry if name in merged]
    order += [c for c in claims if c.name not in registry]
    by_name = {r["claim"]: r for r in [*kept, *results]}
    return order, [by_name[c.name] for c in order]


def _as_run(claim: Claim, row: Mapping[str, Any]) -> Claim:
    """The registered claim with the learner an earlier row tested (``--agent``) in its role."""
    roles = claim.roles()
    own = next((s.agent for s in claim.sweeps if roles and s.key == roles[0]), "")
    if not row.get("learner") or row["learner"] == own:
        return claim
    try:
        return claim.with_learner(str(row["learner"]))
    except ValueError:
        return claim


def _row(
    claim: Claim,
    m: Measurement,
    judgement: Judgement,
    mc: Measurement | None,
    control: Judgement | None,
    seconds: float,
) -> dict[str, Any]:
    roles = claim.roles()
    learner = next((s.agent for s in claim.sweeps if roles and s.key == roles[0]), "")
    nan = math.nan
    return {
        "claim": claim.name,
        "paper": claim.paper,
        "source": claim.source,
        "learner": learner,
        "quantity": claim.quantity,
        "kind": claim.kind,
        "predicted": claim.predicted,
        "tolerance": claim.tolerance,
        "measured": m.value,
        "ci_low": m.ci_low,
        "ci_high": m.ci_high,
        "verdict": judgement.verdict,
        "reason": judgement.reason,
        "control": control_name(claim),
        "control_measured": mc.value if mc is not None else nan,
        "control_ci_low": mc.ci_low if mc is not None else nan,
        "control_ci_high": mc.ci_high if mc is not None else nan,
        "control_verdict": control.verdict if control is not None else "",
        "detail": m.detail,
        "privacy": "",
        "seconds": round(seconds, 1),
    }


def results_key(
    config: Mapping[str, Any], agent: str, env_id: str, *, claim: Claim | None = None
) -> str:
    """A custom experiment's result identity: its configuration and code (learner, env, claim)."""
    from dp_experts_env.evaluation.store import code_fingerprint

    code = dict(code_fingerprint(agent, env_id))
    if claim is not None:
        code["claim"] = claim_code_version(claim)
    return json.dumps({"config": dict(config), "code": code}, sort_keys=True)


#: Evaluation modules a claim's rows and verdict depend on (tables, figures, the sweep machinery
#: and the CLI do not change a verdict).
_CLAIM_MODULES = frozenset(
    {
        "dp_experts_env.evaluation.claims",
        "dp_experts_env.evaluation.claim_analyses",
        "dp_experts_env.evaluation.claim_gates",
        "dp_experts_env.evaluation.claim_intervals",
        "dp_experts_env.evaluation.paper_claims",
        "dp_experts_env.evaluation.stats",
        "dp_experts_env.evaluation.episode",
        "dp_experts_env.evaluation.grid",
    }
)


def _claim_follows(name: str) -> bool:
    if name.startswith("dp_experts_env.evaluation.papers"):
        return True  # the papers' claims (data) and their shared helpers
    if name.startswith("dp_experts_env.evaluation"):
        return name in _CLAIM_MODULES
    return name.startswith(("agents.", "dp_experts_env.")) and name != "dp_experts_env.cli"


def claim_code_version(claim: Claim) -> str:
    """A 16-hex-digit SHA-256 of the code that decides a claim's rows and verdict.

    Over the modules of its analysis, figure and custom experiments, the project modules they
    import (:data:`_CLAIM_MODULES` of this package), and every sweep's learner and env code.
    """
    from dp_experts_env.evaluation.paper_claims import paper_modules
    from dp_experts_env.evaluation.store import code_fingerprint, module_fingerprint

    # Every paper's module: a claim's sweeps and constants are data there.
    roots = set(_CLAIM_MODULES) | {m.__name__ for m in paper_modules()}
    for fn in (claim.analyse, claim.figure, *(s.custom for s in claim.sweeps)):
        module = getattr(fn, "__module__", None)
        if isinstance(module, str):
            roots.add(module)
    parts = [module_fingerprint(sorted(roots), _claim_follows)]
    for sweep in claim.sweeps:
        parts.append(json.dumps(code_fingerprint(sweep.agent, sweep.env_id), sort_keys=True))
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]


def _earlier_rows(out: Path) -> list[dict[str, Any]] | None:
    """Rows of ``out/claims.csv`` (None when there is none); never read through a link."""
    import io

    try:
        text = read_plain(out / "claims.csv").decode()
    except FileNotFoundError:
        return None
    return list(csv.DictReader(io.StringIO(text)))


def stale_claims(out: str | Path) -> dict[str, str]:
    """``{claim: reason}`` of ``out/claims.csv``'s rows of a stale code version (per ``mode``)."""
    from dp_experts_env.evaluation.paper_claims import get_claims

    rows = _earlier_rows(Path(out)) or []
    registries = {quick: {c.name: c for c in get_claims(quick=quick)} for quick in (False, True)}
    out_of_date: dict[str, str] = {}
    for r in rows:
        name = r.get("claim", "")
        registry = registries[r.get("mode") == "quick"]
        if name not in registry:
            out_of_date[name] = "no longer registered"
        elif r.get("code") != claim_code_version(_as_run(registry[name], r)):
            out_of_date[name] = "code changed since its verdict"
    return out_of_date


def add_parser(sub: Any) -> None:
    """The ``reproduce`` subcommand (registered by :mod:`dp_experts_env.cli`)."""
    from dp_experts_env.evaluation.paper_claims import claim_names

    p = sub.add_parser(
        "reproduce",
        help="check the papers' claims (rates, thresholds) and write claims.csv and report.md",
        description="Run each named claim (all by default) as an experiment on the grid runner "
        "and judge it against a no-learning control run on the same loss streams: holds / "
        "fails / burn-in / vacuous / inconclusive (docs/reproduce.md). Stored runs are reused, "
        "so an interrupted call resumes. Claims: " + ", ".join(claim_names()),
    )
    p.add_argument("claims", nargs="*", metavar="CLAIM", help="claim names (default: all)")
    p.add_argument("--quick", action="store_true", help="smaller horizons and fewer seeds")
    p.add_argument(
        "--seed",
        type=int,
        default=None,
        metavar="K",
        help="judge at this one base seed (default: at the three base seeds "
        f"{', '.join(map(str, DEFAULT_BASE_SEEDS))}, a verdict that differs between them being "
        "'unstable')",
    )
    p.add_argument(
        "--agent",
        default=None,
        metavar="NAME",
        help="put this registered learner in every chosen claim's learner role (its default "
        "keywords); the claim's control and references stay (default: the claim's own learner)",
    )
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
    if args.agent is not None:
        import agents

        agents.spec(args.agent)  # a clear error for an unknown name
    default = "results/reproduce-quick" if args.quick else "results/reproduce"
    if args.agent is not None:
        default += f"-{args.agent}"  # never mixes with the claims' own learners' verdicts
    out = Path(args.out or default)
    if args.seed is not None and args.seed < 0:
        raise ValueError(f"--seed must be a non-negative int, got {args.seed}")
    base_seeds = DEFAULT_BASE_SEEDS if args.seed is None else (args.seed,)
    rows = run_claims(
        claims,
        out,
        base_seeds=base_seeds,
        quick=args.quick,
        backend=args.backend,
        n_jobs=args.jobs,
        address=args.address,
        noise=args.noise,
        log=sys.stdout,
        agent=args.agent,
    )
    print(
        verdict_counts([(r["claim"], r["verdict"]) for r in rows])
        + f" -> {out / 'claims.csv'}, {out / 'report.md'}"
    )
    return 0
