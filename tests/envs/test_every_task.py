"""Every registered task builds, resets and steps on every installed backend without NaN."""

import pytest
import torch

from robolearn.export.metadata import robot_metadata
from robolearn.physics import BACKENDS
from robolearn.registry import discover_tasks

from ..conftest import random_actions

CASES = [(task, backend) for task in sorted(discover_tasks()) for backend in BACKENDS]


@pytest.mark.parametrize(("task", "backend"), CASES)
def test_task_builds_and_steps_200_steps_without_nan(make_env, task, backend):
    env = make_env(task, num_envs=8, physics=backend)
    obs = env.reset()
    gen = torch.Generator().manual_seed(1)
    dims = env.observation_dims()
    for _ in range(200):
        obs, reward, terminated, truncated = env.step(random_actions(env, gen))
        for group, value in obs.items():
            assert value.shape == (8, dims[group])
            assert torch.isfinite(value).all(), group
        assert torch.isfinite(reward).all()

    layout = robot_metadata(env, task)["observation"]
    assert layout["size"] == obs["policy"].shape[1]
    stops = [t["start"] for t in layout["terms"][1:]] + [layout["size"]]
    assert [t["stop"] for t in layout["terms"]] == stops  # contiguous, covering the whole vector
    assert layout["terms"][0]["start"] == 0
