"""`robolearn new-task` on joints the templates' joint terms cannot treat as a limited hinge: velocity
servos (their kv is damping, integrated implicitly), unlimited hinges such as wheels (observed as
cos and sin of their angle; the minimal template's targets centred on the default pose's angle and
their errors wrapped), ball joints (named in the report, left out), and the pose template's tool
pitched near +-pi/2, where its roll, pitch and yaw ranges meet gimbal lock."""

from __future__ import annotations

import importlib
import math
import shutil
from pathlib import Path
from types import SimpleNamespace

import mujoco
import numpy as np
import pytest
import torch
import yaml

from robolearn.scaffold import new_task

from .test_new_task_pose import ARM

DIFFDRIVE = """<mujoco model="diffdrive"><option timestep="0.005"/><worldbody><light pos="0 0 3"/>
  <geom name="floor" type="plane" size="5 5 0.1"/>
  <body name="chassis" pos="0 0 0.08"><freejoint name="root"/>
    <geom type="box" size="0.15 0.1 0.03" mass="2"/><site name="imu"/>
    <body name="left_wheel" pos="0 0.12 0" quat="0.7071 0.7071 0 0"><joint name="left_wheel_joint" axis="0 0 1"/>
      <geom type="cylinder" size="0.06 0.015" mass="0.2" friction="1.5"/></body>
    <body name="right_wheel" pos="0 -0.12 0" quat="0.7071 0.7071 0 0"><joint name="right_wheel_joint" axis="0 0 1"/>
      <geom type="cylinder" size="0.06 0.015" mass="0.2" friction="1.5"/></body>
    <geom name="caster" type="sphere" pos="0.12 0 -0.04" size="0.02" friction="0.01"/></body></worldbody>
  <actuator><velocity name="left_motor" joint="left_wheel_joint" kv="1" ctrlrange="-10 10"/>
    <velocity name="right_motor" joint="right_wheel_joint" kv="1" ctrlrange="-10 10"/></actuator>
  <sensor><gyro name="gyro" site="imu"/></sensor></mujoco>"""
"""A differential-drive robot on Euler: velocity servos (kv 1) on 0.2 kg wheels, kv dt / I = 14."""

SPINNER = """<mujoco model="spinner"><compiler angle="radian"/><option timestep="0.005" gravity="0 -9.81 0"/>
  <worldbody><light pos="0 0 3"/><body name="wheel" pos="0 0 0.5"><joint name="spin" axis="1 0 0" damping="0.05"/>
    <geom type="capsule" fromto="0 0 0 0 0.3 0" size="0.03" mass="0.5"/>
    <body name="tip" pos="0 0.3 0"><joint name="slider" type="slide" axis="0 1 0" damping="2" range="-0.1 0.1"/>
      <geom type="sphere" size="0.05" mass="0.2"/></body></body></worldbody>
  <actuator><motor name="spin_m" joint="spin" forcerange="-3 3" forcelimited="true"/><motor name="slide_m" joint="slider"/></actuator>
  <keyframe><key name="home" qpos="1.0 0.05"/></keyframe></mujoco>"""
"""A continuous hinge (no limits) whose home keyframe is at 1 rad, and a limited slide."""


def _task(package: Path, name: str) -> dict:
    return yaml.safe_load((package / name / f"{name}.yaml").read_text())


def test_velocity_servos_get_the_integrator_that_keeps_them_stable(tmp_path):
    """A velocity servo's kv is damping as a position servo's is: under the model's explicit Euler
    the light wheels' servos blow up; the generated task sets implicitfast and says why."""
    (tmp_path / "diffdrive.xml").write_text(DIFFDRIVE)
    made = new_task("wheels", "locomotion", robot=tmp_path / "diffdrive.xml", out=tmp_path / "pkg")
    line = next((line for line in made.lines if line.startswith("integrator: euler -> implicitfast")), None)
    assert line is not None and "left_motor, right_motor" in line and "kv" in line, made.lines
    assert _task(tmp_path / "pkg", "wheels")["sim"] == {"integrator": "implicitfast"}
    for integrator, stable in ((mujoco.mjtIntegrator.mjINT_EULER, False), (mujoco.mjtIntegrator.mjINT_IMPLICITFAST, True)):
        model = mujoco.MjModel.from_xml_string(DIFFDRIVE)
        model.opt.integrator = integrator
        data = mujoco.MjData(model)
        data.ctrl[:] = [10.0, -10.0]
        for _ in range(400):
            mujoco.mj_step(model, data)
        diverged = data.warning[mujoco.mjtWarning.mjWARN_BADQACC].number > 0 or not np.isfinite(data.qvel).all()
        assert diverged != stable, integrator


