"""The card's outputs and leaderboard (dp_experts_env/bench/, docs/bench.md).

One module fixture benches a small reference set (``bench_all``) and one learner ranked against
it (``bench_learner``) on a tiny protocol; the tests read what they wrote: bench.json, card.md,
card.html. ``html_matches_json`` is the check that every figure and table number of card.html
equals bench.json; it has its own controls (a moved bar and a changed number are caught, a
reformatted page passes).
"""

from __future__ import annotations

import json
import math
import re
from html.parser import HTMLParser

import pytest
from test_bench_protocol import tiny_protocol

from dp_experts_env.bench.command import bench_all, bench_learner
from dp_experts_env.bench.leaderboard import VersionMismatch, rank
from dp_experts_env.bench.render import SECTIONS, axis_of, bar_height, curve_y

REFERENCE = ["uniform", "hedge", "fixed-share", "noisy-clipped-hedge", "exp3", "ldp-exp4"]
LEARNER = "limited-updates"


@pytest.fixture(scope="module")
def benched(tmp_path_factory):
    """(reference set, the learner's card, its folder) on the tiny protocol."""
    root = tmp_path_factory.mktemp("bench")
    protocol = tiny_protocol(("shift", "bandit"), horizon=200, seeds=3)
    ref = bench_all(
        root / "all", quick=True, learners=REFERENCE, protocol=protocol, backend="serial"
    )
    card = bench_learner(
        LEARNER,
        {},
        root / "one",
        quick=True,
        protocol=protocol,
        reference=root / "all" / "reference-set.json",
        backend="serial",
        command="dp-experts bench limited-updates --quick",
    )
    return ref, card, root / "one", root


def recorded(ref: dict) -> dict[str, str]:
    """The set's own fingerprints as the current ones: every row plays as recorded."""
    return {e["label"]: e["fingerprint"] for e in ref["entries"]}


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str]]] = []

    def handle_starttag(self, tag, attrs):  # noqa: D102 - HTMLParser hook
        self.tags.append((tag, {k: v or "" for k, v in attrs}))


def html_matches_json(page: str, data: dict) -> list[str]:
    """Every problem found comparing card.html's figures and numbers with bench.json."""
    parser = _Tags()
    parser.feed(page)
    problems = []
    caps = data["capabilities"]
    key = data["headline_epsilon"]
    svgs = [a for t, a in parser.tags if t == "svg"]
    axes = {(float(a["data-axis-low"]), float(a["data-axis-high"])) for a in svgs}
    if len(svgs) != 2 or len(axes) != 1:
        problems.append(f"expected two figures on one axis, got {len(svgs)} on {axes}")
    axis = axes.pop() if axes else axis_of(data)
    drawn = [
        v
        for e in caps.values()
        for s in e["scores"].values()
        for v in (s["mean"], s["mean_low"], s["mean_high"])
    ]
    if drawn and not axis[0] <= min(drawn) <= max(drawn) <= axis[1]:
        problems.append(f"axis {axis} clips values in [{min(drawn)}, {max(drawn)}]")
    bars = [a for t, a in parser.tags if t == "rect" and a.get("class") == "bar"]
    want_bars = {c for c, e in caps.items() if key in e["scores"]}
    if {b["data-capability"] for b in bars} != want_bars or len(bars) != len(want_bars):
        problems.append(f"bars {sorted(b['data-capability'] for b in bars)} != {want_bars}")
    for b in bars:
        value = caps[b["data-capability"]]["scores"][b["data-eps"]]["mean"]
        if float(b["data-value"]) != value:
            problems.append(f"bar {b['data-capability']}: {b['data-value']} != {value}")
        if abs(float(b["height"]) - abs(bar_height(value, axis))) > 1e-3:
            problems.append(f"bar {b['data-capability']}: height {b['height']} for {value}")
        if abs(float(b["y"]) - min(curve_y(0.0, axis), curve_y(value, axis))) > 1e-3:
            problems.append(f"bar {b['data-capability']}: y {b['y']} for {value}")
    points = [a for t, a in parser.tags if t == "circle" and a.get("class") == "point"]
    want_points = {(c, k) for c, e in caps.items() for k in e["scores"]}
    if {(p["data-capability"], p["data-eps"]) for p in points} != want_points:
        problems.append("curve points do not cover every (capability, epsilon) of the JSON")
    for p in points:
        value = caps[p["data-capability"]]["scores"][p["data-eps"]]["mean"]
        if float(p["data-value"]) != value or abs(float(p["cy"]) - curve_y(value, axis)) > 1e-3:
            problems.append(f"point {p['data-capability']} eps {p['data-eps']}: {p} for {value}")
    tasks = {t["name"]: t for t in data["tasks"]}
    rows = {r["label"]: r for r in data["leaderboard"]["rows"]}
    numbers = [a for t, a in parser.tags if t == "span" and a.get("class") == "num"]
    for n in numbers:
        if "data-capability" in n:
            stat = {"curve": "mean"}.get(n["data-stat"], n["data-stat"])
            want = caps[n["data-capability"]]["scores"][n["data-eps"]][stat]
        elif "data-task" in n:
            want = tasks[n["data-task"]]["scores"][n["data-eps"]]["mean"]
        else:
            want = rows[n["data-learner"]]["overall"]
        if float(n["data-value"]) != want:
            problems.append(f"number {n}: {n['data-value']} != {want}")
    shown = sum(1 for t in data["tasks"] if t["scores"].get(key))
    shown += sum(1 for r in rows.values() if r["overall"] is not None)
    shown += sum(4 for e in caps.values() if key in e["scores"])  # mean, its CI, IQM
    shown += sum(len(e["scores"]) for e in caps.values())  # the curves' table
    if len(numbers) != shown:
        problems.append(f"{len(numbers)} numbers in the tables, {shown} in the JSON")
    return problems


