"""`robolearn new-task`: each template's package installs the regular (non-editable) way, trains,
exports and runs sim-to-sim; `--robot` fills a bare legged MJCF and a URDF; mistakes are one line.

The generated packages are installed with `pip install --no-deps --target <site>` into one folder
put on PYTHONPATH: a real build of the generated pyproject.toml, so its entry point and its package
data (the YAML, the model and its meshes) are what the tasks are found and loaded through.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import mujoco
import pytest
import torch

from robolearn import cli
from robolearn.errors import UserError
from robolearn.paths import assets_dir
from robolearn.scaffold import new_task
from robolearn.scaffold.inspect_model import inspect_model

from .conftest import robolearn

URDF = Path(__file__).resolve().parents[1] / "fixtures" / "urdf_robot" / "robot.urdf"
FAST = ["runner.max_iterations=2", "env.num_envs=8", "runner.num_steps_per_env=8", "algo.num_mini_batches=1",
        "runner.video_interval=0", "runner.progress=false", "logger=none", "task.episode_length_s=1.0"]  # fmt: skip
TEMPLATES = ("minimal", "locomotion", "reach", "pose")


def bare_quadruped(folder: Path) -> Path:
    """assets/quadruped.xml without its actuators, sensors and sites: what a robot's MJCF often is."""
    text = (assets_dir() / "quadruped.xml").read_text()
    for section in ("actuator", "sensor"):
        text = re.sub(rf"<{section}>.*?</{section}>", "", text, flags=re.S)
    text = re.sub(r"\s*<site [^>]*/>", "", text)
    folder.mkdir()
    (folder / "bare.xml").write_text(text)
    return folder / "bare.xml"


def ros_urdf(folder: Path) -> Path:
    """The URDF fixture as a ROS package ships it: <pkg>/urdf/robot.urdf naming package://<pkg>/meshes/
    files, without MuJoCo's <mujoco> extension block (new-task must add what MuJoCo needs)."""
    package = folder / "urdf_robot"
    (package / "urdf").mkdir(parents=True)
    shutil.copytree(URDF.parent / "meshes", package / "meshes")
    text = re.sub(r"\n\s*<mujoco>\s*<compiler [^>]*/>\s*</mujoco>", "", URDF.read_text())
    assert "package://urdf_robot/meshes/" in text and "<compiler" not in text
    (package / "urdf" / "robot.urdf").write_text(text)
    return package / "urdf" / "robot.urdf"


def gym_hopper() -> Path:
    """gymnasium's Hopper: a planar robot (rootx, rootz, rooty between the world and its torso)."""
    import gymnasium

    return Path(gymnasium.__file__).parent / "envs" / "mujoco" / "assets" / "hopper.xml"


