"""The command's start: ``cli.parser_for`` builds only cli.py's own subparsers for its own commands.

A command line starting with ``list``, ``run``, ``compare``, ``plot``, ``verify`` or ``audit``
is parsed without the ``reproduce`` and ``bench`` subparsers (their modules import pandas and the
claims): the same namespace, help text and errors as the whole parser. Every other command line
(none, top-level help, another or a mistyped command) gets the whole parser. ``dp-experts list``
and ``audit`` then never import pandas in a fresh process (control: main's parser imported it).
"""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
import sys
from pathlib import Path

import pytest

from dp_experts_env import cli

ROOT = Path(__file__).resolve().parents[1]

#: Command lines of the own commands: options of each, and mistakes each parser reports.
OWN_LINES = [
    ["list"],
    ["run", "svt-restart", "--epsilon", "0.5", "--epsilon", "2", "--seeds", "3",
     "--env-set", "horizon=2000", "--noise", "grid", "--backend", "serial"],
    ["compare", "g.toml", "--out", "o", "--jobs", "2", "--no-progress", "--no-figures", "--pdf"],
    ["compare", "--horizon", "100", "--epsilons", "1", "8", "--agents", "hedge"],
    ["plot", "results/x", "--metric", "static_regret", "--out", "figs"],
    ["verify", "results/x"],
    ["audit", "hedge", "--epsilon", "2", "--runs", "10", "--multiplier", "0.5", "--mode", "paper"],
    ["list", "--help"], ["run", "-h"], ["compare", "--help"], ["plot", "-h"], ["verify", "-h"],
    ["audit", "--help"],
    ["list", "extra"], ["run"], ["compare", "--jobs", "two"], ["plot"],
    ["audit", "x", "--mode", "q"], ["verify", "a", "b"], ["run", "hedge", "--backend", "nowhere"],
]  # fmt: skip

#: Command lines that need the whole parser: its help, other commands and mistakes.
WHOLE_LINES = [[], ["-h"], ["--help", "list"], ["reproduce", "-h"], ["bench", "-h"],
               ["attack", "-h"], ["lst"], ["Reproduce"]]  # fmt: skip


def _parse(parser, argv):
    """(namespace or exit code, stdout, stderr) of ``parser.parse_args(argv)``."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            result = vars(parser.parse_args(argv))
        except SystemExit as stop:
            result = stop.code
    return result, out.getvalue(), err.getvalue()


def _commands(parser) -> list[str]:
    action = next(a for a in parser._actions if a.dest == "command")
    return list(action.choices)


@pytest.mark.parametrize("argv", OWN_LINES, ids=[" ".join(a) for a in OWN_LINES])
def test_an_own_command_parses_as_with_the_whole_parser(argv, monkeypatch):
    monkeypatch.setenv("COLUMNS", "100")  # help wraps at the terminal's width: one for both
    own = cli.parser_for(argv)
    assert "reproduce" not in _commands(own) and "bench" not in _commands(own)
    assert _parse(own, argv) == _parse(cli.build_parser(), argv), argv


@pytest.mark.parametrize("argv", WHOLE_LINES, ids=[" ".join(a) or "none" for a in WHOLE_LINES])
def test_every_other_command_line_gets_the_whole_parser(argv):
    """The mutant (an own-commands parser for these lines) would drop choices from the help and
    refuse ``reproduce``/``bench``."""
    assert _commands(cli.parser_for(argv)) == _commands(cli.build_parser())
    assert {"reproduce", "bench", "attack"} <= set(_commands(cli.build_parser()))
    assert set(cli.OWN_COMMANDS) <= set(_commands(cli.parser_for(["list"])))


def _fresh(code: str) -> subprocess.CompletedProcess:
    path = os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])
    env = dict(os.environ, PYTHONPATH=path)
    env.pop("DP_EXPERTS_PLUGINS", None)
    return subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )


LIST_TWICE = """
import contextlib, io, sys
from dp_experts_env import cli
light, whole = io.StringIO(), io.StringIO()
with contextlib.redirect_stdout(light):
    assert cli.main(["list"]) == 0
print("pandas after list:", "pandas" in sys.modules)
cli.build_parser()  # the old start: every command's parser, pandas and the claims imported
print("pandas after the whole parser:", "pandas" in sys.modules)
with contextlib.redirect_stdout(whole):
    assert cli.main(["list"]) == 0
print("same listing:", light.getvalue() == whole.getvalue() and "svt-restart" in light.getvalue())
"""


@pytest.mark.slow
def test_list_starts_without_pandas_and_prints_what_the_whole_parser_printed():
    """A fresh ``list`` imports no pandas (main's parser did, through reproduce); its output is
    byte for byte the listing after the whole parser's imports (the old start), in one process."""
    run = _fresh(LIST_TWICE)
    assert run.returncode == 0, run.stderr[-3000:]
    assert run.stdout.splitlines() == [
        "pandas after list: False",
        "pandas after the whole parser: True",  # the control: the whole parser imports pandas
        "same listing: True",
    ], run.stdout
