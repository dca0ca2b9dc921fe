"""examples/privacy_audit.py: correct claims show no violation; a mutant, the E-ARS-15 vector
Laplace and the float attack are caught."""

import runpy
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "privacy_audit.py"


@pytest.mark.slow
def test_privacy_audit_example_verdicts():
    verdicts = runpy.run_path(str(EXAMPLE))["main"](n_runs=10_000)
    assert verdicts == {
        "limited-updates (correct)": True,
        "limited-updates (noise x0.5)": False,
        "vector Laplace, L-inf scale 1 (E-ARS-15)": False,
        "vector Laplace, L1 scale N": True,
        "low-order bits, noise='fast'": False,
        "low-order bits, noise='grid'": True,
    }
