"""Every registered task builds, resets and steps 500 times on every installed backend without NaN,
with its full randomization (the sim2real preset: latency, pushes, gravity tilt, adaptive ranges)."""

import os

import pytest
import torch

from robolearn.compose import compose_train
from robolearn.export.metadata import robot_metadata
from robolearn.physics import BACKENDS
from robolearn.registry import discover_tasks

from ..conftest import random_actions

SLOW = {("arm_reach", "mjx"), ("arm_pose", "mjx"), ("quadruped_flat_gru", "warp"), ("quadruped_flat_gru", "mjx")}
"""Cases CI leaves out for time: MJX compiles the arm's implicitfast step for ~40 s on a 2-core CPU,
and the arm meets nothing there the other tasks do not (it has no contacts at all; arm_pose is the
same arm with one more sensor, which warp and mujoco cover); quadruped_flat_gru
differs from quadruped_flat only in its training recipe (its env is the same: mujoco covers it).
ROBOLEARN_SLOW_CASES=1 runs them too (the arm's passed on 2026-11-24)."""
CASES = [(task, backend) for task in sorted(discover_tasks()) for backend in BACKENDS
         if (task, backend) not in SLOW or os.environ.get("ROBOLEARN_SLOW_CASES") == "1"]  # fmt: skip
# A task with a generated terrain steps here on a small one (2 x 2 tiles): the full-size field is
# hundreds of thousands of samples, which native MuJoCo copies into every environment's model.
SMALL_TERRAIN = ["task.terrain.num_levels=2", "task.terrain.num_cols=2", "task.terrain.tile_size=4.0",
                 "task.terrain.border=1.0", "task.terrain.max_init_level=0"]  # fmt: skip


@pytest.mark.parametrize(("task", "backend"), CASES)
def test_task_builds_and_steps_500_steps_without_nan(make_env, task, backend):
    small = SMALL_TERRAIN if compose_train([f"task={task}"]).task.terrain is not None else []
    # MJX on a 2-core CPU steps the rough terrain's 8 envs at 0.11 s a step and 4 at 0.04 s (2026-11-27)
    n = 4 if backend == "mjx" else 8
    env = make_env(task, overrides=[*small, "randomization=sim2real"], num_envs=n, physics=backend)
    obs = env.reset()
    gen = torch.Generator().manual_seed(1)
    dims = env.observation_dims()
    for _ in range(500):
        obs, reward, terminated, truncated = env.step(random_actions(env, gen))
        for group, value in obs.items():
            assert value.shape == (n, dims[group])
            assert torch.isfinite(value).all(), group
        assert torch.isfinite(reward).all()
    assert env.physics.health() is None

    layout = robot_metadata(env, task)["observation"]
    assert layout["size"] == obs["policy"].shape[1]
    stops = [t["start"] for t in layout["terms"][1:]] + [layout["size"]]
    assert [t["stop"] for t in layout["terms"]] == stops  # contiguous, covering the whole vector
    assert layout["terms"][0]["start"] == 0
