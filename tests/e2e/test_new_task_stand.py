"""new-task's check that a legged robot stands in its home pose, held by the servos it was given
(robolearn/scaffold/stand_check.py): a report line tells a pose that is off balance from gains
that are too weak, and says nothing where the robot stands."""

from __future__ import annotations

import math

import mujoco
import numpy as np
import pytest

from robolearn.scaffold.stand_check import hold, stand_warning, stood

CORNERS = ((0.2, 0.15), (0.2, -0.15), (-0.2, 0.15), (-0.2, -0.15))


def _table(kp: float, legs=CORNERS, lean: float = 0.6) -> mujoco.MjModel:
    return mujoco.MjModel.from_xml_string(_table_xml(kp, legs, lean))


def _table_xml(kp: float, legs=CORNERS, lean: float = 0.6) -> str:
    """A 20 kg box on legs 0.3 m long, every hip turned `lean` rad the same way (a parallelogram that
    folds unless the servos hold it), its feet on the floor at home."""
    height = 0.3 * math.cos(lean) + 0.02
    bodies = "".join(f"""<body name="leg{i}" pos="{x} {y} 0"><joint name="hip{i}" axis="0 1 0" range="-1.5 1.5"/>
      <geom type="capsule" fromto="0 0 0 0 0 -0.3" size="0.02" mass="0.2"/></body>""" for i, (x, y) in enumerate(legs))
    servos = "".join(f'<position joint="hip{i}" kp="{kp}" kv="{kp / 40}"/>' for i in range(len(legs)))
    return f"""<mujoco><option integrator="implicitfast"/><worldbody>
      <geom name="floor" type="plane" size="5 5 0.1"/>
      <body name="base" pos="0 0 {height}"><freejoint/><geom type="box" size="0.25 0.2 0.03" mass="20"/>{bodies}</body>
      </worldbody><actuator>{servos}</actuator>
      <keyframe><key name="home" qpos="0 0 {height} 1 0 0 0 {' '.join([str(lean)] * len(legs))}"/></keyframe></mujoco>"""


def test_a_robot_that_stands_gets_no_line():
    held = hold(_table(kp=800), "base")
    assert held.end > 0.9 * held.start and held.turned < math.radians(2)
    assert stand_warning(_table(kp=800), "base", None)[0] is None


@pytest.mark.parametrize("model, cause", [
    (_table(kp=20), "with KP x 4 it stands: the placeholder gains are too weak for this robot; set KP and KD in robot.py"),
    (_table(kp=800, legs=((0.0, 0.0),)), "it does not stand with KP x 4 either, nor with nearly rigid joints: the pose is off balance"),
    # Menagerie's Berkeley Humanoid (its own kp of 1 on knees and ankles): no pose problem, the gains by far
    (_table(kp=2), "it does not stand with KP x 4 either, only with KP x 256 (nearly rigid joints): the pose balances, and "
                   "the servos' gains are far too weak for this robot"),
])  # fmt: skip
def test_a_robot_that_falls_is_warned_of_with_the_cause(model, cause):
    line, _ = stand_warning(model, "base", None)
    assert line is not None and line.startswith("WARNING: holding the home pose with its servos for 1 s, the base's height goes from 0.268 to ")
    assert cause in line, line


def test_the_task_integrator_is_the_one_held_with():
    """The generated task may set implicitfast where the model says Euler (its servos' damping):
    the check runs the integrator training will."""
    model = _table(kp=800)
    model.opt.integrator = mujoco.mjtIntegrator.mjINT_EULER
    assert hold(model, "base", "implicitfast") == hold(_table(kp=800), "base")


def _v(axes: np.ndarray, *xyz: float) -> str:
    """A vector given as (forward, left, up), in the model axes `axes` maps those onto."""
    return " ".join(f"{v + 0.0:.6g}" for v in axes @ np.array(xyz, float))


