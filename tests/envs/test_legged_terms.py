"""Commands and legged-robot terms against hand-computed values."""

import math

import pytest
import torch

from robolearn.errors import UserError
from robolearn.mdp import metrics, rewards, state, terminations

FLAT = "quadruped_flat"


def set_base(env, quat=(1.0, 0.0, 0.0, 0.0), lin_vel=(0.0, 0.0, 0.0), ang_vel=(0.0, 0.0, 0.0)):
    qpos, qvel = env.default_qpos.clone(), torch.zeros_like(env.default_qvel)
    qpos[:, 3:7] = torch.tensor(quat)
    qvel[:, 0:3], qvel[:, 3:6] = torch.tensor(lin_vel), torch.tensor(ang_vel)
    env.physics.reset(torch.ones(env.num_envs, dtype=torch.bool), qpos, qvel)


def test_commands_stay_in_range_and_resample_on_their_period(make_env):
    env = make_env(FLAT, ["task.commands.base_velocity.standing_probability=0.25"], num_envs=400)
    env.reset()
    cmd = env.commands.get("base_velocity").clone()
    assert (cmd[:, 0].abs() <= 1.0).all() and (cmd[:, 1].abs() <= 0.5).all() and (cmd[:, 2].abs() <= 1.0).all()
    standing = (cmd == 0).all(dim=1).float().mean().item()
    assert 0.15 < standing < 0.35  # 25 % asked to stand still
    assert cmd[:, 0].std() > 0.4  # spread over the range, not constant
    period = env.commands.time_left[0].clone()
    assert ((period >= 4.0) & (period <= 6.0)).all()
    env.commands.step(3.9)
    assert torch.equal(env.commands.get("base_velocity"), cmd)  # nobody due before 4 s
    env.commands.step(2.2)  # everyone due by 6.1 s: all drew new commands (ties at exactly 0 aside)
    changed = (env.commands.get("base_velocity") != cmd).any(dim=1).float().mean().item()
    assert changed > 0.9


def test_tracking_rewards(make_env):
    env = make_env(FLAT, num_envs=1)
    env.reset()
    env.commands.get("base_velocity")[:] = torch.tensor([1.0, 0.0, 0.5])
    yaw = math.pi / 2  # base turned 90 degrees: world +y is its forward axis
    set_base(env, quat=(math.cos(yaw / 2), 0.0, 0.0, math.sin(yaw / 2)), lin_vel=(0.0, 0.8, 0.0), ang_vel=(0.0, 0.0, 0.5))
    # body-frame velocity (0.8, 0, 0): error 0.2 m/s -> exp(-0.04 / 0.25)
    assert rewards.track_lin_vel_xy_exp(env, "base_velocity", 0.5).item() == pytest.approx(math.exp(-0.16), rel=1e-5)
    assert rewards.track_ang_vel_z_exp(env, "base_velocity", 0.5).item() == pytest.approx(1.0)
    assert rewards.lin_vel_z_l2(env).item() == pytest.approx(0.0, abs=1e-10)


def test_orientation_terms(make_env):
    env = make_env(FLAT, num_envs=1)
    env.reset()
    roll = 0.3
    set_base(env, quat=(math.cos(roll / 2), math.sin(roll / 2), 0.0, 0.0), ang_vel=(0.2, -0.1, 0.7))
    assert state.gravity_b(env)[0].tolist() == pytest.approx([0.0, -math.sin(roll), -math.cos(roll)], abs=1e-6)
    assert rewards.flat_orientation_l2(env).item() == pytest.approx(math.sin(roll) ** 2, rel=1e-5)
    assert rewards.ang_vel_xy_l2(env).item() == pytest.approx(0.05, rel=1e-5)
    assert not terminations.bad_orientation(env, 0.31).item() and terminations.bad_orientation(env, 0.29).item()
    # the base 0.2 m above its environment's origin, which is 0.1 m up
    env.env_origins[:] = torch.tensor([5.0, 0.0, 0.1])
    qpos = env.default_qpos.clone()
    qpos[:, :3] = torch.tensor([5.0, 0.0, 0.1 + 0.2])
    env.physics.reset(torch.ones(1, dtype=torch.bool), qpos, torch.zeros_like(env.default_qvel))
    assert terminations.base_height_below(env, 0.21).item() and not terminations.base_height_below(env, 0.19).item()


