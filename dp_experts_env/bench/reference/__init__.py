"""Shipped reference sets, one data module per (protocol version, quick or full).

``bench_v1_quick.py`` and ``bench_v2_quick.py`` hold ``DATA``: the ``reference-set.json`` that
``dp-experts bench --all --quick [--protocol VERSION]`` wrote (docs/bench.md, "The
leaderboard"). A set ranks a card while its key (protocol version, digest, quick, scoring
fingerprint) and its task scales are the card's; each row while its learner's behaviour
fingerprint is unchanged. After a change of behaviour, ``dp-experts bench --all --quick`` and
``ship_reference`` write the set to ship again (docs/bench.md, "Regenerating the shipped set").
"""
