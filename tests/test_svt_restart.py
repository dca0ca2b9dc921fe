"""svt-restart (ARS Alg. 2): restarts, epochs, window grid, scales, privacy, utility."""

import hashlib
import math

import gymnasium as gym
import numpy as np
import pytest
from conftest import rollout

import agents
import dp_experts_env  # noqa: F401  (registers the env ids)
from agents.svt_restart import (
    BERNSTEIN_LAMBDAS,
    DYADIC_STARTS,
    SVTRestart,
    bernstein_boundary,
    betting_boundary,
    betting_coefficients,
    betting_query_sensitivity,
)
from dp_experts_env.evaluation.audit import audit_agent
from dp_experts_env.evaluation.episode import play
from dp_experts_env.privacy.mechanisms import AboveThreshold


def punish_played(agent, rounds, losses_of_others):
    """Adaptive feed: the expert just played gets loss 1, the others ``losses_of_others``.

    Returns actions (rounds, B) and the epoch start recorded after each act.
    """
    b, n = agent.num_envs, agent.n_experts
    obs = np.zeros((b, n))
    actions, starts, windows = [], [], []
    for _ in range(rounds):
        a = np.atleast_1d(agent.act(obs))
        actions.append(a)
        starts.append(agent.epoch_start.copy())
        windows.append(agent._window.copy())
        obs = np.tile(np.asarray(losses_of_others, float), (b, 1))
        obs[np.arange(b), a] = 1.0
    return np.array(actions), np.array(starts), np.array(windows)


# ----------------------------------------------------------------------------- restarts
def test_strict_restart_resets_both_parts_and_next_epoch_starts_at_t_plus_1():
    # Tiny slack and huge epsilon: the detector fires after every round (regret 1 > 0).
    agent = SVTRestart(3, 12, epsilon=1e9, threshold_scale=1e-12, num_envs=400, seed=0)
    actions, starts, windows = punish_played(agent, 12, [0.2, 0.6, 0.4])
    # After act at round r (which learned round r-1 and restarted), the epoch starts at r.
    for r in range(2, 13):
        assert np.all(starts[r - 1] == r)
    assert np.all(agent.restarts == 11)
    assert np.all(windows[1:] == 0.0)  # the new limited-updates instance never saw l_t
    assert not agent.detector.halted.any()  # a fresh detector after each TOP
    # Every new epoch begins with a uniform expert, the punished one included.
    follow = actions[1:].ravel()
    assert np.all(np.abs(np.bincount(follow, minlength=3) / follow.size - 1 / 3) < 0.03)


def test_paper_restart_reuses_round_t():
    agent = SVTRestart(3, 12, epsilon=1e9, threshold_scale=1e-12, mode="paper", num_envs=50, seed=0)
    actions, starts, _ = punish_played(agent, 12, [0.2, 0.6, 0.4])
    for r in range(2, 13):
        assert np.all(starts[r - 1] == r - 1)  # the epoch that fired at r-1 restarts at r-1
    # l_{r-1} is the new instance's local round 1, so round r selects argmin l_{r-1}.
    prev, nxt = actions[:-1], actions[1:]
    want = np.where(prev == 0, 2, 0)  # cheapest of the others: 0 (0.2) unless 0 was punished
    np.testing.assert_array_equal(nxt, want)


def test_threshold_noise_is_redrawn_only_for_fired_runs():
    agent = SVTRestart(2, 50, epsilon=1.0, num_envs=4, seed=0)
    before = agent.detector._noisy_threshold.copy()
    agent.act(np.zeros((4, 2)))
    agent.act(np.zeros((4, 2)))  # no regret: nothing fires
    assert not agent.restarts.any()
    np.testing.assert_array_equal(agent.detector._noisy_threshold, before)


def test_max_restarts_caps_and_then_only_limited_updates_remain():
    agent = SVTRestart(3, 64, epsilon=1e9, threshold_scale=1e-12, max_restarts=2, num_envs=8)
    actions, _, _ = punish_played(agent, 64, [0.2, 0.6, 0.4])
    assert np.all(agent.restarts == 2)
    last_start = agent.epoch_start  # = 3: the third epoch runs to the end
    local = np.arange(1, 65)[:, None] - last_start[None, :] + 1
    switched = np.vstack([np.zeros((1, 8), bool), actions[1:] != actions[:-1]])
    after = local >= 2
    assert np.all(~switched[after] | ((local[after] & (local[after] - 1)) == 0))


def test_without_restarts_it_switches_only_at_local_powers_of_two():
    rng = np.random.default_rng(1)
    losses = rng.random((200, 8, 4))
    agent = SVTRestart(4, 200, epsilon=1.0, max_restarts=0, num_envs=8, seed=2)
    actions = rollout(agent, losses).actions
    rounds = np.flatnonzero(np.any(actions[1:] != actions[:-1], axis=1)) + 2
    assert len(rounds) and all(r & (r - 1) == 0 for r in rounds)


# ----------------------------------------------------------------------------- the detector
def test_recorded_scales_follow_the_parameters():
    strict = SVTRestart(10, 1000, epsilon=2.0, boundary="normal-mixture")
    assert strict.selection_epsilon == strict.detector_epsilon == 1.0
    assert strict.selection_scale == pytest.approx(2.0)  # Lap(2 / (eps/2))
    assert strict.query_sensitivity == 2.0  # E-ARS-6
    assert strict.threshold_noise_scale == pytest.approx(4.0)  # Lap(2 D / (eps/2))
    assert strict.query_noise_scale == pytest.approx(8.0)  # Lap(4 D / (eps/2))
    assert strict.detector.sigma == pytest.approx(strict.threshold_noise_scale)
    paper = SVTRestart(10, 1000, epsilon=2.0, mode="paper")
    assert paper.query_sensitivity == 1.0 and paper.query_noise_scale == pytest.approx(4.0)
    assert paper.detector.sigma == pytest.approx(2.0)
    grid = SVTRestart(10, 1000, epsilon=2.0, noise="grid", boundary="normal-mixture")
    assert grid.detector.sigma == pytest.approx(2 * (2 + 2.0**-20))
    # The Bernstein slack moves with the window's second moment V with slope <= kappa =
    # 2 ln 2 - 1; a change d of the window difference moves V by <= d (2 - d), so
    # D = max_d d (1 + c (2 - d)), c = threshold_scale kappa: 2 while c <= 1/2.
    kappa = 2 * math.log(2) - 1
    bern_kw = {"boundary": "bernstein"}
    bern = SVTRestart(10, 1000, epsilon=2.0, **bern_kw)
    assert bern.query_sensitivity == 2.0
    assert bern.query_noise_scale == pytest.approx(8.0)
    assert bern.detector.sigma == pytest.approx(4.0)
    assert SVTRestart(10, 1000, epsilon=2.0, threshold_scale=0.5, **bern_kw)\
        .query_sensitivity == 2.0  # fmt: skip
    c = 2.0 * kappa
    wide = SVTRestart(10, 1000, epsilon=2.0, threshold_scale=2.0, **bern_kw)
    assert wide.query_sensitivity == pytest.approx(1 + c + 1 / (4 * c))
    assert wide.detector.sigma == pytest.approx(2 * (1 + c + 1 / (4 * c)))
    # Paper mode's noise assumes D = 1; its note certifies (D + 1/2) epsilon.
    assert "certified only up to 2.5*epsilon" in paper.privacy.notes
    wide_paper = SVTRestart(10, 1000, epsilon=2.0, threshold_scale=2.0, mode="paper", **bern_kw)
    assert f"{1.5 + c + 1 / (4 * c):g}*epsilon" in wide_paper.privacy.notes
    # The betting boundary (default): per lambda a sum of per-round terms of range
    # 2 a_k + threshold_scale s_k = 2 + (threshold_scale - 1) s_k; s_k in (0.044, 0.524).
    bet = SVTRestart(10, 1000, epsilon=2.0)
    assert bet.boundary == "betting" and bet.query_sensitivity == 2.0
    assert bet.query_noise_scale == pytest.approx(8.0) and bet.detector.sigma == pytest.approx(4.0)
    lam = np.array(BERNSTEIN_LAMBDAS)
    s_k = -2 * np.log1p(-lam**2) / (np.log1p(lam) - np.log1p(-lam))
    for scale, extreme in ((0.5, s_k.min()), (2.0, s_k.max()), (3.0, s_k.max())):
        d = SVTRestart(10, 1000, epsilon=2.0, threshold_scale=scale).query_sensitivity
        assert d == pytest.approx(2 + (scale - 1) * extreme, rel=1e-12)
    assert s_k.max() == pytest.approx(0.5237, abs=1e-4)
    wide_bet = SVTRestart(10, 1000, epsilon=2.0, threshold_scale=2.0, mode="paper")
    assert f"{2.5 + s_k.max():g}*epsilon" in wide_bet.privacy.notes


