"""From constructor keywords to a loss model: the environment kinds and their defaults.

Every environment id serves one *kind* (docs/environments.md). A kind fixes the feedback (full
information or bandit with advice), the default family and the default sizes. :func:`build_game`
turns the shared constructor keywords (``n_experts``, ``horizon``, ``n_switches``, ``family``,
``n_shifts``, ``gap``, ``losses``, ``adversary``, ``n_arms``) plus family-specific keywords into an
:class:`~dp_experts_env.adversaries.Adversary` and the comparator switch budget.

Rules:

* A family receives only the keywords the user gave, plus the kind's default ``n_experts``,
  ``horizon`` (and ``n_arms``) when its constructor requires them (no default, or a default of
  None) and the user gave none; a family with its own default size keeps it. A
  keyword the family does not accept is an error naming the keyword, the family and the keywords
  it accepts: nothing is silently dropped.
* ``adversary`` may be an :class:`Adversary` instance (any kind; used as is after checking that
  it fits the kind; the env plays on its own deep copy), or, for the adaptive kind, a family
  name or a policy object (wrapped in ``PolicyAdversary``).
* ``losses`` selects the ``"replay"`` family (oblivious and bandit kinds) unless another is
  named.
"""

from __future__ import annotations

import copy
import inspect
import re
from dataclasses import dataclass
from typing import Any

from dp_experts_env._validation import check_choice, check_int
from dp_experts_env.adversaries import Adversary, families, family_factory
from dp_experts_env.adversaries.registry import ENV_KINDS

__all__ = ["KindSpec", "KINDS", "Game", "build_game", "feedback_of"]


@dataclass(frozen=True)
class KindSpec:
    """What an environment kind offers when the user says nothing.

    Attributes:
        kind: one of :data:`~dp_experts_env.adversaries.ENV_KINDS`.
        feedback: ``"full"`` or ``"bandit"``.
        family: the default family.
        n_experts: default N.
        horizon: default T.
        n_arms: default K (bandit kinds), else None.
        oblivious_only: True when the kind promises losses that ignore the learner's actions.
        summary: one line for listings.
    """

    kind: str
    feedback: str
    family: str
    n_experts: int
    horizon: int
    n_arms: int | None
    oblivious_only: bool
    summary: str


KINDS: dict[str, KindSpec] = {
    "shift": KindSpec(
        "shift", "full", "bernoulli_gap", 10, 1000, None, True,
        "shifting stochastic: change points, i.i.d. losses within a segment",
    ),
    "stochastic": KindSpec(
        "stochastic", "full", "one_vs_rest", 10, 1000, None, True,
        "stationary i.i.d. losses with a gap",
    ),
    "oblivious": KindSpec(
        "oblivious", "full", "anti_lazy", 10, 1000, None, True,
        "loss sequence fixed before play (hard families, replay of a user matrix)",
    ),
    "adaptive": KindSpec(
        "adaptive", "full", "punish_last", 10, 1000, None, False,
        "losses react to the learner's past actions (never the current one)",
    ),
    "bandit_advice": KindSpec(
        "bandit_advice", "bandit", "planted_expert", 20, 1000, 5, False,
        "N experts advise distributions over K arms; only the played arm's loss is seen",
    ),
    "bandit": KindSpec(
        "bandit", "bandit", "bernoulli_gap", 5, 1000, 5, False,
        "K-armed adversarial bandit: bandit with advice from the K identity experts",
    ),
}  # fmt: skip

if set(KINDS) != set(ENV_KINDS):  # pragma: no cover - a table edit gone wrong
    raise RuntimeError(f"env kinds {sorted(KINDS)} must match adversary kinds {ENV_KINDS}")


def feedback_of(kind: str) -> str:
    """``"full"`` or ``"bandit"`` for an environment kind."""
    return KINDS[check_choice("kind", kind, ENV_KINDS)].feedback


@dataclass
class Game:
    """A resolved environment configuration.

    Attributes:
        adversary: the loss model (not yet reset).
        kind: the environment kind.
        family: the family name (``"custom"`` for a user adversary object that is not a
            registered family, ``"policy"`` for a wrapped adaptive policy).
        n_switches: the comparator's switch budget S.
    """

    adversary: Adversary
    kind: str
    family: str
    n_switches: int


