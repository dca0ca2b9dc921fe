"""The ``dp-experts attack`` subcommand: train a learned adversary against a learner.

Registered by :mod:`dp_experts_env.cli` (``add_parser``, ``cmd_attack``); the work is
:func:`dp_experts_env.attack.run.run_attack`.
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path
from typing import Any

__all__ = ["add_parser", "cmd_attack", "config_from_args"]


def add_parser(sub: Any) -> None:
    """Add the ``attack`` subcommand to the CLI's sub-parsers."""
    from dp_experts_env.attack.run import FAMILY_KINDS

    p = sub.add_parser(
        "attack",
        help="train an RL adversary (PPO) against a learner; compare with the families and bound",
        description="Train Stable-Baselines3 PPO as the adversary in DPExperts-Attack-v0 against "
        "LEARNER, then evaluate it on fresh seeds and write OUT/attack.json (learned regret and "
        "its 95%% interval, a random adversary, every hand-built family of --kind, the learner's "
        "proven bound), OUT/attack.png and, with --oblivious, OUT/sequence.npy (replay it with "
        "DPExperts-Oblivious-v0, family='replay'). A regret above the proven bound is reported "
        "as a DEFECT (exit code 3).",
    )
    p.add_argument("learner", metavar="LEARNER", help="full-information learner name")
    p.add_argument(
        "--epsilon", default=None, help="the learner's epsilon (private learners; inf allowed)"
    )
    p.add_argument(
        "--kind",
        default="full",
        help=f"families compared with: one of {', '.join(FAMILY_KINDS)} (default full: every "
        "full-information kind; bandit: bandit feedback, K = N arms)",
    )
    p.add_argument("--n-experts", default="2", help="N (default 2)")
    p.add_argument("--horizon", default="200", help="T (default 200)")
    p.add_argument("--timesteps", default="100000", help="PPO training steps (default 100000)")
    p.add_argument("--switches", default="0", help="attack the S-switch regret (default 0: static)")
    p.add_argument("--oblivious", action="store_true", help="oblivious adversary (fixed sequence)")
    p.add_argument("--out", default="results/attack", help="output folder (default results/attack)")
    p.add_argument("--seed", default="0", help="training seed (default 0)")
    p.add_argument("--eval-runs", default="64", help="evaluation runs per adversary (default 64)")
    p.add_argument(
        "--set",
        action="append",
        metavar="KEY=VALUE",
        help="learner parameter, e.g. --set eta=0.1 (repeatable)",
    )
    p.add_argument("--no-progress", action="store_true", help="no training progress bar")
    p.add_argument(
        "--replay",
        metavar="NPZ",
        default=None,
        help="evaluate a saved adversary (an adversary.npz: weights as arrays, no pickle) "
        "instead of training one; a pickled model (SB3 .zip) is refused",
    )


def _int(option: str, raw: str, minimum: int) -> int:
    try:
        value = int(raw)
    except (TypeError, ValueError):
        raise ValueError(f"{option} must be an integer >= {minimum}, got {raw!r}") from None
    if value < minimum:
        raise ValueError(f"{option} must be an integer >= {minimum}, got {value}")
    return value


def config_from_args(args: argparse.Namespace) -> Any:
    """The validated :class:`~dp_experts_env.attack.run.AttackConfig`; errors name the option."""
    import agents
    from dp_experts_env.assignments import parse_assignments
    from dp_experts_env.attack.run import FAMILY_KINDS, AttackConfig, family_kinds

    epsilon = None
    if args.epsilon is not None:
        try:
            epsilon = float(args.epsilon)
        except ValueError:
            raise ValueError(
                f"--epsilon must be a number > 0 or inf, got {args.epsilon!r}"
            ) from None
        if not epsilon > 0 or math.isnan(epsilon):
            raise ValueError(f"--epsilon must be a number > 0 or inf, got {args.epsilon!r}")
    if args.kind not in FAMILY_KINDS:
        raise ValueError(f"--kind must be one of {list(FAMILY_KINDS)}, got {args.kind!r}")
    try:
        family_kinds(args.kind, bool(args.oblivious))
    except ValueError as err:
        raise ValueError(f"--kind with --oblivious: {err}") from None
    try:
        entry = agents.spec(args.learner)
    except ValueError as err:
        raise ValueError(f"LEARNER: {err}") from None
    feedback = "bandit" if args.kind == "bandit" else "full"
    if entry.feedback not in (feedback, "any"):
        served = sorted(a["name"] for a in agents.available() if a["feedback"] == feedback)
        raise ValueError(
            f"LEARNER: {args.learner!r} is a {entry.feedback}-feedback learner; attack with "
            f"--kind {args.kind} serves {feedback}-feedback learners: {served} (bandit "
            "learners: --kind bandit)"
        )
    if epsilon is not None and not entry.private and math.isfinite(epsilon):
        raise ValueError(f"--epsilon: {args.learner!r} is not private (omit --epsilon or use inf)")
    config = AttackConfig(
        learner=args.learner,
        epsilon=epsilon,
        learner_params=parse_assignments(args.set, "--set"),
        kind=args.kind,
        n_experts=_int("--n-experts", args.n_experts, 2),
        horizon=_int("--horizon", args.horizon, 2),
        timesteps=_int("--timesteps", args.timesteps, 1),
        oblivious=bool(args.oblivious),
        n_switches=_int("--switches", args.switches, 0),
        seed=_int("--seed", args.seed, 0),
        eval_runs=_int("--eval-runs", args.eval_runs, 2),
    )
    config.check_sizes()  # its messages name the options
    try:
        config.validate()
    except (TypeError, ValueError) as err:
        raise ValueError(f"--set / learner parameters: {err}") from None
    return config


def cmd_attack(args: argparse.Namespace) -> int:
    """Run the subcommand; exit code 3 when a defect (regret above the proven bound) is found."""
    from dp_experts_env.attack.run import run_attack

    config = config_from_args(args)
    out = Path(args.out)
    model = None
    if args.replay is not None:
        from dp_experts_env.attack.model import load_policy
        from dp_experts_env.attack.run import check_policy_fits

        try:
            model = load_policy(args.replay)
            check_policy_fits(model, config)
        except ValueError as err:
            raise ValueError(f"--replay {args.replay}: {err}") from None
    report = run_attack(config, out_dir=out, progress=not args.no_progress, model=model)
    best = report["best_family"]
    bound = "none declared" if report["bound"] is None else f"{report['bound']:.2f}"
    trained = (
        f"replayed {args.replay}"
        if args.replay is not None
        else f"{config.timesteps} PPO steps ({report['train_cpu_seconds']:.1f} s CPU)"
    )
    lines = [
        f"learner {config.learner} (epsilon {config.epsilon}), N={config.n_experts}, "
        f"T={config.horizon}, {'oblivious' if config.oblivious else 'adaptive'} adversary, "
        f"{trained}",
        f"  learned adversary: {report['learned_regret']:.2f} "
        f"[{report['learned_ci'][0]:.2f}, {report['learned_ci'][1]:.2f}]",
        f"  best family:       {report['best_family_regret']:.2f} ({best})"
        if best
        else "  best family:       none built",
        f"  random adversary:  {report['random_regret']:.2f}",
        f"  proven bound:      {bound}",
    ]
    if "replay_regret" in report:
        lines.append(f"  replayed sequence: {report['replay_regret']:.2f}")
    lines.append(f"wrote {out / 'attack.json'}")
    print("\n".join(lines))
    if report["defects"]:
        print(json.dumps(report["defects"], indent=2))
        return 3
    return 0
