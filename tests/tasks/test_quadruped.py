"""The quadruped: robot constants reach the model and the bundle, the task builds and steps on
every backend, and the base-state terms agree with MuJoCo's own sensors."""

import mujoco
import numpy as np
import pytest
import torch
import yaml

from robolearn.export.bundle import export_bundle
from robolearn.mdp import state
from robolearn.rl.models import ActorCritic
from robolearn.config import AlgoCfg
from robolearn_tasks.quadruped import robot


def test_constants_reach_the_model_and_the_bundle(make_env, tmp_path):
    env = make_env("quadruped_flat", num_envs=2)
    m = env.model
    assert 12.0 <= m.body_mass.sum() <= 15.0
    names = [mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_JOINT, j) for j in range(1, m.njnt)]
    assert names == list(robot.JOINTS) and env.actions.joint_names == list(robot.JOINTS)
    for k, joint in enumerate(robot.JOINTS):
        assert tuple(m.jnt_range[k + 1]) == robot.joint_range(joint)
        assert (m.actuator_gainprm[k, 0], m.actuator_biasprm[k, 2]) == (robot.KP, -robot.KD)
        assert m.actuator_forcerange[k, 1] == robot.EFFORT_LIMIT[joint.split("_")[1]]
    q0 = env.default_qpos[0, 7:].tolist()
    assert q0 == pytest.approx([robot.DEFAULT_POSE[j] for j in robot.JOINTS])

    ac = ActorCritic.from_config(AlgoCfg(actor_hidden_dims=[32], critic_hidden_dims=[32]), env.observation_dims(), 12)
    export_bundle(ac, env, tmp_path / "b")
    meta = yaml.safe_load((tmp_path / "b" / "robot.yaml").read_text())
    assert [a["joint"] for a in meta["actuators"]] == list(robot.JOINTS)
    assert {(a["kind"], a["kp"], a["kd"]) for a in meta["actuators"]} == {("position", robot.KP, robot.KD)}
    assert meta["default_pose"] == pytest.approx(robot.DEFAULT_POSE)
    assert [a["action_offset"] for a in meta["actuators"]] == pytest.approx([robot.DEFAULT_POSE[j] for j in robot.JOINTS])
    assert [t["name"] for t in meta["observation"]["terms"]] == [
        "base_ang_vel", "projected_gravity", "velocity_command", "joint_pos", "joint_vel", "last_action"]
    # the bundle's MJCF is the edited model: the gains are in it, not only in robot.py
    bundled = mujoco.MjModel.from_xml_path(str(tmp_path / "b" / "quadruped.xml"))
    assert bundled.actuator_gainprm[0, 0] == robot.KP and bundled.nkey == 1


def test_it_stands_on_its_default_pose(make_env):
    env = make_env("quadruped_flat", ["~task.events.reset_base", "~task.events.reset_joints"], num_envs=2)
    env.reset()
    with torch.inference_mode():
        for _ in range(100):  # 2 s with zero actions: joint targets = the default pose
            _, _, terminated, _ = env.step(torch.zeros(2, 12))
            assert not terminated.any()
    assert (env.physics.qpos[:, 2] > 0.22).all() and state.gravity_b(env)[:, 2].max() < -0.99
    feet = env.physics.sensordata[:, env.scene.sensors([f"{leg}_foot_contact" for leg in robot.LEGS]).columns]
    weight = env.model.body_mass.sum() * 9.81  # (trunk mass randomized by +-2 kg at startup: loose bound)
    assert feet.sum(dim=1).numpy() == pytest.approx(np.full(2, weight), rel=0.2)


def test_base_state_terms_agree_with_mujoco_sensors(make_env):
    env = make_env("quadruped_flat", num_envs=3)
    env.reset()
    gen = torch.Generator().manual_seed(0)
    for _ in range(30):
        env.step(torch.randn(3, 12, generator=gen))
    model = env.model
    data = mujoco.MjData(model)
    for i in range(3):
        data.qpos[:], data.qvel[:] = env.physics.qpos[i].double().numpy(), env.physics.qvel[i].double().numpy()
        mujoco.mj_forward(model, data)
        gyro = data.sensor("imu_gyro").data
        quat = data.sensor("imu_quat").data
        gravity = np.zeros(3)
        mujoco.mju_rotVecQuat(gravity, np.array([0.0, 0.0, -1.0]), quat * np.array([1, -1, -1, -1]))
        np.testing.assert_allclose(state.root_ang_vel_b(env)[i].numpy(), gyro, atol=1e-5)
        np.testing.assert_allclose(state.gravity_b(env)[i].numpy(), gravity, atol=1e-5)
        lin = np.zeros(6)
        mujoco.mj_objectVelocity(model, data, mujoco.mjtObj.mjOBJ_XBODY, 1, lin, 1)  # body frame, at its origin
        np.testing.assert_allclose(state.root_lin_vel_b(env)[i].numpy(), lin[3:], atol=1e-4)