def test_card_files_and_numbers(benched) -> None:
    _, card, folder, _ = benched
    data = json.loads((folder / "bench.json").read_text())
    assert data["schema"] == "dp-experts-bench/2"
    assert data["learner"]["name"] == LEARNER and data["headline_epsilon"] == "1"
    status = {c: e["status"] for c, e in data["capabilities"].items()}
    assert status["tracking"] == "scored" and status["bandit"] == "n/a"
    assert "n/a: a full-feedback learner" in data["capabilities"]["bandit"]["reason"]
    page = (folder / "card.html").read_text()
    assert html_matches_json(page, data) == []
    md = (folder / "card.md").read_text()
    for capability, entry in data["capabilities"].items():
        s = entry["scores"].get("1")
        assert f"| {capability} |" in md
        if s:
            assert f"{s['mean']:.3f}" in md
    assert data["command"] in page and data["command"] in md


def test_html_check_catches_a_moved_bar_and_passes_a_reformatted_page(benched) -> None:
    _, _, folder, _ = benched
    data = json.loads((folder / "bench.json").read_text())
    page = (folder / "card.html").read_text()
    moved = re.sub(
        r'(class="bar"[^>]*height=")([0-9.]+)', lambda m: m[1] + "1" + m[2], page, count=1
    )
    assert moved != page and html_matches_json(moved, data)
    wrong = dict(data, capabilities=json.loads(json.dumps(data["capabilities"])))
    wrong["capabilities"]["tracking"]["scores"]["1"]["mean"] += 0.01
    assert html_matches_json(page, wrong)
    reformatted = page.replace("><", ">\n<")
    assert html_matches_json(reformatted, data) == []
    clipped = re.sub(r'data-axis-high="[0-9.]+"', 'data-axis-high="0.1"', page)
    assert any("clips" in p for p in html_matches_json(clipped, data))


def test_the_page_is_self_contained(benched) -> None:
    page = (benched[2] / "card.html").read_text()
    assert "<script" not in page.lower() and "<link" not in page.lower()
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", page)
    assert "url(" not in page and "@import" not in page
    for section in SECTIONS:
        assert f'<section id="{section}">' in page


