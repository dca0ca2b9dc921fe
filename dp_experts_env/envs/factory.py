"""From constructor keywords to a loss model: the environment's keywords and the family's.

:func:`build_game` splits the keywords into the env's own (:class:`EnvParams`) and the family's
knobs (passed only as ``params=``, so defaults live in the declaration), refuses the rest by
name, and builds the :class:`~dp_experts_env.adversaries.Adversary` and the switch budget
(docs/environments.md, "Parameters as data").
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields
from typing import Any

from dp_experts_env._validation import check_choice, check_int, check_memory
from dp_experts_env.adversaries import (
    Adversary,
    PolicyAdversary,
    families,
    family_factory,
    family_params,
)
from dp_experts_env.adversaries.adaptive import PolicyAdversaryParams
from dp_experts_env.adversaries.params import FamilyParams
from dp_experts_env.kinds import ENV_KINDS, ID_KIND, KINDS, KindSpec

__all__ = [
    "KindSpec",
    "KINDS",
    "EnvParams",
    "ENV_KEYWORDS",
    "Game",
    "build_game",
    "feedback_of",
]


def feedback_of(kind: str) -> str:
    """``"full"`` or ``"bandit"`` for an environment kind."""
    return KINDS[check_choice("kind", kind, ENV_KINDS)].feedback


@dataclass(frozen=True)
class EnvParams:
    """The keywords every experts and bandit environment takes itself (None: the default).

    Attributes:
        n_experts: N (bandit kind: must equal ``n_arms``; given alone it sets ``n_arms``).
        horizon: T.
        n_arms: K (bandit kinds only).
        n_switches: the comparator's switch budget S (default: the adversary's change points).
        family: family name of the kind (default: the kind's default family).
        adversary: an Adversary instance, or (adaptive kind) a family name or policy object.
        dynamic_regret: False drops the exact S-switch table (``dynamic_regret`` is NaN).
    """

    n_experts: int | None = None
    horizon: int | None = None
    n_arms: int | None = None
    n_switches: int | None = None
    family: str | None = None
    adversary: Any = None
    dynamic_regret: bool | None = None


#: The environment's own keywords, in declaration order.
ENV_KEYWORDS: tuple[str, ...] = tuple(f.name for f in fields(EnvParams))

# Sizes: env keywords that a family may also take.
_SIZE_KEYS = ("n_experts", "horizon", "n_arms")

# Family knobs that were env keywords with a None default: None means "not given".
_NONE_IS_UNSET = ("n_shifts", "gap", "losses")


@dataclass
class Game:
    """A resolved environment configuration.

    Attributes:
        adversary: the loss model (not yet reset).
        kind: the environment kind.
        family: the family name (``"custom"``: an unregistered Adversary; ``"policy"``: a policy).
        n_switches: the comparator's switch budget S.
        params: the family's knobs as built; None for an Adversary instance.
        dynamic_regret: whether the exact S-switch table is kept.
        dynamic_is_static: a replay with no ``n_switches`` given: S = 0, said in ``info``.
    """

    adversary: Adversary
    kind: str
    family: str
    n_switches: int
    params: FamilyParams | None = None
    dynamic_regret: bool = True
    dynamic_is_static: bool = False


#: Largest horizon, number of experts and number of arms an env accepts (k * T must fit int64;
#: anything larger is a typo to report by name).
MAX_HORIZON = 2**31
MAX_SIZE = 2**31

#: Keyword the registry adds next to ``kind`` (which ``gym.make(id, kind=...)`` can replace),
#: so a kind contradicting the id is refused.


def check_id_kind(kind: str, id_kind: Any) -> None:
    """Refuse a ``kind`` that contradicts the kind of the registered id the env was made from."""
    if id_kind is None or kind == id_kind:
        return
    ids = {k: spec.env_id for k, spec in KINDS.items()}
    hint = f"; for that env use gym.make({ids[kind]!r})" if kind in ids else ""
    raise ValueError(
        f"kind={kind!r} contradicts the environment id, whose kind is {id_kind!r} (the id "
        f"fixes the kind: leave kind unset{hint})"
    )


#: Bytes an experts env holds per run and expert (about 21 float64 (B, N) arrays), rounded up.
_BYTES_PER_RUN_EXPERT = 200


def build_game(kind: str, *, num_runs: int = 1, **keywords: Any) -> Game:
    """Build the loss model of an environment of ``kind`` from its constructor keywords.

    Args:
        kind: environment kind (a key of :data:`~dp_experts_env.kinds.ENV_KINDS`).
        num_runs: the runs the env will play (B), for the memory estimate.
        **keywords: the env keywords of :class:`EnvParams` and the chosen family's knobs (e.g.
            ``losses``: a (T, N) or, bandit kinds, (T, K) matrix or ``.npy``/``.csv`` path).

    Returns:
        the resolved :class:`Game`.
    """
    check_id_kind(kind, keywords.pop(ID_KIND, None))
    spec = KINDS[check_choice("kind", kind, ENV_KINDS)]
    env = EnvParams(**{k: keywords.pop(k) for k in ENV_KEYWORDS if k in keywords})
    given = {k: v for k, v in keywords.items() if not (k in _NONE_IS_UNSET and v is None)}
    family, adversary, losses = env.family, env.adversary, given.get("losses")
    if family is not None:
        check_choice("family", family, _family_names(kind))
    if env.horizon is not None:
        check_int("horizon", env.horizon, minimum=1, maximum=MAX_HORIZON)
    for name, value in (("n_experts", env.n_experts), ("n_arms", env.n_arms)):
        if value is not None:
            check_int(name, value, minimum=1, maximum=MAX_SIZE)
    n, k = env.n_experts or 1, env.n_arms or 1
    # The bandit-with-advice envs also hold an (N, K) advice matrix per run.
    per_run = _BYTES_PER_RUN_EXPERT * (n + k) + (8 * n * k if env.n_arms is not None else 0)
    check_memory(
        ", ".join(f"{key}={getattr(env, key)}" for key in ("n_experts", "n_arms")
                  if getattr(env, key) is not None) + f" with {num_runs} run(s)",
        per_run * num_runs,
    )  # fmt: skip
    sizes = {key: getattr(env, key) for key in _SIZE_KEYS}
    if spec.feedback == "full" and env.n_arms is not None:
        raise ValueError(
            f"n_arms applies to bandit environments only; the {kind!r} environment has full "
            "information (leave n_arms unset)"
        )
    if kind == "bandit":
        _identity_sizes(sizes)

    if isinstance(adversary, Adversary):
        adv, family_name = _use_instance(spec, adversary, sizes, family, given)
        params = None
    elif adversary is not None and not isinstance(adversary, str) and kind == "adaptive":
        adv, params = _wrap_policy(spec, adversary, sizes, family, given)
        family_name = "policy"
    else:
        if adversary is not None:
            if kind != "adaptive":
                raise TypeError(
                    f"adversary must be an Adversary instance for the {kind!r} environment (pick "
                    f"a loss model by name with family=, one of {_family_names(kind)}); got "
                    f"{type(adversary).__name__}"
                )
            check_choice("adversary", adversary, _family_names(kind))
            if family is not None and family != adversary:
                raise ValueError(
                    f"adversary={adversary!r} and family={family!r} name different families; "
                    "give one of them"
                )
            family = adversary
        if family is None:
            replays = losses is not None and "replay" in families(kind)
            family = "replay" if replays else spec.family
        adv, params = _make_family(spec, family, sizes, given, fill_sizes=losses is None)
        family_name = family

    n_switches = env.n_switches
    s = adv.default_switches if n_switches is None else n_switches
    s = check_int("n_switches", s, minimum=0)
    dynamic = True if env.dynamic_regret is None else env.dynamic_regret
    if not isinstance(dynamic, bool):
        raise TypeError(f"dynamic_regret must be True or False, got {env.dynamic_regret!r}")
    return Game(
        adversary=adv,
        kind=kind,
        family=family_name,
        n_switches=s,
        params=params,
        dynamic_regret=bool(dynamic),
        # A replay has no known change structure: without n_switches its dynamic regret is static.
        dynamic_is_static=family_name == "replay" and n_switches is None and s == 0,
    )


def _family_names(kind: str) -> list[str]:
    names = families(kind)
    if not names:
        raise RuntimeError(
            f"no loss model is registered for the {kind!r} environment yet (the adversary "
            "families are imported by dp_experts_env.adversaries)"
        )
    return names


def _identity_sizes(sizes: dict[str, Any]) -> None:
    """Bandit kind: the experts are the arms, so N = K and either keyword sets both."""
    n, k = sizes["n_experts"], sizes["n_arms"]
    if n is not None:
        check_int("n_experts", n, minimum=2)
    if k is not None:
        check_int("n_arms", k, minimum=2)
    if n is not None and k is not None and n != k:
        raise ValueError(
            f"the Bandit environment's experts are its arms, so n_experts must equal n_arms; "
            f"got n_experts={n}, n_arms={k} (use the BanditAdvice environment for N != K)"
        )
    sizes["n_experts"] = sizes["n_arms"] = k if k is not None else n


def _call_with(
    spec: KindSpec,
    label: str,
    factory: Callable[..., Adversary],
    declared: type[FamilyParams],
    sizes: dict[str, Any],
    given: Mapping[str, Any],
    fill_sizes: bool = True,
) -> tuple[Adversary, FamilyParams]:
    """Call a family factory with its parameter object plus the sizes it takes.

    ``fill_sizes=False`` (a user loss matrix) passes only the sizes the user gave.
    """
    unknown = declared.unknown_keywords(given)
    if unknown:
        raise TypeError(
            f"{unknown[0]!r} is not a parameter of {label} of the {spec.kind!r} environment; it "
            f"accepts {declared.accepted(given)} (plus the env keywords n_switches, family, "
            "adversary)"
        )
    params = declared.from_keywords(given)
    kwargs: dict[str, Any] = {}
    implied = {}  # sizes the family fixes itself: checked against the built adversary
    fillable = declared.filled_sizes()
    for key in _SIZE_KEYS:
        value, default = sizes[key], spec.defaults.get(key)
        if value is not None:
            if key in declared.SIZES:
                kwargs[key] = value
            else:
                implied[key] = value
        elif fill_sizes and default is not None and key in fillable:
            kwargs[key] = default
    adv = factory(**kwargs, params=params)
    if not isinstance(adv, Adversary):
        raise TypeError(f"{label} built a {type(adv).__name__}, not an Adversary")
    for key, value in implied.items():
        if getattr(adv, key) != value:
            raise ValueError(
                f"{key}={value} contradicts {label}, which fixes {key}={getattr(adv, key)} "
                f"(it does not take {key!r}; its parameters are {declared.accepted()})"
            )
    return adv, params


def _make_family(
    spec: KindSpec,
    family: str,
    sizes: dict[str, Any],
    given: dict[str, Any],
    fill_sizes: bool = True,
) -> tuple[Adversary, FamilyParams]:
    factory = family_factory(spec.kind, family)
    declared = family_params(spec.kind, family)
    adv, params = _call_with(
        spec, f"family {family!r}", factory, declared, sizes, given, fill_sizes
    )
    _check_fits(spec, adv, f"family {family!r}")
    return adv, params


def _use_instance(
    spec: KindSpec, adv: Adversary, sizes: dict[str, Any], family: str | None, given: dict
) -> tuple[Adversary, str]:
    """An Adversary object: used as is; keywords may only confirm its sizes."""
    if family is not None:
        raise ValueError(
            f"family={family!r} has no effect when adversary is an Adversary instance; drop one"
        )
    if given:
        raise ValueError(
            f"{sorted(given)} have no effect when adversary is an Adversary instance (configure "
            "the adversary object itself)"
        )
    for key in _SIZE_KEYS:
        value = sizes[key]
        if value is not None and getattr(adv, key) != value:
            raise ValueError(
                f"{key}={value} contradicts the adversary object's {key}={getattr(adv, key)}"
            )
    _check_fits(spec, adv, f"adversary {type(adv).__name__}")
    # The env plays on its own copy, so one object can configure several envs safely.
    adv = copy.deepcopy(adv)
    name = "custom"
    for fam in families(spec.kind):
        factory = family_factory(spec.kind, fam)
        if isinstance(factory, type) and type(adv) is factory:
            name = fam
    return adv, name


def _wrap_policy(
    spec: KindSpec, policy: Any, sizes: dict[str, Any], family: str | None, given: dict
) -> tuple[Adversary, FamilyParams]:
    """Adaptive kind: a policy object becomes a ``PolicyAdversary``."""
    if family is not None:
        raise ValueError(f"family={family!r} has no effect when adversary is a policy object")

    policy = copy.deepcopy(policy)  # the env's own copy, as for Adversary objects

    def factory(n_experts: int, horizon: int, params: PolicyAdversaryParams) -> Adversary:
        return PolicyAdversary(n_experts, horizon, params, policy=policy)

    declared = PolicyAdversaryParams
    for key in declared.unknown_keywords(given):
        raise TypeError(
            f"{key!r} is not a parameter of PolicyAdversary; it accepts {declared.accepted()}"
        )
    adv, params = _call_with(spec, "PolicyAdversary", factory, declared, sizes, given)
    _check_fits(spec, adv, "PolicyAdversary")
    return adv, params


def _check_fits(spec: KindSpec, adv: Adversary, label: str) -> None:
    """Refuse a loss model that does not serve this kind of environment."""
    if adv.feedback != spec.feedback:
        raise ValueError(
            f"{label} gives {adv.feedback}-information data but the {spec.kind!r} environment "
            f"needs {spec.feedback}-information data"
        )
    if spec.oblivious_only and not adv.oblivious:
        raise ValueError(
            f"{label} reacts to the learner's actions, but the {spec.kind!r} environment promises "
            "losses fixed in advance; use the adaptive environment"
        )
    if spec.kind == "bandit" and adv.n_experts != adv.n_arms:
        raise ValueError(
            f"{label} has n_experts={adv.n_experts} != n_arms={adv.n_arms}; the Bandit "
            "environment's experts are its arms (use the BanditAdvice environment)"
        )
