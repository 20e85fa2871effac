"""COLLADA (.dae) meshes, which ROS descriptions use for visuals and often for collisions and which
MuJoCo cannot read, as triangles new-task writes into OBJ (MuJoCo's STL reader takes at most
200,000 faces; Unitree's Go1 and B1 trunk meshes have more).

Read as ROS's tools show them: each geometry the scene instances, placed by its nodes' transforms
(`matrix`, `translate`, `rotate`, `scale`), in metres by the file's `<unit meter>`; the
`<up_axis>` is not applied (RViz and Gazebo do not, and MeshLab writes Y_UP over Z-up data, as in
pybullet's racecar). Triangles, polylists, polygons, triangle strips and fans are read; lines,
materials, textures and skinned (controller) meshes are left out.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np

from robolearn.errors import UserError, one_line

POLYGONS = ("triangles", "polylist", "polygons", "tristrips", "trifans")


def collada_triangles(path: Path) -> np.ndarray:
    """The triangles of the COLLADA file's scene, shape (n, 3, 3) [m]; a UserError where it holds
    none or cannot be read."""
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError) as exc:
        raise UserError(f"cannot read COLLADA mesh {path}: {one_line(exc)}") from None
    for element in root.iter():  # namespaces (1.4 and 1.5 differ) left out of the tags
        if isinstance(element.tag, str) and "}" in element.tag:
            element.tag = element.tag.split("}", 1)[1]
    by_id = {element.get("id"): element for element in root.iter() if element.get("id")}
    try:
        parts = list(_scene_parts(root, by_id))
        triangles = [_transform(_geometry_triangles(geometry, by_id), matrix) for geometry, matrix in parts]
    except (ValueError, IndexError, KeyError) as exc:
        raise UserError(f"cannot read COLLADA mesh {path}: {one_line(exc) or type(exc).__name__}") from None
    found = np.concatenate(triangles) if triangles else np.zeros((0, 3, 3))
    if not len(found):
        raise UserError(f"COLLADA mesh {path} has no triangles in its scene (lines, points or skinned meshes only); "
                        "valid: a mesh of triangles or polygons")  # fmt: skip
    unit = root.find("asset/unit")
    return found * (float(unit.get("meter", "1")) if unit is not None else 1.0)


def _scene_parts(root: ET.Element, by_id: dict[str, ET.Element]):
    """(geometry element, 4x4 placement) of each geometry the scene instances; every geometry, in
    place, where the file has no visual scene."""
    scene = root.find("scene/instance_visual_scene")
    visual = by_id.get(scene.get("url", "#")[1:]) if scene is not None else root.find("library_visual_scenes/visual_scene")
    if visual is None:
        for geometry in root.iterfind("library_geometries/geometry"):
            yield geometry, np.eye(4)
        return
    for node in visual.findall("node"):
        yield from _node_parts(node, np.eye(4), by_id, depth=0)


def _node_parts(node: ET.Element, parent: np.ndarray, by_id: dict[str, ET.Element], depth: int):
    if depth > 64:
        raise ValueError("nodes nested more than 64 deep (an instance_node cycle?)")
    matrix = parent @ _node_matrix(node)
    for child in node:
        if child.tag == "instance_geometry":
            yield by_id[child.get("url", "#")[1:]], matrix
        elif child.tag == "node":
            yield from _node_parts(child, matrix, by_id, depth + 1)
        elif child.tag == "instance_node":
            yield from _node_parts(by_id[child.get("url", "#")[1:]], matrix, by_id, depth + 1)


def _node_matrix(node: ET.Element) -> np.ndarray:
    """A node's transform elements composed in their order (each one applied to what follows)."""
    matrix = np.eye(4)
    for element in node:
        values = [float(v) for v in (element.text or "").split()]
        step = np.eye(4)
        if element.tag == "matrix":
            step = np.array(values, dtype=float).reshape(4, 4)
        elif element.tag == "translate":
            step[:3, 3] = values
        elif element.tag == "scale":
            step[:3, :3] = np.diag(values)
        elif element.tag == "rotate":
            step[:3, :3] = _rotation(np.array(values[:3]), np.radians(values[3]))
        else:
            continue
        matrix = matrix @ step
    return matrix


