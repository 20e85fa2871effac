"""A robot modelled with another axis than z up (robolearn/scaffold/upright.py): new-task plans it
again with each other axis up where its home pose falls over, keeps the way it stands on its feet,
and robot.py turns what the base carries so the base's frame is z up and x forward. A Y-up
quadruped comes out as its Z-up twin; a robot that falls every way is warned of, not turned."""

from __future__ import annotations

import mujoco
import numpy as np
import pytest

from robolearn.scaffold import new_task
from robolearn.scaffold.plan import run_step

from .test_new_task import _module
from .test_new_task_stand import _dog, _v
from .test_new_task_urdf_copy import _edited_model

TRUNK_INERTIA = np.array([[0.02, 0.004, 0.0], [0.004, 0.05, 0.001], [0.0, 0.001, 0.06]])
"""The trunk's moments in the Z-up model's frame: unequal, with products, so a turn shows."""

ZUP = np.eye(3)
LAIKAGO = np.array([[0, 1, 0], [0, 0, 1], [1, 0, 0]])
"""(forward, left, up) -> the model's axes as pybullet's Laikago has them: x left, y up, z forward."""
X_UP = np.array([[0, 0, 1], [1, 0, 0], [0, 1, 0]])
"""x up, y forward, z left."""


def _home(package, model_file: str) -> tuple[mujoco.MjModel, mujoco.MjData]:
    model = _edited_model(package, model_file)
    data = mujoco.MjData(model)
    mujoco.mj_resetDataKeyframe(model, data, model.key("home").id)
    mujoco.mj_forward(model, data)
    return model, data


def _world_inertia(model: mujoco.MjModel, data: mujoco.MjData, body: str) -> np.ndarray:
    b = model.body(body).id
    frame = data.ximat[b].reshape(3, 3)
    return frame @ np.diag(model.body_inertia[b]) @ frame.T


@pytest.mark.parametrize("axes, up, forward", [(LAIKAGO, "+y", "+z"), (X_UP, "+x", "+y")])
def test_a_quadruped_modelled_with_another_axis_up_comes_out_as_its_z_up_twin(tmp_path, axes, up, forward):
    """As modelled, the dog lies on its side (pybullet's Laikago: +y up, +z forward) and its home pose
    falls over; new-task turns it: the same home pose, feet, gains and inertias as the dog written
    z up, with nothing said about the way up of that one."""
    (tmp_path / "zup.urdf").write_text(_dog(axes=ZUP, trunk=TRUNK_INERTIA))
    (tmp_path / "turned.urdf").write_text(_dog(axes=axes, trunk=TRUNK_INERTIA))
    twin = new_task("zup_dog", "locomotion", robot=tmp_path / "zup.urdf", out=tmp_path / "zup")
    made = new_task("turned_dog", "locomotion", robot=tmp_path / "turned.urdf", out=tmp_path / "turned")
    assert not any(line.startswith("up axis") for line in twin.lines), twin.lines
    assert made.lines[0].startswith("up axis: with the model's +z up "), made.lines
    assert f"with its {up} up it stands on its 4 feet -> robot.py turns what the base carries (UP_TURN): {up} up, {forward} forward" in made.lines[0]
    assert not any(line.startswith("WARNING") for line in made.lines), made.lines
    robot = _module(tmp_path / "turned" / "turned_dog" / "robot.py")
    ours = _module(tmp_path / "zup" / "zup_dog" / "robot.py")
    assert not hasattr(ours, "UP_TURN") and robot.__doc__.split("- ")[1].startswith("up axis")
    assert robot.DEFAULT_POSE == pytest.approx(ours.DEFAULT_POSE, abs=2e-3) and robot.KP == ours.KP
    model, data = _home(tmp_path / "turned" / "turned_dog", "turned.urdf")
    zmodel, zdata = _home(tmp_path / "zup" / "zup_dog", "zup.urdf")
    assert np.allclose(data.xquat[model.body("trunk").id], [1, 0, 0, 0])  # the base's frame: z up, x forward
    for body in ("trunk", "FR_foot", "FL_foot", "RR_foot", "RL_foot", "FL_thigh"):
        assert data.xpos[model.body(body).id] == pytest.approx(zdata.xpos[zmodel.body(body).id], abs=2e-3), body
    feet = {leg: data.xpos[model.body(f"{leg}_foot").id] - data.xpos[model.body("trunk").id] for leg in ("FR", "FL", "RR", "RL")}
    assert feet["FR"][0] > 0.1 and feet["RL"][0] < -0.1 and feet["FL"][1] > 0.05 and feet["FR"][1] < -0.05
    assert _world_inertia(model, data, "trunk") == pytest.approx(_world_inertia(zmodel, zdata, "trunk"), abs=1e-9)
    assert _world_inertia(model, data, "trunk") == pytest.approx(TRUNK_INERTIA + 0.0, abs=1e-9)