def test_the_learner_is_ranked_among_the_reference_set_without_replaying_it(benched) -> None:
    ref, card, folder, _ = benched
    data = json.loads((folder / "bench.json").read_text())
    board = data["leaderboard"]
    labels = [r["label"] for r in board["rows"]]
    # Its kind's table: the full-information learners and uniform (any), not the bandit ones.
    assert set(labels) == {"uniform", "hedge", "fixed-share", "noisy-clipped-hedge", LEARNER}
    assert [r["rank"] for r in board["rows"]] == list(range(1, len(labels) + 1))
    overall = [r["overall"] for r in board["rows"]]
    assert overall == sorted(overall, reverse=True)
    assert [r["this"] for r in board["rows"]].count(True) == 1
    # Not re-played: the card's folder holds only the roster's and the learner's runs.
    from dp_experts_env.evaluation.store import read_manifest

    played = set()
    for manifest in folder.glob("runs/*/manifest.json"):
        played |= {a["name"] for a in read_manifest(manifest.parent)["grid"]["agent"]}
    assert LEARNER in played
    assert not played & {"noisy-clipped-hedge", "ldp-exp4"}  # reference-set learners only
    # The reference set's control and reference rows are the ones the card was scored on.
    assert ref["key"] == board["key"]


def test_cards_of_different_versions_are_never_ranked_together(benched) -> None:
    ref, card, _, _ = benched
    for field, value in [
        ("protocol", "bench-v0"),
        ("scoring", "0" * 16),
        ("quick", False),
        ("digest", "x"),
    ]:
        other = dict(ref, key={**ref["key"], field: value})
        with pytest.raises(VersionMismatch, match="never ranked together"):
            rank(card, other, recorded(ref))
    assert rank(card, ref, recorded(ref))["rows"]  # the same key ranks (the harmless case)
    moved = json.loads(json.dumps(ref))
    moved["scales"]["shift"][0] *= 1 + 1e-6  # another control mean: another scale
    with pytest.raises(VersionMismatch, match="other scales"):
        rank(card, moved, recorded(ref))
    rounded = json.loads(json.dumps(ref))
    rounded["scales"]["shift"][0] *= 1 + 1e-13  # float rounding across machines: ranked
    assert rank(card, rounded, recorded(ref))["rows"]


def test_a_mismatched_reference_set_leaves_the_card_unranked(benched, tmp_path) -> None:
    ref, _, _, root = benched
    stale = tmp_path / "stale.json"
    stale.write_text(json.dumps(dict(ref, key={**ref["key"], "scoring": "0" * 16})))
    card = bench_learner(
        LEARNER,
        {},
        root / "one",
        quick=True,
        protocol=tiny_protocol(("shift", "bandit"), horizon=200, seeds=3),
        reference=stale,
        backend="serial",
    )
    data = json.loads((root / "one" / "bench.json").read_text())
    assert [r["label"] for r in data["leaderboard"]["rows"]] == [LEARNER]
    assert data["leaderboard"]["note"].startswith("not ranked:")
    assert card["capabilities"] == data["capabilities"]


def test_a_row_whose_fingerprint_changed_is_left_out_by_name(benched) -> None:
    ref, card, _, _ = benched
    current = recorded(ref)
    current["hedge"] = "edited"
    board = rank(card, ref, current)
    assert "hedge" not in [r["label"] for r in board["rows"]]
    assert board["note"].endswith(": hedge")
    with pytest.raises(ValueError, match="current fingerprints of the rows"):
        rank(card, ref, {})


def _edit_noisy_clipped_hedge(monkeypatch, harmless: bool) -> None:
    import agents

    cls = agents.spec("noisy-clipped-hedge").cls
    original = cls._default_eta
    factor = 1.0 if harmless else 2.0
    monkeypatch.setattr(cls, "_default_eta", lambda self, scale: factor * original(self, scale))
    monkeypatch.setattr(cls, "__doc__", "Re-worded.")


