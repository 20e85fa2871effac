"""`robolearn new-task --template pose`: the reach template plus an orientation target. The
convention of the commanded roll, pitch and yaw (MuJoCo's quaternion composition), the target's
centre (the end effector's orientation in the default pose, in the base frame, a site's own turn
included), the orientation sensor (the model's, or one robot.py adds that reads what the plan
assumed), and arms that cannot turn their tool in three axes refused in one line. The pose package
installs, trains, exports and runs sim-to-sim with the other templates (test_new_task.py)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import mujoco
import numpy as np
import pytest
import yaml

from robolearn.errors import UserError
from robolearn.scaffold import new_task
from robolearn.scaffold.pose_plan import ORIENTATION_SPREAD, euler_from_matrix
from robolearn_deploy.observations import quat_from_euler

ARM = """<mujoco model="six_joint_arm">
  <worldbody>
    <geom name="floor" type="plane" size="2 2 0.1"/>
    <body name="base" pos="0.2 0.1 0.05" euler="0 0 90">
      <geom type="cylinder" size="0.06 0.05"/>
      <body name="link1" pos="0 0 0.05"><joint name="j1" axis="0 0 1" range="-170 170"/>
        <geom type="capsule" fromto="0 0 0 0 0 0.2" size="0.03"/>
        <body name="link2" pos="0 0 0.2"><joint name="j2" axis="0 1 0" range="-120 120"/>
          <geom type="capsule" fromto="0 0 0 0.25 0 0" size="0.025"/>
          <body name="link3" pos="0.25 0 0"><joint name="j3" axis="0 1 0" range="-150 150"/>
            <geom type="capsule" fromto="0 0 0 0.2 0 0" size="0.02"/>
            <body name="link4" pos="0.2 0 0"><joint name="j4" axis="1 0 0" range="-170 170"/>
              <geom type="capsule" fromto="0 0 0 0.05 0 0" size="0.02"/>
              <body name="link5" pos="0.05 0 0"><joint name="j5" axis="0 1 0" range="-120 120"/>
                <geom type="capsule" fromto="0 0 0 0.05 0 0" size="0.02"/>
                <body name="tool" pos="0.05 0 0"><joint name="j6" axis="1 0 0" range="-170 170"/>
                  <geom type="box" size="0.03 0.02 0.02" pos="0.03 0 0"/>SITE
                </body></body></body></body></body></body></body>
  </worldbody>
  <actuator>ACTUATORS</actuator>SENSORS
