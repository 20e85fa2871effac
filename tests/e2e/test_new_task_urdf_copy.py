"""What new-task changes as it copies a ROS description package: ASCII STL meshes (MuJoCo reads
binary STL only) written as binary, and for a legged robot a base_footprint root (massless, at the
ground, fixed to the trunk) left out so that the trunk is the floating base."""

from __future__ import annotations

import struct
from pathlib import Path

import mujoco
import numpy as np
import pytest

from robolearn.errors import UserError
from robolearn.scaffold import new_task

from .test_new_task_fixed_base import ROVER


def _ascii_box(half: tuple[float, float, float]) -> str:
    """A box as an ASCII STL: 12 triangles (normals left 0, as many exporters write them)."""
    x, y, z = half
    corners = np.array([[sx * x, sy * y, sz * z] for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)])
    faces = [(0, 1, 3), (0, 3, 2), (4, 6, 7), (4, 7, 5), (0, 4, 5), (0, 5, 1), (2, 3, 7), (2, 7, 6), (0, 2, 6),
             (0, 6, 4), (1, 5, 7), (1, 7, 3)]  # fmt: skip
    body = "".join(" facet normal 0 0 0\n  outer loop\n" + "".join(f"   vertex {v[0]} {v[1]} {v[2]}\n" for v in corners[list(f)])
                   + "  endloop\n endfacet\n" for f in faces)  # fmt: skip
    return f"solid box\n{body}endsolid box\n"


ARM_URDF = """<robot name="meshed_arm">
  <link name="base_link"><inertial><mass value="2"/><inertia ixx="0.01" iyy="0.01" izz="0.01" ixy="0" ixz="0" iyz="0"/></inertial>
    <collision><geometry><mesh filename="package://meshed_arm/meshes/base.stl"/></geometry></collision></link>
  <link name="arm"><inertial><mass value="0.5"/><inertia ixx="0.001" iyy="0.001" izz="0.001" ixy="0" ixz="0" iyz="0"/></inertial>
    <collision><origin xyz="0 0 0.15"/><geometry><mesh filename="package://meshed_arm/meshes/arm.stl"/></geometry></collision></link>
  <joint name="shoulder" type="revolute"><parent link="base_link"/><child link="arm"/><origin xyz="0 0 0.06"/>
    <axis xyz="0 1 0"/><limit lower="-1.5" upper="1.5" effort="10" velocity="3"/></joint>
</robot>"""


def test_ascii_stl_meshes_are_copied_as_binary_stl(tmp_path):
    package = tmp_path / "ws" / "meshed_arm"
    (package / "meshes").mkdir(parents=True)
    (package / "urdf").mkdir()
    (package / "meshes" / "base.stl").write_text(_ascii_box((0.05, 0.05, 0.05)))
    (package / "meshes" / "arm.stl").write_text(_ascii_box((0.02, 0.02, 0.15)))
    (package / "urdf" / "meshed_arm.urdf").write_text(ARM_URDF)
    made = new_task("ascii_arm", "minimal", robot=package / "urdf" / "meshed_arm.urdf", out=tmp_path / "pkg")
    assert "meshes: meshes/arm.stl, meshes/base.stl are ASCII STL, which MuJoCo cannot read -> written as binary STL " \
           "in the package's meshes/" in made.lines, made.lines
    copy = tmp_path / "pkg" / "ascii_arm" / "meshes" / "arm.stl"
    data = copy.read_bytes()
    assert struct.unpack("<I", data[80:84])[0] == 12 and len(data) == 84 + 12 * 50
    model = mujoco.MjModel.from_xml_path(str(tmp_path / "pkg" / "ascii_arm" / "meshed_arm.urdf"))
    arm = model.mesh("arm")
    vertices = model.mesh_vert[arm.vertadr[0]: arm.vertadr[0] + arm.vertnum[0]]
    # MuJoCo centres a mesh on its centroid: the box keeps its half sizes
    assert np.allclose(vertices.max(axis=0) - vertices.min(axis=0), [0.04, 0.04, 0.3], atol=1e-6)


