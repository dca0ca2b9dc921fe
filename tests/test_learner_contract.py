"""The learner contract, for every registered learner.

Every test here is parametrised over ``agents.available()``: a new learner is covered the moment
it registers, with no hand list, and ``test_the_contract_covers_every_registered_learner`` fails
if a parametrisation ever drifts from the registry.

Every learner: builds from public parameters alone; plays every registered env id of its
feedback with valid actions and a well-formed claim (a private claim names its accountant and
the noise backend that ran); a batch of B runs equals B single runs seeded ``s + b``, bit for
bit; its docstring names its source and docs/algorithms.md has its row.

Every private learner: its privacy audit passes and its weakened mutants (noise x0.5 and noise
removed) are caught -- those audits run once, in test_audit_zoo.py (full-information and bandit
learners, parametrised over the same registry) and test_oco_audit.py (continuous actions);
``test_every_private_learner_is_audited`` checks that no private learner escapes them -- and its
regret does not increase with epsilon (seeded; tolerance stated at :data:`MONOTONE_SE`).
"""

import inspect
import math
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import rollout, tiny_env, use_jit_path

import agents
from agents.registry import _GAME_ATTRS
from dp_experts_env import testing
from dp_experts_env.registration import ENVS
from dp_experts_env.testing import check_agent

LEARNERS = agents.available()
NAMES = [a["name"] for a in LEARNERS]
PRIVATE = [a["name"] for a in LEARNERS if a["private"]]
BANDIT = [a["name"] for a in LEARNERS if a["feedback"] == "bandit"]
FEEDBACK = {a["name"]: a["feedback"] for a in LEARNERS}
ENV_IDS = [e.id for e in ENVS]
ENV_FEEDBACK = {e.id: e.feedback for e in ENVS}
# "any" learners play Discrete actions, so they never meet the continuous-action OCO env.
PAIRS = [
    (name, env_id)
    for name in NAMES
    for env_id in ENV_IDS
    if FEEDBACK[name] == ENV_FEEDBACK[env_id]
    or (FEEDBACK[name] == "any" and ENV_FEEDBACK[env_id] != "oco")
]
#: One representative env per feedback kind (``"any"`` learners play the full-information one).
HOME_ENV = {
    "full": "DPExperts-Stochastic-v0",
    "any": "DPExperts-Stochastic-v0",
    "bandit": "DPExperts-BanditAdvice-v0",
    "oco": "DPExperts-OCO-v0",
}


#: Public settings a learner's contract is checked at where its defaults show nothing in these
#: short games: dp-se's first epoch at its defaults outlasts T = 2,000 (uniform play at every
#: epsilon, so regret cannot fall with epsilon); shorter epochs and margins let it eliminate.
CONTRACT_PARAMS = {"dp-se": {"epoch_scale": 0.05, "threshold_scale": 0.25}}


def _extra(name, epsilon=1.0):
    """The non-game keywords a learner needs: epsilon for private ones (None: none), a short
    PPO training, the public settings of :data:`CONTRACT_PARAMS`."""
    extra = {"epsilon": epsilon} if agents.spec(name).private and epsilon is not None else {}
    extra.update(CONTRACT_PARAMS.get(name, {}))
    if name == "ppo":
        extra["timesteps"] = 256  # the RL baseline trains first: keep it short here
    return extra


def _accepts(name, keyword):
    return keyword in inspect.signature(agents.spec(name).cls.__init__).parameters


# ----------------------------------------------------------------------------- construction
def _slow_if_training(names):
    """PPO trains before it plays (seconds): its cases run with the slow tests."""
    return [pytest.param(n, marks=pytest.mark.slow) if n == "ppo" else n for n in names]


