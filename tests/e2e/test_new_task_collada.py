"""COLLADA (.dae) meshes, which MuJoCo cannot read and ROS descriptions use (HyQ's and TIAGo's collision
meshes, most visual ones): new-task writes their triangles as OBJ (robolearn/scaffold/collada.py),
in metres by their <unit>, placed by their nodes, their <up_axis> not applied (as RViz and Gazebo)."""

from __future__ import annotations

import mujoco
import numpy as np
import pytest

from robolearn.errors import UserError
from robolearn.scaffold import new_task
from robolearn.scaffold.collada import _polygons, collada_triangles

from .test_new_task_fixed_base import ROVER

CUBE_QUADS = "0 2 3 1  4 5 7 6  0 1 5 4  2 6 7 3  0 4 6 2  1 3 7 5"
"""A cube's six faces as quads over corners (x, y, z) in {-1, 1}, corner k = (bit 2, bit 1, bit 0)."""


def _dae(unit: float = 0.01, up: str = "Y_UP", nodes: str | None = None) -> str:
    """A 2 x 2 x 2 cube (in the file's units) as a polylist of quads, instanced by `nodes`."""
    corners = " ".join(f"{2 * (k >> 2 & 1) - 1} {2 * (k >> 1 & 1) - 1} {2 * (k & 1) - 1}" for k in range(8))
    nodes = nodes or '<node id="n"><instance_geometry url="#cube"/></node>'
    return f"""<?xml version="1.0"?>
<COLLADA xmlns="http://www.collada.org/2005/11/COLLADASchema" version="1.4.1">
  <asset><unit name="centimeter" meter="{unit}"/><up_axis>{up}</up_axis></asset>
  <library_geometries><geometry id="cube"><mesh>
    <source id="pos"><float_array id="pos-array" count="24">{corners}</float_array>
      <technique_common><accessor source="#pos-array" count="8" stride="3"/></technique_common></source>
    <source id="nrm"><float_array id="nrm-array" count="3">0 0 1</float_array>
      <technique_common><accessor source="#nrm-array" count="1" stride="3"/></technique_common></source>
    <vertices id="verts"><input semantic="POSITION" source="#pos"/></vertices>
    <polylist count="6"><input semantic="VERTEX" source="#verts" offset="0"/><input semantic="NORMAL" source="#nrm" offset="1"/>
      <vcount>4 4 4 4 4 4</vcount><p>{" ".join(f"{i} 0" for i in CUBE_QUADS.split())}</p></polylist>
  </mesh></geometry></library_geometries>
  <library_visual_scenes><visual_scene id="scene">{nodes}</visual_scene></library_visual_scenes>
  <scene><instance_visual_scene url="#scene"/></scene>
</COLLADA>"""


def _bounds(triangles: np.ndarray) -> np.ndarray:
    points = triangles.reshape(-1, 3)
    return np.stack([points.min(axis=0), points.max(axis=0)])


def test_a_cube_is_read_in_metres_placed_by_its_nodes_and_not_turned_by_its_up_axis(tmp_path):
    (tmp_path / "cube.dae").write_text(_dae())
    cube = collada_triangles(tmp_path / "cube.dae")
    assert cube.shape == (12, 3, 3)  # six quads, two triangles each
    assert np.allclose(_bounds(cube), [[-0.01] * 3, [0.01] * 3])  # 2 cm across: <unit meter="0.01">
    # each quad's two triangles cover it: the faces' areas sum to the cube's surface, 6 x (2 cm)^2
    areas = 0.5 * np.linalg.norm(np.cross(cube[:, 1] - cube[:, 0], cube[:, 2] - cube[:, 0]), axis=1)
    assert np.isclose(areas.sum(), 6 * 0.02**2)
    # translate, then rotate a quarter about z, then scale x by 3 (in that order, each applied to what follows):
    # a point p ends at T R S p; the cube's x extent (3 x) turns onto y, and the whole moves by (10, 0, 5) cm
    placed = ('<node id="n"><translate>10 0 5</translate><rotate>0 0 1 90</rotate><scale>3 1 1</scale>'
              '<instance_geometry url="#cube"/><node id="child"><matrix>1 0 0 0 0 1 0 0 0 0 1 20 0 0 0 1</matrix>'
              '<instance_geometry url="#cube"/></node></node>')  # fmt: skip
    (tmp_path / "placed.dae").write_text(_dae(nodes=placed))
    both = collada_triangles(tmp_path / "placed.dae")
    assert both.shape == (24, 3, 3)
    assert np.allclose(_bounds(both[:12]), [[0.09, -0.03, 0.04], [0.11, 0.03, 0.06]], atol=1e-9)
    # the child node's matrix moves it 20 cm along its parent's z, which the parent's turn leaves z
    assert np.allclose(_bounds(both[12:]), [[0.09, -0.03, 0.24], [0.11, 0.03, 0.26]], atol=1e-9)
    (tmp_path / "z_up.dae").write_text(_dae(up="Z_UP"))
    assert np.array_equal(collada_triangles(tmp_path / "z_up.dae"), cube)


