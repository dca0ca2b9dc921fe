"""The audit driver: playing learners on pairs, keyed rows, recorded releases, the search, the CLI,
noise backends (mutants leave the claim alone; every learner uses its backend or refuses it)."""

import subprocess
import sys

import numpy as np
import pytest

import agents
from agents.base import Agent, PrivacyClaim
from dp_experts_env.cli import apply_noise, main
from dp_experts_env.evaluation import AgentEntry, Grid
from dp_experts_env.evaluation.audit import (
    Scenario,
    audit_learner,
    default_scenarios,
    flip_pair,
    play_scenario,
    relative_actions,
    rival_pair,
)
from dp_experts_env.privacy.noise import ScaledBackend

PRIVATE = sorted(d["name"] for d in agents.available() if d["private"] and d["feedback"] != "oco")


#: Public settings under which a learner's noise reaches its plays within these 40 rounds (dp-se's
#: first epoch at its defaults is thousands of rounds long: its audit hints, one-round epochs).
SHORT_GAME = {"dp-se": {"epoch_scale": 0.0, "threshold_scale": 0.0}}


def _game(name, n=3, t=40):
    kw = {"n_experts": n, "horizon": t, "num_envs": 64, "seed": 11, **SHORT_GAME.get(name, {})}
    if agents.spec(name).feedback == "bandit":
        kw["n_arms"] = n
    return kw


def _actions(agent, t=40, n=3):
    rng = np.random.default_rng(0)
    losses = rng.random((t, n))
    obs = np.zeros((agent.num_envs, n))
    out = []
    if agent.feedback == "bandit":
        last = np.zeros(agent.num_envs, dtype=np.int64)
        loss = np.zeros(agent.num_envs)
        for r in range(t):
            a = agent.act(
                {
                    "advice": np.broadcast_to(np.eye(n), (agent.num_envs, n, n)),
                    "last_action": last,
                    "last_loss": loss,
                }
            )
            out.append(a)
            last, loss = a, losses[r, a]
    else:
        for r in range(t):
            out.append(agent.act(obs))
            obs = np.broadcast_to(losses[r], obs.shape).copy()
    return np.stack(out, axis=1)


# --------------------------------------------------------------------------- backends
@pytest.mark.parametrize("name", PRIVATE)
def test_every_learner_uses_its_noise_backend_or_refuses_it(name):
    try:
        grid = agents.make(name, **_game(name), noise="grid")
    except ValueError as err:
        assert "noise='grid' does not apply" in str(err)
        assert agents.spec(name).cls.noise_backends == ("fast",)
        return
    fast = agents.make(name, **_game(name))
    assert grid.privacy.noise_backend == "grid" and fast.privacy.noise_backend == "fast"
    # The lattice sampler draws other variates: a backend that is really used changes the play.
    assert not np.array_equal(_actions(grid), _actions(fast))


@pytest.mark.parametrize("name", PRIVATE)
def test_a_mutant_keeps_the_claim_and_changes_the_noise(name):
    fast = agents.make(name, **_game(name))
    off = agents.make(name, **_game(name), noise=ScaledBackend("fast", 0.0))
    a, b = fast.privacy, off.privacy
    assert (a.epsilon, a.delta, a.accountant) == (b.epsilon, b.delta, b.accountant)
    assert b.noise_backend == "fast x0 (audit mutant)"
    # Every learner's privacy noise goes through the backend (or its multiplier).
    assert not np.array_equal(_actions(fast), _actions(off))


def test_lazy_samplers_read_the_multiplier_as_a_rate():
    base = agents.make("private-shrinking-dartboard", n_experts=4, horizon=8)
    half = agents.make(
        "private-shrinking-dartboard", n_experts=4, horizon=8, noise=ScaledBackend("fast", 0.5)
    )
    off = agents.make(
        "private-shrinking-dartboard", n_experts=4, horizon=8, noise=ScaledBackend("fast", 0.0)
    )
    assert base._rate() == base.inverse_temperature
    assert half._rate() == pytest.approx(2 * base.inverse_temperature)
    assert off._rate() == np.inf


