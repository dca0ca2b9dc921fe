"""The cheats zoo (issue 36): learners that must not ``hold`` a paper's claim, as plug-ins.

The cheats live in tests/cheats/dp_cheats.py and come in the way an outside researcher's learner
does: the module named in ``DP_EXPERTS_PLUGINS``, its folder on the path, loaded by the first
registry lookup. Each cheat is run through every claim it targets (tests/_cheat_targets.py) with
``reproduce --quick --agent CHEAT`` (slow: about 1-5 s each); none may ``hold``. The quick part
checks the gate that stops most of them without running the sweeps: the privacy gate at every
gated point of a target, with the certificate each cheat states when built there.

The slow runs play each claim's reference and control rows once per module (``_reference_rows``:
the rows of a sweep depend on the sweep and the run's arguments, not on the learner in the role),
not once per cheat.

Registries, plug-in origins and imported modules are restored afterwards (other test modules
compare the registry with their parametrisations).
"""

from __future__ import annotations

import sys
from pathlib import Path

import gymnasium as gym
import pandas as pd
import pytest
from _cheat_targets import TARGETS

import agents
import agents.registry as agent_registry
from dp_experts_env import plugins
from dp_experts_env.evaluation import reproduce
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


def _rows_key(claim, sweep, run: dict) -> str:
    """What a sweep's rows depend on: the claim, the sweep (learner and keywords) and the run."""
    return repr((claim.name, sweep, sorted(run.items())))


@pytest.fixture(scope="module")
def _reference_rows():
    """``reproduce.sweep_rows`` with a module-wide cache keyed by the claim, the sweep (its
    learner and keywords included) and the run's arguments: the references and the control of a
    claim are played once for all its cheats; the cheats' own sweeps never share a key."""
    played = reproduce.sweep_rows
    cache: dict[str, pd.DataFrame] = {}

    def cached(claim, sweep, out, **run):
        key = _rows_key(claim, sweep, run)
        if key not in cache:
            cache[key] = played(claim, sweep, out, **run)
        return cache[key].copy()

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(reproduce, "sweep_rows", cached)
        yield cache


def test_the_rows_cache_shares_references_only(cheats_plugin):
    """Two cheats on one claim: the role's sweeps get different keys (a cheat never reads
    another's rows), the other sweeps the same keys (what the cache saves); another base seed
    or the claim's own learner is another key."""
    (claim,) = get_claims(["ars-threshold-collapse"], quick=True)
    roles = set(claim.roles())
    assert roles and len(roles) < len(claim.sweeps)  # a reference to share
    run = {"quick": True, "backend": "serial", "base_seed": 0}
    a, b = claim.with_learner("cheat-overspent"), claim.with_learner("cheat-uncertified")
    for sa, sb, own in zip(a.sweeps, b.sweeps, claim.sweeps, strict=True):
        same = _rows_key(a, sa, run) == _rows_key(b, sb, run)
        assert same == (sa.key not in roles), sa.key
        assert (_rows_key(claim, own, run) == _rows_key(a, sa, run)) == (sa.key not in roles)
        assert _rows_key(a, sa, run) != _rows_key(a, sa, {**run, "base_seed": 1})


@pytest.mark.slow
@pytest.mark.parametrize(("cheat", "name"), PAIRS, ids=[f"{c}:{n}" for c, n in PAIRS])
def test_no_cheat_holds_a_claim_it_targets(cheat, name, cheats_plugin, tmp_path, _reference_rows):
    """``reproduce NAME --quick --agent CHEAT`` (serial): the verdict is not ``holds``."""
    (row,) = run_claims(
        get_claims([name], quick=True), tmp_path, quick=True, backend="serial", agent=cheat
    )
    assert row["learner"] == cheat
    assert row["verdict"] != "holds", row["reason"]
    assert row["verdict"] in ("not private", "not specific", "inconclusive", "fails",
                              "burn-in", "not in regime", "vacuous"), row["verdict"]  # fmt: skip