@pytest.mark.parametrize("harmless", [False, True], ids=["edited", "docstring-and-refactor"])
def test_an_edited_learner_stales_only_its_row_and_is_replayed_on_request(
    benched, monkeypatch, tmp_path, harmless
) -> None:
    """noisy-clipped-hedge edited in place (its default learning rate doubled): the card of
    another learner leaves out that row only, naming it; with ``replay_stale`` the row is
    re-played and ranked with its new score. A harmless edit leaves every row in."""
    ref, _, _, root = benched
    _edit_noisy_clipped_hedge(monkeypatch, harmless)
    kwargs = dict(
        quick=True,
        protocol=tiny_protocol(("shift", "bandit"), horizon=200, seeds=3),
        reference=root / "all" / "reference-set.json",
        backend="serial",
    )
    bench_learner(LEARNER, {}, tmp_path / "a", **kwargs)
    board = json.loads((tmp_path / "a" / "bench.json").read_text())["leaderboard"]
    labels = {r["label"] for r in board["rows"]}
    full = {"uniform", "hedge", "fixed-share", "noisy-clipped-hedge", LEARNER}
    if harmless:
        assert labels == full and board["note"] == ""
        return
    assert labels == full - {"noisy-clipped-hedge"}
    assert board["note"].endswith(": noisy-clipped-hedge")
    bench_learner(LEARNER, {}, tmp_path / "b", replay_stale=True, **kwargs)
    board = json.loads((tmp_path / "b" / "bench.json").read_text())["leaderboard"]
    rows = {r["label"]: r for r in board["rows"]}
    assert set(rows) == full and board["note"] == ""
    old = next(e for e in ref["entries"] if e["label"] == "noisy-clipped-hedge")
    assert rows["noisy-clipped-hedge"]["fingerprint"] != old["fingerprint"]
    assert rows["noisy-clipped-hedge"]["overall"] != old["overall"]
    for label in full - {"noisy-clipped-hedge", LEARNER}:  # the other rows: read, unchanged
        assert rows[label]["overall"] == next(
            e["overall"] for e in ref["entries"] if e["label"] == label
        )


def test_scores_in_the_card_are_finite_or_absent(benched) -> None:
    for entry in benched[1]["capabilities"].values():
        for s in entry["scores"].values():
            assert all(math.isfinite(v) for k, v in s.items() if k != "tasks")


def shipped_sets() -> list[tuple[str, bool]]:
    """(version, quick) of every shipped reference set: both versions' quick sets must ship
    (their tests fail if absent); a full set is tested once it is shipped."""
    from dp_experts_env.bench.command import reference_file_name, shipped_reference_folder

    folder = shipped_reference_folder()
    return [
        (version, quick)
        for version in ("bench-v1", "bench-v2")
        for quick in (True, False)
        if quick or folder.joinpath(reference_file_name(version, quick)).is_file()
    ]


@pytest.mark.parametrize(("version", "quick"), shipped_sets())
def test_the_shipped_reference_set_holds_every_builtin(version, quick) -> None:
    """The package's reference set of each version and mode: its key names the version (pinned
    digest) and mode; one row per built-in learner, each row's scores within its kind's tasks;
    one scale per task."""
    from test_bench_protocol import PINNED

    from dp_experts_env.bench import load_protocol
    from dp_experts_env.bench.command import builtin_learners, shipped_reference

    protocol = load_protocol(version)
    ref = shipped_reference(protocol, quick=quick)
    assert ref is not None
    assert ref["key"]["protocol"] == version and ref["key"]["digest"] == PINNED[version]
    assert ref["key"]["quick"] is quick
    assert sorted(e["label"] for e in ref["entries"]) == sorted(builtin_learners())
    assert set(ref["scales"]) == {t.name for t in protocol.chosen(quick)}
    by_label = {e["label"]: e for e in ref["entries"]}
    assert abs(by_label["uniform"]["overall"]) < 1e-12  # the control: 0 on every task
    assert by_label["hedge"]["capabilities"]["bandit"] is None  # not its kind


