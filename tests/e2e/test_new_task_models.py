"""`robolearn new-task` on robots shaped like the third-party models users bring (gymnasium's MuJoCo
assets, dm_control-style scenes): unnamed foot bodies, legs that only reach the ground in the
standing pose, goal markers and objects beside the robot, an end-effector sensor on an object,
passive joints of an underactuated robot, a robot lying down or swimming. What new-task finds
and writes is checked here; one install trains each generated task."""

from __future__ import annotations

import sys
from pathlib import Path

import mujoco
import numpy as np
import pytest
import yaml

from robolearn.scaffold import new_task
from robolearn.scene.geometry import geom_corners

from .conftest import robolearn
from .test_new_task import FAST, _module, ok, run

FINGER = """<mujoco><worldbody><light pos="0 0 2"/>
  <body name="finger" pos="0 0 0.4"><joint name="proximal" axis="0 1 0" range="-110 110"/>
    <geom type="capsule" fromto="0 0 0 0 0 -0.17" size="0.03"/>
    <body name="distal" pos="0 0 -0.17"><joint name="distal" axis="0 1 0" range="-110 110"/>
      <geom type="capsule" fromto="0 0 0 0 0 -0.16" size="0.028"/><site name="touchtop" pos="0 0 -0.16"/></body></body>
  <body name="spinner" pos="0.2 0 0.4"><joint name="hinge" axis="0 1 0" damping="0.5"/>
    <geom type="capsule" fromto="-0.1 0 0 0.1 0 0" size="0.02"/><site name="tip" pos="0.1 0 0"/></body>
</worldbody>
<actuator><motor name="proximal" joint="proximal" gear="30"/><motor name="distal" joint="distal" gear="15"/></actuator>
<sensor><framepos name="tip" objtype="site" objname="tip"/></sensor></mujoco>"""
"""dm_control's finger, reduced: a two-link finger and, beside it, a passive spinner whose tip a
framepos sensor reads (the task's goal, not the finger's end effector)."""


def gym_asset(name: str) -> Path:
    import gymnasium

    return Path(gymnasium.__file__).parent / "envs" / "mujoco" / "assets" / name


def yaml_task(pkg: Path, name: str) -> dict:
    return yaml.safe_load((pkg / name / f"{name}.yaml").read_text())


def test_unnamed_feet_that_reach_the_ground_only_in_the_standing_pose_get_contact_sensors(tmp_path):
    """gymnasium's ant: at qpos0 its legs are level and the torso is the lowest point; its ankles'
    limits (30-70 degrees) bend them down in the pose new-task stands it in. The ankle bodies have no
    names: robot.py names them after their geoms and puts a touch sensor on each that holds the whole capsule."""
    made = new_task("ant_walk", "locomotion", robot=gym_asset("ant.xml"), out=tmp_path / "pkg")
    feet = ["left_ankle", "right_ankle", "third_ankle", "fourth_ankle"]
    assert any(line.endswith(": " + ", ".join(feet)) and line.startswith("feet (guessed") for line in made.lines), made.lines
    assert not any(line.startswith("WARNING") for line in made.lines), made.lines
    robot = _module(tmp_path / "pkg" / "ant_walk" / "robot.py")
    assert robot.BODY_NAMES == {f: f"{f}_geom" for f in feet}
    spec = mujoco.MjSpec.from_file(str(tmp_path / "pkg" / "ant_walk" / "ant.xml"))
    robot.apply(spec)
    model = spec.compile()
    data = mujoco.MjData(model)
    mujoco.mj_resetDataKeyframe(model, data, model.key("home").id)
    mujoco.mj_kinematics(model, data)
    for foot in feet:
        site = model.site(f"{foot}_contact")
        assert model.site_bodyid[site.id] == model.body(foot).id
        assert model.sensor(f"{foot}_contact").type == mujoco.mjtSensor.mjSENS_TOUCH
        corners = geom_corners(model, data, model.geom(f"{foot}_geom").id)  # the site holds the whole ankle capsule
        assert (np.linalg.norm(corners - data.site_xpos[site.id], axis=1) < model.site_size[site.id, 0]).all()
    assert yaml_task(tmp_path / "pkg", "ant_walk")["rewards"]["feet_air_time"]["params"]["sensors"] == [f"{f}_contact" for f in feet]


