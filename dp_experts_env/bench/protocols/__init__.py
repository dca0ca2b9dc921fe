"""The shipped benchmark protocols, one module per version holding its TOML text (``TEXT``).

``learned_adversary_v2.json`` beside them is bench-v2's frozen adversary (package data read by
:mod:`dp_experts_env.bench.frozen_policy`).
"""
