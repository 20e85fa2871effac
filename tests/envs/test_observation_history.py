"""Observation history (`history: K` on a term): the last K values, oldest first, filled with an
episode's first value, advanced once per control step, per env, and saved in checkpoints."""

import pytest
import torch

from robolearn.compose import compose_train
from robolearn.envs.batched_env import BatchedEnv
from robolearn.errors import UserError
from robolearn.registry import get_task

NO_NOISE = ["task.observations.policy.enable_noise=false"]
HISTORY = NO_NOISE + ["task.observations.policy.terms.pole_angle.history=3",
                      "task.observations.policy.terms.pole_angle.scale=2.0"]  # fmt: skip


def _set_angle(env, angles):
    """Place each env's pole at `angles` (cart and velocities unchanged)."""
    qpos, qvel = env.physics.qpos.clone(), env.physics.qvel.clone()
    qpos[:, 1] = torch.as_tensor(angles, dtype=qpos.dtype)
    env.physics.reset(torch.ones(env.num_envs, dtype=torch.bool), qpos, qvel)


def _next_step(env, angles):
    """What a control step does to the observation manager's inputs: a new state, a step counted."""
    _set_angle(env, angles)
    env.episode_steps += 1


def test_layout_spans_the_history(make_env):
    env = make_env("cartpole", HISTORY, num_envs=2)
    layout = {s.name: s for s in env.observations.layout["policy"]}
    angle = layout["pole_angle"]
    assert (angle.start, angle.stop, angle.history, angle.width) == (1, 4, 3, 1)
    assert layout["cart_vel"].start == 4 and env.observation_dims()["policy"] == 6
    assert env.observation_dims()["critic"] == 5  # the task's own critic terms have no history


def test_history_holds_the_last_values_oldest_first_per_env(make_env):
    env = make_env("cartpole", HISTORY, num_envs=2)
    obs = env.observations
    env.reset()
    _set_angle(env, [0.1, -0.1])
    everyone = torch.ones(2, dtype=torch.bool)
    obs.reset(everyone)
    first = obs.compute()["policy"][:, 1:4].clone()
    # an episode's first observation: every slot holds the first value (scaled by 2), not zeros
    assert torch.allclose(first, torch.tensor([[0.2] * 3, [-0.2] * 3]))
    _next_step(env, [0.15, -0.05])
    assert torch.allclose(obs.compute()["policy"][:, 1:4], torch.tensor([[0.2, 0.2, 0.3], [-0.2, -0.2, -0.1]]))
    _next_step(env, [0.05, 0.0])
    expected = torch.tensor([[0.2, 0.3, 0.1], [-0.2, -0.1, 0.0]])
    assert torch.allclose(obs.compute()["policy"][:, 1:4], expected)
    # computed again within the same step (final observations before a reset): no shift, the
    # newest slot is the current value
    _set_angle(env, [0.01, 0.02])
    again = obs.compute()["policy"][:, 1:4]
    assert torch.allclose(again, torch.tensor([[0.2, 0.3, 0.02], [-0.2, -0.1, 0.04]]))
    # env 1 starts a new episode: filled with its first value; env 0 goes on
    obs.reset(torch.tensor([False, True]))
    env.episode_steps[1] = 0
    _next_step(env, [0.12, 0.07])
    assert torch.allclose(obs.compute()["policy"][:, 1:4], torch.tensor([[0.3, 0.02, 0.24], [0.14, 0.14, 0.14]]))
    # the other terms are unaffected: cart position and velocities as without history
    assert torch.equal(obs.buffers["policy"][:, 0], env.physics.qpos[:, 0].float())


def _raw_angle(env):
    return env.physics.qpos[:, 1].float() * 2.0


