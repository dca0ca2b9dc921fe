"""bench-v2's learned-adversary task (dp_experts_env/bench/frozen_policy.py, learned_task.py).

The frozen adversary ships as data pinned by digest; its numpy forward pass is the SB3 policy's
deterministic action (slow, needs the ``sb3`` extra); the task's cells resume, replay when their
key changes, and react to the learner; bench-v2 keeps bench-v1's tasks (their grids, hence their
stored cells, and the fingerprints are the same), and a v2 card's figures equal its JSON.
"""

from __future__ import annotations

import dataclasses
import json
import math
from importlib import resources

import numpy as np
import pytest
from test_bench_protocol import tiny_protocol

from dp_experts_env.bench import load_protocol
from dp_experts_env.bench.frozen_policy import (
    SHIPPED,
    FrozenPolicy,
    actor_json,
    load_shipped,
    policy_digest,
)
from dp_experts_env.bench.protocol import parse_protocol, protocol_text, task_feedback


@pytest.fixture(scope="module")
def task():
    return load_protocol("bench-v2").tasks[-1]


@pytest.fixture(scope="module")
def policy(task):
    return FrozenPolicy(load_shipped(task.adversary["digest"]))


def test_the_shipped_adversary_has_the_digest_bench_v2_pins(task) -> None:
    assert task.learned and task.name == "learned-adversary"
    arrays = load_shipped(task.adversary["digest"])
    shipped = json.loads(resources.files("dp_experts_env.bench").joinpath(SHIPPED).read_text())
    assert policy_digest(arrays) == task.adversary["digest"] == shipped["digest"]
    assert shipped["training"] == {
        "learner": "hedge",
        "n_experts": 2,
        "horizon": 200,
        "timesteps": 50000,
        "seed": 0,
    }
    assert task.adversary == {
        "digest": task.adversary["digest"],
        "trained_against": "hedge",
        "timesteps": 50000,
        "train_seed": 0,
        "labels": "permuted",
    }


def test_the_shipped_adversary_is_package_data_read_bit_for_bit(task) -> None:
    """The file is found through importlib.resources (package data: test_bench_card.py's
    ``test_every_bench_data_file_is_package_data``); its arrays are float32, each the bytes its
    base64 text holds."""
    import base64

    file = resources.files("dp_experts_env.bench").joinpath(SHIPPED)
    assert file.is_file() and SHIPPED.endswith(".json")
    data = json.loads(file.read_text())
    arrays = load_shipped(task.adversary["digest"])
    assert set(arrays) == {"architecture", *data["arrays"]} and len(data["arrays"]) == 6
    for name, entry in data["arrays"].items():
        assert arrays[name].dtype == np.float32 and list(arrays[name].shape) == entry["shape"]
        assert arrays[name].astype("<f4").tobytes() == base64.b64decode(entry["float32_le_base64"])
    assert sum(a.size for k, a in arrays.items() if k != "architecture") == 5186


def test_an_edited_adversary_is_refused_and_a_re_encoding_is_not(task, tmp_path):
    """Mutant: one weight of the shipped actor moved by 1e-6 (caught by the digest). Harmless:
    the same arrays written again through ``actor_json`` (same digest, loads)."""
    arrays = load_shipped(task.adversary["digest"])
    same = tmp_path / "same_adversary.json"
    same.write_text(actor_json(arrays, {"note": "re-encoded"}))
    assert policy_digest(load_shipped(task.adversary["digest"], same)) == task.adversary["digest"]
    edited = dict(arrays)
    name = "w/action_net.bias"
    edited[name] = arrays[name] + np.float32(1e-6)
    assert not np.array_equal(edited[name], arrays[name])
    (tmp_path / "edited_adversary.json").write_text(actor_json(edited, {"note": "edited"}))
    with pytest.raises(ValueError, match="needs a new protocol version"):
        load_shipped(task.adversary["digest"], tmp_path / "edited_adversary.json")
    (tmp_path / "other.json").write_text('{"format": "something else"}')
    with pytest.raises(ValueError, match="is not a frozen actor"):
        load_shipped(task.adversary["digest"], tmp_path / "other.json")


