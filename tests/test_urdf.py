"""A URDF robot with meshes becomes a task the documented way, trains, and leaves as a bundle that
runs on its own.

The robot is tests/fixtures/urdf_robot: a ROS-style robot.urdf (package:// mesh URIs, visual and
collision meshes, no actuators) inside a task package whose YAML names `asset: robot.urdf` and
whose edit_spec adds actuators, floor, light and sensor. It is installed as a third-party plugin
distribution would be (tests/plugin_dist.py: an entry point in a dist-info on PYTHONPATH). The bundle holds the compiled model as robot.xml with its meshes, never a `.urdf`.
"""

import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path

import mujoco
import pytest
import yaml

from robolearn.errors import UserError
from robolearn.physics import load_model
from robolearn_deploy.bundle import sha256

from .plugin_dist import install_distribution

FIXTURE = Path(__file__).parent / "fixtures" / "urdf_robot"
URDF = FIXTURE / "robot.urdf"
MESHES = ("base.stl", "link_collision.stl", "link_visual.stl")
TRAIN = ["task=urdf_arm", "runner.max_iterations=2", "env.num_envs=8", "runner.num_steps_per_env=8",
         "algo.num_mini_batches=1", "runner.video_interval=0", "runner.progress=false"]  # fmt: skip


def fixture_plugin():
    """The fixture's plugin module, imported from its folder (for the in-process tests)."""
    spec = importlib.util.spec_from_file_location("urdf_robot", FIXTURE / "__init__.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def install_plugin(site: Path) -> dict[str, str]:
    """Install the fixture package into `site` as the distribution `urdf-robot` registering task
    urdf_arm; returns the environment that puts `site` on the path of a `robolearn` process."""
    shutil.copytree(FIXTURE, site / "urdf_robot", ignore=shutil.ignore_patterns("__pycache__", "make_meshes.py"))
    return install_distribution(site, "urdf-robot", "urdf_arm = urdf_robot:TASK")


def robolearn(*args: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "robolearn.cli", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=600)  # fmt: skip


def test_the_urdf_compiles_with_its_meshes_and_the_task_adds_actuators():
    bare = load_model(URDF)
    assert (bare.nmesh, bare.nu, bare.nq) == (3, 0, 2)  # a URDF has no actuators; its root link is fixed
    assert sorted(mujoco.mj_id2name(bare, mujoco.mjtObj.mjOBJ_MESH, i) + ".stl" for i in range(bare.nmesh)) == list(MESHES)
    assert (bare.geom_group == 1).sum() == 3 and (bare.geom_contype == 1).sum() == 3  # visual and collision geoms
    assert list(bare.jnt_range.ravel()) == [-2.0, 2.0, -2.4, 2.4]

    model = load_model(URDF, edit=fixture_plugin().edit_spec)
    assert model.nu == 2
    assert list(model.actuator_gainprm[:, 0]) == [20.0, 20.0] and list(model.actuator_biasprm[:, 1]) == [-20.0, -20.0]
    assert model.actuator_forcerange.tolist() == [[-8.0, 8.0], [-4.0, 4.0]]  # from the URDF's <limit effort>
    assert model.actuator_ctrlrange.tolist() == bare.jnt_range.tolist()
    assert mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_GEOM, "floor") >= 0 and model.nlight == 1
    assert model.nsensor == 1 and model.key_qpos[0].tolist() == [0.6, -1.2]


def test_a_floating_base_is_a_free_joint_the_task_adds():
    """MuJoCo fixes a URDF's root link to the world; edit_spec makes it float."""
    model = load_model(URDF, edit=lambda spec: spec.body("base_link").add_freejoint())
    assert model.nq == 9 and int(model.jnt_type[0]) == int(mujoco.mjtJoint.mjJNT_FREE)
    assert model.body_mass.sum() == pytest.approx(3.9)


def test_meshes_outside_the_urdf_folder_go_into_the_bundle_meshes_folder(tmp_path):
    """A ROS package's layout: urdf/robot.urdf and meshes/ beside it (meshdir="../meshes")."""
    from robolearn.export.bundle import copy_model

    package = tmp_path / "my_robot_description"
    shutil.copytree(FIXTURE / "meshes", package / "meshes")
    (package / "urdf").mkdir()
    (package / "urdf" / "robot.urdf").write_text(URDF.read_text().replace('meshdir="meshes"', 'meshdir="../meshes"'))
    edit = fixture_plugin().edit_spec
    staging = tmp_path / "bundle"
    staging.mkdir()
    copy_model(package / "urdf" / "robot.urdf", staging, "robot.xml", edit)
    assert sorted(p.relative_to(staging).as_posix() for p in staging.rglob("*.*")) == [*(f"meshes/{m}" for m in MESHES), "robot.xml"]
    bundled = mujoco.MjModel.from_xml_path(str(staging / "robot.xml"))
    assert bundled.mesh_vert.tolist() == load_model(URDF, edit=edit).mesh_vert.tolist()


def test_a_missing_mesh_or_an_unstripped_package_uri_is_one_line(tmp_path):
    robot = shutil.copytree(FIXTURE, tmp_path / "robot")
    (robot / "meshes" / "link_visual.stl").unlink()
    with pytest.raises(UserError) as missing:
        load_model(robot / "robot.urdf", edit=fixture_plugin().edit_spec)
    assert str(missing.value) == (
        f"cannot load URDF {robot / 'robot.urdf'}: mesh file 'link_visual.stl' not found at "
        f"{robot / 'meshes' / 'link_visual.stl'}; a relative path is looked up from the URDF's folder and "
        """meshdir='meshes' (set by <mujoco><compiler meshdir=.../></mujoco> inside <robot>; strippath="true" """
        "keeps only the file name)"
    )
    uri = robot / "uri.urdf"
    uri.write_text(URDF.read_text().replace('strippath="true"', 'strippath="false"'))
    with pytest.raises(UserError, match="mesh file 'package://urdf_robot/meshes/base.stl' is a URI") as unstripped:
        load_model(uri)
    assert 'strippath="true"' in str(unstripped.value) and "\n" not in str(unstripped.value)