def test_wheels_are_observed_through_the_cos_and_sin_of_their_angle(tmp_path):
    """A wheel's angle grows without bound as the robot drives: the locomotion template observes
    its cos and sin (a deploy source), not joint_pos, and the report says so."""
    (tmp_path / "diffdrive.xml").write_text(DIFFDRIVE)
    made = new_task("wheel_obs", "locomotion", robot=tmp_path / "diffdrive.xml", out=tmp_path / "pkg")
    assert any(line.startswith("unlimited hinges: left_wheel_joint, right_wheel_joint") and "joint_pos_cos_sin" in line
               for line in made.lines), made.lines  # fmt: skip
    task = _task(tmp_path / "pkg", "wheel_obs")
    for group in ("policy", "critic"):
        terms = task["observations"][group]["terms"]
        assert "joint_pos" not in terms, terms  # no limited joint left to observe as an angle
        assert terms["joint_pos_cos_sin"]["func"] == "joint_pos_cos_sin"
        assert terms["joint_pos_cos_sin"]["params"] == {"joints": ["left_wheel_joint", "right_wheel_joint"]}


def test_an_unlimited_hinges_targets_are_centred_on_home_and_its_error_wrapped(tmp_path, installed_tasks, make_env, monkeypatch):
    """minimal on a continuous hinge: its targets lie about the home keyframe's 1 rad, not about 0;
    the policy sees its cos and sin; and a hinge a full turn past its target has reached it."""
    (tmp_path / "spinner.xml").write_text(SPINNER)
    made = new_task("spin_target", "minimal", robot=tmp_path / "spinner.xml", out=tmp_path / "pkg")
    assert any(line.startswith("unlimited hinges: spin ") and "wrapped to +-pi" in line for line in made.lines), made.lines
    task = _task(tmp_path / "pkg", "spin_target")
    assert task["commands"]["joint_target"]["ranges"]["spin"] == [0.2, 1.8]
    assert task["commands"]["joint_target"]["ranges"]["slider"] == [-0.08, 0.08]
    policy = task["observations"]["policy"]["terms"]
    assert policy["joint_pos"]["params"] == {"joints": ["slider"]} and policy["joint_pos"]["units"] == "m"
    assert policy["joint_pos_cos_sin"]["params"] == {"joints": ["spin"]}
    assert task["rewards"]["track_target"]["params"]["wrap"] == ["spin"]
    assert task["metrics"]["target_error"]["params"]["wrap"] == ["spin"]

    site = tmp_path / "site"
    shutil.copytree(tmp_path / "pkg" / "spin_target", site / "spin_target")
    monkeypatch.syspath_prepend(str(site))
    plugin = installed_tasks["spin_target"] = importlib.import_module("spin_target").TASK
    env = make_env("spin_target", overrides=["randomization=none"], num_envs=4)
    env.reset()
    joints = env.scene.joints(["spin", "slider"])
    target = env.commands.get("joint_target")
    qpos = env.physics.qpos.clone()
    qpos[:, joints.qpos] = target + torch.tensor([2 * math.pi, 0.0])  # a full turn past the target
    turned = SimpleNamespace(scene=env.scene, commands=env.commands, device=env.device, physics=SimpleNamespace(qpos=qpos))
    wrapped = plugin.terms["joint_target_error"](turned, "joint_target", joints, ["spin"])
    assert wrapped.abs().max() < 1e-5, wrapped
    reward = plugin.terms["track_joint_target_exp"](turned, "joint_target", 0.25, joints, ["spin"])
    assert (reward > 0.999).all(), reward
    plain = plugin.terms["joint_target_error"](turned, "joint_target", joints)
    assert (plain[:, 0] + 2 * math.pi).abs().max() < 1e-5  # without wrap: a turn away


def test_ball_joints_left_out_are_named_in_the_report(tmp_path):
    """No generic term reads a ball joint: the report names the shoulder it leaves out of the
    observations, targets and resets, and says how to observe it."""
    (tmp_path / "ball.xml").write_text("""<mujoco><worldbody><body name="base" pos="0 0 0.5">
      <geom type="box" size="0.1 0.1 0.1" mass="5"/>
      <body name="upper" pos="0 0 0.1"><joint name="shoulder" type="ball" range="0 90"/>
        <geom type="capsule" fromto="0 0 0 0 0 0.3" size="0.03" mass="1"/>
        <body name="lower" pos="0 0 0.3"><joint name="elbow" axis="0 1 0" range="-120 120"/>
          <geom type="capsule" fromto="0 0 0 0 0 0.3" size="0.025" mass="0.5"/></body></body></body></worldbody>
      <actuator><motor name="sh_x" joint="shoulder" gear="20 0 0"/><motor name="elbow" joint="elbow" gear="10"/></actuator></mujoco>""")
    made = new_task("ball_report", "minimal", robot=tmp_path / "ball.xml", out=tmp_path / "pkg")
    line = next((line for line in made.lines if line.startswith("ball joints: shoulder -> left out")), None)
    assert line is not None and "framequat" in line, made.lines
    task = _task(tmp_path / "pkg", "ball_report")
    assert task["observations"]["policy"]["terms"]["joint_pos"]["params"]["joints"] == ["elbow"]


