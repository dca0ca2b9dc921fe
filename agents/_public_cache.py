"""A memo for calibrations that are pure functions of public quantities.

Some learners calibrate their parameters with an exact accountant (a bisection per candidate,
~0.1 s) on every construction, although the result depends only on public inputs (N, T,
epsilon, delta, mode, tuning and explicit overrides). An evaluation builds the same learner
many times (one agent per cell, one more per claim), so the result is kept per input tuple.
Only frozen (immutable) results may be memoised this way: every caller shares the object.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import ParamSpec, TypeVar

__all__ = ["public_cache"]

P = ParamSpec("P")
R = TypeVar("R")


def public_cache(fn: Callable[P, R]) -> Callable[P, R]:
    """Memoise ``fn`` on its arguments (types included: 1 and 1.0 are different keys).

    Arguments that cannot be hashed (an array passed where a float is expected) bypass the memo,
    so ``fn``'s own validation still reports them.
    """
    cached = functools.lru_cache(maxsize=256, typed=True)(fn)

    @functools.wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            hash((args, tuple(kwargs.items())))
        except TypeError:
            return fn(*args, **kwargs)
        return cached(*args, **kwargs)

    wrapper.cache_info = cached.cache_info  # type: ignore[attr-defined]
    wrapper.cache_clear = cached.cache_clear  # type: ignore[attr-defined]
    return wrapper
