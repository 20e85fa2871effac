"""`robolearn new-task` on robots it must fit before they can move: an arm fixed to the world (its
base would collide with its first link, which MuJoCo filters for every other parent but not there),
an arm whose joint ranges leave 0 out (its pose on or past a limit), an arm whose model names its
end effector, and a rover from a URDF whose continuous joints are wheels (a position servo would
hold each near one angle)."""

from __future__ import annotations

import importlib
import re
import shutil
import sys
from pathlib import Path

import mujoco
import numpy as np
import pytest
import torch
import yaml

from robolearn.errors import UserError
from robolearn.scaffold import new_task

ARM = """<mujoco model="arm3"><compiler angle="radian"/><worldbody><light pos="0 0 3"/>
  <body name="base"><geom type="cylinder" size="0.06 0.05" pos="0 0 0.05"/>
    <body name="link1" pos="0 0 0.1"><joint name="j1" axis="0 0 1" range="-2.9 2.9"/>
      <geom type="capsule" fromto="0 0 -0.05 0 0 0.3" size="0.04"/>
      <body name="link2" pos="0 0 0.3"><joint name="j2" axis="0 1 0" range="0 2.5"/>
        <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.035"/>
        <body name="link3" pos="0.3 0 0"><joint name="j3" axis="0 1 0" range="-3.07 -0.07"/>
          <geom type="capsule" fromto="0 0 0 0.2 0 0" size="0.03"/><site name="tool_flange" pos="0.1 0 0"/>
          <body name="finger" pos="0.2 0 0"><joint name="grip" type="slide" axis="0 1 0" range="0 0.03"/>
            <geom type="box" size="0.02 0.005 0.01"/></body></body></body></body></body></worldbody></mujoco>"""
"""A 3-joint arm with a gripper slide: link1's capsule reaches 5 cm into the base, j2 and the grip rest
at a limit at 0, j3's range leaves 0 out, and a site names its tool flange (not the finger's tip)."""

ROVER = """<robot name="rover">
  <link name="base_link"><inertial><mass value="8"/><inertia ixx="0.1" iyy="0.1" izz="0.1" ixy="0" ixz="0" iyz="0"/></inertial>
    <collision><geometry><box size="0.5 0.3 0.1"/></geometry></collision></link>
""" + "".join(f"""  <link name="{w}_wheel"><inertial><mass value="0.5"/><inertia ixx="0.001" iyy="0.001" izz="0.001" ixy="0" ixz="0" iyz="0"/></inertial>
    <collision><origin rpy="1.5708 0 0"/><geometry><cylinder radius="0.08" length="0.04"/></geometry></collision></link>
  <joint name="{w}_wheel_joint" type="continuous"><parent link="base_link"/><child link="{w}_wheel"/>
    <origin xyz="{x} {y} -0.04"/><axis xyz="0 1 0"/><limit effort="5" velocity="30"/></joint>
""" for w, x, y in (("fl", 0.18, 0.19), ("fr", 0.18, -0.19), ("rl", -0.18, 0.19), ("rr", -0.18, -0.19))) + "</robot>"
"""A four-wheeled rover as a ROS description writes it: continuous joints, cylinder wheels, no actuators."""

TWO_LINK = """<robot name="two_link">
  <link name="base_link"><inertial><mass value="2.0"/><inertia ixx="0.01" iyy="0.01" izz="0.01" ixy="0" ixz="0" iyz="0"/></inertial>
    <collision><geometry><cylinder radius="0.05" length="0.1"/></geometry></collision></link>
  <link name="upper"><inertial><origin xyz="0 0 0.15"/><mass value="1.0"/><inertia ixx="0.008" iyy="0.008" izz="0.001" ixy="0" ixz="0" iyz="0"/></inertial>
    <collision><origin xyz="0 0 0.15"/><geometry><box size="0.04 0.04 0.3"/></geometry></collision></link>
  <link name="fore"><inertial><origin xyz="0 0 0.125"/><mass value="0.6"/><inertia ixx="0.003" iyy="0.003" izz="0.0005" ixy="0" ixz="0" iyz="0"/></inertial>
    <collision><origin xyz="0 0 0.125"/><geometry><box size="0.03 0.03 0.25"/></geometry></collision></link>
  <joint name="shoulder" type="revolute"><parent link="base_link"/><child link="upper"/><origin xyz="0 0 0.05"/>
    <axis xyz="0 1 0"/><limit lower="-1.57" upper="1.57" effort="30" velocity="3"/></joint>
  <joint name="elbow" type="revolute"><parent link="upper"/><child link="fore"/><origin xyz="0 0 0.3"/>
    <axis xyz="0 1 0"/><limit lower="-2.5" upper="2.5" effort="15" velocity="3"/></joint>
</robot>"""
"""A light two-link arm on a horizontal axis, standing straight up at 0: 3.6 kg in all, so the one
gain new-task gave every joint was 2 x 3.6 = 7."""


