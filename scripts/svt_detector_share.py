"""How much of its declared share can svt-restart's detector show on its answers alone?

svt-restart's claim is split: eps/2 for the selections, eps/2 for the sparse vector (threshold
noise Lap(sigma), query noise Lap(2 sigma), query sensitivity 2; sigma = 8 at eps = 1). The
noise-x0.5 mutant halves both scales, so each part is worth eps = 1 by its accountant -- the
whole claim -- and no event reading one part can exceed the claim (docs/privacy.md, "Split
claims"). An event that reads the detector only (its answers from the changed round until a
TOP, before any selection reads that round) is bounded by the detector's *share*, though: a
part-level test against 0.5 could see the mutant if the detector can show more than 0.5.

This computes, by numerical integration over the threshold noise (no sampling), the exact
log-ratio of the best "m BOTTOMs, then a TOP" event of one AboveThreshold instance whose queries
move by ``shift`` between the neighbours, for two shift patterns svt-restart's queries (the
learner's window loss minus the best expert's) can take under one changed loss vector that
raises the learner's expert and expert c by 1 and lowers expert b by 1:

* ideal: +2 on every BOTTOM round (b is the window's best on both sides), 0 on the TOP round (c
  is the best on both sides) -- needs the best expert to switch from b to c in one round, which
  losses in [0, 1] cannot do (S_b - S_c must go from < 0 to > 2);
* reachable: the switch spread over the fewest rounds losses allow (S_b - S_c = -0.1, 0.9, 1.9,
  2.9), i.e. shifts +2 ..., +1, +0.1, then the TOP at 0.

Queries are placed relative to the (noise-free) threshold on a grid; reported: the best
event's epsilon and probability, and the best with probability >= 1e-2 (what 10^5-10^6 runs a
side can count). Usage: ``python scripts/svt_detector_share.py`` (about a minute of CPU).
Not a test; docs/privacy.md records the run.
"""

from __future__ import annotations

import numpy as np
from scipy import stats

RHO = np.linspace(-150.0, 150.0, 30001)  # threshold noise grid (wide enough for sigma <= 8)


def event_probability(
    sigma: float, bottoms: list[float], top: float, shifts: list[float], shift_top: float
) -> float:
    """P(BOTTOM at each query in ``bottoms`` (+ shift), then TOP at ``top`` (+ shift_top))."""
    dr = RHO[1] - RHO[0]
    p = stats.laplace(scale=sigma).pdf(RHO)
    query = stats.laplace(scale=2.0 * sigma)
    for q, s in zip(bottoms, shifts, strict=True):
        p = p * query.cdf(RHO - (q + s))
    return float(np.sum(p * query.sf(RHO - (top + shift_top))) * dr)


def best_events(sigma: float, transition: list[float]) -> tuple[tuple, tuple]:
    """(best, best with probability >= 1e-2), each (epsilon, probability, m, q_bottom, q_top)."""
    found = []
    for m in (4, 8):
        shifts = [2.0] * m + transition
        for qb in np.arange(-8.0, 6.0, 2.0):
            for qt in np.arange(-4.0, 10.0, 2.0):
                qbs = [qb] * len(shifts)
                a = event_probability(sigma, qbs, qt, [0.0] * len(shifts), 0.0)
                b = event_probability(sigma, qbs, qt, shifts, 0.0)
                found.append((float(np.log(a / b)), a, m, qb, qt))
    likely = [f for f in found if f[1] >= 1e-2]
    return max(found), max(likely)


def main() -> None:
    """Print the table docs/privacy.md quotes."""
    print("| learner (eps = 1) | shift pattern | best event | best with p >= 1e-2 |")
    print("|---|---|---|---|")
    for label, sigma in (("x0.5 mutant (share 0.5, accountant 1)", 4.0), ("correct", 8.0)):
        for name, transition in (("ideal", []), ("reachable", [1.0, 0.1])):
            (e1, p1, *_), (e2, p2, m, qb, qt) = best_events(sigma, transition)
            print(
                f"| {label} | {name} | {e1:.3f} (p {p1:.1e}) | {e2:.3f} (p {p2:.3f}; "
                f"{m} BOTTOMs at {qb:g}, TOP at {qt:g}) |"
            )


if __name__ == "__main__":
    main()
