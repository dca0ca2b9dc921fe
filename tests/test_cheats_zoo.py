"""The cheats zoo (issue 36): learners that must not ``hold`` a paper's claim, as plug-ins.

The cheats live in tests/cheats/dp_cheats.py and come in the way an outside researcher's learner
does: the module named in ``DP_EXPERTS_PLUGINS``, its folder on the path, loaded by the first
registry lookup. Each cheat is run through every claim it targets (tests/_cheat_targets.py) with
``reproduce --quick --agent CHEAT`` (slow: about 1-5 s each); none may ``hold``. The quick part
checks the gate that stops most of them without running the sweeps: the privacy gate at every
gated point of a target, with the certificate each cheat states when built there.

The slow runs play each claim's reference and control rows once per test run
(``_claim_rows.shared_sweep_rows``: the rows of a sweep depend on the sweep and the run's
arguments, not on the learner in the role), not once per cheat; tests/test_reproduce.py's
control runs read the same rows. Six cheats play oblivious games through their own
``play_block`` (K rounds of ``act``, bit for bit: ``test_each_cheats_block_path_is_its_act``);
``cheat-constant`` stays ``act``-only. The slow runs draw each claim's figure but do not encode
it (``_drawn_figures``: no assertion reads the PNG; tests/test_reproduce.py writes the claims'
figures).

Registries, plug-in origins and imported modules are restored afterwards (other test modules
compare the registry with their parametrisations).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import gymnasium as gym
import numpy as np
import pandas as pd
import pytest
from _cheat_targets import TARGETS
from _claim_rows import rows_key, shared_sweep_rows  # noqa: F401 (a fixture)

import agents
import agents.registry as agent_registry
from dp_experts_env import plugins
from dp_experts_env.evaluation import plots
from dp_experts_env.evaluation.claim_gates import audit_once, certificate_check
from dp_experts_env.evaluation.claims import gated_points
from dp_experts_env.evaluation.paper_claims import get_claims
from dp_experts_env.evaluation.reproduce import run_claims

CHEATS = Path(__file__).resolve().parent / "cheats"
PAIRS = [(cheat, claim) for cheat, claims in TARGETS.items() for claim in claims]


@pytest.fixture
def cheats_plugin(monkeypatch):
    """``DP_EXPERTS_PLUGINS=dp_cheats`` with its folder on the path; registries restored."""
    saved = dict(agent_registry._REGISTRY)
    saved_origin = dict(plugins._ORIGIN)
    monkeypatch.syspath_prepend(str(CHEATS))
    monkeypatch.setenv(plugins.ENV_VAR, "dp_cheats")
    monkeypatch.setattr(agent_registry, "_SCANNED", False)
    yield
    agent_registry._REGISTRY.clear()
    agent_registry._REGISTRY.update(saved)
    plugins._ORIGIN.clear()
    plugins._ORIGIN.update(saved_origin)
    sys.modules.pop("dp_cheats", None)


def test_the_zoo_has_eight_cheats_or_more_and_each_aims_at_registered_claims(cheats_plugin):
    assert len(TARGETS) >= 8
    names = {c.name for c in get_claims()}
    for cheat, claims in TARGETS.items():
        assert agents.spec(cheat).name == cheat  # loaded through DP_EXPERTS_PLUGINS
        assert claims and set(claims) <= names
    assert "dp_cheats" in plugins.plugin_modules()


#: The cheats with a block path of their own (``cheat-constant`` has none; the Laplace trackers
#: inherit the built-in's).
BLOCK_CHEATS = (
    "cheat-warmup-hedge",
    "cheat-warmup-hedge-liar",
    "cheat-ftl",
    "cheat-ftl-liar",
    "cheat-hedge-half",
    "cheat-tracker",
)
#: Block sizes of the comparison: single rounds, and the warm-ups' ends (rounds 20 and 80 at
#: epsilon 1 and 0.25) inside blocks.
PLAN = (1, 9, 37, 3, 70, 40)


def _block_vs_act(cls: type, epsilon: float, plan=PLAN, seed: int = 5) -> str:
    """'' when ``play_block`` in blocks of ``plan`` rounds equals ``act`` round by round
    (actions, cumulative losses, weights, clock, last actions, the stream's next uniform);
    else the first difference. Losses: half the rounds on {0, 0.5, 1} (ties), half uniform."""
    horizon, runs, n = sum(plan), 3, 5
    gen = np.random.default_rng(seed)
    coarse = gen.integers(0, 3, (horizon, runs, n)) / 2.0
    obs = np.where(gen.random((horizon, 1, 1)) < 0.5, coarse, gen.random((horizon, runs, n)))
    one, blocks = (cls(n, horizon, num_envs=runs, seed=11, epsilon=epsilon) for _ in range(2))
    by_act = np.stack([one.act(row) for row in obs])
    edges = np.cumsum((0, *plan))
    spans = zip(edges[:-1], edges[1:], strict=True)
    by_block = np.concatenate([blocks.play_block(obs[a:b]) for a, b in spans])
    if not np.array_equal(by_act, by_block):
        return f"actions differ first at round {int(np.argmax((by_act != by_block).any(1))) + 1}"
    for name in ("cum", "w", "t", "last_actions"):
        if not np.array_equal(getattr(one, name, 0), getattr(blocks, name, 0)):
            return f"state {name} differs"
    if not np.array_equal(one.rng.random(), blocks.rng.random()):
        return "the random streams stand at different places"
    return ""


@pytest.mark.filterwarnings("ignore:.*declares no mechanisms")  # the private cheats: undeclared
def test_each_cheats_block_path_is_its_act(cheats_plugin):
    """Each block cheat: ``play_block`` equals ``act`` on a 160-round game at epsilon 1 and 0.25
    (the warm-up's end inside a block) and passes ``check_agent``'s ``paths`` check. Controls: a
    planted block path that learns round 1's feedback is caught, one that loops over ``act``
    passes; ``cheat-constant`` has no block path, the Laplace trackers the built-in's."""
    from dp_experts_env.testing import check_agent

    for cheat in BLOCK_CHEATS:
        cls = agents.spec(cheat).cls
        assert "play_block" in vars(cls) or "play_block" in vars(cls.__base__), cheat
        for epsilon in (1.0, 0.25):
            assert _block_vs_act(cls, epsilon) == "", (cheat, epsilon)
        report = check_agent(cheat, checks=["paths"])
        assert re.search(r"play_block \((compiled|numpy) path\) equals act", report.paths), (
            cheat,
            report.paths,
        )
    assert not hasattr(agents.spec("cheat-constant").cls, "play_block")
    for tracker in ("cheat-overspent", "cheat-uncertified"):
        cls = agents.spec(tracker).cls
        assert cls.play_block is agents.spec("noisy-clipped-hedge").cls.play_block, tracker

    ftl, hedge = agents.spec("cheat-ftl").cls, agents.spec("cheat-hedge-half").cls

    class LearnsRoundOne(ftl):
        def play_block(self, obs):
            sums = np.cumsum(obs, axis=0) + self.cum  # learns the first row even in round 1
            return self._finish(sums, np.argmin(sums, axis=2))

    class Looped(hedge):
        def play_block(self, obs):
            return np.stack([np.asarray(self.act(row), dtype=np.int64) for row in obs])

    assert _block_vs_act(LearnsRoundOne, 1.0).startswith("actions differ first at round 1")
    assert _block_vs_act(Looped, 1.0) == ""


def test_the_cheats_block_paths_refuse_what_act_refuses(cheats_plugin):
    """A NaN or out-of-range loss, a block past the horizon and a wrong shape: ValueErrors."""
    for cheat in BLOCK_CHEATS:
        agent = agents.spec(cheat).cls(3, 10, num_envs=2, seed=0, epsilon=1.0)
        bad = np.full((4, 2, 3), 0.5)
        bad[2, 1, 0] = np.nan
        with pytest.raises(ValueError, match="finite"):
            agent.play_block(bad)
        with pytest.raises(ValueError, match="finite"):
            agent.play_block(np.full((2, 2, 3), 1.5))
        with pytest.raises(ValueError, match="horizon"):
            agent.play_block(np.full((11, 2, 3), 0.5))
        with pytest.raises(ValueError, match="shape"):
            agent.play_block(np.full((2, 3, 3), 0.5))
        assert agent.t == 0, cheat  # nothing played


def _stated(cheat: str, sweep, point) -> dict:
    env = gym.make_vec(
        sweep.env_id, num_envs=1, vectorization_mode="vector_entry_point", **point.env_params
    )
    try:
        built = agents.make(cheat, env=env, epsilon=point.epsilon, seed=0)
        claim = built.privacy
        return {"x": point.x, "epsilon_certified": claim.epsilon, "certified": claim.certified}
    finally:
        env.close()


LIARS = {"cheat-warmup-hedge-liar", "cheat-ftl-liar"}  # a false certificate: the audit's job


def test_every_honest_cheat_fails_the_certificate_of_every_gated_target(cheats_plugin):
    """The certificate each cheat states at the target's points (no privacy: inf; 4 epsilon;
    not certified): every gated target refuses it, without an audit. The liars state a valid
    certificate (next test); the ungated target (the lazy-sampler claim) is left to the slow
    runs (specificity)."""
    checked = 0
    for cheat, name in PAIRS:
        (claim,) = get_claims([name], quick=True)
        tested = claim.with_learner(cheat)
        if cheat in LIARS or not tested.privacy_gated:
            continue
        rows: dict[str, list[dict]] = {}
        for sweep, point in gated_points(tested, quick=True):
            rows.setdefault(sweep.key, []).append(_stated(cheat, sweep, point))
        frames = {k: pd.DataFrame(v) for k, v in rows.items()}
        cert = certificate_check(tested, frames, quick=True)
        assert not cert.passed, (cheat, name, cert)
        checked += 1
    assert checked >= 15


@pytest.mark.parametrize(
    ("cheat", "epsilon", "game"),
    [("cheat-ftl-liar", 1.0, (1000, 10)), ("cheat-warmup-hedge-liar", 0.25, (16000, 10))],
)
def test_the_gates_audit_catches_a_false_certificate(cheat, epsilon, game, cheats_plugin):
    """The liars state epsilon-DP, certified; the gate's short audit finds the violation (the
    warm-up liar only on the point's own game: its leak starts after C / epsilon rounds)."""
    ok, line = audit_once(cheat, {}, epsilon, game=game)
    assert not ok and "VIOLATION" in line, line


@pytest.fixture
def _drawn_figures(monkeypatch):
    """Each claim's figure drawn (its curves from the rows) but not rendered to PNG: the
    verdict is these tests' point and no assertion reads the file (rendering, constrained layout
    and PNG encoding, was ~90 % of a figure's cost); the titles drawn are recorded."""
    drawn: list[list[str]] = []

    def record(fig, path, **savefig):
        drawn.append([ax.get_title() for ax in fig.axes])
        return Path(path)

    monkeypatch.setattr(plots, "write_figure", record)
    return drawn


def test_the_rows_cache_shares_references_only(cheats_plugin):
    """Two cheats on one claim: the role's sweeps get different keys (a cheat never reads
    another's rows), the other sweeps the same keys (what the cache saves); another base seed
    or the claim's own learner is another key; a claim's control in the learner's role (the
    no-learning control runs of tests/test_reproduce.py) is the key of the cheats' control."""
    (claim,) = get_claims(["ars-threshold-collapse"], quick=True)
    roles = set(claim.roles())
    assert roles and len(roles) < len(claim.sweeps)  # a reference to share
    run = {"quick": True, "backend": "serial", "base_seed": 0}
    a, b = claim.with_learner("cheat-overspent"), claim.with_learner("cheat-uncertified")
    for sa, sb, own in zip(a.sweeps, b.sweeps, claim.sweeps, strict=True):
        same = rows_key(a, sa, run) == rows_key(b, sb, run)
        assert same == (sa.key not in roles), sa.key
        assert (rows_key(claim, own, run) == rows_key(a, sa, run)) == (sa.key not in roles)
        assert rows_key(a, sa, run) != rows_key(a, sa, {**run, "base_seed": 1})
    control = claim.with_learner(claim.control.agent, claim.control.params)
    as_learner = claim.with_learner("uniform", dict(claim.control.params))
    for sc, sl in zip(control.sweeps, as_learner.sweeps, strict=True):
        assert rows_key(control, sc, run) == rows_key(as_learner, sl, run), sc.key
        assert rows_key(control, sc, run) != rows_key(control, sc, {**run, "backend": "local"})


@pytest.mark.slow
@pytest.mark.usefixtures("shared_sweep_rows")
@pytest.mark.parametrize(("cheat", "name"), PAIRS, ids=[f"{c}:{n}" for c, n in PAIRS])
def test_no_cheat_holds_a_claim_it_targets(cheat, name, cheats_plugin, tmp_path, _drawn_figures):
    """``reproduce NAME --quick --agent CHEAT`` (serial): the verdict is not ``holds``."""
    (row,) = run_claims(
        get_claims([name], quick=True), tmp_path, quick=True, backend="serial", agent=cheat
    )
    assert _drawn_figures == [[name]]  # the claim's figure, drawn
    assert row["learner"] == cheat
    assert row["verdict"] != "holds", row["reason"]
    assert row["verdict"] in ("not private", "not specific", "inconclusive", "fails",
                              "burn-in", "not in regime", "vacuous"), row["verdict"]  # fmt: skip
