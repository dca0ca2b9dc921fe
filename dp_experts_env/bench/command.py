"""``dp-experts bench``: :func:`bench_learner`, :func:`bench_all` and the subcommand."""

from __future__ import annotations

import json
import shlex
import sys
from collections.abc import Mapping, Sequence
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any

from dp_experts_env.bench.card import build_card
from dp_experts_env.bench.fingerprint import fingerprints, scoring_fingerprint
from dp_experts_env.bench.leaderboard import (
    VersionMismatch,
    card_key,
    comparable_rows,
    load_reference_set,
    parse_reference_set,
    rank,
    reference_set,
    stale_rows,
    summary,
)
from dp_experts_env.bench.privacy import (
    audit_verdict,
    certified_epsilons,
    claim_verdicts,
    stated_claims,
)
from dp_experts_env.bench.protocol import DEFAULT_VERSION, Protocol, load_protocol
from dp_experts_env.bench.render import card_html, card_markdown
from dp_experts_env.bench.runner import (
    Entrant,
    TaskRows,
    applicability,
    learner_feedback,
    play_tasks,
    reference_label,
)

__all__ = [
    "EXCLUDED",
    "add_parser",
    "bench_all",
    "bench_learner",
    "builtin_learners",
    "card_key_text",
    "cmd_bench",
    "parse_assignments",
    "reference_file_name",
    "ship_reference",
    "shipped_reference",
    "shipped_reference_folder",
    "write_card",
]

#: Built-in learners ``--all`` leaves out, with the reason.
EXCLUDED = {"ppo": "trains a torch network in every run (optional extra); bench it by name"}


def builtin_learners() -> list[str]:
    """Every registered learner of the ``agents`` package itself (plug-ins excluded)."""
    import agents

    return [
        item["name"]
        for item in agents.available()
        if agents.spec(item["name"]).cls.__module__.startswith("agents.")
        and item["name"] not in EXCLUDED
    ]


def shipped_reference(protocol: Protocol, quick: bool) -> dict[str, Any] | None:
    """The reference set shipped with the package for this protocol and mode, if any."""
    name = reference_file_name(protocol.version, quick)
    file = shipped_reference_folder().joinpath(name)
    if not file.is_file():
        return None
    return parse_reference_set(file.read_text(encoding="utf-8"), f"the shipped {name}")


def shipped_reference_folder() -> Traversable:
    """Where the shipped sets are read: ``bench/reference/``, through :mod:`importlib.resources`."""
    return resources.files("dp_experts_env.bench").joinpath("reference")


def reference_file_name(version: str, quick: bool) -> str:
    """The shipped set's file name: ``bench_v2_quick.json`` for bench-v2 quick."""
    return f"{version.replace('-', '_')}_{'quick' if quick else 'full'}.json"


def ship_reference(reference_file: str | Path, folder: str | Path | None = None) -> Path:
    """Write a ``reference-set.json`` as the package's shipped set for its key (maintainers).

    Args:
        reference_file: the set ``dp-experts bench --all`` wrote.
        folder: where to write (default the source tree's ``dp_experts_env/bench/reference/``).

    Returns:
        The file written: :func:`reference_file_name` of the set's key.
    """
    ref = load_reference_set(reference_file)
    key = ref["key"]
    folder = Path(folder) if folder is not None else Path(__file__).parent / "reference"
    path = folder / reference_file_name(key["protocol"], key["quick"])
    _write_text(path, _reference_text(ref) + "\n")
    return path


def _reference_text(ref: Mapping[str, Any]) -> str:
    """The set as JSON with one line per top-level item, scale and entry (a diff names the rows)."""

    def one(value: Any) -> str:
        return json.dumps(value, allow_nan=False, separators=(",", ":"))

    items = []
    for name, value in ref.items():
        if isinstance(value, list):
            body = ",\n".join(f"  {one(v)}" for v in value)
            items.append(f"{one(name)}: [\n{body}\n ]")
        elif isinstance(value, dict):
            body = ",\n".join(f"  {one(k)}: {one(v)}" for k, v in value.items())
            items.append(f"{one(name)}: {{\n{body}\n }}")
        else:
            items.append(f"{one(name)}: {one(value)}")
    return "{\n " + ",\n ".join(items) + "\n}"


def _write_text(path: Path, text: str) -> None:
    """Write atomically: a killed bench leaves the previous file or none, never half of one."""
    from dp_experts_env.evaluation.store import write_atomic

    write_atomic(path, lambda fh: fh.write(text))