@pytest.mark.parametrize("name", _slow_if_training(NAMES))
def test_builds_from_public_parameters_alone(name):
    """The env hands a learner nothing but public game parameters: the same learner built from
    those parameters alone makes the same claim and plays the same actions."""
    env_id = HOME_ENV[FEEDBACK[name]]
    env = tiny_env(env_id)
    game = env.unwrapped
    public = {k: getattr(game, k, None) for k in _GAME_ATTRS if k != "feedback"}
    public = {k: v for k, v in public.items() if v is not None}
    if not _accepts(name, "n_switches"):
        public.pop("n_switches", None)  # only switch-budget learners take S
    if _accepts(name, "env_id"):  # the PPO baseline trains on the (public) env id
        public.update(env_id=env_id, env_kwargs=dict(env.spec.kwargs))
    from_env = agents.make(name, env=env, seed=3, **_extra(name))
    from_public = agents.make(name, seed=3, **public, **_extra(name))
    assert from_public.privacy == from_env.privacy
    a = rollout(from_env, env=env, seed=11).actions
    b = rollout(from_public, env=tiny_env(env_id), seed=11).actions
    np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize(("name", "env_id"), PAIRS)
def test_plays_every_compatible_env_and_batches_exactly(name, env_id):
    single = tiny_env(env_id)
    private = agents.spec(name).private
    agent = agents.make(name, env=single, seed=3, **_extra(name))
    claim = agent.privacy
    oco = single.unwrapped.feedback == "oco"  # continuous actions, full-information gradients
    assert claim.feedback == ("full" if oco else single.unwrapped.feedback)
    assert claim.is_private == private
    assert (claim.model == "none") == (not private)
    assert math.isinf(claim.epsilon) or claim.epsilon <= 1.0 + 1e-12
    run = rollout(agent, env=single, seed=11)
    actions, info = run.actions, run.info
    assert info["round"] == single.unwrapped.horizon
    if oco:
        assert actions.dtype.kind == "f" and actions.shape == (len(actions), single.unwrapped.dim)
        assert np.all(np.abs(actions) <= single.unwrapped.radius)
        assert np.isfinite(info["static_regret"])
    else:
        limit = single.unwrapped.n_arms or single.unwrapped.n_experts
        assert actions.dtype.kind == "i" and actions.min() >= 0 and actions.max() < limit
        assert np.isfinite(info["dynamic_regret"])

    # Batch of 3 == three single runs seeded 3, 4, 5 on env seeds 11, 12, 13, bit for bit.
    venv = tiny_env(env_id, num_envs=3)
    batched = agents.make(name, env=venv, seed=3, **_extra(name))
    b_actions = rollout(batched, env=venv, seed=11).actions
    for b in range(3):
        solo = agents.make(name, env=single, seed=3 + b, **_extra(name))
        s_actions = rollout(solo, env=single, seed=11 + b).actions
        np.testing.assert_array_equal(b_actions[:, b].reshape(-1), s_actions.reshape(-1))


@pytest.mark.parametrize("name", PRIVATE)
def test_private_claim_names_its_accountant_and_noise_backend(name):
    env = tiny_env(HOME_ENV[FEEDBACK[name]])
    claim = agents.make(name, env=env, seed=0, epsilon=1.0).privacy
    assert claim.is_private and claim.certified
    assert claim.accountant and claim.accountant != "none", "a private claim names its accountant"
    assert claim.noise_backend == "fast"  # the default backend, named
    try:
        grid = agents.make(name, env=env, seed=0, epsilon=1.0, noise="grid")
    except ValueError as err:  # a learner that cannot use the grid backend says so
        assert "noise" in str(err) or "grid" in str(err)
    else:
        assert grid.privacy.noise_backend == "grid"
    off = agents.make(name, env=env, seed=0, epsilon=math.inf).privacy
    assert not off.is_private and off.noise_backend == "none"


# ----------------------------------------------------------------------------- privacy
def test_every_private_learner_is_audited():
    """Audit + mutants run once per learner elsewhere; here: nobody is left out."""
    import test_audit_zoo  # the full-information and bandit learners' pinned verdicts

    discrete = {n for n in PRIVATE if FEEDBACK[n] != "oco"}
    assert set(test_audit_zoo.PRIVATE) == discrete
    oco_tests = (Path(__file__).parent / "test_oco_audit.py").read_text()
    for name in sorted(set(PRIVATE) - discrete):
        stem = name.replace("-", "_")
        assert f"def test_{stem}_passes" in oco_tests, f"{name} has no audit in test_oco_audit"
        assert f"def test_{stem}_half_noise_mutant_is_caught" in oco_tests, f"{name}: no mutant"


