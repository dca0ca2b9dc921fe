"""``check_agent``'s long plays (``monotone``, the ``epsilon_inf`` limit) play the block paths.

``regret_by_epsilon`` plays through :func:`dp_experts_env.evaluation.episode.play`, the loop users'
runs play (``play_block`` / ``play_bandit_block`` / the OCO blocks where a learner has one, ``act``
otherwise). Known answer: its regrets are, bit for bit, those of the round-by-round ``act`` loop it
replaced (``_round_by_round`` below, that loop as it was), for built-ins of every feedback kind, one
built-in without a block path, and plug-in-like classes defined here.

How ``paths`` and ``monotone`` relate: ``monotone`` now reads the block path, and ``paths`` (which
runs before it) holds the block path to ``act``. Planted control: a learner whose ``act`` is not
monotone but whose block path is passes ``monotone`` alone (the verdict is on what users run) and
is stopped by ``paths`` in a full ``check_agent``; a harmless rewrite of a block path passes both
with the same regrets.
"""

from __future__ import annotations

import math

import gymnasium as gym
import numpy as np
import pytest
from _planted_agents import BlockFlagged, BlockLeader

import agents
from agents.noisy_clipped_hedge import NoisyClippedHedge
from dp_experts_env import testing
from dp_experts_env.evaluation.episode import uses_blocks
from dp_experts_env.testing import ContractError, check_agent, regret_by_epsilon

EPSILONS = (0.5, 4.0, math.inf)
#: The plug-in-like learners here declare no mechanisms; the audit's warning about it is not tested.
pytestmark = pytest.mark.filterwarnings("ignore:.*declares no mechanisms:UserWarning")


def _round_by_round(agent, env, seeds):
    """The pre-block ``regret_by_epsilon`` play: ``act`` every round, the last info's regret."""
    obs, info = env.reset(seed=seeds)
    while True:
        obs, _, terminated, _, info = env.step(agent.act(obs))
        if np.all(terminated):
            return np.asarray(info["static_regret"], dtype=float)


def _old_regrets(monkeypatch, target, **kw):
    with monkeypatch.context() as m:
        m.setattr(testing, "_final_regret", _round_by_round)
        return regret_by_epsilon(target, **kw)


def _jit_plays_blocks() -> bool:
    env = gym.make_vec(
        "DPExperts-Stochastic-v0", num_envs=2, vectorization_mode="vector_entry_point",
        horizon=10, n_experts=4,
    )  # fmt: skip
    return uses_blocks(env)


class PluginHedge(NoisyClippedHedge):
    """A plug-in-like subclass of a built-in (defined outside the registry, nothing changed)."""


class NoBlockLeader(BlockLeader):
    """A plug-in without a block entry point: its runs play ``act`` every round."""

    play_block = None


class ActInvertedBlockCorrect(BlockFlagged):
    """Planted: ``act`` selects with more noise at larger epsilon; the block path is correct."""

    # BlockFlagged's play_block plays this override (it reads _in_block): declared, so users'
    # runs call it (dp_experts_env/block_entry.py) and the block path differs from act.
    _block_path_covers = frozenset({"_select_epsilon"})

    def _select_epsilon(self) -> float:
        if self._in_block or not math.isfinite(self.epsilon):
            return self.epsilon / self.k
        return 1.0 / (self.epsilon * self.k)


class BlockRewritten(BlockLeader):
    """Harmless: the block path written another way, the same actions as ``act``."""

    def play_block(self, obs: np.ndarray) -> np.ndarray:
        out = np.empty(obs.shape[:2], dtype=np.int64)
        for i in range(len(obs)):
            out[i] = self.act(obs[i])
        return out


class LateBlockBug(BlockLeader):
    """Planted: the block path plays the next expert after round 100 (``act`` is right), past the
    ``paths`` check's 40-round game."""

    def play_block(self, obs: np.ndarray) -> np.ndarray:
        start = self.t
        out = super().play_block(obs)
        late = np.arange(start, start + len(out)) >= 100
        out[late] = (out[late] + 1) % self.n_experts
        return out


class FreshReset(BlockLeader):
    """Planted: ``reset()`` without a seed draws fresh entropy (not deterministic)."""

    def reset(self, seed=None):
        fresh = int(np.random.SeedSequence().entropy % 2**32)
        return super().reset(fresh if seed is None else seed)


