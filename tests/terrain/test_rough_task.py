"""quadruped_rough: the terrain in the env (placement, height scan against MuJoCo's rays), the
terrain and command curricula, and checkpoints (500 steps on every backend: envs/test_every_task)."""

import mujoco
import numpy as np
import pytest
import torch

from robolearn.mdp.state import root_addresses, root_pos_w

# A small grid keeps the tests fast: 3 levels x 6 columns of 4 m tiles.
SMALL = ["task.terrain.num_levels=3", "task.terrain.num_cols=6", "task.terrain.tile_size=4.0",
         "task.terrain.border=1.0", "task.terrain.max_init_level=1"]  # fmt: skip


def rough(make_env, num_envs=12, physics="mujoco", overrides=()):
    return make_env("quadruped_rough", overrides=[*SMALL, *overrides], num_envs=num_envs, physics=physics)


def test_robots_start_on_their_tiles_at_ground_height(make_env):
    env = rough(make_env)
    env.reset()
    terrain = env.terrain
    assert terrain.levels.max() <= 1 and terrain.cols.tolist() == [i % 6 for i in range(12)]
    offset = root_pos_w(env) - terrain.env_origins
    assert offset[:, :2].abs().max() <= 0.5 + 1e-5  # reset_base xy_range
    standing = float(env.default_qpos[0, 2])
    assert torch.allclose(offset[:, 2], torch.full((12,), standing), atol=1e-5)  # z = tile centre + base height
    assert torch.equal(terrain.env_origins, terrain.origins[terrain.levels, terrain.cols])


def test_height_scan_equals_mujoco_rays_on_the_terrain(make_env):
    env = rough(make_env, num_envs=6)
    env.reset()
    for _ in range(5):
        env.step(torch.zeros(6, 12))
    scan = env.observations.buffers["critic"][:, -187:]  # 17 x 11 points, clipped to +-1
    q, _ = root_addresses(env)
    data = mujoco.MjData(env.model)
    terrain_geoms = {g for g in range(env.model.ngeom) if env.model.geom(g).name.startswith("terrain")}
    assert len(terrain_geoms) > 1  # 26 m along y: in 16 m blocks (terrain/mjcf.py), rays cross their edges
    for i in range(6):
        data.qpos[:] = env.physics.qpos[i].double().numpy()
        mujoco.mj_forward(env.model, data)
        base = data.qpos[q : q + 3].copy()
        yaw = np.arctan2(data.xmat[1, 3], data.xmat[1, 0])  # body 1 = trunk: x axis projected on the ground
        data.qpos[q + 2] += 100.0  # lift the robot out of the rays' way
        mujoco.mj_forward(env.model, data)
        xs, ys = np.meshgrid(np.arange(-0.8, 0.8001, 0.1), np.arange(-0.5, 0.5001, 0.1), indexing="ij")
        wx = base[0] + np.cos(yaw) * xs.ravel() - np.sin(yaw) * ys.ravel()
        wy = base[1] + np.sin(yaw) * xs.ravel() + np.cos(yaw) * ys.ravel()
        ground = []
        for x, y in zip(wx, wy):
            geomid = np.zeros(1, np.int32)
            dist = mujoco.mj_ray(env.model, data, np.array([x, y, 5.0]), np.array([0, 0, -1.0]),
                                 np.array([1, 0, 0, 0, 0, 0], np.uint8), 1, -1, geomid)  # group 0: the terrain only
            assert geomid[0] in terrain_geoms
            ground.append(5.0 - dist)
        expected = np.clip(base[2] - np.array(ground) - 0.34, -1, 1)
        np.testing.assert_allclose(scan[i].numpy(), expected, atol=2e-4)
    assert scan.std() > 0.01  # not a flat world: rows of different terrain


def walked(env, mask, metres):
    """Put the masked robots `metres` from their tile centre along +x (state as the episode ends)."""
    q, _ = root_addresses(env)
    qpos = env.physics.qpos.clone()
    qpos[:, q] = env.terrain.env_origins[:, 0] + metres
    env.physics.reset(mask, qpos, env.physics.qvel.clone())


