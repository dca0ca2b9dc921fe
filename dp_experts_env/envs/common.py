"""Pieces shared by the single and the vector environments: construction, spaces, options."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from gymnasium import spaces

from dp_experts_env._validation import check_choice
from dp_experts_env.adversaries import Adversary, Neighbor
from dp_experts_env.envs.core import GameCore
from dp_experts_env.envs.factory import build_game
from dp_experts_env.kinds import ENV_KINDS, KINDS

__all__ = ["GameSetup", "RESET_OPTIONS", "parse_options", "SEED_HIGH", "families_doc"]

#: The only reset option.
RESET_OPTIONS = ("neighbor",)

#: Episode seeds drawn by ``reset(seed=None)`` lie in [0, SEED_HIGH).
SEED_HIGH = 2**63 - 1

# Keyword documentation shared by the env docstrings.
SHARED_KEYWORDS_DOC = """
    Keywords shared by every environment (docs/environments.md); all default to the kind's defaults:
        n_experts: N, the number of experts (full information: also the number of actions).
        horizon: T, the number of rounds; ``terminated`` is True after round T.
        n_switches: S, the switch budget of the ``dynamic_regret`` comparator (default: the
            adversary's number of change points / planted switches).
        dynamic_regret: False drops the exact S-switch comparator (``dynamic_regret`` is then
            NaN): O(N) instead of O(S N) memory and time per run and round. Default True; a
            table that would not fit in memory is refused naming ``n_switches``/``n_experts``.
        family: the loss model, one of ``dp_experts_env.adversaries.families(kind)``.
        n_shifts: number of change points (families that take it).
        gap: the family's gap parameter (families that take it).
        losses: a (T, N) loss matrix, ``.npy`` or ``.csv`` path (oblivious env, family
            ``"replay"``, selected automatically); its shape sets N and T.
        adversary: an :class:`~dp_experts_env.adversaries.Adversary` instance (any env, used as
            is after checking it fits), or for the adaptive env a family name or a policy object.
        n_arms: K, the number of arms (bandit envs only).
        render_mode: None, or for single envs ``"ansi"`` (a text line) or ``"rgb_array"`` (bars
            of the last revealed losses); vector envs render nothing.
        **family_kwargs: the chosen family's own keywords (see its docstring); a keyword the
            family does not take raises an error listing the ones it does.
"""


def families_doc(kinds: tuple[str, ...]) -> str:
    """Docstring section listing each kind's families registered at import, knobs and summaries."""
    from dp_experts_env.adversaries import families, family_factory, family_params

    lines = ["", "    Families (``family=``; knobs are further keywords):"]
    for kind in kinds:
        default = KINDS[kind].family
        lines.append(f"        kind {kind!r} (default {default!r}):")
        for name in families(kind, plugins=False):  # at import: no plug-in is importable yet
            factory = family_factory(kind, name)
            knobs = family_params(kind, name).knob_names()
            doc = (getattr(factory, "__doc__", None) or "").strip().splitlines()
            summary = doc[0].strip() if doc else ""
            lines.append(f"            {name}({', '.join(knobs)}): {summary}")
    return "\n".join(lines) + "\n"


class GameSetup:
    """Mixin: builds the core from constructor keywords and exposes the public attributes.

    Attributes: ``n_experts``, ``horizon``, ``n_arms`` (None for full information), ``feedback``,
    ``kind``, ``family``, ``n_switches``, ``params`` (None for an Adversary instance), ``core``.
    """

    #: The kinds this env class serves (subclasses: the kinds of one feedback).
    kinds: tuple[str, ...] = ENV_KINDS

    def _setup(
        self,
        kind: str,
        num_runs: int,
        render_mode: str | None,
        params: dict[str, Any],
        copies: int = 1,
    ) -> tuple[spaces.Space, spaces.Discrete]:
        check_choice("kind", kind, self.kinds)
        modes = self.metadata.get("render_modes", [])
        if render_mode is not None and render_mode not in modes:
            raise ValueError(f"render_mode must be None or one of {modes}, got {render_mode!r}")
        game = build_game(kind, num_runs=num_runs, **params)
        self.core = GameCore(
            game.adversary,
            game.n_switches,
            num_runs,
            copies,
            dynamic_regret=game.dynamic_regret,
            dynamic_is_static=game.dynamic_is_static,
        )
        self.kind = kind
        self.family = game.family
        self.n_switches = game.n_switches
        self.params = game.params
        adv: Adversary = game.adversary
        self.n_experts = adv.n_experts
        self.horizon = adv.horizon
        self.n_arms = adv.n_arms
        self.feedback = KINDS[kind].feedback
        return self._single_spaces()

    def _single_spaces(self) -> tuple[spaces.Space, spaces.Discrete]:
        n = self.n_experts
        if self.feedback == "bandit":
            k = self.n_arms
            assert k is not None
            obs = spaces.Dict(
                {
                    "advice": spaces.Box(0.0, 1.0, shape=(n * k,), dtype=np.float64),
                    "last_action": spaces.Discrete(k),
                    "last_loss": spaces.Box(0.0, 1.0, shape=(1,), dtype=np.float64),
                }
            )
            return obs, spaces.Discrete(k)
        return spaces.Box(0.0, 1.0, shape=(n,), dtype=np.float64), spaces.Discrete(n)


def parse_options(options: Any, core: GameCore) -> Neighbor | None:
    """Validate ``reset`` options; returns the neighbour (or None)."""
    if options is None:
        return None
    if not isinstance(options, Mapping):
        raise TypeError(
            f"options must be a dict (keys: {list(RESET_OPTIONS)}) or None, got "
            f"{type(options).__name__}"
        )
    unknown = sorted(set(options) - set(RESET_OPTIONS))
    if unknown:
        raise ValueError(
            f"unknown reset option(s) {unknown}; the only option is 'neighbor': "
            "{'round': t (1..T), 'loss': vector}"
        )
    spec = options.get("neighbor")
    if spec is None:
        return None
    return core.adversary.check_neighbor(spec)
