"""Issue #38's done-when numbers: the strongest private baselines against the seed learners.

Each comparison plays every learner on the same env seeds (0 .. runs-1; agent seed 10,000) and
reports the mean final regret +- its standard error, then the done-when ratio at epsilon 1:

* ``tracking`` -- DPExperts-Shift-v0 at T = 10^4 (dynamic regret), twice: the env's defaults
  (N = 10, gap 0.1, S = 4) and the setting of the issue and of benchmarks/calibration.py
  (N = 10, S = 4, gap 0.3); and DPExperts-Oblivious-v0 ``switching_deterministic``. Target:
  private-fixed-share <= 0.75x noisy-clipped-hedge. Beside the default, the candidate defaults
  of private-fixed-share (each derived from public quantities only, never from these runs;
  docs/algorithms.md "`private-fixed-share`: the candidates"): the block length minimising the
  bound with the comparator's complexity C_K(m) (and with the per-switch lag), the rate from the
  exact Laplace moment generating function, and the leader release (a block's exponential-
  mechanism choice instead of its noisy sums; a candidate defined here, not a registered
  learner).
* ``static`` -- DPExperts-Oblivious-v0 ``anti_lazy`` at T = 10^4 (static regret), every
  (epsilon, delta) learner at delta = 1e-6. Target: gaussian-tree-hedge <= 0.6x
  private-shrinking-dartboard.
* ``bandit`` -- DPExperts-Bandit-v0 defaults at T = 10^4 (static pseudo-regret). Target:
  dp-klucb <= adap-ucb. dp-se (private successive elimination) against adap-ucb there and at
  T = 10^5, where its first epochs (thousands of pulls per arm) have ended.

Learners not registered in this tree are skipped. Usage::

    python benchmarks/strongest_baselines.py            # 10 runs (~8 min on 2 cores)
    python benchmarks/strongest_baselines.py --quick    # T = 2,000, 4 runs
    python benchmarks/strongest_baselines.py --smoke    # T = 200, 2 runs, epsilon 1 only
    python benchmarks/strongest_baselines.py --only tracking  # the tracking comparisons (~6 min)

Not a test: nothing here asserts (tests/test_private_fixed_share.py and
tests/test_gaussian_tree_hedge.py pin the same claims at test sizes).
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import agents  # noqa: E402
import dp_experts_env  # noqa: E402,F401  (registers the ids)
from agents._simplex import log_mix_uniform, log_softmax  # noqa: E402
from agents.base import clip_unit  # noqa: E402
from agents.full_info import fixed_share_tuning  # noqa: E402
from agents.private_fixed_share import PrivateFixedShare, block_tuning  # noqa: E402
from benchmarks._common import parse_args, write_json  # noqa: E402
from dp_experts_env import samplers  # noqa: E402
from dp_experts_env.evaluation.episode import play  # noqa: E402

EPSILONS = (0.5, 1.0, 2.0, math.inf)
#: the tracking comparisons also at epsilon 8 (private-fixed-share's candidates: monotone in eps)
TRACKING_EPSILONS = (0.5, 1.0, 2.0, 8.0, math.inf)


def _complexity(n: int, k: int, s: int) -> float:
    """Fixed-Share's S-switch complexity ``C_K`` over K rounds (``ln N`` when S = 0)."""
    s = min(s, k - 1)
    return math.log(n) if s <= 0 else (s + 1) * math.log(n) + s * math.log(math.e * (k - 1) / s)


