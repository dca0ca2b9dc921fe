"""End to end: CPU time of the default comparison, against an earlier revision in the same run.

``python benchmarks/end_to_end.py`` runs ``python -m dp_experts_env compare`` (the default
grid: DPExperts-Shift-v0, N = 10, T = 10^4, S = 4, every baseline and private full-information
learner, epsilon in {0.5, 2, 8, 32, inf}, 10 seeds; the default ``local`` backend, figures
included) into a temporary folder and reports its CPU time: user + system time of the command
and every process it waited for (its pool workers), read from ``os.wait4``. Wall time and peak
RSS are printed too, but wall time on a shared machine measures the other jobs as much as ours.

``--against REV`` also checks out REV (any git revision) into a temporary git worktree under
/tmp and runs the *same* command there, alternating between the two trees (``--repeats`` pairs,
in the order HEAD, REV, REV, HEAD, HEAD, REV, ... so neither always goes first). The ratio is the
median over pairs of CPU(HEAD) / CPU(REV), both measured minutes apart at most. The rows both
trees wrote (``results.csv``) are compared exactly: which learners' rows are bit for bit equal
and which differ (a learner whose random stream changed on purpose).

Without ``--against`` it also times each learner's cells alone, in this process (CPU time per
learner, its own loss stream included), for the table of where the time goes.

``--quick``: T = 1000, 3 seeds. ``--smoke``: T = 100, 2 seeds, hedge only, no figures.
``--breakdown`` / ``--no-breakdown`` force the per-learner table on or off.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import ROOT, child_env, parse_args, table, write_json  # noqa: E402


def compare_args(args: argparse.Namespace) -> list[str]:
    """Arguments of ``dp_experts_env compare`` for the chosen size."""
    if args.smoke:
        return ["--horizon", "100", "--seeds", "2", "--epsilons", "1", "--agents", "hedge",
                "--no-figures"]  # fmt: skip
    if args.quick:
        return ["--horizon", "1000", "--seeds", "3"]
    return []


def run_compare(tree: Path, extra: list[str]) -> dict:
    """Run the compare command of ``tree`` once; CPU seconds of it and its waited-for children."""
    out = Path(tempfile.mkdtemp(prefix="e2e-out-", dir="/tmp"))
    command = [sys.executable, "-m", "dp_experts_env", "compare", "--out", str(out)]
    command += ["--no-progress", *extra]
    start = time.perf_counter()
    proc = subprocess.Popen(
        command,
        cwd=tree,
        env=child_env(tree),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    stderr = proc.stderr.read() if proc.stderr else ""
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        shutil.rmtree(out, ignore_errors=True)
        raise RuntimeError(f"compare failed in {tree} (exit {proc.returncode}):\n{stderr}")
    return {
        "cpu_seconds": usage.ru_utime + usage.ru_stime,
        "wall_seconds": wall,
        "peak_rss_mb": usage.ru_maxrss / 1024.0,
        "results": out / "results.csv",
        "out": out,
    }


def compare_rows(head_csv: Path, rev_csv: Path) -> dict:
    """Which learners' rows are equal bit for bit between two results.csv files."""
    import pandas as pd

    keys = ["agent", "env", "epsilon", "seed", "round"]
    metrics = ["cumulative_loss", "static_regret", "dynamic_regret", "per_round_best_regret"]
    metrics += ["pseudo_regret", "epsilon_certified", "certified", "private"]

    def load(path: Path) -> pd.DataFrame:
        # The text as written (pandas writes the shortest repr that reads back the same
        # double): equal text is equal floats, with no parser rounding in between.
        frame = pd.read_csv(path, dtype=str, keep_default_na=False)
        return frame.sort_values(keys).reset_index(drop=True)

    head, rev = load(head_csv), load(rev_csv)
    equal, differ = [], []
    for agent in sorted(set(head["agent"]) | set(rev["agent"])):
        a = head[head["agent"] == agent].reset_index(drop=True)
        b = rev[rev["agent"] == agent].reset_index(drop=True)
        cols = [c for c in metrics if c in a.columns and c in b.columns]
        same = len(a) == len(b) and a[keys].equals(b[keys]) and a[cols].equals(b[cols])
        (equal if same else differ).append(agent)
    return {"rows": len(head), "identical_learners": equal, "different_learners": differ}


def add_worktree(rev: str) -> Path:
    """A detached git worktree of ``rev`` under /tmp (removed by :func:`remove_worktree`)."""
    parent = Path(tempfile.mkdtemp(prefix="e2e-rev-", dir="/tmp"))
    path = parent / "tree"
    subprocess.run(
        ["git", "-C", str(ROOT), "worktree", "add", "--detach", str(path), rev],
        check=True,
        capture_output=True,
        text=True,
    )
    return path


def remove_worktree(path: Path) -> None:
    subprocess.run(
        ["git", "-C", str(ROOT), "worktree", "remove", "--force", str(path)],
        check=False,
        capture_output=True,
    )
    shutil.rmtree(path.parent, ignore_errors=True)