def _install(tmp_path: Path, name: str, installed_tasks, monkeypatch):
    site = tmp_path / "site"
    shutil.copytree(tmp_path / "pkg" / name, site / name)  # the package folder new-task wrote into out=
    monkeypatch.syspath_prepend(str(site))
    installed_tasks[name] = importlib.import_module(name).TASK


def test_an_arm_fixed_to_the_world_moves_off_its_base_and_starts_inside_its_limits(tmp_path, installed_tasks, make_env, monkeypatch):
    (tmp_path / "arm.xml").write_text(ARM)
    made = new_task("fixed_arm", "reach", robot=tmp_path / "arm.xml", out=tmp_path / "pkg")
    lines = "\n".join(made.lines)
    assert "contacts: base-link1 excluded" in lines, lines
    # j2's range [0, 2.5] and j3's [-3.07, -0.07]: 10 % of each range inside; j1 (0 well inside) stays at 0
    assert "puts j2, j3, grip on or past a limit -> added 'home' with those joints 10 % of their range inside it " \
           "(j2 0.25, j3 -0.37, grip 0.003)" in lines, lines
    assert "end effector (its name says so): site tool_flange on body link3" in lines, lines
    _install(tmp_path, "fixed_arm", installed_tasks, monkeypatch)
    env = make_env("fixed_arm", overrides=["randomization=none"], num_envs=2)
    env.reset()
    joints = env.scene.joints(["j1", "j2", "j3", "grip"])
    assert env.default_qpos[0, joints.qpos].tolist() == pytest.approx([0.0, 0.25, -0.37, 0.003])
    assert env.actions.offset.tolist() == pytest.approx([0.0, 0.25, -0.37, 0.003])  # the servos hold home
    # turning j1 toward +0.25 rad: with the base and link1 in contact (no exclude) it ended at -0.52 rad
    for _ in range(50):
        env.step(torch.tensor([[1.0, 0.0, 0.0, 0.0]] * 2))
    assert float(env.physics.qpos[0, env.scene.joints(["j1"]).qpos]) > 0.2


def test_a_urdf_rovers_continuous_wheels_get_velocity_servos_and_it_drives(tmp_path, installed_tasks, make_env, monkeypatch):
    (tmp_path / "rover.urdf").write_text(ROVER)
    made = new_task("rover_drive", "locomotion", robot=tmp_path / "rover.urdf", out=tmp_path / "pkg")
    lines = "\n".join(made.lines)
    assert "actuators: none on the wheels fl_wheel_joint, fr_wheel_joint, rl_wheel_joint, rr_wheel_joint (no limits, " \
           "round about their axis: radius 0.08 m) -> added a velocity servo on each" in lines, lines
    assert "position servo" not in lines.split("\n")[1] and "feet on wheels: fl_wheel" in lines, lines
    task = yaml.safe_load((tmp_path / "pkg" / "rover_drive" / "rover_drive.yaml").read_text())
    assert task["action"]["scale"] == {f"{w}_wheel_joint": 25.0 for w in ("fl", "fr", "rl", "rr")}  # 2 m/s / 0.08 m
    assert "feet_air_time" not in task["rewards"] and "pd_gains" not in task["events"]
    assert "every foot rolling, no lateral speed command (lin_vel_y: [0, 0])" in lines  # wheels do not roll sideways
    assert task["commands"]["base_velocity"]["ranges"] == {"lin_vel_x": [-1.0, 1.0], "lin_vel_y": [0.0, 0.0], "ang_vel_z": [-1.0, 1.0]}
    assert not any(line.startswith("WARNING: in the standing pose") for line in made.lines)  # low, as a car is
    assert task["observations"]["policy"]["terms"]["joint_pos_cos_sin"]["params"]["joints"][0] == "fl_wheel_joint"
    _install(tmp_path, "rover_drive", installed_tasks, monkeypatch)
    env = make_env("rover_drive", overrides=["randomization=none"], num_envs=2)
    env.reset()
    assert env.actions.offset.tolist() == [0.0] * 4  # a speed has no default-pose offset
    start = env.physics.qpos[:, :2].clone()
    for _ in range(50):  # full action: 25 rad/s, 2 m/s at the rim, for 1 s (from rest, at a random heading)
        env.step(torch.ones(2, 4))
    travelled = (env.physics.qpos[:, :2] - start).norm(dim=1)
    assert (travelled > 1.0).all(), travelled  # with a position servo on each wheel: about 1 mm


