"""What new-task changes as it copies a ROS description package: ASCII STL meshes (MuJoCo reads
binary STL only) written as binary, and for a legged robot a base_footprint root (massless, at the
ground, fixed to the trunk) left out so that the trunk is the floating base."""

from __future__ import annotations

import struct

import mujoco
import numpy as np

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
