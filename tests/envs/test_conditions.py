"""A checkpoint's training conditions (env_state.load_conditions): what eval, export and play of a
checkpoint restore into an env built afresh, with any number of environments."""

import torch

from robolearn.envs.env_state import load_conditions


def test_command_ranges_adaptive_ranges_and_terrain_levels_carry_over_to_another_env_count(make_env):
    trained = make_env("quadruped_rough", overrides=["randomization=sim2real"], num_envs=8)
    levels = torch.tensor([0, 9, 1, 8, 2, 7, 3, 6])
    trained.terrain.set_levels(levels)
    trained.commands.ranges["base_velocity"][0] = torch.tensor([-0.9, 0.9])
    curriculum = lambda env: next(t.func for t in env.curriculum.terms if t.name == "command_ranges").ranges[0]  # noqa: E731
    curriculum(trained).range[:] = torch.tensor([-0.9, 0.9])  # the curriculum that widened them (lin_vel_x)
    push = trained.events.adaptive["push"]
    push.range[:, 1] += 0.4  # widened by ADR
    state = trained.state_dict()

    fresh = make_env("quadruped_rough", overrides=["randomization=sim2real"], num_envs=12, seed=1)
    initial_push = fresh.events.adaptive["push"].range.clone()
    changed = load_conditions(fresh, state)
    assert torch.equal(fresh.terrain.levels, levels[torch.arange(12) % 8])  # env i: training env i's level, cycling
    assert torch.equal(fresh.terrain.env_origins, fresh.terrain.origins[fresh.terrain.levels, fresh.terrain.cols])
    assert torch.equal(fresh.commands.ranges["base_velocity"], trained.commands.ranges["base_velocity"])
    adr = fresh.events.adaptive["push"]
    assert torch.equal(adr.range, push.range) and not torch.equal(adr.range, initial_push)
    assert torch.equal(adr.per_env, adr.range[torch.arange(12) % adr.range.shape[0]])  # what the event draws from
    assert changed[0] == "command base_velocity ranges lin_vel_x [-0.9, 0.9], lin_vel_y [-0.5, 0.5], ang_vel_z [-1, 1]"
    assert torch.equal(curriculum(fresh).range, torch.tensor([[-0.9, 0.9]]))  # it keeps them there at resets
    assert changed[1:] == ["curriculum command_ranges", "adaptive push.velocity_range [-0.5, 0.9]",
                           "terrain levels (mean 4.5, max 9 of 0-9)"]  # 54 / 12
    assert load_conditions(fresh, state) == []  # nothing differs any more


def test_a_task_without_curricula_has_nothing_to_restore(make_env):
    state = make_env("cartpole", num_envs=4).state_dict()
    assert load_conditions(make_env("cartpole", num_envs=7), state) == []
    assert load_conditions(make_env("cartpole", num_envs=7), {"physics": {}}) == []  # a format-1 checkpoint