def _dog(knee_range: str = "-2.7 -0.9", axes: np.ndarray = np.eye(3), trunk: np.ndarray = np.eye(3) * 0.02,
         folded: bool = False) -> str:  # fmt: skip
    """A 10 kg URDF quadruped shaped like pybullet's A1: hip abduction, thigh and calf, the calf's
    range leaving 0 out (so new-task bends it 10 % inside its upper limit, with the thigh at 0).
    `axes` maps (forward, left, up) onto the model's axes (a Y-up model: test_new_task_upright.py),
    `trunk` is the trunk's inertia in (forward, left, up). `folded`: at 0 a thigh points forward,
    level, and its calf lies back along it (pybullet's Vision 60)."""
    def inertial(mass: float, moments: np.ndarray) -> str:
        m = axes @ moments @ axes.T
        return (f'<inertial><mass value="{mass}"/><inertia ixx="{m[0, 0]:g}" iyy="{m[1, 1]:g}" izz="{m[2, 2]:g}" '
                f'ixy="{m[0, 1]:g}" ixz="{m[0, 2]:g}" iyz="{m[1, 2]:g}"/></inertial>')  # fmt: skip

    def box(*size: float) -> str:
        return f'<geometry><box size="{_v(np.abs(axes), *size)}"/></geometry>'

    down, back = ((0.1, 0, 0), (-0.1, 0, 0)) if folded else ((0, 0, -0.1), (0, 0, -0.1))  # each link's middle
    thigh_box, calf_box = ((0.2, 0.03, 0.03), (0.2, 0.02, 0.02)) if folded else ((0.03, 0.03, 0.2), (0.02, 0.02, 0.2))
    lower, upper = knee_range.split()
    legs = ""
    for leg, x, y in (("FR", 0.18, -0.05), ("FL", 0.18, 0.05), ("RR", -0.18, -0.05), ("RL", -0.18, 0.05)):
        legs += f"""
  <link name="{leg}_hip">{inertial(0.5, np.eye(3) * 1e-3)}</link>
  <joint name="{leg}_hip_joint" type="revolute"><parent link="trunk"/><child link="{leg}_hip"/><origin xyz="{_v(axes, x, y, 0)}"/>
    <axis xyz="{_v(axes, 1, 0, 0)}"/><limit lower="-0.8" upper="0.8" effort="20" velocity="20"/></joint>
  <link name="{leg}_thigh">{inertial(0.8, np.eye(3) * 2e-3)}<collision><origin xyz="{_v(axes, *down)}"/>{box(*thigh_box)}</collision></link>
  <joint name="{leg}_thigh_joint" type="revolute"><parent link="{leg}_hip"/><child link="{leg}_thigh"/><origin xyz="{_v(axes, 0, 0.08 if y > 0 else -0.08, 0)}"/>
    <axis xyz="{_v(axes, 0, 1, 0)}"/><limit lower="-1.0" upper="{2.0 if folded else 3.0}" effort="20" velocity="20"/></joint>
  <link name="{leg}_calf">{inertial(0.2, np.eye(3) * 1e-3)}<collision><origin xyz="{_v(axes, *back)}"/>{box(*calf_box)}</collision></link>
  <joint name="{leg}_calf_joint" type="revolute"><parent link="{leg}_thigh"/><child link="{leg}_calf"/><origin xyz="{_v(axes, *(np.array(down) * 2))}"/>
    <axis xyz="{_v(axes, 0, 1, 0)}"/><limit lower="{lower}" upper="{upper}" effort="20" velocity="20"/></joint>
  <link name="{leg}_foot">{inertial(0.05, np.eye(3) * 1e-5)}<collision><geometry><sphere radius="0.02"/></geometry></collision></link>
  <joint name="{leg}_foot_fixed" type="fixed"><parent link="{leg}_calf"/><child link="{leg}_foot"/><origin xyz="{_v(axes, *(np.array(back) * 2))}"/></joint>"""
    return f"""<robot name="dog">
  <link name="trunk">{inertial(4.0, trunk)}<collision>{box(0.4, 0.2, 0.1)}</collision></link>{legs}
</robot>"""