BOX_FEET = """<mujoco><option timestep="0.005"/><worldbody><light pos="0 0 3"/>
  <geom name="floor" type="plane" size="5 5 0.1"/>
  <body name="pelvis" pos="0 0 0.6"><freejoint/><geom type="box" size="0.1 0.15 0.05" mass="5"/>
""" + "".join(f"""    <body name="{side}_thigh" pos="0 {y} -0.05"><joint name="{side}_hip" axis="0 1 0" range="-60 60"/>
      <geom type="capsule" fromto="0 0 0 0 0 -0.25" size="0.03"/>
      <body name="{side}_shin" pos="0 0 -0.25"><joint name="{side}_knee" axis="0 1 0" range="-120 0"/>
        <geom type="capsule" fromto="0 0 0 0 0 -0.22" size="0.025"/>
        <body name="{side}_foot" pos="0 0 -0.25"><joint name="{side}_ankle" axis="0 1 0" range="-45 45"/>
          <geom type="box" pos="0.03 0 -0.02" size="0.09 0.05 0.015"/></body></body></body>
""" for side, y in (("left", 0.1), ("right", -0.1))) + """  </body></worldbody>
<actuator>""" + "".join(f'<motor joint="{s}_{j}" gear="30" ctrlrange="-1 1"/>' for s in ("left", "right") for j in ("hip", "knee", "ankle")) + """</actuator></mujoco>"""
"""A biped with flat box feet: on the ground a box touches at its corners, never under its centre."""


@pytest.mark.parametrize("asset", ["walker2d_v5.xml", "ant.xml", "box_feet.xml"])
def test_an_added_foot_sensor_reads_every_force_on_its_foot(tmp_path, asset):
    """A touch sensor counts a contact only when the contact point lies in its site. The Walker2d's
    feet are lying capsules that touch the ground at their two ends, the Ant's are long diagonal
    capsules, the box-footed biped's feet touch at their corners: the site new-task adds holds the
    whole foot, so over 3 s of random full-range actions (48 foot-steps with a foot pressing down on the
    Ant, 127 on the biped, 470 on the Walker2d) each
    sensor reads exactly the normal force of its foot's contacts. Sites at a foot's lowest point read
    nothing on the Walker2d (its feet_air_time reward was zero all through a 600-iteration run)."""
    if asset == "box_feet.xml":
        (tmp_path / asset).write_text(BOX_FEET)
    name = asset.split("_")[0].split(".")[0]
    new_task(name, "locomotion", robot=tmp_path / asset if asset == "box_feet.xml" else gym_asset(asset), out=tmp_path / "pkg")
    robot = _module(tmp_path / "pkg" / name / "robot.py")
    spec = mujoco.MjSpec.from_file(str(tmp_path / "pkg" / name / asset))
    robot.apply(spec)
    model = spec.compile()
    data = mujoco.MjData(model)
    feet = {sensor: model.body(body).id for sensor, (body, _, _) in robot.NEW_FOOT_SENSORS.items()}
    assert len(feet) == {"walker2d_v5.xml": 2, "ant.xml": 4, "box_feet.xml": 2}[asset]
    rng, force, loaded = np.random.default_rng(0), np.zeros(6), 0
    low, high = model.actuator_ctrlrange.T
    mujoco.mj_resetDataKeyframe(model, data, model.key("home").id)
    for step in range(int(3.0 / model.opt.timestep)):
        if step % max(1, round(0.1 / model.opt.timestep)) == 0:
            data.ctrl[:] = rng.uniform(low, high)
        mujoco.mj_step(model, data)
        mujoco.mj_forward(model, data)  # contacts and sensors of one state (an RK4 step keeps its last stage's contacts)
        for sensor, body in feet.items():
            expected = 0.0
            for j, contact in enumerate(data.contact[: data.ncon]):
                if body in (model.geom_bodyid[contact.geom1], model.geom_bodyid[contact.geom2]):
                    mujoco.mj_contactForce(model, data, j, force)
                    expected += max(force[0], 0.0)
            loaded += expected > 0
            assert data.sensor(sensor).data[0] == pytest.approx(expected, rel=1e-9, abs=1e-9), (step, sensor)
    assert loaded >= 40, loaded


