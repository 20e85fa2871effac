"""A model that loads files from outside its folder (a benchmark suite's shared ../meshes and
../common folders, as gymnasium-robotics, Meta-World and MyoSuite ship theirs): new-task's package
and an exported bundle both carry it, compiled, with every file it loads beside it."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import mujoco

from robolearn.export.bundle import copy_model
from robolearn.model_files import outside_files
from robolearn.scaffold import new_task

MESHES = Path(__file__).resolve().parent / "fixtures" / "urdf_robot" / "meshes"
ARM = """<mujoco model="suite_arm">
  <compiler meshdir="../meshes" angle="radian"/>
  <include file="../common/materials.xml"/>
  <asset>
    <mesh name="upper_visual" file="visual/link.stl"/>
    <mesh name="upper_collision" file="collision/link.stl"/>
  </asset>
  <worldbody>
    <body name="upper" pos="0 0 0.5">
      <joint name="shoulder" axis="0 1 0" range="-1.5 1.5"/>
      <geom type="mesh" mesh="upper_visual" contype="0" conaffinity="0" material="grey"/>
      <geom type="mesh" mesh="upper_collision"/>
      <body name="fore" pos="0.3 0 0">
        <joint name="elbow" axis="0 1 0" range="-1.5 1.5"/>
        <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.03"/>
      </body>
    </body>
  </worldbody>
  <actuator>
    <position name="shoulder" joint="shoulder" kp="20"/>
    <position name="elbow" joint="elbow" kp="20"/>
  </actuator>
</mujoco>
"""


def suite(folder: Path) -> Path:
    """suite/arms/arm.xml, with ../common/materials.xml and ../meshes/{visual,collision}/link.stl:
    two different meshes of one file name."""
    (folder / "arms").mkdir(parents=True)
    (folder / "common").mkdir()
    for kind, source in (("visual", "link_visual.stl"), ("collision", "link_collision.stl")):
        (folder / "meshes" / kind).mkdir(parents=True)
        shutil.copyfile(MESHES / source, folder / "meshes" / kind / "link.stl")
    (folder / "common" / "materials.xml").write_text('<mujoco><asset><material name="grey" rgba=".5 .5 .5 1"/></asset></mujoco>')
    (folder / "arms" / "arm.xml").write_text(ARM)
    return folder / "arms" / "arm.xml"


def digest(folder: Path) -> dict[str, str]:
    return {p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest() for p in folder.rglob("*") if p.is_file()}


def same_model(copy: Path, original: Path) -> None:
    a, b = mujoco.MjModel.from_xml_path(str(copy)), mujoco.MjModel.from_xml_path(str(original))
    assert a.nmesh == b.nmesh == 2 and a.nmat == b.nmat == 1
    assert a.mesh_vert.tolist() == b.mesh_vert.tolist() and a.mat_rgba.tolist() == b.mat_rgba.tolist()


def test_new_task_packages_a_model_that_reaches_outside_its_folder(tmp_path):
    arm = suite(tmp_path / "suite")
    before = digest(tmp_path / "suite")
    assert [p.as_posix() for p in outside_files(arm)] == ["../common/materials.xml", "../meshes/visual/link.stl",
                                                          "../meshes/collision/link.stl"]  # fmt: skip
    result = new_task("suite_arm", "reach", robot=arm, out=tmp_path / "pkg")
    package = tmp_path / "pkg" / "suite_arm"
    assert any("loads files outside its folder (../common/materials.xml, ../meshes/visual/link.stl, ...)" in line
               for line in result.lines)  # fmt: skip
    assert "loads files outside its folder" in (tmp_path / "pkg" / "README.md").read_text()
    files = digest(package)
    assert files["meshes/visual/link.stl"] == before["meshes/visual/link.stl"]
    assert files["meshes/collision/link.stl"] == before["meshes/collision/link.stl"] != files["meshes/visual/link.stl"]
    assert "include" not in (package / "arm.xml").read_text() and ".." not in (package / "arm.xml").read_text()
    same_model(package / "arm.xml", arm)
    assert digest(tmp_path / "suite") == before  # the user's files are only read


def test_a_bundle_carries_a_model_that_reaches_outside_its_folder(tmp_path):
    arm = suite(tmp_path / "suite")
    staging = tmp_path / "bundle"
    staging.mkdir()
    copy_model(arm, staging, "arm.xml")
    assert sorted(digest(staging)) == ["arm.xml", "meshes/collision/link.stl", "meshes/visual/link.stl"]
    same_model(staging / "arm.xml", arm)


def test_the_compiled_copy_keeps_balanceinertia(tmp_path):
    """MuJoCo's writer leaves the compiler's balanceinertia out while it writes the balanced
    inertias at 6 digits, which may miss A + B >= C again by 1e-10 (an Allegro hand URDF's bundle did
    not load in sim2sim); the copy says balanceinertia itself."""
    from robolearn.model_files import write_compiled

    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "hand.xml").write_text("""<mujoco><compiler balanceinertia="true"/><worldbody>
      <body name="finger"><joint name="j" axis="0 1 0"/><inertial pos="0 0 0" mass="0.01" diaginertia="1e-6 1e-6 3.0000001e-6"/>
      <geom type="box" size="0.01 0.01 0.01" contype="0" conaffinity="0"/></body></worldbody></mujoco>""")
    (tmp_path / "out").mkdir()
    write_compiled(tmp_path / "src" / "hand.xml", tmp_path / "out", "hand.xml")
    written = (tmp_path / "out" / "hand.xml").read_text()
    assert 'balanceinertia="true"' in written
    model = mujoco.MjModel.from_xml_path(str(tmp_path / "out" / "hand.xml"))
    inertia = sorted(model.body_inertia[model.body("finger").id])
    assert inertia[0] + inertia[1] >= inertia[2]