# --------------------------------------------------------------------------- playing
class _Echo(Agent):
    """Plays (previous loss of expert 0 > 0.5) -- deterministic, to check what the driver feeds."""

    def __init__(self, n_experts, horizon, *, num_envs=1, seed=None):
        super().__init__(n_experts, horizon, num_envs=num_envs, seed=seed)
        self.reset(seed)

    @property
    def privacy(self):
        return PrivacyClaim(epsilon=1.0, accountant="test")

    def _init_state(self):
        self.seen = np.zeros((self.num_envs, self.n_experts))

    def _learn(self, obs):
        self.seen = obs.copy()

    def _choose(self, obs):
        return (self.seen[:, 0] > 0.5).astype(np.int64) + (self.t % 2)


def test_keyed_rows_follow_the_previous_action_and_are_reported_as_moves():
    # Row 1 rotated onto J_0: its loss 1 lands on expert J_0, which _Echo reads at index 0 only
    # when J_0 = 0.
    x = np.zeros((4, 3))
    x[1] = [1.0, 0.0, 0.0]
    xp = x.copy()
    xp[1] = [0.0, 1.0, 0.0]
    scenario = Scenario("t", x, xp, keyed=True)
    out = play_scenario(
        lambda n, s: _Echo(3, 4, num_envs=n, seed=s), scenario, side=0, n_runs=8, seed=0
    )
    assert out.actions.shape == (8, 4)
    raw = np.array([[0, 1, 1, 1]])  # J_0 = 0 (t=0), J_1 = 1 (t odd), J_2 = 1 (saw 1 at 0), J_3 = 1
    assert np.array_equal(out.actions[:1], relative_actions(raw, 3))
    assert np.array_equal(relative_actions(np.array([[2, 0, 0, 1]]), 3), [[2, 1, 0, 1]])


def test_releases_are_recorded_from_the_changed_round_on():
    x, xp = flip_pair(4, 2, 1)
    scenario = Scenario("t", x, xp, {"epsilon": 1.0, "tau": 1})
    out = play_scenario("private-batched-bandit", scenario, side=1, n_runs=50, seed=0, record=True)
    # Column 0: the arm of the changed round; then one batch mean per round from round 1 on.
    assert out.releases.shape == (50, 2, 3)
    assert np.array_equal(out.releases[:, 0, 0], out.actions[:, 1])
    assert np.all(out.releases[:, 0, 1] == 1.0)  # the exact batch mean of the changed round
    off = play_scenario(
        "private-batched-bandit", scenario, side=1, n_runs=50, seed=0, record=True, multiplier=0.0
    )
    assert np.array_equal(off.releases[:, 0], off.releases[:, 1])  # no noise


# --------------------------------------------------------------------------- the search
def test_search_report_states_budget_choice_and_power():
    x, xp = rival_pair(4, 8, 0)
    scenarios = [Scenario("easy", x, xp), Scenario("same", x, xp, {"selector": "em"})]
    rep = audit_learner(
        "limited-updates", scenarios=scenarios, runs=4000, selection_runs=1000, seed=3
    )
    text = rep.summary()
    assert not rep.violation and "no violation found (could detect eps > " in text
    assert "search: 2 of 2 scenarios x 1000 selection runs" in text
    assert rep.result.n_heldout == 4000 and rep.chosen.scenario.label in ("easy", "same")
    again = audit_learner(
        "limited-updates", scenarios=scenarios, runs=4000, selection_runs=1000, seed=3
    )
    assert again.result == rep.result  # seeds reproduce the audit
    one = audit_learner(
        "limited-updates", scenarios=scenarios, runs=4000, selection_runs=1000, pairs=1
    )
    assert one.searched() == 1 and "1 of 2 scenarios" in one.summary()
    # A budget of 0 s still scores one scenario and runs the test.
    assert (
        audit_learner(
            "limited-updates", scenarios=scenarios, runs=1000, selection_runs=400, time_budget=0.0
        ).searched()
        == 1
    )


