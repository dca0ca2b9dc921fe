"""The ``dp-experts`` command (also ``python -m dp_experts_env``).

Subcommands: ``list``, ``run``, ``compare``, ``plot``, ``verify``, ``reproduce``, ``audit``,
``attack``. ``dp-experts compare`` with no arguments runs the default comparison;
``dp-experts <command> --help`` explains each one.
"""

from __future__ import annotations

import argparse
import errno
import math
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

# The parser lives below every command (attack/command.py reads it too).
from dp_experts_env.assignments import parse_assignments as _parse_assignments

__all__ = ["main", "build_parser", "parser_for", "OWN_COMMANDS", "add_noise_option", "apply_noise"]

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
  dp-experts plot archive/run1 --out figs/run1     ... of a read-only folder, into another one
  dp-experts verify results/default                is every stored run current? (read only)
  dp-experts audit noisy-clipped-hedge --epsilon 1 test a privacy claim empirically
  dp-experts compare --noise grid                  the default comparison on the lattice noise
                                                   (in results/default-noise-grid)
  dp-experts attack follow-the-leader              train an RL adversary against a learner

A killed compare resumes where it stopped: re-run the same command with the same --out.
"""


def add_noise_option(p: argparse.ArgumentParser) -> None:
    """``--noise {fast,grid}``: the noise backend of a grid's private learners."""
    from dp_experts_env.privacy.noise import BACKENDS

    p.add_argument(
        "--noise",
        choices=BACKENDS,
        default=None,
        help="noise backend of every private learner: 'fast' (float, simulation-grade) or "
        "'grid' (lattice Laplace, docs/privacy.md §1); learners whose privacy comes from "
        "sampling alone keep 'fast' and are named (default: each learner's own, 'fast')",
    )


def apply_noise(grid: Any, noise: str | None) -> list[str]:
    """Set ``noise`` on every private learner of ``grid`` that draws from a backend.

    Learners whose class's ``noise_backends`` refuse it keep their own and are returned; a grid
    entry that already sets another ``noise`` is an error. Non-private learners are left alone.

    Args:
        grid: an :class:`~dp_experts_env.evaluation.Grid` (its agent entries are replaced).
        noise: ``"fast"``, ``"grid"`` or None (leave the grid as it is).

    Returns:
        Names of the private learners left on their own backend.
    """
    import inspect

    import agents
    from dp_experts_env.evaluation import AgentEntry

    if noise is None:
        return []
    kept: list[str] = []
    entries = []
    for entry in grid.agents:
        spec = agents.spec(entry.name)
        accepts = "noise" in inspect.signature(spec.cls.__init__).parameters
        allowed = getattr(spec.cls, "noise_backends", None)
        if callable(getattr(spec.cls, "noise_backends_for", None)):  # depends on the parameters
            allowed = spec.cls.noise_backends_for(entry.params)
        if not spec.private or not accepts:
            entries.append(entry)
            continue
        if allowed is not None and noise not in allowed:
            kept.append(entry.name)
            entries.append(entry)
            continue
        given = entry.params.get("noise", noise)
        if given != noise:
            raise ValueError(
                f"--noise {noise}: the grid sets noise={given!r} for {entry.name!r}; "
                "drop one of them"
            )
        entries.append(AgentEntry(entry.name, {**entry.params, "noise": noise}, entry.label))
    grid.agents = entries
    grid.__post_init__()
    return kept


def _say_noise(noise: str | None, kept: list[str]) -> None:
    if noise is not None and kept:
        print(
            f"--noise {noise}: {', '.join(sorted(set(kept)))} keep their own sampler (their "
            "privacy comes from sampling probabilities, not a Laplace release; their claims say "
            "noise: fast)"
        )


def _add_run_options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--out",
        default=None,
        help="results folder, resumable (default: results/default for compare, the grid file's "
        "'output' or results/<grid name> for compare GRID, results/run-<agent> for run; "
        "'-noise-grid' appended with --noise grid)",
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
    _add_pdf_option(p)
    add_noise_option(p)


def _add_pdf_option(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--pdf",
        action="store_true",
        help="also save every figure as PDF (TrueType fonts; figures are PNG otherwise)",
    )


#: The commands whose parsers this module builds itself. A command line that starts with one of
#: them is parsed without the subparsers of ``reproduce`` and ``bench``, whose modules import
#: pandas and the claims (about 0.3 s of a fresh process that ``list`` or ``audit`` never needs):
#: the same arguments, help and errors, since the top-level usage names no command.
OWN_COMMANDS = ("list", "run", "compare", "plot", "verify", "audit")