def test_each_added_servo_is_strong_enough_for_the_links_its_joint_carries(tmp_path):
    (tmp_path / "arm.urdf").write_text(TWO_LINK)
    made = new_task("two_link", "minimal", robot=tmp_path / "arm.urdf", out=tmp_path / "pkg")
    lines = "\n".join(made.lines)
    # by hand: the shoulder carries 1.6 kg whose centre is (1.0 x 0.15 + 0.6 x 0.425) / 1.6 = 0.2531 m out
    # when level: 1.6 x 9.81 x 0.2531 = 3.973 N m, KP 3.973 / SAG 0.05 = 79.5 -> 80; the elbow 0.6 x 9.81 x
    # 0.125 = 0.736 N m -> 14.7 -> 15; both above the uniform floor of 7. KD for a damping ratio of 0.7 on
    # each joint's inertia in the stance (upright), the other joint held: the shoulder turns 0.008 + 1.0 x 0.15^2
    # + 0.003 + 0.6 x 0.425^2 = 0.141875 kg m^2, KD = 2 x 0.7 x sqrt(80 x 0.141875) = 4.717 -> 4.7; the elbow
    # 0.003 + 0.6 x 0.125^2 = 0.012375, 1.4 x sqrt(15 x 0.012375) = 0.603 -> 0.6 (both above KP / 40: 2.0, 0.375)
    assert ("(KP 15.0-80.0: 2 joints raised above 7.0 to hold the links they carry within 0.05 rad, KD 0.6-4.7 for a "
            "damping ratio of 0.7 (at least KP/40.0): placeholders") in lines, lines  # fmt: skip
    assert "WARNING" not in lines, lines
    sys.path.insert(0, str(tmp_path / "pkg"))
    importlib.invalidate_caches()
    try:
        robot = importlib.import_module("two_link.robot")
    finally:
        sys.path.remove(str(tmp_path / "pkg"))
    assert robot.KP == {"shoulder": 80.0, "elbow": 15.0} and robot.KD == {"shoulder": 4.7, "elbow": 0.6}
    spec = mujoco.MjSpec.from_file(str(tmp_path / "pkg" / "two_link" / "arm.urdf"))
    robot.apply(spec)
    model = spec.compile()
    task = yaml.safe_load((tmp_path / "pkg" / "two_link" / "two_link.yaml").read_text())
    model.opt.integrator = getattr(mujoco.mjtIntegrator, f"mjINT_{task['sim']['integrator'].upper()}")  # as the task runs it
    data = mujoco.MjData(model)
    data.ctrl[:] = [1.2, 0.0]  # the arm held out near level, where its weight pulls hardest
    peak = 0.0
    for _ in range(int(3.0 / model.opt.timestep)):
        mujoco.mj_step(model, data)
        peak = max(peak, data.qpos[model.joint("shoulder").qposadr[0]])
    shoulder, elbow = data.qpos[model.joint("shoulder").qposadr[0]], data.qpos[model.joint("elbow").qposadr[0]]
    # the 1.2 rad step overshoots by 0.08 rad (KD = KP / 40, the old placeholder: by 0.36, to 1.61 past its 1.57 limit)
    assert peak - shoulder < 0.15, (peak, shoulder)
    # each gives way by at most SAG under its own load (the old uniform KP 7: the shoulder fell to its 1.57 limit)
    assert abs(shoulder - 1.2) < 0.05 and abs(elbow) < 0.05, (shoulder, elbow)
    assert abs(data.qvel).max() < 1e-3  # settled
    robot.KP, robot.KD = 40.0, 1.0  # one number for every joint, as a user may set their robot's gains
    spec = mujoco.MjSpec.from_file(str(tmp_path / "pkg" / "two_link" / "arm.urdf"))
    robot.apply(spec)
    model = spec.compile()
    assert model.actuator_gainprm[:, 0].tolist() == [40.0, 40.0] and model.actuator_biasprm[:, 2].tolist() == [-1.0, -1.0]
    for kp, kd, said in [({"shoulder": 80.0}, 1.0, "robot.py's KP for joint 'elbow' is None"),  # a joint left out
                         (40.0, "1", "robot.py's KD for joint 'shoulder' is '1'"), (-5.0, 1.0, "KP for joint 'shoulder' is -5.0")]:  # fmt: skip
        robot.KP, robot.KD = kp, kd
        with pytest.raises(UserError, match=re.escape(said) + ".*valid: a finite number >= 0"):
            robot.apply(mujoco.MjSpec.from_file(str(tmp_path / "pkg" / "two_link" / "arm.urdf")))
    robot.KP, robot.KD = {"shoulder": np.float32(80.0), "elbow": np.int64(15)}, np.float64(1.0)  # numbers from numpy
    spec = mujoco.MjSpec.from_file(str(tmp_path / "pkg" / "two_link" / "arm.urdf"))
    robot.apply(spec)
    assert spec.compile().actuator_gainprm[:, 0].tolist() == [80.0, 15.0]


