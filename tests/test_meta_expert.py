"""meta-expert-reduction (ARS Thm 4.1): counting, structured = enumerated Hedge, privacy."""

import itertools
import math

import numpy as np
import pytest
from conftest import rollout, use_jit_path

import agents
import dp_experts_env  # noqa: F401  (registers the env ids)
from agents.meta_expert import (
    MetaExpertReduction,
    count_meta_experts,
    log_count_meta_experts,
)


# ----------------------------------------------------------------------------- counting
def test_meta_expert_counts_known_answers():
    # Switch points in {2..T} (E-ARS-14): C(T-1, c), not the paper's C(T, c) (183 and 79,204).
    assert count_meta_experts(3, 20, 1) == 3 + 19 * 9 == 174
    assert count_meta_experts(4, 50, 2) == 4 + 49 * 16 + math.comb(49, 2) * 64 == 76052
    assert count_meta_experts(5, 30, 0) == 5
    assert count_meta_experts(2, 3, 9) == count_meta_experts(2, 3, 2)  # S capped at T - 1
    assert log_count_meta_experts(10, 1000, 3) == pytest.approx(
        math.log(count_meta_experts(10, 1000, 3)), rel=1e-12
    )


def test_enumeration_lists_every_meta_expert_once():
    n, t_max, s = 3, 6, 2
    agent = MetaExpertReduction(n, t_max, n_switches=s, method="enumerate")
    assert agent.n_meta_experts == count_meta_experts(n, t_max, s)
    seqs = np.stack([agent.meta_plays(t) for t in range(1, t_max + 1)], axis=1)  # (|E|, T)
    keys = {
        (tuple(tm), tuple(lb)) for tm, lb in zip(agent._switch_times, agent._labels, strict=True)
    }
    assert len(keys) == agent.n_meta_experts
    # Brute force: the distinct sequences are exactly those with at most S real switches.
    distinct = {tuple(row) for row in seqs}
    want = {
        seq
        for seq in itertools.product(range(n), repeat=t_max)
        if sum(a != b for a, b in itertools.pairwise(seq)) <= s
    }
    assert distinct == want


def test_enumeration_guard():
    with pytest.raises(ValueError, match="max_meta_experts") as err:
        MetaExpertReduction(10, 100, n_switches=2, method="enumerate")
    assert "method='structured'" in str(err.value)
    MetaExpertReduction(10, 100, n_switches=2)  # structured is fine


# ----------------------------------------------------------------------------- structured form
def brute_force_hedge_laws(losses, s, eta):
    """Hedge over explicitly built meta-experts (full sequences), marginal law of each play."""
    t_max, n = losses.shape
    seqs = []
    for c in range(min(s, t_max - 1) + 1):
        for points in itertools.combinations(range(2, t_max + 1), c):
            for labels in itertools.product(range(n), repeat=c + 1):
                bounds = (1, *points, t_max + 1)
                seq = np.concatenate(
                    [np.full(bounds[k + 1] - bounds[k], labels[k]) for k in range(c + 1)]
                )
                seqs.append(seq)
    seqs = np.array(seqs)  # (|E|, T)
    meta_losses = losses[np.arange(t_max)[None, :], seqs]  # (|E|, T)
    laws = []
    for t in range(t_max):
        logw = -eta * meta_losses[:, :t].sum(axis=1)
        w = np.exp(logw - logw.max())
        laws.append(np.bincount(seqs[:, t], weights=w / w.sum(), minlength=n))
    return np.array(laws)


@pytest.mark.parametrize("s", [0, 1, 2])
def test_structured_equals_brute_force_hedge_over_meta_experts(s):
    n, t_max, eta = 3, 7, 1.3
    losses = np.random.default_rng(s).random((t_max, n))
    want = brute_force_hedge_laws(losses, s, eta)
    for method in ("structured", "enumerate"):
        # Epsilon huge: the released noisy losses equal the losses to ~1e-9.
        agent = MetaExpertReduction(n, t_max, epsilon=1e12, n_switches=s, eta=eta, method=method)
        laws = rollout(agent, losses[:, None, :], record=lambda a: a.action_distribution().copy())
        laws = laws.records
        np.testing.assert_allclose(laws[:, 0], want, atol=1e-9)