def build_parser() -> argparse.ArgumentParser:
    """The argument parser (exposed for tests and documentation)."""
    return _build_parser(every_command=True)


def parser_for(argv: Sequence[str]) -> argparse.ArgumentParser:
    """The parser :func:`main` uses for ``argv``: every command's, or only this module's own.

    Only this module's own commands (:data:`OWN_COMMANDS`) when ``argv`` starts with one of
    them; the whole parser otherwise (no command, top-level help, another or a mistyped command).
    """
    own = bool(argv) and argv[0] in OWN_COMMANDS
    return _build_parser(every_command=not own)


def _build_parser(*, every_command: bool) -> argparse.ArgumentParser:
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
    _add_pdf_option(plot)
    plot.add_argument(
        "--out",
        default=None,
        metavar="DIR",
        help="folder for the figures (default RESULTS/figures); the results folder is only "
        "read, so a read-only or archived folder can be re-plotted",
    )

    verify = sub.add_parser(
        "verify",
        help="check a results folder against the current code, without writing",
        description="Re-derive the key of every run of the folder's grid from the current code "
        "and list stale (other code, data or seeds), missing, foreign and damaged runs and "
        "manifest problems; for a reproduce folder, also claims.csv verdicts of changed code. "
        "Nothing is written. Exit code 0 when everything is current, 1 otherwise.",
    )
    verify.add_argument("results", help="results folder (compare/run) or reproduce folder")

    if every_command:  # their subparsers sit between verify and audit in the help
        from dp_experts_env.evaluation.reproduce import add_parser as add_reproduce_parser

        add_reproduce_parser(sub)

        from dp_experts_env.attack.command import add_parser as add_attack_parser

        add_attack_parser(sub)

        from dp_experts_env.bench.command import add_parser as add_bench_parser

        add_bench_parser(sub)

    audit = sub.add_parser(
        "audit",
        help="empirical lower bound on a learner's epsilon (privacy audit)",
        description="Search neighbouring loss sequences and public settings for the strongest\n"
        "evidence against a learner's privacy claim, then test the best event once on fresh\n"
        "runs: a Clopper-Pearson lower bound on epsilon. Exit code 1 on a violation (bound >\n"
        "claim); a pass says how large a violation the test could have detected\n"
        "(docs/privacy.md section 4).",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="examples:\n"
        "  dp-experts audit limited-updates\n"
        "  dp-experts audit noisy-clipped-hedge --mode paper --epsilon 2\n"
        "  dp-experts audit dp-ftrl-tree --multiplier 0.5   a weakened mutant (must be caught)\n",
    )
    audit.add_argument("agent", help="private learner name (see `dp-experts list`)")
    audit.add_argument(
        "--epsilon", type=float, default=1.0, help="epsilon the learner is built with"
    )
    audit.add_argument(
        "--mode", choices=("strict", "paper"), default=None, help="learner mode (default strict)"
    )
    audit.add_argument(
        "--runs",
        "--n-runs",
        dest="runs",
        type=int,
        default=None,
        help="test runs per side: more runs detect smaller violations (default: the chosen "
        "scenario's, 100000, or 200000 for the lazy learners' three-round games)",
    )
    audit.add_argument(
        "--selection-runs",
        type=int,
        default=None,
        help="runs per side for scoring each candidate scenario (default 4000; OCO learners 20000)",
    )
    audit.add_argument(
        "--pairs",
        type=int,
        default=None,
        help="search at most this many candidate scenarios (neighbouring pair x public "
        "settings; default all)",
    )
    audit.add_argument(
        "--time-budget",
        type=float,
        default=120.0,
        help="seconds for the search; the test of the best event always runs (default 120)",
    )
    audit.add_argument(
        "--alpha", type=float, default=1e-3, help="1 - confidence of the bound (default 0.001)"
    )
    audit.add_argument("--seed", type=int, default=0, help="audit seed (selection and test runs)")
    audit.add_argument(
        "--multiplier",
        type=float,
        default=1.0,
        help="audit a mutant: every noise draw times this factor, claim unchanged (0.5 halves "
        "the noise, 0 removes it; OCO learners: their noise_multiplier)",
    )
    audit.add_argument(
        "--noise",
        choices=("fast", "grid"),
        default=None,
        help="noise backend the learner runs with (default its own, 'fast')",
    )
    audit.add_argument(
        "--n-experts",
        type=int,
        default=None,
        help="one given pair instead of the search: N experts (arms), a random 0/1 sequence and "
        "its neighbour with the middle row complemented (OCO learners: the dimension, default 4)",
    )
    audit.add_argument(
        "--horizon", type=int, default=None, help="with --n-experts: rounds T (default 8)"
    )
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
    print(
        "\nLearners (agents.make(name, env=env, ...)): name, feedback, privacy claim as built at "
        "epsilon = 1;\nsummary; the paper it follows [where the code comes from]:"
    )
    from dp_experts_env.evaluation.table import SUITE_VARIANTS

    for item in agents.available():
        print(f"  {item['name']:36s} {item['feedback']:6s} {_claim_line(item)}")
        name = item["name"]  # the table's and figures' "(suite variant)", with its paper row
        variant = f" (suite variant; as printed: {name}:paper)" if name in SUITE_VARIANTS else ""
        print(f"  {'':36s} {'':6s} {item['summary']}{variant}")
        print(f"  {'':36s} {'':6s} {_source_line(item)}")
        if _undeclared(item):
            pad = " " * 46
            print(f"{pad}WARNING: declares no mechanisms (agent.declaration is None):")
            print(f"{pad}the audit can only run a generic search (docs/own_learner.md)")
    outside = sorted({i["source"] for i in agents.available() if i["source"] != "built-in"})
    if outside:
        print(f"\nOutside learners from: {'; '.join(outside)}")
    return 0