def test_a_goal_markers_joints_are_not_the_robots(tmp_path):
    """gymnasium's reacher: its target moves on two slides of its own body tree, which no actuator
    touches. The task's joint observations, penalties and resets name the arm's joints only, so the
    bundle never asks the robot for a goal marker's encoders."""
    made = new_task("reacher_goal", "reach", robot=gym_asset("reacher.xml"), out=tmp_path / "pkg")
    assert any(line.startswith("joints of bodies no actuator moves: target_x, target_y") for line in made.lines), made.lines
    task = yaml_task(tmp_path / "pkg", "reacher_goal")
    arm = ["joint0", "joint1"]
    for group in ("policy", "critic"):
        terms = task["observations"][group]["terms"]
        assert terms["joint_pos"]["params"] == {"relative": True, "joints": ["joint1"]}
        assert terms["joint_pos_cos_sin"]["params"] == {"joints": ["joint0"]}  # joint0 turns without limits
        assert terms["joint_vel"]["params"] == {"joints": arm}
    assert task["rewards"]["joint_limits"]["params"]["joints"] == arm
    assert task["rewards"]["joint_vel"]["params"] == {"joints": arm}
    assert task["events"]["reset_joints"]["params"]["joints"] == arm


def test_an_end_effector_sensor_on_an_object_is_not_the_arms(tmp_path):
    """The only framepos sensor reads the spinner's tip, a passive object: the reach template takes
    the finger's own tip as the end effector instead of refusing the robot as one that cannot move it."""
    (tmp_path / "finger.xml").write_text(FINGER)
    made = new_task("finger_reach", "reach", robot=tmp_path / "finger.xml", out=tmp_path / "pkg")
    assert "joints of bodies no actuator moves: hinge (a target or an object, not the robot's: the task's joint " \
           "observations, penalties and resets leave them out)" in made.lines  # fmt: skip
    assert "end effector (guessed: the end of the longest joint chain): site touchtop on body distal" in made.lines, made.lines
    ranges = yaml_task(tmp_path / "pkg", "finger_reach")["commands"]["ee_target"]["ranges"]
    assert ranges["x"][1] - ranges["x"][0] > 0.1 and ranges["z"][1] - ranges["z"][0] > 0.1, ranges


def test_an_underactuated_robot_observes_its_passive_joints(tmp_path):
    """gymnasium's inverted double pendulum under the minimal template: the motor drives the cart's
    slide alone, but the policy must see both poles to keep them up (their hinges have no limits: as
    the cos and sin of their angles); units follow each joint's kind."""
    new_task("idp_minimal", "minimal", robot=gym_asset("inverted_double_pendulum.xml"), out=tmp_path / "pkg")
    task = yaml_task(tmp_path / "pkg", "idp_minimal")
    policy = task["observations"]["policy"]["terms"]
    assert policy["joint_pos"]["params"]["joints"] == ["slider"]
    assert policy["joint_pos_cos_sin"]["params"]["joints"] == ["hinge", "hinge2"]  # the poles turn without limits
    assert policy["joint_pos"]["units"] == "m" and policy["joint_vel"]["units"] == "rad/s or m/s"
    assert policy["target"]["units"] == "m"  # the command is the cart's position
    assert list(task["commands"]["joint_target"]["ranges"]) == ["slider"]
    assert task["events"]["reset_joints"]["params"]["joints"] == ["slider", "hinge", "hinge2"]


@pytest.mark.parametrize("asset,warning", [
    ("humanoidstandup.xml", "WARNING: in the standing pose the base is only 0.193 m above the robot's lowest point"),
    ("swimmer.xml", "WARNING: the model moves in a fluid (density 4000, viscosity 0.1)"),
])  # fmt: skip
def test_the_locomotion_template_says_when_its_guesses_may_not_fit(tmp_path, asset, warning):
    """A humanoid lying on its back (its feet would be guessed on its forearms) and a swimmer: the
    task is still written, and the report says what to check."""
    made = new_task("doubtful", "locomotion", robot=gym_asset(asset), out=tmp_path / "pkg")
    assert any(line.startswith(warning) for line in made.lines), made.lines


