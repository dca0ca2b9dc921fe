"""Re-train the frozen adversary of bench-v2's ``learned-adversary`` task, bit for bit.

The adversary is ``dp-experts attack``'s PPO (:func:`dp_experts_env.attack.run.train_adversary`)
trained once against Hedge at its default (N = 2, T = 200, 50,000 steps, seed 0, torch on one
thread; docs/bench.md, "The learned-adversary task" says why these). Its actor ships as
``dp_experts_env/bench/protocols/learned_adversary_v2.json``, pinned by digest in bench-v2.

Usage (needs the ``sb3`` extra)::

    PYTHONPATH=. python scripts/train_bench_adversary.py            # check: digest == shipped
    PYTHONPATH=. python scripts/train_bench_adversary.py --write    # rewrite the data file

``--write`` is for a new protocol version only: bench-v2 pins the shipped digest.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

#: The training run of the shipped adversary (bench-v2). Changing any of it is a new version.
CONFIG = {
    "learner": "hedge",
    "n_experts": 2,
    "horizon": 200,
    "timesteps": 50_000,
    "seed": 0,
}


def train() -> tuple[dict, float]:
    """The trained actor's arrays and the training's CPU seconds."""
    import torch

    from dp_experts_env.attack.model import policy_arrays
    from dp_experts_env.attack.run import AttackConfig, train_adversary
    from dp_experts_env.bench.frozen_policy import actor_arrays

    torch.set_num_threads(1)
    model, cpu = train_adversary(AttackConfig(**CONFIG))
    return actor_arrays(policy_arrays(model)), cpu


def main(argv: list[str] | None = None) -> int:
    """Train; compare with (or with ``--write`` rewrite) the shipped data file."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="rewrite the shipped data file")
    args = parser.parse_args(argv)
    import json

    import dp_experts_env.bench
    from dp_experts_env.bench.frozen_policy import SHIPPED, actor_json, policy_digest

    start = time.perf_counter()
    arrays, cpu = train()
    digest = policy_digest(arrays)
    wall = time.perf_counter() - start
    print(f"trained {CONFIG}: digest {digest} ({cpu:.1f} s CPU, {wall:.1f} s wall)")
    path = Path(dp_experts_env.bench.__file__).parent / SHIPPED
    if args.write:
        path.write_text(actor_json(arrays, CONFIG))
        print(f"wrote {path} ({path.stat().st_size:,} bytes)")
        return 0
    shipped = json.loads(path.read_text())["digest"]
    if shipped != digest:
        print(f"DIFFERS from the shipped adversary ({shipped})", file=sys.stderr)
        return 1
    print("equals the shipped adversary")
    return 0


if __name__ == "__main__":
    sys.exit(main())