def _source_line(item: dict[str, Any], width: int = 110) -> str:
    """``source: <the paper, shortened> [built-in | package NAME VERSION | plug-in module]``."""
    origin = f" [{item['source']}]"
    ref = item.get("reference") or "(no Source: in the docstring)"
    room = width - len(origin) - len("source: ")
    if len(ref) > room:
        ref = ref[: room - 3].rstrip() + "..."
    return f"source: {ref}{origin}"


def _undeclared(item: dict[str, Any]) -> bool:
    """A private learner whose ``declaration`` is None at epsilon 1 (its audit is generic only)."""
    from dp_experts_env.evaluation.audit import declaration_of

    return bool(item["private"]) and declaration_of(item["name"], {"epsilon": 1.0}) is None


def _claim_line(item: dict[str, Any]) -> str:
    """The learner's ``privacy.summary()`` at eps 1, N = 4 (K = 3), T = 1000, or the registry's."""
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
    """The aggregate.csv table: IQM and mean normalised scores with their 95% intervals."""
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


#: Errors that say the results folder cannot be written (read-only mount, no permission).
_READ_ONLY = (errno.EROFS, errno.EACCES, errno.EPERM)


def _finish(frame: Any, out: Path, metric: str, figures: bool, pdf: bool = False) -> None:
    from dp_experts_env.evaluation.report import (
        Report,
        aggregate_table,
        resolve_metric,
        write_report,
    )
    from dp_experts_env.evaluation.sweep import summarize

    try:
        report = write_report(frame, out, metric, figures=figures, pdf=pdf)
        written = True
    except OSError as err:
        # A complete read-only folder: run_grid read it; the table is computed, nothing written.
        if err.errno not in _READ_ONLY:
            raise
        chosen = resolve_metric(frame, metric)
        report = Report(
            metric=chosen,
            summary=summarize(frame, chosen),
            aggregate=aggregate_table(frame, chosen),
            figures=[],
        )
        written = False
    if report["metric"] != metric:
        print(f"{metric} is not reported by these environments: using {report['metric']}")
    metric, table = report["metric"], report["summary"]
    # The compact table (120 columns, ties marked); summary.csv keeps every column.
    from dp_experts_env.evaluation.table import terminal_table

    print(terminal_table(frame, table, metric))
    empty = [c for c in table.columns if table[c].isna().all()]
    if any(c.startswith("score_vs_") for c in empty):
        print("(no score column: add uniform to the grid to score learners against it)")
    uncertified = table[~table["certified"]]
    if len(uncertified):
        print(
            "\nUNCERTIFIED privacy claims (mode='paper' reproductions):",
            ", ".join(sorted(uncertified["agent"].unique())),
        )
    _print_aggregate(report["aggregate"], frame["env"].nunique(), metric)
    if not written:
        print(
            f"\n{out} is read-only: nothing written (the table above is computed from its "
            f"runs; `dp-experts plot {out} --out DIR` draws its figures elsewhere)"
        )
        return
    if figures:
        print(f"\n{len(report['figures'])} figure files in {out / 'figures'}")
    print(f"results: {out / 'results.csv'}  table: {out / 'summary.csv'}")