def test_the_generated_tasks_of_third_party_shaped_robots_train(tmp_path):
    """The ant (renamed feet; limits soft for its motors: no watchdog termination, actions at 0.3),
    the reacher (its arm's joints named in every joint term) and the double pendulum (passive joints
    observed) install and train."""
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    new_task("ant_walk", "locomotion", robot=gym_asset("ant.xml"), out=pkg / "ant_walk")
    new_task("reacher_goal", "reach", robot=gym_asset("reacher.xml"), out=pkg / "reacher_goal")
    new_task("idp_minimal", "minimal", robot=gym_asset("inverted_double_pendulum.xml"), out=pkg / "idp_minimal")
    site, work = tmp_path / "site", tmp_path / "work"
    work.mkdir()
    ok(run(sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation", "--target", str(site),
           *(str(pkg / n) for n in ("ant_walk", "reacher_goal", "idp_minimal")), cwd=tmp_path))  # fmt: skip
    for name in ("ant_walk", "reacher_goal", "idp_minimal"):
        run_dir = work / name
        ok(robolearn("train", f"task={name}", *FAST, "runner.export_onnx=false", f"hydra.run.dir={run_dir}", cwd=work,
                     path=[site]))  # fmt: skip
        assert len((run_dir / "metrics.jsonl").read_text().splitlines()) == 2
    ant = yaml.safe_load((work / "ant_walk" / ".hydra" / "config.yaml").read_text())["task"]
    assert "past_joint_limits" not in ant["terminations"] and ant["action"]["scale"] == 0.3


def test_a_warning_mujoco_gives_at_every_compile_is_said_once(tmp_path):
    """gymnasium's half_cheetah sets compiler settotalmass, which MuJoCo 4 deprecates at every
    compile (MjSpec.compile warns through Python's `warnings`); new-task compiles the model many
    times. It is said once, in the report's line of MuJoCo's warnings, not on stderr."""
    result = robolearn("new-task", "cheetah", "--template", "locomotion", "--robot", str(gym_asset("half_cheetah.xml")),
                       cwd=tmp_path)  # fmt: skip
    assert result.returncode == 0, result.stderr[-2000:]
    assert "settotalmass" not in result.stderr, result.stderr
    said = [line for line in result.stdout.splitlines() if "compiler attribute 'settotalmass' is deprecated" in line]
    assert len(said) == 1 and said[0].strip().startswith("MuJoCo's warnings on the model (1): "), result.stdout


def test_robots_whose_limits_their_motors_overshoot_get_no_watchdog_termination(tmp_path):
    """gymnasium's Walker2d: its 100 N m motors take its feet 0.3 rad past their MJCF range within
    0.1 s (the limits are soft for them), so the watchdog's termination ended 98 % of the first
    episodes within 2-3 steps and the policy learned to end them sooner (docs/benchmarks.md,
    2026-11-29); the Ant's hips go 0.0985 rad past, and the termination ended 80-100 % of its episodes
    in each of 30 iterations (2026-11-30). Each task is written with that termination commented out
    and the report says why, and its actions scaled to a third of full effort; the hopper (limits
    that hold) and the half_cheetah (0.041 rad past: the termination's share was 4 % or less
    from iteration 12 on) keep both as they were."""
    for asset in ("walker2d_v5.xml", "ant.xml"):
        name = asset.split("_")[0].split(".")[0]
        made = new_task(name, "locomotion", robot=gym_asset(asset), out=tmp_path / name)
        line = next(line for line in made.lines if line.startswith("joint limits: soft for the motors"))
        assert "rad past its range within 0.1 s at full effort) -> no past_joint_limits termination" in line, line
        task = yaml_task(tmp_path / name, name)
        assert "past_joint_limits" not in task["terminations"] and "joint_limits" in task["rewards"]
        assert task["action"]["scale"] == 0.3  # its first, random actions at a third of full effort
        text = (tmp_path / name / name / f"{name}.yaml").read_text()
        assert "  # past_joint_limits: {func: joint_pos_past_limits, params: {margin: 0.1" in text, text
    for asset in ("hopper.xml", "half_cheetah.xml"):
        name = asset[:-4]
        made = new_task(name, "locomotion", robot=gym_asset(asset), out=tmp_path / name)
        assert not any(line.startswith("joint limits") for line in made.lines), made.lines
        task = yaml_task(tmp_path / name, name)
        assert task["terminations"]["past_joint_limits"]["params"]["margin"] == 0.1 and task["action"]["scale"] == 1.0