#: Regret may rise between neighbouring epsilons by at most MONOTONE_SE standard errors of the
#: paired per-run difference (the runs share env seeds), and must fall from the smallest to the
#: largest epsilon by more than DROP_SE of them. Measured margins: docs in tests/README.md.
#: (Declared in dp_experts_env.testing, with the envs: MONOTONE_ENV, 32 runs of T = 2000.)
MONOTONE_SE, DROP_SE, EPSILONS = testing.MONOTONE_SE, testing.DROP_SE, testing.MONOTONE_EPSILONS


#: The monotone checks that take ~10 s (svt-restart's paper-mode detector): slow, not dropped.
SLOW_MONOTONE = {"svt-restart:paper"}


@pytest.mark.parametrize(
    "name", [pytest.param(n, marks=pytest.mark.slow) if n in SLOW_MONOTONE else n for n in PRIVATE]
)
def test_regret_does_not_increase_with_epsilon(name, monkeypatch):
    """check_agent's ``monotone`` check (the envs, seeds and tolerances above are its own).

    Played on the compiled path, the one users' runs play. The numpy path gives the same regrets
    bit for bit (every learner's block entry point against ``act`` on both paths in
    test_path_equivalence.py, the locks on both paths), so CI's numpy pass, which re-ran this
    check through ``act`` every round (~23 s), need not repeat it.
    """
    use_jit_path("compiled", monkeypatch)
    assert _monotone(name, CONTRACT_PARAMS.get(name, {})).passed == ["monotone"]


#: check_agent's ``monotone`` outcome per (learner, keywords): its report, or the ContractError
#: it raised. The check is deterministic (seeded runs at check_agent's fixed sizes), so
#: test_check_agent_passes reads the outcome this module's monotone test computed (or computes
#: it, whichever runs first) instead of playing the same 3 x 32 runs of T = 2,000 again. The key
#: holds the path, so a reader on the numpy path never reads a compiled-path outcome.
_MONOTONE: dict[str, object] = {}


def _monotone(name, params):
    """``check_agent(name, params=params, checks=["monotone"])``, once per module and key."""
    from dp_experts_env._jit import jit_enabled

    key = repr((name, sorted(params.items()), jit_enabled()))
    if key not in _MONOTONE:
        try:
            _MONOTONE[key] = check_agent(name, params=params, checks=["monotone"])
        except testing.ContractError as err:
            _MONOTONE[key] = err
    outcome = _MONOTONE[key]
    if isinstance(outcome, testing.ContractError):
        raise outcome
    return outcome


def test_the_monotone_outcome_is_shared_per_learner_and_keywords_only(monkeypatch):
    """The share's controls: one call per (learner, keywords), a failure raised to every reader
    (the mutant: a cached failure read as a pass), other keywords another call."""
    calls = []

    def fake(name, params, checks):
        calls.append((name, dict(params), tuple(checks)))
        if name == "rises":
            raise testing.ContractError("monotone", name, "mean regret rises")
        return testing.AgentCheckReport(name, "full", True, passed=["monotone"])

    monkeypatch.setattr(sys.modules[__name__], "check_agent", fake)
    monkeypatch.setattr(sys.modules[__name__], "_MONOTONE", {})
    assert _monotone("ok", {}).passed == ["monotone"]
    assert _monotone("ok", {}).passed == ["monotone"]
    assert calls == [("ok", {}, ("monotone",))]
    _monotone("ok", {"tau": 2})
    assert calls[-1] == ("ok", {"tau": 2}, ("monotone",))
    for _ in range(2):
        with pytest.raises(testing.ContractError, match="rises"):
            _monotone("rises", {})
    assert len(calls) == 3


#: Learners whose whole contract (dp_experts_env.testing.check_agent, audit aside) runs in the
#: quick suite; the others run with the slow tests (PPO trains first).
CHECKED_QUICKLY = {"hedge", "exp4", "limited-updates", "dp-ftrl-tree", "ogd"}


