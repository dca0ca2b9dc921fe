"""Shared test helpers: the tiny registered environments and the one rollout loop.

Test modules import them directly (``from conftest import rollout, tiny_env``): pytest puts this
directory on ``sys.path`` (the suite has no ``__init__.py``), so ``conftest`` is the module pytest
itself loaded. The hand-written loss models for the environment tests live in ``env_fixtures.py``.

It also registers the suite's two session plugins: ``_path_split`` (which tests the numpy-path
pass repeats, tests/README.md "Two paths, one run") and the behaviour locks' byte report.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import _path_split  # a sibling module of the suite (tests/ is on sys.path)
import gymnasium as gym
import numpy as np
import pytest

import dp_experts_env


def pytest_configure(config: Any) -> None:
    config.pluginmanager.register(_path_split.PathSplit(config), "dp-experts-path-split")


def pytest_terminal_summary(terminalreporter: Any) -> None:
    from _lock_arrays import BYTE_REPORT

    if BYTE_REPORT:
        terminalreporter.write_line(
            "behaviour locks: within the tolerance but not bit for bit the reference machine's "
            "bytes (expected on another CPU or BLAS kernel; tests/README.md): "
            + ", ".join(sorted(BYTE_REPORT))
        )

#: The horizon of the tiny environments: long enough for every learner to update a few times.
TINY_HORIZON = 40
#: Per feedback kind, the sizes of the tiny environments (N experts, K arms, OCO dimension).
TINY_SIZES = {"full": {"n_experts": 4}, "bandit": {"n_arms": 3}, "oco": {"dim": 3}}


def tiny_env(env_id: str, num_envs: int | None = None, horizon: int = TINY_HORIZON, **kwargs):
    """A small instance of a registered env id (a vector env when ``num_envs`` is given).

    Sizes come from :data:`TINY_SIZES` for the id's feedback kind (the advice env gets 6 experts
    over its arms); ``kwargs`` override them.
    """
    feedback = dp_experts_env.env_entry(env_id).feedback
    params = {"horizon": horizon, **TINY_SIZES[feedback]}
    if env_id == "DPExperts-BanditAdvice-v0":
        params["n_experts"] = 6
    params.update(kwargs)
    if num_envs is None:
        return gym.make(env_id, **params)
    return gym.make_vec(
        env_id, num_envs=num_envs, vectorization_mode="vector_entry_point", **params
    )


class Rollout(NamedTuple):
    """What :func:`rollout` saw.

    Attributes:
        actions: (T, B) int64 actions (continuous actions keep the agent's dtype and shape).
        losses: (T, B) losses of the played actions (bandit games and envs), else None.
        records: ``record(agent)`` after every ``act``, stacked with ``np.array`` (None without
            ``record``).
        info: the env's last ``info`` (env rollouts), else None.
    """

    actions: np.ndarray
    losses: np.ndarray | None
    records: Any
    info: dict | None


def _stack(values: list) -> np.ndarray:
    return np.array(values)


def rollout(
    agent: Any,
    losses: np.ndarray | None = None,
    *,
    advice: np.ndarray | None = None,
    env: Any = None,
    seed: Any = None,
    record: Callable[[Any], Any] | None = None,
    flush: bool = False,
    rounds: int | None = None,
) -> Rollout:
    """Play ``agent`` (anything with ``act(obs)``) and return its actions; the suite's one loop.

    The rounds come from one of three sources:

    * ``losses`` (T, B, N) alone -- full information: the observation of round t is the loss
      matrix of round t - 1 (zeros before round 1), as the envs hand it over.
    * ``losses`` and ``advice`` -- a bandit game with expert advice: ``advice`` is (T, N, K)
      (every run sees the same advice) or (T, B, N, K); ``losses`` is (T, K) or (T, B, K). The
      observation is ``{"advice", "last_action", "last_loss"}`` with zeros before round 1.
      ``flush`` hands the agent round T's feedback after its last ``act`` (an env never does:
      that loss cannot change any action), so a batch ending at round T is released too.
    * ``env`` -- a registered single or vector env, reset with ``seed``; the loop runs until
      every run terminated (or for ``rounds`` steps).

    Args:
        agent: the learner (B = ``agent.num_envs`` runs where the source does not fix B).
        losses: the loss array of a recorded game (see above).
        advice: the advice of a bandit game.
        env: an environment to play instead of a recorded game.
        seed: the env's reset seed (int or one per run).
        record: called as ``record(agent)`` after every ``act``; its values are stacked.
        flush: bandit games only (see above).
        rounds: env rollouts only: stop after this many steps.

    Returns:
        A :class:`Rollout`.
    """
    records: list = []
    if env is not None:
        return _env_rollout(agent, env, seed, record, rounds)
    if losses is None:
        raise ValueError("rollout needs losses= or env=")
    if advice is not None:
        return _bandit_rollout(agent, np.asarray(losses), np.asarray(advice), record, flush)
    t_max, b, n = losses.shape
    actions = np.empty((t_max, b), dtype=np.int64)
    obs = np.zeros((b, n))
    for t in range(t_max):
        actions[t] = np.asarray(agent.act(obs)).reshape(b)
        if record is not None:
            records.append(record(agent))
        obs = losses[t]
    return Rollout(actions, None, _stack(records) if record is not None else None, None)


def _bandit_rollout(agent, losses, advice, record, flush) -> Rollout:
    horizon = advice.shape[0]
    b = int(agent.num_envs)
    shared = advice.ndim == 3
    n, k = advice.shape[-2:]
    last_a, last_l = np.zeros(b, np.int64), np.zeros(b)
    actions = np.zeros((horizon, b), np.int64)
    paid = np.zeros((horizon, b))
    records: list = []
    for t in range(horizon + int(flush)):
        adv = advice[min(t, horizon - 1)]
        obs = {
            "advice": np.broadcast_to(adv.reshape(-1), (b, n * k))
            if shared
            else adv.reshape(b, n * k),
            "last_action": last_a,
            "last_loss": last_l,
        }
        if t == horizon:
            # act() refuses a round past the horizon, so hand over round T's feedback alone.
            agent._learn(agent._parse_obs(obs)[0])
            break
        a = np.asarray(agent.act(obs)).reshape(b)
        if record is not None:
            records.append(record(agent))
        actions[t] = a
        row = losses[t]
        last_a = a
        last_l = row[a] if row.ndim == 1 else row[np.arange(b), a]
        paid[t] = last_l
    return Rollout(actions, paid, _stack(records) if record is not None else None, None)


def _env_rollout(agent, env, seed, record, rounds) -> Rollout:
    obs, info = env.reset(seed=seed)
    actions, paid, records = [], [], []
    step = 0
    while rounds is None or step < rounds:
        action = agent.act(obs)
        actions.append(np.copy(action))
        if record is not None:
            records.append(record(agent))
        obs, reward, terminated, _, info = env.step(action)
        paid.append(-np.asarray(reward, dtype=float))
        step += 1
        if rounds is None and np.all(terminated):
            break
    return Rollout(
        np.array(actions), np.array(paid), _stack(records) if record is not None else None, info
    )


#: The two paths every result must agree on: compiled kernels (numba, the default with the
#: `fast` extra) and the numpy reference (``DP_EXPERTS_NO_JIT=1``).
JIT_PATHS = ("compiled", "numpy")


def use_jit_path(path: str, monkeypatch: Any) -> None:
    """Switch this test to one of :data:`JIT_PATHS` (skips "compiled" without numba).

    From here on the test's path is its own choice, so CI's numpy-path pass need not repeat it
    (``_path_split``: a path consulted before this call still counts).
    """
    import pytest

    from dp_experts_env._jit import numba_available

    _path_split.note_forced()
    if path == "numpy":
        monkeypatch.setenv("DP_EXPERTS_NO_JIT", "1")
        return
    if not numba_available():
        pytest.skip("numba is not installed: the compiled path is the numpy path")
    monkeypatch.delenv("DP_EXPERTS_NO_JIT", raising=False)
    monkeypatch.delenv("DP_EXPERTS_NUMBA", raising=False)


def pytest_collection_modifyitems(config: Any, items: list[Any]) -> None:
    """The tests that use ``ray_cluster`` run last, one after another (stable otherwise).

    An idle Ray instance with its workers costs ~0.07 s of CPU per second of wall time
    (measured: 4 s a minute), more than a Ray start (~5-7 s) once a few minutes of other tests
    separate two Ray tests; run together at the end, they share one start and it shuts down
    with the session right after them.
    """
    items.sort(key=lambda item: "ray_cluster" in getattr(item, "fixturenames", ()))


@pytest.fixture(scope="session")
def ray_cluster() -> Any:
    """One local Ray instance (8 logical CPUs) for every in-process Ray test of the run.

    Starting Ray costs ~5-7 s of CPU (its GCS, raylet and first workers); each Ray test used to
    pay it. The backend reuses an initialised Ray (``started_here`` is false), so the tests
    share the instance and its warm workers; the tests that use it run last
    (:func:`pytest_collection_modifyitems`) and it shuts down when the session ends. Skips
    where the ``ray`` extra is missing.
    """
    ray = pytest.importorskip("ray")
    if not ray.is_initialized():
        ray.init(num_cpus=8, include_dashboard=False, log_to_driver=False)
    yield ray
    ray.shutdown()