def test_every_bench_data_file_is_package_data() -> None:
    """Every data file under dp_experts_env/bench/ (protocols, shipped sets, the adversary) is
    found through importlib.resources and matched by a package-data glob of pyproject.toml, so
    a wheel carries it (a file no glob matches is the mutant this catches)."""
    from importlib import resources
    from pathlib import Path, PurePosixPath

    import tomllib

    root = Path(__file__).resolve().parents[1]
    setuptools = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["setuptools"]
    globs = setuptools["package-data"]["dp_experts_env"]
    bench = root / "dp_experts_env" / "bench"
    files = sorted(
        PurePosixPath(p.relative_to(bench).as_posix())
        for p in bench.rglob("*")
        if p.is_file() and p.suffix not in (".py", ".pyc") and "__pycache__" not in p.parts
    )
    assert {"reference/bench_v1_quick.json", "reference/bench_v2_quick.json"} <= set(
        map(str, files)
    )
    assert {
        "protocols/bench_v1.toml",
        "protocols/bench_v2.toml",
        "protocols/learned_adversary_v2.json",
    } <= set(map(str, files))
    for rel in files:
        assert resources.files("dp_experts_env.bench").joinpath(str(rel)).is_file(), rel
        assert any(("bench" / rel).match(g) for g in globs), f"{rel} is not package data"
    assert not any(PurePosixPath("bench/reference/x.csv").match(g) for g in globs)


def test_recompute_replays_the_reference_set_beside_the_learner(monkeypatch, tmp_path) -> None:
    from dp_experts_env.bench import command

    monkeypatch.setattr(command, "builtin_learners", lambda: ["uniform", "hedge", LEARNER])
    card = bench_learner(
        LEARNER,
        {},
        tmp_path,
        quick=True,
        recompute=True,
        backend="serial",
        protocol=tiny_protocol(("shift",), horizon=100, seeds=2),
    )
    data = json.loads((tmp_path / "bench.json").read_text())
    assert [r["label"] for r in data["leaderboard"]["rows"]].count(LEARNER) == 1
    assert {r["label"] for r in data["leaderboard"]["rows"]} == {"uniform", "hedge", LEARNER}
    assert data["leaderboard"]["note"] == ""
    ref = json.loads((tmp_path / "reference" / "reference-set.json").read_text())
    assert [e["label"] for e in ref["entries"]] == ["uniform", "hedge"]  # not the learner
    assert card["capabilities"] == data["capabilities"]


#: (the fingerprint tasks and base seed, the set's entrants) as JSON -> their fingerprints:
#: ``fingerprints`` reads nothing else of the protocol (its grid tasks at the fingerprint
#: horizon, its base seed), so sets with the same entrants on the same tasks share one
#: computation (bench-v1's quick set and bench-v2's quick and full sets: 41 entrants, bench-v2's
#: learned task not fingerprinted). ``test_fingerprints_read_only_the_tasks_seed_and_entrants``
#: holds the key to that.
_FINGERPRINTS: dict[str, dict[str, str]] = {}


def _fingerprint_key(protocol, entrants) -> str:
    from dp_experts_env.bench.fingerprint import fingerprint_tasks

    tasks = [dict(vars(t)) for t in fingerprint_tasks(protocol)]
    players = [[e.name, dict(e.params)] for e in entrants]
    return json.dumps([tasks, protocol.base_seed, players], sort_keys=True, default=repr)


def test_fingerprints_read_only_the_tasks_seed_and_entrants() -> None:
    """The shared fingerprints' key (``_fingerprint_key``) holds everything they read.

    Harmless: a protocol differing in every other field (version, digest, epsilons, n_record,
    min_gap, rosters, quick tasks) has the same key and the same fingerprints. Caught: another
    base seed or another task size changes the key, and the fingerprints too (a key without
    them would have shared wrong ones).
    """
    import dataclasses

    from dp_experts_env.bench.fingerprint import fingerprints
    from dp_experts_env.bench.runner import Entrant

    entrants = [Entrant("uniform", {})]  # its rows read the env's losses and the seeds
    base = tiny_protocol(("shift",), horizon=100, seeds=2)
    other = dataclasses.replace(
        base, version="other", digest="other", epsilons=(0.5,), n_record=3, min_gap=0.9,
        rosters={}, quick_tasks=(),
    )  # fmt: skip
    assert _fingerprint_key(other, entrants) == _fingerprint_key(base, entrants)
    assert fingerprints(other, entrants) == fingerprints(base, entrants)
    task = dataclasses.replace(base.tasks[0], sizes={**base.tasks[0].sizes, "gap": 0.1})
    for changed in (
        dataclasses.replace(base, base_seed=base.base_seed + 1),
        dataclasses.replace(base, tasks=(task,)),
    ):
        assert _fingerprint_key(changed, entrants) != _fingerprint_key(base, entrants)
        assert fingerprints(changed, entrants) != fingerprints(base, entrants)