def run(*args: str, cwd: Path, site: Path | None = None, timeout: int = 600) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    if site is not None:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(site), env.get("PYTHONPATH")]))
    return subprocess.run(list(args), cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


def ok(result: subprocess.CompletedProcess) -> str:
    assert result.returncode == 0, (result.args, result.stdout[-2000:], result.stderr[-3000:])
    return result.stdout


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """One package per template, one for a bare legged MJCF (--robot, through the CLI) and one for
    the URDF fixture, all built and installed into one site folder."""
    ws = tmp_path_factory.mktemp("new_task")
    folders = [new_task(f"nt_{t}", t, out=ws / f"nt_{t}").folder for t in TEMPLATES]
    folders.append(new_task("nt_urdf_reach", "reach", robot=ros_urdf(ws / "ros"), out=ws / "nt_urdf_reach").folder)
    bare = bare_quadruped(ws / "robot_src")
    report = ok(robolearn("new-task", "nt_bare_legs", "--template", "locomotion", "--robot", str(bare), cwd=ws))
    folders.append(ws / "nt_bare_legs")
    folders.append(new_task("nt_planar", "locomotion", robot=gym_hopper(), out=ws / "nt_planar").folder)
    site = ws / "site"
    ok(run(sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation", "--target", str(site),
           *map(str, folders), cwd=ws))  # fmt: skip
    work = ws / "work"  # far from the sources: only the installed copies can be found
    work.mkdir()
    return ws, site, work, report


@pytest.mark.parametrize("template", TEMPLATES)
def test_a_template_installs_trains_exports_and_runs_sim2sim(installed, template):
    ws, site, work, _ = installed
    name = f"nt_{template}"
    assert (site / name / f"{name}.yaml").is_file()  # package data made it into the regular install
    run_dir = work / f"run_{template}"
    ok(robolearn("train", f"task={name}", *FAST, f"hydra.run.dir={run_dir}", cwd=work, path=[site]))
    assert (run_dir / "export" / "policy.onnx").is_file()
    ok(robolearn("export", f"run={run_dir}", cwd=work, path=[site]))
    out = ok(robolearn("sim2sim", f"bundle={run_dir / 'export'}", "episodes=1", cwd=work, path=[site]))
    assert f"sim2sim {name}" in out


def test_a_bare_legged_robot_gets_what_locomotion_needs_and_trains(installed):
    ws, site, work, report = installed
    # a robot on its feet: one gain for every leg joint, 2 x its 14.9 kg (what the template's robots trained with)
    for line in ("actuators: none -> added a position servo on each of the 12 joints (KP=30.0, KD=0.75: placeholders",
                 "IMU: missing -> added site 'imu'",
                 "feet (guessed: the leaf body of each leg chain that reaches the ground in the standing pose): FL_calf, FR_calf, RL_calf, RR_calf",
                 "foot contact sensors: missing on 4 feet -> added touch sensors FL_calf_contact",
                 "home keyframe: missing -> added 'home'", "floating base: body trunk (free joint)"):  # fmt: skip
        assert line in report, report
    assert "next: pip install -e" in report
    robot_py = (ws / "nt_bare_legs" / "nt_bare_legs" / "robot.py").read_text()
    assert "def add_position_actuators" in robot_py and "def add_foot_sensors" in robot_py and "TODO" in robot_py
    run_dir = work / "run_bare"
    ok(robolearn("train", "task=nt_bare_legs", *FAST, "runner.export_onnx=false", f"hydra.run.dir={run_dir}", cwd=work,
                 path=[site]))  # fmt: skip
    assert len((run_dir / "metrics.jsonl").read_text().splitlines()) == 2


def test_a_planar_robot_walks_on_its_base_joints_through_train_export_and_sim2sim(installed):
    """gymnasium's hopper moves on slides and a hinge, not a free joint: no free joint is added (the
    model would not compile), the task tracks a forward speed on rootx, ends an episode on rootz and
    rooty, and the bundle reads those joints (on a robot: a boom's encoders)."""
    import yaml

    ws, site, work, _ = installed
    readme = (ws / "nt_planar" / "README.md").read_text()
    assert "planar base: body torso moves on rootx (forward), rootz (height), rooty (pitch): no free joint is added" in readme
    task = yaml.safe_load((ws / "nt_planar" / "nt_planar" / "nt_planar.yaml").read_text())
    assert task["rewards"]["track_forward_velocity"]["params"] == {"command": "forward_velocity", "joints": ["rootx"], "std": 0.5}
    # thigh and leg range [-150, 0] degrees: home bends them 15 degrees off the straight-leg limit; the torso
    # then starts 1.2846 m up (the foot 5 mm above the floor), and a fall ends at half that height
    assert task["terminations"]["base_too_low"]["params"] == {"joints": ["rootz"], "bounds": [0.6423, 1000.0]}
    assert task["terminations"]["rooty_too_far"]["params"] == {"joints": ["rooty"], "bounds": [-1.0, 1.0]}
    assert task["observations"]["policy"]["terms"]["base_pose"]["params"]["joints"] == ["rootz", "rooty"]
    run_dir = work / "run_planar"
    ok(robolearn("train", "task=nt_planar", *FAST, f"hydra.run.dir={run_dir}", cwd=work, path=[site]))
    robot = yaml.safe_load((run_dir / "export" / "robot.yaml").read_text())
    assert robot["default_pose"]["rootz"] == pytest.approx(1.2846)
    out = ok(robolearn("sim2sim", f"bundle={run_dir / 'export'}", "episodes=1", cwd=work, path=[site]))
    assert "sim2sim nt_planar" in out


def test_a_planar_robot_without_actuators_gets_servos_on_its_legs_only(tmp_path):
    """The base's slides and hinge are not the robot's to drive: servos go on the leg joints."""
    import re

    text = re.sub(r"<actuator>.*</actuator>", "", gym_hopper().read_text(), flags=re.S)
    (tmp_path / "hopper.xml").write_text(text)
    made = new_task("bare_hop", "locomotion", robot=tmp_path / "hopper.xml", out=tmp_path / "pkg")
    assert "actuators: none -> added a position servo on each of the 3 joints" in " ".join(made.lines), made.lines
    robot = _module(tmp_path / "pkg" / "bare_hop" / "robot.py")
    assert robot.JOINTS == ("thigh_joint", "leg_joint", "foot_joint")


def test_a_planar_robot_on_tendons_observes_its_leg_joints(tmp_path):
    """Motors on tendons name no joint: the observations still list the legs' joints (not an empty list)."""
    import re

    import yaml

    legs = ("thigh_joint", "leg_joint", "foot_joint")
    tendons = "".join(f'<fixed name="{j}_t"><joint joint="{j}" coef="1"/></fixed>' for j in legs)
    motors = "".join(f'<motor name="{j}_m" tendon="{j}_t" gear="200"/>' for j in legs)
    text = re.sub(r"<actuator>.*</actuator>", f"<tendon>{tendons}</tendon><actuator>{motors}</actuator>",
                  gym_hopper().read_text(), flags=re.S)  # fmt: skip
    (tmp_path / "hopper.xml").write_text(text)
    new_task("rope_hop", "locomotion", robot=tmp_path / "hopper.xml", out=tmp_path / "pkg")
    task = yaml.safe_load((tmp_path / "pkg" / "rope_hop" / "rope_hop.yaml").read_text())
    assert task["observations"]["policy"]["terms"]["joint_pos"]["params"]["joints"] == list(legs)


def test_the_locomotion_template_refuses_a_robot_held_by_a_hinge(tmp_path):
    """A root body on a hinge (no free joint, no horizontal slide) cannot walk anywhere: one line."""
    (tmp_path / "pendulum.xml").write_text("""<mujoco><worldbody><body name="link" pos="0 0 1">
      <joint name="swing" axis="0 1 0"/><geom type="capsule" fromto="0 0 0 0 0 -0.5" size="0.05"/>
      <body name="tip" pos="0 0 -0.5"><joint name="knee" axis="0 1 0"/><geom type="capsule" fromto="0 0 0 0 0 -0.5" size="0.04"/>
      </body></body></worldbody><actuator><motor joint="knee"/></actuator></mujoco>""")
    with pytest.raises(UserError, match="the locomotion template needs a robot that moves freely or on a planar base "
                       r"\(a horizontal slide joint no actuator drives\); pendulum.xml's root body link is held by "
                       "swing, none of them a horizontal slide no actuator drives: use --template minimal or reach"):  # fmt: skip
        new_task("swinging", "locomotion", robot=tmp_path / "pendulum.xml", out=tmp_path / "pkg")
    assert not (tmp_path / "pkg").exists()


def test_the_locomotion_template_refuses_a_cart_on_a_driven_rail(tmp_path):
    """The cart-pole's slide is driven (a rail): not a planar base to walk on. Without its actuator the
    same slide moves freely, and the cart is a planar base."""
    with pytest.raises(UserError, match="cartpole.xml's root body cart is held by slider, driven \\(slider by actuator slide: "
                       "a rail or a mount that moves the robot, not a base that moves freely\\): use --template minimal or reach"):  # fmt: skip
        new_task("rail", "locomotion", robot=assets_dir() / "cartpole.xml", out=tmp_path / "pkg")
    assert not (tmp_path / "pkg").exists()
    text = re.sub(r"<actuator>.*</actuator>", "", (assets_dir() / "cartpole.xml").read_text(), flags=re.S)
    (tmp_path / "cart.xml").write_text(text)
    info = inspect_model(tmp_path / "cart.xml", mujoco.MjModel.from_xml_string(text))
    assert [(b.name, b.role) for b in info.planar] == [("slider", "forward")]


def test_a_driven_slide_under_the_root_is_refused_beside_one_nothing_drives(tmp_path):
    """gymnasium's point: its torso moves on slides ballx and bally and hinge rot; unnamed motors drive
    ballx and rot. bally alone is no planar base (nothing could move the robot along it): refused,
    naming what drives the others."""
    from .test_new_task_models import gym_asset

    with pytest.raises(UserError, match=r"held by ballx, bally, rot, driven \(ballx by an unnamed actuator, rot by an "
                       r"unnamed actuator: a rail or a mount that moves the robot"):  # fmt: skip
        new_task("point_walk", "locomotion", robot=gym_asset("point.xml"), out=tmp_path / "pkg")
    assert not (tmp_path / "pkg").exists()


def test_unnamed_actuators_are_named_so_a_bundle_can_carry_them(tmp_path):
    """brax's test pendulums drive their hinge with an unnamed velocity servo: the task trained, and
    export refused it ("actuator 0 (hinge joint 'hinge1') has no name"), since the robot driver gets
    an actuator's ctrl by its name. robot.py names each after what it drives."""
    from robolearn.export.metadata import _actuator_entry

    from .test_new_task_urdf_copy import _edited_model

    (tmp_path / "pendulum.xml").write_text("""<mujoco><worldbody><body name="arm" pos="0 0 1">
      <joint name="hinge1" axis="0 1 0" range="-90 90"/><geom type="capsule" fromto="0 0 0 0.5 0 0" size="0.05"/>
      <body name="tip" pos="0.5 0 0"><joint name="hinge2" axis="0 1 0" range="-90 90"/><geom type="sphere" size="0.05"/>
      </body></body></worldbody>
      <actuator><velocity joint="hinge1" kv="10"/><motor joint="hinge2" gear="5"/><motor name="hinge2_motor" joint="hinge2"/></actuator></mujoco>""")
    made = new_task("unnamed_pendulum", "minimal", robot=tmp_path / "pendulum.xml", out=tmp_path / "pkg")
    assert ("unnamed actuators: 2 -> named after what each drives: hinge1_actuator, hinge2_motor_2 (the task and a deploy "
            "bundle's robot driver find each actuator by its name)") in made.lines, made.lines  # fmt: skip
    model = _edited_model(tmp_path / "pkg" / "unnamed_pendulum", "pendulum.xml")
    assert [model.actuator(a).name for a in range(model.nu)] == ["hinge1_actuator", "hinge2_motor_2", "hinge2_motor"]
    assert _actuator_entry(model, 0)["kind"] == "actuator"  # the bundle carries it (it raised without a name)
    task = (tmp_path / "pkg" / "unnamed_pendulum" / "unnamed_pendulum.yaml").read_text()
    assert "actuators: [hinge1_actuator, hinge2_motor_2, hinge2_motor]" in task, task


def two_meshes(folder: Path) -> tuple[Path, Path]:
    """Two different STL files, both named link.stl, in folder/visual and folder/collision."""
    meshes = URDF.parent / "meshes"
    for kind, source in (("visual", "link_visual.stl"), ("collision", "link_collision.stl")):
        (folder / kind).mkdir(parents=True)
        shutil.copyfile(meshes / source, folder / kind / "link.stl")
    return folder / "visual" / "link.stl", folder / "collision" / "link.stl"


URDF_ARM = """<robot name="arm">
  <link name="base_link"><inertial><mass value="2"/><inertia ixx="0.01" iyy="0.01" izz="0.01" ixy="0" ixz="0" iyz="0"/></inertial>
    <collision><geometry><box size="0.1 0.1 0.1"/></geometry></collision></link>
  <link name="link"><inertial><origin xyz="0 0 0.1"/><mass value="0.5"/><inertia ixx="0.001" iyy="0.001" izz="0.001" ixy="0" ixz="0" iyz="0"/></inertial>
    <visual><geometry><mesh filename="VISUAL"/></geometry></visual>
    <collision><geometry><mesh filename="COLLISION"/></geometry></collision></link>
  <link name="finger"><inertial><mass value="0.05"/><inertia ixx="1e-5" iyy="1e-5" izz="1e-5" ixy="0" ixz="0" iyz="0"/></inertial>
    <collision><geometry><box size="0.01 0.01 0.04"/></geometry></collision></link>
  <link name="finger2"><inertial><mass value="0.05"/><inertia ixx="1e-5" iyy="1e-5" izz="1e-5" ixy="0" ixz="0" iyz="0"/></inertial>
    <collision><geometry><box size="0.01 0.01 0.04"/></geometry></collision></link>
  <joint name="shoulder" type="revolute"><parent link="base_link"/><child link="link"/><origin xyz="0 0 0.1"/>
    <axis xyz="0 1 0"/><limit lower="-1.5" upper="1.5" effort="5" velocity="3"/></joint>
  <joint name="grip" type="prismatic"><parent link="link"/><child link="finger"/><origin xyz="0 0.02 0.2"/>
    <axis xyz="0 1 0"/><limit lower="0" upper="0.04" effort="5" velocity="1"/></joint>
  <joint name="grip_mimic" type="prismatic"><parent link="link"/><child link="finger2"/><origin xyz="0 -0.02 0.2"/>
    <axis xyz="0 -1 0"/><limit lower="0" upper="0.04" effort="5" velocity="1"/><mimic joint="grip"/></joint>
</robot>"""
"""A ROS-shaped URDF arm: a visual and a collision mesh of the same file name in two folders, and a
gripper finger that mimics the other."""


def test_a_urdf_with_a_visual_and_a_collision_mesh_of_one_name_and_a_mimic_joint(tmp_path):
    """Both meshes are copied under names of their own and kept (the visual one draws, colliding with
    nothing); the mimic finger follows its leader: no servo, action, command or observation of its own;
    the 4 cm gripper slide's action scale is its range, not the hinge's 0.5."""
    import yaml

    visual, collision = two_meshes(tmp_path / "arm_description" / "meshes")
    urdf = tmp_path / "arm_description" / "urdf" / "arm.urdf"
    urdf.parent.mkdir()
    urdf.write_text(URDF_ARM.replace("VISUAL", "package://arm_description/meshes/visual/link.stl")
                    .replace("COLLISION", "package://arm_description/meshes/collision/link.stl"))  # fmt: skip
    made = new_task("gripper", "minimal", robot=urdf, out=tmp_path / "pkg")
    assert "coupled joints: grip_mimic follows grip (a joint equality, e.g. a URDF <mimic>) -> no servo, action or " \
           "command of their own" in made.lines, made.lines  # fmt: skip
    package = tmp_path / "pkg" / "gripper"
    copies = {p.name: p.read_bytes() for p in (package / "meshes").iterdir()}
    assert sorted(copies) == ["link.stl", "link_2.stl"]  # sorted sources: collision/ first
    assert copies["link.stl"] == collision.read_bytes() and copies["link_2.stl"] == visual.read_bytes()
    model = mujoco.MjModel.from_xml_path(str(package / "arm.urdf"))
    drawn = [g for g in range(model.ngeom) if model.geom_type[g] == mujoco.mjtGeom.mjGEOM_MESH and model.geom_contype[g] == 0]
    assert len(drawn) == 1 and model.geom_conaffinity[drawn[0]] == 0 and model.nmesh == 2
    task = yaml.safe_load((package / "gripper.yaml").read_text())
    assert task["action"]["actuators"] == ["shoulder", "grip"]
    assert task["action"]["scale"] == {"shoulder": 0.5, "grip": 0.04}  # the 4 cm slide's targets stay in its range
    assert "grip_mimic" not in str(task["observations"]) and "grip_mimic" not in str(task["commands"])
    robot = _module(package / "robot.py")
    spec = mujoco.MjSpec.from_file(str(package / "arm.urdf"))
    robot.apply(spec)
    assert [spec.actuators[k].name for k in range(len(spec.actuators))] == ["shoulder", "grip"]


def test_visual_meshes_that_cannot_be_read_are_left_out_with_a_note(tmp_path):
    """A visual mesh that neither MuJoCo nor new-task's COLLADA reader reads (here a .dae with no
    triangles) is left out with the visual meshes, and the report says why; the collision mesh is
    copied and the model compiles. A .dae that reads is kept, as STL (test_new_task_collada.py)."""
    from .test_new_task_collada import _dae

    _, collision = two_meshes(tmp_path / "meshes")
    (tmp_path / "meshes" / "visual" / "link.dae").write_text('<?xml version="1.0"?><COLLADA/>')
    (tmp_path / "arm.urdf").write_text(URDF_ARM.replace("VISUAL", "meshes/visual/link.dae").replace("COLLISION", "meshes/collision/link.stl"))
    made = new_task("dae_arm", "minimal", robot=tmp_path / "arm.urdf", out=tmp_path / "pkg")
    note = next(line for line in made.lines if line.startswith("visual meshes:"))
    assert "link.dae has no triangles in its scene" in note, note
    assert note.endswith('-> left out (discardvisual="true"); videos and viewers draw the collision geometry')
    package = tmp_path / "pkg" / "dae_arm"
    assert [p.name for p in (package / "meshes").iterdir()] == ["link.stl"]
    assert mujoco.MjModel.from_xml_path(str(package / "arm.urdf")).nmesh == 1
    (tmp_path / "meshes" / "visual" / "link.dae").write_text(_dae())
    made = new_task("dae_arm_drawn", "minimal", robot=tmp_path / "arm.urdf", out=tmp_path / "pkg2")
    assert not any(line.startswith("visual meshes:") for line in made.lines), made.lines
    assert mujoco.MjModel.from_xml_path(str(tmp_path / "pkg2" / "dae_arm_drawn" / "arm.urdf")).nmesh == 2


def test_a_wide_level_box_is_ground_and_a_geom_named_floor_that_is_not_keeps_its_name(tmp_path):
    """Scene files often make their ground a thin wide box: no plane is added on top of it. A small
    box named floor is no ground: the plane added beside it takes another name."""
    legs = re.sub(r'<geom name="floor"[^>]*/>', "", bare_quadruped(tmp_path / "src").read_text())
    for name, box, added in (("boxed", 'size="5 5 0.05" pos="0 0 -0.05"', None), ("stepped", 'size="0.2 0.2 0.05" pos="3 0 0"', "floor_2")):
        (tmp_path / f"{name}.xml").write_text(legs.replace("<worldbody>", f'<worldbody><geom name="floor" type="box" {box}/>', 1))
        made = new_task(name, "locomotion", robot=tmp_path / f"{name}.xml", out=tmp_path / name)
        floor_lines = [line for line in made.lines if line.startswith("floor:")]
        if added is None:
            assert floor_lines == [], made.lines
        else:
            assert floor_lines == [f"floor: missing -> added a ground plane '{added}' (its geom 'floor' is no ground: a plane, "
                                   "height field or wide level box)"], made.lines  # fmt: skip
            assert _module(tmp_path / name / name / "robot.py").FLOOR == added


def test_a_ground_off_zero_is_moved_there_and_no_gravity_gets_earths(tmp_path):
    """robosuite's robots are parts of a scene: GR1's MJCF carries its floor at z = -0.97 (the robot
    placed above it by the scene), and Spot's says gravity 0 0 0. The locomotion task measures
    heights from z = 0 and walks under gravity: the plane moves to 0, gravity comes back; the home
    pose then stands on the floor."""
    from .test_new_task_urdf_copy import _edited_model

    legs = bare_quadruped(tmp_path / "src").read_text()
    low = legs.replace('<geom name="floor" type="plane"', '<geom name="floor" pos="0 0 -0.97" type="plane"')
    low = low.replace('<option timestep="0.005"', '<option gravity="0 0 0" timestep="0.005"')
    assert 'pos="0 0 -0.97"' in low and 'gravity="0 0 0"' in low
    (tmp_path / "scene_part.xml").write_text(low)
    made = new_task("scene_part", "locomotion", robot=tmp_path / "scene_part.xml", out=tmp_path / "pkg")
    assert "floor: the model's ground plane is at z = -0.970 -> moved to z = 0 (the task measures heights from there: " \
           "the home pose's 5 mm clearance, base_below, base_height)" in made.lines, made.lines
    assert any(line.startswith("gravity: none in the model (0 0 0") for line in made.lines)
    model = _edited_model(tmp_path / "pkg" / "scene_part", "scene_part.xml")
    assert model.geom("floor").pos[2] == 0.0 and list(model.opt.gravity) == [0.0, 0.0, -9.81]
    data = mujoco.MjData(model)
    mujoco.mj_resetDataKeyframe(model, data, model.key("home").id)
    start = float(data.qpos[2])
    for _ in range(250):  # half a second: a robot 0.97 m above its floor would have fallen 1.2 m
        mujoco.mj_step(model, data)
    assert data.ncon > 0 and data.qpos[2] > start - 0.15, (start, float(data.qpos[2]))


def test_joint_names_yaml_would_read_as_something_else_are_quoted(tmp_path):
    """Joints named null, yes, on, True, 1.5 or '#wrist: roll' come back from the task YAML as those names."""
    from robolearn.task_yaml import load_task_yaml

    names = ["null", "yes", "on", "True", "1.5", "#wrist: roll", "plain_joint"]
    bodies = "".join(f'<body pos="0 0 0.1"><joint name="{n}" axis="0 1 0" range="-1 1"/><geom type="capsule" '
                     'fromto="0 0 0 0 0 0.1" size="0.01"/>' for n in names) + "</body>" * len(names)  # fmt: skip
    (tmp_path / "arm.xml").write_text(f"<mujoco><worldbody>{bodies}</worldbody></mujoco>")
    new_task("odd_names", "minimal", robot=tmp_path / "arm.xml", out=tmp_path / "pkg")
    task = load_task_yaml(tmp_path / "pkg" / "odd_names" / "odd_names.yaml")
    assert task["action"]["actuators"] == names
    assert task["observations"]["policy"]["terms"]["joint_pos"]["params"]["joints"] == names


def test_a_urdf_robot_with_meshes_trains(installed):
    ws, site, work, _ = installed
    package = site / "nt_urdf_reach"
    assert {p.name for p in (package / "meshes").iterdir()} == {"base.stl", "link_collision.stl", "link_visual.stl"}
    readme = (ws / "nt_urdf_reach" / "README.md").read_text()
    assert "actuators: none -> added a position servo" in readme and "end-effector position sensor" in readme
    ok(robolearn("train", "task=nt_urdf_reach", *FAST, "runner.export_onnx=false", f"hydra.run.dir={work / 'run_urdf'}",
                 cwd=work, path=[site]))  # fmt: skip


def test_the_generated_smoke_test_passes(installed):
    ws, site, _, _ = installed
    ok(run(sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests", cwd=ws / "nt_minimal", site=site))


def _snapshot(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest() for p in folder.rglob("*") if p.is_file()}


@pytest.mark.parametrize(("args", "expected"), [
    (["My-Task"], "invalid task name 'My-Task'"),
    (["class"], "invalid task name 'class': a Python keyword cannot name the task's package"),
    (["x" * 300], "invalid task name 'xxxxxxxxxxxxxxxxxxxx...' (300 characters); valid: up to 64"),
    (["ok_name", "--template", "humanoid"], "unknown template 'humanoid'; valid: minimal, locomotion, reach, pose"),
    (["ok_name", "--robot", "missing.xml"], "robot model not found: missing.xml"),
    (["ok_name", "--robot", "notes.txt"], "expected an MJCF file (.xml) or a URDF (.urdf)"),
    (["ok_name", "--robot", "rover.urdf.xacro"], "robot model rover.urdf.xacro is a xacro file, which writes a URDF; valid: "
                                                 "an MJCF file (.xml) or a URDF (.urdf): run `xacro rover.urdf.xacro > robot.urdf`"),
    (["ok_name", "--robot", "broken.xml"], "cannot load robot model"),
    (["cartpole"], "a task named 'cartpole' is already installed"),
    (["json"], "a Python module named 'json' is already installed"),
    (["existing"], "existing already exists; new-task never writes into an existing folder"),
    (["ok_name", "--out", "existing"], "existing already exists"),
    (["ok_name", "--out", "notes.txt/pkg"], "cannot create notes.txt/pkg: notes.txt is a file, not a folder; valid: --out DIR"),
    (["ok_name", "--template"], "--template needs a value; valid: minimal, locomotion, reach, pose"),
    (["ok_name", "extra"], "unexpected argument 'extra'"),
    ([], "new-task needs the task's NAME"),
])  # fmt: skip
def test_mistakes_are_one_line_and_change_nothing(tmp_path, monkeypatch, capsys, args, expected):
    (tmp_path / "existing").mkdir()
    (tmp_path / "existing" / "mine.txt").write_text("my work\n")
    (tmp_path / "notes.txt").write_text("not a robot\n")
    (tmp_path / "broken.xml").write_text("<mujoco><worldbody><geom type='sphere'/></worldbody></mujoco")
    (tmp_path / "rover.urdf.xacro").write_text('<robot name="rover" xmlns:xacro="http://www.ros.org/wiki/xacro"/>\n')
    before = _snapshot(tmp_path)
    monkeypatch.chdir(tmp_path)
    assert cli.main(["new-task", *args]) == 2
    lines = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("robolearn new-task: error: ") and expected in lines[0], lines
    assert _snapshot(tmp_path) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["broken.xml", "existing", "notes.txt", "rover.urdf.xacro"]  # no staging left


def test_help_lists_the_options(capsys):
    assert cli.main(["new-task", "--help"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: robolearn new-task") and "--template minimal|locomotion|reach|pose" in out and "--robot" in out


LIGHT_ARM = """<mujoco model="light_arm">
  <worldbody>
    <body name="base" pos="0 0 0.5">
      <geom type="box" size="0.2 0.2 0.1" mass="20"/>
      <body name="upper" pos="0 0 0.1">
        <joint name="shoulder" axis="0 1 0" range="-90 90"/>
        <geom type="capsule" fromto="0 0 0 0 0 0.3" size="0.03" mass="1.0"/>
        <body name="finger" pos="0 0 0.3">
          <joint name="wrist" axis="0 1 0" range="-90 90"/>
          <geom type="capsule" fromto="0 0 0 0 0 0.03" size="0.005" mass="0.01"/>
        </body>
      </body>
    </body>
  </worldbody>ACTUATORS
</mujoco>
"""


def _module(path: Path):
    import importlib.util

    spec = importlib.util.spec_from_file_location(f"_robot_{path.parent.name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_servos_on_light_links_get_the_integrator_that_keeps_them_stable(tmp_path, monkeypatch):
    """A 10 g finger on a 20 kg robot: the robot-sized placeholder gains blow up under the model's
    explicit Euler (MuJoCo resets it within steps), and hold the commanded pose under implicitfast,
    which the generated task sets and reports."""
    import mujoco
    import numpy as np
    import yaml

    monkeypatch.chdir(tmp_path)  # MuJoCo writes its warnings to MUJOCO_LOG.TXT in the working folder
    (tmp_path / "light.xml").write_text(LIGHT_ARM.replace("ACTUATORS", ""))
    made = new_task("light_arm", "reach", robot=tmp_path / "light.xml", out=tmp_path / "pkg")
    assert any(line.startswith("integrator: euler -> implicitfast") for line in made.lines), made.lines
    package = tmp_path / "pkg" / "light_arm"
    assert yaml.safe_load((package / "light_arm.yaml").read_text())["sim"] == {"integrator": "implicitfast"}
    robot = _module(package / "robot.py")
    # a damping ratio of 0.7 on the finger's ~3.6e-6 kg m^2 would be KD 0.017: below timestep x KP / 2 = 0.042,
    # where implicitfast's explicit spring blows up; the floor KP / 40 holds it
    assert robot.KP == {"shoulder": 42.0, "wrist": 42.0} and robot.KD["wrist"] == 1.05, (robot.KP, robot.KD)
    for integrator, stable in ((mujoco.mjtIntegrator.mjINT_EULER, False), (mujoco.mjtIntegrator.mjINT_IMPLICITFAST, True)):
        spec = mujoco.MjSpec.from_file(str(package / "light.xml"))
        robot.apply(spec)
        model = spec.compile()
        model.opt.integrator = integrator
        data = mujoco.MjData(model)
        data.ctrl[:] = 0.5
        for _ in range(500):
            mujoco.mj_step(model, data)
        assert (data.warning[mujoco.mjtWarning.mjWARN_BADQACC].number == 0) == stable, integrator
        if stable:
            np.testing.assert_allclose(data.qpos, 0.5, atol=0.03)


def test_motors_keep_the_models_integrator(tmp_path):
    import yaml

    motors = '\n  <actuator><motor joint="shoulder" gear="20"/><motor joint="wrist" gear="1"/></actuator>'
    (tmp_path / "motors.xml").write_text(LIGHT_ARM.replace("ACTUATORS", motors))
    made = new_task("motor_arm", "reach", robot=tmp_path / "motors.xml", out=tmp_path / "pkg")
    assert not any(line.startswith("integrator") for line in made.lines)
    assert "sim" not in yaml.safe_load((tmp_path / "pkg" / "motor_arm" / "motor_arm.yaml").read_text())


def test_tendon_driven_legs_get_an_effort_penalty_they_can_compute(tmp_path):
    """joint_torques_l2 and mechanical_power compute joint actuators' forces only: a legged robot
    driven through tendons gets action_l2 instead, and the report says its bundle carries their ctrl."""
    import yaml

    text = bare_quadruped(tmp_path / "src").read_text()
    legs = [f"{side}_{part}_joint" for side in ("FL", "FR", "RL", "RR") for part in ("hip", "thigh", "calf")]
    tendons = "".join(f'<fixed name="{j}_t"><joint joint="{j}" coef="1"/></fixed>' for j in legs)
    motors = "".join(f'<motor name="{j}_m" tendon="{j}_t" gear="20"/>' for j in legs)
    (tmp_path / "tendons.xml").write_text(text.replace("</mujoco>", f"<tendon>{tendons}</tendon><actuator>{motors}</actuator></mujoco>"))
    made = new_task("rope_legs", "locomotion", robot=tmp_path / "tendons.xml", out=tmp_path / "pkg")
    assert any("a deploy bundle hands the robot driver their MuJoCo ctrl" in line for line in made.lines), made.lines
    task = yaml.safe_load((tmp_path / "pkg" / "rope_legs" / "rope_legs.yaml").read_text())
    assert task["rewards"]["effort"]["func"] == "action_l2" and "torques" not in task["rewards"]
    assert all(term["func"] != "mechanical_power" for term in task["metrics"].values())


def test_a_planar_arm_near_the_floor_gets_a_valid_target_range(tmp_path):
    """gymnasium's reacher: the arm moves in a plane 1 cm above the floor, so the floor's 5 cm
    margin cannot apply; the z range stays the plane's, low <= high."""
    import yaml

    (tmp_path / "planar.xml").write_text("""<mujoco><worldbody>
      <geom name="floor" type="plane" size="1 1 0.1"/>
      <body name="arm" pos="0 0 0.01"><joint name="j0" axis="0 0 1" range="-180 180"/>
        <geom type="capsule" fromto="0 0 0 0.1 0 0" size="0.01"/>
        <body name="hand" pos="0.1 0 0"><joint name="j1" axis="0 0 1" range="-170 170"/>
          <geom type="capsule" fromto="0 0 0 0.1 0 0" size="0.01"/></body></body>
    </worldbody><actuator><motor joint="j0"/><motor joint="j1"/></actuator></mujoco>""")
    new_task("planar_arm", "reach", robot=tmp_path / "planar.xml", out=tmp_path / "pkg")
    ranges = yaml.safe_load((tmp_path / "pkg" / "planar_arm" / "planar_arm.yaml").read_text())["commands"]["ee_target"]["ranges"]
    assert ranges["z"][0] <= ranges["z"][1] and abs(ranges["z"][1]) < 0.02, ranges
    assert ranges["x"][1] - ranges["x"][0] > 0.1, ranges
    # the root body turns on j0: targets are in the world's frame, where both joints within 1.2 rad of
    # home take the tip (an arc of +-1.8 rad: y +-0.17), not the arc the elbow alone draws in the
    # turning arm's frame (y within +-0.1)
    assert _module(tmp_path / "pkg" / "planar_arm" / "robot.py").BASE == "world"
    assert ranges["y"][0] < -0.14 and ranges["y"][1] > 0.14, ranges


def test_a_loose_object_listed_first_does_not_become_the_base(tmp_path):
    """A ball with its own free joint before a bare quadruped: the base is the trunk, and the home
    keyframe lifts the trunk, not the ball."""
    import mujoco

    text = bare_quadruped(tmp_path / "src").read_text()
    start = text.index('<body name="trunk"')
    ball = '<body name="ball" pos="1 0 0.1"><freejoint name="ball"/><geom size="0.1" mass="0.4"/></body>'
    (tmp_path / "ball.xml").write_text(text[:start] + ball + text[start:])
    made = new_task("ball_legs", "locomotion", robot=tmp_path / "ball.xml", out=tmp_path / "pkg")
    assert "floating base: body trunk (free joint)" in made.lines, made.lines
    robot = _module(tmp_path / "pkg" / "ball_legs" / "robot.py")
    spec = mujoco.MjSpec.from_file(str(tmp_path / "pkg" / "ball_legs" / "ball.xml"))
    robot.apply(spec)
    model = spec.compile()
    home = model.key("home").qpos
    assert home[2] == 0.1 and home[7 + 2] > 0.2  # the ball where it was, the trunk lifted


def test_actuators_on_a_ball_joint_train_but_are_not_mistaken_for_hinges(tmp_path):
    """Two motors on a shoulder ball joint and one on an elbow hinge: the task drives all three, the
    hinge alone gets a joint target and range, and the report says export will refuse the ball's."""
    import yaml

    (tmp_path / "ball.xml").write_text("""<mujoco><worldbody><body name="base" pos="0 0 0.5">
      <geom type="box" size="0.1 0.1 0.1" mass="5"/>
      <body name="upper" pos="0 0 0.1"><joint name="shoulder" type="ball" range="0 90"/>
        <geom type="capsule" fromto="0 0 0 0 0 0.3" size="0.03" mass="1"/>
        <body name="lower" pos="0 0 0.3"><joint name="elbow" axis="0 1 0" range="-120 120"/>
          <geom type="capsule" fromto="0 0 0 0 0 0.3" size="0.025" mass="0.5"/></body></body></body></worldbody>
      <actuator><motor name="sh_x" joint="shoulder" gear="20 0 0"/><motor name="sh_y" joint="shoulder" gear="0 20 0"/>
        <motor name="elbow" joint="elbow" gear="10"/></actuator></mujoco>""")
    made = new_task("ball_arm", "minimal", robot=tmp_path / "ball.xml", out=tmp_path / "pkg")
    assert any(line.startswith("actuators sh_x, sh_y do not act on one hinge or slide joint") for line in made.lines), made.lines
    task = yaml.safe_load((tmp_path / "pkg" / "ball_arm" / "ball_arm.yaml").read_text())
    assert task["action"]["actuators"] == ["sh_x", "sh_y", "elbow"]
    assert "elbow" in yaml.dump(task["commands"]) and "shoulder" not in yaml.dump(task["commands"])


def test_a_rail_under_the_root_body_is_driven_outside_the_locomotion_template(tmp_path):
    """minimal on a bare cart-pole: the cart's slide is the robot's to drive, not a planar base."""
    text = re.sub(r"<actuator>.*</actuator>", "", (assets_dir() / "cartpole.xml").read_text(), flags=re.S)
    (tmp_path / "cart.xml").write_text(text)
    new_task("bare_cart", "minimal", robot=tmp_path / "cart.xml", out=tmp_path / "pkg")
    assert _module(tmp_path / "pkg" / "bare_cart" / "robot.py").JOINTS == ("slider", "hinge")


def test_the_floor_new_task_adds_holds_a_robot_whose_default_class_collides_one_way(tmp_path, monkeypatch):
    """The quadruped's geoms are contype 0, conaffinity 1 (they collide with what has contype 1): a
    floor of the default class would let it fall through."""
    import mujoco

    monkeypatch.chdir(tmp_path)
    spec = mujoco.MjSpec.from_file(str(bare_quadruped(tmp_path / "src")))
    spec.delete(spec.geom("floor"))
    (tmp_path / "src" / "floorless.xml").write_text(spec.to_xml())
    new_task("floorless", "locomotion", robot=tmp_path / "src" / "floorless.xml", out=tmp_path / "pkg")
    package = tmp_path / "pkg" / "floorless"
    spec = mujoco.MjSpec.from_file(str(package / "floorless.xml"))
    _module(package / "robot.py").apply(spec)
    model = spec.compile()
    data = mujoco.MjData(model)
    mujoco.mj_resetDataKeyframe(model, data, model.key("home").id)
    for _ in range(round(1.0 / model.opt.timestep)):  # 1 s, servos at rest (ctrl 0)
        mujoco.mj_step(model, data)
    assert data.qpos[2] > 0.05, "the base fell through the floor"


def test_the_home_height_and_the_base_height_terms_follow_an_edited_default_pose(tmp_path):
    """BASE_HEIGHT is computed from DEFAULT_POSE when the model compiles, and the task's base-height
    reward and fall termination refer to the home pose: editing the pose alone keeps the robot's
    feet on the floor and moves the reward's target with it."""
    from types import SimpleNamespace

    import mujoco
    import torch
    import yaml

    from robolearn.scene.entities import Root
    from robolearn.scene.geometry import lowest_point

    new_task("crouch", "locomotion", robot=bare_quadruped(tmp_path / "src"), out=tmp_path / "pkg")
    package = tmp_path / "pkg" / "crouch"
    robot = _module(package / "robot.py")
    assert robot.BASE_HEIGHT is None

    def home(pose: dict) -> tuple[float, float]:
        robot.DEFAULT_POSE.update(pose)
        spec = mujoco.MjSpec.from_file(str(package / "bare.xml"))
        robot.apply(spec)
        model = spec.compile()
        data = mujoco.MjData(model)
        mujoco.mj_resetDataKeyframe(model, data, model.key("home").id)
        mujoco.mj_kinematics(model, data)
        return float(data.qpos[2]), lowest_point(model, data, model.body("trunk").id)

    standing, lowest = home({})
    assert lowest == pytest.approx(0.005, abs=1e-4)
    legs = ("FL", "FR", "RL", "RR")
    crouched, lowest = home({**{f"{leg}_thigh_joint": 0.9 for leg in legs}, **{f"{leg}_calf_joint": -1.8 for leg in legs}})
    assert lowest == pytest.approx(0.005, abs=1e-4) and crouched < standing - 0.03, (standing, crouched)
    robot.BASE_HEIGHT = 0.5  # a number still overrides it
    assert home({})[0] == 0.5

    task = yaml.safe_load((package / "crouch.yaml").read_text())
    assert "params" not in task["rewards"]["base_height"] and task["terminations"]["base_too_low"]["params"] == {"fraction": 0.4}
    terms = _module(package / "terms.py")
    env = SimpleNamespace(scene=SimpleNamespace(root=Root(0, 0)), default_qpos=torch.tensor([[0.0, 0.0, 0.3], [0.0, 0.0, 0.3]]),
                          physics=SimpleNamespace(qpos=torch.tensor([[0.0, 0.0, 0.25], [0.0, 0.0, 0.1]])))  # fmt: skip
    torch.testing.assert_close(terms.base_height_l2(env), torch.tensor([0.05**2, 0.2**2]))
    torch.testing.assert_close(terms.base_height_l2(env, target=0.1), torch.tensor([0.15**2, 0.0]))
    assert terms.base_below(env, fraction=0.4).tolist() == [False, True]  # 0.4 x 0.3 = 0.12


def test_a_mesh_heavy_robot_gets_as_many_cpu_environments_as_its_model_copies_allow(tmp_path):
    """On the CPU backend each environment holds its own MjModel once a model field is randomized.
    The copies leave visual meshes and textures out: a 12 MiB texture keeps the template's 1024
    environments, collision geometry as heavy as mjlab's Go1 meshes (35 MiB) would not."""
    import yaml

    from robolearn.scaffold import num_envs

    text = bare_quadruped(tmp_path / "src").read_text()
    big = '<asset><texture name="big" type="2d" builtin="checker" width="2048" height="2048"/></asset>'
    (tmp_path / "src" / "textured.xml").write_text(text.replace("<worldbody>", big + "<worldbody>", 1))
    new_task("textured", "locomotion", robot=tmp_path / "src" / "textured.xml", out=tmp_path / "pkg")
    assert yaml.safe_load((tmp_path / "pkg" / "textured" / "textured.yaml").read_text())["env"]["num_envs"] == 1024
    assert num_envs("locomotion", 2**20) == (1024, "")
    envs, why = num_envs("locomotion", 35 * 2**20)  # 512 -> 17.5 GiB, 256 -> 8.75 GiB, 128 -> 4.4 GiB <= 8 GiB
    assert envs == 128 and why.startswith("not 1024: on a CPU each environment holds its own copy of this 35 MiB model")
    assert num_envs("minimal", 2**30)[0] == 16  # never fewer than 16


ARM_AND_BOX = """<mujoco><compiler angle="radian"/><worldbody>
  <geom name="floor" type="plane" size="2 2 0.1"/>
  <body name="box" pos="0.5 0 0.05"><freejoint name="box"/><geom type="box" size="0.05 0.05 0.05" mass="0.2"/></body>
  <body name="base" pos="0 0 0.3"><geom type="cylinder" size="0.05 0.05"/>
    <body name="upper"><joint name="shoulder" axis="0 1 0" range="-1.5 1.5"/>
      <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.02"/>
      <body name="fore" pos="0.3 0 0"><joint name="elbow" axis="0 1 0" range="-2 2"/>
        <geom type="capsule" fromto="0 0 0 0.25 0 0" size="0.02"/>
        <body name="hand" pos="0.25 0 0"><joint name="finger" type="slide" axis="1 0 0" range="0 0.02"/>
          <geom type="box" size="0.01 0.02 0.02"/></body></body></body></body>
</worldbody><actuator>ACTUATORS</actuator></mujoco>"""


@pytest.mark.parametrize("reference, why", [
    ('reftype="site" refname="mount"', "sensor ee_pos measures in the frame of site mount, not of a body or the world"),
    ('reftype="xbody" refname="hand"', "sensor ee_pos measures in the frame of body hand, which moves with the end effector"),
])  # fmt: skip
def test_an_end_effector_sensor_in_a_frame_the_targets_cannot_use_is_replaced(tmp_path, reference, why):
    """The reach terms command targets in the sensor's frame; new-task plans them in a body's frame
    (or the world's). A framepos measured from a site, or from a body the end effector carries (a
    constant), is left alone and a sensor in the base's frame is added."""
    import yaml

    (tmp_path / "arm.xml").write_text(f"""<mujoco><worldbody><body name="base"><geom type="box" size="0.1 0.1 0.05"/>
      <site name="mount" pos="0.3 0 0.5" euler="0 0 1.57"/>
      <body name="upper" pos="0 0 0.1"><joint name="j1" axis="0 0 1" range="-2 2"/><geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.03"/>
        <body name="hand" pos="0.3 0 0"><joint name="j2" axis="0 1 0" range="-2 2"/><geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.02"/>
          <site name="tip" pos="0.3 0 0"/></body></body></body></worldbody>
      <actuator><position name="a1" joint="j1" kp="20"/><position name="a2" joint="j2" kp="20"/></actuator>
      <sensor><framepos name="ee_pos" objtype="site" objname="tip" {reference}/></sensor></mujoco>""")
    made = new_task("framed_arm", "reach", robot=tmp_path / "arm.xml", out=tmp_path / "pkg")
    assert any(line.startswith(why) and line.endswith(": not taken for the end effector's position") for line in made.lines), made.lines
    assert any(line.startswith("end-effector position sensor: none usable -> added framepos sensor 'ee_pos_2'") for line in made.lines)
    task = yaml.safe_load((tmp_path / "pkg" / "framed_arm" / "framed_arm.yaml").read_text())
    assert task["rewards"]["ee_position"]["params"]["sensor"] == ["ee_pos_2"]


def test_a_fixed_arm_beside_a_loose_object_reaches_with_the_arm(tmp_path):
    """A box with its own free joint (the only free joint) beside a fixed arm: the box is an object,
    not the robot's floating base; the end effector is the arm's, and its targets span a workspace."""
    import yaml

    motors = ('<position name="shoulder" joint="shoulder" kp="20"/><position name="elbow" joint="elbow" kp="20"/>'
              '<position name="finger" joint="finger" kp="50"/>')  # fmt: skip
    (tmp_path / "arm.xml").write_text(ARM_AND_BOX.replace("ACTUATORS", motors))
    made = new_task("arm_box", "reach", robot=tmp_path / "arm.xml", out=tmp_path / "pkg")
    assert any("free body box carries no joint and no actuator: a loose object" in line for line in made.lines), made.lines
    assert any("end effector (guessed: the end of the longest joint chain): body hand" in line for line in made.lines)
    ranges = yaml.safe_load((tmp_path / "pkg" / "arm_box" / "arm_box.yaml").read_text())["commands"]["ee_target"]["ranges"]
    assert ranges["x"][1] - ranges["x"][0] > 0.1 and ranges["z"][1] - ranges["z"][0] > 0.1, ranges


def test_the_reach_template_refuses_an_arm_whose_actuators_do_not_move_its_end_effector(tmp_path):
    """Only the gripper's finger is actuated (a suite's arm moved by a mocap weld): the reach targets
    would be one point, so new-task says so in one line instead of writing an unlearnable task."""
    (tmp_path / "arm.xml").write_text(ARM_AND_BOX.replace("ACTUATORS", '<position joint="finger" kp="50"/>').replace(
        '<joint name="finger" type="slide" axis="1 0 0" range="0 0.02"/>', ""))  # fmt: skip
    (tmp_path / "arm.xml").write_text((tmp_path / "arm.xml").read_text().replace(
        '<geom type="box" size="0.01 0.02 0.02"/></body>',
        '<geom type="box" size="0.01 0.02 0.02"/><body name="jaw"><joint name="finger" type="slide" axis="0 1 0" '
        'range="0 0.0001"/><geom type="box" size="0.005 0.005 0.005"/></body></body>'))  # fmt: skip
    with pytest.raises(UserError, match=r"arm.xml: the end effector \(body jaw\) does not move relative to base with the "
                       "joints the policy drives; the reach template needs actuators that move it"):  # fmt: skip
        new_task("stuck_arm", "reach", robot=tmp_path / "arm.xml", out=tmp_path / "pkg")
    assert not (tmp_path / "pkg").exists()


def test_a_robot_on_tendons_gets_joint_targets_for_its_joints(tmp_path):
    """Every actuator pulls a tendon (muscles, cable drives): the minimal template's targets,
    observations and rewards are about the model's joints, not an empty list."""
    import yaml

    tendons = ('<tendon><fixed name="flex"><joint joint="shoulder" coef="1"/><joint joint="elbow" coef="0.5"/></fixed>'
               '<fixed name="extend"><joint joint="shoulder" coef="-1"/></fixed></tendon>')  # fmt: skip
    motors = '<motor name="flexor" tendon="flex" gear="5"/><motor name="extensor" tendon="extend" gear="5"/>'
    text = ARM_AND_BOX.replace("ACTUATORS", motors).replace("</worldbody>", "</worldbody>" + tendons)
    (tmp_path / "arm.xml").write_text(text)
    made = new_task("cable_arm", "minimal", robot=tmp_path / "arm.xml", out=tmp_path / "pkg")
    assert any("no actuator drives a joint directly (tendons, muscles)" in line for line in made.lines), made.lines
    task = yaml.safe_load((tmp_path / "pkg" / "cable_arm" / "cable_arm.yaml").read_text())
    assert sorted(task["commands"]["joint_target"]["ranges"]) == ["elbow", "finger", "shoulder"]
    assert task["rewards"]["track_target"]["params"]["joints"] == ["shoulder", "elbow", "finger"]
    assert task["action"]["actuators"] == ["flexor", "extensor"] and "(2 actions" in task["description"]


def test_a_mocap_weld_on_the_robot_is_turned_off_and_one_on_an_object_is_kept(tmp_path):
    """gymnasium-robotics' Fetch moves its gripper by a mocap body welded to it. Nothing moves mocap
    bodies in a robolearn task, so that weld would pin the arm against the policy: new-task turns it
    off (and says so); a mocap weld that holds an object, not the robot, stays."""
    (tmp_path / "arm.xml").write_text("""<mujoco><worldbody>
      <body name="mount" mocap="true" pos="0.3 0 0.5"/>
      <body name="holder" mocap="true" pos="0 1 0.5"/>
      <body name="link" pos="0 0 0.5"><joint name="shoulder" axis="0 1 0"/>
        <geom type="capsule" fromto="0 0 0 0.15 0 0" size="0.02"/>
        <body name="hand" pos="0.15 0 0"><joint name="elbow" axis="0 1 0"/>
          <geom type="capsule" fromto="0 0 0 0.15 0 0" size="0.02"/></body></body>
      <body name="box" pos="0 1 0.5"><freejoint/><geom type="box" size="0.03 0.03 0.03"/></body>
    </worldbody>
    <equality><weld body1="mount" body2="hand"/><weld body1="holder" body2="box"/></equality>
    <actuator><position joint="shoulder" kp="20"/><position joint="elbow" kp="20"/></actuator></mujoco>""")
    new_task("welded", "reach", robot=tmp_path / "arm.xml", out=tmp_path / "pkg")
    assert "mocap welds: mount holds hand -> turned off" in (tmp_path / "pkg" / "README.md").read_text()
    robot = _module(tmp_path / "pkg" / "welded" / "robot.py")
    assert robot.MOCAP_WELDS == (("mount", "hand"),)
    spec = mujoco.MjSpec.from_file(str(tmp_path / "pkg" / "welded" / "arm.xml"))
    robot.apply(spec)
    model = spec.compile()
    assert model.eq_active0.tolist() == [False, True]
    data = mujoco.MjData(model)  # the policy's servo now turns the elbow
    data.ctrl[:] = [0.0, 0.8]
    for _ in range(500):
        mujoco.mj_step(model, data)
    assert data.qpos[model.joint("elbow").qposadr[0]] > 0.9  # 1.15 here; held by the weld: 0.30


def test_actuators_with_off_centre_control_ranges_get_actions_mapped_onto_them(tmp_path):
    """A muscle's control range is [0, 1]: with ctrl = action, the half of a policy's exploration
    below 0 was clipped away. new-task's action.offset and action.scale map -1..1 onto each such
    range (here one motor on [0, 2], one on [-3, -1] with a regex character in its name) and leave a
    centred one alone."""
    import yaml

    from robolearn.config_task import ActionCfg
    from robolearn.envs.actions import ActionManager

    (tmp_path / "arm.xml").write_text("""<mujoco><worldbody>
      <body name="link" pos="0 0 0.5"><joint name="a" axis="0 1 0"/><geom type="capsule" fromto="0 0 0 0.2 0 0" size="0.02"/>
        <body name="mid" pos="0.2 0 0"><joint name="b" axis="0 0 1"/><geom type="capsule" fromto="0 0 0 0.2 0 0" size="0.02"/>
          <body name="tip" pos="0.2 0 0"><joint name="c" axis="0 1 0"/><geom type="capsule" fromto="0 0 0 0.2 0 0" size="0.02"/>
    </body></body></body></worldbody><actuator>
      <motor name="pull" joint="a" ctrlrange="0 2"/><motor name="push+" joint="b" ctrlrange="-3 -1"/>
      <motor name="even" joint="c" ctrlrange="-1 1"/></actuator></mujoco>""")
    new_task("ranged", "reach", robot=tmp_path / "arm.xml", out=tmp_path / "pkg")
    action = yaml.safe_load((tmp_path / "pkg" / "ranged" / "ranged.yaml").read_text())["action"]
    model = mujoco.MjModel.from_xml_path(str(tmp_path / "arm.xml"))
    cfg = ActionCfg(actuators=action["actuators"], scale=action["scale"], offset=action["offset"])
    manager = ActionManager(cfg, model, 3, torch.device("cpu"), torch.zeros(3, model.nq))
    manager.process(torch.tensor([[-1.0, -1.0, -1.0], [0.0, 0.0, 0.0], [1.0, 1.0, 1.0]]))
    assert manager.ctrl.tolist() == [[0.0, -3.0, -1.0], [1.0, -2.0, 0.0], [2.0, -1.0, 1.0]]


def test_hinge_limits_that_look_like_radians_read_as_degrees_are_warned_of(tmp_path):
    """range="-1.57 1.57" without <compiler angle="radian"/> is +-1.57 degrees (MJCF's default unit):
    every episode would end at a joint limit. new-task says so; with the compiler element it does not."""
    arm = ('<mujoco>{}<worldbody><body pos="0 0 0.5"><joint name="a" axis="0 1 0" range="-1.57 1.57"/>'
           '<geom type="capsule" fromto="0 0 0 0.2 0 0" size="0.02"/></body></worldbody></mujoco>')  # fmt: skip
    for name, compiler, warned in (("in_degrees", "", True), ("in_radians", '<compiler angle="radian"/>', False)):
        (tmp_path / f"{name}.xml").write_text(arm.format(compiler))
        made = new_task(name, "minimal", robot=tmp_path / f"{name}.xml", out=tmp_path / name)
        warnings = [line for line in made.lines if line.startswith("WARNING: every limited hinge moves less than 5 degrees")]
        assert bool(warnings) == warned, made.lines


def test_a_narrow_joints_resets_spread_over_its_own_range(tmp_path, installed_tasks, make_env, monkeypatch):
    """The template's reset range (+-0.5) suits a hinge of +-3 rad; a 4 cm slide drawn from it started
    clipped at a limit in ~94 % of resets. limit_fraction narrows each joint's draws to its own range."""
    import importlib

    (tmp_path / "gripper.xml").write_text("""<mujoco><compiler angle="radian"/><option gravity="0 0 0"/><worldbody>
      <body name="arm"><joint name="turn" axis="0 0 1" range="-3 3" limited="true"/>
        <geom type="capsule" fromto="0 0 0 0.2 0 0" size="0.02"/>
        <body name="finger" pos="0.2 0 0"><joint name="grip" type="slide" axis="0 1 0" range="0 0.04" limited="true"/>
          <geom type="box" size="0.01 0.01 0.01"/></body></body>
    </worldbody><actuator><motor joint="turn"/><position joint="grip" kp="50" ctrlrange="0 0.04"/></actuator></mujoco>""")
    new_task("narrow_grip", "minimal", robot=tmp_path / "gripper.xml", out=tmp_path / "pkg")
    site = tmp_path / "site"
    shutil.copytree(tmp_path / "pkg" / "narrow_grip", site / "narrow_grip")
    monkeypatch.syspath_prepend(str(site))
    installed_tasks["narrow_grip"] = importlib.import_module("narrow_grip").TASK
    env = make_env("narrow_grip", overrides=["randomization=none"], num_envs=256)
    env.reset()
    joints = env.scene.joints(["turn", "grip"])
    start, home = env.reset_qpos[:, joints.qpos], env.default_qpos[0, joints.qpos]
    turn, grip = start[:, 0] - home[0], start[:, 1]
    assert turn.min() < -0.45 and turn.max() > 0.45  # the hinge keeps +-0.5
    # the slide's closed end (0) is a limit: home is 10 % of its range inside (4 mm), and draws fill
    # [0, home + a quarter of 4 cm]
    assert home[1] == pytest.approx(0.004)
    assert grip.min() >= 0.0 and 0.013 < grip.max() <= 0.014
    at_limit = ((grip == 0.0) | (grip == 0.04)).float().mean()
    assert at_limit < 0.05 and grip.std() > 0.0025, (at_limit, grip.std())


def test_geared_motors_get_an_effort_penalty_on_the_actions_not_on_their_joint_torques(tmp_path):
    """gymnasium's ant drives its hips and ankles through gear-150 motors: joint_torques_l2 (gear
    included, as MuJoCo applies it) would reach 150^2 x 8 x 2e-4 = 36 a step against tracking rewards
    of ~1; the template penalizes the actions instead. Gear-1 servos keep the torque penalty."""
    import gymnasium
    import yaml

    ant = Path(gymnasium.__file__).parent / "envs" / "mujoco" / "assets" / "ant.xml"
    new_task("geared_ant", "locomotion", robot=ant, out=tmp_path / "ant")
    rewards = yaml.safe_load((tmp_path / "ant" / "geared_ant" / "geared_ant.yaml").read_text())["rewards"]
    assert rewards["effort"]["func"] == "action_l2" and "torques" not in rewards, rewards
    new_task("servo_legs", "locomotion", robot=bare_quadruped(tmp_path / "src"), out=tmp_path / "legs")
    rewards = yaml.safe_load((tmp_path / "legs" / "servo_legs" / "servo_legs.yaml").read_text())["rewards"]
    assert rewards["torques"]["func"] == "joint_torques_l2" and "effort" not in rewards, rewards