def test_a_base_footprint_root_is_left_out_so_the_trunk_is_the_floating_base(tmp_path):
    footprint = ROVER.replace('<robot name="rover">', '<robot name="rover">\n  <link name="base_footprint"/>\n'
                              '  <joint name="footprint_joint" type="fixed"><parent link="base_footprint"/>'
                              '<child link="base_link"/><origin xyz="0 0 0.12"/></joint>')  # fmt: skip
    (tmp_path / "rover.urdf").write_text(footprint)
    made = new_task("footprint_rover", "locomotion", robot=tmp_path / "rover.urdf", out=tmp_path / "pkg")
    lines = "\n".join(made.lines)
    assert "root link base_footprint: massless, without geometry, fixed to base_link -> left out of the copy" in lines, lines
    assert "floating base: missing -> added a free joint on the root body base_link" in lines
    assert "IMU: missing -> added site 'imu' on base_link" in lines
    copy = (tmp_path / "pkg" / "footprint_rover" / "rover.urdf").read_text()
    assert "base_footprint" not in copy
    # the minimal template keeps it: a fixed base's root is whatever the URDF says
    kept = new_task("footprint_fixed", "minimal", robot=tmp_path / "rover.urdf", out=tmp_path / "pkg2")
    assert not any(line.startswith("root link") for line in kept.lines)


def _edited_model(package: Path, model_file: str) -> mujoco.MjModel:
    """The package's copy of the robot with its robot.py edits applied, compiled."""
    from .test_new_task import _module

    spec = mujoco.MjSpec.from_file(str(package / model_file))
    _module(package / "robot.py").apply(spec)
    return spec.compile()


def test_the_imu_goes_on_the_urdfs_imu_link_where_the_robots_imu_sits(tmp_path):
    """A ROS description names the IMU's frame as a link fixed to the trunk; the copy keeps it a body
    (fusestatic off), and the IMU's site and sensors go there, not at the trunk's origin: an
    accelerometer 0.1 m off the centre reads what the real one does when the trunk turns."""
    with_imu = ROVER.replace("</robot>", '  <link name="imu_link"/>\n  <joint name="imu_joint" type="fixed"><parent '
                             'link="base_link"/><child link="imu_link"/><origin xyz="0.1 0 0.05" rpy="0 0 1.5708"/>'
                             "</joint>\n</robot>")  # fmt: skip
    (tmp_path / "rover.urdf").write_text(with_imu)
    made = new_task("imu_rover", "locomotion", robot=tmp_path / "rover.urdf", out=tmp_path / "pkg")
    assert "IMU: missing -> added site 'imu' on imu_link (the model's IMU link, fixed to the base base_link) with a " \
           "gyro, an accelerometer and a framequat" in made.lines, made.lines
    model = _edited_model(tmp_path / "pkg" / "imu_rover", "rover.urdf")
    data = mujoco.MjData(model)
    mujoco.mj_forward(model, data)
    site = model.site("imu")
    assert model.body(int(site.bodyid[0])).name == "imu_link"
    base = model.body("base_link").id
    offset = data.site_xpos[site.id] - data.xpos[base]
    assert np.allclose(offset, [0.1, 0.0, 0.05], atol=1e-9), offset
    # the gyro reads in the IMU's frame: turned a quarter about z from the trunk's
    data.qvel[3:6] = [1.0, 0.0, 0.0]  # the trunk rolls at 1 rad/s
    mujoco.mj_forward(model, data)
    gyro = data.sensor("imu_gyro").data
    assert np.allclose(gyro, [0.0, -1.0, 0.0], atol=1e-4), gyro  # rpy 1.5708, not exactly pi/2


def test_a_links_collision_geom_is_hidden_where_its_visual_mesh_is_drawn(tmp_path):
    """A URDF link has a visual (group 1, colliding with nothing) and a collision geom (group 0), in
    one place: videos drew both and flickered. The collision geom moves to group 3, which videos
    and viewers leave out; it collides as before. A link without a visual keeps its collision geom
    drawn."""
    from robolearn.render import geom_groups

    package = tmp_path / "ws" / "meshed_rover"
    (package / "meshes").mkdir(parents=True)
    (package / "meshes" / "body.stl").write_text(_ascii_box((0.25, 0.15, 0.05)))
    visual = ('<visual><geometry><mesh filename="package://meshed_rover/meshes/body.stl"/></geometry></visual>\n'
              '    <collision><geometry><box size="0.5 0.3 0.1"/></geometry></collision></link>')  # fmt: skip
    (package / "rover.urdf").write_text(ROVER.replace('<collision><geometry><box size="0.5 0.3 0.1"/></geometry></collision></link>', visual, 1))
    made = new_task("shown_rover", "locomotion", robot=package / "rover.urdf", out=tmp_path / "pkg")
    assert "collision geoms: 1 drawn over their links' visual meshes -> moved to group 3 (videos and viewers draw the " \
           "visual meshes alone; the collisions are unchanged)" in made.lines, made.lines
    model = _edited_model(tmp_path / "pkg" / "shown_rover", "rover.urdf")
    base = model.body("base_link").id
    mine = [g for g in range(model.ngeom) if model.geom_bodyid[g] == base]
    groups = {(int(model.geom_group[g]), bool(model.geom_contype[g] or model.geom_conaffinity[g])) for g in mine}
    assert groups == {(1, False), (3, True)}, groups  # the mesh drawn, the box colliding unseen
    wheels = [g for g in range(model.ngeom) if model.body(int(model.geom_bodyid[g])).name.endswith("_wheel")]
    assert {int(model.geom_group[g]) for g in wheels} == {0}  # no visual: still drawn
    assert list(geom_groups(model)) == [1, 1, 1, 0, 0, 0]


