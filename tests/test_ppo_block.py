"""PPO's ``play_block`` against K calls of ``act``: features, draws, the block's forward, the guard.

The block's features must be ``LossFeatures.update`` round by round, bit for bit; its Gumbel
draws one read of each run's stream in ``act``'s order; its actions and state after those of
``act``. torch's batched rows may differ from a round's rows in the last bits, so rows whose
lead is within ``LogitBound``'s margin are replayed through the round's forward: the premises of
that margin (torch's tanh error, the score differences) are checked here, and the replay is
forced (tied logits, a planted batched-row difference) and must still give ``act``'s actions.
"""

from __future__ import annotations

import copy
from types import SimpleNamespace

import numpy as np
import pytest
from conftest import use_jit_path

from dp_experts_env.wrappers import LossFeatures

SHIFT = "DPExperts-Shift-v0"
PLAN = (1, 0, 6, 13, 1, 2, 9)  # then the rest of the horizon as the last, partial block


def _same(x, y) -> bool:
    x, y = np.asarray(x), np.asarray(y)
    return x.shape == y.shape and x.dtype == y.dtype and x.tobytes() == y.tobytes()


def _losses(horizon: int, runs: int, n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    # Coarse values (experts with equal features: tied logits) mixed with fine ones.
    coarse = rng.integers(0, 3, size=(horizon, runs, n)) / 2.0
    fine = rng.random((horizon, runs, n))
    return np.where(rng.random((horizon, runs, 1)) < 0.5, coarse, fine)


# ----------------------------------------------------------------------------- features
def _feature_twins(n, horizon, runs, **kw):
    twins = [LossFeatures(n, horizon, **kw) for _ in range(2)]
    for f in twins:
        f.reset(runs)
    return twins


def _feature_mismatch(per_round, blocked, losses, plan) -> str | None:
    """None when blocked.update_block equals per_round.update call by call (and the state after)."""
    t = 0
    for k in plan:
        want = [per_round.update(losses[t + i]) for i in range(k)]
        got = blocked.update_block(losses[t : t + k])
        want = np.stack(want) if k else np.zeros((0, *per_round.features().shape), np.float32)
        if not _same(got, want):
            return f"features of rounds {t + 1}..{t + k}"
        t += k
    if per_round.t != blocked.t or not _same(per_round._prefix, blocked._prefix):
        return "state after the blocks"
    return None


@pytest.mark.parametrize(
    ("n", "runs", "kw"),
    [
        (1, 1, {}),
        (3, 2, {"windows": (1, 2, 40)}),
        (10, 4, {}),
        (9, 3, {"windows": (5,), "cumulative": False}),
        (17, 2, {"windows": (300, 7), "round_index": False}),
        (130, 2, {"windows": (16, 128, 16)}),
    ],
)
def test_block_features_equal_update_bit_for_bit(n, runs, kw):
    horizon = 250
    losses = _losses(horizon, runs, n, seed=n)
    plan = [*PLAN, 150, 1, 67, 0]  # 250 rounds: the last block partial
    per_round, blocked = _feature_twins(n, horizon, runs, **kw)
    assert _feature_mismatch(per_round, blocked, losses, plan) is None
    assert blocked.t == sum(plan)


def test_a_wrong_feature_window_is_caught_and_a_harmless_change_passes():
    horizon, runs, n = 120, 3, 6
    losses = _losses(horizon, runs, n, seed=1)
    per_round, blocked = _feature_twins(n, horizon, runs)
    blocked.windows = (17, 128)  # planted: the block's first window one round too long
    assert _feature_mismatch(per_round, blocked, losses, [5, 40, 30]) is not None
    per_round, blocked = _feature_twins(n, horizon, runs)
    fortran = np.asfortranarray(losses)  # harmless: another memory order of the same losses
    assert _feature_mismatch(per_round, blocked, fortran, [5, 40, 30]) is None


def test_update_block_refuses_a_wrong_shape():
    features = LossFeatures(4, 10)
    features.reset(2)
    with pytest.raises(ValueError, match=r"losses must have shape \(K, 2, 4\)"):
        features.update_block(np.zeros((3, 4)))


# ----------------------------------------------------------------------------- the agent
def _ppo(n=5, horizon=60, runs=3, seed=7, env_id=SHIFT, deterministic=False, **kw):
    pytest.importorskip("stable_baselines3")
    import agents

    env_kwargs = {"n_experts": n, "horizon": horizon, **kw.pop("env_kwargs", {})}
    return agents.make(
        "ppo", n_experts=n, horizon=horizon, num_envs=runs, seed=seed, env_id=env_id,
        env_kwargs=env_kwargs, timesteps=256, deterministic=deterministic, **kw,
    )  # fmt: skip


def _twins(**kw):
    return _ppo(**kw), _ppo(**kw)


def _mismatch(per_round, blocked, losses, plan=PLAN) -> str | None:
    """None when blocked.play_block equals per_round.act call by call, state and stream after."""
    horizon, runs = per_round.horizon, per_round.num_envs
    t = 0
    for k in [*plan, horizon - sum(plan)]:
        want = [np.asarray(per_round.act(losses[t + i])) for i in range(k)]
        want = np.stack(want) if k else np.empty((0, runs), dtype=np.int64)
        got = blocked.play_block(losses[t : t + k])
        if not _same(got, want):
            return f"actions of rounds {t + 1}..{t + k}"
        t += k
    for key in ("t", "last_actions", "_obs"):
        if not _same(getattr(per_round, key), getattr(blocked, key)):
            return key
    a, b = per_round.features, blocked.features
    if a.t != b.t or not _same(a._prefix, b._prefix):
        return "features"
    if not _same(per_round.rng.random((5,)), blocked.rng.random((5,))):
        return "stream"
    return None


CASES = [
    pytest.param({}, id="shift-N5-B3"),
    pytest.param({"deterministic": True}, id="shift-N5-B3-deterministic"),
    pytest.param(
        {"n": 2, "runs": 1, "horizon": 50, "env_id": "DPExperts-Stochastic-v0"}, id="stochastic"
    ),
    pytest.param(
        {"n": 4, "runs": 2, "horizon": 45, "windows": (3, 7), "deterministic": True}, id="windows"
    ),
    pytest.param(
        {"n": 10, "runs": 10, "horizon": 400, "env_kwargs": {"n_shifts": 4, "gap": 0.3}},
        id="shift-N10-B10-T400",
    ),
    pytest.param(
        {"n": 3, "runs": 5, "horizon": 300, "env_id": "DPExperts-Oblivious-v0",
         "deterministic": True},
        id="oblivious-deterministic",
    ),  # fmt: skip
]


@pytest.mark.parametrize("case", CASES)
def test_play_block_equals_act(case):
    per_round, blocked = _twins(**case)
    losses = _losses(per_round.horizon, per_round.num_envs, per_round.n_experts, seed=3)
    assert _mismatch(per_round, blocked, losses) is None
    assert blocked.replays["rows"] == per_round.horizon * per_round.num_envs


def test_the_episode_loop_plays_ppo_in_blocks_with_acts_results(monkeypatch):
    """End to end: the compiled path's episode (blocks, ``play_block``) equals the numpy path's
    (``act`` every round), every metric at every kept round."""
    import gymnasium as gym

    from dp_experts_env.evaluation.episode import play, uses_blocks
    from dp_experts_env.evaluation.grid import record_rounds

    horizon, runs = 300, 4
    env_kw = {"n_experts": 6, "horizon": horizon}
    results = {}
    for path in ("compiled", "numpy"):
        use_jit_path(path, monkeypatch)
        env = gym.make_vec(SHIFT, num_envs=runs, vectorization_mode="vector_entry_point", **env_kw)
        agent = _ppo(n=6, horizon=horizon, runs=runs, seed=11)
        assert uses_blocks(env) == (path == "compiled")
        results[path] = play(env, agent, list(range(runs)), record_rounds(horizon))
        assert (agent.replays["rows"] > 0) == (path == "compiled")
    assert results["compiled"].keys() == results["numpy"].keys()
    for key, value in results["numpy"].items():
        assert _same(results["compiled"][key], value), key


@pytest.mark.parametrize(("rounds", "n", "runs"), [(1, 5, 1), (7, 1, 3), (40, 10, 2), (700, 7, 4)])
def test_a_blocks_gumbel_draws_are_acts_draws(rounds, n, runs):
    """(L, N) at once from the agent's own stream equals L draws of (N,) (700 x 7 crosses the
    stream's buffer refill), and the stream continues alike."""
    once, per_round = _ppo(n=5, runs=runs), _ppo(n=5, runs=runs)
    block = once.rng.gumbel((rounds, n))
    rows = np.stack([per_round.rng.gumbel((n,)) for _ in range(rounds)], axis=1)
    assert _same(block, rows)
    assert _same(once.rng.random((3,)), per_round.rng.random((3,)))


def test_a_wrong_draw_order_is_caught_and_a_split_read_passes(monkeypatch):
    per_round, blocked = _twins()
    losses = _losses(60, 3, 5, seed=4)
    gumbel = blocked.rng.gumbel

    def expert_major(shape=()):  # planted: the block's (L, N) draws read expert by expert
        if len(shape) == 2:
            return gumbel((shape[1], shape[0])).transpose(0, 2, 1)
        return gumbel(shape)

    monkeypatch.setattr(blocked.rng, "gumbel", expert_major)
    assert _mismatch(per_round, blocked, losses) is not None

    def split(shape=()):  # harmless: the same draws read in two parts
        if len(shape) == 2 and shape[0] > 1:
            half = shape[0] // 2
            rest = (shape[0] - half, shape[1])
            return np.concatenate([gumbel((half, shape[1])), gumbel(rest)], axis=1)
        return gumbel(shape)

    per_round, blocked = _twins()
    gumbel = blocked.rng.gumbel
    monkeypatch.setattr(blocked.rng, "gumbel", split)
    assert _mismatch(per_round, blocked, losses) is None


def test_a_wrong_feature_window_in_the_agent_is_caught():
    per_round, blocked = _twins()
    blocked.features.windows = (15, 60)  # planted: the block's first window one round short
    assert _mismatch(per_round, blocked, _losses(60, 3, 5, seed=5)) is not None


# ----------------------------------------------------------------------------- the guard
def _tied(agent):
    """A model whose policy is a copy of the agent's with every expert given the same score."""
    torch = pytest.importorskip("torch")
    trained = agent.train().policy
    # (Its last training step's distribution holds graph tensors, which deepcopy refuses.)
    policy = copy.deepcopy(trained, {id(trained.action_dist): copy.copy(trained.action_dist)})
    with torch.no_grad():
        for p in policy.mlp_extractor.score[2].parameters():
            p.zero_()
    return SimpleNamespace(policy=policy)


def test_tied_logits_are_replayed_and_give_acts_first_expert():
    per_round, blocked = _twins(deterministic=True)
    model = _tied(per_round)
    per_round.model = blocked.model = model
    losses = _losses(60, 3, 5, seed=6)
    assert _mismatch(per_round, blocked, losses) is None
    assert blocked.replays["replayed"] == blocked.replays["rows"] == 180
    assert not blocked.last_actions.any()  # a tie: act's argmax takes the first expert


def test_a_planted_batched_row_difference_is_corrected_by_the_guard_and_caught_without(
    monkeypatch,
):
    """The block's forward moved by 1e-9 (far inside the margin) towards the last expert: tied
    rows then lead there, the guard replays them through the round's forward (act's actions);
    with the guard off the planted difference reaches the actions."""
    import agents.ppo as ppo

    block_logits = ppo._block_logits

    def nudged(policy, rows):
        out = block_logits(policy, rows)
        out[:, -1] += 1e-9
        return out

    monkeypatch.setattr(ppo, "_block_logits", nudged)
    losses = _losses(60, 3, 5, seed=7)
    per_round, blocked = _twins(deterministic=True)
    per_round.model = blocked.model = _tied(per_round)
    assert _mismatch(per_round, blocked, losses) is None
    assert blocked.replays["replayed"] == 180

    monkeypatch.setattr(
        ppo.LogitBound, "close_rows", lambda self, f, logits, s: np.zeros(s.shape[:2], bool)
    )
    per_round, blocked = _twins(deterministic=True)
    per_round.model = blocked.model = _tied(per_round)
    assert _mismatch(per_round, blocked, losses) == "actions of rounds 1..1"


def test_a_batched_forward_anywhere_within_half_the_margin_gives_acts_actions(monkeypatch):
    """Every batched log-probability moved by up to half its row's margin, with signs at random:
    the rows the move could reorder are within the margin, replayed, and the actions stay act's."""
    import agents.ppo as ppo

    block_logits = ppo._block_logits
    rng = np.random.default_rng(0)
    runs = 3

    def moved(policy, rows):
        out = block_logits(policy, rows)
        features, logits = rows.reshape(-1, runs, rows.shape[1]), out.reshape(-1, runs, 5)
        half = ppo.LogitBound.of(policy).margins(features, logits, logits) / 2
        return out + (rng.uniform(-1, 1, logits.shape) * half[..., None]).reshape(out.shape)

    monkeypatch.setattr(ppo, "_block_logits", moved)
    for deterministic in (False, True):
        per_round, blocked = _twins(runs=runs, deterministic=deterministic)
        assert _mismatch(per_round, blocked, _losses(60, runs, 5, seed=8)) is None
        # Coarse losses tie experts' features: deterministic play meets tied logits.
        assert (blocked.replays["replayed"] > 0) == deterministic


def test_every_row_replayed_is_harmless(monkeypatch):
    import agents.ppo as ppo

    monkeypatch.setattr(ppo, "SAFETY", 1e30)
    per_round, blocked = _twins()
    assert _mismatch(per_round, blocked, _losses(60, 3, 5, seed=9)) is None
    assert blocked.replays["replayed"] == blocked.replays["rows"] == 180


def _set_precision(switch: str, value: str) -> None:
    import torch

    if switch == "legacy":
        torch.set_float32_matmul_precision(value)
    elif switch == "backends":
        torch.backends.fp32_precision = value
    else:
        torch.backends.mkldnn.matmul.fp32_precision = value


@pytest.mark.parametrize(
    ("switch", "fast", "exact"),
    [("legacy", "medium", "highest"), ("backends", "tf32", "none"), ("mkldnn", "bf16", "none")],
)
def test_without_exact_float32_matmuls_the_block_plays_round_by_round(switch, fast, exact):
    pytest.importorskip("torch")
    import agents.ppo as ppo

    per_round, blocked = _twins()
    losses = _losses(60, 3, 5, seed=10)
    per_round.train()
    try:
        _set_precision(switch, fast)
        assert not ppo.exact_float32_matmul()
        assert ppo.LogitBound.of(blocked.train().policy) is None
        assert _mismatch(per_round, blocked, losses) is None
        assert blocked.replays["rows"] == 0
    finally:
        _set_precision(switch, exact)
    assert ppo.exact_float32_matmul()


def test_a_subclass_with_its_own_choice_plays_its_hooks():
    import agents.ppo as ppo

    class Firsts(ppo.PPOBaseline):
        def _choose(self, obs):
            return np.zeros(self.num_envs, dtype=np.int64)

    agent = Firsts(5, 60, num_envs=3, seed=0, env_id=SHIFT, env_kwargs={"n_experts": 5})
    assert not agent.play_block(_losses(60, 3, 5, seed=0)[:10]).any()
    assert agent.t == 10 and agent.replays["rows"] == 0


# ------------------------------------------------------------------------ the margin's premises
def test_torchs_tanh_is_within_the_stated_error():
    """The margin allows TANH_ERROR per tanh: torch's float32 tanh against float64's, at sizes
    that reach its vector loops and their scalar tails."""
    torch = pytest.importorskip("torch")
    from agents.ppo import TANH_ERROR

    rng = np.random.default_rng(1)
    worst = 0.0
    for size in [*range(1, 70), 1000, 100_003]:
        x = (rng.standard_normal(size) * rng.choice([0.01, 1.0, 4.0], size)).astype(np.float32)
        got = torch.tanh(torch.from_numpy(x)).numpy().astype(np.float64)
        assert np.abs(got).max() <= 1.0
        worst = max(worst, float(np.abs(got - np.tanh(x.astype(np.float64))).max()))
    assert worst <= TANH_ERROR / 4  # measured 3.1e-8 (0.51 ulp): the allowance is 8 ulps


@pytest.mark.parametrize("runs", [1, 3, 10])
def test_batched_scores_lie_within_the_bound_of_the_rounds(runs):
    """A block's raw scores against each round's, and the log-probabilities' spread of
    differences within a row against the margin (no noise), on features up to sqrt(T)."""
    torch = pytest.importorskip("torch")
    from agents.ppo import SAFETY, LogitBound, policy_log_probs

    agent = _ppo(n=10, horizon=2000, runs=runs, env_kwargs={"n_shifts": 4, "gap": 0.3})
    policy = agent.train().policy
    bound = LogitBound.of(policy)
    features = LossFeatures(10, 2000)
    features.reset(runs)
    rng = np.random.default_rng(runs)
    skewed = rng.random((2000, runs, 10)) * np.linspace(0, 1, 10)  # features far from 0
    block = features.update_block(skewed)
    scorer = policy.mlp_extractor
    with torch.no_grad():
        rows = torch.from_numpy(block.reshape(-1, block.shape[2]))
        scores = scorer.forward_actor(rows).numpy().reshape(2000, runs, 10).astype(np.float64)
        logits = policy_log_probs(policy, rows).numpy().reshape(2000, runs, 10).astype(np.float64)
        single = [scorer.forward_actor(torch.from_numpy(r)).numpy() for r in block]
        single_logits = [policy_log_probs(policy, torch.from_numpy(r)).numpy() for r in block]
    single, single_logits = np.stack(single), np.stack(single_logits)
    errors = bound.score_errors(block)
    assert (np.abs(scores - single) <= errors).all()
    moved = logits - single_logits
    spread = moved.max(axis=2) - moved.min(axis=2)
    assert (spread <= bound.margins(block, logits, logits) / SAFETY).all()
    assert np.abs(block).max() > 10  # the bound was exercised away from small features


# ------------------------------------------------------------- the margin, derived independently
U32, U64 = 2.0**-24, 2.0**-53


def _gamma(n: int) -> float:
    return n * U32 / (1 - n * U32)


def _one_evaluation_error(policy, rows: np.ndarray) -> np.ndarray:
    """(R, N) bound on one float32 evaluation's score error, layer by layer from the weights
    (docs/algorithms.md, "PPO in blocks"; a tanh within 8 ulps, stated there)."""
    scorer = policy.mlp_extractor
    n, g = scorer.n_experts, scorer.n_groups
    first, second = scorer.score[0], scorer.score[2]
    w1, b1 = (np.abs(p.detach().numpy().astype(np.float64)) for p in first.parameters())
    w2, b2 = (np.abs(p.detach().numpy().astype(np.float64)) for p in second.parameters())
    per = rows[:, : g * n].reshape(len(rows), g, n).transpose(0, 2, 1).astype(np.float64)
    if scorer.round_index:
        last = np.broadcast_to(rows[:, -1:, None].astype(np.float64), (len(rows), n, 1))
        per = np.concatenate([per, last], axis=2)
    d, h = per.shape[2], w1.shape[0]
    hidden_error = _gamma(d + 1) * (np.abs(per) @ w1.T + b1) + 8 * U32  # (R, N, h)
    return hidden_error @ w2[0] + _gamma(h + 1) * (w2.sum() + b2[0])


def test_the_margin_covers_the_pair_bound_derived_independently():
    """score_errors is twice one evaluation's bound; the margin at least twice (the documented
    safety factor) the bound on how far two evaluations' lead may differ, with and without the
    noise: a margin too small (by 2x or 10x) or a feature group weighed with another's reach
    fails here."""
    torch = pytest.importorskip("torch")
    from agents.ppo import LogitBound, policy_log_probs

    agent = _ppo(n=5, horizon=60, runs=3, windows=(3, 7))
    policy = agent.train().policy
    features = LossFeatures(5, 60, windows=(3, 7))
    features.reset(3)
    block = features.update_block(_losses(60, 3, 5, seed=12) * np.linspace(0.2, 1, 5))
    rows = block.reshape(-1, block.shape[2])
    error = _one_evaluation_error(policy, rows).reshape(60, 3, 5)
    bound = LogitBound.of(policy)
    np.testing.assert_allclose(bound.score_errors(block), 2 * error, rtol=1e-12, atol=0)
    with torch.no_grad():
        logits = policy_log_probs(policy, torch.from_numpy(rows)).numpy().astype(np.float64)
    logits = logits.reshape(60, 3, 5)
    pair = 4 * error.max(axis=2) + 4 * U32 * np.abs(logits).max(axis=2)
    assert (bound.margins(block, logits, logits) >= 2 * pair).all()
    scores = logits + np.random.default_rng(0).gumbel(size=logits.shape)
    noisy = pair + 4 * U64 * np.abs(scores).max(axis=2)
    assert (bound.margins(block, logits, scores) >= 2 * noisy).all()


def test_a_planted_difference_within_the_pair_bound_is_replayed_and_a_tenth_margin_is_caught(
    monkeypatch,
):
    """Experts with equal losses have equal features, so act's scores tie (act plays expert 0).
    The block's forward moves the last expert up by 0.99 of the independently derived bound on
    two evaluations' lead (a difference the proof allows): the guard must replay every row; with
    a margin 10x too small it does not, and the planted difference reaches the actions."""
    import agents.ppo as ppo

    block_logits = ppo._block_logits

    def moved(policy, rows):
        out = block_logits(policy, rows)
        pair = 4 * _one_evaluation_error(policy, rows).max(axis=1)
        out[:, -1] += 0.99 * (pair + 4 * U32 * np.abs(out).max(axis=1))
        return out

    monkeypatch.setattr(ppo, "_block_logits", moved)
    rng = np.random.default_rng(13)
    losses = np.repeat(rng.random((60, 3, 1)), 5, axis=2)  # every expert the same loss
    per_round, blocked = _twins(deterministic=True)
    assert _mismatch(per_round, blocked, losses) is None
    assert blocked.replays["replayed"] == blocked.replays["rows"] == 180
    assert not blocked.last_actions.any()

    monkeypatch.setattr(ppo, "SAFETY", ppo.SAFETY / 10)  # planted: a margin 10x too small
    per_round, blocked = _twins(deterministic=True)
    assert _mismatch(per_round, blocked, losses) is not None


# --------------------------------------------------------------- premises checked at run time
@pytest.mark.parametrize("name", ["ONEDNN_DEFAULT_FPMATH_MODE", "DNNL_DEFAULT_FPMATH_MODE"])
def test_onednns_fast_math_mode_plays_round_by_round_and_strict_passes(name, monkeypatch):
    """oneDNN's default math mode (its environment variable, which torch's switches do not show)
    may compute float32 matmuls in bfloat16: the margin does not cover it."""
    import agents.ppo as ppo

    per_round, blocked = _twins()
    for value in ("STRICT", "strict", ""):  # harmless: the exact mode spelled out
        monkeypatch.setenv(name, value)
        assert ppo.exact_float32_matmul()
    monkeypatch.setenv(name, "BF16")
    assert not ppo.exact_float32_matmul()
    assert ppo.LogitBound.of(blocked.train().policy) is None
    assert _mismatch(per_round, blocked, _losses(60, 3, 5, seed=14)) is None
    assert blocked.replays["rows"] == 0


def test_a_tanh_beyond_the_stated_error_is_refused_at_run_time(monkeypatch):
    """The tanh premise is spot-checked on the machine that plays: a kernel 16 ulps off near 1
    leaves no bound (round by round); torch's own passes."""
    torch = pytest.importorskip("torch")
    import agents.ppo as ppo

    policy = _ppo().train().policy
    tanh = torch.tanh
    ppo.tanh_within_error.cache_clear()
    try:
        monkeypatch.setattr(torch, "tanh", lambda x: tanh(x) * (1 - 2.0**-20))
        assert not ppo.tanh_within_error()
        assert ppo.LogitBound.of(policy) is None
        monkeypatch.setattr(torch, "tanh", tanh)
        ppo.tanh_within_error.cache_clear()
        assert ppo.tanh_within_error()
        assert ppo.LogitBound.of(policy) is not None
    finally:
        ppo.tanh_within_error.cache_clear()


def test_a_nan_lead_is_replayed():
    """NaN has no order: a row whose scores hold one is decided by the round's forward."""
    import agents.ppo as ppo

    bound = ppo.LogitBound.of(_ppo().train().policy)
    features = np.zeros((1, 2, 3 * 5 + 1), np.float32)
    logits = np.log(np.full((1, 2, 5), 0.2))
    scores = logits + np.array([[[np.nan, 0, 0, 0, 0], [9.0, 0, 0, 0, 0]]])
    assert bound.close_rows(features, logits, scores).tolist() == [[True, False]]


def test_a_features_object_of_another_class_plays_through_its_update():
    from dp_experts_env.wrappers import LossFeatures as Base

    class Halved(Base):  # its own update; the inherited update_block is not it
        def update(self, losses):
            return super().update(np.asarray(losses) / 2)

    per_round, blocked = _twins()
    for agent in (per_round, blocked):
        agent.features = Halved(5, 60)
        agent.reset(7)
    assert _mismatch(per_round, blocked, _losses(60, 3, 5, seed=15)) is None
    assert blocked.replays["rows"] == 0


def test_a_policy_with_another_features_extractor_has_no_bound():
    """The bound reads the features as the scorer's inputs: an extractor that rescales them
    (planted) leaves no bound; a fresh plain flatten extractor (harmless) keeps it."""
    from stable_baselines3.common.torch_layers import FlattenExtractor

    import agents.ppo as ppo

    class Doubled(FlattenExtractor):
        def forward(self, observations):
            return 2 * super().forward(observations)

    policy = _tied(_ppo()).policy
    policy.pi_features_extractor = Doubled(policy.observation_space)
    assert ppo.LogitBound.of(policy) is None
    policy.pi_features_extractor = FlattenExtractor(policy.observation_space)
    assert ppo.LogitBound.of(policy) is not None
