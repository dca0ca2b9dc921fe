"""Issue 39, memory as stated: the sweep's memory model against measured peaks, and refusals.

The per-run model of ``dp_experts_env.evaluation.memory`` is held to the peak resident memory
(``VmHWM``) of a fresh process running a serial sweep at two sizes (within 1.5x either way);
a grid that would pass the limit is refused before anything is written, with the
``seeds_per_cell`` that fits when chunking is enough (and that grid then passes), or asked for
fewer seeds when even the kept rows would not fit.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from _store_files import run

from dp_experts_env.evaluation import EnvEntry, Grid, memory

ROOT = Path(__file__).resolve().parents[1]
SHIFT = {"n_experts": 10, "horizon": 200}

MEASURE = """
import sys, tempfile
from dp_experts_env.evaluation import EnvEntry, Grid, run_grid
seeds = int(sys.argv[1])
grid = Grid(agents=["hedge"], envs=[EnvEntry("DPExperts-Shift-v0", {shift!r})], n_seeds=seeds)
with tempfile.TemporaryDirectory() as folder:
    run_grid(grid, folder + "/out", backend="serial", progress=False)
for line in open("/proc/self/status"):
    if line.startswith("VmHWM"):
        print(int(line.split()[1]) * 1024)
"""


def _grid(seeds: int, **kw) -> Grid:
    return Grid(agents=["hedge"], envs=[EnvEntry("DPExperts-Shift-v0", dict(SHIFT))],
                n_seeds=seeds, **kw)  # fmt: skip


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs Linux's /proc")
@pytest.mark.parametrize("seeds", [1000, 4000])
def test_the_model_is_within_1_5x_of_the_measured_peak(seeds):
    env = {**os.environ, "PYTHONPATH": str(ROOT), "DP_EXPERTS_CACHE_DIR": "off"}
    done = subprocess.run(
        [sys.executable, "-c", MEASURE.format(shift=SHIFT), str(seeds)],
        env=env, capture_output=True, text=True, timeout=600, check=True,
    )  # fmt: skip
    measured = int(done.stdout.split()[-1])
    predicted = memory.check_grid_memory(_grid(seeds))
    assert 1 / 1.5 <= predicted / measured <= 1.5, (predicted / 2**20, measured / 2**20)


def test_a_grid_that_would_not_fit_is_refused_with_the_chunk_that_fits(tmp_path):
    limit = 2 * 2**30
    small = memory.check_grid_memory(_grid(10), limit=limit)  # control: it fits
    assert memory.FIXED_BYTES < small < limit
    big = _grid(60_000)  # 60k runs played at once: ~2.6 GiB, ~0.8 GiB of them kept
    with pytest.raises(ValueError, match=r"set seeds_per_cell to (\d+) or less") as caught:
        memory.check_grid_memory(big, limit=limit)
    fits = int(caught.value.args[0].rsplit("seeds_per_cell to ", 1)[1].split()[0])
    assert 1 <= fits < 60_000
    memory.check_grid_memory(_grid(60_000, seeds_per_cell=fits), limit=limit)  # now it fits
    with pytest.raises(ValueError, match="set seeds_per_cell"):
        memory.check_grid_memory(_grid(60_000, seeds_per_cell=fits + 1000), limit=limit)
    # Even one seed per cell cannot hold 300k runs' rows in 2 GiB.
    with pytest.raises(ValueError, match="fewer seeds or a smaller n_record"):
        memory.check_grid_memory(_grid(300_000, seeds_per_cell=100), limit=limit)


def test_run_grid_refuses_before_writing_anything(tmp_path, monkeypatch):
    monkeypatch.setattr(memory, "memory_limit", lambda: 2**28)  # 256 MiB
    with pytest.raises(ValueError, match="would need about"):
        run(_grid(20_000), tmp_path / "out")
    assert not (tmp_path / "out").exists()
    monkeypatch.undo()
    assert memory.memory_limit() <= 16 * 2**30
