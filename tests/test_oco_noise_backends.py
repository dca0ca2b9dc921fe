"""The OCO learners use the noise backend they are given or refuse it, and `--noise grid`
leaves the refusing ones on their own sampler (as for the lazy samplers of the experts suite)."""

from __future__ import annotations

import numpy as np
import pytest

import agents
from dp_experts_env.cli import apply_noise
from dp_experts_env.evaluation import AgentEntry, EnvEntry, Grid


def _points(agent, horizon=6):
    rng = np.random.default_rng(0)
    obs, out = np.zeros((agent.num_envs, agent.dim)), []
    for _ in range(horizon):
        out.append(np.array(agent.act(obs)))
        obs = rng.uniform(-0.5, 0.5, size=obs.shape)
    return np.stack(out)


@pytest.mark.parametrize(
    ("name", "params"),
    [("p-comw", {}), ("p-comw-lazy", {}), ("dp-ftrl-oco", {"law": "gaussian"})],
)
def test_samplers_without_a_laplace_release_refuse_the_lattice(name, params):
    with pytest.raises(ValueError, match="noise='grid' does not apply to .*it accepts 'fast'"):
        agents.make(name, dim=2, horizon=6, noise="grid", **params)
    cls = agents.spec(name).cls
    allowed = cls.noise_backends_for(params) if "law" in params else cls.noise_backends
    assert allowed == ("fast",)


def test_dp_ftrl_oco_uses_the_lattice_it_is_given():
    kw = {"dim": 2, "horizon": 6, "num_envs": 4, "seed": 3}
    grid, fast = agents.make("dp-ftrl-oco", noise="grid", **kw), agents.make("dp-ftrl-oco", **kw)
    assert grid.privacy.noise_backend == "grid" and fast.privacy.noise_backend == "fast"
    # Other variates: a backend that is really used changes the play.
    assert not np.array_equal(_points(grid), _points(fast))


def test_noise_option_skips_the_oco_learners_that_refuse_it():
    grid = Grid(
        agents=[
            "p-comw",
            "ogd",
            "dp-ftrl-oco",
            AgentEntry("dp-ftrl-oco", {"law": "gaussian"}, label="dp-ftrl-oco (gaussian)"),
        ],
        envs=[EnvEntry("DPExperts-OCO-v0", {"horizon": 8, "dim": 2})],
    )
    kept = apply_noise(grid, "grid")
    params = [dict(a.params) for a in grid.agents]
    assert params == [{}, {}, {"noise": "grid"}, {"law": "gaussian"}]
    assert sorted(kept) == ["dp-ftrl-oco", "p-comw"]  # the Gaussian entry and the sampler
