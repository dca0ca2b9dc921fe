"""A bench killed with SIGKILL resumes to the same card; the Ray backend writes the same card.

Both come from the grid runner the bench plays its tasks on (each task a resumable results
folder; any backend plays the same rows) and, for bench-v2's learned-adversary task, from its
stored cells (played in the bench's process whatever the backend): these tests check the bench
keeps both properties.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from test_bench_protocol import tiny_protocol

from dp_experts_env.bench.command import bench_learner

TASKS = ("shift", "anti-lazy", "stochastic", "learned-adversary")
LEARNER = "noisy-clipped-hedge"


def _card(out: Path, backend: str = "serial") -> dict:
    bench_learner(
        LEARNER,
        {},
        out,
        quick=True,
        backend=backend,
        command="same",
        protocol=tiny_protocol(TASKS, horizon=1500, seeds=4),
    )
    return json.loads((out / "bench.json").read_text())


@pytest.fixture(scope="session")  # the Ray test runs with the other Ray tests, at the end
def whole_card(tmp_path_factory) -> dict:
    """The card of an uninterrupted serial bench, played once for both tests (~4 s of CPU)."""
    return _card(tmp_path_factory.mktemp("whole"))


@pytest.mark.slow
def test_a_killed_bench_resumes_to_the_same_card(tmp_path, whole_card) -> None:
    killed = tmp_path / "killed"
    script = textwrap.dedent(
        f"""
        import sys
        sys.path.insert(0, {str(Path(__file__).parent)!r})
        from test_bench_resume import _card
        from pathlib import Path
        _card(Path({str(killed)!r}))
        """
    )
    proc = subprocess.Popen([sys.executable, "-c", script], env={**os.environ})
    first = killed / "runs" / TASKS[0] / "manifest.json"
    deadline = time.monotonic() + 120
    while not first.exists() and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert not (killed / "bench.json").exists(), "the bench finished before it was killed"
    assert _card(killed) == whole_card


@pytest.mark.slow
def test_the_ray_backend_writes_the_same_card(tmp_path, ray_cluster, monkeypatch, whole_card):
    monkeypatch.setenv("DP_EXPERTS_RAY_TASK_SECONDS", "0")  # tasks, however small the bench
    assert _card(tmp_path / "ray", backend="ray") == whole_card