def test_gravity_in_the_base_frame_is_minus_the_third_row_of_the_rotation():
    """Bit for bit the closed form (2 (wy - xz), -2 (yz + wx), 2 (xx + yy) - 1) for any quaternion
    (gravity_b computes it in fewer kernels), and by hand for a pitch and a yaw."""
    from types import SimpleNamespace

    def fake_env(q):
        return SimpleNamespace(physics=SimpleNamespace(qpos=q), scene=SimpleNamespace(root=SimpleNamespace(quat=slice(0, 4))))

    q = torch.randn(100_000, 4, generator=torch.Generator().manual_seed(0))
    q[::2] = torch.nn.functional.normalize(q[::2], dim=1)  # unit, and not
    w, x, y, z = q.unbind(1)
    closed_form = torch.stack([2 * (w * y - x * z), -2 * (y * z + w * x), 2 * (x * x + y * y) - 1], dim=1)
    assert torch.equal(state.gravity_b(fake_env(q)), closed_form)
    pitch, yaw = 0.4, 1.1  # nose down by `pitch` about y: gravity leans toward +x in the base frame
    turned = torch.tensor([[math.cos(pitch / 2), 0.0, math.sin(pitch / 2), 0.0], [math.cos(yaw / 2), 0.0, 0.0, math.sin(yaw / 2)]])
    assert state.gravity_b(fake_env(turned)).tolist() == [pytest.approx([math.sin(pitch), 0.0, -math.cos(pitch)], abs=1e-6),
                                                          pytest.approx([0.0, 0.0, -1.0], abs=1e-6)]  # fmt: skip


def test_joint_limit_and_torque_terms(make_env):
    env = make_env(FLAT, ["~task.events.pd_gains", "~task.events.motor_strength"], num_envs=1)
    env.reset()
    qpos = env.default_qpos.clone()
    qpos[0, 7] = 1.0  # FL hip: range +-1.047, soft (90 %) limit 0.9423
    env.physics.reset(torch.ones(1, dtype=torch.bool), qpos, torch.zeros_like(env.default_qvel))
    assert rewards.joint_pos_limits(env, 0.9)(env).item() == pytest.approx(1.0 - 0.9 * 1.047, rel=1e-5)
    env.actions.process(torch.zeros(1, 12))  # targets = default pose; FL hip is 1.0 - 0.1 = 0.9 rad off
    force = state.actuator_force(env)[0]
    assert force[0].item() == pytest.approx(-25.0 * 0.9, rel=1e-5) and force[1:].abs().max() < 1e-5
    assert rewards.joint_torques_l2(env).item() == pytest.approx(22.5**2, rel=1e-5)


def _geared_servo(spec) -> None:
    """cartpole's cart motor (gear 10) as a geared position servo with a force limit."""
    import mujoco

    servo = spec.actuator("slide")
    servo.set_to_position(kp=3.0, kv=0.5)
    servo.gear = [10, 0, 0, 0, 0, 0]
    servo.forcerange, servo.forcelimited = [-2.0, 2.0], mujoco.mjtLimited.mjLIMITED_TRUE


@pytest.mark.parametrize("edit", [None, _geared_servo], ids=["motor", "servo"])
def test_actuator_force_is_the_torque_mujoco_puts_on_the_joint_gear_included(make_env, installed_tasks, edit):
    """A geared actuator (cartpole's cart motor: gear 10, ctrl 1 = 10 N) pushes its joint with gear x
    its force, and a servo's bias reads the actuator's length gear x q: joint_torques_l2 and
    mechanical_power were off by the gear (gymnasium's humanoid: 25-300)."""
    import mujoco

    from robolearn import registry

    base = registry.get_task("cartpole")
    installed_tasks["cartpole_geared"] = registry.TaskPlugin(config=base.config, terms=base.terms, edit_spec=edit)
    env = make_env("cartpole_geared", ["randomization=none"], num_envs=1)
    env.reset()
    qpos, qvel = torch.tensor([[0.05, 0.1]]), torch.tensor([[0.3, -0.2]])
    env.physics.reset(torch.ones(1, dtype=torch.bool), qpos, qvel)
    env.actions.process(torch.tensor([[0.4]]))
    data = mujoco.MjData(env.model)
    data.qpos[:], data.qvel[:], data.ctrl[:] = qpos[0].numpy(), qvel[0].numpy(), env.actions.ctrl[0].numpy()
    mujoco.mj_forward(env.model, data)
    expected = data.qfrc_actuator[0]  # the cart's slide
    assert abs(expected) > 0.5
    assert state.actuator_force(env)[0, 0].item() == pytest.approx(expected, rel=1e-5)
    assert rewards.joint_torques_l2(env).item() == pytest.approx(expected**2, rel=1e-5)
    assert metrics.mechanical_power(env).item() == pytest.approx(abs(expected * 0.3), rel=1e-5)