def test_paper_constants_are_conservative():
    # N = 10, T = 1e4, eps = 1, beta = 1/T: alpha ~ 453, Reg(0) ~ 332 (Thm 3.6's constants).
    agent = SVTRestart(10, 10_000, epsilon=1.0, mode="paper", tuning="paper")
    assert agent.alpha == pytest.approx(16 * (2 * math.log(1e4) + math.log(2e4)))
    assert agent.alpha == pytest.approx(453.2, abs=0.1)
    reg0 = agent.slack(1) - agent.alpha - 1
    assert reg0 == pytest.approx(16 * math.log(1e5 * 1e4), rel=1e-12)
    assert reg0 == pytest.approx(331.6, abs=0.1)
    strict = SVTRestart(10, 10_000, epsilon=1.0, tuning="paper")
    k, beta_svt = 10_000, 1e-4 / 1e4
    assert strict.alpha == pytest.approx(8 * 2 * (math.log(k) + math.log(2 / beta_svt)) / 0.5)
    assert strict.slack(1) - strict.alpha - 1 == pytest.approx(16 * math.log(1e9) / 0.5)


def test_threshold_scale_scales_the_slack_not_the_noise():
    # (The n-only boundary: with the Bernstein boundary the scale also scales kappa's share of
    # the sensitivity, test_recorded_scales_follow_the_parameters.)
    kw = {"tuning": "calibrated", "boundary": "normal-mixture"}
    a = SVTRestart(5, 500, epsilon=1.0, **kw)
    # (threshold_scale >= 1: below 1 the union counts every start, test_window_starts_...)
    b = SVTRestart(5, 500, epsilon=1.0, threshold_scale=2.5, **kw)
    assert a.window_starts == b.window_starts < 500
    np.testing.assert_allclose(b.slack(np.arange(1, 50)), 2.5 * a.slack(np.arange(1, 50)))
    assert a.query_noise_scale == b.query_noise_scale and a.alpha == b.alpha
    assert a.alpha < SVTRestart(5, 500, epsilon=1.0, tuning="paper").alpha  # less conservative


