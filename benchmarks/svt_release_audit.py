"""svt-restart's x0.5 mutant audited on its released detector answers as well as its actions.

svt-restart's claim covers everything its two mechanisms release: the selected experts and the
AboveThreshold answers (a restart is a TOP, its absence a BOTTOM). The answers are read off the
learner's public ``restarts`` counter after each round (no hook), and each round becomes the
token ``2 * J_t + fired_t`` (keyed scenarios: ``J_t`` as the move ``J_t - J_{t-1} mod N``); the
events are the sequence families of :mod:`dp_experts_env.privacy.audit`, selected on half of the
selection runs' pairs and counted once on fresh test runs (disjoint seeds), Clopper-Pearson at
alpha = 1e-3 -- the audit's own statistics. The same scenarios are audited on the actions alone
for comparison. The learner is the noise-x0.5 mutant (``ScaledBackend``, claim unchanged: 1).

Scenarios: the tuned ones of the default search (rival pair, change in round 0; threshold_scale
1e-3 so that the detector answers near its threshold) and *keyed* ones (an adaptive adversary,
which the claim covers): the changed loss lands on the learner's own expert, so that the change
lowers the detector's query on the side where the next selection favours that expert -- the
only way one loss pushes the detector and the selection towards the same side.

Usage::

    python benchmarks/svt_release_audit.py            # 40,000 selection / 100,000 test runs
    python benchmarks/svt_release_audit.py --quick    # 20,000 / 50,000, three scenarios

Not a test; docs/privacy.md ("What an action-level audit cannot catch") records a run.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import agents  # noqa: E402
from benchmarks._common import parse_args, table, write_json  # noqa: E402
from dp_experts_env.evaluation.audit import rival_pair  # noqa: E402
from dp_experts_env.privacy.audit import (  # noqa: E402
    evaluate_event,
    select_event,
    sequence_families,
)
from dp_experts_env.privacy.noise import ScaledBackend  # noqa: E402

_TEST_SEEDS = 10**9  # test runs' seeds start here (selection runs below)


def keyed_rival(width: int, horizon: int = 4, row: int = 2) -> tuple[np.ndarray, np.ndarray]:
    """Rival pair on the learner's previous expert (coordinate 0 of a keyed row)."""
    x = np.full((horizon, width), 0.5)
    x[row] = 0.0
    x[row, 0] = 1.0
    xp = x.copy()
    xp[row] = 1.0 - x[row]
    return x, xp


def play(losses, n, seed, multiplier, params, keyed) -> tuple[np.ndarray, np.ndarray, float]:
    """(n, T) actions, (n, T) detector TOP flags (round t's answer read after its loss)."""
    horizon, width = losses.shape
    noise: Any = ScaledBackend("fast", multiplier) if multiplier != 1.0 else "fast"
    ag = agents.make("svt-restart", n_experts=width, horizon=horizon, num_envs=n, seed=seed,
                     noise=noise, **params)  # fmt: skip
    obs = np.zeros((n, width))
    acts = np.empty((n, horizon), np.int64)
    fired = np.zeros((n, horizon), np.int64)
    before = np.zeros(n, np.int64)
    prev = np.zeros(n, np.int64)
    for t in range(horizon):
        acts[:, t] = np.asarray(ag.act(obs)).reshape(n)
        if t > 0:  # act() fed round t - 1's loss: its detector answer is now known
            fired[:, t - 1] = ag.restarts - before
            before = ag.restarts.copy()
        row = losses[t]
        # Keyed: coordinate 0 lands on the action of the previous round (adaptive adversary).
        obs = row[(np.arange(width)[None, :] - prev[:, None]) % width] if keyed else (
            np.broadcast_to(row, (n, width)).copy()
        )
        prev = acts[:, t]
    return acts, fired, float(ag.privacy.epsilon)


def tokens(acts, fired, width, keyed, flags) -> np.ndarray:
    a = acts.copy()
    if keyed:
        a[:, 1:] = (a[:, 1:] - a[:, :-1]) % width
    return a * 2 + fired if flags else a