def _biped() -> str:
    """Two straight legs on point feet under a 6 kg body: it cannot stand still on them any way up."""
    inertial = '<inertial><mass value="{m}"/><inertia ixx="{i}" iyy="{i}" izz="{i}" ixy="0" ixz="0" iyz="0"/></inertial>'
    legs = ""
    for side, y in (("left", 0.08), ("right", -0.08)):
        legs += f"""
  <link name="{side}_leg">{inertial.format(m=0.5, i=2e-3)}<collision><origin xyz="0 0 -0.2"/><geometry><box size="0.03 0.03 0.4"/></geometry></collision></link>
  <joint name="{side}_hip" type="revolute"><parent link="body"/><child link="{side}_leg"/><origin xyz="0.03 {y} -0.05"/>
    <axis xyz="0 1 0"/><limit lower="-1" upper="1" effort="20" velocity="20"/></joint>
  <link name="{side}_foot">{inertial.format(m=0.05, i=1e-5)}<collision><geometry><sphere radius="0.01"/></geometry></collision></link>
  <joint name="{side}_ankle" type="fixed"><parent link="{side}_leg"/><child link="{side}_foot"/><origin xyz="0 0 -0.4"/></joint>"""
    return f"""<robot name="biped">
  <link name="body">{inertial.format(m=6.0, i=0.03)}<collision><geometry><box size="0.1 0.25 0.1"/></geometry></collision></link>{legs}
</robot>"""


def test_a_robot_that_falls_every_way_up_is_warned_of_and_not_turned(tmp_path):
    (tmp_path / "biped.urdf").write_text(_biped())
    made = new_task("point_feet", "locomotion", robot=tmp_path / "biped.urdf", out=tmp_path / "pkg")
    assert not any(line.startswith("up axis") for line in made.lines), made.lines
    warning = next(line for line in made.lines if line.startswith("WARNING: holding the home pose"))
    assert warning.endswith("; no other axis of the model as up (+y, -y, +x, -x) stood it either"), warning
    robot = _module(tmp_path / "pkg" / "point_feet" / "robot.py")
    assert not hasattr(robot, "UP_TURN") and "import numpy" not in (tmp_path / "pkg" / "point_feet" / "robot.py").read_text()


BASE_XML = """<mujoco><compiler angle="degree"/><worldbody>
  <body name="base" pos="0 0 1">
    <inertial pos="0.1 0.02 -0.03" mass="3" diaginertia="0.01 0.02 0.03" euler="20 0 35"/>
    <geom name="rod" type="capsule" fromto="0 0 0 0.3 0.1 0" size="0.02" mass="0"/>
    <frame pos="0 0.1 0" euler="0 0 90"><site name="tip" pos="0.05 0 0.02"/></frame>
    <camera name="eye" pos="0.2 0 0.1" xyaxes="0 -1 0 0 0 1"/>
    <body name="child" pos="0.1 0 -0.2" euler="0 30 0"><joint name="j" axis="0 1 0"/><geom name="shin" size="0.03" pos="0 0 -0.1" mass="1"/></body>
  </body></worldbody></mujoco>"""