@pytest.mark.slow  # the 38 built-ins' fingerprints: about 4 s of CPU
@pytest.mark.parametrize(("version", "quick"), shipped_sets())
def test_the_shipped_reference_set_matches_this_code(version, quick) -> None:
    """Skips, naming them, when rows of the shipped set are stale: their learners play
    differently now (a card leaves them out, naming them), or the scoring code scores
    differently (a card is then unranked)."""
    from dp_experts_env.bench import load_protocol
    from dp_experts_env.bench.command import shipped_reference
    from dp_experts_env.bench.fingerprint import fingerprints, scoring_fingerprint
    from dp_experts_env.bench.leaderboard import stale_rows
    from dp_experts_env.bench.runner import Entrant

    protocol = load_protocol(version)
    ref = shipped_reference(protocol, quick=quick)
    entrants = [Entrant(e["name"], e["params"]) for e in ref["entries"]]
    key = _fingerprint_key(protocol, entrants)
    if key not in _FINGERPRINTS:
        _FINGERPRINTS[key] = fingerprints(protocol, entrants)
    stale = stale_rows(ref, _FINGERPRINTS[key])
    out = "results/bench-all-quick" if quick else "results/bench-all"
    regenerate = (
        f"run `dp-experts bench --all{' --quick' if quick else ''} --protocol {version} "
        f"--out {out}`, then dp_experts_env.bench.command.ship_reference("
        f"'{out}/reference-set.json') (docs/bench.md)"
    )
    if ref["key"]["scoring"] != scoring_fingerprint():
        pytest.skip(f"the scoring code scores differently from the shipped set's: {regenerate}")
    if stale:
        pytest.skip(f"shipped rows play differently now: {', '.join(stale)}; {regenerate}")
    assert len(stale) == 0