def _feet_against_com(package, model_file: str) -> float:
    """Along x, the middle of the home pose's feet less the centre of mass [m]."""
    from .test_new_task_urdf_copy import _edited_model

    model = _edited_model(package, model_file)
    data = mujoco.MjData(model)
    mujoco.mj_resetDataKeyframe(model, data, model.key("home").id)
    mujoco.mj_forward(model, data)
    feet = [data.xpos[model.body(f"{leg}_foot").id, 0] for leg in ("FR", "FL", "RR", "RL")]
    return float(sum(feet) / 4 - data.subtree_com[model.body("trunk").id, 0])


def test_a_quadrupeds_guessed_pose_gets_its_feet_around_its_centre_of_mass(tmp_path):
    """Each joint at 0 inside its limits bends the calves back with the thighs at 0: every foot
    ~0.17 m ahead of its hip, and the robot tips back (pybullet's A1, AlienGo, Unitree's Go2). The
    thighs turn until the feet's middle is under the centre of mass; joints stay inside their limits."""
    from robolearn.scaffold import new_task

    (tmp_path / "dog.urdf").write_text(_dog())
    made = new_task("dog_walk", "locomotion", robot=tmp_path / "dog.urdf", out=tmp_path / "pkg")
    line = next(line for line in made.lines if line.startswith("home pose:"))
    before = float(line.split("the middle of the feet stood ")[1].split(" m")[0])
    assert before > 0.1, line
    assert "FR_thigh_joint 0.0 -> " in line and "FR_calf_joint" not in line.split("->", 1)[0], line
    assert abs(_feet_against_com(tmp_path / "pkg" / "dog_walk", "dog.urdf")) < 0.02
    assert not any(line.startswith("WARNING: holding the home pose") for line in made.lines), made.lines


def test_a_shin_link_fixed_above_the_foot_is_not_a_foot(tmp_path):
    """Genesis's Go2 URDF hangs two collision links on each calf besides its foot (`FL_calflower1`, a
    cylinder on the shin): leaves of the leg chain near the ground, and taken for feet (8 feet, touch
    sensors on the shins). Of the leaves fixed to one moving link only the lowest is the foot."""
    from robolearn.scaffold import new_task

    shin = "".join(f"""
  <link name="{leg}_shin"><collision><geometry><cylinder radius="0.015" length="0.03"/></geometry></collision></link>
  <joint name="{leg}_shin_fixed" type="fixed"><parent link="{leg}_calf"/><child link="{leg}_shin"/><origin xyz="0 0 -0.16"/></joint>"""
                   for leg in ("FR", "FL", "RR", "RL"))  # fmt: skip
    (tmp_path / "dog.urdf").write_text(_dog().replace("</robot>", shin + "\n</robot>"))
    made = new_task("shin_dog", "locomotion", robot=tmp_path / "dog.urdf", out=tmp_path / "pkg")
    line = next(line for line in made.lines if line.startswith("feet"))
    assert line.rsplit(": ", 1)[1] == "FR_foot, FL_foot, RR_foot, RL_foot", line


