"""The default comparison's arithmetic as one fused compiled loop: the practical limit.

Per run and round, what the default comparison (``dp-experts compare``: DPExperts-Shift-v0, N =
10, T = 10^4, 4 shifts, gap 0.3) must at least compute: the round's Bernoulli losses from the
segment's means, a Hedge-type learner (exponential weights kept multiplicatively: one factor per
expert and round, a constant one for 0/1 losses; one inverse-CDF draw; a private cell at finite
epsilon adds N Laplace draws to the losses it learns from, so N ``log1p`` and N ``exp``), the
charged loss, and the exact S = 4 switch recursion of ``regret.py`` with the fixed-expert sums and
the per-round best. No Python, no arrays per round, numba's own generator. Each cell draws its
own losses and keeps its own table (the suite draws each loss stream once for all learners of a
seed): that makes this limit slightly generous to the suite, by the env's share of a run-round.

Not a model of any one learner: the private learners do more per round (tree aggregation,
restarts, detectors); the limit is the floor under all of them, the number the issue compares
the suite's CPU to.

Usable as a script (``python benchmarks/fused_loop.py`` prints the limit of the default grid)
and imported by ``default_vs_fused.py``.
"""

from __future__ import annotations

import math
import time

import numba
import numpy as np

try:  # run as a script: put the repository first on sys.path (the house rule)
    import _common  # noqa: F401
except ImportError:  # imported as benchmarks.fused_loop
    from benchmarks import _common  # noqa: F401


@numba.njit(cache=True, nogil=True)
def fused_cell(horizon, n, n_shifts, gap, runs, seed, eta, noise_scale):  # noqa: ANN001, ANN201
    """Play ``runs`` runs of one cell; returns the (runs,) final dynamic regrets.

    Draws from numba's own per-thread generator (the legacy ``np.random`` calls compile to it:
    no Generator object, no Python), which is the cheapest stream a compiled loop has.
    """
    out = np.empty(runs)
    levels = n_shifts
    for r in range(runs):
        np.random.seed(seed + r)  # noqa: NPY002
        # Change points (sorted distinct rounds in 2..T) and each segment's best expert.
        cuts = np.sort(np.random.choice(horizon - 1, n_shifts, replace=False) + 2)  # noqa: NPY002
        best = np.random.randint(0, n, n_shifts + 1)  # noqa: NPY002
        means = np.full(n, 0.5)
        segment = 0
        means[best[0]] = 0.5 - gap
        decay = math.exp(-eta)
        fixed = np.zeros(n)  # the experts' sums (table level 0)
        table = np.zeros((levels, n))
        minima = np.zeros(levels + 1)
        losses = np.empty(n)
        weights = np.ones(n)
        charged = 0.0
        per_round_best = 0.0
        for t in range(1, horizon + 1):
            if segment < n_shifts and t == cuts[segment]:
                means[best[segment]] = 0.5
                segment += 1
                means[best[segment]] = 0.5 - gap
            least = 1.0
            for j in range(n):
                losses[j] = 1.0 if np.random.random() < means[j] else 0.0  # noqa: NPY002
                least = min(least, losses[j])
            # The learner: weights exp(-eta L) kept multiplicatively (one factor per expert and
            # round; without noise the losses are 0/1, so the factor is a constant), rescaled
            # when they get small; one inverse-CDF draw.
            total = 0.0
            for j in range(n):
                total += weights[j]
            if total < 1e-200:
                for j in range(n):
                    weights[j] *= 1e200
                total *= 1e200
            u = np.random.random() * total  # noqa: NPY002
            action = n - 1
            acc = 0.0
            for j in range(n):
                acc += weights[j]
                if u < acc:
                    action = j
                    break
            charged += losses[action]
            for j in range(n):
                if noise_scale > 0.0:
                    v = np.random.random() - 0.5  # noqa: NPY002
                    noisy = losses[j] - noise_scale * math.copysign(1.0, v) * math.log1p(
                        -2.0 * abs(v)
                    )
                    weights[j] *= math.exp(-eta * noisy)
                elif losses[j] > 0.0:
                    weights[j] *= decay
            # The exact S-switch recursion, top level first.
            for c in range(levels - 1, -1, -1):
                below = minima[c]
                m = np.inf
                for j in range(n):
                    v = min(table[c, j], below) + losses[j]
                    table[c, j] = v
                    m = min(m, v)
                minima[c + 1] = m
            m = np.inf
            for j in range(n):
                fixed[j] += losses[j]
                m = min(m, fixed[j])
            minima[0] = m
            per_round_best += least
        out[r] = charged - minima[levels]
    return out


def default_cells(epsilons=(0.5, 2.0, 8.0, 32.0, math.inf)) -> list[tuple[str, float]]:
    """(learner, epsilon) of the default grid: the baselines once, private learners per epsilon."""
    from dp_experts_env.evaluation.defaults import default_agents

    cells = []
    for entry in default_agents():
        import agents

        private = agents.spec(entry.name).private
        cells += [(entry.name, e) for e in epsilons] if private else [(entry.name, math.inf)]
    return cells


def fused_grid(
    cells: list[tuple[str, float]], horizon: int, seeds: int, n: int = 10, shifts: int = 4
) -> float:
    """Play every cell fused; returns the sum of the final regrets (keeps the work alive)."""
    eta = math.sqrt(8.0 * math.log(n) / horizon)
    total = 0.0
    for i, (_, epsilon) in enumerate(cells):
        scale = 0.0 if math.isinf(epsilon) else n / epsilon
        total += float(fused_cell(horizon, n, shifts, 0.3, seeds, 1000 * i, eta, scale).sum())
    return total


def main() -> None:
    cells = default_cells()
    fused_grid(cells[:2], 100, 2)  # compile (or load the cache)
    start = time.process_time()
    fused_grid(cells, 10_000, 10)
    cpu = time.process_time() - start
    run_rounds = len(cells) * 10 * 10_000
    print(
        f"default grid fused: {len(cells)} cells, {cpu:.2f} CPU s, "
        f"{cpu / run_rounds * 1e9:.0f} ns per run-round"
    )


if __name__ == "__main__":
    main()