def test_links_that_overlap_at_home_are_excluded_and_the_rest_still_collide(tmp_path):
    """A rover whose collision boxes are coarse: a fender link on a hinge under an arm link sinks 3 cm
    into the chassis at home (neither is the other's parent, so MuJoCo collides them, and the
    contact pushes the fender off from the first step). new-task excludes that pair, names it with
    its depth, and leaves every other pair colliding; a locomotion robot's root gets no 'fixed to the
    world' exclusions (it is given a free joint)."""
    fender = ROVER.replace("</robot>", """  <link name="mount"><inertial><mass value="0.2"/><inertia ixx="1e-4" iyy="1e-4" izz="1e-4" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <joint name="mount_joint" type="revolute"><parent link="base_link"/><child link="mount"/><origin xyz="0 0 0.2"/>
    <axis xyz="0 0 1"/><limit lower="-1" upper="1" effort="5" velocity="1"/></joint>
  <link name="fender"><inertial><mass value="0.2"/><inertia ixx="1e-4" iyy="1e-4" izz="1e-4" ixy="0" ixz="0" iyz="0"/></inertial>
    <collision><origin xyz="0 0 -0.15"/><geometry><box size="0.1 0.1 0.06"/></geometry></collision></link>
  <joint name="fender_joint" type="revolute"><parent link="mount"/><child link="fender"/>
    <axis xyz="1 0 0"/><limit lower="-1" upper="1" effort="5" velocity="1"/></joint>
</robot>""")  # fmt: skip
    (tmp_path / "rover.urdf").write_text(fender)
    depth = 0.05 - (0.2 - 0.15 - 0.03)  # the chassis box's top face (z 0.05) against the fender box's bottom face
    made = new_task("fender_rover", "locomotion", robot=tmp_path / "rover.urdf", out=tmp_path / "pkg")
    lines = "\n".join(made.lines)
    assert f"self-contacts: base_link-fender {depth * 1000:.1f} mm overlap in the home pose -> excluded" in lines, lines
    assert "fixed to the world" not in lines
    model = _edited_model(tmp_path / "pkg" / "fender_rover", "rover.urdf")
    data = mujoco.MjData(model)
    mujoco.mj_resetDataKeyframe(model, data, model.key("home").id)
    mujoco.mj_forward(model, data)
    pairs = {tuple(sorted((model.body(int(model.geom_bodyid[c.geom1])).name, model.body(int(model.geom_bodyid[c.geom2])).name)))
             for c in data.contact[: data.ncon]}  # fmt: skip
    assert ("base_link", "fender") not in pairs
    data.qpos[model.joint("fender_joint").qposadr[0]] = 0.0
    data.qpos[2] -= 0.5  # sunk into the floor: the fender still touches the ground
    mujoco.mj_forward(model, data)
    assert any("fender" in (model.body(int(model.geom_bodyid[c.geom1])).name, model.body(int(model.geom_bodyid[c.geom2])).name)
               for c in data.contact[: data.ncon]), "the fender no longer collides at all"  # fmt: skip


