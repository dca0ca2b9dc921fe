"""Catch a false privacy claim with the audit.

Each audit runs a mechanism or learner many times on two neighbouring inputs and turns event
counts into a Clopper-Pearson lower bound on epsilon (docs/privacy.md §4):

1. The search of ``dp-experts audit`` finds no violation for the correct ``limited-updates`` and
   says how large a violation it could have seen; the same learner with half its noise (an audit
   mutant: ``ScaledBackend``, the claim unchanged) is caught.
2. A classic accounting error is caught: Laplace noise on a loss *vector* calibrated to the
   per-coordinate sensitivity 1 instead of the L1 sensitivity N (erratum E-ARS-15 in
   docs/errata.md, which ``noisy-clipped-hedge`` reproduces in ``mode="paper"``). The correct
   scale shows no violation.
3. Floating point is caught: textbook float Laplace (``noise="fast"``) leaks its input through
   the low-order bits of the output; the lattice backend (``noise="grid"``) does not.

Usage: python examples/privacy_audit.py [--runs 20000]
"""

from __future__ import annotations

import argparse

import numpy as np

from dp_experts_env.evaluation.audit import audit_learner
from dp_experts_env.privacy import audit_mechanism, laplace_mechanism

N = 16


def main(n_runs: int = 20_000) -> dict[str, bool]:
    """Run the audits, print their verdicts and return ``{name: no violation found}``."""
    verdicts = {}

    # 1. The search (its first two scenarios here, to stay quick) on the learner and a mutant.
    for label, multiplier in (("correct", 1.0), ("noise x0.5", 0.5)):
        report = audit_learner(
            "limited-updates", multiplier=multiplier, runs=n_runs, selection_runs=2000, pairs=2
        )
        print(report.summary())
        verdicts[f"limited-updates ({label})"] = not report.violation

    # 2. Vector Laplace: the contrast sum_j s_j (x_j + Z_j) reads all N coordinates at once.
    signs = np.where(np.arange(N) % 2 == 0, 1.0, -1.0)
    x, x_neighbour = (signs < 0).astype(float), (signs > 0).astype(float)  # L1 distance N

    def vector_release(sensitivity: float):
        def fn(values, batch_rng):
            noisy = laplace_mechanism(
                np.asarray(values)[None, :],
                l1_sensitivity=sensitivity,
                epsilon=1.0,
                rng=batch_rng,
            ).value
            return noisy @ signs

        return fn

    for label, sensitivity in (("L-inf scale 1 (E-ARS-15)", 1.0), ("L1 scale N", float(N))):
        result = audit_mechanism(
            vector_release(sensitivity), x, x_neighbour, n_runs=n_runs, claimed_epsilon=1.0
        )
        verdicts[f"vector Laplace, {label}"] = result.passed

    # 3. Float attack: is the released value off the 2**-53 lattice?
    def low_bits(noise: str):
        def fn(value, batch_rng):
            out = laplace_mechanism(
                np.full((1, 1), float(value)),
                l1_sensitivity=1.0,
                epsilon=1.0,
                rng=batch_rng,
                noise=noise,
            ).value[:, 0]
            return (out * 2.0**53) % 1.0 != 0.0

        return fn

    for noise in ("fast", "grid"):
        result = audit_mechanism(low_bits(noise), 0.0, 1.0, n_runs=n_runs, claimed_epsilon=1.0)
        verdicts[f"low-order bits, noise={noise!r}"] = result.passed

    width = max(len(k) for k in verdicts)
    print("\nclaim epsilon = 1 in every audit; VIOLATION means the audit proved the claim false")
    for name, clean in verdicts.items():
        print(f"  {name:<{width}}  {'no violation found' if clean else 'VIOLATION'}")
    return verdicts


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20_000)
    main(parser.parse_args().runs)