def test_history_through_env_steps_with_resets(make_env):
    """Stepping the env with random actions (pole falls and time-outs reset envs at different
    steps): each env's slice is its own last three values, refilled at its episode's start."""
    env = make_env("cartpole", HISTORY + ["task.episode_length_s=0.2"], num_envs=8)  # 10 control steps
    gen = torch.Generator().manual_seed(1)
    obs = env.reset()["policy"]
    seen = [[v] * 3 for v in _raw_angle(env).tolist()]
    resets = 0
    for _ in range(30):
        assert torch.allclose(obs[:, 1:4], torch.tensor(seen), atol=1e-6)
        obs, _, terminated, truncated = env.step(torch.rand(8, 1, generator=gen) * 4 - 2)
        obs = obs["policy"]
        now = _raw_angle(env).tolist()
        for i, done in enumerate((terminated | truncated).tolist()):
            seen[i] = [now[i]] * 3 if done else seen[i][1:] + [now[i]]
            resets += done
    assert resets >= 8


def test_final_observations_do_not_advance_the_history(make_env):
    """keep_final_obs computes the observations once more before a reset; the history still
    moves one step per step: the same run with and without it observes the same."""
    cfg = compose_train(["task=cartpole", *HISTORY, "task.episode_length_s=0.2"])
    runs = []
    for keep in (False, True):
        env = BatchedEnv(cfg.task, get_task("cartpole"), 4, physics="mujoco", device="cpu", seed=0,
                         physics_settings={"num_threads": 1}, keep_final_obs=keep)  # fmt: skip
        gen = torch.Generator().manual_seed(2)
        trace = [env.reset()["policy"].clone()]
        for _ in range(25):
            trace.append(env.step(torch.rand(4, 1, generator=gen) * 4 - 2)[0]["policy"].clone())
        if keep:
            ended = env.final_obs["policy"]
            assert ended.shape == (4, 6)
        env.close()
        runs.append(torch.stack(trace))
    assert torch.equal(runs[0], runs[1])


def test_a_checkpoint_restores_the_history(make_env):
    env = make_env("cartpole", HISTORY + ["task.episode_length_s=0.2", "randomization=none"], num_envs=4)
    assert "last_step" in env.observations.STATE
    env.reset()
    actions = torch.rand(20, 4, 1, generator=torch.Generator().manual_seed(3)) * 4 - 2
    for a in actions[:7]:
        env.step(a)
    state = env.state_dict()
    first = [env.step(a)[0]["policy"].clone() for a in actions[7:]]
    held = env.observations.buffers["policy"]
    env.load_state_dict(state)
    assert env.observations.buffers["policy"] is held  # restored in place
    second = [env.step(a)[0]["policy"].clone() for a in actions[7:]]
    assert all(torch.equal(x, y) for x, y in zip(first, second))


def test_a_task_without_history_keeps_its_checkpoint_layout(make_env):
    env = make_env("cartpole", NO_NOISE, num_envs=2)
    assert env.observations.STATE == ("buffers",)
    assert all(s.history == 1 for s in env.observations.layout["policy"])


@pytest.mark.parametrize("value", [0, -2])
def test_a_history_below_one_is_one_line(value):
    with pytest.raises(UserError, match=rf"task.observations.policy.terms.pole_angle.history={value} is out of range; "
                                        r"valid: an integer >= 1"):  # fmt: skip
        compose_train(["task=cartpole", f"task.observations.policy.terms.pole_angle.history={value}"])


def test_a_history_longer_than_the_episode_is_one_line(make_env):
    # 0.1 s episodes at a 0.02 s control period: 5 control steps
    overrides = ["task.episode_length_s=0.1", "task.observations.policy.terms.pole_angle.history=6"]
    with pytest.raises(UserError) as info:
        make_env("cartpole", overrides, num_envs=2)
    message = str(info.value)
    assert "\n" not in message
    assert "task.observations.policy.terms.pole_angle.history=6 is longer than the episode (5 control steps" in message
    assert "valid: 1..5" in message
    make_env("cartpole", ["task.episode_length_s=0.1", "task.observations.policy.terms.pole_angle.history=5"], num_envs=2)