def test_structured_sampling_follows_its_law():
    runs = 20000
    agent = MetaExpertReduction(3, 5, epsilon=1e12, n_switches=1, eta=2.0, num_envs=runs, seed=0)
    agent.act(np.zeros((runs, 3)))
    second = agent.act(np.tile([0.0, 1.0, 0.5], (runs, 1)))
    law = agent.action_distribution()[0]
    freq = np.bincount(second, minlength=3) / runs
    assert np.all(np.abs(freq - law) < 4 * np.sqrt(law * (1 - law) / runs))


# ----------------------------------------------------------------------------- parameters
def test_noise_and_eta_follow_the_parameters():
    n, t_max, s, eps = 6, 500, 2, 0.5
    strict = MetaExpertReduction(n, t_max, epsilon=eps, n_switches=s, tuning="paper")
    b = n / eps
    assert strict.noise_sensitivity == n and strict.noise_scale == pytest.approx(b)
    log_k = 2 * s * math.log(n * t_max)  # Corollary 4.1.1's size bound
    assert strict.eta == pytest.approx(min(math.sqrt(log_k / (t_max * (0.125 + b * b))), 0.5 / b))
    cal = MetaExpertReduction(n, t_max, epsilon=eps, n_switches=s, tuning="calibrated")
    exact = log_count_meta_experts(n, t_max, s)
    assert cal.eta == pytest.approx(min(math.sqrt(exact / (t_max * (0.125 + b * b))), 0.5 / b))
    paper = MetaExpertReduction(n, t_max, epsilon=eps, mode="paper")
    assert paper.noise_scale == pytest.approx(1 / eps)
    assert not paper.privacy.certified and paper.effective_epsilon == pytest.approx(n * eps)


def test_released_noise_has_the_recorded_scale():
    # S = 0 is Hedge on noisy losses: log-weight differences recover Z_0 - Z_1 / eta.
    runs, eta = 20000, 1e-6
    agent = MetaExpertReduction(3, 4, epsilon=2.0, n_switches=0, eta=eta, num_envs=runs, seed=3)
    agent.act(np.zeros((runs, 3)))
    agent.act(np.zeros((runs, 3)))
    p = agent.action_distribution()
    diff = -(np.log(p[:, 0]) - np.log(p[:, 1])) / eta
    assert np.var(diff) == pytest.approx(4 * agent.noise_scale**2, rel=0.05)


def test_generic_inner_learner_inherits_its_claim():
    agent = MetaExpertReduction(
        2, 6, epsilon=0.8, n_switches=1, method="enumerate", inner="limited-updates"
    )
    inner = agent.inner_agent
    assert inner is not None and inner.n_experts == agent.n_meta_experts == 2 + 5 * 4
    claim = agent.privacy
    assert claim.epsilon == 0.8 and claim.certified and "limited-updates" in claim.accountant
    actions = rollout(agent, np.random.default_rng(0).random((6, 1, 2))).actions
    assert actions.shape == (6, 1) and set(actions.ravel()) <= {0, 1}
    with pytest.raises(ValueError, match="method='enumerate'"):
        MetaExpertReduction(2, 6, inner="limited-updates")
    with pytest.raises(ValueError, match="private full-information"):
        MetaExpertReduction(2, 6, method="enumerate", inner="hedge")
    with pytest.raises(ValueError, match="unknown agent"):
        MetaExpertReduction(2, 6, method="enumerate", inner="nope")


@pytest.mark.parametrize(
    "params",
    [
        {"n_switches": 2},
        {"n_switches": 1, "method": "enumerate"},
        {"n_switches": 1, "method": "enumerate", "inner": "limited-updates"},
        {"n_switches": 0, "noise": "grid"},
    ],
)
def test_batch_equals_single_runs(params):
    losses = np.random.default_rng(4).random((15, 3, 3))
    batch = rollout(
        MetaExpertReduction(3, 15, num_envs=3, seed=9, eta=1.0, **params), losses
    ).actions
    for b in range(3):
        single = MetaExpertReduction(3, 15, seed=9 + b, eta=1.0, **params)
        np.testing.assert_array_equal(
            batch[:, b], rollout(single, losses[:, b : b + 1]).actions[:, 0]
        )


def test_claim():
    claim = agents.make("meta-expert-reduction", n_experts=3, horizon=10).privacy
    assert claim.certified and claim.holds_against == "adaptive" and claim.delta == 0
    assert "Thm 4.1" in claim.accountant