def _cmd_run(args: argparse.Namespace) -> int:
    import agents
    from dp_experts_env._validation import check_learner_epsilon
    from dp_experts_env.evaluation import AgentEntry, EnvEntry, Grid

    for eps in args.epsilon or ():
        # names the flag the user typed, not the grid field; inf = the noise removed
        check_learner_epsilon("--epsilon", eps)
    if args.epsilon and not agents.spec(args.agent).private:
        raise ValueError(
            f"--epsilon: {args.agent!r} is non-private, so it has no privacy level to set; "
            "drop --epsilon or pick a private learner (dp-experts list)"
        )
    agent = AgentEntry(args.agent, _parse_assignments(args.set, "--set"))
    env = EnvEntry(args.env, _parse_assignments(args.env_set, "--env-set"))
    grid = Grid(agents=[agent], envs=[env], epsilons=args.epsilon or [1.0], n_seeds=args.seeds)
    _say_noise(args.noise, apply_noise(grid, args.noise))
    return _run_and_finish(grid, Path(args.out or f"results/run-{args.agent}"), args)


def _run_and_finish(grid: Any, out: Path, args: argparse.Namespace) -> int:
    """``run`` and ``compare``: play the grid into ``out``, then the table, report and figures."""
    from dp_experts_env.evaluation import run_grid

    frame = run_grid(
        grid,
        out,
        backend=args.backend,
        n_jobs=args.jobs,
        address=args.address,
        progress=_show_progress(args),
        report=False,  # _finish writes the report for the chosen --metric
        # without figures only each run's last row is needed: the table streams to disk
        rows="final" if args.no_figures else "all",
    )
    _finish(frame, out, args.metric, not args.no_figures, args.pdf)
    return 0


def _cmd_compare(args: argparse.Namespace) -> int:
    from dp_experts_env.evaluation import Grid, default_grid

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
        suffix = "-noise-grid" if args.noise == "grid" else ""
        out = Path(args.out or declared or f"results/{Path(args.grid).stem}{suffix}")
    else:
        kwargs: dict[str, Any] = {}
        if args.horizon is not None:
            kwargs["horizon"] = args.horizon
        if args.seeds is not None:
            kwargs["seeds"] = args.seeds
        if args.epsilons is not None:
            kwargs["epsilons"] = args.epsilons
        grid = default_grid(agents=args.agents, **kwargs)
        # The lattice noise backend gets its own folder: it must not replace the plain run's.
        out = Path(
            args.out
            or ("results/default-noise-grid" if args.noise == "grid" else "results/default")
        )
    _say_noise(args.noise, apply_noise(grid, args.noise))
    return _run_and_finish(grid, out, args)


def _cmd_plot(args: argparse.Namespace) -> int:
    from dp_experts_env.evaluation import make_figures
    from dp_experts_env.evaluation.store import load_results

    folder = Path(args.results)
    # Exactly the runs of the folder's manifest: never an earlier grid's or a temporary file.
    frame = load_results(folder)
    if args.metric not in frame.columns:
        raise ValueError(f"metric {args.metric!r} is not reported by these environments")
    target = Path(args.out) if args.out is not None else folder / "figures"
    paths = make_figures(frame, target, args.metric, pdf=args.pdf)
    print(f"{len(paths)} figure files in {target}")
    return 0


def _cmd_verify(args: argparse.Namespace) -> int:
    from dp_experts_env.evaluation.verify import verify_tree

    folders, stale = verify_tree(args.results)
    for report in folders:
        print("\n".join(report.lines()))
    for name, reason in sorted(stale.items()):
        print(f"claims.csv: {name}: {reason} -- NOT current")
    ok = all(r.ok for r in folders) and not stale
    print("all current" if ok else "stale or damaged results found (see above)")
    return 0 if ok else 1


