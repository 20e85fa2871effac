"""The arm_reach task: the arm model (assets/arm.xml) is a plausible cobot, the reaching terms
match hand-computed distances, a short training brings the end effector much closer to its
targets, and the bundle of that run reports the end-effector error in sim2sim."""

import math
import subprocess
import sys

import mujoco
import numpy as np
import pytest
import torch
import yaml

from robolearn.evaluate import evaluate
from robolearn.mdp import manipulation

TASK = "arm_reach"
JOINTS = ["shoulder_pan", "shoulder_lift", "elbow", "forearm_roll", "wrist_pitch", "wrist_roll"]
HOME = [0.0, 0.0, math.pi / 2, 0.0, math.pi / 2, 0.0]
EE = dict(sensor=["ee_pos"], command="ee_target")


def set_joints(env, q):
    qpos = torch.tensor(q, dtype=torch.float32).repeat(env.num_envs, 1)
    env.physics.reset(torch.ones(env.num_envs, dtype=torch.bool), qpos, torch.zeros_like(qpos))


def test_the_arm_is_a_plausible_6_dof_cobot(make_env):
    env = make_env(TASK, ["randomization=none"], num_envs=1)
    m = env.model
    names = [mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_JOINT, j) for j in range(m.njnt)]
    assert names == JOINTS and env.actions.joint_names == JOINTS and m.nu == 6
    assert (m.jnt_limited == 1).all() and (np.abs(m.jnt_range) <= math.pi).all()
    assert (m.jnt_range[:, 0] < 0).all() and (m.jnt_range[:, 1] > 0).all()
    assert 12.0 <= m.body_mass[2:].sum() <= 20.0  # moving links of a ~5 kg-payload cobot
    assert (m.body_inertia[2:] > 0).all() and (m.dof_armature > 0).all() and (m.dof_damping > 0).all()
    # position servos: force = kp (ctrl - q) - kd qdot, torque-limited, bigger on the big joints
    assert (m.actuator_gainprm[:, 0] == -m.actuator_biasprm[:, 1]).all() and (m.actuator_biasprm[:, 2] < 0).all()
    assert m.actuator_forcerange[:3, 1].tolist() == [150.0] * 3 and m.actuator_forcerange[3:, 1].tolist() == [28.0] * 3
    assert env.default_qpos[0].tolist() == pytest.approx(HOME)
    sensor = env.scene.sensors(["ee_pos"]).columns
    set_joints(env, HOME)  # forearm level, tool down: ee at x = 0.38, z = 0.30 + 0.42 - 0.10
    assert env.physics.sensordata[0, sensor].tolist() == pytest.approx([0.38, 0.0, 0.62], abs=1e-5)
    set_joints(env, [math.pi / 2, math.pi / 2, 0.0, 0.0, 0.0, 0.0])  # turned left, straight out: 0.90 m reach
    assert env.physics.sensordata[0, sensor].tolist() == pytest.approx([0.0, 0.90, 0.30], abs=1e-5)


def test_it_holds_its_home_pose_and_moves_where_a_joint_target_says(make_env):
    env = make_env(TASK, ["randomization=none", "~task.events.reset_joints"], num_envs=1)
    env.reset(spread_timeouts=False)
    with torch.inference_mode():
        for _ in range(25):  # 0.5 s at zero action: targets = home; gravity is compensated
            env.step(torch.zeros(1, 6))
        assert env.physics.qpos[0].tolist() == pytest.approx(HOME, abs=1e-4)
        for _ in range(50):  # 1 s with shoulder_lift asked 0.2 rad (action 0.4 at scale 0.5)
            env.step(torch.tensor([[0.0, 0.4, 0.0, 0.0, 0.0, 0.0]]))
    assert env.physics.qpos[0, 1].item() == pytest.approx(0.2, abs=2e-3)
    assert env.physics.qvel[0].abs().max() < 0.01


def test_reaching_terms_against_hand_computed_distances(make_env):
    env = make_env(TASK, ["randomization=none"], num_envs=2)
    env.reset(spread_timeouts=False)
    set_joints(env, HOME)
    env.commands.get("ee_target")[:] = torch.tensor([[0.38, 0.3, 0.22], [0.38, 0.0, 0.62]])  # 0.5 m off; on target
    assert manipulation.position_command_error(env, **EE).tolist() == pytest.approx([0.5, 0.0], abs=1e-5)
    fine = manipulation.position_command_error_tanh(env, **EE, std=0.25)
    assert fine.tolist() == pytest.approx([1 - math.tanh(2.0), 1.0], abs=1e-5)


def test_final_error_metric_averages_the_last_second_of_each_episode(make_env):
    """ee_position_error (per: final, window_s 1) is the mean distance over each episode's last 50
    steps (1 s), read here step by step alongside; the all-steps metric the mean over every step."""
    env = make_env(TASK, ["randomization=none"], num_envs=4)
    gen = torch.Generator().manual_seed(0)
    metrics_after_physics, distances = env.metrics.after_physics, []

    def record():  # each step's distance, before the resets at the episodes' end
        metrics_after_physics()
        distances.append(manipulation.position_command_error(env, **EE).clone())

    env.metrics.after_physics = record
    metrics, _ = evaluate(env, lambda obs: torch.rand(4, 6, generator=gen) - 0.5, progress=False)
    distances = torch.stack(distances)
    assert distances.shape == (200, 4)
    assert metrics["ee_position_error_all_steps"] == pytest.approx(distances.mean().item(), rel=1e-4)
    assert metrics["ee_position_error"] == pytest.approx(distances[150:].mean().item(), rel=1e-4)
    assert metrics["ee_position_error"] != pytest.approx(distances.mean().item(), rel=1e-2)


@pytest.fixture(scope="module")
def short_run(tmp_path_factory):
    """A short arm_reach training (CLI, CPU), exported at its end: what a few iterations learn."""
    work = tmp_path_factory.mktemp("arm_reach")
    run = work / "run"
    result = subprocess.run([sys.executable, "-m", "robolearn.cli", "train", f"task={TASK}", "runner.max_iterations=30",
                             "env.num_envs=128", "runner.num_steps_per_env=16", "algo.num_mini_batches=2",
                             "algo.num_learning_epochs=4", "algo.actor_hidden_dims=[64,64]", "algo.critic_hidden_dims=[64,64]",
                             "runner.video_interval=0", "runner.progress=false", "logger=none", "physics.num_threads=1",
                             f"hydra.run.dir={run}"],
                            cwd=work, capture_output=True, text=True, timeout=600)  # fmt: skip
    assert result.returncode == 0, result.stderr[-2000:]
    return run


def test_a_short_training_brings_the_end_effector_much_closer(make_env, short_run):
    env = make_env(TASK, num_envs=64)
    untrained, _ = evaluate(env, lambda obs: torch.zeros(obs.shape[0], 6), progress=False)  # holds home
    meta = yaml.safe_load((short_run / "export" / "robot.yaml").read_text())
    trained = meta["evaluation"]
    assert untrained["ee_position_error"] > 0.25
    assert trained["ee_position_error"] < 0.5 * untrained["ee_position_error"], (trained, untrained)


def test_sim2sim_reports_the_end_effector_error_of_the_bundle(short_run, capsys):
    from robolearn.sim2sim import print_report, sim2sim

    result = sim2sim(short_run / "export", episodes=2)
    print_report(result)
    printed = capsys.readouterr().out
    assert "ee_position_error" in result["metric_names"] and "ee_position_error" in printed
    training = result["training_evaluation"]["ee_position_error"]
    assert 0.0 < result["ee_position_error"] < 3 * training + 0.02  # same policy, same physics: same ballpark