def _block_bound(n: int, t: int, s: int, eps: float, m: int, *, exact: bool, lag: bool) -> tuple:
    """private-fixed-share's bound at block length m and its best rate on the sums.

    ``m (C_K / eta' + K (eta'/8 + psi(eta')))`` over the K = ceil(T/m) blocks, psi the noise's
    per-block cost: ``eta' b^2`` (second order, the shipped tuning; eta' capped at 1/(2b)) or the
    exact Laplace log-MGF ``-ln(1 - eta'^2 b^2) / eta'`` (``exact``), b = N/(eps m); plus
    ``S (m - 1)`` (``lag``: a per-round switch inside a block costs at most m - 1 rounds).

    Returns:
        ``(bound, eta)`` with eta on the block sums.
    """
    k = -(-t // m)
    b = n / (eps * m)
    c = _complexity(n, k, s)
    if exact:
        grid = np.linspace(1e-4, 1.0 - 1e-4, 20_000) / b  # eta' < 1/b, where the MGF exists
        cost = c / grid + k * (grid / 8 - np.log1p(-((grid * b) ** 2)) / grid)
        i = int(np.argmin(cost))
        value, eta = float(cost[i]), float(grid[i])
    else:
        eta = min(math.sqrt(c / (k * (0.125 + b * b))), 0.5 / b)
        value = c / eta + eta * k * (0.125 + b * b)
    return m * value + (s * (m - 1) if lag else 0.0), eta / m


def candidate_params(kind: str, n: int, t: int, s: int, eps: float) -> dict[str, Any]:
    """private-fixed-share's overrides for a candidate default (public quantities only).

    ``sqrt2``: the issue's m = round(sqrt(2) N / eps); ``bound_c`` / ``bound_c_lag``: the m in
    [1, T] minimising :func:`_block_bound` (second-order noise cost; without / with the lag);
    ``exact_mgf``: the default m with the rate minimising the exact-MGF bound. At eps = inf every
    candidate is the default (m = 1, exact sums).
    """
    if math.isinf(eps):
        return {}
    if kind == "sqrt2":
        return {"block": max(1, min(t, round(math.sqrt(2.0) * n / eps)))}
    if kind in ("bound_c", "bound_c_lag"):
        lag = kind == "bound_c_lag"
        top = min(t, 50 * max(1, round(n / eps)))
        ms = range(1, top + 1)
        best = min(ms, key=lambda m: _block_bound(n, t, s, eps, m, exact=False, lag=lag)[0])
        return {"block": best}
    if kind == "exact_mgf":
        m = max(1, min(t, round(math.sqrt(8.0) * n / eps)))
        return {"block": m, "eta": _block_bound(n, t, s, eps, m, exact=True, lag=False)[1]}
    raise ValueError(f"unknown candidate {kind!r}")


def linf_variance(n: int, eps: float) -> float:
    """Per-coordinate variance of the L-infinity K-norm noise: ``(N+1)(N+2) / (3 eps^2)``.

    The noise ``r x``, ``r ~ Gamma(N + 1, 1/eps)``, x uniform in the cube [-1, 1]^N, has
    density ``~ exp(-eps ||z||_inf)`` (Hardt & Talwar 2010): ``E r^2 E x_i^2``. Laplace's is
    ``2 N^2 / eps^2``.
    """
    return (n + 1) * (n + 2) / (3.0 * eps * eps)


class LInfRelease(PrivateFixedShare):
    """Candidate: the block sums released with L-infinity K-norm noise instead of Laplace.

    One round's loss vector moves a block's sums by at most 1 in every coordinate: L-infinity
    sensitivity 1, so noise of density ``~ exp(-eps ||z||_inf)`` is eps-DP (the K-norm mechanism
    of Hardt & Talwar 2010 with the cube as ball), drawn as ``r x`` with ``r ~ Gamma(N + 1,
    1/eps)`` (N + 1 exponentials) and x uniform in [-1, 1]^N. Its per-coordinate variance
    ``v = (N+1)(N+2)/(3 eps^2)`` is 44 / eps^2 at N = 10 against Laplace's 200 / eps^2: the same
    bound as the default's with ``2 N^2/eps^2`` replaced by v gives ``m = round(2 sqrt(v))`` (13
    at N = 10, eps = 1) and noisy-clipped-hedge's calibrated rate at ``b = sqrt(v/2)/m``.
    Privacy as the default's (parallel composition over the disjoint blocks). At eps = inf the
    learner is the default. A measurement candidate only: not registered, not audited, round by
    round.
    """

    def __init__(self, n: int, t: int, *, epsilon: float, n_switches: int, **kw: Any) -> None:
        v = linf_variance(n, epsilon) if math.isfinite(epsilon) else 0.0
        m = max(1, min(t, round(2.0 * math.sqrt(v)))) if v else 1
        super().__init__(n, t, epsilon=epsilon, n_switches=n_switches, block=m, **kw)
        if v:
            self.alpha, self.eta = block_tuning(n, t, n_switches, m, math.sqrt(v / 2.0))

    def _learn(self, obs: np.ndarray) -> None:
        if self.noise_scale == 0.0:
            super()._learn(obs)
            return
        self.block_sums += clip_unit(obs)
        if self.t % self.block:
            return
        n = self.n_experts
        u = self.rng.random((2 * n + 1,))
        radius = samplers.exponential(u[:, : n + 1]).sum(axis=1, keepdims=True) / self.epsilon
        noisy = self.block_sums + radius * (2.0 * u[:, n + 1 :] - 1.0)
        self.log_weights = log_mix_uniform(
            log_softmax(self.log_weights - self.eta * noisy), self.alpha
        )
        self.block_sums = np.zeros_like(self.block_sums)

    def play_block(self, obs: np.ndarray) -> np.ndarray:
        """Round by round (a measurement candidate has no block path)."""
        return np.array([self.act(row) for row in obs], dtype=np.int64).reshape(len(obs), -1)


class LeaderRelease(PrivateFixedShare):
    """Candidate: each block releases its exponential-mechanism choice, not its noisy sums.

    When a block ends, ``J ~ exp(-eps L_j / 2)`` over its loss sums L (each coordinate moves by
    at most 1 when one round's loss vector changes: sensitivity 1, factor 2 for scores that are
    not monotone; McSherry & Talwar 2007), drawn as the Gumbel-max ``argmax(-eps L / 2 + G)``;
    Fixed-Share then steps on the indicator loss ``1 - e_J`` with its own tuning for losses in
    [0, 1] over the K blocks. Privacy as the default's: one release per disjoint block (parallel
    composition), plays post-processing. The block length is the default's; at eps = inf the
    learner is the default (exact sums, m = 1). A measurement candidate only: not registered,
    not audited, round by round.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if self.noise_scale > 0.0:
            k = -(-self.horizon // self.block)
            self.alpha, self.eta = fixed_share_tuning(
                self.n_experts, k, min(self.n_switches, k - 1)
            )

    def _learn(self, obs: np.ndarray) -> None:
        if self.noise_scale == 0.0:
            super()._learn(obs)
            return
        self.block_sums += clip_unit(obs)
        if self.t % self.block:
            return
        gumbel = samplers.gumbel(self.rng.random((self.n_experts,)))
        chosen = np.argmax(-0.5 * self.epsilon * self.block_sums + gumbel, axis=1)
        loss = np.ones_like(self.block_sums)
        loss[np.arange(loss.shape[0]), chosen] = 0.0
        self.log_weights = log_mix_uniform(
            log_softmax(self.log_weights - self.eta * loss), self.alpha
        )
        self.block_sums = np.zeros_like(self.block_sums)

    def play_block(self, obs: np.ndarray) -> np.ndarray:
        """Round by round (a measurement candidate has no block path)."""
        return np.array([self.act(row) for row in obs], dtype=np.int64).reshape(len(obs), -1)


@dataclass(frozen=True)
class Comparison:
    """One env, its metric, the learners (label -> (name, params)) and the done-when ratio."""

    env_id: str
    env_params: dict[str, Any]
    metric: str
    learners: dict[str, tuple[str, dict[str, Any]]]
    target: tuple[str, str, float]  # (ours, reference, largest ratio at epsilon 1)
    baselines: tuple[str, ...] = field(default_factory=tuple)  # non-private references
    epsilons: tuple[float, ...] = EPSILONS


def comparisons(horizon: int) -> dict[str, Comparison]:
    """The three comparisons of the issue at horizon T."""
    shift = "DPExperts-Shift-v0"
    tracking_learners = {
        "private-fixed-share": ("private-fixed-share", {}),
        "private-fixed-share (m = sqrt(2) N/eps)": ("private-fixed-share", {"candidate": "sqrt2"}),
        "candidate: m minimising the bound with C_K(m)": (
            "private-fixed-share",
            {"candidate": "bound_c"},
        ),
        "candidate: the same with the per-switch lag": (
            "private-fixed-share",
            {"candidate": "bound_c_lag"},
        ),
        "candidate: rate from the exact Laplace MGF": (
            "private-fixed-share",
            {"candidate": "exact_mgf"},
        ),
        "candidate: L-inf K-norm noise, m = 2 sqrt(v)": (
            "private-fixed-share",
            {"candidate": "linf"},
        ),
        "candidate: leader release (exponential mechanism)": (
            "private-fixed-share",
            {"candidate": "leader"},
        ),
        "noisy-clipped-hedge": ("noisy-clipped-hedge", {}),
        "meta-expert-reduction": ("meta-expert-reduction", {}),
        "svt-restart": ("svt-restart", {}),
    }
    delta = {"delta": 1e-6}
    return {
        "tracking (Shift-v0 defaults)": Comparison(
            shift,
            {"horizon": horizon},
            "dynamic_regret",
            tracking_learners,
            ("private-fixed-share", "noisy-clipped-hedge", 0.75),
            ("fixed-share", "uniform"),
            TRACKING_EPSILONS,
        ),
        "tracking (N = 10, S = 4, gap 0.3)": Comparison(
            shift,
            {"horizon": horizon, "n_experts": 10, "n_shifts": 4, "gap": 0.3},
            "dynamic_regret",
            tracking_learners,
            ("private-fixed-share", "noisy-clipped-hedge", 0.75),
            ("fixed-share", "uniform"),
            TRACKING_EPSILONS,
        ),
        "tracking (Oblivious-v0 switching_deterministic)": Comparison(
            "DPExperts-Oblivious-v0",
            {"horizon": horizon, "family": "switching_deterministic"},
            "dynamic_regret",
            tracking_learners,
            ("private-fixed-share", "noisy-clipped-hedge", 0.75),
            ("fixed-share", "uniform"),
            TRACKING_EPSILONS,
        ),
        "static (Oblivious-v0 anti_lazy)": Comparison(
            "DPExperts-Oblivious-v0",
            {"horizon": horizon, "family": "anti_lazy"},
            "static_regret",
            {
                "gaussian-tree-hedge": ("gaussian-tree-hedge", delta),
                "private-shrinking-dartboard": ("private-shrinking-dartboard", delta),
                "batched-private-shrinking-dartboard": (
                    "batched-private-shrinking-dartboard",
                    delta,
                ),
                "dp-ftrl-tree": ("dp-ftrl-tree", {}),
            },
            ("gaussian-tree-hedge", "private-shrinking-dartboard", 0.6),
            ("hedge", "uniform"),
        ),
        "bandit (Bandit-v0 defaults)": Comparison(
            "DPExperts-Bandit-v0",
            {"horizon": horizon},
            "static_pseudo_regret",
            {
                "dp-klucb": ("dp-klucb", {}),
                "dp-klucb (means = last, the source's)": ("dp-klucb", {"means": "last"}),
                "adap-ucb": ("adap-ucb", {}),
                "private-batched-bandit": ("private-batched-bandit", {}),
                "dp-se": ("dp-se", {}),
            },
            ("dp-klucb", "adap-ucb", 1.0),
            ("kl-ucb", "ucb1", "uniform"),
        ),
        "bandit (Bandit-v0 defaults, 10 T)": Comparison(
            "DPExperts-Bandit-v0",
            {"horizon": 10 * horizon},
            "static_pseudo_regret",
            {
                "dp-se": ("dp-se", {}),
                "adap-ucb": ("adap-ucb", {}),
                "dp-klucb": ("dp-klucb", {}),
            },
            ("dp-se", "adap-ucb", 1.0),
            ("ucb1", "uniform"),
        ),
    }


def measure(
    comp: Comparison, name: str, params: dict[str, Any], epsilon: float | None, runs: int
) -> tuple[float, float]:
    """Mean and standard error of the final metric over ``runs`` runs (env seeds 0..runs-1)."""
    env = gym.make_vec(
        comp.env_id, num_envs=runs, vectorization_mode="vector_entry_point", **comp.env_params
    )
    kwargs = dict(params)
    candidate = kwargs.pop("candidate", None)
    horizon = int(env.unwrapped.horizon)
    if candidate not in (None, "leader", "linf"):  # private-fixed-share's candidate defaults
        eps = math.inf if epsilon is None else epsilon
        kwargs.update(
            candidate_params(
                candidate, int(env.unwrapped.n_experts), horizon, env.unwrapped.n_switches, eps
            )
        )
    if epsilon is not None:
        kwargs["epsilon"] = epsilon
    if epsilon is not None and math.isinf(epsilon):
        kwargs.pop("delta", None)
    if candidate in ("leader", "linf"):
        u = env.unwrapped
        cls = LeaderRelease if candidate == "leader" else LInfRelease
        agent = cls(
            u.n_experts, horizon, n_switches=u.n_switches, num_envs=runs, seed=10_000, **kwargs
        )
    else:
        agent = agents.make(name, env=env, seed=10_000, **kwargs)
    values = play(env, agent, list(range(runs)), np.array([horizon]))[comp.metric][-1]
    env.close()
    return float(values.mean()), float(values.std(ddof=1) / math.sqrt(runs))


def decoy_regret(cls: type, horizon: int, runs: int = 8) -> float:
    """Mean static regret of ``cls`` (N = 3, eps = 1, S = 0) on the planted decoy game.

    Expert 0 (the decoy) loses 0 in even blocks of the learner's block length and 1 in odd ones
    (1/2 per round on average), expert 1 always 0.4, expert 2 always 0.5: expert 1 is the best,
    the decoy wins every other block by a wide margin. A learner fed only each block's winner
    counts wins and follows the decoy (regret ~ 0.1 T, linear); one fed the (noisy) block sums
    does not.
    """
    agent = cls(3, horizon, epsilon=1.0, n_switches=0, num_envs=runs, seed=5)
    decoy = ((np.arange(horizon) // agent.block) % 2).astype(float)
    rows = np.stack([decoy, np.full(horizon, 0.4), np.full(horizon, 0.5)], axis=1)
    obs, paid = np.zeros((runs, 3)), np.zeros(runs)
    for t in range(horizon):
        paid += rows[t, np.asarray(agent.act(obs)).reshape(runs)]
        obs = np.broadcast_to(rows[t], (runs, 3))
    return float(paid.mean() - rows[:, 1].sum())


def _only_flag(parser: Any) -> None:
    parser.add_argument(
        "--only", default="", help="only the comparisons whose title starts with this (tracking)"
    )


def main(argv: list[str] | None = None) -> None:
    """Print the tables (and write benchmarks/results/strongest_baselines.json)."""
    args = parse_args(__doc__.splitlines()[0], argv, extra=_only_flag)
    horizon, runs = 10_000, 10
    if args.quick:
        horizon, runs = 2_000, 4
    if args.smoke:
        horizon, runs = 200, 2
    known = {d["name"] for d in agents.available()}
    out: dict[str, Any] = {"horizon": horizon, "runs": runs, "comparisons": {}}
    for title, comp in comparisons(horizon).items():
        if args.only and not title.startswith(args.only):
            continue
        eps_grid = (1.0,) if args.smoke else comp.epsilons
        rows: dict[str, Any] = {}
        for label, (name, params) in comp.learners.items():
            if name not in known:
                continue
            rows[label] = {str(eps): measure(comp, name, params, eps, runs) for eps in eps_grid}
        for name in comp.baselines:
            if name in known:
                rows[name] = {"-": measure(comp, name, {}, None, runs)}
        ours, ref, limit = comp.target
        ratio = None
        if ours in rows and ref in rows and "1.0" in rows[ours]:
            ratio = rows[ours]["1.0"][0] / rows[ref]["1.0"][0]
        # The same ratio for every other row of our learner (its candidate defaults).
        variants = {
            label: rows[label]["1.0"][0] / rows[ref]["1.0"][0]
            for label, (name, _) in comp.learners.items()
            if name == ours
            and label != ours
            and label in rows
            and ref in rows
            and "1.0" in rows[label]
        }
        out["comparisons"][title] = {
            "metric": comp.metric,
            "rows": rows,
            "target": {
                "ours": ours,
                "reference": ref,
                "limit": limit,
                "ratio": ratio,
                "variants": variants,
            },
        }
        t = comp.env_params["horizon"]
        print(f"\n{title}: {comp.metric}, T = {t}, {runs} runs (mean +- s.e.)")
        for label, cells in rows.items():
            text = "  ".join(f"eps {e}: {m:.0f} +- {s:.0f}" for e, (m, s) in cells.items())
            print(f"  {label:50s} {text}")
        if ratio is not None:
            verdict = "met" if ratio <= limit else "NOT met"
            print(f"  done-when: {ours} / {ref} at eps 1 = {ratio:.2f} (<= {limit}: {verdict})")
        for label, value in variants.items():
            print(f"    {label} / {ref} at eps 1 = {value:.2f}")
    if "tracking".startswith(args.only) or args.only.startswith("tracking"):
        sizes = (500, 2_000) if args.smoke else (2_000, 8_000, 32_000)
        out["decoy"] = {
            label: {str(t): decoy_regret(cls, t) for t in sizes}
            for label, cls in (
                ("private-fixed-share", PrivateFixedShare),
                ("L-inf K-norm noise", LInfRelease),
                ("leader release", LeaderRelease),
            )
        }
        print("\nplanted decoy (N = 3, eps 1, S = 0): static regret at T = " + str(sizes))
        for label, cells in out["decoy"].items():
            print(f"  {label:22s} " + "  ".join(f"{v:.0f}" for v in cells.values()))
    path = write_json("strongest_baselines", out, args.out)
    print(f"\nwrote {path}")


if __name__ == "__main__":
    main()
