"""DPExperts-OCO-v0: checkers on every family and body, exact regret, seeding, neighbours, the
native vector env, validation, and Stable-Baselines3 training on it."""

from __future__ import annotations

import itertools
import warnings

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env as gym_check_env

import dp_experts_env  # noqa: F401  (registers the ids)
from dp_experts_env.adversaries.oco import OCO_FAMILIES

ID = "DPExperts-OCO-v0"
FAMILIES = [f for f in OCO_FAMILIES if f != "replay"]
REPLAY = np.random.default_rng(0).uniform(-0.5, 0.5, (30, 3))


def make(**kw):
    return gym.make(ID, **kw)


def kwargs_of(family):
    return {"losses": REPLAY} if family == "replay" else {"family": family, "horizon": 40}


@pytest.mark.parametrize(("family", "body"), itertools.product(OCO_FAMILIES, ["box", "ball"]))
def test_both_checkers_pass_without_warnings(family, body):
    sb3 = pytest.importorskip("stable_baselines3.common.env_checker")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        env = make(body=body, **kwargs_of(family))
        gym_check_env(env.unwrapped)
        sb3.check_env(make(body=body, **kwargs_of(family)))


def play(env, actions, seed=0, options=None):
    env.reset(seed=seed, options=options)
    obs_list, infos = [], []
    for a in actions:
        obs, reward, terminated, truncated, info = env.step(a)
        assert reward == -info["loss"] and isinstance(reward, float) and not truncated
        obs_list.append(obs)
        infos.append(info)
    assert terminated
    return np.array(obs_list), infos


@pytest.mark.parametrize("body", ["box", "ball"])
@pytest.mark.parametrize("family", OCO_FAMILIES)
def test_static_regret_is_exact_against_brute_force(family, body):
    env = make(body=body, radius=0.8, grad_bound=1.5, **kwargs_of(family))
    t, d = env.unwrapped.horizon, env.unwrapped.dim
    rng = np.random.default_rng(1)
    actions = rng.uniform(-0.35, 0.35, (t, d)).astype(np.float32)  # inside both bodies
    grads, infos = play(env, actions, seed=3)
    assert np.all(np.linalg.norm(grads, axis=1) <= 1.5 + 1e-12)
    played = actions.astype(np.float64)
    total = np.einsum("ti,ti->", grads, played)
    s = grads.sum(axis=0)
    if body == "box":  # the best point is a vertex: enumerate them
        vertices = 0.8 * np.array(list(itertools.product([-1, 1], repeat=d)))
        best = (vertices @ s).min()
        best_each = (grads @ vertices.T).min(axis=1).sum()
    else:  # the best point is on the sphere: a fine search over directions does no better
        u = np.random.default_rng(2).normal(size=(200_000, d))
        u = 0.8 * u / np.linalg.norm(u, axis=1, keepdims=True)
        assert (u @ s).min() >= -0.8 * np.linalg.norm(s) - 1e-12
        best = -0.8 * np.linalg.norm(s)
        best_each = -0.8 * np.linalg.norm(grads, axis=1).sum()
    assert infos[-1]["cumulative_loss"] == pytest.approx(total, abs=1e-9)
    assert infos[-1]["static_regret"] == pytest.approx(total - best, abs=1e-9)
    assert infos[-1]["per_round_best_regret"] == pytest.approx(total - best_each, abs=1e-9)
    assert ("dynamic_regret" in infos[-1]) == (body == "box")  # exact on boxes only


def _best_partition(grads, n_switches, norm):
    """Brute force: max over partitions into <= S + 1 blocks of sum of block-sum norms."""
    t = len(grads)
    best = 0.0
    for k in range(n_switches + 1):
        for cuts in itertools.combinations(range(1, t), k):
            edges = [0, *cuts, t]
            value = sum(norm(grads[a:b].sum(0)) for a, b in zip(edges, edges[1:], strict=False))
            best = max(best, value)
    return best


