"""Reset and randomization events: ranges, per-env values, and each mode's timing."""

import mujoco
import torch

from robolearn.compose import compose_train

from ..conftest import random_actions


def pole_mass(env):
    pole = mujoco.mj_name2id(env.model, mujoco.mjtObj.mjOBJ_BODY, "pole")
    return env.physics.model_field("body_mass")[:, pole].clone()


def test_startup_randomization_in_range_per_env_and_persistent(make_env):
    env = make_env(num_envs=64)
    env.reset()
    mass = pole_mass(env)
    nominal = env.model.body_mass[mujoco.mj_name2id(env.model, mujoco.mjtObj.mjOBJ_BODY, "pole")]
    assert torch.all(mass >= 0.8 * nominal - 1e-9) and torch.all(mass <= 1.2 * nominal + 1e-9)
    assert mass.unique().numel() == 64  # drawn per environment
    gain = env.physics.model_field("actuator_gainprm")[:, 0, 0]
    assert torch.all((gain >= 0.9 - 1e-9) & (gain <= 1.1 + 1e-9)) and gain.unique().numel() == 64  # motor gain 1
    gen = torch.Generator().manual_seed(0)
    resets = 0
    for _ in range(100):
        _, _, terminated, truncated = env.step(random_actions(env, gen))
        resets += int((terminated | truncated).sum())
    assert resets > 64  # plenty of episodes ended...
    assert torch.equal(pole_mass(env), mass)  # ...and startup values persisted


def test_reset_randomization_changes_only_on_reset(make_env):
    env = make_env(num_envs=32)
    env.reset()
    hinge = int(env.model.jnt_dofadr[mujoco.mj_name2id(env.model, mujoco.mjtObj.mjOBJ_JOINT, "hinge")])
    before = env.physics.model_field("dof_damping")[:, hinge].clone()
    assert torch.all((before >= 0) & (before <= 0.002))
    ended = torch.zeros(32, dtype=torch.bool)
    for _ in range(40):  # push every cart hard: the poles fall, some episodes end, others not yet
        _, _, terminated, truncated = env.step(torch.full((32, 1), 1.0))
        ended |= terminated | truncated
        if 0 < ended.sum() < 32:
            break
    after = env.physics.model_field("dof_damping")[:, hinge]
    assert 0 < ended.sum() < 32
    assert torch.equal(after[~ended], before[~ended])  # still in their first episode: unchanged
    assert torch.all(after[ended] != before[ended])  # a new episode drew a new value
    assert torch.all((after >= 0) & (after <= 0.002))


def test_reset_state_event_draws_initial_state_in_range(make_env):
    env = make_env(num_envs=128)
    env.reset()
    q, v = env.physics.qpos, env.physics.qvel
    assert q.abs().max() <= 0.1 + 1e-6 and v.abs().max() <= 0.1 + 1e-6
    assert q.std() > 0.03


def test_interval_event_fires_on_schedule(make_env):
    # Scale the pole mass every 0.1 s (5 control steps at 50 Hz); no resets in the way.
    cfg = compose_train(["task=cartpole"])
    assert cfg.task.events.pole_mass.mode.name == "startup"
    env = make_env(overrides=[
        "~task.terminations.pole_fell", "~task.terminations.cart_out", "task.episode_length_s=100",
        "task.events.pole_mass.mode=interval", "task.events.pole_mass.interval_s=[0.1,0.1]",
    ], num_envs=8)
    env.reset()
    history = [pole_mass(env)]
    for _ in range(12):
        env.step(torch.zeros(8, 1))
        history.append(pole_mass(env))
    changed_at = [k for k in range(1, 13) if not torch.equal(history[k], history[k - 1])]
    assert changed_at == [5, 10]


def test_a_held_command_survives_resets_and_resampling(make_env):
    env = make_env("quadruped_flat", num_envs=4)
    name = env.commands.names[0]
    env.commands.hold(name, torch.tensor([0.8, 0.0, 0.0]))
    env.reset()
    for _ in range(600):  # 12 s: past the resampling period and through resets
        env.step(torch.zeros(4, env.num_actions))
    assert torch.equal(env.commands.get(name), torch.tensor([[0.8, 0.0, 0.0]]).expand(4, 3))