def test_a_joint_too_weak_for_what_it_carries_is_warned_of(tmp_path):
    (tmp_path / "arm.urdf").write_text(TWO_LINK.replace('effort="15"', 'effort="0.5"'))
    made = new_task("weak_elbow", "minimal", robot=tmp_path / "arm.urdf", out=tmp_path / "pkg")
    assert "WARNING: joints whose effort limit is below the weight they may carry (worst-case gravity load > " \
           "effort, N m or N): elbow 0.74 > 0.5" in "\n".join(made.lines), made.lines


def _gripper_arm(palm: str, frame: str | None, finger: str) -> str:
    """TWO_LINK with a gripper as ROS descriptions write one: a palm link fixed to the forearm, an
    optional fixed tool-frame link without geometry 8 cm past it, and a finger on a prismatic joint
    (the end of the longest joint chain)."""
    tool = "" if frame is None else f"""<link name="{frame}"/>
  <joint name="{frame}_joint" type="fixed"><parent link="{palm}"/><child link="{frame}"/><origin xyz="0 0 0.08"/></joint>"""
    return TWO_LINK.replace("</robot>", f"""
  <link name="{palm}"><inertial><mass value="0.3"/><inertia ixx="0.0003" iyy="0.0003" izz="0.0003" ixy="0" ixz="0" iyz="0"/></inertial>
    <collision><origin xyz="0 0 0.02"/><geometry><box size="0.06 0.02 0.04"/></geometry></collision></link>
  <joint name="palm_joint" type="fixed"><parent link="fore"/><child link="{palm}"/><origin xyz="0 0 0.25"/></joint>
  {tool}
  <link name="{finger}"><inertial><mass value="0.05"/><inertia ixx="1e-5" iyy="1e-5" izz="1e-5" ixy="0" ixz="0" iyz="0"/></inertial>
    <collision><origin xyz="0 0 0.03"/><geometry><box size="0.01 0.02 0.06"/></geometry></collision></link>
  <joint name="finger_joint" type="prismatic"><parent link="{palm}"/><child link="{finger}"/><origin xyz="0.02 0 0.04"/>
    <axis xyz="1 0 0"/><limit lower="0" upper="0.03" effort="20" velocity="0.2"/></joint>
</robot>""")