def test_a_joint_past_its_limit_by_the_watchdogs_margin_ends_the_episode(make_env):
    """joint_pos_past_limits ends an episode where the deploy watchdog would stop the robot: a
    limited joint more than `margin` past its range, one side or the other."""
    env = make_env(FLAT, num_envs=3)
    env.reset()
    qpos = env.default_qpos.clone()
    qpos[0, 7] = 1.047 + 0.09  # FL hip (range +-1.047): 0.09 past, inside the 0.1 margin
    qpos[1, 7] = 1.047 + 0.11  # 0.11 past
    qpos[2, 8] = -10.0  # FL thigh, far below its range
    env.physics.reset(torch.ones(3, dtype=torch.bool), qpos, torch.zeros_like(env.default_qvel))
    assert terminations.joint_pos_past_limits(env, margin=0.1)(env).tolist() == [False, True, True]
    assert terminations.joint_pos_past_limits(env, margin=0.1, joints=["FL_hip_joint"])(env).tolist() == [False, True, False]
    assert terminations.joint_pos_past_limits(env, margin=0.0)(env).tolist() == [True, True, True]
    with pytest.raises(UserError, match="margin=-1 is out of range; valid: margin >= 0"):
        terminations.joint_pos_past_limits(env, margin=-1)


def test_feet_air_time_rewards_long_steps_on_touchdown(make_env):
    env = make_env(FLAT, num_envs=1)
    env.reset()
    env.commands.get("base_velocity")[:] = torch.tensor([0.5, 0.0, 0.0])
    term = rewards.feet_air_time(env, ["FL_foot_contact", "FR_foot_contact"], "base_velocity", target=0.5)
    contact = env.scene.sensors(["FL_foot_contact", "FR_foot_contact"]).columns
    readings = [(0, 0)] * 30 + [(50, 0)] + [(50, 50)]  # FL lands after 31 steps (0.62 s), FR after 32
    got = []
    for fl, fr in readings:
        env.physics.sensordata[:, contact] = torch.tensor([[float(fl), float(fr)]])
        got.append(term(env).item())
    assert got[:30] == [0.0] * 30
    assert got[30] == pytest.approx(31 * 0.02 - 0.5) and got[31] == pytest.approx(32 * 0.02 - 0.5)
    env.commands.get("base_velocity")[:] = 0.0  # standing still: no reward for stepping
    env.physics.sensordata[:, contact] = 0.0
    term(env)
    env.physics.sensordata[:, contact] = 50.0
    assert term(env).item() == 0.0


def test_feet_air_time_biped_pays_single_stance_up_to_its_target(make_env):
    env = make_env(FLAT, num_envs=3)
    env.reset()
    env.commands.get("base_velocity")[:] = torch.tensor([0.5, 0.0, 0.0])
    feet = ["FL_foot_contact", "FR_foot_contact"]
    term = rewards.feet_air_time_biped(env, feet, "base_velocity", target=0.1)
    contact = env.scene.sensors(feet).columns
    # env 0 walks: FR up for 3 steps, both down for 1, FL up for 7 (past the 0.1 s target);
    # env 1 hops (both feet up, then both down); env 2 stands on FL with FR up throughout.
    down = [(1, 0), (1, 0), (1, 0), (1, 1), (0, 1), (0, 1), (0, 1), (0, 1), (0, 1), (0, 1), (0, 1)]
    hop = [(0, 0), (0, 0), (1, 1), (1, 1), (0, 0), (0, 0), (1, 1), (1, 1), (0, 0), (0, 0), (1, 1)]
    got = []
    for step in range(len(down)):
        readings = [down[step], hop[step], (1, 0)]
        env.physics.sensordata[:, contact] = torch.tensor([[50.0 * a, 50.0 * b] for a, b in readings])
        got.append(term(env).tolist())
    walk, hops, stand = zip(*got)
    dt = 0.02  # each step: min(stance foot's time down, swing foot's time up), capped at 0.1 s
    assert walk == pytest.approx([dt, 2 * dt, 3 * dt, 0.0, dt, 2 * dt, 3 * dt, 4 * dt, 0.1, 0.1, 0.1])
    assert hops == (0.0,) * len(hop)
    assert stand == pytest.approx([dt, 2 * dt, 3 * dt, 4 * dt, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1])
    term.reset(torch.tensor([True, False, False]))  # a reset env starts both timers at 0:
    env.physics.sensordata[:, contact] = torch.tensor([[0.0, 50.0], [0.0, 50.0], [50.0, 0.0]])
    assert term(env).tolist() == pytest.approx([dt, dt, 0.1])  # env 0 would pay 0.1 (FL up 8 steps, FR down 9)
    env.commands.get("base_velocity")[:] = 0.0  # standing still: no reward for stepping
    assert term(env).tolist() == [0.0, 0.0, 0.0]
    with pytest.raises(UserError, match="exactly two touch sensors"):
        rewards.feet_air_time_biped(env, [*feet, "RL_foot_contact"], "base_velocity")