def test_a_mesh_this_user_may_not_read_is_named_as_unreadable_not_empty(tmp_path, monkeypatch):
    """MuJoCo reports a mesh it may not open as an empty STL; the line says why. Root reads a chmod
    000 file anyway, so the file is emptied (what MuJoCo sees) and opening it made to fail as it would."""
    import builtins

    robot = shutil.copytree(FIXTURE, tmp_path / "robot")
    mesh = robot / "meshes" / "link_visual.stl"
    mesh.write_bytes(b"")
    real_open = builtins.open

    def guarded(file, *args, **kwargs):
        if Path(file) == mesh:
            raise PermissionError(13, "Permission denied", str(file))
        return real_open(file, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", guarded)
    with pytest.raises(UserError) as unreadable:
        load_model(robot / "robot.urdf", edit=fixture_plugin().edit_spec)
    assert str(unreadable.value) == (f"cannot load URDF {robot / 'robot.urdf'}: mesh file 'link_visual.stl' at {mesh} "
                                     "cannot be read (permission denied); valid: a file this user may read")  # fmt: skip


def test_a_missing_mesh_stops_train_with_exit_2_and_one_line(tmp_path):
    env = install_plugin(tmp_path / "site")
    (tmp_path / "site" / "urdf_robot" / "meshes" / "base.stl").unlink()
    result = robolearn("train", *TRAIN, f"hydra.run.dir={tmp_path / 'run'}", cwd=tmp_path, env=env)
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert result.returncode == 2 and len(lines) == 1, result.stderr[-3000:]
    assert "robot.urdf" in lines[0] and "mesh file 'base.stl' not found" in lines[0] and "meshdir" in lines[0]


@pytest.fixture(scope="module")
def urdf_bundle(tmp_path_factory):
    """Train urdf_arm for 2 iterations through the CLI (which exports at the end); then the bundle
    moves to another folder and the installed package loses its URDF and meshes, so that only the
    bundle holds the robot."""
    work = tmp_path_factory.mktemp("urdf")
    env = install_plugin(work / "site")
    result = robolearn("train", *TRAIN, f"hydra.run.dir={work / 'run'}", cwd=work, env=env)
    assert result.returncode == 0, result.stderr[-3000:]
    bundle = shutil.copytree(work / "run" / "export", work / "elsewhere" / "bundle")
    shutil.rmtree(work / "run")
    (work / "site" / "urdf_robot" / "robot.urdf").unlink()
    shutil.rmtree(work / "site" / "urdf_robot" / "meshes")
    return bundle, work, env


def test_the_bundle_holds_the_compiled_model_as_xml_with_its_meshes(urdf_bundle):
    bundle, _, _ = urdf_bundle
    meta = yaml.safe_load((bundle / "robot.yaml").read_text())
    assert meta["model_file"] == "robot.xml"
    assert yaml.safe_load((bundle / "task.yaml").read_text())["asset"] == "robot.xml"
    assert not list(bundle.rglob("*.urdf"))
    assert sorted(p.name for p in (bundle / "meshes").iterdir()) == list(MESHES)
    for name, entry in meta["files"].items():
        assert entry["sha256"] == sha256(bundle / name), name
    assert {"robot.xml", "task.yaml", *(f"meshes/{m}" for m in MESHES)} <= set(meta["files"])
    assert [a["joint"] for a in meta["actuators"]] == ["shoulder", "elbow"]
    assert [a["effort_range"] for a in meta["actuators"]] == [[-8.0, 8.0], [-4.0, 4.0]]

    bundled = mujoco.MjModel.from_xml_path(str(bundle / "robot.xml"))  # the same model as in training
    trained = load_model(URDF, edit=fixture_plugin().edit_spec)
    for field in ("body_mass", "body_inertia", "jnt_range", "actuator_gainprm", "actuator_biasprm", "geom_group", "mesh_vertnum"):
        assert getattr(bundled, field).tolist() == getattr(trained, field).tolist(), field
    assert (bundled.opt.timestep, bundled.nlight, bundled.nsensor) == (0.005, 1, 1)  # the YAML's sim: is in it
    assert bundled.opt.integrator == int(mujoco.mjtIntegrator.mjINT_IMPLICITFAST)


def test_sim2sim_runs_from_the_bundle_alone(urdf_bundle):
    bundle, work, env = urdf_bundle
    result = robolearn("sim2sim", f"bundle={bundle}", "episodes=2", cwd=work, env=env)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "sim2sim urdf_arm: 2 episodes" in result.stdout
    assert "episodes ended by the watchdog: 0 of 2" in result.stdout


def test_the_authoring_guide_quotes_this_fixture():
    """docs/authoring.md's "Bring a URDF robot" snippet is this fixture's code, line for line."""
    guide = (Path(__file__).parents[1] / "docs" / "authoring.md").read_text().split("## Bring a URDF robot")[1]
    snippet = guide.split("```python\n")[1].split("```")[0]
    source = [line.strip() for line in (FIXTURE / "__init__.py").read_text().splitlines()]
    position = 0
    for line in (s.strip() for s in snippet.splitlines() if s.strip()):
        assert line in source[position:], f"the guide's URDF line is not in the fixture (in order): {line}"
        position = source.index(line, position) + 1
