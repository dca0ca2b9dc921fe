"""docs/own_learner.md: every code block runs (python in a fresh interpreter, bash from the
repository root with ``-euo pipefail``), as a newcomer would paste them. The page's only runner:
tests/test_docs_code.py leaves these blocks to this test and checks that ``BLOCKS`` covers them."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "own_learner.md"
BLOCKS = [
    (lang, code)
    for lang, code in re.findall(r"```(\w+)\n(.*?)```", PAGE.read_text(), re.S)
    if lang in ("python", "bash")
]


def test_the_page_has_runnable_blocks():
    assert [lang for lang, _ in BLOCKS].count("python") >= 3
    assert [lang for lang, _ in BLOCKS].count("bash") >= 3


@pytest.mark.slow
@pytest.mark.parametrize("path", ["as-set", "numpy"])
@pytest.mark.parametrize(("lang", "code"), BLOCKS, ids=[f"block{i}" for i in range(len(BLOCKS))])
def test_block_runs(lang, code, path, tmp_path):
    # Slow tests stay out of CI's numpy-path pass, so the page's numpy path is played here.
    env = {k: v for k, v in os.environ.items() if k != "DP_EXPERTS_PLUGINS"}
    if path == "numpy":
        env["DP_EXPERTS_NO_JIT"] = "1"
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    shell = ["bash", "-euo", "pipefail", "-c", code]
    cmd = [sys.executable, "-c", code] if lang == "python" else shell
    run = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