def test_a_wheel_below_an_ankle_is_the_foot_not_the_ankle(tmp_path):
    """example-robot-data's Centauro: each leg ends in an ankle link carrying a wheel on its own joint
    and a frame without geometry, which makes the ankle a leaf too; ankle and wheel were both feet
    (8 on a 4-legged robot). A leaf below another foot that stands lower is the foot."""
    from robolearn.scaffold import new_task

    wheels = "".join(f"""
  <link name="{leg}_sole"/>
  <joint name="{leg}_sole_fixed" type="fixed"><parent link="{leg}_foot"/><child link="{leg}_sole"/></joint>
  <link name="{leg}_wheel"><inertial><mass value="0.1"/><inertia ixx="1e-4" iyy="1e-4" izz="1e-4" ixy="0" ixz="0" iyz="0"/></inertial>
    <collision><origin rpy="1.5708 0 0"/><geometry><cylinder radius="0.04" length="0.02"/></geometry></collision></link>
  <joint name="{leg}_wheel_joint" type="continuous"><parent link="{leg}_foot"/><child link="{leg}_wheel"/><origin xyz="0 {side * 0.03} 0"/>
    <axis xyz="0 1 0"/><limit effort="5" velocity="30"/></joint>""" for leg, side in (("FR", -1), ("FL", 1), ("RR", -1), ("RL", 1)))  # fmt: skip
    (tmp_path / "dog.urdf").write_text(_dog(knee_range="-2.7 0.5").replace("</robot>", wheels + "\n</robot>"))
    made = new_task("wheel_dog", "locomotion", robot=tmp_path / "dog.urdf", out=tmp_path / "pkg")
    line = next(line for line in made.lines if line.startswith("feet"))
    assert line.rsplit(": ", 1)[1] == "FR_wheel, FL_wheel, RR_wheel, RL_wheel", line


def test_a_urdf_with_only_visual_geometry_collides_with_it_and_stands(tmp_path):
    """example-robot-data's Alexander lower body has 14 visual meshes and no <collision>: nothing of
    it collided, and holding its home pose it fell through the floor (base 1.006 -> -3.9 m), warned
    of as "off balance". Each link's visual now collides as well, and the robot stands."""
    from robolearn.scaffold import new_task

    (tmp_path / "dog.urdf").write_text(_dog(knee_range="-2.7 0.5").replace("collision>", "visual>"))
    made = new_task("ghost_dog", "locomotion", robot=tmp_path / "dog.urdf", out=tmp_path / "pkg")
    line = next(line for line in made.lines if line.startswith("collision geometry:"))
    assert line.startswith("collision geometry: none in the URDF -> each link's <visual> collides as well (trunk, "), line
    assert not any(line.startswith("WARNING") for line in made.lines), made.lines
    copy = (tmp_path / "pkg" / "ghost_dog" / "dog.urdf").read_text()
    assert copy.count("<collision>") == copy.count("<visual>") == 13


def test_feet_that_already_surround_the_centre_of_mass_stay_where_they_are(tmp_path):
    """Calves whose range holds 0 stand straight under the hips: nothing to move, no line."""
    from robolearn.scaffold import new_task

    (tmp_path / "dog.urdf").write_text(_dog(knee_range="-2.7 0.5"))
    made = new_task("straight_dog", "locomotion", robot=tmp_path / "dog.urdf", out=tmp_path / "pkg")
    assert not any(line.startswith("home pose:") for line in made.lines), made.lines


def test_gains_new_task_gave_are_raised_where_they_do_not_hold_the_home_pose(tmp_path):
    """2 x the robot's mass is the placeholder KP; on knees bent far (pybullet's Vision 60, Unitree's G1)
    it lets the robot sag from the first step. new-task raises its own gains by the least factor
    that holds the pose (KD by its square root: the same damping ratio), and says so."""
    from robolearn.scaffold import new_task
    from .test_new_task import _module
    from .test_new_task_urdf_copy import _edited_model

    (tmp_path / "dog.urdf").write_text(_dog(knee_range="-2.7 -1.6"))
    made = new_task("crouched_dog", "locomotion", robot=tmp_path / "dog.urdf", out=tmp_path / "pkg")
    line = next(line for line in made.lines if line.startswith("servo gains:"))
    assert line.startswith("servo gains: holding the home pose for 1 s with them, the base's height goes from 0.295 to ")
    assert "-> KP x 2, KD x 1.41: the least of x 2, x 4 that holds it" in line, line
    assert not any(line.startswith("WARNING: holding the home pose") for line in made.lines)
    robot = _module(tmp_path / "pkg" / "crouched_dog" / "robot.py")
    # 10.2 kg: the placeholder KP 20, KD 20 / 40
    assert set(robot.KP.values()) == {40.0} and set(robot.KD.values()) == {round(0.5 * math.sqrt(2), 3)}
    assert "servo gains: holding the home pose" in robot.__doc__
    model = _edited_model(tmp_path / "pkg" / "crouched_dog", "dog.urdf")
    assert stood(hold(model, "trunk", "implicitfast"))
    assert not stood(hold(model, "trunk", "implicitfast", 0.5))  # as first given


