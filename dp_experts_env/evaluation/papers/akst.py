"""The claims of Agarwal, Kale, Singh & Thakurta, "Improved Differentially Private and Lazy OCO".

p-comw-lazy's switches and regret, p-comw's DP regret (Thm 4.1, 4.2); sizes and quantities in
docs/reproduce.md.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from dp_experts_env.evaluation.claims import (
    Claim,
    Point,
    Sweep,
    mean_with_ci,
)
from dp_experts_env.evaluation.papers.common import (
    CENTRE,
    points_at,
    slope_experiment,
)

__all__ = ["PAPER", "REPORT_ORDER", "claims"]

PAPER = 'Agarwal, Kale, Singh & Thakurta, "Improved Differentially Private and Lazy OCO"'
#: Position of the paper in the report (claims.csv, report.md).
REPORT_ORDER = 2


def _count_switches(
    sweep: Sweep, points: tuple[Point, ...], seeds: int, base_seed: int = 0
) -> pd.DataFrame:
    """Play the lazy learner and read its switch counter (rows: x, seed, switches / S)."""
    import gymnasium as gym

    import agents
    from dp_experts_env.evaluation.episode import play
    from dp_experts_env.evaluation.grid import derive_seed

    out = []
    for p in points:
        env = gym.make_vec(
            sweep.env_id, num_envs=seeds, vectorization_mode="vector_entry_point", **p.env_params
        )
        agent = agents.make(sweep.agent, env=env, seed=derive_seed(base_seed, "switches", p.x))
        env_seeds = [derive_seed(base_seed, "switch-env", p.x, i) for i in range(seeds)]
        play(env, agent, env_seeds, np.array([int(env.unwrapped.horizon)]))
        # The learner's bound on its expected switches at the parameters used; the calibrated
        # lazy tuning makes it exactly the switch budget S = sqrt(d T).
        budget = float(agent.parameters.expected_switches)
        for i, s in enumerate(np.asarray(agent.switches)):
            out.append({"x": p.x, "seed": i, "switches_over_budget": float(s) / budget})
        env.close()
    return pd.DataFrame(out)


def _lazy_bound(p: Point) -> tuple[float, float]:
    """Thm 4.2's bound with S = sqrt(d T), in units of G D: sqrt(T) + 16 ln(T) sqrt(T); and T."""
    t = float(p.env_params["horizon"])
    return math.sqrt(t) + 16 * math.log(t) * math.sqrt(t), t


OCO_T = (1_000, 4_000, 16_000)
OCO_T_QUICK = (1_000, 4_000)

lazy_switches = Claim(
    name="akst-lazy-switches",
    paper=PAPER,
    source="Thm 4.2 (lazy OCO)",
    statement="P-COMW in its lazy setting switches at most S times in expectation.",
    quantity="mean switches / the learner's expected-switch bound at its parameters (<= S = "
    "sqrt(d T) by construction, = S for the calibrated tuning), over T and seeds (d = 5)",
    predicted=1.0,
    tolerance=0.1,
    kind="two_sided",
    sweeps=(
        Sweep(
            "p-comw-lazy",
            "p-comw-lazy",
            "DPExperts-OCO-v0",
            points_at(OCO_T, lambda t: {"horizon": int(t)}),
            points_at(OCO_T_QUICK, lambda t: {"horizon": int(t)}),
            metric="switches_over_budget",
            custom=_count_switches,
        ),
    ),
    analyse=lambda rows: mean_with_ci(rows["p-comw-lazy"], "switches_over_budget"),
    no_control="the quantity is p-comw-lazy's own switch counter over its own switch bound; a "
    "learner without that counter cannot take its role, and the claim is a budget, not a rate.",
    x_label="T",
    notes="The bound on E[switches] is met with equality by the calibrated tuning (its stay "
    "coin is never clipped), so a one-sided test of 'at most S' would sit on its boundary and "
    "be inconclusive however many runs it used. The claim is therefore checked in two parts: "
    "the learner's expected-switch formula at its parameters is <= S (deterministic, asserted "
    "in the tests), and the measured mean agrees with that formula within 10% (this sweep).",
)