#: (target, the block entry point its runs play, or None).
CASES = [
    ("limited-updates", "play_block"),
    ("private-batched-exp4", "play_bandit_block"),
    ("dp-ftrl-oco", "play_block"),
    ("ucb1", "play_bandit_block"),
    (PluginHedge, "play_block"),
    (BlockLeader, "play_block"),
    (NoBlockLeader, None),
]


@pytest.mark.parametrize(
    "target, entry", CASES, ids=lambda c: getattr(c, "__name__", c) if c else "act"
)
def test_block_play_gives_the_round_by_round_regrets_bit_for_bit(monkeypatch, target, entry):
    cls = agents.spec(target).cls if isinstance(target, str) else target
    calls = []
    if entry is not None:
        original = getattr(cls, entry)

        def spy(self, *args, **kw):
            calls.append(1)
            return original(self, *args, **kw)

        monkeypatch.setattr(cls, entry, spy)
    new = regret_by_epsilon(target, EPSILONS, runs=6, horizon=300)
    old = _old_regrets(monkeypatch, target, epsilons=EPSILONS, runs=6, horizon=300)
    for a, b in zip(new, old, strict=True):
        assert a.shape == (6,) and a.tobytes() == b.tobytes()
    # The block path was played (on the compiled path; the numpy path plays act every round).
    assert bool(calls) == (entry is not None and _jit_plays_blocks())


def test_the_epsilon_inf_limit_comparison_reads_the_same_regrets(monkeypatch):
    """``epsilon_inf``'s 32 x 1,000 comparison plays through the same function."""
    kw = {"epsilons": (math.inf,), "runs": 32, "horizon": 1000}
    new = regret_by_epsilon("limited-updates", **kw)[0]
    assert new.tobytes() == _old_regrets(monkeypatch, "limited-updates", **kw)[0].tobytes()


def test_a_block_path_unlike_act_cannot_change_the_verdict_past_paths(monkeypatch):
    # act's own play is not monotone: the verdict the old loop gave ...
    with monkeypatch.context() as m:
        m.setattr(testing, "_final_regret", _round_by_round)
        with pytest.raises(ContractError) as err:
            check_agent(ActInvertedBlockCorrect, checks=["monotone"])
        assert err.value.check == "monotone"
    if not _jit_plays_blocks():  # the numpy path plays act every round: the same verdict
        with pytest.raises(ContractError, match="rises|must fall"):
            check_agent(ActInvertedBlockCorrect, checks=["monotone"])
        return
    # ... monotone alone now reads the block path (correct here) and passes ...
    assert check_agent(ActInvertedBlockCorrect, checks=["monotone"]).passed == ["monotone"]
    # ... and the full check stops at paths, before monotone.
    with pytest.raises(ContractError) as err:
        check_agent(ActInvertedBlockCorrect, skip=["audit"])
    assert err.value.check == "paths", str(err.value)


def test_a_harmless_block_rewrite_passes_with_the_same_regrets():
    report = check_agent(BlockRewritten, checks=["paths", "monotone"])
    assert report.passed == ["paths", "monotone"]
    ours = regret_by_epsilon(BlockRewritten, runs=8, horizon=500)
    theirs = regret_by_epsilon(BlockLeader, runs=8, horizon=500)
    assert [a.tobytes() for a in ours] == [b.tobytes() for b in theirs]


def test_a_block_path_wrong_past_the_paths_game_is_caught_by_monotone():
    """``paths`` plays 40 rounds; the monotone check replays its own game's first runs through
    ``act`` and requires the episode loop's regrets (the block path's) bit for bit."""
    assert check_agent(LateBlockBug, checks=["paths"]).passed == ["paths"]
    if not _jit_plays_blocks():  # the numpy path never plays the block path: nothing to catch
        assert check_agent(LateBlockBug, checks=["monotone"]).passed == ["monotone"]
        return
    with pytest.raises(ContractError, match="differ from act's round by round"):
        check_agent(LateBlockBug, checks=["monotone"])


def test_a_reset_that_is_not_deterministic_is_caught_by_monotone():
    """The episode loop resets the learner without a seed: a learner whose ``reset()`` draws
    fresh entropy would make ``monotone`` vary from call to call; its replay catches it."""
    with pytest.raises(ContractError, match="not deterministic"):
        check_agent(FreshReset, checks=["monotone"])

