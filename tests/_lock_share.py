"""The behaviour locks' recordings: played once per path, or once when the play took no path.

Each lock case runs on both paths (``conftest.use_jit_path``). Every path decision of the package
goes through :func:`dp_experts_env._jit.jit_enabled` (tests/README.md, "Two paths, one run"), so a
recording that never consulted it ran the same code that the other path would run: the other
path's test reads that recording instead of playing the case again. A recording that consulted
the path is played again on the other path, as before.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any

from dp_experts_env._jit import consultations

__all__ = ["PathShare"]


class PathShare:
    """``share(key, path)``: ``play(*key)`` on ``path`` (the caller has switched to it), once.

    Args:
        play: the recording; called with the key's items.
    """

    def __init__(self, play: Callable[..., Any]) -> None:
        self.play = play
        #: key -> [(path, recording, whether playing it consulted the path)]
        self.done: dict[tuple[Hashable, ...], list[tuple[str, Any, bool]]] = {}

    def __call__(self, key: tuple[Hashable, ...], path: str) -> Any:
        for played_on, recording, consulted in self.done.get(key, ()):
            if played_on == path or not consulted:
                return recording
        before = consultations()
        recording = self.play(*key)
        self.done.setdefault(key, []).append((path, recording, consultations() != before))
        return recording