def test_terrain_curriculum_moves_envs_up_down_and_wraps(make_env):
    env = rough(make_env)
    env.reset()
    terrain = env.terrain
    terrain.set_levels(torch.tensor([1] * 12))
    command = env.commands.get("base_velocity")
    command[:] = torch.tensor([1.0, 0.0, 0.0])  # asks for 20 m per episode: 10 m is the bar to stay
    far, short = torch.arange(12) < 4, (torch.arange(12) >= 4) & (torch.arange(12) < 8)
    walked(env, far, 2.5)  # more than half a 4 m tile: up
    walked(env, short, 0.3)  # too little for its command: down
    walked(env, ~(far | short), 0.3)
    ended = far | short
    env._reset_envs(ended)
    assert terrain.levels[far].tolist() == [2] * 4 and terrain.levels[short].tolist() == [0] * 4
    assert terrain.levels[~ended].tolist() == [1] * 4  # episodes still running: not moved
    assert torch.equal(terrain.env_origins, terrain.origins[terrain.levels, terrain.cols])
    assert ((root_pos_w(env)[ended, :2] - terrain.env_origins[ended, :2]).abs() <= 0.5 + 1e-5).all()  # re-placed
    stats = env.pop_episode_stats()
    assert stats["curriculum/terrain_level_mean"] == pytest.approx(1.0)
    # top level + up -> a random level (not all stay at the top); bottom level + down stays at 0
    terrain.set_levels(torch.tensor([2] * 6 + [0] * 6))
    everyone = torch.ones(12, dtype=torch.bool)
    walked(env, torch.arange(12) < 6, 2.5)
    walked(env, torch.arange(12) >= 6, 0.0)
    env._reset_envs(everyone)
    assert (terrain.levels[:6] < 2).any() and terrain.levels[:6].unique().numel() >= 2
    assert terrain.levels[6:].tolist() == [0] * 6


def test_command_curriculum_widens_the_forward_range_when_tracking_is_good(make_env):
    env = rough(make_env, overrides=["task.curriculum.command_ranges.params.min_episodes=12"])
    env.reset()
    ranges = env.commands.ranges["base_velocity"]
    assert ranges[0].tolist() == [-0.5, 0.5]
    k = env.rewards.names.index("track_lin_vel_xy")
    everyone = torch.ones(12, dtype=torch.bool)
    env.episode_steps.fill_(100)
    env.rewards.episode_sums[k] = 0.5 * env.rewards.weights[k] * 100  # tracking 0.5 < 0.8: no change
    env._reset_envs(everyone)
    assert ranges[0].tolist() == [-0.5, 0.5]
    env.episode_steps.fill_(100)
    env.rewards.episode_sums[k] = 0.9 * env.rewards.weights[k] * 100
    env._reset_envs(everyone)
    assert torch.allclose(ranges[0], torch.tensor([-0.6, 0.6])) and ranges[1].tolist() == [-0.5, 0.5]
    drawn = env.commands.get("base_velocity")[:, 0]
    assert drawn.abs().max() <= 0.6 + 1e-6
    assert env.pop_episode_stats()["curriculum/base_velocity/lin_vel_x/high"] == pytest.approx(0.6)


def test_checkpoint_keeps_levels_and_the_command_curriculum(make_env):
    overrides = ["task.curriculum.command_ranges.params.min_episodes=24"]
    env = rough(make_env, overrides=overrides)
    env.reset()
    env.terrain.set_levels(torch.tensor([2, 0, 1] * 4))
    k = env.rewards.names.index("track_lin_vel_xy")
    everyone = torch.ones(12, dtype=torch.bool)

    def good_episodes(e):
        e.episode_steps.fill_(100)
        e.rewards.episode_sums[k] = 0.9 * e.rewards.weights[k] * 100
        e._reset_envs(everyone)

    good_episodes(env)  # 12 of the 24 episodes the curriculum waits for
    other = rough(make_env, overrides=overrides)
    other.reset()
    other.load_state_dict(env.state_dict())
    assert torch.equal(other.terrain.levels, env.terrain.levels)
    assert torch.equal(other.terrain.env_origins, env.terrain.env_origins)
    for e in (env, other):  # the restored tally completes the 24: both widen now
        good_episodes(e)
        assert torch.allclose(e.commands.ranges["base_velocity"][0], torch.tensor([-0.6, 0.6]))