</mujoco>"""


def arm(folder: Path, driven=("j1", "j2", "j3", "j4", "j5", "j6"), site: str = "", sensors: str = "") -> Path:
    text = ARM.replace("ACTUATORS", "".join(f'<position joint="{j}" name="{j}" kp="30" kv="1"/>' for j in driven))
    (folder / "arm.xml").write_text(text.replace("SITE", site).replace("SENSORS", sensors))
    return folder / "arm.xml"


def _module(path: Path):
    spec = importlib.util.spec_from_file_location(f"_gen_{abs(hash(path))}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _task(package: Path, name: str) -> dict:
    return yaml.safe_load((package / name / f"{name}.yaml").read_text())


@pytest.mark.parametrize(("roll", "pitch", "yaw"), [(3.0, 0.2, -2.5), (-0.7, -1.2, 0.4), (np.pi, 0.0, np.pi),
                                                    (0.0, np.pi / 2, 1.0), (0.0, -np.pi / 2, -2.0)])  # fmt: skip
def test_roll_pitch_yaw_read_back_from_a_rotation_give_the_quaternion_the_runtime_builds(roll, pitch, yaw):
    """euler_from_matrix inverts command_quat's composition: the angles it reads from a rotation
    make the same quaternion (up to sign) as the rotation's own, MuJoCo's conversion."""
    quat = np.zeros(4)
    quat_from_euler(roll, pitch, yaw, quat)
    rot = np.zeros(9)
    mujoco.mju_quat2Mat(rot, quat)
    again = np.zeros(4)
    quat_from_euler(*euler_from_matrix(rot.reshape(3, 3)), again)
    assert abs(abs(float(quat @ again)) - 1.0) < 1e-9, (quat, again)
    r, p, y = euler_from_matrix(rot.reshape(3, 3))
    assert -np.pi / 2 <= p <= np.pi / 2 and -np.pi < r <= np.pi and -np.pi < y <= np.pi


def test_the_built_in_arm_uses_its_own_sensors_and_targets_about_its_tool_pointing_down(tmp_path):
    """assets/arm.xml has ee_pos and ee_quat (framepos/framequat of site ee in the base frame): no
    edit. Its home pose points the tool down: half a turn about y, i.e. roll pi, pitch 0, yaw pi."""
    made = new_task("arm_pose_gen", "pose", out=tmp_path / "pkg")
    assert not (tmp_path / "pkg" / "arm_pose_gen" / "robot.py").exists()
    assert "end-effector orientation: sensor ee_quat (orientation of site ee in the frame of base)" in made.lines
    task = _task(tmp_path / "pkg", "arm_pose_gen")
    s = ORIENTATION_SPREAD
    expected = {"roll": [round(np.pi - s, 4), round(np.pi + s, 4)], "pitch": [-s, s], "yaw": [round(np.pi - s, 4), round(np.pi + s, 4)]}
    assert task["commands"]["ee_orientation"]["ranges"] == expected
    assert task["observations"]["policy"]["terms"]["ee_orientation"]["func"] == "command_quat"
    assert task["rewards"]["ee_orientation"]["params"] == {"sensor": ["ee_quat"], "command": "ee_orientation"}
    assert task["metrics"]["ee_orientation_error"]["units"] == "rad"
    reach = _task(new_task("arm_reach_gen", "reach", out=tmp_path / "reach").folder, "arm_reach_gen")
    assert "ee_orientation" not in reach["commands"] and "ee_orientation" not in reach["rewards"]
    # position targets in front of the arm, about its home point (0.38, 0, 0.62), where the tool can point
    # down with every joint within 0.8 rad of home; reach's where every joint is within 1.2 rad of home (a
    # wider box, still in front: the whole reach, all round the base, was x -0.42..0.44, y -0.5..0.46)
    ranges, reach_ranges = task["commands"]["ee_target"]["ranges"], reach["commands"]["ee_target"]["ranges"]
    for axis, home in zip("xyz", (0.38, 0.0, 0.62)):
        low, high = ranges[axis]
        assert low < home < high and high - low < 0.9 * (reach_ranges[axis][1] - reach_ranges[axis][0]), (axis, ranges, reach_ranges)
        assert reach_ranges[axis][0] < home < reach_ranges[axis][1], (axis, reach_ranges)
    assert ranges["x"][0] > 0.05 and ranges["z"][0] > 0.05  # in front of the base, above the floor
    assert reach_ranges["x"][0] > -0.15 and -0.35 < reach_ranges["y"][0] < reach_ranges["y"][1] < 0.35, reach_ranges


@pytest.mark.parametrize(("site", "centre_yaw"), [("", 0.0), ('<site name="tool_tip" pos="0.06 0 0" euler="0 0 90"/>', np.pi / 2)])
def test_an_arm_without_an_orientation_sensor_gets_one_that_reads_what_the_targets_assume(tmp_path, site, centre_yaw):
    """The arm's base is turned a quarter about z in the world; at its default pose (all joints 0)
    the tool body is aligned with the base, so the target's centre is roll 0, pitch 0, yaw 0 in the
    base frame (not the world's yaw pi/2), plus a site's own quarter turn where the model marks the
    tool with a turned site. The sensor robot.py adds reads, at any configuration, the orientation
    the plan computed for it."""
    sensors = '<sensor><framepos name="tip_pos" objtype="site" objname="tool_tip" reftype="xbody" refname="base"/></sensor>'
    made = new_task("six_pose", "pose", robot=arm(tmp_path, site=site, sensors=sensors if site else ""), out=tmp_path / "pkg")
    package = tmp_path / "pkg" / "six_pose"
    robot = _module(package / "robot.py")
    assert robot.EE_QUAT_SENSOR == "ee_quat" and robot.BASE == "base" and robot.EE_SITE == ("tool_tip" if site else "ee")
    assert any(line.startswith("end-effector orientation sensor: missing -> added framequat sensor 'ee_quat'") for line in made.lines)
    ranges = _task(tmp_path / "pkg", "six_pose")["commands"]["ee_orientation"]["ranges"]
    s = ORIENTATION_SPREAD
    assert ranges == {"roll": [-s, s], "pitch": [-s, s], "yaw": [round(centre_yaw - s, 4), round(centre_yaw + s, 4)]}
    spec = mujoco.MjSpec.from_file(str(package / "arm.xml"))
    robot.apply(spec)
    model = spec.compile()
    data = mujoco.MjData(model)
    gen = np.random.default_rng(3)
    sensor = model.sensor("ee_quat")
    for _ in range(5):
        data.qpos[:] = gen.uniform(-1.0, 1.0, model.nq)
        mujoco.mj_forward(model, data)
        site_id = model.site(robot.EE_SITE).id
        relative = data.xmat[model.body("base").id].reshape(3, 3).T @ data.site_xmat[site_id].reshape(3, 3)
        expected = np.zeros(4)
        mujoco.mju_mat2Quat(expected, relative.ravel())
        read = data.sensordata[sensor.adr[0]:sensor.adr[0] + 4]
        assert abs(abs(float(read @ expected)) - 1.0) < 1e-9, (read, expected)


@pytest.mark.parametrize(("driven", "rank"), [(("j1", "j2", "j3", "j5"), 4), (("j1", "j2", "j3", "j4", "j5"), 5)])
def test_an_arm_that_cannot_turn_its_tool_in_three_axes_is_refused_in_one_line(tmp_path, driven, rank):
    """With 4 or 5 of the 6 joints driven the tool moves in 4 or 5 independent directions (the
    Jacobian's rank): position and orientation cannot be commanded independently. The reach
    template takes the same arm."""
    with pytest.raises(UserError, match=rf"arm.xml: the joints the policy drives move the end effector \(site ee\) in {rank} "
                       r"independent directions relative to base; a pose \(position and orientation\) needs 6: use "
                       r"--template reach"):  # fmt: skip
        new_task("short_arm", "pose", robot=arm(tmp_path, driven), out=tmp_path / "pkg")
    assert not (tmp_path / "pkg").exists()
    new_task("short_arm", "reach", robot=arm(tmp_path, driven), out=tmp_path / "reach")


def test_reach_targets_keep_5_cm_above_a_floor_that_is_not_at_zero(tmp_path):
    """gymnasium's pusher stands over a table plane at z = -0.325: the targets' lowest height is 5 cm
    above that plane (-0.275), not 5 cm above the world's z = 0 (which left the table out)."""
    import gymnasium

    pusher = Path(gymnasium.__file__).parent / "envs" / "mujoco" / "assets" / "pusher.xml"
    for template in ("reach", "pose"):
        z = _task(new_task("pusher_arm", template, robot=pusher, out=tmp_path / template).folder, "pusher_arm")
        low, high = z["commands"]["ee_target"]["ranges"]["z"]
        assert -0.285 <= low < 0.0 and high - low > 0.1, (template, low, high)