def _rotation(axis: np.ndarray, angle: float) -> np.ndarray:
    """Rodrigues: the rotation by `angle` [rad] about `axis`."""
    norm = np.linalg.norm(axis)
    if norm == 0:
        return np.eye(3)
    x, y, z = axis / norm
    k = np.array([[0, -z, y], [z, 0, -x], [-y, x, 0]])
    return np.eye(3) + np.sin(angle) * k + (1 - np.cos(angle)) * k @ k


def _transform(triangles: np.ndarray, matrix: np.ndarray) -> np.ndarray:
    return triangles @ matrix[:3, :3].T + matrix[:3, 3]


def _geometry_triangles(geometry: ET.Element, by_id: dict[str, ET.Element]) -> np.ndarray:
    """A geometry's polygons as triangles (n, 3, 3), in the geometry's own frame."""
    mesh = geometry.find("mesh")
    if mesh is None:  # a spline or a convex_mesh: nothing to draw as triangles here
        return np.zeros((0, 3, 3))
    found = []
    for primitive in mesh:
        if primitive.tag not in POLYGONS:
            continue
        inputs = primitive.findall("input")
        stride = 1 + max((int(i.get("offset", "0")) for i in inputs), default=0)
        vertex = next((i for i in inputs if i.get("semantic") == "VERTEX"), None)
        if vertex is None:
            continue
        positions = _positions(by_id[vertex.get("source", "#")[1:]], by_id)
        offset = int(vertex.get("offset", "0"))
        lists = [np.array((p.text or "").split(), dtype=np.int64) for p in primitive.findall("p")]
        corners = [indices.reshape(-1, stride)[:, offset] for indices in lists]
        for polygon in _polygons(primitive, corners):
            found.append(positions[polygon])
    return np.concatenate(found) if found else np.zeros((0, 3, 3))


def _polygons(primitive: ET.Element, corners: list[np.ndarray]) -> list[np.ndarray]:
    """Each primitive's corner indices as triangles (k, 3): polygons fanned from their first corner."""
    kind = primitive.tag
    if kind == "triangles":
        return [c[: len(c) // 3 * 3].reshape(-1, 3) for c in corners]
    if kind == "polylist":
        counts = np.array((primitive.findtext("vcount") or "").split(), dtype=np.int64)
        flat, starts = corners[0] if corners else np.zeros(0, np.int64), np.concatenate([[0], np.cumsum(counts)])
        return [_fan(flat[s:s + n]) for s, n in zip(starts[:-1], counts) if n >= 3]
    if kind in ("polygons", "trifans"):
        return [_fan(c) for c in corners if len(c) >= 3]
    strips = []
    for c in corners:  # tristrips: every other triangle turned round to keep the winding
        if len(c) >= 3:
            k = np.arange(len(c) - 2)
            strips.append(np.where((k % 2 == 0)[:, None], np.stack([c[k], c[k + 1], c[k + 2]], 1),
                                   np.stack([c[k + 1], c[k], c[k + 2]], 1)))  # fmt: skip
    return strips


def _fan(corners: np.ndarray) -> np.ndarray:
    return np.stack([np.full(len(corners) - 2, corners[0]), corners[1:-1], corners[2:]], axis=1)


def _positions(source: ET.Element, by_id: dict[str, ET.Element]) -> np.ndarray:
    """The (n, 3) points a `<vertices>` (through its POSITION input) or a `<source>` holds."""
    if source.tag == "vertices":
        position = next(i for i in source.findall("input") if i.get("semantic") == "POSITION")
        return _positions(by_id[position.get("source", "#")[1:]], by_id)
    values = np.array((source.findtext("float_array") or "").split(), dtype=float)
    accessor = source.find("technique_common/accessor")
    stride = int(accessor.get("stride", "3")) if accessor is not None else 3
    start = int(accessor.get("offset", "0")) if accessor is not None else 0
    return values[start:start + (len(values) - start) // stride * stride].reshape(-1, stride)[:, :3]


def write_obj(triangles: np.ndarray, target: Path, note: str) -> None:
    """Wavefront OBJ of `triangles` (n, 3, 3), corners shared (vertices written once); `note` heads
    the file as a comment."""
    points, corners = np.unique(triangles.reshape(-1, 3), axis=0, return_inverse=True)
    faces = corners.reshape(-1, 3) + 1  # OBJ counts from 1
    with target.open("w") as out:
        out.write(f"# {note}\n")
        np.savetxt(out, points, fmt="v %.7g %.7g %.7g")
        np.savetxt(out, faces, fmt="f %d %d %d")