def test_bench_v2_is_bench_v1_plus_the_learned_task() -> None:
    v1, v2 = load_protocol("bench-v1"), load_protocol("bench-v2")
    assert v2.version == "bench-v2" and v2.digest != v1.digest
    assert v2.tasks[:-1] == v1.tasks and v2.quick_tasks[:-1] == v1.quick_tasks
    same = ("epsilons", "rosters", "min_gap", "base_seed", "n_record")
    assert [getattr(v2, k) for k in same] == [getattr(v1, k) for k in same]
    learned = v2.tasks[-1]
    assert learned.capability == "static-worst-case" and task_feedback(learned) == "full"
    assert v2.capabilities() == v1.capabilities()
    assert all(not t.learned for t in v1.tasks)


def test_v2_grid_tasks_play_v1_cells_and_fingerprints() -> None:
    """A v1 results folder resumes under v2: the grid tasks' cells are the same (their store
    keys are the cells' content), and the fingerprints sample the same tasks."""
    from dp_experts_env.bench.fingerprint import fingerprint_tasks
    from dp_experts_env.bench.runner import Entrant, task_grid

    v1, v2 = load_protocol("bench-v1"), load_protocol("bench-v2")
    who = [Entrant("noisy-clipped-hedge", {})]
    for t1, t2 in zip(v1.quick_tasks, v2.quick_tasks, strict=False):
        assert task_grid(v1, t1, who).cells() == task_grid(v2, t2, who).cells()
    assert fingerprint_tasks(v2) == fingerprint_tasks(v1)


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda t: t.replace("train_seed = 0\n", "train_seed = 0\ncolour = 1\n"), "adversary"),
        (lambda t: t.replace('env = "DPExperts-Attack-v0"', 'env = "DPExperts-Shift-v0"'), "plays"),
        (lambda t: t.split("\n[task.adversary]")[0], "needs an adversary"),
        (lambda t: t.replace("{n_experts = 2, horizon = 200}", "{horizon = 200}"), "n_experts"),
        (lambda t: t.replace('labels = "permuted"', 'labels = "fixed"'), "must be 'permuted'"),
        (lambda t: t.replace('labels = "permuted"\n', ""), "adversary must have exactly"),
    ],
)
def test_bad_learned_tasks_are_refused_by_name(edit, message) -> None:
    text = edit(protocol_text("bench-v2"))
    assert text != protocol_text("bench-v2")
    with pytest.raises(ValueError, match=message):
        parse_protocol(text)


def test_the_adversary_reacts_to_the_learner(task, policy) -> None:
    """Its losses depend on the learner's plays: FTL and uniform play see different sequences,
    and two seeds of a randomised learner too; the same seed replays the same sequence."""
    from dp_experts_env.attack.env import AttackCore

    def losses(name: str, seeds: list[int]) -> np.ndarray:
        core = AttackCore(len(seeds), learner=name, n_experts=2, horizon=200)
        obs, seen = core.reset(seeds), []
        for _ in range(200):
            obs, _, info = core.step(policy(obs))
            seen.append(info["losses"])
        return np.stack(seen, axis=1)

    ftl, uni = losses("follow-the-leader", [0]), losses("uniform", [0, 1, 0])
    assert not np.array_equal(ftl[0], uni[0])
    assert not np.array_equal(uni[0], uni[1]) and np.array_equal(uni[0], uni[2])


def test_known_regrets_and_the_scale(task, policy) -> None:
    """Uniform play loses about T/2 (the adversary keeps a gap); the references stay small;
    a private learner's regret falls as epsilon grows (its privacy-utility curve)."""
    from dp_experts_env.bench.learned_task import play_learned

    short = dataclasses.replace(task, seeds=16)

    def mean(name: str, eps: float | None = None) -> float:
        return float(np.mean(play_learned(short, policy, name, {}, eps)["static_regret"]))

    assert 80 < mean("uniform") < 110
    assert max(mean("hedge"), mean("follow-the-leader"), mean("fixed-share")) < 8
    curve = [mean("noisy-clipped-hedge", e) for e in (0.5, 1.0, 8.0)]
    assert curve[0] > curve[1] > curve[2]
    record = play_learned(short, policy, "noisy-clipped-hedge", {}, 1.0)
    assert float(record["epsilon_certified"]) == 1.0 and record["certified"]