@pytest.mark.parametrize("explicit", ["diaginertia", "fullinertia"])
def test_the_turn_moves_everything_the_base_carries_and_leaves_its_frame(explicit):
    """turn_upright (robot.py's edit) on an MJCF base with a fromto geom, a frame, a camera, a child
    body and an inertial given by principal moments and euler angles, or by a full matrix: each
    turns about the base's origin, the base's own frame does not."""
    xml = BASE_XML if explicit == "diaginertia" else BASE_XML.replace(
        'diaginertia="0.01 0.02 0.03" euler="20 0 35"', 'fullinertia="0.02 0.025 0.03 0.002 0.001 -0.003"')
    quat = (0.5, 0.5, 0.5, 0.5)  # the model's y up, z forward (pybullet's Laikago)
    turn = np.zeros(9)
    mujoco.mju_quat2Mat(turn, np.array(quat))
    turn = turn.reshape(3, 3)

    def posed(turned: bool) -> tuple[mujoco.MjModel, mujoco.MjData]:
        spec = mujoco.MjSpec.from_string(xml)
        if turned:
            run_step(spec, "turn_upright", BASE="base", UP_TURN=quat)
        model = spec.compile()
        data = mujoco.MjData(model)
        mujoco.mj_forward(model, data)
        return model, data

    (model, data), (was, before) = posed(True), posed(False)
    base = np.array([0.0, 0.0, 1.0])
    assert data.xquat[1] == pytest.approx([1, 0, 0, 0]) and data.xpos[1] == pytest.approx(base)
    for kind, name in (("geom", "rod"), ("geom", "shin"), ("site", "tip"), ("cam", "eye"), ("body", "child")):
        pos, old = (getattr(d, f"{'x' if kind == 'body' else kind + '_x'}pos")[getattr(m, kind if kind != 'cam' else 'camera')(name).id]
                    for m, d in ((model, data), (was, before)))  # fmt: skip
        assert pos - base == pytest.approx(turn @ (old - base), abs=1e-9), name
    assert data.geom_xmat[model.geom("rod").id].reshape(3, 3) == pytest.approx(turn @ before.geom_xmat[was.geom("rod").id].reshape(3, 3), abs=1e-9)
    assert data.xipos[1] - base == pytest.approx(turn @ (before.xipos[1] - base), abs=1e-9)
    assert _world_inertia(model, data, "base") == pytest.approx(turn @ _world_inertia(was, before, "base") @ turn.T, abs=1e-9)


def test_the_imu_stays_as_mounted_on_the_imu_link_of_a_turned_robot(tmp_path):
    """The IMU new-task adds goes on the model's imu_link, with the link's axes (the real IMU's
    mounting: tests/e2e/test_new_task_urdf_copy.py). Turning the base's contents upright carries
    the link with the trunk: the IMU sits where it did on the robot, 5 cm ahead of the trunk's
    origin and 2 cm up, while the base's own frame is level."""
    link = f"""  <link name="imu_link"><inertial><mass value="0.01"/><inertia ixx="1e-6" iyy="1e-6" izz="1e-6" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <joint name="imu_fixed" type="fixed"><parent link="trunk"/><child link="imu_link"/><origin xyz="{_v(LAIKAGO, 0.05, 0, 0.02)}"/></joint>
</robot>"""  # fmt: skip
    (tmp_path / "dog.urdf").write_text(_dog(axes=LAIKAGO, trunk=TRUNK_INERTIA).replace("</robot>", link))
    made = new_task("imu_dog", "locomotion", robot=tmp_path / "dog.urdf", out=tmp_path / "pkg")
    assert made.lines[0].startswith("up axis:") and any(line.startswith("IMU: missing -> added site 'imu' on imu_link") for line in made.lines)
    model, data = _home(tmp_path / "pkg" / "imu_dog", "dog.urdf")
    trunk = model.body("trunk").id
    assert data.site_xmat[model.site("imu").id] == pytest.approx(data.xmat[model.body("imu_link").id], abs=1e-9)
    assert data.xquat[trunk] == pytest.approx([1, 0, 0, 0], abs=1e-9)
    assert data.site_xpos[model.site("imu").id] - data.xpos[trunk] == pytest.approx([0.05, 0, 0.02], abs=1e-6)