@pytest.mark.parametrize("palm, frame, finger, body, point", [
    ("hand", "hand_tcp", "left_finger", "hand_tcp", (0.0, 0.0, 0.0)),  # Franka: panda_hand_tcp
    ("wrist_flange", "tool0", "jaw", "tool0", (0.0, 0.0, 0.0)),  # ROS-Industrial: tool0 (a digit after the word)
    ("gripperStator", None, "gripperMover", "gripperStator", (0.0, 0.0, 0.04)),  # Unitree Z1: camelCase, the gripper's body
])  # fmt: skip
def test_a_link_whose_name_says_end_effector_beats_the_finger_at_the_end_of_the_chain(tmp_path, palm, frame, finger, body, point):
    """A URDF has no sites: its tool frame is a fixed link. The longest joint chain ends at a finger
    (the end effector was put on Franka's left finger, SO-101's and Z1's jaws); a fixed link named as
    a tool frame is taken at its origin, a link named as the gripper at its geometry's far point."""
    (tmp_path / "arm.urdf").write_text(_gripper_arm(palm, frame, finger))
    made = new_task("gripper_arm", "reach", robot=tmp_path / "arm.urdf", out=tmp_path / "pkg")
    assert f"end effector (its name says so): body {body} -> added site 'ee' at {point} in its frame" in "\n".join(made.lines), made.lines
    robot = (tmp_path / "pkg" / "gripper_arm" / "robot.py").read_text()
    assert f'EE_BODY = "{body}"' in robot and f"EE_POINT = {point}" in robot


def test_a_chain_that_ends_in_a_grippers_finger_reaches_with_the_hand_between_the_fingers(tmp_path):
    """MuJoCo Menagerie's Panda as Genesis ships it has no site: the longest joint chain ended at
    `left_finger`, and the reach targets moved with one finger. Two fingers on slides branch from the
    hand: the hand is the end effector, at the middle of the fingers' tips (each 0.09 m out along x,
    its box's far corner from the hand 0.0885 m along it)."""
    fingers = "".join(f"""<body name="{side}_finger" pos="0 0 0"><joint name="{side}_grip" type="slide" axis="0 {sign} 0" range="0 0.03"/>
              <geom type="box" size="0.03 0.005 0.01" pos="0.06 {sign * 0.02} 0"/></body>""" for side, sign in (("left", 1), ("right", -1)))
    arm = ARM.replace('<site name="tool_flange" pos="0.1 0 0"/>', "").replace(
        ARM[ARM.index('<body name="finger"'):ARM.index("</body></body></body></body></body>")] + "</body>",
        f'<body name="hand" pos="0.2 0 0"><geom type="box" size="0.02 0.04 0.02"/>{fingers}</body>')  # fmt: skip
    (tmp_path / "arm.xml").write_text(arm)
    made = new_task("gripper_reach", "reach", robot=tmp_path / "arm.xml", out=tmp_path / "pkg")
    line = next(line for line in made.lines if line.startswith("end effector"))
    assert line.startswith("end effector (guessed: the hand of the gripper that ends the longest joint chain, fingers "
                           "left_finger, right_finger): body hand -> added site 'ee' at ("), line  # fmt: skip
    point = [float(v) for v in line.split(" at (")[1].split(")")[0].split(",")]
    assert abs(point[0] - 0.0885) < 1e-3 and point[1:] == [0.0, 0.0], line


def test_a_frame_named_as_the_gripper_inside_a_finger_is_not_the_end_effector(tmp_path):
    """Baxter's URDF names its fingertips `r_gripper_l_finger_tip`, which says gripper as loudly as its
    grasp frame `right_gripper` (a fixed link below `right_gripper_base_link`); the end effector was
    put on a fingertip. Links inside a gripper's fingers are no tool frame, and of two frames the
    deeper is."""
    tips = "".join(f"""
  <link name="gripper_{side}_finger_tip"><inertial><mass value="0.01"/><inertia ixx="1e-6" iyy="1e-6" izz="1e-6" ixy="0" ixz="0" iyz="0"/></inertial>
    <collision><geometry><box size="0.01 0.01 0.02"/></geometry></collision></link>
  <joint name="{side}_tip_fixed" type="fixed"><parent link="{side}_finger"/><child link="gripper_{side}_finger_tip"/><origin xyz="0 0 0.06"/></joint>
  <link name="{side}_finger"><inertial><mass value="0.05"/><inertia ixx="1e-5" iyy="1e-5" izz="1e-5" ixy="0" ixz="0" iyz="0"/></inertial>
    <collision><origin xyz="0 0 0.03"/><geometry><box size="0.01 0.02 0.06"/></geometry></collision></link>
  <joint name="{side}_finger_joint" type="prismatic"><parent link="gripper_base"/><child link="{side}_finger"/><origin xyz="{x} 0 0.04"/>
    <axis xyz="{x * 50:g} 0 0"/><limit lower="0" upper="0.02" effort="20" velocity="0.2"/></joint>""" for side, x in (("l", 0.02), ("r", -0.02)))
    (tmp_path / "arm.urdf").write_text(_gripper_arm("gripper_base", "gripper", "l_finger").replace(
        _gripper_arm("gripper_base", "gripper", "l_finger")[_gripper_arm("gripper_base", "gripper", "l_finger").index('  <link name="l_finger">'):],
        tips + "\n</robot>"))  # fmt: skip
    made = new_task("baxter_like", "reach", robot=tmp_path / "arm.urdf", out=tmp_path / "pkg")
    assert "end effector (its name says so): body gripper -> added site 'ee' at (0.0, 0.0, 0.0) in its frame" in made.lines, made.lines