def test_the_limit_probe_tells_a_soft_limit_from_one_that_holds():
    """A 0.3 m link on a hinge limited to +-0.5 rad: a 50 N m motor pushes it well past the (soft,
    MuJoCo's default) limit within 0.1 s; a 1 N m one does not reach past it."""
    from robolearn.scaffold.limit_probe import limit_overshoot, soft_limits

    def arm(gear):
        return mujoco.MjModel.from_xml_string(f"""<mujoco><compiler angle="radian"/><option gravity="0 0 0"/>
          <worldbody><body><joint name="j" axis="0 0 1" range="-0.5 0.5"/>
            <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.02" mass="0.5"/></body></worldbody>
          <actuator><motor joint="j" gear="{gear}" ctrlrange="-1 1"/></actuator></mujoco>""")

    strong, weak = limit_overshoot(arm(50), ["j"])["j"], limit_overshoot(arm(1), ["j"])["j"]
    assert strong > 0.2 and weak < 0.05, (strong, weak)
    assert soft_limits(arm(50), ["j"]) == {"j": strong} and soft_limits(arm(1), ["j"]) == {}


def test_motors_whose_full_effort_makes_the_simulation_diverge_get_a_smaller_action_scale(tmp_path):
    """robosuite's GR1 drives its joints with +-20000 N m motors (its own controllers scale them); a
    policy's first, saturating actions blow such a model up. new-task holds every motor at the ends of
    its range for 0.1 s and, where MuJoCo finds the accelerations bad, scales the actions down to the
    largest of 0.3, 0.1, ... that keeps it finite. A model where none does is warned of."""
    import yaml

    from robolearn.scaffold import new_task
    from robolearn.scaffold.limit_probe import stable_scale

    def arm(gear: float) -> str:
        return f"""<mujoco><compiler angle="radian"/>
          <worldbody><body><joint name="j" axis="0 1 0" range="-0.5 0.5"/>
            <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.02" mass="0.5"/></body></worldbody>
          <actuator><motor name="m" joint="j" gear="{gear}" ctrlrange="-1 1"/></actuator></mujoco>"""

    assert stable_scale(mujoco.MjModel.from_xml_string(arm(100))) == 1.0
    assert stable_scale(mujoco.MjModel.from_xml_string(arm(1e9))) == 0.1  # 1e8 N m holds, 3e8 does not
    # each motor at most the torque that holds the whole robot at arm's length: 0.5 kg x 9.81 x the model's extent
    model = mujoco.MjModel.from_xml_string(arm(1e9))
    cap = 0.5 * 9.81 * model.stat.extent
    (tmp_path / "arm.xml").write_text(arm(1e9))
    made = new_task("huge_arm", "minimal", robot=tmp_path / "arm.xml", out=tmp_path / "pkg")
    assert ("motors: held at the ends of their control ranges the simulation diverges within 0.1 s (the strongest: m, "
            "1e+09 at full action) -> each motor's actions scaled by the largest factor at which it stays finite, pushed "
            "alone and then with the others (at most the torque that holds the whole robot at arm's length): "
            f"{cap / 1e9:.2g} x for 1 (m: {cap:.3g} at full action)") in made.lines, made.lines  # fmt: skip
    task = yaml.safe_load((tmp_path / "pkg" / "huge_arm" / "huge_arm.yaml").read_text())
    assert abs(task["action"]["scale"] * 1e9 - cap) < 1e-3 * cap
    (tmp_path / "hopeless.xml").write_text(arm(1e13))
    made = new_task("hopeless_arm", "minimal", robot=tmp_path / "hopeless.xml", out=tmp_path / "pkg2")
    assert any(line.startswith("WARNING: motors: held at the ends of their control ranges the simulation diverges within "
                               "0.1 s, even at 0.0001 x") for line in made.lines), made.lines  # fmt: skip
    assert yaml.safe_load((tmp_path / "pkg2" / "hopeless_arm" / "hopeless_arm.yaml").read_text())["action"]["scale"] == 1.0


