"""examples/oco_pcomw.py runs and its numbers are consistent."""

import math
import runpy
from pathlib import Path

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "oco_pcomw.py"


def test_example_runs_and_reports_claims():
    results = runpy.run_path(str(EXAMPLE))["main"](["--horizon", "200", "--seeds", "2"])
    assert results["p-comw dp eps=1"]["claim"].epsilon <= 1.0 + 1e-9
    assert math.isinf(results["p-comw dp eps=inf"]["claim"].epsilon)
    lazy = [k for k in results if k.startswith("p-comw lazy")]
    for key in lazy:
        # Exactly S expected switches (calibrated lazy tuning): two runs stay within 4 sd.
        budget = int(key.split("S=")[1])
        assert results[key]["switches"].mean() <= budget + 4 * math.sqrt(budget)
    ftrl = results["ftrl-oco"]["static_regret"]
    assert (results["p-comw dp eps=inf"]["static_regret"] == ftrl).all()
