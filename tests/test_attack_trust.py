"""Issue 39, the attack's outputs: link-safe, no pickle, nothing left outside, sizes up front.

Each test plants a case and checks it is caught by name with no outside file touched: symbolic
links at every output name (and a linked folder), a pickled model given to ``--replay`` (an
SB3 zip, the same renamed ``.npz``, an archive with an object array), SB3's ``SB3-<date>``
folder in the temporary folder, and sizes that could not run. The controls: a clean folder is
written, and a saved ``adversary.npz`` replays the trained model's actions float for float.
"""

from __future__ import annotations

import io
import json
import tempfile
import time
import zipfile

import numpy as np
import pytest
from test_attack import TrapPolicy

from dp_experts_env.attack.run import OUTPUTS, AttackConfig, run_attack
from dp_experts_env.cli import main
from dp_experts_env.evaluation.store import UnsafeResultsFolder


def _config(**kw):
    base = {"learner": "hedge", "n_experts": 2, "horizon": 30, "eval_runs": 4}
    return AttackConfig(**{**base, "kind": "oblivious", "oblivious": True, **kw})


@pytest.mark.parametrize("name", OUTPUTS)
def test_a_symlinked_output_is_refused_and_nothing_outside_is_written(tmp_path, name):
    outside = tmp_path / "outside.txt"
    outside.write_text("precious")
    out = tmp_path / "out"
    out.mkdir()
    (out / name).symlink_to(outside)
    with pytest.raises(UnsafeResultsFolder, match=f"{name} is a symbolic link"):
        run_attack(_config(), out, model=TrapPolicy(2))
    assert outside.read_text() == "precious"
    assert sorted(p.name for p in out.iterdir()) == [name]  # nothing else written either


def test_a_symlinked_folder_is_refused_and_a_clean_one_written(tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / "out").symlink_to(elsewhere)
    with pytest.raises(UnsafeResultsFolder, match="symbolic link"):
        run_attack(_config(), tmp_path / "out", model=TrapPolicy(2))
    assert list(elsewhere.iterdir()) == []
    # Control: a plain folder gets the report and the sequence, and no temporary file.
    report = run_attack(_config(), tmp_path / "clean", model=TrapPolicy(2))
    names = sorted(p.name for p in (tmp_path / "clean").iterdir())
    assert names == ["attack.json", "attack.png", "sequence.npy"]
    written = json.loads((tmp_path / "clean" / "attack.json").read_text())
    assert written["sequence"] == "sequence.npy"
    assert np.load(tmp_path / "clean" / "sequence.npy", allow_pickle=False).shape == (30, 2)
    assert "model" not in report  # a scripted policy is not a network: nothing to save


@pytest.mark.parametrize(
    "argv, option",
    [
        (["--horizon", "1000000000000"], "--eval-runs 64 x --horizon 1000000000000"),
        (["--n-experts", "100000000"], "--eval-runs 64 x --horizon 200 x --n-experts 100000000"),
        (["--eval-runs", "1000000000"], "--eval-runs 1000000000"),
        (["--switches", "300"], "--switches (n_switches) must be below the horizon T=200"),
    ],
)
def test_oversize_attacks_are_refused_up_front(argv, option, tmp_path, capsys):
    start = time.process_time()
    assert main(["attack", "hedge", *argv, "--out", str(tmp_path / "out")]) == 2
    assert option in capsys.readouterr().err
    assert time.process_time() - start < 2.0  # nothing built, nothing trained
    assert not (tmp_path / "out").exists()


@pytest.fixture
def private_tmp(monkeypatch, tmp_path):
    """The system temporary folder, made private to this test (others share /tmp)."""
    folder = tmp_path / "systmp"
    folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    monkeypatch.delenv("SB3_LOGDIR", raising=False)
    return folder


def _left(folder):
    """What is left in the temporary folder, torch's own compile cache aside.

    ``torchinductor_<user>`` is made by ``import torch._dynamo`` (any torch optimizer) once per
    user and reused by every torch process: a cache, not a leftover of a run.
    """
    return [p.name for p in folder.iterdir() if not p.name.startswith("torchinductor_")]