def test_strips_and_fans_are_triangles_that_keep_their_winding():
    import xml.etree.ElementTree as ET

    strip = _polygons(ET.Element("tristrips"), [np.array([0, 1, 2, 3, 4])])[0]
    assert strip.tolist() == [[0, 1, 2], [2, 1, 3], [2, 3, 4]]  # every other one turned round
    fan = _polygons(ET.Element("trifans"), [np.array([0, 1, 2, 3])])[0]
    assert fan.tolist() == [[0, 1, 2], [0, 2, 3]]


def test_a_urdf_with_collada_collision_meshes_compiles_with_their_stl_copies(tmp_path):
    """HyQ and TIAGo were refused ('no decoder found for mesh file'); the copy holds OBJ, its corners
    shared (Unitree's Go1 trunk has more faces than MuJoCo's STL reader takes)."""
    (tmp_path / "meshes").mkdir()
    (tmp_path / "meshes" / "chassis.dae").write_text(_dae(unit=0.25))  # 0.5 m across
    (tmp_path / "rover.urdf").write_text(ROVER.replace('<collision><geometry><box size="0.5 0.3 0.1"/></geometry></collision>',
                                                       '<collision><geometry><mesh filename="meshes/chassis.dae"/></geometry></collision>'))  # fmt: skip
    made = new_task("dae_rover", "locomotion", robot=tmp_path / "rover.urdf", out=tmp_path / "pkg")
    assert any(line.startswith("meshes: meshes/chassis.dae is COLLADA (.dae), which MuJoCo cannot read -> their triangles "
                               "written as OBJ") for line in made.lines), made.lines  # fmt: skip
    package = tmp_path / "pkg" / "dae_rover"
    assert (package / "meshes" / "chassis.obj").is_file() and not (package / "meshes" / "chassis.dae").exists()
    assert 'filename="chassis.obj"' in (package / "rover.urdf").read_text()
    model = mujoco.MjModel.from_xml_path(str(package / "rover.urdf"))
    vertices = model.mesh_vert[model.mesh_vertadr[0]: model.mesh_vertadr[0] + model.mesh_vertnum[0]]
    assert np.allclose(vertices.max(axis=0) - vertices.min(axis=0), [0.5, 0.5, 0.5], atol=1e-6)


def test_a_collada_mesh_that_does_not_read_is_one_line_and_a_visual_one_is_left_out(tmp_path):
    (tmp_path / "meshes").mkdir()
    (tmp_path / "meshes" / "lines.dae").write_text("<COLLADA/>")
    (tmp_path / "meshes" / "cut.dae").write_text(_dae()[:400])
    collision = ROVER.replace('<collision><geometry><box size="0.5 0.3 0.1"/></geometry></collision>',
                              '<collision><geometry><mesh filename="meshes/lines.dae"/></geometry></collision>')  # fmt: skip
    (tmp_path / "rover.urdf").write_text(collision)
    with pytest.raises(UserError) as error:
        new_task("dae_rover", "locomotion", robot=tmp_path / "rover.urdf", out=tmp_path / "pkg")
    assert str(error.value) == (f"COLLADA mesh {tmp_path / 'meshes' / 'lines.dae'} has no triangles in its scene (lines, "
                                "points or skinned meshes only); valid: a mesh of triangles or polygons")  # fmt: skip
    visual = ROVER.replace('<collision><geometry><box size="0.5 0.3 0.1"/></geometry></collision>',
                           '<visual><geometry><mesh filename="meshes/cut.dae"/></geometry></visual>'
                           '<collision><geometry><box size="0.5 0.3 0.1"/></geometry></collision>')  # fmt: skip
    (tmp_path / "rover.urdf").write_text(visual)
    made = new_task("dae_rover", "locomotion", robot=tmp_path / "rover.urdf", out=tmp_path / "pkg")
    note = next(line for line in made.lines if line.startswith("visual meshes:"))
    assert note.startswith(f"visual meshes: MuJoCo cannot load them (cannot read COLLADA mesh {tmp_path / 'meshes' / 'cut.dae'}: ")
    assert note.endswith("-> left out (discardvisual=\"true\"); videos and viewers draw the collision geometry")
