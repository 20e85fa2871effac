"""The floating base is the robot's free joint, not the first one: a ball (or any loose object)
listed before the robot leaves training, rendering, new-task and the deploy stand-in on the robot."""

import mujoco
import torch

from robolearn.paths import assets_dir
from robolearn.scene.floating_base import floating_base_addresses, floating_base_joint, root_body
from robolearn.scene.scene import Scene
from robolearn_deploy.sim import MujocoRobot

BALL = '<body name="ball" pos="1 0 0.1"><freejoint name="ball"/><geom size="0.1" mass="0.4"/></body>'


def ball_first(folder):
    """The quadruped with a free ball listed before it (the ball's free joint is joint 0)."""
    text = (assets_dir() / "quadruped.xml").read_text()
    start = text.index('<body name="trunk"')
    path = folder / "ball_first.xml"
    path.write_text(text[:start] + BALL + text[start:])
    return path


def test_the_robots_free_joint_is_the_base_wherever_it_is_listed(tmp_path):
    model = mujoco.MjModel.from_xml_path(str(ball_first(tmp_path)))
    assert model.joint(0).name == "ball" and model.jnt_type[1] == mujoco.mjtJoint.mjJNT_FREE
    assert floating_base_joint(model) == 1
    assert floating_base_addresses(model) == (7, 6)  # after the ball's 7 qpos / 6 dofs
    assert model.body(root_body(model)).name == "trunk"
    assert (Scene(model, torch.device("cpu")).root.qpos_adr, Scene(model, torch.device("cpu")).root.dof_adr) == (7, 6)
    robot = MujocoRobot(tmp_path / "ball_first.xml")
    robot.data.qvel[6:12] = [0.0, 0.0, 0.0, 0.0, 0.0, 2.0]  # the trunk spins about z; the ball rests
    assert robot.read_state().signals["base_ang_vel"][2] == 2.0


def test_two_loose_balls_the_first_and_no_free_joint_none():
    two = mujoco.MjModel.from_xml_string(f"<mujoco><worldbody>{BALL}{BALL.replace('ball', 'ball2')}</worldbody></mujoco>")
    assert floating_base_joint(two) == 0
    arm = mujoco.MjModel.from_xml_path(str(assets_dir() / "arm.xml"))
    assert floating_base_joint(arm) is None and floating_base_addresses(arm) is None and root_body(arm) == 1