def test_a_models_own_gains_are_warned_of_not_changed(tmp_path):
    from robolearn.scaffold import new_task

    (tmp_path / "table.xml").write_text(_table_xml(kp=20))
    made = new_task("weak_table", "locomotion", robot=tmp_path / "table.xml", out=tmp_path / "pkg")
    assert any(line.startswith("WARNING: holding the home pose") and "with KP x 4 it stands" in line for line in made.lines), made.lines
    assert not any(line.startswith("servo gains:") for line in made.lines)
    from .test_new_task_urdf_copy import _edited_model

    model = _edited_model(tmp_path / "pkg" / "weak_table", "table.xml")  # robot.py applied: the gains as trained
    assert model.actuator_gainprm[:, 0].tolist() == [20.0] * 4 and model.actuator_biasprm[:, 1].tolist() == [-20.0] * 4


def test_a_base_at_the_ground_that_settles_a_few_millimetres_stands():
    """TIAGo's base frame is 5 mm up on its wheels; settling 5 mm is all of its height, not a fall.
    A tall robot that sinks a quarter of its height still has not stood, and one that tips has not."""
    from robolearn.scaffold.stand_check import Held

    assert stood(Held(0.005, 0.0, 0.0)) and stood(Held(0.4, 0.31, 0.1))
    assert not stood(Held(0.4, 0.29, 0.0)) and not stood(Held(0.005, 0.0, 0.5)) and not stood(Held(0.1, 0.07, 0.0))


def test_legs_folded_flat_at_the_guess_are_stood_up_under_their_hips(tmp_path):
    """Each joint at 0 inside its limits lays the legs folded under the body (the base a few cm up on
    legs 0.4 m long): the leg joints move until each foot is under its hip, 3/4 of its leg's length
    below it, and the robot stands there."""
    from robolearn.scaffold import new_task

    from .test_new_task_urdf_copy import _edited_model

    (tmp_path / "dog.urdf").write_text(_dog(knee_range="-3.0 0.0", folded=True))
    made = new_task("folded_dog", "locomotion", robot=tmp_path / "dog.urdf", out=tmp_path / "pkg")
    line = next(line for line in made.lines if "the legs lay folded" in line)
    assert line.startswith("home pose: with each joint at 0 (inside its limits) the legs lay folded (a foot "), line
    assert "-> moved 8 leg joints to stand each foot under its hip, 75% of the length below it: FR_thigh_joint 0.0 -> " in line
    assert not any(line.startswith("WARNING") for line in made.lines), made.lines
    model = _edited_model(tmp_path / "pkg" / "folded_dog", "dog.urdf")
    data = mujoco.MjData(model)
    mujoco.mj_resetDataKeyframe(model, data, model.key("home").id)
    mujoco.mj_kinematics(model, data)
    for leg in ("FR", "FL", "RR", "RL"):
        hip, foot = data.xanchor[model.joint(f"{leg}_hip_joint").id], data.xpos[model.body(f"{leg}_foot").id]
        assert hip[2] - foot[2] > 0.3 and abs(hip[0] - foot[0]) < 0.04, (leg, hip, foot)
    assert stood(hold(model, "trunk", "implicitfast"))