def test_a_revolute_joint_with_limits_of_1e16_is_copied_as_continuous(tmp_path):
    """ROS descriptions write a rotor's or wheel's joint as revolute with limits of +-1e16: MuJoCo
    took them literally, and new-task planned position targets of +-8e15 rad (every env step
    diverged). The copy makes them continuous and says so."""
    (tmp_path / "rover.urdf").write_text(ROVER.replace('type="continuous"', 'type="revolute"').replace(
        '<limit effort="5" velocity="30"/>', '<limit effort="5" lower="-1e+16" upper="1e+16" velocity="30"/>'))  # fmt: skip
    made = new_task("endless_rover", "locomotion", robot=tmp_path / "rover.urdf", out=tmp_path / "pkg")
    assert ("joints fl_wheel_joint, fr_wheel_joint, rl_wheel_joint, rr_wheel_joint: revolute with limits 1e+16 rad either "
            "side, a ROS way to write a joint without limits -> continuous in the copy") in made.lines, made.lines  # fmt: skip
    assert any(line.startswith("actuators: none on the wheels fl_wheel_joint") for line in made.lines)  # wheels again
    model = _edited_model(tmp_path / "pkg" / "endless_rover", "rover.urdf")
    assert not model.jnt_limited[model.joint("fl_wheel_joint").id]


@pytest.mark.parametrize("dressing", [lambda text: "\n\n" + text, lambda text: text + "\x00"])
def test_a_urdf_that_mujoco_reads_is_read_with_blank_lines_before_it_or_nul_bytes_after(tmp_path, dressing):
    (tmp_path / "rover.urdf").write_bytes(dressing('<?xml version="1.0"?>\n' + ROVER).encode())
    made = new_task("dressed_rover", "locomotion", robot=tmp_path / "rover.urdf", out=tmp_path / "pkg")
    assert made.lines[0].startswith("joints: 4 hinge")


def test_an_error_in_the_users_urdf_names_the_users_file_and_line(tmp_path):
    """MuJoCo's message for the copy named a staging folder that is gone by then, and the copy's
    line; the user's own file and line are what to fix."""
    broken = ROVER.replace('<origin xyz="0.18 0.19 -0.04"/>', '<origin xyz="0.18 0.19 bottom"/>')
    (tmp_path / "rover.urdf").write_text(broken)
    line = 1 + broken.splitlines().index(next(s for s in broken.splitlines() if "bottom" in s))
    with pytest.raises(UserError) as error:
        new_task("xacro_rover", "locomotion", robot=tmp_path / "rover.urdf", out=tmp_path / "pkg")
    assert str(error.value) == (f"cannot load robot model {tmp_path / 'rover.urdf'}: XML Error: bad format in attribute 'xyz' "
                                f"Element 'origin', line {line}")  # fmt: skip


def test_a_link_without_inertial_is_massless_as_urdf_says_where_mujoco_allows(tmp_path):
    """MuJoCo weighs a URDF link without <inertial> as water-filled geometry (an ANYmal trunk box: 29
    kg of a 52 kg robot, and its servo gains sized from 81 kg). Where the link is welded to one that
    has an <inertial>, the copy makes it massless; where it would move with nothing to weigh it
    (MuJoCo refuses that), the report warns and the mass stays."""
    no_trunk_mass = ROVER.replace('<link name="base_link"><inertial><mass value="8"/><inertia ixx="0.1" iyy="0.1" izz="0.1" '
                                  'ixy="0" ixz="0" iyz="0"/></inertial>', '<link name="base_link">')  # fmt: skip
    weighed = no_trunk_mass.replace("</robot>", """  <link name="base_inertia"><inertial><mass value="8"/><inertia ixx="0.1" iyy="0.1" izz="0.1" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <joint name="base_inertia_joint" type="fixed"><parent link="base_link"/><child link="base_inertia"/></joint>
</robot>""")  # fmt: skip
    (tmp_path / "weighed.urdf").write_text(weighed)
    made = new_task("weighed_rover", "locomotion", robot=tmp_path / "weighed.urdf", out=tmp_path / "pkg")
    assert any(line.startswith("links without <inertial>: base_link -> massless, as URDF reads them") for line in made.lines), made.lines
    model = _edited_model(tmp_path / "pkg" / "weighed_rover", "weighed.urdf")
    assert np.isclose(model.body_subtreemass[model.body("base_link").id], 8 + 4 * 0.5)  # not + 0.5 x 0.3 x 0.1 m of water
    (tmp_path / "bare.urdf").write_text(no_trunk_mass)
    made = new_task("bare_rover", "locomotion", robot=tmp_path / "bare.urdf", out=tmp_path / "pkg2")
    assert any(line.startswith("WARNING: links without <inertial> that move with nothing else to weigh them: base_link") for line in made.lines)
    model = _edited_model(tmp_path / "pkg2" / "bare_rover", "bare.urdf")
    assert np.isclose(model.body_mass[model.body("base_link").id], 1000 * 0.5 * 0.3 * 0.1)