def _pose_arm(folder: Path, site: str = "", tool: str = "") -> Path:
    text = ARM.replace("ACTUATORS", "".join(f'<position joint="j{k}" name="j{k}" kp="30" kv="1"/>' for k in range(1, 7)))
    if tool:
        text = text.replace('<body name="tool" pos="0.05 0 0">', f'<body name="tool" pos="0.05 0 0" {tool}>')
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "arm.xml").write_text(text.replace("SITE", site).replace("SENSORS", ""))
    return folder / "arm.xml"


def _gimbal_warning(lines: list[str]) -> str | None:
    return next((line for line in lines if line.startswith("WARNING") and "gimbal lock" in line), None)


@pytest.mark.parametrize("site, tool, fix", [
    ('<site name="ee" pos="0.06 0 0" euler="0 80 0"/>', "", 'give site ee quat="'),
    ("", 'euler="0 -80 0"', '<site name="ee" pos="'),
])
def test_a_tool_pitched_near_a_quarter_turn_is_warned_of_with_the_site_turn_that_fixes_it(tmp_path, site, tool, fix):
    """At pitch +-pi/2 roll and yaw turn the tool about one axis: the +-0.4 rad ranges about the
    default orientation would leave a third axis almost unturned. new-task warns and names the site
    frame (the model's site turned, or one to add) whose default orientation is roll, pitch, yaw 0;
    with it, new-task warns no more and the ranges are centred on 0."""
    made = new_task("pitched", "pose", robot=_pose_arm(tmp_path / "a", site, tool), out=tmp_path / "pkg")
    warning = _gimbal_warning(made.lines)
    assert warning is not None and fix in warning, made.lines
    assert "pitch (1.40 rad)" in warning or "pitch (-1.40 rad)" in warning, warning
    quat = [float(v) for v in warning.split('quat="')[1].split('"')[0].split()]
    if site:
        fixed_site = site.replace('euler="0 80 0"', f'quat="{" ".join(map(str, quat))}"')
    else:
        fixed_site = warning.split("add ")[1].split(" to body")[0]
        assert "to body tool" in warning
    again = new_task("pitched_fixed", "pose", robot=_pose_arm(tmp_path / "b", fixed_site, tool), out=tmp_path / "pkg2")
    assert _gimbal_warning(again.lines) is None, again.lines
    ranges = _task(tmp_path / "pkg2", "pitched_fixed")["commands"]["ee_orientation"]["ranges"]
    for axis in ("roll", "pitch", "yaw"):
        assert abs(sum(ranges[axis]) / 2) < 1e-3, ranges


def test_a_tool_pitched_well_away_from_a_quarter_turn_gets_no_warning(tmp_path):
    made = new_task("pitched_60", "pose", robot=_pose_arm(tmp_path / "a", '<site name="ee" pos="0.06 0 0" euler="0 60 0"/>'),
                    out=tmp_path / "pkg")  # fmt: skip
    assert _gimbal_warning(made.lines) is None, made.lines


@pytest.mark.parametrize("name, ranges", [("spin_unknown", {"spin": [0.2, 1.8], "nosuch": [0, 1]}),  # not in the model
                                          ("spin_swapped", {"slider": [-0.08, 0.08], "spin": [0.2, 1.8]})])  # fmt: skip
def test_a_target_range_per_joint_names_the_terms_joints_in_their_order(tmp_path, installed_tasks, make_env, monkeypatch,
                                                                         name, ranges):  # fmt: skip
    """minimal's target command has one component per joint, matched to the term's joints by
    position: ranges naming another joint, or the joints in another order, would train each joint
    toward another's target. The task fails at build, in one line."""
    from robolearn.errors import UserError

    (tmp_path / "spinner.xml").write_text(SPINNER)
    new_task(name, "minimal", robot=tmp_path / "spinner.xml", out=tmp_path / "pkg")
    yaml_file = tmp_path / "pkg" / name / f"{name}.yaml"
    task = _task(tmp_path / "pkg", name)
    assert list(task["commands"]["joint_target"]["ranges"]) == ["spin", "slider"]
    task["commands"]["joint_target"]["ranges"] = ranges
    yaml_file.write_text(yaml.safe_dump(task, sort_keys=False))
    site = tmp_path / "site"
    shutil.copytree(tmp_path / "pkg" / name, site / name)
    monkeypatch.syspath_prepend(str(site))
    installed_tasks[name] = importlib.import_module(name).TASK
    named = ", ".join(ranges)
    with pytest.raises(UserError, match=rf"commands\.joint_target\.ranges names {named}, but the term's joints are "
                                        r"spin, slider; valid: one range per joint, in the joints' order"):  # fmt: skip
        make_env(name, overrides=["randomization=none"], num_envs=2)
