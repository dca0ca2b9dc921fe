"""Smoke test of the benchmark scripts: each runs its smallest configuration and writes JSON.

No timing is asserted (numbers on a shared machine are not test material); only that every script
runs end to end and reports the keys the README's table is built from.

The point is each script's code end to end, not an interpreter's start: most scripts run in this
process (``runpy``, as ``__main__`` with their command line, ``sys.argv`` and ``sys.path`` put
back after), which saves each one a fresh interpreter's imports and kernel loads (about 1 s of
CPU per script). A script that changes process-wide state or measures its own process runs in a
fresh interpreter (:data:`FRESH_PROCESS`, with the reason); an in-process script that leaves the
environment variables changed fails its smoke; torch's thread count is put back after.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import runpy
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

EXPECTED = {
    "env_throughput": {"rows", "single_env", "bandit", "targets", "machine", "budget_seconds"},
    "agent_throughput": {"rows", "batch", "target_speedup", "missed", "machine"},
    "end_to_end": {
        "n_cells",
        "command_cpu_seconds",
        "peak_rss_mb",
        "per_agent",
        "per_cell",
        "trees",
        "against",
    },
    "memory": {"episode", "svt", "bandit", "targets", "machine"},
    "bandit_baseline": {"rows", "reference", "targets", "machine"},
    "bandit_separation": {"rows", "env", "env_params", "seeds", "machine"},
    "calibration": {"learners", "horizon", "runs", "machine"},
    "streams": {"rows", "stream", "machine"},
    "strongest_baselines": {"comparisons", "horizon", "runs", "machine"},
    "seeds_stand": {"rows", "horizon", "runs", "machine"},
    "svt_release_audit": {"rows", "selection_runs", "test_runs", "machine"},
    "rl_baseline": {"rows", "horizon", "timesteps", "learns", "machine"},
    "regret_table": {"rows", "rounds_per_call", "machine"},
    "feedback_blocks": {"rows", "horizon", "reps", "machine"},
    "bandit_play_block": {"rows", "horizon", "reps", "machine"},
    "bandit_kernels": {"rows", "horizon", "reps", "machine"},
    "default_vs_fused": {"cpu_seconds", "blocks_over_fused", "per_round_over_fused",
                         "per_round_over_blocks", "ns_per_run_round", "n_cells", "machine"},
    "fixed_cost": {"median_cpu_seconds", "floor", "floor_without_pandas", "suite_over_floor",
                   "target_seconds", "machine"},
    "learner_costs": {"rows", "horizon", "seeds", "machine"},
    "ray_overhead": {"serial_cpu_seconds", "ray_cpu_seconds", "overhead_per_cell_seconds",
                     "ray_tasks", "ray_no_floor_cpu_seconds", "ray_no_floor_tasks",
                     "ray_startup_cpu_seconds", "rows_identical", "transport_rows_bytes",
                     "transport_columns_bytes", "machine"},
}
ROW_KEYS = {
    "env_throughput": {"N", "S", "B", "native_steps_per_s", "lean_steps_per_s",
                       "sync_steps_per_s", "kernel_steps_per_s", "native_over_sync",
                       "native_over_kernel"},
    "agent_throughput": {"agent", "feedback", "rounds_per_s_B1", "rounds_per_s_batched",
                         "speedup", "target_met"},
    "bandit_baseline": {"repetitions", "ours_steps_per_s", "numpy_steps_per_s",
                        "ours_over_reference"},
    "bandit_separation": {"learner", "epsilon", "static_pseudo_regret", "ci_low", "ci_high",
                          "over_uniform", "static_regret"},
    "svt_release_audit": {"scenario", "actions", "actions_and_answers", "power", "event"},
    "rl_baseline": {"env", "learner", "ci_low", "ci_high", "iqm"},
    "seeds_stand": {"learner", "paper", "setting", "epsilon", "regret", "baseline", "ratio"},
    "feedback_blocks": {"env", "learner", "B", "per_round_us", "blocks_us", "speedup",
                      "identical"},
    "bandit_play_block": {"env", "learner", "B", "act_us", "play_block_us", "speedup",
                          "identical"},
    "bandit_kernels": {"learner", "advice", "B", "block", "per_round_ns", "blocks_ns", "speedup",
                       "identical"},
    "learner_costs": {"learner", "env", "ns/run-round", "x default"},
    "regret_table": {"B", "S", "N", "numpy_ns_per_entry", "kernel_ns_per_entry",
                     "block_ns_per_entry"},
    "streams": {"B", "W", "build_us_per_run_generators", "build_us_per_run_array",
                "refill_ns_per_double_generators", "refill_ns_per_double_array",
                "build_speedup", "refill_speedup", "identical"},
}  # fmt: skip


# The longest smoke runs (several seconds each) go with the slow tests.
SLOW_SCRIPTS = {
    "end_to_end",
    "memory",
    "bandit_baseline",
    "bandit_separation",
    "env_throughput",
    "agent_throughput",
    "rl_baseline",
    "default_vs_fused",
    "regret_table",
    "feedback_blocks",
    "bandit_play_block",
    "bandit_kernels",
    "ray_overhead",
    "fixed_cost",
    "learner_costs",
}

#: Scripts smoked in a fresh interpreter, and why (the others run in this process).
FRESH_PROCESS = {
    "ray_overhead": "starts and shuts down its own Ray instance; reads its process tree's CPU",
    "bandit_baseline": "may put a seaborn stub into sys.modules and patch scipy.special",
    "default_vs_fused": "switches DP_EXPERTS_NO_JIT in its own environment",
    "regret_table": "switches DP_EXPERTS_NO_JIT in its own environment",
}

#: scripts smoked by their own test module instead (with their own assertions)
SMOKED_ELSEWHERE = {
    "oco_regret": "tests/test_oco_benchmarks.py",
    "oco_audit": "tests/test_oco_benchmarks.py",
    "fused_loop": "tests/test_fused_loop.py",
}


def test_every_benchmark_script_is_smoked() -> None:
    scripts = {p.stem for p in (ROOT / "benchmarks").glob("*.py") if not p.stem.startswith("_")}
    missing = scripts - set(EXPECTED) - set(SMOKED_ELSEWHERE)
    assert not missing, f"benchmark scripts without a smoke test: {sorted(missing)}"
    assert set(FRESH_PROCESS) <= set(EXPECTED), set(FRESH_PROCESS) - set(EXPECTED)
    for name, module in SMOKED_ELSEWHERE.items():
        assert f'"{name}"' in (ROOT / module).read_text()


def _run_in_process(script: Path, args: list[str]) -> None:
    """Run ``script`` as ``python script *args`` would, in this process.

    ``sys.argv`` and ``sys.path`` (the scripts put their folders first) are put back after; the
    environment must be left as found. The script's output is discarded (its JSON is read).
    """
    argv, path, environ = sys.argv, list(sys.path), dict(os.environ)
    torch = sys.modules.get("torch")  # its thread count is put back too (rl_baseline sets it)
    threads = torch.get_num_threads() if torch is not None else None
    sys.argv = [str(script), *args]
    sys.path.insert(0, str(script.parent))  # as the interpreter does for a script
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            runpy.run_path(str(script), run_name="__main__")
    except SystemExit as stop:  # `raise SystemExit(main())`, argparse's errors
        assert stop.code in (None, 0), f"{script.name} exited with {stop.code!r}"
    finally:
        sys.argv, sys.path[:] = argv, path
        if torch is not None:
            torch.set_num_threads(threads)
    assert dict(os.environ) == environ, f"{script.name} left the environment changed"


@pytest.mark.parametrize(
    "name",
    [pytest.param(n, marks=pytest.mark.slow) if n in SLOW_SCRIPTS else n for n in sorted(EXPECTED)],
)
def test_script_smoke(name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / f"{name}.json"
    if name in FRESH_PROCESS:
        proc = subprocess.run(
            [sys.executable, str(ROOT / "benchmarks" / f"{name}.py"), "--smoke", "--out", str(out)],
            capture_output=True,
            text=True,
            timeout=120,
            cwd=ROOT,
        )
        assert proc.returncode == 0, proc.stderr
    else:
        if name == "rl_baseline":
            # Imported first: torch's thread count is then put back after the run, and
            # torch._dynamo (which any optimizer imports) sets TORCHINDUCTOR_CACHE_DIR on import.
            import torch._dynamo  # noqa: F401
        monkeypatch.chdir(ROOT)
        _run_in_process(ROOT / "benchmarks" / f"{name}.py", ["--smoke", "--out", str(out)])
    data = json.loads(out.read_text())
    assert data["benchmark"] == name
    assert EXPECTED[name] <= set(data)
    for row in data.get("rows", []):
        assert ROW_KEYS[name] <= set(row)
        assert all(v > 0 for k, v in row.items() if k.endswith("_per_s") or k.startswith("rounds"))
    if name == "streams":
        assert all(row["identical"] for row in data["rows"])
        assert bool(data["rows"]) == ("skipped" not in data)
    if name == "memory":
        assert data["episode"]["peak_rss_mb"] > 0 and data["svt"]["seconds"] > 0
        assert all(row["peak_rss_mb"] > 0 for row in data["bandit"])
    if name == "end_to_end":
        assert data["n_cells"] == len(data["per_cell"]) >= 1
        assert data["command_cpu_seconds"] > 0
