"""Catch a false privacy claim with the audit.

Three audits, each running a mechanism or learner many times on two neighbouring inputs and
turning event counts into a Clopper-Pearson lower bound on epsilon (docs/privacy.md):

1. A correct learner passes: ``limited-updates`` on a worst-case neighbouring pair.
2. A classic accounting error is caught: Laplace noise on a loss *vector* calibrated to the
   per-coordinate sensitivity 1 instead of the L1 sensitivity N (the erratum P15 of brief 000,
   which ``noisy-clipped-hedge`` reproduces in ``mode="paper"``). The correct scale passes.
3. Floating point is caught: textbook float Laplace (``noise="fast"``) leaks its input through
   the low-order bits of the output; the lattice backend (``noise="grid"``) does not.

Usage: python examples/privacy_audit.py [--runs 20000]
"""

from __future__ import annotations

import argparse

import numpy as np

from dp_experts_env.evaluation.audit import audit_agent
from dp_experts_env.privacy import audit_mechanism, laplace_mechanism

N = 16


def main(n_runs: int = 20_000) -> dict[str, bool]:
    """Run the three audits, print their verdicts and return ``{name: passed}``."""
    verdicts = {}

    # 1. A correct claim. Worst case for one round: a loss vector replaced by its complement.
    rng = np.random.default_rng(0)
    losses = rng.integers(0, 2, size=(8, 4)).astype(float)
    neighbour = losses.copy()
    neighbour[3] = 1.0 - neighbour[3]
    result = audit_agent("limited-updates", losses, neighbour, n_runs=n_runs, epsilon=1.0)
    verdicts["limited-updates (correct)"] = result.passed

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

    for label, sensitivity in (("L-inf scale 1 (P15)", 1.0), ("L1 scale N (strict)", float(N))):
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
    print("claim epsilon = 1 in every audit; FAILED means the audit proved the claim false")
    for name, passed in verdicts.items():
        print(f"  {name:<{width}}  {'passed' if passed else 'FAILED'}")
    return verdicts


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20_000)
    main(parser.parse_args().runs)