def _relative_pose(model: mujoco.MjModel, body: str, frame: str) -> tuple[np.ndarray, np.ndarray]:
    """Where `body` is in `frame`'s frame (position, rotation matrix) in the model's default pose."""
    data = mujoco.MjData(model)
    mujoco.mj_forward(model, data)
    rotation = data.xmat[model.body(frame).id].reshape(3, 3)
    offset = rotation.T @ (data.xpos[model.body(body).id] - data.xpos[model.body(frame).id])
    return offset, rotation.T @ data.xmat[model.body(body).id].reshape(3, 3)


def test_a_weighed_root_without_geometry_hangs_from_its_child_which_becomes_the_floating_base(tmp_path):
    """pybullet's racecar: a base_link of 0.1 kg without geometry at the ground, the chassis fixed 5 cm
    above it. As the root it was the floating base, at the ground, and every episode ended
    base_too_low at step 2. The copy turns the fixed joint round: the child is the root, the old root
    hangs from it where it was, its mass kept."""
    inertia = '<inertia ixx="1e-4" iyy="1e-4" izz="1e-4" ixy="0" ixz="0" iyz="0"/>'
    urdf = ROVER.replace('<robot name="rover">', '<robot name="rover">\n  <mujoco><compiler fusestatic="false"/></mujoco>\n'
                         f'  <link name="base_footprint"><inertial><origin xyz="0.01 0 0"/><mass value="0.1"/>{inertia}</inertial></link>\n'
                         '  <joint name="footprint_joint" type="fixed"><parent link="base_footprint"/><child link="base_link"/>'
                         '<origin xyz="0.05 0.02 0.12" rpy="0.1 -0.2 0.7"/></joint>')  # fmt: skip
    (tmp_path / "rover.urdf").write_text(urdf)
    made = new_task("hung_rover", "locomotion", robot=tmp_path / "rover.urdf", out=tmp_path / "pkg")
    assert ("root link base_footprint: without geometry, fixed to base_link -> in the copy it hangs from base_link by "
            "the same joint (0.1 kg), so base_link is the floating base") in "\n".join(made.lines), made.lines  # fmt: skip
    assert "floating base: missing -> added a free joint on the root body base_link" in made.lines
    copy = mujoco.MjModel.from_xml_path(str(tmp_path / "pkg" / "hung_rover" / "rover.urdf"))
    assert copy.body(copy.body("base_footprint").parentid[0]).name == "base_link"
    assert np.isclose(copy.body_subtreemass[copy.body("base_link").id], 8 + 4 * 0.5 + 0.1)
    original = mujoco.MjModel.from_xml_path(str(tmp_path / "rover.urdf"))
    for model in (original, copy):  # the same rigid body: the old root where it was relative to the trunk
        offset, rotation = _relative_pose(model, "base_footprint", "base_link")
        expected_offset, expected_rotation = _relative_pose(original, "base_footprint", "base_link")
        assert np.allclose(offset, expected_offset, atol=1e-7) and np.allclose(rotation, expected_rotation, atol=1e-7)
    assert not np.allclose(expected_offset, [-0.05, -0.02, -0.12])  # the rotation counts: not the offset negated


def test_urdf_roll_pitch_yaw_round_trips_through_a_rotation_matrix():
    from robolearn.scaffold.urdf_copy import matrix_rpy, rpy_matrix

    rng = np.random.default_rng(0)
    for rpy in [*rng.uniform(-3, 3, (50, 3)), (0.3, np.pi / 2, -0.4), (0.0, -np.pi / 2, 1.0)]:
        rotation = rpy_matrix(*rpy)
        assert np.allclose(rpy_matrix(*matrix_rpy(rotation)), rotation, atol=1e-9), rpy
    # about x by roll, then y by pitch, then z by yaw (fixed axes): x -> z after a quarter pitch
    assert np.allclose(rpy_matrix(0.0, np.pi / 2, 0.0) @ [1.0, 0.0, 0.0], [0.0, 0.0, -1.0])
    assert np.allclose(rpy_matrix(np.pi / 2, 0.0, np.pi / 2) @ [0.0, 1.0, 0.0], [0.0, 0.0, 1.0])