def audit(pair, params, *, keyed, flags, n_sel, n_test, multiplier=0.5) -> dict[str, Any]:
    x, xp = pair
    width = x.shape[1]
    row = int(np.flatnonzero(np.any(x != xp, axis=1))[0])
    k = 2 * width if flags else width
    sel = [play(d, n_sel, s * n_sel, multiplier, params, keyed) for s, d in enumerate((x, xp))]
    a, b = (tokens(o[0], o[1], width, keyed, flags) for o in sel)
    half = n_sel // 2
    fams = sequence_families(a[:half], b[:half], k=k, first=row if flags else row + 1)
    chosen = select_event(fams, a[half:], b[half:], n_test=n_test, alpha=1e-3)
    test = [play(d, n_test, _TEST_SEEDS + s * n_test, multiplier, params, keyed)
            for s, d in enumerate((x, xp))]  # fmt: skip
    ta, tb = (tokens(o[0], o[1], width, keyed, flags) for o in test)
    res = evaluate_event(chosen, ta, tb, alpha=1e-3, claimed_epsilon=sel[0][2])
    return {"bound": round(res.epsilon_lower_bound, 3), "power": round(res.detectable_epsilon, 3),
            "event": res.event}  # fmt: skip


def steered_rival(rivals: int, horizon: int = 8, row: int = 4) -> tuple[np.ndarray, np.ndarray]:
    """Expert 0 is steered into play (best in rounds 2-3), then loses every round; the change
    lowers both its loss and the target's (expert 1) and raises the rivals': the detector's query
    drops by the full 2 on the side where the selection at local time 8 favours the target."""
    x = np.full((horizon, rivals + 2), 0.5)
    x[1:3] = 1.0
    x[1:3, 0] = 0.0
    x[3:] = 0.0
    x[3:, 0] = 1.0
    x[3, 1] = 1.0  # the target starts one behind the rivals: not the window's best on either side
    xp = x.copy()
    x[row] = 0.0
    x[row, :2] = 1.0
    xp[row] = 1.0
    xp[row, :2] = 0.0
    return x, xp


SCENARIOS = [
    ("rival, N=16, T=4, round 0", rival_pair(4, 16, 0), {}, False),
    ("rival, N=8, T=4, round 0, threshold_scale=1e-3", rival_pair(4, 8, 0),
     {"threshold_scale": 1e-3}, False),
    ("rival, N=8, T=8, round 2, threshold_scale=1e-3", rival_pair(8, 8, 2),
     {"threshold_scale": 1e-3}, False),
    ("keyed rival, N=16, T=4, round 2, threshold_scale=0.05", keyed_rival(16),
     {"threshold_scale": 0.05}, True),
    ("keyed rival, N=16, T=4, round 2, threshold_scale=1e-3", keyed_rival(16),
     {"threshold_scale": 1e-3}, True),
    ("keyed rival, N=64, T=4, round 2, threshold_scale=0.05", keyed_rival(64),
     {"threshold_scale": 0.05}, True),
    ("steered, N=16, T=8, round 4, threshold_scale=0.01", steered_rival(14),
     {"threshold_scale": 0.01}, False),
]  # fmt: skip


COLUMNS = ("scenario", "actions", "actions_and_answers", "power", "seconds", "event")


def main() -> None:
    args = parse_args(__doc__.splitlines()[0])
    n_sel, n_test = (2_000, 4_000) if args.smoke else (20_000, 50_000) if args.quick else (
        40_000, 100_000)  # fmt: skip
    chosen = SCENARIOS[:1] if args.smoke else SCENARIOS[:3] if args.quick else SCENARIOS
    rows = []
    for label, pair, params, keyed in chosen:
        began = time.perf_counter()
        acts = audit(pair, params, keyed=keyed, flags=False, n_sel=n_sel, n_test=n_test)
        both = audit(pair, params, keyed=keyed, flags=True, n_sel=n_sel, n_test=n_test)
        rows.append({"scenario": label, "actions": acts["bound"], "actions_and_answers":
                     both["bound"], "power": both["power"], "event": both["event"][:80],
                     "seconds": round(time.perf_counter() - began, 1)})  # fmt: skip
        print(table(rows[-1:], COLUMNS), flush=True)
    write_json("svt_release_audit", {"rows": rows, "selection_runs": n_sel, "test_runs": n_test},
               args.out)  # fmt: skip


if __name__ == "__main__":
    main()