def test_search_skips_scenarios_the_learner_refuses_and_rejects_bad_input():
    x, xp = rival_pair(3, 4, 0)
    good = Scenario("ok", x, xp, {"p": 0.3, "budget": 2, "delta": 0.0})
    bad = Scenario("p too large", x, xp, {"p": 0.7, "budget": 2, "delta": 0.0})
    rep = audit_learner(
        "private-shrinking-dartboard", scenarios=[bad, good], runs=1000, selection_runs=400
    )
    assert rep.skipped and "p must be < 0.5" in rep.skipped[0] and rep.searched() == 1
    with pytest.raises(ValueError, match="no scenario could be played"):
        audit_learner("private-shrinking-dartboard", scenarios=[bad], runs=1000, selection_runs=400)
    with pytest.raises(ValueError, match="non-private"):
        audit_learner("hedge")
    with pytest.raises(ValueError, match="claims no privacy"):
        audit_learner(
            "limited-updates",
            epsilon=np.inf,
            scenarios=[Scenario("plain", x, xp)],
            runs=1000,
            selection_runs=400,
            params={},
        )


@pytest.mark.parametrize("name", PRIVATE)
def test_default_scenarios_build_for_every_learner(name):
    scenarios = default_scenarios(name)
    assert len(scenarios) >= 3
    for s in scenarios:
        assert 0 <= s.changed_round < s.horizon - 1  # a later action can see the change
        built = agents.make(
            name,
            n_experts=(s.advice.shape[0] if s.advice is not None else s.losses.shape[1]),
            horizon=s.horizon,
            **({"n_arms": s.losses.shape[1]} if agents.spec(name).feedback == "bandit" else {}),
            **s.params,
        )
        assert np.isfinite(built.privacy.epsilon)


# --------------------------------------------------------------------------- the CLI
def test_cli_audit_exit_codes(capsys):
    common = ["--runs", "6000", "--selection-runs", "1000", "--pairs", "1"]
    assert main(["audit", "limited-updates", *common]) == 0
    out = capsys.readouterr().out
    assert "no violation found (could detect eps >" in out and "PASSED" not in out
    assert main(["audit", "limited-updates", "--multiplier", "0", *common]) == 1
    assert "VIOLATION: epsilon >=" in capsys.readouterr().out
    assert main(["audit", "limited-updates", "--n-experts", "4", "--horizon", "6", *common]) == 0
    assert "complement of a random row, N=4, T=6, changed round 3" in capsys.readouterr().out
    assert main(["audit", "hedge"]) == 2
    assert "non-private" in capsys.readouterr().err


def test_noise_option_sets_every_learner_that_draws_from_a_backend(capsys):
    grid = Grid(
        agents=[
            "hedge",
            "noisy-clipped-hedge",
            "private-lazy-hedge",
            AgentEntry("limited-updates", {"selector": "em"}),
        ],
        envs=["DPExperts-Shift-v0"],
    )
    kept = apply_noise(grid, "grid")
    params = {a.name: dict(a.params) for a in grid.agents}
    assert params["noisy-clipped-hedge"] == {"noise": "grid"}
    assert params["limited-updates"] == {"selector": "em", "noise": "grid"}
    assert params["hedge"] == {} and params["private-lazy-hedge"] == {}
    assert kept == ["private-lazy-hedge"]
    assert apply_noise(grid, None) == []
    clash = Grid(
        agents=[AgentEntry("dp-ftrl-tree", {"noise": "fast"})], envs=["DPExperts-Shift-v0"]
    )
    with pytest.raises(ValueError, match="--noise grid: the grid sets noise='fast'"):
        apply_noise(clash, "grid")