def test_xacro_substitutions_left_in_a_urdf_are_read_where_they_need_no_xacro_run(tmp_path, monkeypatch):
    """pybullet's Husky carries `$(optenv HUSKY_IMU_XYZ 0.19 0 0.149)` from its xacro: MuJoCo failed on
    "bad format in attribute 'xyz'". An optenv is its variable or its default, as xacro reads it; a
    `$(find pkg)` is the package:// folder above the URDF."""
    package = tmp_path / "ws" / "rover_description"
    (package / "meshes").mkdir(parents=True)
    (package / "urdf").mkdir()
    (package / "meshes" / "chassis.stl").write_text(_ascii_box((0.25, 0.15, 0.05)))
    urdf = ROVER.replace('<box size="0.5 0.3 0.1"/>', '<mesh filename="$(find rover_description)/meshes/chassis.stl"/>') \
                .replace('<origin xyz="0.18 0.19 -0.04"/>', '<origin xyz="$(optenv ROVER_FL_XYZ 0.18 0.19 -0.04)"/>')  # fmt: skip
    (package / "urdf" / "rover.urdf").write_text(urdf)
    monkeypatch.delenv("ROVER_FL_XYZ", raising=False)
    made = new_task("xacro_rover", "locomotion", robot=package / "urdf" / "rover.urdf", out=tmp_path / "pkg")
    assert ("xacro substitutions left in the URDF: $(find rover_description) -> 'package://rover_description', "
            "$(optenv ROVER_FL_XYZ 0.18 0.19 -0.04) -> '0.18 0.19 -0.04' -> read in the copy") in "\n".join(made.lines), made.lines  # fmt: skip
    model = mujoco.MjModel.from_xml_path(str(tmp_path / "pkg" / "xacro_rover" / "rover.urdf"))
    assert np.allclose(model.body("fl_wheel").pos, [0.18, 0.19, -0.04])
    assert model.nmesh == 1 and (tmp_path / "pkg" / "xacro_rover" / "meshes" / "chassis.stl").is_file()
    monkeypatch.setenv("ROVER_FL_XYZ", "0.2 0.21 -0.05")  # xacro's reading: the variable first
    new_task("xacro_rover_env", "locomotion", robot=package / "urdf" / "rover.urdf", out=tmp_path / "pkg2")
    model = mujoco.MjModel.from_xml_path(str(tmp_path / "pkg2" / "xacro_rover_env" / "rover.urdf"))
    assert np.allclose(model.body("fl_wheel").pos, [0.2, 0.21, -0.05])


@pytest.mark.parametrize("left", ["$(arg wheel_x)", "${wheel_x}", "$(env ROBOLEARN_SURELY_UNSET)"])
def test_a_xacro_substitution_that_needs_xacro_is_one_line_naming_its_line(tmp_path, monkeypatch, left):
    monkeypatch.delenv("ROBOLEARN_SURELY_UNSET", raising=False)
    urdf = ROVER.replace('<origin xyz="0.18 0.19 -0.04"/>', f'<origin xyz="{left} 0.19 -0.04"/>')
    (tmp_path / "rover.urdf").write_text(urdf)
    line = 1 + urdf.splitlines().index(next(s for s in urdf.splitlines() if left in s))
    with pytest.raises(UserError) as error:
        new_task("arg_rover", "locomotion", robot=tmp_path / "rover.urdf", out=tmp_path / "pkg")
    message = str(error.value)
    assert message.startswith(f"rover.urdf line {line}: {left} is a xacro substitution left unexpanded") and "\n" not in message
    assert message.endswith("valid: the URDF xacro writes: run `xacro rover.urdf > robot.urdf` (pip install xacro) and "
                            "pass robot.urdf")  # fmt: skip
    assert ("(environment variable ROBOLEARN_SURELY_UNSET is not set)" in message) == left.startswith("$(env")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["rover.urdf"]


def test_a_moving_link_mujoco_still_refuses_is_named_with_its_line_and_what_it_says(tmp_path):
    """MuJoCo's line named the body, not what was wrong with it or where. A mass of 1e-20 kg is below
    what MuJoCo takes for a moving body (mjMINVAL), which new-task leaves to the model."""
    zero = ROVER.replace('<link name="fl_wheel"><inertial><mass value="0.5"/>', '<link name="fl_wheel"><inertial><mass value="1e-20"/>')
    (tmp_path / "rover.urdf").write_text(zero)
    line = 1 + zero.splitlines().index(next(s for s in zero.splitlines() if '<link name="fl_wheel">' in s))
    with pytest.raises(UserError) as error:
        new_task("weightless_rover", "locomotion", robot=tmp_path / "rover.urdf", out=tmp_path / "pkg")
    assert str(error.value).endswith(
        f"Element name 'fl_wheel', id 2: link fl_wheel (line {line}) has mass 1e-20 and ixx=0.001 iyy=0.001 izz=0.001 ixy=0 "
        "ixz=0 iyz=0; valid: a mass and moments of inertia above 0 on each link that moves: the link's real ones, or "
        "<mujoco><compiler inertiafromgeom=\"true\"/></mujoco> in the URDF for MuJoCo to compute them from its geometry"), str(error.value)  # fmt: skip