def test_compiled_logaddexp_is_numpys():
    """The kernels' scalar logaddexp gives numpy's floats (ties, infinities, far apart)."""
    from agents import _kernels

    pytest.importorskip("numba")
    rng = np.random.default_rng(5)
    x = rng.normal(size=20_000) * 10.0 ** rng.integers(-3, 3, size=20_000)
    y = rng.normal(size=20_000) * 10.0 ** rng.integers(-3, 3, size=20_000)
    x[:50], y[25:75], y[100:150] = -np.inf, -np.inf, x[100:150]
    want = np.logaddexp(x, y)
    got = np.array([_kernels.logaddexp(a, b) for a, b in zip(x, y, strict=True)])
    assert got.tobytes() == want.tobytes()  # the Python form (math's exp and log1p)
    out = np.empty((1, 4, 3))
    for s in (1, 2):  # the compiled form, through switch_round's finish step
        prev = np.stack([x[:12].reshape(4, 3)])[:, :, : s + 1].copy()
        lt = y[:s].reshape(1, 1, s).copy()
        m = np.zeros((1, s))
        done = prev.copy()
        _kernels.switch_round(done, True, lt, m, np.zeros((1, 4)), out, out[:, :, :s], False)
        want_s = prev.copy()
        want_s[:, :, 1:] = np.logaddexp(prev[:, :, 1:], (lt[:, 0, :] + m)[:, None, :])
        assert done.tobytes() == want_s.tobytes()


@pytest.mark.parametrize("n_switches", [1, 3, 5])
@pytest.mark.parametrize("epsilon", [1.0, math.inf])
def test_compiled_block_play_is_the_numpy_loop(monkeypatch, n_switches, epsilon):
    """play_block's compiled recursion and play laws equal its numpy loop, float for float.

    N = 9 experts (numpy sums >= 8 entries pairwise), S = 1 (the one-level sum numpy adds
    pairwise too) and deeper tables, levels still empty (-inf) in the first rounds.
    """
    pytest.importorskip("numba")
    losses = np.random.default_rng(6).random((60, 4, 9))
    losses[losses < 0.15] = 0.0
    states = []
    for jit in (True, False):
        use_jit_path("compiled" if jit else "numpy", monkeypatch)
        agent = MetaExpertReduction(
            9, 60, num_envs=4, seed=3, epsilon=epsilon, n_switches=n_switches
        )
        actions = [agent.play_block(losses[a:b]) for a, b in ((0, 1), (1, 4), (4, 41), (41, 60))]
        states.append((np.concatenate(actions), agent._log_f, agent.action_distribution()))
    for got, want in zip(*states, strict=True):
        assert got.tobytes() == want.tobytes()


def test_public_tables_equal_the_chunked_suffix_counts_and_are_kept_on_disk(tmp_path, monkeypatch):
    """log |E| and the whole suffix table equal what is computed round by round, and a new
    process reads them from disk without importing scipy (its ~0.25 s import)."""
    import subprocess
    import sys
    from pathlib import Path

    from agents import meta_expert_tuning

    monkeypatch.setenv("DP_EXPERTS_CACHE_DIR", str(tmp_path))
    meta_expert_tuning.public_tables.cache_clear()
    n, t_max, s = 7, 1300, 3
    log_count, table = meta_expert_tuning.public_tables(n, t_max, s)
    assert log_count == log_count_meta_experts(n, t_max, s)
    for start in (0, 1, 511, 1299):  # the chunks _log_suffix_counts would compute
        chunk = meta_expert_tuning.suffix_rows(n, t_max, s, np.arange(start, start + 512))
        rows = min(512, t_max + 1 - start)
        assert chunk[:rows].tobytes() == table[start : start + rows].tobytes()
    assert len(list(tmp_path.glob("*.npz"))) == 1
    code = (
        "import sys; from agents import meta_expert_tuning as m; "
        f"c, t = m.public_tables({n}, {t_max}, {s}); "
        "print(repr(c), t.sum(), 'scipy.special' in sys.modules)"
    )
    root = Path(__file__).resolve().parents[1]
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        cwd=root,
        env={**__import__("os").environ, "PYTHONPATH": str(root)},
        check=True,
    ).stdout.split()
    assert float(out[0]) == log_count and float(out[1]) == table.sum() and out[2] == "False"
    meta_expert_tuning.public_tables.cache_clear()