def test_legs_that_reach_out_are_sprawled_not_folded(tmp_path):
    """brax's and Genesis's ant: gymnasium's with a sphere at each leg's tip, the one geom of the leg
    that collides. Its feet stand 0.37 of
    their legs' length below the hips, as low as a folded leg's, but 0.89 of it out from them: the
    ant sprawls by design, and its legs stay as guessed."""
    from robolearn.scaffold import new_task

    from .test_new_task_models import gym_asset

    text = gym_asset("ant.xml").read_text()
    for name, tip in (("left", "0.4 0.4 0"), ("right", "-0.4 0.4 0"), ("third", "-0.4 -0.4 0"), ("fourth", "0.4 -0.4 0")):
        geom = next(line for line in text.splitlines() if f'name="{name}_ankle_geom"' in line)
        text = text.replace(geom, geom.replace("<geom ", '<geom contype="0" conaffinity="0" ')  # brax: only the tip collides
                            + f'\n<geom name="{name}_foot_geom" pos="{tip}" size="0.08" type="sphere" mass="0"/>')
    (tmp_path / "ant.xml").write_text(text)
    made = new_task("sprawled_ant", "locomotion", robot=tmp_path / "ant.xml", out=tmp_path / "pkg")
    assert not any(line.startswith("home pose:") for line in made.lines), made.lines
    home = next(line for line in made.lines if line.startswith("home keyframe:"))
    assert "ankle_1 at 0.593" in home and "the legs moved" not in home, home


def test_a_model_whose_contacts_are_a_scenes_pairs_gets_feet_that_collide(tmp_path):
    """MuJoCo Menagerie's Apollo: every geom has contype and conaffinity 0, its contacts are <pair>s in
    scene.xml. Given the robot's file, new-task's floor collided with nothing and the robot fell
    through it (base 1.12 -> -3.76 m, called "off balance"). Its feet's geoms now collide."""
    from robolearn.scaffold import new_task

    text = _table_xml(kp=800).replace("<worldbody>", '<default><geom contype="0" conaffinity="0"/></default><worldbody>')
    text = text.replace("<mujoco>", '<mujoco><compiler angle="radian"/>')
    text = text.replace('<geom name="floor" type="plane" size="5 5 0.1"/>', "")  # the robot's file: no floor
    (tmp_path / "table.xml").write_text(text)
    made = new_task("paired_table", "locomotion", robot=tmp_path / "table.xml", out=tmp_path / "pkg")
    assert ("collisions: no geom of the model collides with anything, and it has no contact pairs (a scene file may add "
            "them: give that file instead, if you have it) -> the feet's geoms collide: leg0, leg1, leg2, leg3 (contype and "
            "conaffinity 1; their visual geoms, groups 1 and 2, left as they are)") in made.lines, made.lines  # fmt: skip
    assert not any(line.startswith("WARNING") for line in made.lines), made.lines


def test_a_standing_keyframe_under_another_name_is_the_home_pose(tmp_path):
    """Menagerie's Apollo and its older G1 name their standing keyframe `stand`: new-task guessed a
    pose of its own (each joint at 0) beside it. A keyframe whose name says standing, or the only
    one, gives the home pose's joint positions now."""
    from robolearn.scaffold import new_task

    from .test_new_task_urdf_copy import _edited_model

    (tmp_path / "table.xml").write_text(_table_xml(kp=800, lean=0.4).replace('<key name="home"', '<key name="stand"')
                                        .replace("<mujoco>", '<mujoco><compiler angle="radian"/>'))
    made = new_task("stand_table", "locomotion", robot=tmp_path / "table.xml", out=tmp_path / "pkg")
    line = next(line for line in made.lines if line.startswith("home keyframe:"))
    assert line.startswith("home keyframe: missing -> added 'home' from the model's keyframe 'stand' (its joint "
                           "positions; the base placed anew), base "), line  # fmt: skip
    model = _edited_model(tmp_path / "pkg" / "stand_table", "table.xml")
    home = model.key("home")
    assert [round(float(home.qpos[7 + i]), 4) for i in range(4)] == [0.4] * 4
    assert not any(line.startswith("WARNING") for line in made.lines), made.lines