def test_metric_summary_per_step_per_meter_and_final():
    from types import SimpleNamespace

    from robolearn.evaluate import summarize_metrics

    metrics = SimpleNamespace(names=["error", "energy", "settled"], per_meter=torch.tensor([False, True, False]),
                              per_final=torch.tensor([False, False, True]))  # fmt: skip
    # 100 steps: error summed to 30 -> 0.3 per step; power summed to 5000 W -> 100 J over 4 m;
    # 4 episodes whose last-window means sum to 0.2 -> 0.05
    out = summarize_metrics(SimpleNamespace(dt=0.02, metrics=metrics), torch.tensor([30.0, 5000.0, 7.0]),
                            torch.tensor(100.0), torch.tensor(4.0), torch.tensor([0.0, 0.0, 0.2]), torch.tensor(4.0))  # fmt: skip
    assert out == pytest.approx({"error": 0.3, "energy": 25.0, "settled": 0.05})


def test_evaluation_reports_the_quadruped_metrics(make_env):
    from robolearn.evaluate import evaluate

    zero = ["task.commands.base_velocity.ranges.lin_vel_x=[0.6,0.6]", "task.commands.base_velocity.ranges.lin_vel_y=[0,0]",
            "task.commands.base_velocity.ranges.ang_vel_z=[0,0]", "task.commands.base_velocity.standing_probability=0",
            "task.episode_length_s=1.0"]  # fmt: skip
    env = make_env(FLAT, zero, num_envs=4)
    metrics, _ = evaluate(env, lambda obs: torch.zeros(obs.shape[0], 12))
    # standing still under a 0.6 m/s command: the error is about 0.6 m/s, the yaw-rate error small
    assert metrics["lin_vel_error"] == pytest.approx(0.6, abs=0.15) and metrics["yaw_rate_error"] < 0.3
    assert metrics["energy_per_meter"] > 0 and metrics["episodes"] == 4
    assert not env.metrics.enabled  # back off for training


def test_joint_velocity_tracking(make_env):
    """track_joint_vel_exp / joint_vel_error: a command with one component per named joint (a planar
    base's forward slide, wheels); here three joints of a leg against the 3-component velocity command."""
    env = make_env(FLAT, num_envs=1)
    env.reset()
    env.commands.get("base_velocity")[:] = torch.tensor([1.0, 0.0, 0.5])
    leg = ["FL_hip_joint", "FL_thigh_joint", "FL_calf_joint"]
    qvel = torch.zeros_like(env.default_qvel)
    qvel[0, 6:9] = torch.tensor([1.0, 0.5, 0.0])  # the free joint's 6 dofs, then FL hip, thigh, calf
    env.physics.reset(torch.ones(1, dtype=torch.bool), env.default_qpos.clone(), qvel)
    # errors (0, -0.5, 0.5): squared sum 0.5
    assert rewards.track_joint_vel_exp(env, "base_velocity", leg, 0.5).item() == pytest.approx(math.exp(-2.0), rel=1e-5)
    assert metrics.joint_vel_error(env, "base_velocity", leg).item() == pytest.approx(math.sqrt(0.5), rel=1e-5)
    with pytest.raises(UserError, match="command 'base_velocity' has 3 components and joints names 2; valid: one component per joint"):
        rewards.track_joint_vel_exp(env, "base_velocity", leg[:2], 0.5)
