"""The env step pipeline: terminations vs time-outs, rewards, resets, episode statistics."""

import math

import pytest
import torch

from robolearn.errors import UserError


def test_time_out_is_truncated_not_terminated(make_env):
    # No terminations: every episode ends by time-out after episode_length_s / dt steps.
    env = make_env(overrides=["~task.terminations.pole_fell", "~task.terminations.cart_out", "task.episode_length_s=0.1"], num_envs=4)
    assert env.max_episode_length == 5
    env.reset()
    env.episode_length.zero_()
    for step in range(1, 6):
        _, _, terminated, truncated = env.step(torch.zeros(4, 1))
        assert not terminated.any()
        assert truncated.all() == (step == 5)
    assert (env.episode_length == 0).all()  # reset inside step
    stats = env.pop_episode_stats()
    assert stats["episodes"] == 4 and stats["mean_episode_length"] == 5


def test_termination_ends_episode_and_resets_state(make_env):
    # Start every episode with the pole at 0.5 rad, beyond the 0.4 rad bound: terminates at step 1.
    env = make_env(overrides=["task.events.reset_state.params.position_range=[0.5,0.5]",
                              "task.events.reset_state.params.velocity_range=[0,0]"], num_envs=3)
    env.reset()
    obs, reward, terminated, truncated = env.step(torch.zeros(3, 1))
    assert terminated.all() and not truncated.any()
    assert env.pop_episode_stats()["termination/pole_fell"] == 1.0
    # the returned observation is already the next episode's first one (pole back at 0.5 rad)
    assert torch.allclose(obs["critic"][:, 1], torch.full((3,), 0.5), atol=1e-6)


def test_reward_is_the_weighted_sum_of_terms(make_env):
    env = make_env(overrides=["task.events.reset_state.params.position_range=[0.2,0.2]",
                              "task.events.reset_state.params.velocity_range=[0,0]"], num_envs=2)
    env.reset()
    _, reward, terminated, _ = env.step(torch.full((2, 1), 0.5))
    assert not terminated.any()
    x, theta = env.physics.qpos[:, 0], env.physics.qpos[:, 1]
    theta_dot = env.physics.qvel[:, 1]
    expected = 1.0 + torch.cos(theta) - 0.05 * x**2 - 0.005 * theta_dot**2 - 0.001 * 0.25
    assert torch.allclose(reward, expected, atol=1e-6)
    assert torch.allclose(env.rewards.episode_sums.sum(0), reward)


def test_actions_map_to_clipped_ctrl(make_env):
    env = make_env(overrides=["task.action.scale=0.5"], num_envs=3)
    env.reset()
    env.step(torch.tensor([[1.0], [4.0], [-3.0]]))
    assert env.actions.ctrl[:, 0].tolist() == [0.5, 1.0, -1.0]  # ctrlrange [-1, 1]
    assert torch.equal(env.actions.last_action, torch.zeros(3, 1))
    env.step(torch.zeros(3, 1))
    assert env.actions.last_action[:, 0].tolist() == [1.0, 4.0, -3.0]


def test_observation_noise_only_in_noisy_group(make_env):
    env = make_env(num_envs=64)
    obs = env.reset()
    clean = torch.cat([env.physics.qpos, env.physics.qvel], dim=1)
    assert torch.allclose(obs["critic"][:, :4], clean)
    noise = obs["policy"] - clean
    assert noise[:, :2].abs().max() <= 0.005 + 1e-6 and noise[:, 2:].abs().max() <= 0.02 + 1e-6
    assert noise.abs().max() > 0


def test_unknown_term_function_lists_valid_ones(make_env):
    with pytest.raises(UserError, match=r"reward term 'alive': unknown function 'nope'; valid: .*is_alive") as info:
        make_env(overrides=["task.rewards.alive.func=nope"])
    assert "bad_orientation" not in str(info.value)  # a termination: not offered as a reward
    # a termination lists terminations only (and the task's own terms), with the closest name
    with pytest.raises(UserError) as info:
        make_env(overrides=["task.terminations.pole_fell.func=base_below"])
    message = str(info.value)
    assert message.startswith("termination term 'pole_fell': unknown function 'base_below' (did you mean "
                              "'base_height_below'?); valid: "), message  # fmt: skip
    assert "bad_orientation" in message and "is_alive" not in message and "action_l2" not in message
    assert message.endswith("(robolearn terms --kind termination shows their params)")


def test_same_seed_same_trajectory_other_seed_another(make_env):
    runs = []
    for seed in (7, 7, 8):
        env = make_env(num_envs=8, seed=seed)
        env.reset()
        gen = torch.Generator().manual_seed(3)
        for _ in range(50):
            obs, *_ = env.step(torch.rand(8, 1, generator=gen) * 2 - 1)
        runs.append(obs["policy"].clone())
    assert torch.equal(runs[0], runs[1])
    assert not torch.equal(runs[0], runs[2])
    assert math.isfinite(runs[0].sum().item())


def test_episode_length_statistics_count_steps_actually_taken(make_env):
    # Time-outs start at random progress (to spread them out); statistics must still report the
    # steps each episode really lasted: here every episode terminates on its first step.
    env = make_env(overrides=["task.events.reset_state.params.position_range=[0.5,0.5]"], num_envs=16)
    env.reset()
    assert env.episode_length.float().mean() > 5
    env.step(torch.zeros(16, 1))
    stats = env.pop_episode_stats()
    assert stats["episodes"] == 16 and stats["mean_episode_length"] == 1.0


def test_a_physics_health_problem_stops_training_at_the_iteration_read(make_env, monkeypatch):
    env = make_env(num_envs=4)
    env.reset()
    monkeypatch.setattr(env.physics, "health", lambda: "buffers overflowed: raise physics.nconmax")
    env.step(torch.zeros(4, 1))  # the step itself never reads the device
    with pytest.raises(UserError, match="raise physics.nconmax"):
        env.pop_episode_stats()


def test_a_step_marks_the_end_of_each_phase_in_order(make_env):
    """The profiler's hook (scripts/profile_env_step.py): every phase, once, in STEP_PHASES order,
    with and without envs ending in the step; the step's results are those of an unmarked step."""
    from robolearn.envs.batched_env import STEP_PHASES

    marked, plain = make_env("cartpole", num_envs=8, seed=1), make_env("cartpole", num_envs=8, seed=1)
    for env in (marked, plain):
        env.reset()
    action = torch.ones(8, marked.num_actions)
    for step in range(300):  # pushed one way: the pole falls and episodes end
        seen = []
        out = marked.step(action, mark=seen.append)
        assert tuple(seen) == STEP_PHASES, step
        for a, b in zip(out, plain.step(action)):
            if isinstance(a, dict):
                assert all(torch.equal(a[k], b[k]) for k in a)
            else:
                assert torch.equal(a, b)
    assert marked.stats.summary({})["episodes"] > 0