def test_run_with_noise_grid_records_the_lattice_backend(tmp_path, capsys):
    code = main(
        [
            "run",
            "noisy-clipped-hedge",
            "--seeds",
            "2",
            "--env-set",
            "horizon=50",
            "--noise",
            "grid",
            "--backend",
            "serial",
            "--no-progress",
            "--no-figures",
            "--out",
            str(tmp_path / "r"),
        ]
    )
    assert code == 0
    import pandas as pd

    frame = pd.read_csv(tmp_path / "r" / "results.csv")
    assert frame["agent"].str.contains("noise=grid").all()


def test_importing_agents_loads_no_audit():
    code = (
        "import sys, agents; "
        "bad = [m for m in ('dp_experts_env.privacy.audit', 'dp_experts_env.evaluation.audit', "
        "'dp_experts_env.evaluation') if m in sys.modules]; print(bad)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_reduction_over_another_learner_keeps_the_inner_claim_fields():
    agent = agents.make(
        "meta-expert-reduction",
        n_experts=2,
        horizon=4,
        method="enumerate",
        inner="limited-updates",
        noise="grid",
        epsilon=0.5,
    )
    claim = agent.privacy
    assert claim.noise_backend == "grid" and claim.requested_epsilon == 0.5
    assert claim.model == "central" and claim.accountant.startswith("Thm 4.1")


def test_keyed_pairs_are_refused_for_oblivious_claims():
    x, xp = rival_pair(4, 8, 1)
    with pytest.raises(ValueError, match="oblivious adversaries only"):
        from dp_experts_env.evaluation.audit import audit_agent

        audit_agent("randomized-prefix-softmax", x, xp, n_runs=400, keyed=True)
    rep = audit_learner(
        "randomized-prefix-softmax",
        scenarios=[Scenario("keyed", x, xp, keyed=True), Scenario("plain", x, xp)],
        runs=1000,
        selection_runs=400,
    )
    assert rep.skipped and "oblivious" in rep.skipped[0] and rep.searched() == 1


# --------------------------------------------------------------------------- privacy as data
def test_no_audit_or_privacy_module_names_a_learner():
    """What to audit comes from declarations: no module of the audit holds learner names."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    modules = [
        "dp_experts_env/evaluation/audit.py",
        "dp_experts_env/evaluation/audit_oco.py",
        "dp_experts_env/privacy/audit.py",
        "dp_experts_env/privacy/audit_oco.py",
        "dp_experts_env/privacy/declaration.py",
        "agents/private.py",
    ]
    names = [d["name"] for d in agents.available()]
    for module in modules:
        text = (root / module).read_text()
        quoted = [n for n in names if f'"{n}"' in text or f"'{n}'" in text]
        assert not quoted, (module, quoted)


@pytest.mark.parametrize("name", PRIVATE)
def test_every_private_learner_declares_and_its_audit_derives_from_it(name):
    from dp_experts_env.audit import declaration_of, derived_scenarios, generic_scenarios

    declared = declaration_of(name)
    assert declared is not None
    derived = derived_scenarios(name, declared)
    labels = [s.label for s in default_scenarios(name)]
    assert derived and labels[: len(derived)] == [s.label for s in derived]
    assert len(labels) == len(derived) + len(generic_scenarios(name))


# --------------------------------------------------------------------------- split claims
def test_a_split_claim_needs_power_against_its_largest_part():
    """svt-restart splits its claim (selections eps/2 + detector eps/2): share 0.5, others 1.

    A pass on an event reading one part cannot show a learner spending 2x the claim (at most
    2 x 0.5 x claim = the claim on that part), so it is inconclusive at any run count; with
    share 1 the same counts are an informative pass (known answers, no learner played).
    """
    import math

    from dp_experts_env.evaluation.audit import declaration_of
    from dp_experts_env.privacy.audit import evaluate_event, select_event, sequence_families
    from dp_experts_env.privacy.declaration import composed_parts, largest_share

    svt = declaration_of("svt-restart", {"epsilon": 1.0})
    assert [p.kind for p in composed_parts(svt)] == ["noisy-min", "sparse-vector"]
    assert largest_share(svt) == pytest.approx(0.5)
    for name in PRIVATE:
        if name not in ("svt-restart", "svt-restart:paper"):  # the paper row: the same split
            assert largest_share(declaration_of(name, {"epsilon": 1.0})) == 1.0, name

    rng = np.random.default_rng(3)
    a = rng.integers(0, 3, (4000, 2)).astype(np.int16)
    b = rng.integers(0, 3, (4000, 2)).astype(np.int16)
    sel = select_event(
        sequence_families(a[:2000], b[:2000], k=3, first=0),
        a[2000:],
        b[2000:],
        n_test=2000,
        alpha=1e-3,
        delta=0.0,
    )
    whole = evaluate_event(sel, a[2000:], b[2000:], alpha=1e-3, claimed_epsilon=1.0)
    split = evaluate_event(sel, a[2000:], b[2000:], alpha=1e-3, claimed_epsilon=1.0, share=0.5)
    assert whole.passed and not whole.inconclusive
    assert split.passed and split.inconclusive and math.isinf(split.runs_needed)
    assert split.verdict.startswith("inconclusive at this run count")
    assert "split among composed mechanisms" in split.verdict
    # A larger share (0.7) asks for power below 1.4 x claim: a finite run count.
    mid = evaluate_event(sel, a[2000:], b[2000:], alpha=1e-3, claimed_epsilon=1.0, share=0.7)
    assert mid.detectable_epsilon >= 1.4 or not mid.inconclusive


@pytest.mark.slow
def test_cli_svt_split_claim_names_the_run_count_of_a_part_level_test(capsys):
    """svt-restart's inconclusive verdict says what a detector-part test would need.

    The number is read off the declaration (its sparse-vector part, epsilon 0.5 at epsilon 1,
    sensitivity 2, Lap(8) / Lap(16)), not off the learner's name: the same as for the bare
    declared part (tests/test_part_power.py checks the computation against sampling).
    """
    from dp_experts_env.evaluation.audit import declaration_of
    from dp_experts_env.privacy.declaration import SparseVector, composed_parts
    from dp_experts_env.privacy.part_power import sparse_vector_part_test

    common = ["--runs", "400", "--selection-runs", "200", "--pairs", "1", "--epsilon", "1"]
    assert main(["audit", "svt-restart", *common]) == 0
    out = capsys.readouterr().out
    part = next(
        p
        for p in composed_parts(declaration_of("svt-restart", {"epsilon": 1.0}))
        if isinstance(p, SparseVector)
    )
    expected = sparse_vector_part_test(part, alpha=1e-3)
    assert out.startswith("svt-restart: inconclusive at this run count"), out
    assert "split among composed mechanisms" in out
    assert "a test of the sparse-vector part against its own epsilon 0.5" in out
    assert f"would need about {expected.runs:.2g} runs per side" in out
    assert 1e3 < expected.runs < 1e6
    # ... and the audit runs that test on the learner's own detector (the correct one passes).
    assert "part-level test: the sparse-vector part shows epsilon >=" in out
    assert "<= its own epsilon 0.5" in out


def test_the_audit_is_one_package_with_one_search_loop():
    """Issue 41 item 2: one package, modules under 800 lines, the budgeted search loop written
    once (``audit/search.py``) and the four former modules re-exporting only.

    Mutants caught: a second copy of the loop (the OCO audit's own, as before), a former module
    holding code again, a package module grown past 800 lines.
    """
    from pathlib import Path

    import dp_experts_env

    root = Path(dp_experts_env.__file__).parent
    package = sorted((root / "audit").glob("*.py"))
    assert {p.stem for p in package} >= {"search", "learner", "oco", "bounds", "selection"}
    for path in package:
        assert len(path.read_text().splitlines()) < 800, path.name
    loops = [
        p.relative_to(root).as_posix()
        for p in root.rglob("*.py")
        if "time.perf_counter() - began > budget" in p.read_text()
    ]
    assert loops == ["audit/search.py"]
    for former in ("privacy/audit.py", "privacy/audit_oco.py", "evaluation/audit.py",
                   "evaluation/audit_oco.py"):  # fmt: skip
        text = (root / former).read_text()
        assert "def " not in text and "class " not in text, former


def _detectable_through_epsilon_lower_bound(count_hi, n, *, alpha, claimed_epsilon, delta):
    """``detectable_epsilon`` as first written: each bisection step a whole two-sided bound."""
    import math

    from dp_experts_env.audit.bounds import epsilon_lower_bound

    def bound(k_lo):
        return float(epsilon_lower_bound(count_hi, k_lo, n, alpha=alpha, delta=delta))

    if not math.isfinite(claimed_epsilon) or bound(0.0) <= claimed_epsilon:
        return math.inf
    lo, hi = 0.0, float(count_hi)
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if bound(mid) > claimed_epsilon else (lo, mid)
    p_hi = count_hi / n - delta
    if lo <= 0.0 or p_hi <= 0.0:
        return math.inf
    return max(math.log(p_hi * n / lo), claimed_epsilon)


def test_one_sided_bounds_are_the_two_sided_ones_bit_for_bit():
    """The audit computes only the Clopper-Pearson side it reads (the power's bisection, the
    selection's predictions, each test bound): the same floats as the two-sided bounds; the
    power is computed once per process and key, the same float for any integer type."""
    from dp_experts_env.audit.bounds import (
        clopper_pearson,
        clopper_pearson_lower,
        clopper_pearson_upper,
        detectable_epsilon,
    )

    rng = np.random.default_rng(3)
    for n in (200, 2000, 20_000, 55_108):
        counts = np.concatenate([[0, 1, n - 1, n], rng.integers(0, n + 1, 40), [0.5, n / 3]])
        lower, upper = clopper_pearson(counts, n, 5e-4)
        assert clopper_pearson_lower(counts, n, 5e-4).tobytes() == lower.tobytes()
        assert clopper_pearson_upper(counts, n, 5e-4).tobytes() == upper.tobytes()
        for k in counts[:12]:
            for eps, delta in ((1.0, 0.0), (0.5, 1e-6), (2.0, 1e-2)):
                kw = {"alpha": 1e-3, "claimed_epsilon": eps, "delta": delta}
                want = _detectable_through_epsilon_lower_bound(int(k), n, **kw)
                assert repr(detectable_epsilon(int(k), n, **kw)) == repr(want), (k, n, kw)
                # computed once per key (a pure function): numpy's integers read the same entry
                again = detectable_epsilon(np.int64(k), np.int64(n), **kw)
                assert repr(again) == repr(want), (k, n, kw)


@pytest.mark.parametrize("name", ["noisy-clipped-hedge", "dp-ftrl-tree", "private-batched-bandit"])
def test_recorded_releases_are_the_calls_concatenated_and_stacked(name):
    """play_game writes the recorded releases into one array: the values of concatenating each
    call's exact and noisy values and stacking the two channels after the changed round's key."""
    from dp_experts_env.audit.play import build_learner, noise_params, play_game

    params, recorder = noise_params(name, {"epsilon": 1.0}, 1.0, record=True)
    losses = np.random.default_rng(5).random((12, 4))
    built = build_learner(name, 300, 9, {"n": 4, "t": 12, "k": 4}, params)
    advice = np.eye(4) if built.feedback == "bandit" else None
    actions, releases = play_game(built, losses, advice, 300, keyed=False, recorder=recorder,
                                  changed=2)  # fmt: skip
    calls = [c for c in recorder.releases if c[0].shape[:1] == (300,)]
    assert len(calls) >= 2
    key = np.repeat(actions[:, 2, None, None].astype(np.float64), 2, axis=1)
    exact = np.concatenate([c[0].reshape(300, -1) for c in calls], axis=1)
    noisy = np.concatenate([c[1].reshape(300, -1) for c in calls], axis=1)
    want = np.concatenate([key, np.stack([exact, noisy], axis=1)], axis=2)
    assert releases.dtype == want.dtype and releases.shape == want.shape
    assert releases.tobytes() == want.tobytes()