@pytest.mark.slow
def test_the_saved_adversary_is_data_replays_exactly_and_pickles_are_refused(
    tmp_path, private_tmp, capsys
):
    pytest.importorskip("stable_baselines3")
    from stable_baselines3 import PPO

    from dp_experts_env.attack.model import MODEL_FILE, PickledModel, load_policy
    from dp_experts_env.attack.run import train_adversary

    args = ["--horizon", "16", "--eval-runs", "4", "--kind", "oblivious", "--oblivious"]
    config = AttackConfig(
        learner="hedge", n_experts=2, horizon=16, timesteps=256, eval_runs=4, seed=0,
        kind="oblivious", oblivious=True,
    )  # fmt: skip
    model, _ = train_adversary(config)
    report = run_attack(config, tmp_path / "out", model=model)
    assert _left(private_tmp) == []  # no SB3-<date> log folder (issue 39)
    saved = tmp_path / "out" / MODEL_FILE
    assert report["model"] == MODEL_FILE
    with np.load(saved, allow_pickle=False) as stored:  # plain arrays only
        assert json.loads(str(stored["architecture"]))["net_arch"] == [64, 64]
    policy = load_policy(saved)
    obs = np.random.default_rng(0).uniform(0, 1, (64, *policy.observation_space.shape))
    obs = obs.astype(np.float32)
    np.testing.assert_array_equal(
        policy.predict(obs, deterministic=True)[0], model.predict(obs, deterministic=True)[0]
    )
    # dp-experts attack --replay: the same evaluation as the trained model's, no training.
    code = main(["attack", "hedge", *args, "--out", str(tmp_path / "re"), "--replay", str(saved)])
    assert code in (0, 3), capsys.readouterr().err
    again = json.loads((tmp_path / "re" / "attack.json").read_text())
    assert again["learned_regret"] == report["learned_regret"]
    assert again["replay_regret"] == report["replay_regret"]
    capsys.readouterr()
    # Pickled models, refused by name before anything is unpickled.
    sb3_zip = tmp_path / "adversary.zip"
    model.save(sb3_zip)
    renamed = tmp_path / "renamed.npz"
    renamed.write_bytes(sb3_zip.read_bytes())
    buffer = io.BytesIO()
    np.save(buffer, np.array([object()], dtype=object), allow_pickle=True)
    with zipfile.ZipFile(tmp_path / "objects.npz", "w") as archive:
        archive.writestr("architecture.npy", buffer.getvalue())
    for path, named in (
        (sb3_zip, "adversary.zip is a pickled model"),
        (renamed, "renamed.npz holds"),
        (tmp_path / "objects.npz", "objects.npz is not a saved adversary"),
    ):
        with pytest.raises(ValueError, match=named):
            load_policy(path)
        assert main(["attack", "hedge", *args, "--out", str(tmp_path / "x"), "--replay",
                     str(path)]) == 2  # fmt: skip
        assert f"--replay {path}" in capsys.readouterr().err
    with pytest.raises(PickledModel):
        load_policy(sb3_zip)
    # A model of other sizes is refused by name too.
    code = main(["attack", "hedge", *args, "--n-experts", "3", "--out", str(tmp_path / "y"),
                 "--replay", str(saved)])  # fmt: skip
    assert code == 2 and "needs" in capsys.readouterr().err
    assert _left(private_tmp) == []
    assert isinstance(PPO, type)


@pytest.mark.slow
def test_the_rl_baseline_leaves_nothing_in_the_temporary_folder(private_tmp):
    pytest.importorskip("stable_baselines3")
    from dp_experts_env.rl import train_ppo

    model, _ = train_ppo(
        "DPExperts-Shift-v0", {"n_experts": 3, "horizon": 16}, timesteps=64, num_envs=2,
        ppo_kwargs={"n_steps": 16, "batch_size": 16, "n_epochs": 1},
    )  # fmt: skip
    assert model.num_timesteps >= 64
    assert _left(private_tmp) == []