def _link(name: str, parent: str, inertial: str, joint: str = "fixed") -> str:
    axis = '<axis xyz="0 1 0"/><limit lower="-1" upper="1" effort="5" velocity="3"/>' if joint != "fixed" else ""
    return (f'  <link name="{name}">{inertial}</link>\n  <joint name="{name}_joint" type="{joint}"><parent link="{parent}"/>'
            f'<child link="{name}"/><origin xyz="0 0 0.1"/>{axis}</joint>\n')


def _inertial(mass: str, ixx="1e-3", iyy="1e-3", izz="1e-3", ixy="0", ixz="0", iyz="0") -> str:
    return (f'<inertial><mass value="{mass}"/><inertia ixx="{ixx}" iyy="{iyy}" izz="{izz}" ixy="{ixy}" ixz="{ixz}" '
            f'iyz="{iyz}"/></inertial>')


def test_inertias_no_rigid_body_has_are_mended_and_said(tmp_path):
    """ROS descriptions that pybullet, Gazebo and Pinocchio load and MuJoCo refused: HyQ's and TIAGo's
    1e-6 kg placeholders with moments ixx = ixy = ... = 1e-6 (not positive definite), iCub's 0.746 kg
    ankle with moments of 1e-20, TriFinger's izz rounded to 0, PR2's sensor mount whose izz is ten times
    ixx + iyy. A placeholder gets a 1 cm sphere's moments, a heavier link its principal moments raised
    to at least that sphere's (the axes kept), the triangle MuJoCo's balanceinertia."""
    links = (_link("antenna", "base_link", _inertial("1e-6", "1e-6", "1e-6", "1e-6", "1e-6", "1e-6", "1e-6"))
             + _link("ankle", "base_link", _inertial("0.746", "2.7e-20", "5.4e-20", "1.4e-20", "-1.7e-21", "1.4e-20", "3.4e-21"))
             + _link("rounded", "base_link", _inertial("0.03", "1.2e-4", "1.2e-4", "0.0"))
             + _link("slab", "base_link", _inertial("0.03", "1e-4", "2e-4", "0.0"))
             + _link("mount", "base_link", _inertial("0.05", "0.001", "0.001", "0.01")))  # fmt: skip
    (tmp_path / "rover.urdf").write_text(ROVER.replace("</robot>", links + "</robot>"))
    made = new_task("mended_rover", "locomotion", robot=tmp_path / "rover.urdf", out=tmp_path / "pkg")
    lines = "\n".join(made.lines)
    assert ("placeholder inertias: antenna (1e-06 kg) have moments no rigid body has (MuJoCo refuses them) -> a 1 cm "
            "sphere's in the copy") in lines, lines  # fmt: skip
    assert "inertias: ankle, rounded, slab not positive definite, or vanishingly small (MuJoCo refuses them) -> each " \
           "principal moment at least a 1 cm sphere's of the link's mass in the copy, the axes kept" in lines, lines
    assert "inertias: slab, mount have a principal moment above the other two's sum (MuJoCo refuses them) -> " \
           'balanceinertia="true" in the copy' in lines, lines
    model = mujoco.MjModel.from_xml_path(str(tmp_path / "pkg" / "mended_rover" / "rover.urdf"))
    assert np.allclose(model.body_inertia[model.body("antenna").id], 0.4 * 1e-6 * 0.01**2)
    assert np.allclose(model.body_inertia[model.body("ankle").id], 0.4 * 0.746 * 0.01**2)
    # the rounded link keeps its two real moments; the third is raised to the sphere's, and the three are a rigid body's
    rounded = np.sort(model.body_inertia[model.body("rounded").id])
    assert np.allclose(rounded, [0.4 * 0.03 * 0.01**2, 1.2e-4, 1.2e-4], rtol=1e-6), rounded
    for name in ("slab", "mount"):  # raised, still flat (slab), or flat as written (mount): balanced by MuJoCo
        moments = model.body_inertia[model.body(name).id]
        assert moments.max() <= moments.sum() - moments.max() + 1e-12, (name, moments)