lazy_regret = Claim(
    name="akst-lazy-regret-vs-T",
    paper=PAPER,
    source="Thm 4.2 (lazy OCO)",
    statement="With S = sqrt(d T) switches, lazy P-COMW's regret is "
    "O(G D sqrt(T) + G D sqrt(d) log(T) T / S) = O~(sqrt(T)).",
    quantity="log-log slope of static regret in T (stochastic gradients, d = 5)",
    predicted=0.5,
    tolerance=0.15,
    kind="at_most",
    **slope_experiment(
        "p-comw-lazy",
        "DPExperts-OCO-v0",
        points_at(OCO_T, lambda t: {"horizon": int(t)}),
        points_at(OCO_T_QUICK, lambda t: {"horizon": int(t)}),
        metric="static_regret",
        control=CENTRE,
    ),
    explicit_bound=_lazy_bound,
    untestable="Thm 4.2's explicit bound (G D (sqrt(T) + 16 ln(T) sqrt(T)) with S = sqrt(d T)) "
    "is above the trivial G D T up to T ~ 2.7 x 10^4 (1.23 T at the largest T run, 1.6 x 10^4): "
    "the sweep would have to start there",
    x_label="T",
    notes="Not confirmed at these horizons, and not expected to be: with S = sqrt(d T) the "
    "bound's second term is 16 G D sqrt(d) ln(T) T / S = 16 G D ln(T) sqrt(T), which exceeds "
    "the trivial regret G D T until T is about 10^6, so at T <= 1.6 x 10^4 the theorem does not "
    "constrain the slope and the measured growth is close to linear. The tolerance 0.15 absorbs "
    "the log factor where the bound does bind.",
)


# From where p-comw has left the centre point's level to what its per-round cost allows
# (docs/reproduce.md, "Measured: the longer horizons ...").
DP_OCO_T = (10_000, 30_000, 100_000, 300_000)
DP_OCO_T_QUICK = (1_000, 3_000, 10_000)

dp_oco = Claim(
    name="akst-dp-oco-regret-vs-T",
    paper=PAPER,
    source="Thm 4.1 (DP-OCO)",
    statement="P-COMW with its DP parameters is (epsilon, delta)-DP with static regret "
    "O~(sqrt(T) + sqrt(d) T^(1/3) / epsilon): at most sqrt(T) growth in T.",
    quantity="log-log slope of p-comw's static regret in T (stochastic gradients, d = 5, "
    "epsilon = 1, delta = 1e-5, calibrated tuning, Renyi certificate)",
    predicted=0.5,
    tolerance=0.1,
    kind="at_most",
    **slope_experiment(
        "p-comw",
        "DPExperts-OCO-v0",
        points_at(DP_OCO_T, lambda t: {"horizon": int(t)}, 1.0),
        points_at(DP_OCO_T_QUICK, lambda t: {"horizon": int(t)}, 1.0),
        metric="static_regret",
        control=CENTRE,
    ),
    x_label="T",
    notes="The theorem's own constants (tuning='paper') certify epsilon_out far below the "
    "requested epsilon and give nearly linear regret at these horizons; the measured learner is "
    "the calibrated default, which spends the requested epsilon under the suite's Renyi "
    "accountant. Its temperature must shrink as more rounds share the budget (about T^-0.7 at "
    "these sizes, because the certificate is several times looser than the true Renyi "
    "divergence, docs/privacy.md), so its regret grows faster than sqrt(T) at small T: at "
    "T = 10^3..3 x 10^4 the local slopes fell from about 0.8 toward 0.6 (quick mode's horizons "
    "are in that burn-in); the full run starts at 10^4, past it.",
)


def claims(quick: bool = False) -> list[Claim]:
    """The paper's claims in report order (``quick``: the ``--quick`` sizes where they differ)."""
    del quick  # no claim of this paper differs in quick mode
    return [
        lazy_switches,
        lazy_regret,
        dp_oco,
    ]