@pytest.mark.parametrize(("body", "dim"), [("box", 1), ("box", 2), ("box", 3), ("ball", 1)])
@pytest.mark.parametrize("n_switches", [0, 1, 3])
def test_dynamic_regret_is_exact_where_computable(body, dim, n_switches):
    env = make(
        body=body, dim=dim, horizon=9, family="rademacher", n_switches=n_switches, radius=0.7
    )
    x = np.random.default_rng(0).uniform(-0.4, 0.4, (9, dim)).astype(np.float32)
    grads, infos = play(env, x, seed=2)
    for t in (3, 9):
        g = grads[:t]
        want = infos[t - 1]["cumulative_loss"] + 0.7 * _best_partition(
            g, n_switches, lambda v: np.abs(v).sum()
        )
        assert infos[t - 1]["dynamic_regret"] == pytest.approx(want, abs=1e-9)
    last = infos[-1]
    assert last["static_regret"] - 1e-9 <= last["dynamic_regret"]
    assert last["dynamic_regret"] <= last["per_round_best_regret"] + 1e-9
    if n_switches == 0:
        assert last["dynamic_regret"] == pytest.approx(last["static_regret"])


def test_dynamic_regret_is_left_out_where_not_exact():
    assert "dynamic_regret" not in play(make(body="ball", dim=2, horizon=3), np.zeros((3, 2)))[1][0]
    big = make(dim=14, horizon=3, n_switches=3)  # (S + 1) d 2^d above the work cap
    assert "dynamic_regret" not in play(big, np.zeros((3, 14), np.float32))[1][0]
    assert make(family="shifting", n_shifts=2).unwrapped.n_switches == 2


def test_static_pseudo_regret_uses_the_exact_means():
    env = make(family="shifting", horizon=60, n_shifts=2, gap=0.5, dim=2)
    adv = env.unwrapped.core.adversary
    x = np.full((60, 2), 0.25, dtype=np.float32)
    _, infos = play(env, x, seed=4)
    means = np.stack([adv.means(t)[0] for t in range(1, 61)])
    assert np.allclose(np.linalg.norm(means, axis=1), 0.5)
    expected = (means @ np.full(2, 0.25)).sum() + np.abs(means.sum(0)).sum()
    assert infos[-1]["static_pseudo_regret"] == pytest.approx(expected, abs=1e-9)
    assert [i["segment"] for i in infos][::20] == [0, 1, 2]


def test_round_data_is_a_pure_function_of_seed_and_round():
    zeros = np.zeros((50, 4), dtype=np.float32)
    short, _ = play(make(horizon=50, dim=4), zeros, seed=9)
    long_env = make(horizon=5000, dim=4)
    long_env.reset(seed=9)
    long = np.array([long_env.step(np.zeros(4, np.float32))[0] for _ in range(50)])
    assert np.array_equal(short, long)
    other, _ = play(make(horizon=50, dim=4), zeros, seed=10)
    assert not np.array_equal(short, other)


def test_chunked_generation_spans_chunk_boundaries():
    from dp_experts_env.adversaries.oco import OCOAdversary

    a = OCOAdversary("stochastic", 3, 50, num_runs=2)
    a._chunk = 7  # tiny chunks: same stream
    b = OCOAdversary("stochastic", 3, 50, num_runs=2)
    a.reset([1, 2])
    b.reset([1, 2])
    for t in range(1, 51):
        assert np.array_equal(a.gradient(t), b.gradient(t))


@pytest.mark.parametrize("family", ["stochastic", "adaptive", "anti_ftl"])
def test_neighbor_replaces_exactly_one_round(family):
    x = np.random.default_rng(0).uniform(-1, 1, (30, 3)).astype(np.float32)
    g, _ = play(make(family=family, horizon=30, dim=3), x, seed=5)
    swap = np.array([0.6, -0.6, 0.0])
    opts = {"neighbor": {"round": 7, "loss": swap}}
    g2, _ = play(make(family=family, horizon=30, dim=3), x, seed=5, options=opts)
    assert np.array_equal(g2[6], swap)
    differ = np.flatnonzero(np.any(g != g2, axis=1))
    assert differ.tolist() == [6]  # the adaptive family reacts to plays, which are the same
    with pytest.raises(ValueError, match="grad_bound"):
        make(horizon=30, dim=3).reset(seed=0, options={"neighbor": {"round": 2, "loss": [2, 0, 0]}})


def test_adaptive_family_never_reads_the_current_action():
    env = make(family="adaptive", horizon=20, dim=2)
    rng = np.random.default_rng(3)
    base = rng.uniform(-1, 1, (20, 2)).astype(np.float32)
    g1, _ = play(env, base, seed=1)
    changed = base.copy()
    changed[10] = -changed[10]
    g2, _ = play(env, changed, seed=1)
    assert np.array_equal(g1[:11], g2[:11]) and not np.array_equal(g1[11:], g2[11:])