def test_dyadic_starts_cover_every_window_by_three_quarters():
    agent = SVTRestart(3, 3000, epsilon=1.0, max_restarts=0, seed=0)
    obs = np.zeros((1, 3))
    worst = 1.0
    for tau in range(1, 3000):
        agent.act(obs)
        obs = np.random.default_rng(tau).random((1, 3))
        if tau % 7 and tau > 40:
            continue
        valid = np.arange(DYADIC_STARTS)[None, :] < agent._snap_count[0][:, None]
        starts = np.unique(agent._snap_time[0][valid])  # window [u+1, tau], u < tau
        assert starts.max() < tau
        for u in range(0, tau, max(1, tau // 50)):
            best = starts[starts >= u].min()
            worst = min(worst, (tau - best) / (tau - u))
    assert worst > 0.75


def test_dyadic_windows_are_a_subset_of_all_windows():
    rng = np.random.default_rng(3)
    losses = rng.random((120, 2, 4))
    kw = dict(epsilon=1e9, threshold_scale=1e9, num_envs=2, seed=5)  # never fires
    dyadic, full = SVTRestart(4, 120, **kw), SVTRestart(4, 120, window_grid="all", **kw)
    obs = np.zeros((2, 4))
    for t in range(120):
        np.testing.assert_array_equal(dyadic.act(obs), full.act(obs))  # same draws
        obs = losses[t]
        if t:
            r_d, len_d = dyadic._window_regret(t)
            r_a, len_a = full._window_regret(t)
            r_d = np.where(len_d > 0, r_d, -np.inf)
            assert np.all(r_a.max(axis=1) >= r_d.max(axis=1) - 1e-9)
            for b in range(2):  # every dyadic window is one of the "all" windows
                ok = np.isfinite(r_d[b]) & (len_d[b] > 0)  # u = t is pushed after the query
                fin = np.isfinite(r_a[b])
                lookup = dict(zip(len_a[b][fin], r_a[b][fin], strict=True))
                for length, reg in zip(len_d[b][ok], r_d[b][ok], strict=True):
                    assert lookup[length] == pytest.approx(reg)


@pytest.mark.parametrize(
    "params",
    [{}, {"mode": "paper"}, {"window_grid": "all"}, {"selector": "em", "noise": "grid"}],
)
def test_batch_equals_single_runs(params):
    rng = np.random.default_rng(4)
    losses = (rng.random((60, 3, 3)) < 0.5).astype(float)
    kw = dict(epsilon=2.0, threshold_scale=0.01, **params)
    batch_agent = SVTRestart(3, 60, num_envs=3, seed=20, **kw)
    batch = rollout(batch_agent, losses).actions
    assert batch_agent.restarts.sum() > 0  # restarts happen, at different rounds per run
    for b in range(3):
        single = rollout(SVTRestart(3, 60, seed=20 + b, **kw), losses[:, b : b + 1]).actions
        np.testing.assert_array_equal(batch[:, b], single[:, 0])


def test_claims_and_bad_input():
    strict = agents.make("svt-restart", n_experts=3, horizon=10, epsilon=1.0).privacy
    assert strict.certified and strict.holds_against == "adaptive" and strict.delta == 0
    assert "AboveThreshold" in strict.accountant
    paper = SVTRestart(3, 10, mode="paper").privacy
    assert not paper.certified and "E-ARS-6" in paper.notes and "E-ARS-7" in paper.notes
    with pytest.raises(ValueError, match="window_grid"):
        SVTRestart(3, 10, window_grid="every")
    with pytest.raises(ValueError, match="threshold_scale"):
        SVTRestart(3, 10, threshold_scale=0.0)
    with pytest.raises(TypeError, match="threshold_scale"):
        SVTRestart(3, 10, threshold_scale="1")
    with pytest.raises(ValueError, match="max_restarts"):
        SVTRestart(3, 10, max_restarts=-1)
    with pytest.raises(ValueError, match="boundary"):
        SVTRestart(3, 10, boundary="hoeffding")
    with pytest.raises(ValueError, match="second_moment"):
        SVTRestart(3, 10).slack(5, second_moment=2.0)
    with pytest.raises(ValueError, match="window_grid='all' needs"):
        SVTRestart(1000, 1_000_000, window_grid="all")


def test_threshold_scale_outside_its_range_is_refused_and_its_ends_still_detect():
    """A subnormal threshold_scale made (1 - a_k) / threshold_scale overflow, so every query
    was nan and the detector never fired (0 restarts on a maximal-regret stream where 1e-300
    fired every round); values outside THRESHOLD_SCALE_RANGE are refused, naming the range.
    At the range's ends the detector still works: the smallest fires on a maximal-regret stream
    (the played expert loses 1, the others 0, epsilon = inf), the largest never does."""
    from agents.svt_restart import THRESHOLD_SCALE_RANGE

    low, high = THRESHOLD_SCALE_RANGE
    for boundary in ("betting", "bernstein"):
        for bad in (1e-310, low / 2, high * 2, math.inf):
            refused = r"threshold_scale must be (in \[1e-100, 1e\+100\]|a finite)"
            with pytest.raises(ValueError, match=refused):
                SVTRestart(3, 10, threshold_scale=bad, boundary=boundary)
    for boundary in ("betting", "bernstein", "normal-mixture"):
        fired = {}
        for ts in (low, high):
            agent = SVTRestart(3, 40, epsilon=math.inf, threshold_scale=ts, boundary=boundary)
            punish_played(agent, 40, [0.0, 0.0, 0.0])
            fired[ts] = int(agent.restarts[0])
        # every learned round (39 of them) fires at the smallest; never at the largest
        assert fired == {low: 39, high: 0}, (boundary, fired)


# ----------------------------------------------------------------------------- privacy audits
def planted_row(t_max, n, row):
    """A row where every expert but the last loses 1 vs a row of all ones; zeros elsewhere."""
    x = np.zeros((t_max, n))
    xp = x.copy()
    x[row], xp[row] = 1.0, 1.0
    x[row, n - 1] = 0.0
    return x, xp


def target_scale(n, t_max, level=0.5):
    """threshold_scale putting the slack at ``level`` (thresholds never affect privacy)."""
    return level / float(SVTRestart(n, t_max, epsilon=1.0).slack(1))


def test_audit_strict_detector_passes_on_planted_row():
    x, xp = planted_row(8, 8, 2)
    res = audit_agent(
        "svt-restart", x, xp, n_runs=3000, seed=3, epsilon=1.0, threshold_scale=target_scale(8, 8)
    )
    assert res.passed, res.summary()


def test_audit_catches_detector_without_noise():
    x, xp = planted_row(8, 8, 2)
    scale = target_scale(8, 8)

    class Weakened(SVTRestart):
        @property
        def privacy(self):  # a false claim: the correct learner's, whatever the noise
            return SVTRestart(8, 8, epsilon=1.0, threshold_scale=scale).privacy

    def weakened(num_envs, seed):
        agent = Weakened(8, 8, epsilon=1.0, threshold_scale=scale, num_envs=num_envs, seed=seed)
        agent.detector = AboveThreshold(  # noise / 1000
            epsilon=agent.detector_epsilon * 1000, sensitivity=2.0, rng=agent.rng
        )
        return agent

    # The learner's own claim is composed from its detector: it reports the weaker noise.
    assert SVTRestart.privacy.fget(weakened(1, 0)).epsilon == pytest.approx(500.5)

    res = audit_agent(weakened, x, xp, n_runs=3000, seed=2)
    assert not res.passed and res.epsilon_lower_bound > 1.0, res.summary()


# ----------------------------------------------------------------------------- utility
def run_env(name, env_id, epsilon, seeds=3, metric="dynamic_regret", agent_kw=None, **env_kw):
    """The runs' final ``metric``, played as users' runs play (``episode.play``: the loop's
    ``reset()`` first, then the learner's block path, bit for bit its ``act`` calls after that
    reset; svt-restart draws its first thresholds in ``reset()``, so its regrets are those of a
    round-by-round rollout after ``agent.reset()``, checked equal by hand at the sizes below)."""
    env = gym.make_vec(env_id, num_envs=seeds, vectorization_mode="vector_entry_point", **env_kw)
    agent = agents.make(name, env=env, epsilon=epsilon, seed=0, **(agent_kw or {}))
    horizon = int(env.unwrapped.horizon)
    final = play(env, agent, list(range(seeds)), np.array([horizon]))[metric][-1]
    env.close()
    return final, agent


@pytest.mark.slow
def test_svt_beats_limited_updates_on_shifts():
    # 4 shifts, T = 20 000, epsilon = 2, calibrated (data-independent) thresholds. The gap is
    # 0.25: with the default 0.1 neither detector fires inside 4 000-round segments at eps = 2
    # (detection needs a window regret of about alpha ~ 190 plus the sampling slack).
    env_kw = dict(horizon=20_000, n_shifts=4, gap=0.25)
    lu, _ = run_env("limited-updates", "DPExperts-Shift-v0", 2.0, **env_kw)
    svt, agent = run_env(
        "svt-restart", "DPExperts-Shift-v0", 2.0, agent_kw={"tuning": "calibrated"}, **env_kw
    )
    assert agent.restarts.min() >= 1
    assert svt.mean() < 0.75 * lu.mean(), (svt, lu)


# ----------------------------------------------------------------------------- the boundary (#29)
def test_calibrated_slack_is_the_normal_mixture_boundary_at_level_beta_over_nu():
    agent = SVTRestart(10, 10_000, epsilon=math.inf, boundary="normal-mixture")
    n = np.array([1.0, 10.0, 380.0, 5000.0])
    rho, level = 16.0, 0.05 / (10 * 1250)  # beta / (N U), U = T / 8 window starts
    want = np.sqrt((n + rho) * (np.log((n + rho) / rho) + 2 * math.log(1 / level))) + 1.0
    np.testing.assert_allclose(agent.slack(n), want, rtol=1e-12)  # eps = inf: no noise terms
    assert agent.alpha == 0.0


def test_mixture_boundary_holds_uniformly_in_time_for_random_walks():
    """Known answer (Ville's inequality): for +-1 steps (sub-Gaussian, variance proxy 1), the
    walk crosses sqrt((n + rho)(ln((n + rho)/rho) + 2 ln(1/a))) at any n <= 4,000 in at most a
    fraction a of the walks (1.7% measured at a = 5%, 4,000 walks: the bound is conservative)."""
    rng = np.random.default_rng(0)
    walks, steps, rho, a = 4000, 4000, 16.0, 0.05
    n = np.arange(1, steps + 1, dtype=np.float64)
    bound = np.sqrt((n + rho) * (np.log((n + rho) / rho) + 2 * math.log(1 / a)))
    crossed = np.zeros(walks, dtype=bool)
    for chunk in range(0, walks, 500):
        s = np.cumsum(rng.choice([-1.0, 1.0], size=(500, steps)), axis=1)
        crossed[chunk : chunk + 500] = (s >= bound).any(axis=1)
    assert crossed.mean() <= a
    # A fixed-n Hoeffding bound at the same level is crossed far more often over time.
    hoeffding = np.sqrt(2 * n * math.log(1 / a))
    s = np.cumsum(rng.choice([-1.0, 1.0], size=(500, steps)), axis=1)
    assert (s >= hoeffding).any(axis=1).mean() > a  # 11.8% measured


def test_detection_length_is_where_gap_times_n_passes_the_slack():
    kw = {"boundary": "bernstein"}
    agent = SVTRestart(10, 10_000, epsilon=math.inf, **kw)
    n = agent.detection_length(0.3)
    assert 0.3 * n > agent.slack(n) and 0.3 * (n - 1) <= agent.slack(n - 1)
    assert agent.detection_length(0.1) > 2_000  # gap 0.1 cannot show within a 2,000-round segment
    assert SVTRestart(10, 1_000, epsilon=math.inf, **kw).detection_length(0.01) is None
    noisy = SVTRestart(10, 10_000, epsilon=8.0, **kw).detection_length(0.3)
    assert noisy > n  # the detector's noise terms delay it
    # Two independent fair coins: second moment 1/2, a shorter window than the worst case 1.
    half = agent.detection_length(0.3, second_moment=0.5)
    assert half == 204 and n == 351
    mixture = SVTRestart(10, 10_000, epsilon=math.inf, boundary="normal-mixture")
    assert half < mixture.detection_length(0.3) == 333 < n
    # The betting boundary (default) on {-1, 0, 1} differences (Bernoulli losses): the
    # default env's post-shift stream (P(+1) = 0.4, P(-1) = 0.1: second moment 1/2) needs
    # 145 rounds in expectation, 29% fewer than the Bernstein boundary's 204.
    bet = SVTRestart(10, 10_000, epsilon=math.inf)
    m = bet.detection_length(0.3, second_moment=0.5)
    assert m == 145 and 0.3 * m > bet.slack(m, 0.5) and 0.3 * (m - 1) <= bet.slack(m - 1, 0.5)
    assert bet.detection_length(0.3) < n and bet.detection_length(0.1, 0.5) < 1479


def test_paper_tuning_at_infinite_epsilon_does_not_fire_on_a_tie_with_the_slack():
    """Regression: slack(1) = 1 at eps = inf under tuning="paper", and a one-round window of
    regret exactly 1 used to fire (>=): 4,505 restarts per run on T = 10^4 stationary losses."""
    agent = SVTRestart(2, 400, epsilon=math.inf, tuning="paper", num_envs=4, seed=0)
    assert agent.slack(1) == pytest.approx(1.0)
    punish_played(agent, 400, [0.0, 0.0])  # every round: the played expert 1, the other 0
    assert not agent.restarts.any()
    # A regret above the slack still fires at once (exact comparison, no noise).
    fires = SVTRestart(2, 40, epsilon=math.inf, threshold_scale=0.5, num_envs=4, seed=0)
    punish_played(fires, 40, [0.0, 0.0])
    assert fires.restarts.all()


def test_restarts_reach_the_grid_rows():
    from dp_experts_env.evaluation.episode import run_one
    from dp_experts_env.evaluation.grid import AgentEntry, EnvEntry, Grid

    grid = Grid(
        agents=[AgentEntry("svt-restart", {"threshold_scale": 1e-3}), AgentEntry("hedge")],
        envs=[EnvEntry("DPExperts-Shift-v0", {"horizon": 200, "n_experts": 4})],
        epsilons=[1.0, 1e6],  # two epsilons: svt-restart plays them as one batch
        n_seeds=2,
    )
    rows = [row for cell in grid.cells() for row in run_one(cell)]
    last = [r for r in rows if r["round"] == 200]
    svt = [r for r in last if r["agent_name"] == "svt-restart"]
    assert len(svt) == 4 and all(r["restarts"] >= 1 for r in svt)
    assert all("restarts" not in r for r in last if r["agent_name"] == "hedge")
    assert all("restarts" not in r for r in rows if r["round"] < 200)
    # ... and the summary table shows their mean (NaN for learners without restarts).
    import pandas as pd

    from dp_experts_env.evaluation.sweep import summarize

    table = summarize(pd.DataFrame(rows), "dynamic_regret", n_boot=10)
    by_agent = table.set_index("agent")["restarts_mean"]
    assert by_agent.filter(like="svt-restart").min() >= 1
    assert by_agent.filter(like="hedge").isna().all()
    # ... and the printed compare table has a restarts column: the counts for svt-restart,
    # '-' for hedge (the control: a learner without restarts shows none).
    from dp_experts_env.evaluation.table import terminal_table

    printed = terminal_table(pd.DataFrame(rows), table, "dynamic_regret").splitlines()
    header = next(line for line in printed if line.startswith("env  rank"))
    assert header.split()[-1] == "restarts"
    for line in printed:
        if " svt-restart " in line:
            want = table.loc[table["agent"] == "svt-restart", "restarts_mean"]
            assert float(line.split()[-1]) in {round(float(x), 1) for x in want}
        elif " hedge " in line:
            assert line.split()[-1] == "-"
    hedge_rows = pd.DataFrame([r for r in rows if r["agent_name"] == "hedge"])
    plain = summarize(hedge_rows, "dynamic_regret")
    assert "restarts" not in terminal_table(pd.DataFrame(rows), plain, "dynamic_regret")


def _tested_lengths(agent: SVTRestart, losses: np.ndarray) -> dict[int, int]:
    """The longest window each start is tested at, recorded when the query runs (round t)."""
    longest: dict[int, int] = {}
    query = agent._bernstein_query

    def recording(t: int) -> np.ndarray:
        for u in agent._col_time[0][~agent._col_empty[0]].tolist():
            longest[u] = max(longest.get(u, 0), t - u)
        return query(t)

    agent._bernstein_query = recording
    for row in losses:
        agent.act(row)
    return longest


def test_dyadic_starts_are_tested_up_to_eight_times_their_power_of_two():
    """The premise of window_starts: a start u = c 2^v (c odd) is tested up to and including
    DYADIC_STARTS 2^v rounds (the query of round u + 8 2^v runs before that round's snapshot
    evicts u), never longer; the epoch origin u = 0 stays."""
    t_max = 700
    agent = SVTRestart(2, t_max, epsilon=math.inf, max_restarts=0, seed=0)
    losses = np.random.default_rng(0).random((t_max, 2))
    longest = _tested_lengths(agent, losses)
    assert longest[0] == t_max - 1  # the origin: every length (the T acts learn T - 1 rounds)
    reached = set()
    for u, n in longest.items():
        if u:
            v = (u & -u).bit_length() - 1
            assert n <= DYADIC_STARTS * 2**v, (u, v, n)
            if n == DYADIC_STARTS * 2**v:
                reached.add(v)
    assert reached >= {0, 1, 2, 3, 4, 5}  # the bound is attained at every level that fits


def test_window_starts_count_only_starts_that_can_fire():
    # The betting boundary (default): the same count, U = 1,250 (n_min = 34 > 32).
    bet = SVTRestart(10, 10_000, epsilon=math.inf)
    assert bet.window_starts == 1250 and bet.lowest_level == 3 and bet.union_size == 1874
    assert not _can_fire(bet, 2) and _can_fire(bet, 3)
    agent = SVTRestart(10, 10_000, epsilon=math.inf, boundary="bernstein")
    assert agent.window_starts == 1250 and agent.lowest_level == 3  # the multiples of 8
    n = np.arange(1, 200, dtype=np.float64)
    n_min = int(n[n > agent.slack(n)][0])  # the shortest window that can fire: 39
    # Starts that are not multiples of 8 are tested at lengths <= 8 x 4 = 32 < n_min only
    # (previous test), and 8 = 2^ceil(log2(n_min / 8)): the count is self-consistent.
    assert 32 < n_min and 2 ** math.ceil(math.log2(n_min / DYADIC_STARTS)) == 8
    assert SVTRestart(10, 10_000, epsilon=math.inf, window_grid="all", max_restarts=0)\
        .window_starts == 10_000  # fmt: skip
    assert SVTRestart(10, 10_000, epsilon=1.0, tuning="paper").window_starts == 10_000
    # Below threshold_scale 1 the slack may undercut b(n) + 1: every start counts.
    assert SVTRestart(10, 10_000, epsilon=1.0, threshold_scale=0.5).window_starts == 10_000
    assert SVTRestart(10, 10_000, epsilon=1.0, threshold_scale=2.0).window_starts == 1250


def _can_fire(agent: SVTRestart, v: int) -> bool:
    """Whether a level-v start can fire: some tested length n <= min(8 2^v, T) has
    n > b(n) + 1 (Bernstein: b at the agent's level with the full lambda grid, the lowest
    boundary) or, for the betting boundary, a_k n - c_k L > 1 for some lambda (a window of n
    rounds has D <= n - 2 N, so a_k D - s_k N <= a_k n)."""
    n = np.arange(1, min(DYADIC_STARTS * 2**v, agent.horizon) + 1, dtype=np.float64)
    if agent.boundary == "betting":
        c, a, _ = betting_coefficients()
        return bool(np.any(np.outer(a, n) - (c * agent._reg[1])[:, None] > 1.0))
    return bool(np.any(n > bernstein_boundary(n, agent._reg[1]) + 1.0))


def test_reviewers_counterexample_level_two_starts_are_in_the_union():
    """N = 2, T = 1000: the level-2 starts are tested at length 32 and b(32) + 1 < 32 there,
    so they can fire and must be counted (they were left out when lengths were taken < 8 2^v)."""
    agent = SVTRestart(2, 1000, epsilon=math.inf, boundary="bernstein")
    # The previous count (levels >= 3, U = 125): at its level the length-32 windows fire.
    old_level = math.log(2 * agent._union_size(3) / agent.term_beta)
    assert 32.0 > bernstein_boundary(np.array([32.0]), old_level)[0] + 1.0  # b(32) = 30.79
    # Now the level-2 starts are counted (U = 250), and at that union they need n >= 33.
    assert agent.lowest_level == 2 and agent.window_starts == 250
    assert not _can_fire(agent, 1) and _can_fire(agent, 3)


@pytest.mark.parametrize("boundary", ["betting", "bernstein"])
@pytest.mark.parametrize("n_experts", [2, 3, 5, 10])
def test_every_start_and_lambda_that_can_fire_is_in_the_union(n_experts, boundary):
    """Scan (T in {1000, 4096, 10^4}, beta in {0.05, 0.5}, epsilon in {1, inf}): every dyadic
    level whose starts can fire is counted, and the union size is the brute-force sum over the
    counted starts of the lambdas each start's column uses (the origin: all of them)."""
    for t_max in (1000, 4096, 10_000):
        for beta in (0.05, 0.5):
            for eps in (1.0, math.inf):
                agent = SVTRestart(n_experts, t_max, epsilon=eps, beta=beta, boundary=boundary)
                top = agent._levels - 1
                firing = [v for v in range(top) if _can_fire(agent, v)]
                assert all(v >= agent.lowest_level for v in firing), (t_max, beta, eps)
                counts = agent._level_lambdas()
                # The query's lambdas per start column are the ones the union counts.
                assert np.array_equal(agent._col_lambdas, counts[agent._stored_level])
                assert counts.min() >= 1 and counts[top] == len(BERNSTEIN_LAMBDAS)
                want = sum(
                    int(counts[top if u == 0 else (u & -u).bit_length() - 1])
                    for u in range(0, t_max, 2**agent.lowest_level)
                )
                assert agent.union_size == want, (t_max, beta, eps)
                assert agent.window_starts == -(-t_max // 2**agent.lowest_level)


def test_beta_above_one_half_is_refused():
    """beta > 1/2 would make the threshold tail sr ln(1/(2 beta)) negative (a smaller slack)."""
    with pytest.raises(ValueError, match="beta"):
        agents.make("svt-restart", n_experts=3, horizon=10, beta=0.6)
    assert agents.make("svt-restart", n_experts=3, horizon=10, beta=0.5).beta == 0.5


def test_bernstein_slack_is_the_min_over_the_lambda_grid_at_level_beta_over_nuk():
    agent = SVTRestart(10, 10_000, epsilon=math.inf, boundary="bernstein")
    assert agent.window_starts == 1250 and agent.term_beta == 0.05
    lam = 0.5 * 2.0 ** (-np.arange(8) / 2)
    # Brute force over the counted starts (multiples of 8 in [0, T)): a start whose largest
    # power-of-two divisor is 2^v (v < 14 = top; u = 0 is the origin, top level) keeps the
    # lambdas >= sqrt(ln(N T K / beta) / (8 2^v)), at least one; the origin all 8.
    ref = math.log(10 * 10_000 * 8 / 0.05)
    union = 0
    for u in range(0, 10_000, 8):
        v = (u & -u).bit_length() - 1 if u else None
        union += 8 if v is None else max(1, int(np.sum(lam >= math.sqrt(ref / (8 * 2**v)))))
    assert agent.union_size == union == 1874
    level = math.log(10 * union / 0.05)  # ln(N sum_u K_u / beta)
    v = np.array([0.0, 10.0, 125.0, 5000.0])
    psi = -np.log1p(-lam) - lam
    want = np.min((level + psi[None, :] * v[:, None]) / lam[None, :], axis=1)
    assert bernstein_boundary(v, level) == pytest.approx(want, rel=1e-12)
    n = np.array([20.0, 250.0, 10_000.0])
    np.testing.assert_allclose(
        agent.slack(n, second_moment=0.5), bernstein_boundary(0.5 * n, level) + 1.0, rtol=1e-12
    )
    # At finite epsilon each of the three tail terms (and the selection allowance) takes beta / 4.
    noisy = SVTRestart(10, 10_000, epsilon=2.0)
    assert noisy.term_beta == pytest.approx(0.0125)
    assert noisy.alpha == pytest.approx(
        noisy.query_noise_scale * math.log(1e4 / 0.025)
        + noisy.threshold_noise_scale * math.log(1 / 0.025)
    )


@pytest.mark.slow
def test_bernstein_boundary_holds_uniformly_in_time_for_bounded_differences():
    """Known answer (Ville + Fan's inequality): for increments X in [-1, 1] with mean 0 --
    differences of two independent fair coins, second moment 1/2, and the worst case +-1 -- the
    centred sum crosses the boundary at its observed V = sum X^2 in at most a fraction a of
    the walks (at a = 5%)."""
    rng = np.random.default_rng(1)
    walks, steps, a = 2000, 2000, 0.05
    level = math.log(len(BERNSTEIN_LAMBDAS) / a)
    for draw in ("coins", "signs"):
        if draw == "coins":
            x = rng.integers(0, 2, (walks, steps)) - rng.integers(0, 2, (walks, steps))
        else:
            x = rng.choice([-1.0, 1.0], size=(walks, steps))
        s, v = np.cumsum(x, axis=1), np.cumsum(x * x, axis=1)
        crossed = (s >= bernstein_boundary(v, level)).any(axis=1)
        assert crossed.mean() <= a, (draw, crossed.mean())
    # Control: the same boundary with V understated 4x (a wrong variance) is crossed often.
    x = rng.choice([-1.0, 1.0], size=(walks, steps))
    s, v = np.cumsum(x, axis=1), np.cumsum(x * x, axis=1)
    assert (s >= bernstein_boundary(v / 4, level)).any(axis=1).mean() > a


def _betting_crossings(x: np.ndarray, mean: float, level: float) -> np.ndarray:
    """Per walk: whether some prefix has ``max_k ln(1 + lam_k) D + ln(1 - lam_k^2) N -
    lam_k n mean >= level`` (the betting boundary's log-wealth, compensator subtracted)."""
    d, neg = np.cumsum(x, axis=1), np.cumsum(np.maximum(-x, 0.0), axis=1)
    n = np.arange(1, x.shape[1] + 1)
    crossed = np.zeros(x.shape[0], dtype=bool)
    for lam in BERNSTEIN_LAMBDAS:
        wealth = math.log1p(lam) * d + math.log1p(-lam * lam) * neg - lam * mean * n
        crossed |= (wealth >= level).any(axis=1)
    return crossed


@pytest.mark.slow
def test_betting_boundary_holds_uniformly_in_time_for_every_kind_of_zero_change_stream():
    """Known answer (Ville + the chord bound of ln(1 + lam x)): on streams with no change --
    X = l(I) - l(j) with both losses i.i.d. in [0, 1] -- the log-wealth of every lambda stays
    below ln(K / a) at every length with probability >= 1 - a. Measured at a = 5% (K = 8,
    2,000 walks of 2,000 rounds, fixed seeds) for fair coins (second moment 1/2), +-1 signs (the
    worst case of the chord on both sides), Bernoulli(0.5) against Bernoulli(0.2) (mean 0.3:
    the compensator subtracted), Beta(2, 2) against uniform losses and one-sided +-1/2 and 0
    steps; tolerance: none (the frequency must be <= a; measured 0-1.65%)."""
    rng = np.random.default_rng(5)
    walks, steps, a = 2000, 2000, 0.05
    level = math.log(len(BERNSTEIN_LAMBDAS) / a)
    shape = (walks, steps)
    streams = {
        "coins": (rng.integers(0, 2, shape) - rng.integers(0, 2, shape), 0.0),
        "signs": (rng.choice([-1.0, 1.0], size=shape), 0.0),
        "gap 0.3": ((rng.random(shape) < 0.5) * 1.0 - (rng.random(shape) < 0.2), 0.3),
        "continuous": (rng.beta(2.0, 2.0, shape) - rng.random(shape), 0.0),
        "halves": (rng.choice([-0.5, 0.0, 0.5], size=shape), 0.0),
    }
    for name, (x, mean) in streams.items():
        freq = _betting_crossings(np.asarray(x, dtype=np.float64), mean, level).mean()
        assert freq <= a, (name, freq)
    # Controls: the same walks with the chord's penalty on the negative part dropped (the
    # supermartingale argument then fails) or the compensator ignored are crossed often.
    x = rng.choice([-1.0, 1.0], size=shape)
    d = np.cumsum(x, axis=1)
    dropped = np.zeros(walks, dtype=bool)
    for lam in BERNSTEIN_LAMBDAS:
        dropped |= (math.log1p(lam) * d >= level).any(axis=1)
    assert dropped.mean() > a
    gap = (rng.random(shape) < 0.5) * 1.0 - (rng.random(shape) < 0.2)
    assert _betting_crossings(gap, 0.0, level).mean() > 0.5


def test_betting_boundary_is_the_min_over_its_lines():
    """The betting boundary (default) is min_k (c_k L + s_k N + (1 - a_k) D / ts): checked
    against the log-wealth it stands for (query > 0 iff some lambda's c_k (log-wealth - L)
    exceeds the constant), and its coefficients against their closed forms."""
    c, a, s = betting_coefficients()
    lam = np.array(BERNSTEIN_LAMBDAS)
    r = np.log((1 + lam) / (1 - lam))
    np.testing.assert_allclose(c, 2 / r, rtol=1e-12)
    np.testing.assert_allclose(2 * a + s, 2.0, rtol=1e-12)
    rng = np.random.default_rng(3)
    neg, d = rng.random(50) * 40, rng.random(50) * 80 - 20
    level, const = 13.0, 1.0
    for ts in (0.5, 1.0, 3.0):
        query = d - ts * (betting_boundary(neg, d, level, ts) + const)
        wealth = np.log1p(lam)[:, None] * d + np.log1p(-(lam**2))[:, None] * neg
        want = np.max(a[:, None] * d - ts * (c[:, None] * level + s[:, None] * neg + const), 0)
        np.testing.assert_allclose(query, want, rtol=1e-9, atol=1e-9)
        if ts == 1.0:  # c_k (log-wealth - L) - const
            np.testing.assert_allclose(
                want, np.max(c[:, None] * (wealth - level), 0) - const, rtol=1e-9, atol=1e-9
            )
    # counts: the first K_u lambdas only
    some = betting_boundary(neg, d, level, 1.0, counts=np.full(50, 2))
    lines = c[:2, None] * level + s[:2, None] * neg + (1 - a[:2, None]) * d
    np.testing.assert_allclose(some, lines.min(axis=0), rtol=1e-12)


def test_betting_query_sensitivity_is_the_brute_force_maximum():
    """Per lambda, one round's term h(x) = a_k x - ts s_k max(-x, 0) over x, x' in [-1, 1]
    moves by at most 2 a_k + ts s_k (brute force on a grid); the declared D is the largest."""
    c, a, s = betting_coefficients()
    x = np.linspace(-1.0, 1.0, 2001)
    for ts in (0.05, 0.5, 1.0, 2.0, 3.0):
        worst = 0.0
        for k in range(len(a)):
            h = a[k] * x - ts * s[k] * np.maximum(-x, 0.0)
            worst = max(worst, float(h.max() - h.min()))
            assert h.max() - h.min() == pytest.approx(2 * a[k] + ts * s[k], rel=1e-12)
        assert betting_query_sensitivity(ts) == pytest.approx(worst, rel=1e-12)
    assert betting_query_sensitivity(1.0) == 2.0
    with pytest.raises(ValueError, match="threshold_scale"):
        betting_query_sensitivity(0.0)


def test_betting_targeted_stream_reaches_the_query_sensitivity():
    """Known answer: expert 0 played, x = l(0) - l(1) = 1 for 20 rounds; replacing round 20 by
    x = -1 moves every lambda's query of expert 1 by exactly 2 a_k + s_k = 2: D = 2 is tight."""
    t_max, m = 32, 20
    base = np.zeros((t_max, 2))
    base[:m, 0] = 1.0
    replaced = base.copy()
    replaced[m - 1] = [0.0, 1.0]
    plays = np.zeros(t_max, dtype=int)
    before = _query_trace(base, plays, 1.0, "betting")
    move = np.max(np.abs(before - _query_trace(replaced, plays, 1.0, "betting")))
    assert move == pytest.approx(2.0, rel=1e-9)
    assert SVTRestart(2, t_max, epsilon=1.0).query_sensitivity == 2.0


def _query_trace(
    losses: np.ndarray, plays: np.ndarray, threshold_scale: float, boundary: str = "bernstein"
) -> np.ndarray:
    """The largest window query of each round for fixed plays (released outputs).

    Through the agent's own ``act``: its ``_learn`` accumulates the window sums and the second
    statistic (the negative part or the second moment) and hands the query to the detector,
    which records it and never fires (one epoch). The horizon is one round longer so that the
    last loss row is learned too (only the constant terms of the queries depend on it).
    """
    t_max, n = losses.shape
    agent = SVTRestart(
        n, t_max + 1, epsilon=1.0, seed=0, threshold_scale=threshold_scale, boundary=boundary
    )
    out = []

    def record(query):
        out.append(float(np.asarray(query)[0]))
        return np.zeros(1, dtype=bool)

    agent.detector.test = record
    agent._choose = lambda obs: np.array([plays[min(agent.t, t_max - 1)]])
    agent.act(np.zeros((1, n)))
    for t in range(t_max):
        agent.act(losses[t][None, :])
    assert len(out) == t_max
    return np.array(out)


def test_query_sensitivity_formula_is_the_brute_force_maximum():
    """max over x, x' in [-1, 1] of |x' - x| + c |x'^2 - x^2| (the window difference's and the
    kappa-Lipschitz slack's moves) is 2 for c <= 1/2 and 1 + c + 1/(4 c) above."""
    from agents.svt_restart import bernstein_query_sensitivity

    x = np.linspace(-1.0, 1.0, 2001)
    for c in (0.0, 0.2, 0.386, 0.5, 0.6, 1.0, 1.158, 3.0):
        moves = np.abs(x[:, None] - x[None, :]) + c * np.abs(x[:, None] ** 2 - x[None, :] ** 2)
        want = 2.0 if c <= 0.5 else 1.0 + c + 1.0 / (4.0 * c)
        assert bernstein_query_sensitivity(c) == pytest.approx(want)
        assert moves.max() == pytest.approx(want, abs=1e-5)
    kappa = 2.0 * math.log(2.0) - 1.0
    bern = {"boundary": "bernstein"}
    assert SVTRestart(3, 64, epsilon=1.0, **bern).query_sensitivity == 2.0  # c = kappa <= 1/2
    assert SVTRestart(3, 64, epsilon=1.0, threshold_scale=3.0, **bern).query_sensitivity == (
        pytest.approx(1.0 + 3 * kappa + 1.0 / (12 * kappa))
    )
    assert SVTRestart(3, 64, epsilon=1.0, boundary="normal-mixture", threshold_scale=3.0)\
        .query_sensitivity == 2.0  # fmt: skip


@pytest.mark.parametrize("threshold_scale", [1.0, 3.0])
def test_targeted_stream_reaches_the_query_sensitivity(threshold_scale):
    """Known answer: expert 0 played, increments x = l(0) - l(1) = 1/(2c) (1 when c <= 1/2)
    for 20 rounds; replacing round 20 by x = -1 moves the query of expert 1 by exactly
    1 + c + 1/(4 c) (c = threshold_scale kappa > 1/2) or 2: the declared D is tight."""
    kappa = 2.0 * math.log(2.0) - 1.0
    c = threshold_scale * kappa
    x = 1.0 if c <= 0.5 else 1.0 / (2.0 * c)
    t_max, m = 32, 20
    base = np.zeros((t_max, 2))
    base[:m, 0] = x
    replaced = base.copy()
    replaced[m - 1] = [0.0, 1.0]
    plays = np.zeros(t_max, dtype=int)
    move = np.max(
        np.abs(
            _query_trace(base, plays, threshold_scale)
            - _query_trace(replaced, plays, threshold_scale)
        )
    )
    declared = SVTRestart(
        2, t_max, epsilon=1.0, threshold_scale=threshold_scale, boundary="bernstein"
    ).query_sensitivity
    assert move == pytest.approx(declared, rel=1e-9)
    assert declared == pytest.approx(2.0 if c <= 0.5 else 1.0 + c + 1.0 / (4.0 * c))
    if threshold_scale == 3.0:  # the previous bound 2 + c: 3.16, 33% above the true 2.37
        assert declared < 2.0 + c


@pytest.mark.parametrize("boundary", ["bernstein", "betting"])
def test_bernstein_query_moves_by_at_most_its_sensitivity(boundary):
    """Brute force: replace one loss vector of a random stream (plays fixed: they are released
    outputs) and compare the largest window query; it moves by at most D = 2 (Bernstein:
    threshold_scale kappa <= 1/2; betting: threshold_scale = 1)."""
    rng = np.random.default_rng(2)
    worst = 0.0
    for _trial in range(30):
        n, t_max = 3, 64
        x = rng.integers(0, 2, (t_max, n)).astype(float)
        xp = x.copy()
        xp[rng.integers(t_max)] = rng.integers(0, 2, n)
        plays = rng.integers(0, n, t_max)
        queries = []
        for losses in (x, xp):
            queries.append(_query_trace(losses, plays, 1.0, boundary))
        worst = max(worst, float(np.max(np.abs(queries[0] - queries[1]))))
    assert worst <= SVTRestart(3, 64, epsilon=1.0, boundary=boundary).query_sensitivity + 1e-9
    assert worst > 1.0  # the brute force does reach windows that move


def test_bernstein_columns_use_their_levels_lambdas():
    """A start column keeps only the lambdas its tested lengths need; its boundary is the min
    over those (never below the full grid's), and equals the full grid's where the dropped
    lambdas are not the minimiser (short windows)."""
    agent = SVTRestart(10, 10_000, epsilon=math.inf)
    counts = agent._col_lambdas
    level = agent._reg[1]
    v = np.full(counts.shape, 50.0)
    some = bernstein_boundary(v, level, counts)
    full = bernstein_boundary(v, level)
    np.testing.assert_allclose(some, full, rtol=1e-12)  # V = 50: lambda = 0.5 is the minimiser
    big = np.full(counts.shape, 5_000.0)
    assert np.all(bernstein_boundary(big, level, counts) >= bernstein_boundary(big, level))
    assert np.any(bernstein_boundary(big, level, counts) > bernstein_boundary(big, level))


# ----------------------------------------------------------------------------- fast query
#: (N, T, agent keywords, runs): restarts at several scales, per-run constants, paper mode
FAST_QUERY_CASES = [
    (2, 200, {"epsilon": math.inf, "threshold_scale": 0.05}, 3),
    (2, 600, {"epsilon": math.inf}, 3),
    (10, 300, {"epsilon": 50.0, "threshold_scale": 0.05}, 4),
    (10, 600, {"epsilon": 1.0}, 2),
    (10, 400, {"epsilon": 8.0, "threshold_scale": 0.1, "mode": "paper"}, 3),
    (2, 257, {"epsilon": 4.0, "threshold_scale": 1.5}, 2),
    # long windows with large second moments win the max: the smaller lambdas take part
    (2, 1500, {"epsilon": math.inf, "threshold_scale": 3.0}, 2),
]


def _shifting_stream(rounds, b, n, seed):
    """Continuous losses in [0, 1] whose means jump every ~rounds/4 (so detectors fire)."""
    g = np.random.default_rng(seed)
    means = g.random((5, b, n))
    seg = np.minimum(np.arange(rounds) * 5 // rounds, 4)
    noise = g.random((rounds, b, n))
    coin = g.random((rounds, b, n)) < 0.5
    return np.where(coin, (noise < means[seg]).astype(float), noise * means[seg])


#: ``agent._level_lambdas()`` per the public settings it reads (a pure function of them): the
#: reference query asks for it every round, the agent's settings never change within a case.
_LEVEL_LAMBDAS: dict[tuple, np.ndarray] = {}


def _level_lambdas(agent):
    """``agent._level_lambdas()``, computed once per (N, T, term_beta, levels)."""
    key = (agent.n_experts, agent.horizon, agent.term_beta, agent._levels)
    if key not in _LEVEL_LAMBDAS:
        _LEVEL_LAMBDAS[key] = agent._level_lambdas()
        _LEVEL_LAMBDAS[key].flags.writeable = False  # shared: nobody edits it
    return _LEVEL_LAMBDAS[key]


def _reference_query(agent):
    """The dyadic Bernstein query written out: every column at once, the public boundary function.

    Per stored start column: ``D_j = (learner's window loss) - (expert j's)``, ``V_j`` = the
    window's second moment clamped at 0, ``b = bernstein_boundary(V_j, level_log, K_u)`` with
    ``K_u`` the lambdas of the column's level; the query is the largest
    ``D_j - threshold_scale (b + c0 + alpha + 1)`` over non-empty columns and experts. The
    boundary functions are elementwise, so one (Q, B, N) call gives each column's floats.
    """
    n = agent.n_experts
    counts = _level_lambdas(agent)[agent._stored_level][:, None, None]  # (Q, 1, 1)
    if agent._runs is None:
        const = agent._reg[0] + agent.alpha + 1.0
    else:
        const = agent._runs["c0"] + agent._runs["alpha"] + 1.0  # (B, 1)
    lam = np.array(BERNSTEIN_LAMBDAS)
    # (Q, B, N): column q of every run and expert
    learner = (agent._cum[:, n, None] - agent._snap_learner).T[:, :, None]
    experts = np.transpose(agent._cum[:, :n, None] - agent._snap_experts, (2, 0, 1))
    second = np.transpose(np.maximum(agent._cum_sq[:, :, None] - agent._snap_sq, 0.0), (2, 0, 1))
    window = learner - experts
    if agent.boundary == "betting":
        bound = betting_boundary(second, window, agent._reg[1], agent.threshold_scale, counts)
    else:
        bound = bernstein_boundary(second, agent._reg[1], counts)
    query = window - agent.threshold_scale * (bound + const)
    agent._reference_slack = agent.threshold_scale * (bound + const)
    query = np.where(agent._col_empty.T[:, :, None], -np.inf, query)
    top = query.max(axis=2)  # (Q, B)
    best = top.max(axis=0)
    # the lambda of each run's maximum: its first column's best expert's smallest term
    q = top.argmax(axis=0)  # (B,)
    runs = np.arange(agent.num_envs)
    j = query[q, runs].argmax(axis=1)
    picked = second[q, runs, j][:, None]
    if agent.boundary == "betting":
        c, a, s_k = betting_coefficients()
        terms = c * agent._reg[1] + s_k * picked + (1 - a) / agent.threshold_scale * (
            window[q, runs, j][:, None]
        )
    else:
        terms = agent._reg[1] / lam + (-np.log1p(-lam) / lam - 1.0) * picked
    k_u = counts[q, 0, 0][:, None]
    which = np.argmin(np.where(np.arange(len(lam)) < k_u, terms, np.inf), axis=1)
    return best, which


#: The reference query's outputs (best, which, the slack) per digest of everything
#: :func:`_reference_query` reads. Both paths' cases of test_fast_query_equals_reference_every_round
#: play the same episodes, so the second one finds its rounds' states here (each entry is read
#: once and dropped); a state that differs in any read input has another digest and is
#: computed afresh.
_REFERENCE_QUERIES: dict[bytes, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}


def _reference_inputs_digest(agent):
    """A digest of every input of :func:`_reference_query` (settings and state arrays)."""
    runs = None if agent._runs is None else (agent._runs["c0"], agent._runs["alpha"])
    settings = (
        agent.boundary, agent.threshold_scale, agent.n_experts, agent.num_envs, agent.horizon,
        agent.term_beta, agent._levels, agent.alpha, agent._reg[0], agent._reg[1],
    )  # fmt: skip
    digest = hashlib.blake2b(repr(settings).encode())
    arrays = [agent._stored_level, agent._cum, agent._cum_sq, agent._snap_learner]
    arrays += [agent._snap_experts, agent._snap_sq, agent._col_empty, *(runs or ())]
    for a in map(np.asarray, arrays):
        digest.update(repr((a.dtype.str, a.shape)).encode())
        digest.update(np.ascontiguousarray(a).tobytes())
    return digest.digest()


def _shared_reference_query(agent):
    """:func:`_reference_query` once per digest of its inputs (it sets the agent's slack too)."""
    key = _reference_inputs_digest(agent)
    if key in _REFERENCE_QUERIES:  # the other path's case left it: read once, then dropped
        best, which, agent._reference_slack = _REFERENCE_QUERIES.pop(key)
        return best, which
    best, which = _reference_query(agent)
    _REFERENCE_QUERIES[key] = (best.copy(), which.copy(), agent._reference_slack)
    return best, which


def _bump(array):
    """Change one element of ``array`` in place (a bool flipped, a number moved by 1)."""
    flat = array.reshape(-1)
    flat[0] = ~flat[0] if array.dtype == bool else flat[0] + 1


def test_the_shared_reference_query_is_keyed_by_every_input():
    """The share's control: a state equal in every read input has the reference's digest; a change
    in any one of them (the mutant a digest missing it would let through) gives another."""
    import copy

    agent = SVTRestart(3, 64, epsilon=4.0, num_envs=2, seed=[1, 2], threshold_scale=0.5)
    assert agent.set_run_epsilons([1.0, 8.0])
    agent.play_block(_shifting_stream(20, 2, 3, seed=5))
    key = _reference_inputs_digest(agent)
    assert _reference_inputs_digest(copy.deepcopy(agent)) == key
    arrays = ["_stored_level", "_cum", "_cum_sq", "_snap_learner", "_snap_experts", "_snap_sq"]
    edits = {name: lambda a, name=name: _bump(getattr(a, name)) for name in arrays}
    edits["_col_empty"] = lambda a: _bump(a._col_empty)
    edits["c0 per run"] = lambda a: _bump(a._runs["c0"])
    edits["alpha per run"] = lambda a: _bump(a._runs["alpha"])
    for name in ("threshold_scale", "term_beta", "alpha"):
        edits[name] = lambda a, name=name: setattr(a, name, getattr(a, name) * 2.0)
    edits["boundary"] = lambda a: setattr(a, "boundary", "bernstein")
    edits["_reg"] = lambda a: setattr(a, "_reg", (a._reg[0] + 1.0, *a._reg[1:]))
    for name, edit in edits.items():
        other = copy.deepcopy(agent)
        edit(other)
        assert _reference_inputs_digest(other) != key, name


def _set_path(monkeypatch, jit):
    if jit:
        pytest.importorskip("numba")
        monkeypatch.delenv("DP_EXPERTS_NO_JIT", raising=False)
        monkeypatch.setenv("DP_EXPERTS_NUMBA", "1")
    else:
        monkeypatch.setenv("DP_EXPERTS_NO_JIT", "1")


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore:svt-restart with mode='paper' is NOT CERTIFIED")
@pytest.mark.parametrize("boundary", ["betting", "bernstein"])
@pytest.mark.parametrize("jit", [True, False], ids=["compiled", "numpy"])
def test_fast_query_equals_reference_every_round(monkeypatch, jit, boundary):
    """The fast query (kernel or numpy) gives the reference's floats at every round."""
    _set_path(monkeypatch, jit)
    fast = SVTRestart._bernstein_query_dyadic
    seen = {"rounds": 0, "restarts": 0, "finite": 0, "lambdas": 0}

    def checked(self):
        got = fast(self)
        want, which = _shared_reference_query(self)
        seen["lambdas"] = np.maximum(seen["lambdas"], which[np.isfinite(want)].max(initial=0))
        assert got.dtype == np.float64 and got.shape == want.shape
        # bit for bit, -inf (all columns empty) included
        assert np.array_equal(got.view(np.int64), want.view(np.int64)), (self.t, got, want)
        if not jit:  # every element's slack, not only the maximum's (the numpy buffers)
            live = ~self._col_empty.T
            slack = self._bound_buf.transpose(2, 0, 1)  # (B, N, Q) -> (Q, B, N)
            assert np.array_equal(slack[live], self._reference_slack[live]), self.t
        seen["rounds"] += 1
        seen["finite"] += int(np.isfinite(got).sum())
        return got

    monkeypatch.setattr(SVTRestart, "_bernstein_query_dyadic", checked)
    # Every case for both boundaries (the reference evaluates all columns in one call: this
    # test took ~30 s with a Python loop over columns and Bernstein on every other case only).
    cases = FAST_QUERY_CASES
    for case, (n, horizon, kwargs, b) in enumerate(FAST_QUERY_CASES):
        agent = SVTRestart(
            n, horizon, num_envs=b, seed=list(range(case, case + b)), boundary=boundary, **kwargs
        )
        obs = _shifting_stream(horizon, b, n, seed=case)
        agent.play_block(obs[: horizon // 2])
        for row in obs[horizon // 2 :]:
            agent.act(row)
        seen["restarts"] += int(agent.restarts.sum())
    # per-run epsilons: each run's constant
    agent = SVTRestart(
        10, 300, epsilon=1.0, threshold_scale=0.05, num_envs=3, seed=[7, 8, 9], boundary=boundary
    )
    assert agent.set_run_epsilons([0.5, 4.0, 64.0])
    agent.play_block(_shifting_stream(300, 3, 10, seed=99))
    seen["restarts"] += int(agent.restarts.sum())
    assert seen["rounds"] >= sum(t - 1 for _, t, _, _ in cases) + 299
    assert seen["restarts"] >= 20 and seen["finite"] > 0
    # the maximum was some round a window whose boundary took a lambda below the largest
    assert seen["lambdas"] >= 2


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore:svt-restart with mode='paper' is NOT CERTIFIED")
@pytest.mark.parametrize("boundary", ["betting", "bernstein"])
@pytest.mark.parametrize("jit", [True, False], ids=["compiled", "numpy"])
def test_fast_query_runs_equal_reference_runs(monkeypatch, jit, boundary):
    """Whole episodes: actions, restarts, epochs and the detector's noise equal the reference's.

    The reference agent answers its queries with the first implementation (one (B, N, Q)
    expression through :func:`bernstein_boundary`), the other with the fast path (compiled or
    numpy): both paths' episodes are held to the same numpy-path reference episode.
    """
    _set_path(monkeypatch, jit)
    total = 0
    for case, (n, horizon, kwargs, b) in enumerate(FAST_QUERY_CASES):
        seeds = list(range(10 * case, 10 * case + b))
        fast = SVTRestart(n, horizon, num_envs=b, seed=seeds, boundary=boundary, **kwargs)
        obs = _shifting_stream(horizon, b, n, seed=100 + case)
        got = fast.play_block(obs)
        ref = _reference_episode(boundary, case, monkeypatch)
        assert np.array_equal(got, ref["actions"]), case
        assert np.array_equal(fast.restarts, ref["restarts"]), case
        assert np.array_equal(fast.epoch_start, ref["epoch_start"]), case
        for key in ("_noisy_threshold", "n_tops", "halted"):
            assert np.array_equal(getattr(fast.detector, key), ref[key]), key
        # the same uniforms consumed: the next draws agree
        assert np.array_equal(fast.rng.random((4,)), ref["next_draws"]), case
        total += int(fast.restarts.sum())
    assert total >= 10


class _ReferenceQuery(SVTRestart):
    """svt-restart answering its dyadic queries with the first implementation (one (B, N, Q)
    expression): a hook override, so it plays through ``act``'s hooks on either path."""

    def _bernstein_query_dyadic(self):
        return self._bernstein_query_reference(self.t)


#: The reference episode per (boundary, case of FAST_QUERY_CASES): what it reads is the case's
#: sizes, keywords, seeds and stream (all fixed by the key) and the path, pinned to numpy. Both
#: paths' cases of test_fast_query_runs_equal_reference_runs compare against it, so each is
#: played once per run, not once per path (they are deterministic: the same arrays either way).
_REFERENCE_EPISODES: dict[tuple[str, int], dict[str, np.ndarray]] = {}


def _reference_episode(boundary, case, monkeypatch):
    """The reference agent's actions, epochs, detector state and next draws on ``case``."""
    key = (boundary, case)
    if key not in _REFERENCE_EPISODES:
        n, horizon, kwargs, b = FAST_QUERY_CASES[case]
        with monkeypatch.context() as patch:
            patch.setenv("DP_EXPERTS_NO_JIT", "1")
            seeds = list(range(10 * case, 10 * case + b))
            ref = _ReferenceQuery(n, horizon, num_envs=b, seed=seeds, boundary=boundary, **kwargs)
            actions = ref.play_block(_shifting_stream(horizon, b, n, seed=100 + case))
            episode = {"actions": actions, "restarts": ref.restarts.copy()}
            episode["epoch_start"] = ref.epoch_start.copy()
            for name in ("_noisy_threshold", "n_tops", "halted"):
                episode[name] = np.array(getattr(ref.detector, name), copy=True)
            episode["next_draws"] = ref.rng.random((4,))
        _REFERENCE_EPISODES[key] = episode
    return _REFERENCE_EPISODES[key]