def test_deploy_loop_follows_training_on_the_quadruped(make_env, tmp_path):
    """The deploy runtime (IMU signals, command input, 12 servos) against the MuJoCo stand-in
    retraces the training env's first half second from the same start and command."""
    from robolearn_deploy import ControlLoop, Policy
    from robolearn_deploy.sim import MujocoRobot

    from tests.deploy.conftest import make_bundle

    nominal = ["task.observations.policy.enable_noise=false"] + [
        f"~task.events.{e}" for e in ("foot_friction", "trunk_mass", "com_offset", "motor_strength", "armature", "pd_gains",
                                      "joint_damping")]  # fmt: skip
    make_bundle(tmp_path / "b", "quadruped_flat", nominal, hidden=(64, 64), seed=2)
    policy = Policy(tmp_path / "b")
    assert policy.bundle.meta["commands"]["base_velocity"]["components"] == ["lin_vel_x", "lin_vel_y", "ang_vel_z"]
    env = make_env("quadruped_flat", nominal + ["task.commands.base_velocity.resampling_time_s=[100,100]"], num_envs=1)
    env.reset(spread_timeouts=False)
    robot = MujocoRobot(tmp_path / "b" / "quadruped.xml")
    robot.reset(env.physics.qpos[0].double().numpy(), env.physics.qvel[0].double().numpy())
    robot.inputs = {"base_velocity": env.commands.get("base_velocity")[0].numpy().copy()}
    deployed = []
    ControlLoop(policy, robot).run(25, lambda step: deployed.append(robot.data.qpos.copy()))
    trained = []
    with torch.inference_mode():
        for _ in range(25):
            trained.append(env.physics.qpos[0].double().numpy().copy())
            env.step(torch.as_tensor(policy(env.observations.buffers["policy"].numpy())))
    gap = np.abs(np.array(deployed) - np.array(trained)).max()
    assert gap < 1e-3, gap


def test_env_state_round_trip_includes_commands_and_stateful_terms(make_env):
    """An env restored from state_dict continues exactly (commands, their timers, air-time timers)."""
    a = make_env("quadruped_flat", num_envs=4)
    b = make_env("quadruped_flat", num_envs=4, seed=99)
    a.reset(), b.reset()
    gen = torch.Generator().manual_seed(0)
    actions = [torch.randn(4, 12, generator=gen) for _ in range(60)]
    for act in actions[:30]:
        a.step(act)
    b.load_state_dict(a.state_dict())
    timers = [dict(m.named_terms())["feet_air_time"].air_time for m in (a.rewards, b.rewards)]
    assert timers[0].sum() > 0 and torch.equal(timers[0], timers[1])
    for act in actions[30:]:
        obs_a, rew_a, *_ = a.step(act)
        obs_b, rew_b, *_ = b.step(act)
    assert torch.equal(obs_a["critic"], obs_b["critic"]) and torch.equal(rew_a, rew_b)
    assert torch.equal(a.commands.get("base_velocity"), b.commands.get("base_velocity"))


def field(env, name):
    return env.physics.model_field(name).double().clone()


@pytest.mark.parametrize("backend,num_envs", [("mujoco", 6), ("warp", 4), ("mjx", 3)])
def test_randomization_ranges_modes_and_per_env_values(make_env, backend, num_envs):
    """Each randomized parameter stays in its range, differs between environments, and follows
    its mode: startup values survive resets, reset values are drawn again at each reset."""
    env = make_env("quadruped_flat", num_envs=num_envs, physics=backend)
    nominal = {f: env.physics.default_model_field(f).double() for f in
               ("body_mass", "body_ipos", "actuator_forcerange", "dof_armature", "actuator_gainprm",
                "actuator_biasprm", "dof_damping", "geom_friction")}  # fmt: skip
    env.reset()
    trunk = 1  # body id
    legs = env.scene.joints(None).dof
    first = {f: field(env, f) for f in nominal}

    added = first["body_mass"][:, trunk] - nominal["body_mass"][trunk]
    assert ((added >= -1.0) & (added <= 2.0)).all() and added.std() > 0
    com = first["body_ipos"][:, trunk] - nominal["body_ipos"][trunk]
    assert (com.abs() <= 0.03 + 1e-7).all() and com.std(dim=0).min() > 0 and (com[:, 0] != com[:, 1]).all()
    strength = first["actuator_forcerange"][..., 1] / nominal["actuator_forcerange"][:, 1]
    assert ((strength >= 0.8 - 1e-6) & (strength <= 1.2 + 1e-6)).all() and strength.std() > 0
    kp = first["actuator_gainprm"][..., 0] / nominal["actuator_gainprm"][:, 0]
    assert ((kp >= 0.85 - 1e-6) & (kp <= 1.15 + 1e-6)).all() and kp.std() > 0
    assert torch.allclose(first["actuator_biasprm"][..., 1], -first["actuator_gainprm"][..., 0])  # target kept
    damping = first["dof_damping"][:, legs] / nominal["dof_damping"][legs]
    assert ((damping >= 0.5 - 1e-6) & (damping <= 1.5 + 1e-6)).all() and damping.std() > 0

    everyone = torch.ones(num_envs, dtype=torch.bool)
    env._reset_envs(everyone)
    second = {f: field(env, f) for f in nominal}
    for startup in ("body_mass", "body_ipos", "actuator_forcerange", "dof_armature", "geom_friction"):
        assert torch.equal(first[startup], second[startup]), startup
    for reset in ("actuator_gainprm", "dof_damping"):
        assert not torch.equal(first[reset], second[reset]), reset