def _one_hinge(child: str, joint_origin: str = "", axis: str = "0 1 0", carried: str = "") -> str:
    """ROVER with one more continuous joint on base_link, to body `child`'s geometry."""
    return ROVER.replace("</robot>", f"""  <link name="extra"><inertial><mass value="0.3"/><inertia ixx="0.001" iyy="0.001" izz="0.001" ixy="0" ixz="0" iyz="0"/></inertial>
    {child}</link>
  <joint name="extra_joint" type="continuous"><parent link="base_link"/><child link="extra"/><origin {joint_origin}/><axis xyz="{axis}"/><limit effort="5" velocity="30"/></joint>
{carried}</robot>""")  # fmt: skip


@pytest.mark.parametrize("what, urdf", [
    ("a swivel on a vertical axis (r2d2's head)",
     _one_hinge('<collision><geometry><sphere radius="0.1"/></geometry></collision>', 'xyz="0 0 0.2"', axis="0 0 1")),
    ("a sphere off the axis (a pendulum's bob)",
     _one_hinge('<collision><origin xyz="0 0 -0.3"/><geometry><sphere radius="0.05"/></geometry></collision>', 'xyz="0 0 0.2"')),
    ("a hip motor that carries a knee through a fixed link (minitaur)",
     _one_hinge('<collision><origin rpy="1.5708 0 0"/><geometry><cylinder radius="0.04" length="0.03"/></geometry></collision>',
                'xyz="0 0.2 0"', carried="""  <link name="upper"><inertial><mass value="0.1"/><inertia ixx="1e-4" iyy="1e-4" izz="1e-4" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <joint name="upper_fixed" type="fixed"><parent link="extra"/><child link="upper"/></joint>
  <link name="lower"><inertial><mass value="0.1"/><inertia ixx="1e-4" iyy="1e-4" izz="1e-4" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <joint name="knee" type="revolute"><parent link="upper"/><child link="lower"/><origin xyz="0 0 -0.1"/><axis xyz="0 1 0"/><limit lower="-2" upper="0" effort="5" velocity="10"/></joint>
""")),
])  # fmt: skip
def test_a_continuous_joint_that_is_no_wheel_keeps_its_position_servo(tmp_path, what, urdf):
    """Each is an unlimited hinge whose body's geometry is round (what wheels.py looked at), but it
    does not roll the robot along: only the rover's four wheels get velocity servos."""
    (tmp_path / "rover.urdf").write_text(urdf)
    made = new_task("not_wheels", "locomotion", robot=tmp_path / "rover.urdf", out=tmp_path / "pkg")
    wheels = next(line for line in made.lines if line.startswith("actuators: none on the wheels"))
    assert wheels.startswith("actuators: none on the wheels fl_wheel_joint, fr_wheel_joint, rl_wheel_joint, rr_wheel_joint (no limits"), (what, wheels)
    robot = (tmp_path / "pkg" / "not_wheels" / "robot.py").read_text()
    assert '"extra_joint"' not in robot.split("WHEEL_SPEED")[1].split('"""')[0], what


def test_a_name_with_an_attach_prefix_says_end_effector():
    """MuJoCo Menagerie's ALOHA attaches two arms under the prefixes `left/` and `right/`: its site
    `left/gripper` names the end effector, `left/left_finger` does not."""
    from robolearn.scaffold.end_effector import end_effector_rank

    assert end_effector_rank("left/gripper") is not None and end_effector_rank("left/left_finger") is None