def test_ball_projects_points_of_the_bounding_box_radially():
    env = make(body="ball", horizon=5, dim=2, family="replay", losses=np.ones((5, 2)) * 0.5)
    env.reset(seed=0)
    _, reward, *_ = env.step(np.array([1.0, 1.0], np.float32))
    assert reward == pytest.approx(-np.sqrt(2) * 0.5)  # played (1, 1)/sqrt(2)


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"family": "nope"}, ValueError, "family"),
        ({"body": "simplex"}, ValueError, "body"),
        ({"radius": 0.0}, ValueError, "radius"),
        ({"losses": np.full((4, 2), 1.0)}, ValueError, "grad_bound"),
        ({"losses": np.full((4, 2), np.nan)}, ValueError, "finite"),
        ({"losses": REPLAY, "horizon": 7}, ValueError, "contradicts"),
        ({"n_arms": 3}, TypeError, "unexpected keyword"),
        ({"n_experts": 3, "dim": 4}, ValueError, "contradicts"),
        ({"n_shifts": 2}, ValueError, "shifting"),
    ],
)
def test_bad_parameters_raise(kwargs, error, match):
    with pytest.raises(error, match=match):
        make(**kwargs)


def test_bad_actions_raise():
    env = make(horizon=5, dim=2)
    env.reset(seed=0)
    with pytest.raises(ValueError, match=r"\[-1, 1\]"):
        env.unwrapped.step(np.array([1.5, 0.0]))
    with pytest.raises(ValueError, match="shape"):
        env.unwrapped.step(np.zeros(3))
    with pytest.raises(ValueError, match="finite"):
        env.unwrapped.step(np.array([np.nan, 0.0]))


def test_vector_env_matches_sync_and_single_runs():
    kw = {"horizon": 12, "family": "adaptive", "dim": 3}
    native = gym.make_vec(ID, num_envs=3, vectorization_mode="vector_entry_point", **kw)
    sync = gym.make_vec(ID, num_envs=3, vectorization_mode="sync", **kw)
    assert native.single_action_space == sync.single_action_space
    on, _ = native.reset(seed=30)
    osy, _ = sync.reset(seed=30)
    assert np.array_equal(on, osy)
    native.action_space.seed(0)
    for _ in range(2 * 12 + 1):
        actions = native.action_space.sample()
        out_n, out_s = native.step(actions), sync.step(actions)
        for x, y in zip(out_n, out_s, strict=True):
            if isinstance(x, dict):
                assert x.keys() == y.keys()
                for key in x:
                    assert np.array_equal(np.asarray(x[key]), np.asarray(y[key])), key
            else:
                assert np.array_equal(np.asarray(x), np.asarray(y))


def test_render_ansi_and_rgb():
    env = make(horizon=3, render_mode="ansi")
    env.reset(seed=0)
    env.step(np.zeros(5, np.float32))
    assert "round 1/3" in env.render()
    env = make(horizon=3, render_mode="rgb_array", dim=2)
    env.reset(seed=0)
    env.step(np.array([1.0, -1.0], np.float32))
    frame = env.render()
    assert frame.shape == (64, 32, 3) and frame.dtype == np.uint8
    assert (frame[0, 2:14] != 255).any() and (frame[:62, 18:30] == 255).all()


def test_pickles_mid_episode():
    import pickle

    env = make(horizon=20, family="adaptive")
    env.reset(seed=0)
    env.step(np.full(5, 0.3, np.float32))
    copy = pickle.loads(pickle.dumps(env))
    a = np.full(5, -0.2, np.float32)
    assert np.array_equal(env.step(a)[0], copy.step(a)[0])


