"""Benchmark cards: a versioned protocol, normalised scores, privacy and claims, a leaderboard.

``dp-experts bench LEARNER`` (:mod:`dp_experts_env.bench.command`) plays the protocol
(:mod:`~dp_experts_env.bench.protocol`) on the suite's grid runner
(:mod:`~dp_experts_env.bench.runner`), scores it (:mod:`~dp_experts_env.bench.scores`), adds the
privacy side (:mod:`~dp_experts_env.bench.privacy`), builds the card
(:mod:`~dp_experts_env.bench.card`), ranks it (:mod:`~dp_experts_env.bench.leaderboard`) and
writes bench.json, card.md and card.html (:mod:`~dp_experts_env.bench.render`). docs/bench.md
describes all of it.
"""

from dp_experts_env.bench.protocol import Protocol, Task, load_protocol, protocol_versions

__all__ = ["Protocol", "Task", "load_protocol", "protocol_versions"]
