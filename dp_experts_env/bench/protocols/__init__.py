"""The shipped benchmark protocols, one data module per version (``bench_v1.py``: ``bench-v1``).

Each module holds the protocol as TOML text (``TEXT``); :mod:`dp_experts_env.bench.protocol`
parses and checks it. They are Python modules, not ``.toml`` files, so they ship with the
package without a package-data entry.
"""