def _cmd_audit(args: argparse.Namespace) -> int:
    import agents
    from dp_experts_env._validation import check_int

    if not agents.spec(args.agent).private:  # unknown names raise, listing the learners
        private = [item["name"] for item in agents.available() if item["private"]]
        raise ValueError(
            f"agent {args.agent!r} is non-private, so it has no epsilon to audit; "
            f"pick a private learner: {', '.join(private)}"
        )
    params = _parse_assignments(args.set, "--set")
    for key, value in (("mode", args.mode), ("noise", args.noise)):
        if value is not None:
            params[key] = value
    if agents.spec(args.agent).feedback == "oco":
        return _audit_oco(args, params)
    from dp_experts_env.audit import audit_learner, complement_pair, make_scenario

    scenarios = None
    if args.n_experts is not None or args.horizon is not None:
        # One given pair (neighbour at round T // 2); limits keep a typo from asking for TBs.
        horizon = check_int(
            "--horizon", 8 if args.horizon is None else args.horizon, minimum=2, maximum=1_000_000
        )
        width = check_int(
            "--n-experts",
            4 if args.n_experts is None else args.n_experts,
            minimum=2,
            maximum=10_000,
        )
        pair = complement_pair(horizon, width, horizon // 2)
        advice = np.eye(width) if agents.spec(args.agent).feedback == "bandit" else None
        scenarios = [make_scenario("complement of a random row", pair, advice=advice)]
    report = audit_learner(
        args.agent,
        epsilon=args.epsilon,
        params=params,
        multiplier=args.multiplier,
        scenarios=scenarios,
        runs=args.runs,
        selection_runs=4_000 if args.selection_runs is None else args.selection_runs,
        pairs=args.pairs,
        time_budget=args.time_budget,
        alpha=args.alpha,
        seed=args.seed,
    )
    print(report.summary())
    return 1 if report.violation else 0


def _audit_oco(args: argparse.Namespace, params: dict[str, Any]) -> int:
    """Continuous actions: the OCO search (docs/privacy.md, "Continuous actions").

    With ``--n-experts``/``--horizon``, one given pair instead: d = --n-experts, gradients
    ``+-G/sqrt(d)`` (``||g|| = G``), the neighbour negating row ``T // 2``.
    """
    from dp_experts_env._validation import check_int
    from dp_experts_env.evaluation.audit_oco import (
        DEFAULT_OCO_SELECTION_RUNS,
        OCOScenario,
        audit_oco_learner,
        sign_pair,
    )

    scenarios = None
    if args.n_experts is not None or args.horizon is not None:
        horizon = check_int(
            "--horizon", 8 if args.horizon is None else args.horizon, minimum=2, maximum=1_000_000
        )
        width = 4 if args.n_experts is None else args.n_experts
        dim = check_int("--n-experts", width, minimum=1, maximum=10_000)
        grad = float(params.get("grad_bound", 1.0))
        pair = sign_pair(horizon, dim, grad)
        scenarios = [OCOScenario(f"random signs, d={dim}, T={horizon}, row {horizon // 2} negated",
                                 *pair)]  # fmt: skip
    report = audit_oco_learner(
        args.agent,
        epsilon=args.epsilon,
        params=params,
        multiplier=args.multiplier,
        scenarios=scenarios,
        runs=args.runs,
        selection_runs=(
            DEFAULT_OCO_SELECTION_RUNS if args.selection_runs is None else args.selection_runs
        ),
        pairs=args.pairs,
        time_budget=args.time_budget,
        alpha=args.alpha,
        seed=args.seed,
    )
    print(report.summary())
    return 1 if report.violation else 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns the process exit code."""
    from dp_experts_env.learner_package import ForeignAgentsPackage, check_learner_package

    try:  # every command (and the parser's choices) reads the learners
        check_learner_package()
    except ForeignAgentsPackage as err:
        print(f"dp-experts: error: {err}", file=sys.stderr)
        return 2
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = parser_for(argv)
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
        if args.command == "verify":
            return _cmd_verify(args)
        if args.command == "reproduce":
            from dp_experts_env.evaluation.reproduce import cmd_reproduce

            return cmd_reproduce(args)
        if args.command == "attack":
            from dp_experts_env.attack.command import cmd_attack

            return cmd_attack(args)
        if args.command == "bench":
            from dp_experts_env.bench.command import cmd_bench

            return cmd_bench(args)
        return _cmd_audit(args)
    except (ValueError, TypeError) as err:
        print(f"dp-experts {args.command}: error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as err:
        # A sweep's interrupt says what was saved; a bare one (empty str()) that nothing ran.
        message = str(err) or "interrupted before anything ran; nothing was written"
        print(f"\ndp-experts {args.command}: {message}", file=sys.stderr)
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
