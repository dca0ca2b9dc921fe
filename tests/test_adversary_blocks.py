"""Block draws of the bandit and advice adversaries: ``next_rounds(k)`` == k ``next_round`` calls.

Registry-wide over the ``bandit`` and ``bandit_advice`` kinds: every field of the block (losses,
means, advice, segment, shift) equals, bit for bit, the rounds k single draws give from a twin
adversary with the same seeds, for block sizes 1, 2, 3, 7 and the rest of the game, mixed with
single rounds (so a block starts in the middle of a stream's buffer), with blocks that cross
segment boundaries (several shifts in a short game), and the round after each block is the same
too (the state a block leaves is the state k single draws leave).
"""

from __future__ import annotations

import numpy as np
import pytest
from _family_cases import family_inputs

from dp_experts_env.adversaries import families, make_adversary
from dp_experts_env.adversaries.base import Neighbor

HORIZON = 48
SEEDS = [3, 11, 12, 40]
KINDS = ("bandit", "bandit_advice")
CASES = [(kind, family) for kind in KINDS for family in families(kind)]
# Families that read a user-supplied matrix or rule per round: they keep the per-round path.
NO_BLOCK_FORM = {"replay"}
FIELDS = ("losses", "means", "advice", "segment", "shift")


def _make(kind: str, family: str, **extra):
    params = dict(family_inputs(kind, family, HORIZON))
    params.update(extra)
    return make_adversary(kind, family, **params)


def _variants(kind: str, family: str) -> list[dict]:
    """The family's defaults, plus several shifts where it has a schedule (blocks cross them)."""
    out: list[dict] = [{}]
    if "shifting" in family:
        out.append({"n_shifts": 5, "change_points": "uniform"})
        out.append({"n_shifts": 3, "change_points": [5, 6, 30]})
    if family == "periodic_swap":
        out.append({"period": 4})
    if family == "lemma11_switch":
        out += [{"switch_round": 9}, {"switch_round": 1}, {"switch_round": HORIZON + 1}]
    return out


def _check_equal(single, block, k: int) -> None:
    rounds = [single.next_round() for _ in range(k)]
    got = block.next_rounds(k)
    assert got is not None
    for name in FIELDS:
        value = getattr(got, name)
        if getattr(rounds[0], name) is None:
            assert value is None, name
            continue
        want = np.stack([np.asarray(getattr(r, name)) for r in rounds])
        assert value.shape == want.shape, name
        assert value.dtype == want.dtype, name
        assert value.tobytes() == want.tobytes(), (name, k)
    assert block.t == single.t


@pytest.mark.parametrize(("kind", "family"), CASES, ids=[f"{k}/{f}" for k, f in CASES])
def test_block_draws_equal_single_draws(kind, family):
    for extra in _variants(kind, family):
        single, block = _make(kind, family, **extra), _make(kind, family, **extra)
        single.reset(SEEDS)
        block.reset(SEEDS)
        if family in NO_BLOCK_FORM:
            assert block.next_rounds(3) is None
            continue
        # K = 1, short blocks, a single round between blocks, then the rest of the game.
        for k in (1, 2, 3, 7, 1, 5):
            _check_equal(single, block, k)
            a, b = single.next_round(), block.next_round()
            for name in FIELDS:
                x, y = getattr(a, name), getattr(b, name)
                assert (x is None) == (y is None)
                if x is not None:
                    assert np.asarray(x).tobytes() == np.asarray(y).tobytes(), name
        _check_equal(single, block, HORIZON - single.t)
        assert block.next_rounds(1) is None  # the game is over: no block form past T


@pytest.mark.parametrize("family", ["planted_expert", "shifting_planted_expert", "policy_class"])
def test_block_draws_from_the_first_round(family):
    """A block of the whole game from reset equals T single draws (the buffers' first fill)."""
    single, block = _make("bandit_advice", family), _make("bandit_advice", family)
    single.reset(SEEDS)
    block.reset(SEEDS)
    _check_equal(single, block, HORIZON)


def test_block_form_refuses_what_it_cannot_replay():
    adv = _make("bandit_advice", "planted_expert")
    adv.reset(SEEDS, neighbor=Neighbor(5, np.zeros(3)))
    assert adv.next_rounds(4) is None  # a neighbour replaces one round's datum: per round
    adv.reset(SEEDS)
    assert adv.next_rounds(HORIZON + 1) is None
    assert adv.next_rounds(0) is None

    class Tweaked(type(adv)):
        """A subclass changing one round's law but not the block law must not block."""

        def _public(self, t):
            return super()._public(t)

    tweaked = Tweaked(n_experts=4, horizon=HORIZON, n_arms=3)
    tweaked.reset(SEEDS)
    assert tweaked.next_rounds(4) is None


# ------------------------------------------------------------------------------------ OCO
OCO_HORIZON = 40


def _oco(family: str, chunk: int | None):
    from dp_experts_env.adversaries.oco import OCOAdversary

    knobs: dict = {"family": family, "dim": 3, "num_runs": 4}
    if family == "replay":
        rng = np.random.default_rng(5)
        g = rng.standard_normal((OCO_HORIZON, 3))
        knobs["gradients"] = g / (2 * np.linalg.norm(g, axis=1, keepdims=True))
    else:
        knobs["horizon"] = OCO_HORIZON
        if family == "shifting":
            knobs["n_shifts"] = 4
    adv = OCOAdversary(**knobs)
    if chunk is not None:
        adv._chunk = chunk  # small chunks: blocks cross the refills of the uniforms
    adv.reset(SEEDS)
    return adv


@pytest.mark.parametrize("chunk", [None, 3])
@pytest.mark.parametrize("family", ["stochastic", "shifting", "rademacher", "anti_ftl", "replay"])
def test_oco_block_gradients_equal_single_gradients(family, chunk):
    single, block = _oco(family, chunk), _oco(family, chunk)
    t = 0
    for k in (1, 2, 7, 1, 4, 9):  # 1 + ... crosses the shifts at rounds 9, 17, 25, 33
        want = np.stack([single.gradient(t + 1 + i) for i in range(k)])
        got = block.next_rounds(k)
        assert got is not None and got.tobytes() == want.tobytes(), (k, t)
        t += k
        assert block.t == single.t == t
        t += 1
        assert single.gradient(t).tobytes() == block.gradient(t).tobytes()
    rest = OCO_HORIZON - t
    want = np.stack([single.gradient(t + 1 + i) for i in range(rest)])
    assert block.next_rounds(rest).tobytes() == want.tobytes()
    assert block.next_rounds(1) is None


def test_oco_block_form_refuses_adaptive_and_neighbours():
    adv = _oco("adaptive", None)
    assert adv.next_rounds(3) is None
    adv = _oco("stochastic", None)
    adv.reset(SEEDS, neighbor=(4, np.zeros(3)))
    assert adv.next_rounds(3) is None
