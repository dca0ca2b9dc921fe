"""Benchmark cards (``dp-experts bench``; entry points in ``bench.command``; docs/bench.md)."""

from dp_experts_env.bench.protocol import Protocol, Task, load_protocol, protocol_versions

__all__ = ["Protocol", "Task", "load_protocol", "protocol_versions"]