def test_label_permutations_are_balanced_public_and_relabel_both_ways(task) -> None:
    """Each learner label is each adversary label in half the runs (N = 2, 64 and 16 seeds),
    the same on every call; the wrapped policy sees the observation's expert blocks in its
    labels and answers in the learner's (checked against a policy echoing its last-loss block)."""
    from dp_experts_env.bench.learned_task import PermutedPolicy, label_permutations

    for seeds in (64, 16):
        perms = label_permutations(dataclasses.replace(task, seeds=seeds))
        assert perms.shape == (seeds, 2) and (np.sort(perms, axis=1) == [0, 1]).all()
        assert np.bincount(perms[:, 0]).tolist() == [seeds // 2, seeds // 2]
        assert np.array_equal(perms, label_permutations(dataclasses.replace(task, seeds=seeds)))
    perms = np.array([[0, 1], [1, 0]])
    obs = np.random.default_rng(3).random((2, 13)).astype(np.float32)
    seen = []

    def echo(o: np.ndarray) -> np.ndarray:
        seen.append(o)
        return o[:, 5:7]  # the last loss vector, in the adversary's labels

    out = PermutedPolicy(echo, perms)(obs)
    assert np.array_equal(seen[0][0], obs[0]) and np.array_equal(out, obs[:, 5:7])
    swapped = obs[1, 1:].reshape(6, 2)[:, ::-1].ravel()
    assert np.array_equal(seen[0][1], np.concatenate([obs[1, :1], swapped]))
    with pytest.raises(ValueError, match="permutations"):
        PermutedPolicy(echo, np.array([[0, 0], [1, 0]]))
    with pytest.raises(ValueError, match="obs"):
        PermutedPolicy(echo, perms)(obs[:, :12])


@pytest.fixture
def fixed_label_learners():
    """Planted learners that never learn: always expert 0, always expert 1 (removed after)."""
    from agents import registry
    from agents.full_info import FollowTheLeader

    saved = dict(registry._REGISTRY)
    for label in (0, 1):

        class Fixed(FollowTheLeader):
            """Planted: always the same expert label."""

            def _distribution(self, round_index: int, label=label) -> np.ndarray:
                law = np.zeros((self.num_envs, self.n_experts))
                law[:, label] = 1.0
                return law

            def _choose(self, obs: np.ndarray, label=label) -> np.ndarray:
                self.rng.random()
                return np.full(self.num_envs, label, dtype=np.int64)

        registry.register(f"test-always-expert-{label}", private=False, summary="planted")(Fixed)
    yield
    registry._REGISTRY.clear()
    registry._REGISTRY.update(saved)


def test_a_fixed_label_learner_cannot_game_the_task(
    task, policy, fixed_label_learners, monkeypatch
):
    """Normalised score (uniform 0, follow-the-leader 1) on the task's 64 seeds: always-expert-0
    and always-expert-1 score at most 0.1 (measured -0.005 each) while Hedge keeps at least 0.9
    (measured 0.96). Mutant: the labels left unpermuted (identity permutations), where
    always-expert-0 scores above 0.9 (the reviewer's issue-42 finding) -- caught."""
    from dp_experts_env.bench import learned_task

    def scores(names: list[str]) -> dict[str, float]:
        mean = {
            n: float(np.mean(learned_task.play_learned(task, policy, n, {}, None)["static_regret"]))
            for n in ["uniform", "follow-the-leader", *names]
        }
        control, best = mean["uniform"], mean["follow-the-leader"]
        return {n: (control - mean[n]) / (control - best) for n in names}

    fair = scores(["test-always-expert-0", "test-always-expert-1", "hedge"])
    assert fair["test-always-expert-0"] <= 0.1 and fair["test-always-expert-1"] <= 0.1
    assert fair["hedge"] >= 0.9
    monkeypatch.setattr(
        learned_task, "label_permutations", lambda t: np.tile(np.arange(2), (t.seeds, 1))
    )
    assert scores(["test-always-expert-0"])["test-always-expert-0"] > 0.9


def test_the_cell_key_covers_the_forward_pass(task, tmp_path, monkeypatch) -> None:
    """Mutant: frozen_policy.py with its output negated changes the cell key (its cells play
    again). Harmless: a byte-identical copy keeps the key. (Any edit of the file, a comment's
    included, changes the key: safe, it only plays the cells again.)"""
    from pathlib import Path

    from dp_experts_env.bench import frozen_policy, learned_task

    def key() -> str:
        return json.dumps(learned_task._cell_key(task, "hedge", {}, None), sort_keys=True)

    source = Path(frozen_policy.__file__).read_text()
    negated = source.replace("return np.clip(mean,", "return np.clip(-mean,")
    assert negated != source
    (tmp_path / "fp_copy.py").write_text(source)
    (tmp_path / "fp_negated.py").write_text(negated)
    monkeypatch.syspath_prepend(str(tmp_path))
    shipped = key()
    for module, same in (("fp_copy", True), ("fp_negated", False)):
        monkeypatch.setattr(
            learned_task, "RUNNER_SOURCES", ("dp_experts_env.bench.learned_task", module)
        )
        assert (key() == shipped) is same


def test_cells_resume_and_replay_when_their_key_changes(task, tmp_path, monkeypatch) -> None:
    """A second call reads the stored cells (playing would fail); another seed count, or a torn
    cell file, plays again."""
    from dp_experts_env.bench import learned_task

    small = dataclasses.replace(task, seeds=3)
    players = [("uniform", {}, "uniform"), ("noisy-clipped-hedge", {}, "nch")]
    first = learned_task.play_learned_task(small, players, (1.0, math.inf), tmp_path)
    assert len(first) == 3 + 2 * 3 and set(first["agent"]) == {"uniform", "nch"}
    assert first.loc[first["agent"] == "uniform", "epsilon"].tolist() == [math.inf] * 3

    def refuse(*args, **kwargs):
        raise AssertionError("a stored cell was played again")

    monkeypatch.setattr(learned_task, "play_learned", refuse)
    again = learned_task.play_learned_task(small, players, (1.0, math.inf), tmp_path)
    assert again.equals(first)
    with pytest.raises(AssertionError, match="played again"):
        learned_task.play_learned_task(
            dataclasses.replace(task, seeds=4), players, (1.0, math.inf), tmp_path
        )
    cell = sorted((tmp_path / "cells").iterdir())[0]
    cell.write_text(cell.read_text()[:20])
    with pytest.raises(AssertionError, match="played again"):
        learned_task.play_learned_task(small, players, (1.0, math.inf), tmp_path)


def test_the_task_plays_without_torch_or_sb3(task, tmp_path, monkeypatch) -> None:
    """The play is numpy only: with torch and Stable-Baselines3 unimportable it still runs
    (a module set to None in ``sys.modules`` raises ImportError on import)."""
    import sys

    from dp_experts_env.bench import learned_task

    for name in ("torch", "stable_baselines3"):
        monkeypatch.setitem(sys.modules, name, None)
    with pytest.raises(ImportError):
        import torch  # noqa: F401
    frame = learned_task.play_learned_task(
        dataclasses.replace(task, seeds=2), [("hedge", {}, "hedge")], (1.0,), tmp_path
    )
    assert len(frame) == 2 and np.isfinite(frame["static_regret"]).all()


@pytest.fixture(scope="module")
def v2_card(tmp_path_factory):
    from dp_experts_env.bench.command import bench_learner

    out = tmp_path_factory.mktemp("v2card")
    protocol = tiny_protocol(("shift", "learned-adversary"), horizon=200, seeds=3)
    bench_learner("noisy-clipped-hedge", {}, out, quick=True, protocol=protocol, backend="serial")
    return out


def test_a_v2_card_shows_the_learned_task_and_its_figures_equal_the_json(v2_card) -> None:
    from test_bench_card import html_matches_json

    data = json.loads((v2_card / "bench.json").read_text())
    task = next(t for t in data["tasks"] if t["name"] == "learned-adversary")
    assert task["status"] == "scored" and task["env"] == "DPExperts-Attack-v0"
    assert task["scale"]["control"] == "uniform"
    assert set(task["scores"]) == {"1", "inf"}
    assert data["capabilities"]["static-worst-case"]["status"] == "scored"
    assert html_matches_json((v2_card / "card.html").read_text(), data) == []
    assert "| learned-adversary |" in (v2_card / "card.md").read_text()


@pytest.mark.slow
def test_the_numpy_pass_is_the_sb3_policys_deterministic_action(task, policy) -> None:
    """On the training env (Hedge, N = 2, T = 200), along episodes the SB3 policy drives through
    the task's label permutations (its first 8 runs'), the float64 numpy pass gives its actions
    to 1e-5 and the same regrets to 1e-6; a policy with one weight moved (the mutant) does not."""
    pytest.importorskip("stable_baselines3")
    import torch
    from gymnasium import spaces
    from stable_baselines3.common.policies import ActorCriticPolicy

    from dp_experts_env.attack.env import AttackCore
    from dp_experts_env.bench.learned_task import PermutedPolicy, label_permutations

    arrays = load_shipped(task.adversary["digest"])
    arch = json.loads(str(arrays["architecture"]))
    boxes = [
        spaces.Box(b["low"], b["high"], tuple(b["shape"]), dtype=np.dtype(b["dtype"]))
        for b in (arch["observation"], arch["action"])
    ]
    sb3 = ActorCriticPolicy(
        *boxes, lambda _: 0.0, net_arch=arch["net_arch"], activation_fn=torch.nn.Tanh
    )
    state = {k[2:]: torch.from_numpy(v) for k, v in arrays.items() if k.startswith("w/")}
    missing, unexpected = sb3.load_state_dict(state, strict=False)
    assert not unexpected and all(
        k.startswith(("value_net", "mlp_extractor.value")) or k == "log_std" for k in missing
    )
    sb3.set_training_mode(False)
    mutant = dict(arrays)
    mutant["w/action_net.bias"] = arrays["w/action_net.bias"] + np.float32(0.01)
    perms = label_permutations(dataclasses.replace(task, seeds=8))
    assert 0 < int(perms[:, 0].sum()) < 8  # both labellings are checked
    numpy_pass = PermutedPolicy(policy, perms)
    wrong = PermutedPolicy(FrozenPolicy(mutant), perms)
    torch_pass = PermutedPolicy(lambda o: sb3.predict(o, deterministic=True)[0], perms)

    def regrets(choose) -> tuple[np.ndarray, float, float]:
        core = AttackCore(8, learner="hedge", n_experts=2, horizon=200)
        obs, gap, gap_wrong = core.reset(list(range(1_000_000, 1_000_008))), 0.0, 0.0
        for _ in range(200):
            torch_action = torch_pass(obs)
            gap = max(gap, float(np.abs(numpy_pass(obs) - torch_action).max()))
            gap_wrong = max(gap_wrong, float(np.abs(wrong(obs) - torch_action).max()))
            obs, _, info = core.step(choose(obs, torch_action))
        return info["static_regret"], gap, gap_wrong

    by_torch, gap, gap_wrong = regrets(lambda obs, a: a)
    by_numpy, _, _ = regrets(lambda obs, a: numpy_pass(obs))
    assert gap < 1e-5 and gap_wrong > 1e-3
    np.testing.assert_allclose(by_numpy, by_torch, rtol=0, atol=1e-6)