def breakdown(args: argparse.Namespace) -> tuple[list[dict], list[dict]]:
    """CPU seconds per learner: each learner's cells played alone, in this process."""
    from dp_experts_env.evaluation import default_grid
    from dp_experts_env.evaluation.episode import run_cells

    if args.smoke:
        grid = default_grid(horizon=100, seeds=2, epsilons=(1.0,), agents=["hedge"])
    elif args.quick:
        grid = default_grid(horizon=1000, seeds=3)
    else:
        grid = default_grid()
    per_cell, by_agent = [], {}
    for cell in grid.cells():
        start = time.process_time()
        run_cells([cell])
        seconds = time.process_time() - start
        per_cell.append({"agent": cell.agent.display, "epsilon": cell.epsilon, "seconds": seconds})
        by_agent[cell.agent.display] = by_agent.get(cell.agent.display, 0.0) + seconds
    total = sum(by_agent.values())
    rows = sorted(
        ({"agent": a, "cpu_seconds": s, "share": s / total} for a, s in by_agent.items()),
        key=lambda r: -r["cpu_seconds"],
    )
    return rows, per_cell


def main(argv: list[str] | None = None) -> dict:
    extra = argparse.ArgumentParser(add_help=False)
    extra.add_argument("--against", default=None, help="git revision to compare HEAD with")
    extra.add_argument("--repeats", type=int, default=3, help="runs per tree (default 3)")
    extra.add_argument("--breakdown", dest="breakdown", action="store_true", default=None)
    extra.add_argument("--no-breakdown", dest="breakdown", action="store_false")
    known, rest = extra.parse_known_args(argv if argv is not None else sys.argv[1:])
    args = parse_args(__doc__.splitlines()[0], rest)
    repeats = 1 if args.smoke else max(1, known.repeats)
    cmd_args = compare_args(args)

    trees = {"HEAD": ROOT}
    rev_tree = None
    if known.against:
        rev_tree = add_worktree(known.against)
        trees[known.against] = rev_tree
    runs: dict[str, list[dict]] = {name: [] for name in trees}
    try:
        names = list(trees)
        for i in range(repeats):
            order = names if i % 2 == 0 else names[::-1]
            for name in order:
                run = run_compare(trees[name], cmd_args)
                runs[name].append(run)
                print(
                    f"  {name:>10s} run {i + 1}: CPU {run['cpu_seconds']:7.2f} s  wall "
                    f"{run['wall_seconds']:7.2f} s  peak RSS {run['peak_rss_mb']:.0f} MB",
                    flush=True,
                )
        rows_check = None
        if known.against:
            rows_check = compare_rows(
                runs["HEAD"][0]["results"], runs[known.against][0]["results"]
            )
    finally:
        for name_runs in runs.values():
            for run in name_runs:
                shutil.rmtree(run["out"], ignore_errors=True)
        if rev_tree is not None:
            remove_worktree(rev_tree)

    def summary(name: str) -> dict:
        cpu = [r["cpu_seconds"] for r in runs[name]]
        return {
            "cpu_seconds": cpu,
            "cpu_median": statistics.median(cpu),
            "wall_seconds": [r["wall_seconds"] for r in runs[name]],
            "peak_rss_mb": max(r["peak_rss_mb"] for r in runs[name]),
        }

    trees_out = {name: summary(name) for name in trees}
    command = "python -m dp_experts_env compare " + " ".join(cmd_args)
    print(f"\ncommand: {command.strip()}")
    for name, s in trees_out.items():
        cpus = ", ".join(f"{c:.1f}" for c in s["cpu_seconds"])
        print(f"{name:>10s}: CPU median {s['cpu_median']:.1f} s ({cpus}); peak RSS "
              f"{s['peak_rss_mb']:.0f} MB")  # fmt: skip
    against = None
    if known.against:
        ratios = [
            h["cpu_seconds"] / r["cpu_seconds"]
            for h, r in zip(runs["HEAD"], runs[known.against], strict=True)
        ]
        against = {
            "revision": known.against,
            "pair_ratios": ratios,
            "ratio_median": statistics.median(ratios),
            "rows": rows_check,
        }
        print(
            f"CPU(HEAD) / CPU({known.against}): median {against['ratio_median']:.3f} over "
            f"{len(ratios)} pairs ({', '.join(f'{r:.3f}' for r in ratios)})"
        )
        if rows_check is not None:
            print(
                f"rows: {len(rows_check['identical_learners'])} learners bit for bit equal; "
                f"different: {', '.join(rows_check['different_learners']) or 'none'}"
            )

    want_breakdown = known.breakdown if known.breakdown is not None else not known.against
    per_agent, per_cell = [], []
    if want_breakdown:
        per_agent, per_cell = breakdown(args)
        print("\nper learner, each alone in this process (CPU seconds):")
        print(table(per_agent, ["agent", "cpu_seconds", "share"]))

    payload = {
        "command": command.strip(),
        "repeats": repeats,
        "trees": trees_out,
        "command_cpu_seconds": trees_out["HEAD"]["cpu_median"],
        "peak_rss_mb": trees_out["HEAD"]["peak_rss_mb"],
        "against": against,
        "n_cells": len(per_cell),
        "per_agent": per_agent,
        "per_cell": per_cell,
    }
    path = write_json("end_to_end", payload, args.out)
    print(f"\nwrote {path}")
    return payload


if __name__ == "__main__":
    main()
