"""A fresh public cache (agents._public_cache) for a test: its own folder, signing key and memos."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from agents import _public_cache as cache


def fresh_public_cache(
    monkeypatch: Any, tmp_path: Path, memos: Sequence[Callable[..., Any]]
) -> Iterator[Path]:
    """Yield a cache folder and signing key under ``tmp_path``, ``memos`` (functools caches of
    cached quantities) and the cache's key memo and warnings forgotten before and after."""
    monkeypatch.setenv("DP_EXPERTS_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("DP_EXPERTS_CACHE_KEY", str(tmp_path / "keys" / "cache.key"))

    def forget() -> None:
        cache._secret.cache_clear()
        cache._WARNED.clear()
        for memo in memos:
            memo.cache_clear()

    forget()
    yield tmp_path / "cache"
    forget()
