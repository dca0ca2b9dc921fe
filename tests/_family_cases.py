"""Registry-wide cases for the environment tests: every family of every kind, found by lookup.

``FAMILY_CASES`` lists ``(env id, kind, family)`` for every family registered for every kind of
the kind table, so a new family joins every test parametrised over it without editing a list.
:func:`family_inputs` supplies the few inputs a family cannot default (a replay matrix, the
policy class's sizes); ``test_env_families.py`` checks that every registry-wide parametrisation
covers every family.
"""

from __future__ import annotations

import zlib
from typing import Any

import numpy as np

import dp_experts_env  # noqa: F401  (registers the families and ids)
from dp_experts_env.adversaries import ENV_KINDS, families
from dp_experts_env.kinds import KINDS

__all__ = ["FAMILY_CASES", "FAMILY_IDS", "case_id", "family_inputs", "all_family_pairs"]


def all_family_pairs() -> set[tuple[str, str]]:
    """Every registered (kind, family), read from the registry at call time."""
    return {(kind, family) for kind in ENV_KINDS for family in families(kind)}


def case_id(kind: str, family: str) -> str:
    """The test id of a family case: ``"kind/family"``."""
    return f"{kind}/{family}"


FAMILY_CASES: list[tuple[str, str, str]] = [
    (KINDS[kind].env_id, kind, family) for kind in ENV_KINDS for family in families(kind)
]
FAMILY_IDS: list[str] = [case_id(kind, family) for _, kind, family in FAMILY_CASES]


def family_inputs(kind: str, family: str, horizon: int) -> dict[str, Any]:
    """The keywords (besides ``family``) that build a small game of ``horizon`` rounds.

    Sizes are small so a whole episode is quick: N = 6 under full information (enough for one
    pool per segment of ``disjoint_pools``), K = 3 arms with N = 4 advising experts (9 = K^2 for
    ``policy_class``), N = K on the Bandit kind. Replay families get a seeded matrix of that
    size (it sets N, K and T).
    """
    rng = np.random.default_rng(zlib.crc32(case_id(kind, family).encode()))
    if family == "replay":
        if kind == "oblivious":
            return {"losses": rng.random((horizon, 4))}
        data: dict[str, Any] = {"losses": rng.random((horizon, 3))}
        if kind == "bandit_advice":
            data["advice"] = rng.dirichlet(np.ones(3), size=(horizon, 4))
        return data
    sizes: dict[str, Any] = {"horizon": horizon}
    if kind == "bandit":
        sizes["n_arms"] = 3
    elif kind == "bandit_advice":
        sizes.update(n_experts=9 if family == "policy_class" else 4, n_arms=3)
    else:
        sizes["n_experts"] = 6
    # Families whose data fix a size (the real-data tasks: N classifiers) take it from the data.
    from dp_experts_env.adversaries import family_factory

    for fixed in getattr(family_factory(kind, family), "FIXED_SIZES", ()):
        sizes.pop(fixed, None)
    return sizes