def test_links_that_move_without_mass_get_a_gram(tmp_path):
    """example-robot-data's human: a hip as three revolute joints with "virtual" links between them,
    no <inertial> and no geometry; Romeo's finger links: mass 0. MuJoCo refuses a moving body without
    mass; each gets 1 g on a 1 cm sphere. A massless link welded to one with mass is left as it is."""
    links = (_link("hip_virtual", "base_link", "", joint="revolute")
             + _link("thigh", "hip_virtual", _inertial("1.0"), joint="revolute")
             + _link("finger", "base_link", _inertial("0", "0", "0", "0"), joint="revolute")
             + _link("frame", "base_link", ""))  # fmt: skip
    (tmp_path / "rover.urdf").write_text(ROVER.replace("</robot>", links + "</robot>"))
    made = new_task("virtual_rover", "locomotion", robot=tmp_path / "rover.urdf", out=tmp_path / "pkg")
    assert ("links that move with no mass: hip_virtual, finger -> 1 g on a 1 cm sphere in the copy (MuJoCo refuses a "
            "moving body without mass; URDF tools take it)") in made.lines, made.lines  # fmt: skip
    model = mujoco.MjModel.from_xml_path(str(tmp_path / "pkg" / "virtual_rover" / "rover.urdf"))
    assert np.isclose(model.body_mass[model.body("hip_virtual").id], 1e-3) and np.isclose(model.body_mass[model.body("finger").id], 1e-3)
    assert model.body_mass[model.body("frame").id] == 0.0  # welded to the trunk: nothing to mend


def test_mujocos_warnings_on_the_model_are_one_report_line_not_a_log_file(tmp_path, monkeypatch, capfd):
    """example-robot-data's double pendulum has joints whose lower and upper limits are equal: MuJoCo
    printed its warning once per compile (three times) and wrote MUJOCO_LOG.TXT into the folder
    new-task ran in. The report now says it once."""
    monkeypatch.chdir(tmp_path)
    before = mujoco.get_mju_user_warning()  # another test's env may have installed the mujoco backend's
    (tmp_path / "rover.urdf").write_text(ROVER.replace('type="continuous"', 'type="revolute"', 1).replace(
        '<limit effort="5" velocity="30"/>', '<limit lower="0.5" upper="0.5" effort="5" velocity="30"/>', 1))  # fmt: skip
    made = new_task("pinned_rover", "locomotion", robot=tmp_path / "rover.urdf", out=tmp_path / "pkg")
    assert made.lines[-1] == ("MuJoCo's warnings on the model (1): joint 'fl_wheel_joint' has equal lower and upper "
                              "limits, limit ignored"), made.lines  # fmt: skip
    assert "warning" not in capfd.readouterr().err.lower()
    assert not (tmp_path / "MUJOCO_LOG.TXT").exists()
    assert made.lines[-1] in (tmp_path / "pkg" / "README.md").read_text()
    assert mujoco.get_mju_user_warning() is before  # the hook put back


def test_mujocos_warnings_name_the_packages_files_not_the_staging_folder(tmp_path, monkeypatch):
    """Genesis's `panda_slider_mobile.urdf` has OBJ meshes whose faces lack texture coordinates; MuJoCo's
    warning named new-task's staging copy (`.panda_slider_mobile.new-task-ko4ei5ci/<task>/meshes/...`),
    gone once the report is read. It names the package's file now."""
    monkeypatch.chdir(tmp_path)
    package = tmp_path / "ws" / "meshed_arm"
    (package / "meshes").mkdir(parents=True)
    (package / "urdf").mkdir()
    (package / "meshes" / "base.obj").write_text("v 0 0 0\nv 0.1 0 0\nv 0 0.1 0\nv 0 0 0.1\nvt 0 0\nvt 1 0\n"
                                                 "f 1 3 2\nf 1 2 4\nf 1 4 3\nf 2 3 4\n")  # fmt: skip
    (package / "meshes" / "arm.stl").write_text(_ascii_box((0.02, 0.02, 0.15)))
    (package / "urdf" / "meshed_arm.urdf").write_text(ARM_URDF.replace("base.stl", "base.obj"))
    made = new_task("textured_arm", "minimal", robot=package / "urdf" / "meshed_arm.urdf", out=Path("pkg"))
    line = next(line for line in made.lines if line.startswith("MuJoCo's warnings"))
    assert "in 'meshes/base.obj'" in line and "new-task-" not in line, line
    assert (tmp_path / "pkg" / "textured_arm" / "meshes" / "base.obj").exists()  # what the line names