def test_sb3_evaluate_policy_with_an_oco_learner():
    sb3 = pytest.importorskip("stable_baselines3")
    from stable_baselines3.common.env_util import make_vec_env

    import agents

    venv = make_vec_env(ID, n_envs=2, env_kwargs={"horizon": 20})
    agent = agents.make("ogd", env=venv, seed=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "not wrapped with a Monitor"
        mean, _ = sb3.common.evaluation.evaluate_policy(agent, venv, n_eval_episodes=4)
    assert np.isfinite(mean) and agent.num_envs == 2


@pytest.mark.parametrize("algo", ["PPO", pytest.param("SAC", marks=pytest.mark.slow)])
def test_stable_baselines3_trains_on_it(algo):
    sb3 = pytest.importorskip("stable_baselines3")
    env = make(horizon=32, dim=2)
    cls = getattr(sb3, algo)
    extra = {"n_steps": 64, "batch_size": 32} if algo == "PPO" else {"learning_starts": 16}
    model = cls("MlpPolicy", env, seed=0, device="cpu", **extra)
    model.learn(total_timesteps=96)
    action, _ = model.predict(np.zeros(2), deterministic=True)
    assert action.shape == (2,) and np.all(np.abs(action) <= 1.0)


def test_n_experts_is_an_alias_of_dim():
    assert make(n_experts=3).unwrapped.dim == 3


def test_defaults_match_the_registration_table():
    entry = dp_experts_env.env_entry(ID)
    base = gym.make(ID).unwrapped
    assert isinstance(base, dp_experts_env.OCOEnv) and entry.feedback == base.feedback == "oco"
    for key, value in entry.defaults.items():
        assert getattr(base, key) == value
    assert (base.radius, base.grad_bound, base.n_switches) == (1.0, 1.0, 0)
    venv = gym.make_vec(ID, num_envs=2, vectorization_mode="vector_entry_point")
    assert isinstance(venv.unwrapped, dp_experts_env.OCOVectorEnv)


def test_memory_is_bounded_for_long_horizons_and_big_batches():
    from dp_experts_env.adversaries.oco import OCOAdversary

    adv = OCOAdversary("stochastic", 8, 10**6, num_runs=512)
    adv.reset(range(512))
    adv.gradient(1)
    assert adv._buffer.nbytes <= 8 * (1 << 22)  # one chunk: <= 32 MB, never T x d


# ----------------------------------------------------------------------------- parameters as data
def test_the_params_record_the_resolved_knobs():
    import dataclasses

    from dp_experts_env.adversaries.oco import OCOParams
    from dp_experts_env.kinds import KINDS

    params = make().unwrapped.params
    assert type(params) is OCOParams
    defaults = KINDS["oco"].defaults  # the sizes and body come from the kind table
    assert (params.family, params.dim, params.horizon, params.body) == (
        KINDS["oco"].family, defaults["dim"], defaults["horizon"], defaults["body"]
    )
    assert (params.gap, params.n_shifts) == (0.3, None)
    assert make(family="shifting", horizon=20).unwrapped.params.n_shifts == 3
    assert make(family="adaptive").unwrapped.params.gap == 0.5
    assert make(family="anti_ftl").unwrapped.params.gap is None  # does not apply
    assert make(losses=REPLAY).unwrapped.params.family == "replay"
    with pytest.raises(dataclasses.FrozenInstanceError):
        params.gap = 0.1  # type: ignore[misc]


def test_keywords_and_params_build_the_same_gradients():
    from dp_experts_env.adversaries.oco import OCOAdversary, OCOParams

    by_keywords = OCOAdversary("shifting", 3, 40, num_runs=2, n_shifts=2, gap=0.2)
    declared = OCOParams(family="shifting", dim=3, horizon=40, n_shifts=2, gap=0.2)
    by_params = OCOAdversary(params=declared, num_runs=2)
    assert by_keywords.params == by_params.params
    for adv in (by_keywords, by_params):
        adv.reset([5, 6])
    for t in range(1, 41):
        np.testing.assert_array_equal(by_keywords.gradient(t), by_params.gradient(t))
    with pytest.raises(TypeError, match="not both"):
        OCOAdversary("shifting", params=declared)
    with pytest.raises(TypeError, match="params must be an OCOParams"):
        OCOAdversary(params={"family": "shifting"})


def test_unknown_and_misapplied_knobs_are_refused_by_name():
    message = r"unexpected keyword.*'colour'.*'grad_bound'.*'n_switches'"
    with pytest.raises(TypeError, match=message):
        make(colour=1)
    with pytest.raises(ValueError, match=r"gap= applies to stochastic, shifting and adaptive"):
        make(family="rademacher", gap=0.2)
    with pytest.raises(ValueError, match=r"gradients= applies to family='replay' only"):
        make(family="stochastic", losses=REPLAY)
