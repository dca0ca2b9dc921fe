"""The ``dp-experts`` command (also ``python -m dp_experts_env``).

Subcommands: ``list``, ``run``, ``compare``, ``plot``, ``audit``. ``dp-experts compare`` with no
arguments runs the default comparison; ``dp-experts <command> --help`` explains each one.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

__all__ = ["main", "build_parser"]

#: Regrets a report can rank and draw (the pseudo-regrets where the env knows its means).
_METRICS = (
    "dynamic_regret",
    "static_regret",
    "per_round_best_regret",
    "static_pseudo_regret",
    "per_round_best_pseudo_regret",
)

_EPILOG = """examples:
  dp-experts list                                  what environments and learners exist
  dp-experts compare                               the default comparison (a few minutes)
  dp-experts compare grid.toml --out results/mine  your own grid (docs/grid.md)
  dp-experts compare --backend ray                 the same grid on Ray (RAY_ADDRESS for a cluster)
  dp-experts run svt-restart --epsilon 1 --seeds 5 --set window_grid=dyadic
  dp-experts plot results/default                  redraw figures from a results folder
  dp-experts audit noisy-clipped-hedge --epsilon 1 test a privacy claim empirically

A killed compare resumes where it stopped: re-run the same command with the same --out.
"""


def _parse_assignments(items: Sequence[str] | None, what: str) -> dict[str, Any]:
    """``key=value`` pairs; values are read as JSON when they parse, else kept as strings."""
    out: dict[str, Any] = {}
    for item in items or ():
        if "=" not in item:
            raise ValueError(f"{what} must look like key=value, got {item!r}")
        key, raw = item.split("=", 1)
        try:
            out[key.strip()] = json.loads(raw)
        except json.JSONDecodeError:
            out[key.strip()] = raw
    return out


def _add_run_options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--out",
        default=None,
        help="results folder, resumable (default: results/default for compare, the grid file's "
        "'output' or results/<grid name> for compare GRID, results/run-<agent> for run)",
    )
    p.add_argument(
        "--backend",
        choices=("local", "serial", "ray"),
        default="local",
        help="where cells run: local process pool (default), serial, or ray",
    )
    p.add_argument("--jobs", type=int, default=None, help="worker processes for --backend local")
    p.add_argument("--address", default=None, help="Ray cluster address (default RAY_ADDRESS)")
    p.add_argument(
        "--metric",
        default="dynamic_regret",
        choices=_METRICS,
        help="regret used for the ranking and figures",
    )
    p.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    p.add_argument("--no-figures", action="store_true", help="skip writing figures")


def build_parser() -> argparse.ArgumentParser:
    """The argument parser (exposed for tests and documentation)."""
    parser = argparse.ArgumentParser(
        prog="dp-experts",
        description="Private online learning with expert advice: environments, learners, "
        "comparisons across seeds and privacy levels, figures, and privacy audits.",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = parser.add_subparsers(dest="command", metavar="command")

    sub.add_parser("list", help="environment ids with their families; learners with claims")

    run = sub.add_parser(
        "run",
        help="one learner on one environment for n seeds",
        description="Run one learner on one environment and print a summary.",
    )
    run.add_argument("agent", help="learner name (see `dp-experts list`)")
    run.add_argument("--env", default="DPExperts-Shift-v0", help="environment id")
    run.add_argument("--seeds", type=int, default=5, help="number of seeds (default 5)")
    run.add_argument(
        "--epsilon",
        type=float,
        action="append",
        default=None,
        help="privacy level; repeat for several (private learners only)",
    )
    run.add_argument(
        "--set",
        action="append",
        metavar="KEY=VALUE",
        help="learner parameter, e.g. --set window_grid=dyadic",
    )
    run.add_argument(
        "--env-set",
        action="append",
        metavar="KEY=VALUE",
        help="environment parameter, e.g. --env-set horizon=5000",
    )
    _add_run_options(run)

    cmp_ = sub.add_parser(
        "compare",
        help="a grid of learners x envs x epsilons x seeds (default comparison with no grid)",
        description="Run a grid and write results, a ranked table and figures. With no grid "
        "file, run the default comparison: DPExperts-Shift-v0 (N=10, T=10,000, 4 shifts, gap "
        "0.3), the baselines and every private full-information learner, epsilon in "
        "{0.5, 2, 8, 32, inf}, 10 seeds.",
    )
    cmp_.add_argument("grid", nargs="?", default=None, help="grid TOML file (docs/grid.md)")
    cmp_.add_argument("--seeds", type=int, default=None, help="override the number of seeds")
    cmp_.add_argument(
        "--horizon", type=int, default=None, help="default grid only: horizon T (default 10000)"
    )
    cmp_.add_argument(
        "--epsilons", type=float, nargs="+", default=None, help="override the privacy levels"
    )
    cmp_.add_argument(
        "--agents", nargs="+", default=None, help="default grid only: restrict to these learners"
    )
    _add_run_options(cmp_)

    plot = sub.add_parser("plot", help="redraw figures from a results folder")
    plot.add_argument("results", help="results folder written by run/compare")
    plot.add_argument(
        "--metric",
        default="dynamic_regret",
        choices=_METRICS,
        help="regret drawn (default dynamic_regret)",
    )

    from dp_experts_env.evaluation.reproduce import add_parser as add_reproduce_parser

    add_reproduce_parser(sub)

    audit = sub.add_parser(
        "audit",
        help="empirical lower bound on a learner's epsilon (privacy audit)",
        description="Run the learner many times on two neighbouring loss sequences and report a "
        "Clopper-Pearson lower bound on epsilon; it fails when the bound exceeds the claim.",
    )
    audit.add_argument("agent", help="private learner name (see `dp-experts list`)")
    audit.add_argument("--epsilon", type=float, default=1.0, help="claimed epsilon (default 1)")
    audit.add_argument("--n-experts", type=int, default=4, help="experts N (default 4)")
    audit.add_argument("--horizon", type=int, default=8, help="rounds T (default 8)")
    audit.add_argument(
        "--n-runs",
        type=int,
        default=20_000,
        help="runs per side; more runs give a tighter bound (default 20000, at least 200)",
    )
    audit.add_argument(
        "--alpha", type=float, default=1e-3, help="1 - confidence of the bound (default 0.001)"
    )
    audit.add_argument("--seed", type=int, default=0, help="seed of the learner's runs")
    audit.add_argument("--set", action="append", metavar="KEY=VALUE", help="learner parameter")
    return parser


def _cmd_list() -> int:
    import gymnasium as gym

    import agents
    import dp_experts_env  # noqa: F401 - registers the env ids
    from dp_experts_env.adversaries import families
    from dp_experts_env.registration import ENVS

    print("Environments (gym.make(id, **kwargs)):")
    for entry in ENVS:
        gym.spec(entry.id)
        if entry.kind == "oco":  # continuous actions: its families live with its own adversary
            from dp_experts_env.adversaries.oco import OCO_FAMILIES as fam_names
        else:
            fam_names = families(entry.kind)
        fams = ", ".join(fam_names)
        print(f"  {entry.id:26s} {entry.feedback:6s} feedback; families: {fams}")
    print("\nLearners (agents.make(name, env=env, ...)); privacy claims as built at epsilon = 1:")
    for item in agents.available():
        print(f"  {item['name']:36s} {item['feedback']:6s} {_claim_line(item)}")
        print(f"  {'':36s} {'':6s} {item['summary']}")
    return 0


def _claim_line(item: dict[str, Any]) -> str:
    """A learner's privacy claim: what ``agent.privacy.summary()`` says for a small default game.

    The exact claim depends on the parameters (epsilon, delta, mode, accountant), so private
    learners are built at epsilon = 1 on N = 4 experts (K = 3 arms), T = 1000; a learner that
    needs more to be built falls back to the registry's description of its claim.
    """
    import agents

    if not item["private"]:
        return "not private"
    game: dict[str, Any] = {"n_experts": 4, "horizon": 1000, "epsilon": 1.0, "seed": 0}
    if item["feedback"] == "bandit":
        game["n_arms"] = 3
    try:
        line = agents.make(item["name"], **game).privacy.summary()
    except (TypeError, ValueError):
        return str(item["claim"])
    # The accountant's full derivation is in agent.privacy; a listing keeps its start.
    return line if len(line) <= 110 else line[:106].rstrip() + "...]"


def _print_aggregate(table: Any, n_envs: int, metric: str) -> None:
    """The aggregate.csv table (several envs and uniform play in the grid), if there is one.

    The IQM and mean over all runs of all envs of the normalised score 1 - regret / (uniform's
    mean regret on that env), each with a stratified-bootstrap 95% interval (rliable's
    definitions; see dp_experts_env.evaluation.stats).
    """
    import pandas as pd

    if table is None:
        return
    shown = table.copy()
    shown["epsilon"] = shown["epsilon"].map(lambda e: "-" if not math.isfinite(e) else f"{e:g}")
    print(f"\nacross {n_envs} envs: normalised score 1 - {metric} / uniform's")
    with pd.option_context("display.width", 200, "display.float_format", "{:.3f}".format):
        print(shown.to_string(index=False))


def _show_progress(args: argparse.Namespace) -> bool:
    """Progress unless --no-progress (off a terminal it is a line per tenth, not a redraw)."""
    return not args.no_progress


def _finish(frame: Any, out: Path, metric: str, figures: bool) -> None:
    import pandas as pd

    from dp_experts_env.evaluation.report import write_report

    report = write_report(frame, out, metric, figures=figures)
    if report["metric"] != metric:
        print(f"{metric} is not reported by these environments: using {report['metric']}")
    metric, table = report["metric"], report["summary"]
    shown = table.copy()
    shown["epsilon"] = shown["epsilon"].map(lambda e: "-" if not math.isfinite(e) else f"{e:g}")
    # A column with no value (the score when uniform play is not in the grid) says nothing.
    empty = [c for c in shown.columns if shown[c].isna().all()]
    with pd.option_context(
        "display.width", 200, "display.max_columns", 20, "display.float_format", "{:.2f}".format
    ):
        print(shown.drop(columns=["certified", *empty]).to_string(index=False))
    if any(c.startswith("score_vs_") for c in empty):
        print("(no score column: add uniform to the grid to score learners against it)")
    uncertified = table[~table["certified"]]
    if len(uncertified):
        print(
            "\nUNCERTIFIED privacy claims (mode='paper' reproductions):",
            ", ".join(sorted(uncertified["agent"].unique())),
        )
    _print_aggregate(report["aggregate"], frame["env"].nunique(), metric)
    if figures:
        print(f"\n{len(report['figures'])} figure files in {out / 'figures'}")
    print(f"results: {out / 'results.csv'}  table: {out / 'summary.csv'}")


def _cmd_run(args: argparse.Namespace) -> int:
    import agents
    from dp_experts_env._validation import check_epsilon
    from dp_experts_env.evaluation import AgentEntry, EnvEntry, Grid, run_grid

    for eps in args.epsilon or ():
        # names the flag the user typed, not the grid field; inf = the noise removed
        check_epsilon("--epsilon", eps, allow_inf=True)
    if args.epsilon and not agents.spec(args.agent).private:
        raise ValueError(
            f"--epsilon: {args.agent!r} is non-private, so it has no privacy level to set; "
            "drop --epsilon or pick a private learner (dp-experts list)"
        )
    agent = AgentEntry(args.agent, _parse_assignments(args.set, "--set"))
    env = EnvEntry(args.env, _parse_assignments(args.env_set, "--env-set"))
    grid = Grid(agents=[agent], envs=[env], epsilons=args.epsilon or [1.0], n_seeds=args.seeds)
    out = Path(args.out or f"results/run-{args.agent}")
    frame = run_grid(
        grid,
        out,
        backend=args.backend,
        n_jobs=args.jobs,
        address=args.address,
        progress=_show_progress(args),
        report=False,  # _finish writes the report for the chosen --metric
    )
    _finish(frame, out, args.metric, not args.no_figures)
    return 0


def _cmd_compare(args: argparse.Namespace) -> int:
    from dp_experts_env.evaluation import Grid, default_grid, run_grid

    if args.grid:
        if args.horizon is not None or args.agents is not None:
            raise ValueError("--horizon and --agents apply to the default grid only; edit the file")
        grid = Grid.from_toml(args.grid)
        if args.seeds is not None:
            grid.n_seeds = args.seeds
        if args.epsilons is not None:
            grid.epsilons = list(args.epsilons)
        grid.__post_init__()
        try:
            import tomllib
        except ModuleNotFoundError:  # pragma: no cover - Python 3.10
            import tomli as tomllib

        # The file may name its own results folder; --out still wins.
        declared = tomllib.loads(Path(args.grid).read_text()).get("output")
        if declared is not None and not isinstance(declared, str):
            raise ValueError(f"grid key 'output' must be a folder path string, got {declared!r}")
        out = Path(args.out or declared or f"results/{Path(args.grid).stem}")
    else:
        kwargs: dict[str, Any] = {}
        if args.horizon is not None:
            kwargs["horizon"] = args.horizon
        if args.seeds is not None:
            kwargs["seeds"] = args.seeds
        if args.epsilons is not None:
            kwargs["epsilons"] = args.epsilons
        grid = default_grid(agents=args.agents, **kwargs)
        out = Path(args.out or "results/default")
    frame = run_grid(
        grid,
        out,
        backend=args.backend,
        n_jobs=args.jobs,
        address=args.address,
        progress=_show_progress(args),
        report=False,  # _finish writes the report for the chosen --metric
    )
    _finish(frame, out, args.metric, not args.no_figures)
    return 0


def _cmd_plot(args: argparse.Namespace) -> int:
    from dp_experts_env.evaluation import make_figures
    from dp_experts_env.evaluation.store import load_results

    folder = Path(args.results)
    # Exactly the runs of the folder's manifest: never an earlier grid's or a temporary file.
    frame = load_results(folder)
    if args.metric not in frame.columns:
        raise ValueError(f"metric {args.metric!r} is not reported by these environments")
    paths = make_figures(frame, folder / "figures", args.metric)
    print(f"{len(paths)} figure files in {folder / 'figures'}")
    return 0


def _cmd_audit(args: argparse.Namespace) -> int:
    import numpy as np

    import agents
    from dp_experts_env._validation import check_int
    from dp_experts_env.privacy.audit import audit_agent

    # The neighbour differs in round T // 2; the audit holds n_runs x T actions and a T x N loss
    # matrix in memory, so the upper limits keep a typo from asking for terabytes.
    check_int("--horizon", args.horizon, minimum=1, maximum=1_000_000)
    check_int("--n-experts", args.n_experts, minimum=2, maximum=10_000)
    if not agents.spec(args.agent).private:  # unknown names raise, listing the learners
        private = [item["name"] for item in agents.available() if item["private"]]
        raise ValueError(
            f"agent {args.agent!r} is non-private, so it has no epsilon to audit; "
            f"pick a private learner: {', '.join(private)}"
        )
    # A public, fixed loss sequence and its worst-case neighbour: the middle round's vector
    # replaced by its complement (every coordinate moves by the full loss range).
    rng = np.random.default_rng(12345)
    losses = rng.integers(0, 2, size=(args.horizon, args.n_experts)).astype(float)
    neighbor = losses.copy()
    neighbor[args.horizon // 2] = 1.0 - neighbor[args.horizon // 2]
    params = _parse_assignments(args.set, "--set")
    if agents.spec(args.agent).feedback == "oco":
        # Continuous actions: d = --n-experts, gradients +-1/sqrt(d) per coordinate (||g|| = 1),
        # the middle one negated; events on half-spaces of the played points.
        from dp_experts_env.privacy.audit_oco import audit_oco_agent

        audit_agent = audit_oco_agent  # noqa: F811
        losses = (2.0 * losses - 1.0) / np.sqrt(args.n_experts)
        neighbor = losses.copy()
        neighbor[args.horizon // 2] *= -1.0
    result = audit_agent(
        args.agent,
        losses,
        neighbor,
        n_runs=args.n_runs,
        alpha=args.alpha,
        seed=args.seed,
        epsilon=args.epsilon,
        **params,
    )
    verdict = "PASSED" if result.passed else "FAILED"
    print(
        f"{args.agent}: claimed epsilon {result.claimed_epsilon:g}, empirical lower bound "
        f"{result.epsilon_lower_bound:.3f} at confidence {1 - args.alpha:g} -> {verdict}"
    )
    print(f"event: {result.event}")
    return 0 if result.passed else 1


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns the process exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 0
    try:
        if args.command == "list":
            return _cmd_list()
        if args.command == "run":
            return _cmd_run(args)
        if args.command == "compare":
            return _cmd_compare(args)
        if args.command == "plot":
            return _cmd_plot(args)
        if args.command == "reproduce":
            from dp_experts_env.evaluation.reproduce import cmd_reproduce

            return cmd_reproduce(args)
        return _cmd_audit(args)
    except (ValueError, TypeError) as err:
        print(f"dp-experts {args.command}: error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as err:
        # A sweep's interrupt says what was saved and how to resume; anything else says little.
        print(f"\ndp-experts {args.command}: {err or 'interrupted'}", file=sys.stderr)
        return 130
    except OSError as err:
        # Full disk, read-only or missing folder: one line, not a traceback.
        print(f"dp-experts {args.command}: error: {err}", file=sys.stderr)
        return 1
    except RuntimeError as err:
        from dp_experts_env.evaluation.store import SweepError

        if not isinstance(err, SweepError):
            raise
        print(f"dp-experts {args.command}: error: {err}", file=sys.stderr)
        return 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