def test_one_motor_that_diverges_does_not_weaken_the_others(tmp_path):
    """robosuite's GR1: its wrists (1e-7 kg m^2 under +-20000 N m) diverge above 0.0003 x, and one
    scale for all left its legs +-6 N m, too weak to stand. Each motor is probed alone and then with
    the others: a 5 N m motor on a 2 kg link keeps its full range beside a 1e9 N m one, which is
    capped at the torque that holds the whole model at arm's length."""
    import yaml

    from robolearn.scaffold import new_task

    text = """<mujoco><compiler angle="radian"/><worldbody>
      <body><joint name="light" axis="0 1 0" range="-0.5 0.5"/><geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.02" mass="0.5"/></body>
      <body pos="0 0.5 0"><joint name="heavy" axis="0 1 0" range="-0.5 0.5"/><geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.04" mass="2"/></body>
      </worldbody><actuator><motor name="huge" joint="light" gear="1e9" ctrlrange="-1 1"/>
      <motor name="fair" joint="heavy" gear="5" ctrlrange="-1 1"/></actuator></mujoco>"""
    cap = 2.5 * 9.81 * mujoco.MjModel.from_xml_string(text).stat.extent
    (tmp_path / "arms.xml").write_text(text)
    made = new_task("two_arms", "minimal", robot=tmp_path / "arms.xml", out=tmp_path / "pkg")
    line = next(line for line in made.lines if line.startswith("motors:"))
    assert line.endswith(f"1 x for 1 (fair: 5 at full action); {cap / 1e9:.2g} x for 1 (huge: {cap:.3g} at full action)"), line
    scale = yaml.safe_load((tmp_path / "pkg" / "two_arms" / "two_arms.yaml").read_text())["action"]["scale"]
    assert set(scale) == {"huge"} and abs(scale["huge"] * 1e9 - cap) < 1e-3 * cap, scale  # the others: 1.0


def test_motors_whose_range_is_not_plus_minus_one_get_actions_mapped_onto_it(tmp_path):
    """robosuite's Panda drives its joints with motors of +-80 and +-12 N m: with action.scale 1 a
    policy's actions were +-1 N m, too weak to lift the arm. The scale maps -1..1 onto each range."""
    import yaml

    from robolearn.scaffold import new_task

    (tmp_path / "arm.xml").write_text("""<mujoco><compiler angle="radian"/>
      <worldbody><body><joint name="j1" axis="0 1 0" range="-1 1"/><geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.02" mass="2"/>
        <body pos="0.3 0 0"><joint name="j2" axis="0 1 0" range="-1 1"/><geom type="capsule" fromto="0 0 0 0.2 0 0" size="0.02" mass="0.5"/>
      </body></body></worldbody>
      <actuator><motor name="m1" joint="j1" ctrlrange="-80 80"/><motor name="m2" joint="j2" ctrlrange="-12 12"/></actuator></mujoco>""")
    made = new_task("torque_arm", "minimal", robot=tmp_path / "arm.xml", out=tmp_path / "pkg")
    assert ("actions: 2 actuators take controls in [-12.0, 12.0], [-80.0, 80.0], not -1..1: action.offset and "
            "action.scale map actions -1..1 onto those ranges") in made.lines, made.lines  # fmt: skip
    task = yaml.safe_load((tmp_path / "pkg" / "torque_arm" / "torque_arm.yaml").read_text())
    assert task["action"]["scale"] == {"m1": 80.0, "m2": 12.0} and task["action"]["offset"] == {"m1": 0.0, "m2": 0.0}