# Keywords the env itself consumes; everything else goes to the family.
_SIZE_KEYS = ("n_experts", "horizon", "n_arms")

#: Largest horizon, number of experts and number of arms an env accepts. Change points and
#: schedules compute k * T in int64, which overflows near 2**63, and numpy refuses arrays that
#: large with a message naming no parameter; 2**31 rounds (or experts) is far beyond anything
#: playable, so a larger value is a typo to report, not a game to build.
MAX_HORIZON = 2**31
MAX_SIZE = 2**31


def build_game(
    kind: str,
    *,
    n_experts: int | None = None,
    horizon: int | None = None,
    n_switches: int | None = None,
    family: str | None = None,
    n_shifts: int | None = None,
    gap: float | None = None,
    losses: Any = None,
    adversary: Any = None,
    n_arms: int | None = None,
    **family_kwargs: Any,
) -> Game:
    """Build the loss model of an environment of ``kind`` from its constructor keywords.

    Args:
        kind: environment kind (``"shift"``, ``"stochastic"``, ``"oblivious"``, ``"adaptive"``,
            ``"bandit_advice"``, ``"bandit"``).
        n_experts: N (bandit kind: must equal ``n_arms``; given alone it sets ``n_arms``).
        horizon: T.
        n_switches: the comparator's switch budget S (default: the adversary's
            ``default_switches``, i.e. its number of change points).
        family: family name of the kind (default: the kind's default family).
        n_shifts: number of change points (families that take it).
        gap: the families' gap parameter (families that take it).
        losses: a (T, N) loss matrix, ``.npy`` or ``.csv`` path (oblivious ``"replay"``), or
            a (T, K) arm-loss matrix (bandit kinds' ``"replay"``; BanditAdvice also needs
            ``advice=``).
        adversary: an Adversary instance, or (adaptive kind) a family name or policy object.
        n_arms: K (bandit kinds only).
        **family_kwargs: further keywords of the chosen family.

    Returns:
        the resolved :class:`Game`.
    """
    spec = KINDS[check_choice("kind", kind, ENV_KINDS)]
    if family is not None:
        check_choice("family", family, _family_names(kind))
    if horizon is not None:
        check_int("horizon", horizon, minimum=1, maximum=MAX_HORIZON)
    for name, value in (("n_experts", n_experts), ("n_arms", n_arms)):
        if value is not None:
            check_int(name, value, minimum=1, maximum=MAX_SIZE)
    sizes = {"n_experts": n_experts, "horizon": horizon, "n_arms": n_arms}
    if spec.feedback == "full" and n_arms is not None:
        raise ValueError(
            f"n_arms applies to bandit environments only; the {kind!r} environment has full "
            "information (leave n_arms unset)"
        )
    if kind == "bandit":
        _identity_sizes(sizes)
    given = {k: v for k, v in (("n_shifts", n_shifts), ("gap", gap), ("losses", losses))}
    given = {k: v for k, v in given.items() if v is not None}
    given.update(family_kwargs)

    if isinstance(adversary, Adversary):
        adv, family_name = _use_instance(spec, adversary, sizes, family, given)
    elif adversary is not None and not isinstance(adversary, str) and kind == "adaptive":
        adv, family_name = _wrap_policy(spec, adversary, sizes, family, given)
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
        adv = _make_family(spec, family, sizes, given, fill_sizes=losses is None)
        family_name = family

    s = adv.default_switches if n_switches is None else n_switches
    s = check_int("n_switches", s, minimum=0)
    return Game(adversary=adv, kind=kind, family=family_name, n_switches=s)


# ----------------------------------------------------------------------------- helpers
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


def _parameters(
    factory: Any, follow_bases: bool = False
) -> tuple[dict[str, inspect.Parameter], bool]:
    """A factory's keyword parameters and whether it takes arbitrary further keywords.

    With ``follow_bases``, a class whose ``__init__`` takes ``**kwargs`` also lists its base
    classes' parameters (the usual destination of forwarded keywords). That list is a best guess
    used for messages and docs only; acceptance of forwarded keywords is left to the call.
    """
    keyword_kinds = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    chain = (
        [c.__init__ for c in factory.__mro__ if "__init__" in vars(c) and c is not object]
        if isinstance(factory, type)
        else [factory]
    )
    named: dict[str, inspect.Parameter] = {}
    var_kw = False
    for depth, func in enumerate(chain):
        params = inspect.signature(func).parameters
        for key, param in params.items():
            if param.kind in keyword_kinds and key != "self":
                named.setdefault(key, param)
        takes_more = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())
        if depth == 0:
            var_kw = takes_more
        if not (takes_more and follow_bases):
            break
    return named, var_kw