def write_card(card: Mapping[str, Any], board: Mapping[str, Any], out: str | Path) -> Path:
    """Write ``bench.json`` (the card and its leaderboard), ``card.md`` and ``card.html``."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    data = {**card, "leaderboard": dict(board)}
    text = json.dumps(data, indent=1, sort_keys=False, allow_nan=False)
    _write_text(out / "bench.json", text)
    _write_text(out / "card.md", card_markdown(card, board))
    _write_text(out / "card.html", card_html(card, board))
    return out / "bench.json"


def _privacy(
    entrant: Entrant, played: Mapping[str, TaskRows], protocol: Protocol, quick: bool
) -> dict[str, Any]:
    import agents

    label = next(
        (
            reference_label(protocol, rows.task, entrant)
            for rows in played.values()
            if not applicability(entrant.name, rows.task)
        ),
        entrant.label,
    )
    mine = {n: r for n, r in played.items() if not applicability(entrant.name, r.task)}
    certified = certified_epsilons(mine, label)
    grids = [r.task for r in mine.values() if not r.task.learned]  # a learned task has no env
    if grids:
        first = grids[0]
        stated = stated_claims(entrant.name, entrant.params, first, protocol.epsilons)
        for key, entry in certified.items():
            entry.update(stated.get(key, {}))
    return {
        "certified": certified,
        "audit": audit_verdict(
            entrant.name,
            entrant.params,
            quick=quick,
            private=agents.spec(entrant.name).private,
            feedback=learner_feedback(entrant.name),
        ),
    }


def _card(
    protocol: Protocol,
    entrant: Entrant,
    played: Mapping[str, TaskRows],
    out: Path,
    quick: bool,
    command: str,
    fingerprint: str,
    run: Mapping[str, Any],
) -> dict[str, Any]:
    claims = claim_verdicts(entrant.name, entrant.params, out / "claims", quick=quick, **run)
    return build_card(
        protocol,
        entrant,
        played,
        quick=quick,
        command=command,
        scoring=scoring_fingerprint(),
        fingerprint=fingerprint,
        privacy=_privacy(entrant, played, protocol, quick),
        claims=claims,
    )


def bench_all(
    out: str | Path,
    *,
    quick: bool = False,
    learners: Sequence[str] | None = None,
    protocol: Protocol | None = None,
    backend: str = "local",
    n_jobs: int | None = None,
    address: str | None = None,
    progress: bool = False,
    command: str = "dp-experts bench --all",
) -> dict[str, Any]:
    """Every built-in learner's card (``OUT/cards/<label>/``) from one grid per task.

    ``OUT/reference-set.json`` is written as soon as the task grids are played, before the
    cards' audits and claims: a row reads the task rows only (:func:`summary`).

    Returns:
        The reference set.
    """
    protocol = protocol or load_protocol()
    out = Path(out)
    entrants = [Entrant(n, {}) for n in (learners or builtin_learners())]
    run = {"backend": backend, "n_jobs": n_jobs, "address": address}
    played = play_tasks(protocol, entrants, out, quick=quick, progress=progress, **run)
    prints = fingerprints(protocol, entrants)
    scored = [
        build_card(
            protocol,
            e,
            played,
            quick=quick,
            command=command,
            scoring=scoring_fingerprint(),
            fingerprint=prints[e.label],
        )
        for e in entrants
    ]
    ref = reference_set(scored)
    _write_text(out / "reference-set.json", json.dumps(ref, indent=1, allow_nan=False))
    for e in entrants:
        folder = out / "cards" / e.label
        card = _card(protocol, e, played, folder, quick, command, prints[e.label], run)
        write_card(card, rank(card, ref, prints), folder)
    return ref


def bench_learner(
    name: str,
    params: Mapping[str, Any] | None = None,
    out: str | Path = "results/bench",
    *,
    quick: bool = False,
    protocol: Protocol | None = None,
    reference: Mapping[str, Any] | str | Path | None = None,
    recompute: bool = False,
    replay_stale: bool = False,
    backend: str = "local",
    n_jobs: int | None = None,
    address: str | None = None,
    progress: bool = False,
    command: str = "",
) -> dict[str, Any]:
    """One learner's card, ranked among a reference set's current rows; written to ``out``.

    Args:
        name: the learner.
        params: its keywords (``epsilon`` is refused: the protocol sets it).
        out: the card's folder (the task runs under ``out/runs``: a second call resumes).
        quick: the protocol's ``--quick`` tasks.
        protocol: the protocol (default :data:`~dp_experts_env.bench.protocol.DEFAULT_VERSION`).
        reference: a reference set (dict or file); None: the shipped one for this protocol.
        recompute: re-play every built-in learner on the same grids and rank among those.
        replay_stale: re-play (in ``out/replayed``) the rows whose learner's fingerprint moved;
            else they are left out and named.
        backend: where cells run (``local``, ``serial``, ``ray``).
        n_jobs: worker processes of the local backend.
        address: Ray cluster address.
        progress: show the grid runner's progress bar.
        command: the command line written on the card.

    Returns:
        The card (``bench.json`` holds it with its ``leaderboard``).
    """
    import agents

    agents.spec(name)  # unknown names raise, listing the learners
    if "epsilon" in (params or {}):
        # A grid runs a learner with its own epsilon once, labelled inf (as noise-free).
        raise ValueError(
            "epsilon is set by the protocol (each private learner plays every epsilon of it); "
            "remove --set epsilon=..."
        )
    protocol = protocol or load_protocol()
    out = Path(out)
    entrant = Entrant(name, dict(params or {}))
    run = {"backend": backend, "n_jobs": n_jobs, "address": address}
    command = command or f"dp-experts bench {name}"
    if recompute:
        others = [n for n in builtin_learners() if n != name]
        ref = bench_all(
            out / "reference",
            quick=quick,
            learners=others,
            protocol=protocol,
            progress=progress,
            command=command + " (reference)",
            **run,
        )
    elif isinstance(reference, (str, Path)):
        ref = load_reference_set(reference)
    else:
        ref = dict(reference) if reference is not None else shipped_reference(protocol, quick)
    played = play_tasks(protocol, [entrant], out, quick=quick, progress=progress, **run)
    prints = fingerprints(protocol, [entrant])
    card = _card(protocol, entrant, played, out, quick, command, prints[entrant.label], run)
    try:
        if ref is not None and dict(ref["key"]) == card_key(card):
            # The rows' fingerprints only where they could rank (another key raises below).
            prints.update(fingerprints(protocol, comparable_rows(card, ref)))
            if replay_stale:
                rows = {k: v for k, v in prints.items() if k != entrant.label}  # not its own
                ref = _replayed(ref, stale_rows(ref, rows), protocol, out, quick, prints, run)
        board = rank(card, ref, prints)
    except VersionMismatch as err:
        board = rank(card, None)
        board["note"] = f"not ranked: {err}"
    write_card(card, board, out)
    return card


def _replayed(
    ref: Mapping[str, Any],
    stale: Sequence[str],
    protocol: Protocol,
    out: Path,
    quick: bool,
    prints: Mapping[str, str],
    run: Mapping[str, Any],
) -> dict[str, Any]:
    """``ref`` with the ``stale`` rows re-played in ``out/replayed`` (scores only: no audit)."""
    if not stale:
        return dict(ref)
    entries = {e["label"]: e for e in ref["entries"]}
    entrants = [Entrant(entries[x]["name"], dict(entries[x].get("params", {}))) for x in stale]
    played = play_tasks(protocol, entrants, out / "replayed", quick=quick, **run)
    fresh = {}
    for e in entrants:
        card = build_card(
            protocol,
            e,
            played,
            quick=quick,
            command="(re-played reference row)",
            scoring=scoring_fingerprint(),
            fingerprint=prints[e.label],
        )
        if card_key(card) != dict(ref["key"]):
            raise VersionMismatch(f"re-played row {e.label!r} has key {card_key(card)}")
        fresh[e.label] = summary(card)
    return {**ref, "entries": [fresh.get(x["label"], x) for x in ref["entries"]]}


def add_parser(sub: Any) -> None:
    """The ``bench`` subcommand (registered by :mod:`dp_experts_env.cli`)."""
    p = sub.add_parser(
        "bench",
        help="a benchmark card for a learner: scores per capability, privacy, claims, ranking",
        description="Play the versioned protocol (docs/bench.md) for a learner and write "
        "bench.json, card.md and card.html in --out; the task runs are stored there, so a "
        "killed bench resumes. --all benches every built-in learner and writes the reference "
        "set a single learner is ranked against.",
    )
    p.add_argument("learner", nargs="?", default=None, help="learner name (see `dp-experts list`)")
    p.add_argument("--set", action="append", metavar="KEY=VALUE", help="learner parameter")
    p.add_argument("--quick", action="store_true", help="the protocol's quick tasks")
    p.add_argument("--out", default=None, help="output folder (default results/bench-LEARNER)")
    p.add_argument("--all", action="store_true", help="every built-in learner: the reference set")
    p.add_argument(
        "--recompute",
        action="store_true",
        help="re-play the reference set instead of reading the shipped one",
    )
    p.add_argument(
        "--replay-stale",
        action="store_true",
        help="re-play the reference rows whose learner plays differently now (else left out)",
    )
    p.add_argument(
        "--reference",
        default=None,
        metavar="FILE",
        help="rank against this reference-set.json (from bench --all)",
    )
    p.add_argument(
        "--protocol",
        default=DEFAULT_VERSION,
        help=f"protocol version (default {DEFAULT_VERSION}; docs/bench.md lists the others)",
    )
    p.add_argument(
        "--backend",
        choices=("local", "serial", "ray"),
        default="local",
        help="where cells run (default local)",
    )
    p.add_argument("--jobs", type=int, default=None, help="worker processes for --backend local")
    p.add_argument("--address", default=None, help="Ray cluster address (default RAY_ADDRESS)")
    p.add_argument("--no-progress", action="store_true", help="hide the progress bars")


def _command_line(args: Any) -> str:
    words = ["dp-experts", "bench"]
    words += [args.learner] if args.learner else []
    for item in args.set or ():
        words += ["--set", item]
    for flag in ("quick", "all", "recompute", "replay_stale"):
        if getattr(args, flag):
            words.append(f"--{flag.replace('_', '-')}")
    for option in ("reference", "out", "backend"):
        value = getattr(args, option)
        if value is not None and not (option == "backend" and value == "local"):
            words += [f"--{option}", str(value)]
    if args.protocol != DEFAULT_VERSION:
        words += ["--protocol", args.protocol]
    return shlex.join(words)


def parse_assignments(items: Sequence[str] | None) -> dict[str, Any]:
    """``--set key=value`` pairs (:func:`dp_experts_env.assignments.parse_assignments`)."""
    from dp_experts_env.assignments import parse_assignments as parse

    return parse(items, "--set")


def cmd_bench(args: Any) -> int:
    """Run the ``bench`` subcommand; exit code 0 whatever the scores (they are results)."""
    protocol = load_protocol(args.protocol)
    suffix = "-quick" if args.quick else ""
    run = {"backend": args.backend, "n_jobs": args.jobs, "address": args.address}
    if args.all:
        if args.learner or args.set:
            raise ValueError("--all benches every built-in learner: give no learner or --set")
        out = Path(args.out or f"results/bench-all{suffix}")
        ref = bench_all(
            out,
            quick=args.quick,
            protocol=protocol,
            progress=not args.no_progress,
            command=_command_line(args),
            **run,
        )
        print(
            f"{len(ref['entries'])} cards -> {out / 'cards'}; reference set "
            f"{out / 'reference-set.json'} (key {card_key_text(ref['key'])})"
        )
        return 0
    if args.learner is None:
        raise ValueError("name a learner (see `dp-experts list`) or give --all")
    params = parse_assignments(args.set)
    entrant = Entrant(args.learner, params)
    out = Path(args.out or f"results/bench-{entrant.label}{suffix}")
    card = bench_learner(
        args.learner,
        params,
        out,
        quick=args.quick,
        protocol=protocol,
        reference=args.reference,
        recompute=args.recompute,
        replay_stale=args.replay_stale,
        progress=not args.no_progress,
        command=_command_line(args),
        **run,
    )
    key = card["headline_epsilon"]
    for capability, entry in card["capabilities"].items():
        s = entry["scores"].get(key)
        text = (
            f"{s['mean']:.3f} [{s['mean_low']:.3f}, {s['mean_high']:.3f}]" if s else entry["reason"]
        )
        print(f"{capability:>18}: {text}")
    print(f"card -> {out / 'card.html'}, {out / 'card.md'}, {out / 'bench.json'}", file=sys.stdout)
    return 0


def card_key_text(key: Mapping[str, Any]) -> str:
    """A reference-set key on one line."""
    return f"{key['protocol']}{' quick' if key['quick'] else ''}, scoring {key['scoring']}"