@pytest.mark.parametrize(
    "name",
    [n if n in CHECKED_QUICKLY else pytest.param(n, marks=pytest.mark.slow) for n in NAMES],
)
def test_check_agent_passes(name):
    """The contract an outside learner is held to (check_agent) holds for every learner; the
    audit check runs in test_audit_zoo.py / test_oco_audit.py with the full search."""
    params = _extra(name, epsilon=None)
    # A private learner's monotone check is the monotone test's outcome (_MONOTONE), the same
    # call with the same keywords; svt-restart:paper's cases are left as they were.
    shared = name in PRIVATE and name not in SLOW_MONOTONE
    report = check_agent(name, skip=["audit", "monotone"] if shared else ["audit"], params=params)
    assert "batching" in report.passed and "seeding" in report.passed
    if shared:
        assert _monotone(name, params).passed == ["monotone"]


# ----------------------------------------------------------------------------- documentation
def test_every_agent_has_a_row_in_the_algorithms_table():
    table = (Path(__file__).resolve().parents[1] / "docs" / "algorithms.md").read_text()
    missing = [name for name in NAMES if f"| `{name}` |" not in table]
    assert not missing, f"docs/algorithms.md lacks rows for {missing}"


@pytest.mark.parametrize("name", NAMES)
def test_every_agent_docstring_names_its_source(name):
    doc = agents.spec(name).cls.__doc__ or ""
    assert "Source" in doc or "source" in doc, f"{name}'s docstring must name its source"


# ----------------------------------------------------------------------------- input checks
@pytest.mark.parametrize("name", BANDIT)
def test_bandit_learners_refuse_advice_off_the_simplex(name):
    extra = {"epsilon": 1.0} if agents.spec(name).private else {}
    agent = agents.make(name, n_experts=3, horizon=20, n_arms=2, seed=0, **extra)
    good = {"advice": np.full(6, 0.5), "last_action": 0, "last_loss": np.zeros(1)}
    agent.act(good)
    for advice in (np.full(6, 0.7), np.tile([1.5, -0.5], 3)):
        with pytest.raises(ValueError, match="advice"):
            agent.act({**good, "advice": advice, "last_action": agent.last_actions[0]})


# ----------------------------------------------------------------------------- coverage
def _parametrised_names(test) -> set[str]:
    """The learner names a test is parametrised over (its ``name`` argument)."""
    names = set()
    for mark in getattr(test, "pytestmark", []):
        if mark.name != "parametrize":
            continue
        argnames, values = mark.args[0], mark.args[1]
        if isinstance(argnames, str):
            argnames = [a.strip() for a in argnames.split(",")]
        if "name" not in argnames:
            continue
        pos = list(argnames).index("name")
        for value in values:
            value = getattr(value, "values", value)  # a pytest.param(...) carries .values
            names.add(value[pos] if len(argnames) > 1 or isinstance(value, tuple) else value)
    return names


def test_the_contract_covers_every_registered_learner():
    registered = {a["name"]: a for a in agents.available()}
    expected = {
        test_builds_from_public_parameters_alone: set(registered),
        test_plays_every_compatible_env_and_batches_exactly: set(registered),
        test_private_claim_names_its_accountant_and_noise_backend: {
            n for n, a in registered.items() if a["private"]
        },
        test_regret_does_not_increase_with_epsilon: {
            n for n, a in registered.items() if a["private"]
        },
        test_check_agent_passes: set(registered),
        test_every_agent_docstring_names_its_source: set(registered),
        test_bandit_learners_refuse_advice_off_the_simplex: {
            n for n, a in registered.items() if a["feedback"] == "bandit"
        },
    }
    for test, want in expected.items():
        missing = want - _parametrised_names(test)
        assert not missing, f"{test.__name__} does not cover {sorted(missing)}"
    # Every learner meets at least one env id (a learner of a new feedback kind needs an env).
    assert set(registered) == {name for name, _ in PAIRS}