_UNEXPECTED = re.compile(r"unexpected keyword argument '(\w+)'")


def _call_with(
    spec: KindSpec,
    label: str,
    factory: Any,
    sizes: dict[str, Any],
    given: dict[str, Any],
    fill_sizes: bool = True,
) -> Adversary:
    """Call a family factory with the user's keywords plus the default sizes it requires.

    ``fill_sizes=False`` (a user loss matrix) passes only the sizes the user gave.
    """
    named, var_kw = _parameters(factory)
    listed = sorted(_parameters(factory, follow_bases=True)[0])

    def unknown(key: str) -> TypeError:
        return TypeError(
            f"{key!r} is not a parameter of {label} of the {spec.kind!r} environment; it "
            f"accepts {listed} (plus the env keywords n_switches, family, adversary)"
        )

    def accepts(key: str) -> bool:
        return key in named or var_kw

    def requires(key: str) -> bool:
        # A size without a default, or defaulting to None, is the env's to fill in.
        if key in named:
            return named[key].default in (inspect.Parameter.empty, None)
        return var_kw

    for key in given:
        if not accepts(key):
            raise unknown(key)
    kwargs = dict(given)
    implied = {}  # sizes the family fixes itself: checked against the built adversary
    for key in _SIZE_KEYS:
        value, default = sizes[key], getattr(spec, key)
        if value is not None:
            if accepts(key):
                kwargs[key] = value
            else:
                implied[key] = value
        elif fill_sizes and default is not None and requires(key):
            kwargs[key] = default
    try:
        adv = factory(**kwargs)
    except TypeError as err:
        # Keywords forwarded through **kwargs are only refused by the callee: name the family.
        match = _UNEXPECTED.search(str(err))
        if match is None:
            raise
        raise unknown(match.group(1)) from err
    if not isinstance(adv, Adversary):
        raise TypeError(f"{label} built a {type(adv).__name__}, not an Adversary")
    for key, value in implied.items():
        if getattr(adv, key) != value:
            raise ValueError(
                f"{key}={value} contradicts {label}, which fixes {key}={getattr(adv, key)} "
                f"(it does not take {key!r}; its parameters are {listed})"
            )
    return adv


def _make_family(
    spec: KindSpec,
    family: str,
    sizes: dict[str, Any],
    given: dict[str, Any],
    fill_sizes: bool = True,
) -> Adversary:
    factory = family_factory(spec.kind, family)
    adv = _call_with(spec, f"family {family!r}", factory, sizes, given, fill_sizes)
    _check_fits(spec, adv, f"family {family!r}")
    return adv


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
) -> tuple[Adversary, str]:
    """Adaptive kind: a policy object becomes a ``PolicyAdversary``."""
    try:
        from dp_experts_env.adversaries import PolicyAdversary  # type: ignore[attr-defined]
    except ImportError as err:  # pragma: no cover - depends on the adaptive module being present
        raise TypeError(
            "adversary must be a family name or an Adversary instance (policy objects need "
            "dp_experts_env.adversaries.PolicyAdversary)"
        ) from err
    if family is not None:
        raise ValueError(f"family={family!r} has no effect when adversary is a policy object")

    policy = copy.deepcopy(policy)  # the env's own copy, as for Adversary objects

    def factory(n_experts: int, horizon: int, **kw: Any) -> Adversary:
        return PolicyAdversary(n_experts, horizon, policy=policy, **kw)

    named, _ = _parameters(PolicyAdversary)
    for key in given:
        if key not in named:
            raise TypeError(
                f"{key!r} is not a parameter of PolicyAdversary; it accepts "
                f"{sorted(k for k in named if k != 'policy')}"
            )
    adv = _call_with(spec, "PolicyAdversary", factory, sizes, given)
    _check_fits(spec, adv, "PolicyAdversary")
    return adv, "policy"


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
