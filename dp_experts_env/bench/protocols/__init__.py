"""The shipped benchmark protocols, one data module per version (``bench_v1.py``: ``bench-v1``).

Each module holds the protocol as TOML text (``TEXT``); :mod:`dp_experts_env.bench.protocol`
parses and checks it. They are Python modules, not ``.toml`` files, so they ship with the
package without a package-data entry. ``learned_adversary_v2.py`` is data of the same kind:
the frozen adversary of bench-v2's learned-adversary task, whose digest bench-v2 pins
(:mod:`dp_experts_env.bench.frozen_policy`).
"""
