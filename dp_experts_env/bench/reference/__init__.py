"""Shipped reference sets, one data module per (protocol version, quick or full).

``bench_v1_quick.py`` holds ``DATA``: the ``reference-set.json`` that ``dp-experts bench --all
--quick`` wrote (docs/bench.md, "The leaderboard"). A set ranks a card only while its key (the
protocol and code version) is the card's; after a change of the reference learners' or the
envs' code, ``dp-experts bench --all --quick`` writes the set to ship again.
"""
