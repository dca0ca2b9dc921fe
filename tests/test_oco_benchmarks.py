"""Smoke test of the OCO benchmark scripts: each runs its smallest configuration and writes the
JSON keys docs/algorithms.md and docs/privacy.md read (no timing asserted)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
EXPECTED = {
    "oco_regret": {"baselines", "dp", "lazy", "horizons", "runs"},
    "oco_audit": {"rows", "renyi"},
}


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_oco_benchmark_smoke(name, tmp_path):
    out = tmp_path / f"{name}.json"
    proc = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / f"{name}.py"), "--smoke", "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )
    assert proc.returncode == 0, proc.stderr
    data = json.loads(out.read_text())
    assert data["benchmark"] == name and EXPECTED[name] <= set(data)
    if name == "oco_regret":
        assert data["dp"]["certified_within_epsilon"]
        assert all(r["epsilon_certified"] <= r["epsilon"] for r in data["dp"]["ladder"])
    else:
        row = data["rows"][0]
        assert row["correct_passed"] and row["mutant_lb"] > row["correct_lb"]