@pytest.mark.slow
def test_an_outside_learner_is_ranked_among_the_reference_set(benched) -> None:
    """The example plug-in through its entry point (the metadata ``pip install`` writes, in a
    folder on the path), in a fresh interpreter: its card ranks it among the reference set's
    full-information rows, which are read, not re-played."""
    import os
    import subprocess
    import sys
    import textwrap
    from pathlib import Path

    root = benched[3]
    tests = Path(__file__).parent
    script = textwrap.dedent(
        f"""
        import sys
        sys.path.insert(0, {str(tests)!r})
        from test_bench_protocol import tiny_protocol
        from dp_experts_env.bench.command import bench_learner
        bench_learner("private-block-ftpl", {{}}, {str(root / "plugin")!r}, quick=True,
                      protocol=tiny_protocol(("shift", "bandit"), horizon=200, seeds=3),
                      reference={str(root / "all" / "reference-set.json")!r}, backend="serial")
        """
    )
    example = tests.parent / "examples" / "plugin_example"
    info = root / "site" / "dp_plugin_example-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: dp-plugin-example\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(
        "[dp_experts_env.agents]\nprivate-block-ftpl = dp_plugin_example.ftpl:PrivateBlockFTPL\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "DP_EXPERTS_PLUGINS"}
    paths = [str(root / "site"), str(example), os.environ.get("PYTHONPATH", "")]
    env["PYTHONPATH"] = os.pathsep.join(paths)
    run = subprocess.run(
        [sys.executable, "-c", script],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    data = json.loads((root / "plugin" / "bench.json").read_text())
    labels = [r["label"] for r in data["leaderboard"]["rows"]]
    assert set(labels) == {
        "uniform",
        "hedge",
        "fixed-share",
        "noisy-clipped-hedge",
        "private-block-ftpl",
    }
    assert data["leaderboard"]["note"] == "" and data["learner"]["private"] is True


def test_ship_reference_writes_the_file_of_its_key(benched, tmp_path, monkeypatch) -> None:
    """The set ``bench --all`` wrote, shipped to a folder, is read back by ``shipped_reference``
    from there (the package's folder patched), equal to the set; not a set: refused."""
    from dp_experts_env.bench import command

    ref, _, _, root = benched
    path = command.ship_reference(root / "all" / "reference-set.json", tmp_path)
    assert path == tmp_path / "bench_tiny_quick.json"
    assert json.loads(path.read_text()) == ref
    monkeypatch.setattr(command, "shipped_reference_folder", lambda: tmp_path)
    tiny = tiny_protocol(("shift", "bandit"), horizon=200, seeds=3)
    assert command.shipped_reference(tiny, quick=True) == ref
    assert command.shipped_reference(tiny, quick=False) is None
    (tmp_path / "bad.json").write_text("{}")
    with pytest.raises(ValueError, match="not a reference set"):
        command.ship_reference(tmp_path / "bad.json", tmp_path)


def test_a_shipped_full_set_is_found_for_full_cards(tmp_path, monkeypatch) -> None:
    """The integrator's path: ``ship_reference('results/bench-all/reference-set.json')`` of a
    full bench-v2 set writes ``bench_v2_full.json``, which ``shipped_reference(protocol,
    quick=False)`` then reads (a small synthetic set: two rows of the shipped quick one, its key
    made full). Controls: a full bench-v1 set is not bench-v2's, the quick set is untouched."""
    from dp_experts_env.bench import command, load_protocol

    v2 = load_protocol("bench-v2")
    quick = command.shipped_reference(v2, quick=True)
    full = {**quick, "key": {**quick["key"], "quick": False}, "entries": quick["entries"][:2]}
    source = tmp_path / "results" / "reference-set.json"
    source.parent.mkdir()
    source.write_text(json.dumps(full, indent=1))
    package = tmp_path / "reference"
    package.mkdir()
    path = command.ship_reference(source, folder=package)
    assert path == package / "bench_v2_full.json"
    monkeypatch.setattr(command, "shipped_reference_folder", lambda: package)
    assert command.shipped_reference(v2, quick=False) == full
    assert command.shipped_reference(v2, quick=True) is None  # only the full set is there
    assert command.shipped_reference(load_protocol("bench-v1"), quick=False) is None
    monkeypatch.undo()
    assert command.shipped_reference(v2, quick=True) == quick


def test_the_set_is_written_from_task_rows_before_the_cards(benched, tmp_path, monkeypatch):
    """``bench_all`` writes the reference set once the task grids are played, before the cards'
    audits and claims (which take hours for a slow learner): a run stopped in the first card
    leaves the set, and it equals the set of the finished cards, privacy and claims included
    (a card's audit or claims entering a row would break the equality)."""
    from dp_experts_env.bench import command
    from dp_experts_env.bench.leaderboard import reference_set

    ref, _, _, root = benched
    files = [root / "all" / "cards" / e / "bench.json" for e in REFERENCE]
    cards = [
        {k: v for k, v in json.loads(f.read_text()).items() if k != "leaderboard"} for f in files
    ]
    assert all(c["claims"] or c["privacy"] for c in cards)
    assert json.loads(json.dumps(reference_set(cards))) == json.loads(json.dumps(ref))

    def stop(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(command, "_card", stop)
    with pytest.raises(KeyboardInterrupt):
        bench_all(
            tmp_path,
            quick=True,
            learners=REFERENCE,
            protocol=tiny_protocol(("shift", "bandit"), horizon=200, seeds=3),
            backend="serial",
        )
    written = json.loads((tmp_path / "reference-set.json").read_text())
    assert written == json.loads(json.dumps(ref))
    assert not (tmp_path / "cards").exists() or not any((tmp_path / "cards").rglob("bench.json"))
