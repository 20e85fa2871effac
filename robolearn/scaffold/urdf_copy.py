"""What new-task changes in a URDF's files as it copies them into a task package, each change named
in the report: ASCII STL meshes written as binary STL (ROS description packages ship both, MuJoCo
reads binary only), and for the locomotion template a ROS `base_footprint` root left out or hung
from the trunk (a link without geometry at ground level, fixed to the trunk: the floating base
would be at the ground, its IMU and height terms with it, and MuJoCo puts a free joint only on a
body of the world)."""

from __future__ import annotations

import copy
import struct
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np

from robolearn.errors import UserError
from robolearn.scaffold.collada import collada_triangles, write_obj
from robolearn.scaffold.plan import short

def copy_mesh(source: Path, target: Path) -> str | None:
    """Copy a mesh file; an ASCII STL is written as binary STL, a COLLADA file's triangles as OBJ
    (collada.py; `target` is then an .obj: mesh_suffix). Returns what was converted ("ASCII STL",
    "COLLADA"), None for a plain copy."""
    if source.suffix.lower() == ".dae":
        write_obj(collada_triangles(source), target, f"written by robolearn new-task from {source.name}")
        return "COLLADA"
    data = source.read_bytes()
    if source.suffix.lower() != ".stl" or not _is_ascii_stl(data):
        target.write_bytes(data)
        return None
    facets = np.array(_ascii_facets(data.decode("ascii", errors="replace"), source))
    write_stl(facets[:, 3:].reshape(-1, 3, 3), target, "binary STL written by robolearn new-task from an ASCII STL")
    return "ASCII STL"


def write_stl(triangles: np.ndarray, target: Path, note: str) -> None:
    """Binary STL of `triangles` (n, 3, 3), each with its normal; `note` heads the file."""
    normals = np.cross(triangles[:, 1] - triangles[:, 0], triangles[:, 2] - triangles[:, 0])
    lengths = np.linalg.norm(normals, axis=1, keepdims=True)
    normals = np.divide(normals, lengths, out=np.zeros_like(normals), where=lengths > 0)
    records = np.zeros(len(triangles), dtype=np.dtype([("n", "<f4", 3), ("v", "<f4", (3, 3)), ("a", "<u2")]))
    records["n"], records["v"] = normals, triangles
    header = note.encode("ascii", errors="replace")[:80].ljust(80, b" ")
    target.write_bytes(header + np.uint32(len(triangles)).tobytes() + records.tobytes())


def mesh_suffix(source: Path) -> str:
    """The suffix of a mesh's copy: a COLLADA file's is an OBJ."""
    return ".obj" if source.suffix.lower() == ".dae" else source.suffix


def _is_ascii_stl(data: bytes) -> bool:
    """An ASCII STL starts with `solid` and is not the size a binary STL of its facet count has
    (a binary header may start with `solid` too)."""
    if not data.lstrip()[:5].lower() == b"solid":
        return False
    return not (len(data) >= 84 and len(data) == 84 + 50 * struct.unpack("<I", data[80:84])[0])


def _ascii_facets(text: str, source: Path) -> list[tuple[float, ...]]:
    """Each facet's normal and three vertices (12 numbers)."""
    facets, current = [], []
    for line in text.splitlines():
        words = line.split()
        if words[:2] == ["facet", "normal"] or words[:1] == ["vertex"]:
            try:
                current.extend(float(v) for v in words[-3:])
            except ValueError:
                raise UserError(f"{source}: cannot read the ASCII STL line {line.strip()!r}") from None
        elif words[:1] == ["endfacet"]:
            if len(current) != 12:
                raise UserError(f"{source}: an ASCII STL facet has {len(current) // 3 - 1} vertices, not 3")
            facets.append(tuple(current))
            current = []
    if not facets:
        raise UserError(f"{source}: an ASCII STL without facets")
    return facets


def has_collisions(tree: ET.ElementTree) -> bool:
    return any(link.find("collision") is not None for link in tree.getroot().iter("link"))


def collide_visuals(tree: ET.ElementTree) -> str | None:
    """A URDF without a single `<collision>` (example-robot-data's Alexander lower body: 14 visual
    meshes) fell through the floor: in MuJoCo, as in Gazebo, nothing of it collides. Each link's
    `<visual>` is copied as its `<collision>` too; returns the report's line, None where the URDF has
    collision geometry of its own (links without any, a sensor's frame, are its choice)."""
    if has_collisions(tree):
        return None
    links = [link for link in tree.getroot().iter("link") if link.find("visual") is not None]
    for link in links:
        for visual in link.findall("visual"):
            collision = copy.deepcopy(visual)
            collision.tag = "collision"
            for material in collision.findall("material"):
                collision.remove(material)
            link.append(collision)
    if not links:
        return None
    return (f"collision geometry: none in the URDF -> each link's <visual> collides as well ({short([link.get('name', '') for link in links])}; "
            "MuJoCo collides a mesh as its convex hull): give the links <collision> elements with the robot's contact shapes")  # fmt: skip


def drop_footprint(tree: ET.ElementTree) -> str | None:
    """A root link without geometry fixed to a single child (ROS's base_footprint, a base_link under a
    trunk or a chassis) makes the child the root, the floating base: a massless root is left out; one
    with an `<inertial>` (pybullet's racecar: 0.1 kg at the ground, the chassis 5 cm up) hangs from
    the child by the same fixed joint turned round, its mass kept. Returns the report line, None
    where the root is a body of its own."""
    robot = tree.getroot()
    links = {link.get("name"): link for link in robot.findall("link")}
    joints = robot.findall("joint")
    children = {j.find("child").get("link") for j in joints if j.find("child") is not None}
    roots = [name for name in links if name not in children]
    if len(roots) != 1:
        return None
    root = links[roots[0]]
    below = [j for j in joints if j.find("parent") is not None and j.find("parent").get("link") == roots[0]]
    if root.find("visual") is not None or root.find("collision") is not None or len(below) != 1 or below[0].get("type") != "fixed":
        return None
    joint = below[0]
    child = joint.find("child").get("link")
    why = ("is the floating base (a free joint goes on a body of the world only, and the base's height and IMU are "
           "read at its frame, not at the ground)")
    if root.find("inertial") is None:
        robot.remove(root)
        robot.remove(joint)
        return f"root link {roots[0]}: massless, without geometry, fixed to {child} -> left out of the copy, so {child} {why}"
    if not _turn_round(joint):
        return None  # an origin MuJoCo's own parse will name
    joint.find("parent").set("link", child)
    joint.find("child").set("link", roots[0])
    mass = root.find("inertial/mass")
    try:
        weight = f" ({float(mass.get('value')):g} kg)"
    except (AttributeError, TypeError, ValueError):  # no <mass>, or one MuJoCo's parse will name
        weight = ""
    return (f"root link {roots[0]}: without geometry, fixed to {child} -> in the copy it hangs from {child} by the same "
            f"joint{weight}, so {child} {why}")


def _turn_round(joint: ET.Element) -> bool:
    """Write a fixed joint's `<origin>` (the child's frame in the parent's) as the parent's frame in
    the child's. False where its numbers do not read."""
    origin = joint.find("origin")
    if origin is None:
        return True  # the identity turned round
    try:
        xyz = np.array([float(v) for v in origin.get("xyz", "0 0 0").split()])
        rpy = [float(v) for v in origin.get("rpy", "0 0 0").split()]
    except ValueError:
        return False
    if xyz.shape != (3,) or len(rpy) != 3:
        return False
    rotation = rpy_matrix(*rpy).T
    origin.set("xyz", " ".join(f"{v:.9g}" for v in -rotation @ xyz + 0.0))
    origin.set("rpy", " ".join(f"{v + 0.0:.9g}" for v in matrix_rpy(rotation)))
    return True


def rpy_matrix(roll: float, pitch: float, yaw: float) -> np.ndarray:
    """URDF's fixed-axis roll, pitch, yaw: R = Rz(yaw) Ry(pitch) Rx(roll)."""
    cr, sr, cp, sp, cy, sy = np.cos(roll), np.sin(roll), np.cos(pitch), np.sin(pitch), np.cos(yaw), np.sin(yaw)
    return np.array([[cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr],
                     [sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr],
                     [-sp, cp * sr, cp * cr]])  # fmt: skip


def matrix_rpy(rotation: np.ndarray) -> tuple[float, float, float]:
    """The roll, pitch, yaw of a rotation matrix (rpy_matrix's inverse; at pitch +-pi/2 the roll is 0)."""
    pitch = float(np.arcsin(np.clip(-rotation[2, 0], -1.0, 1.0)))
    if abs(rotation[2, 0]) > 1.0 - 1e-12:  # gimbal lock: roll and yaw turn about the same axis
        return 0.0, pitch, float(np.arctan2(-rotation[0, 1], rotation[1, 1]))
    return float(np.arctan2(rotation[2, 1], rotation[2, 2])), pitch, float(np.arctan2(rotation[1, 0], rotation[0, 0]))


ENDLESS = 1000.0
"""A revolute joint whose limits span more than this [rad] has none: ROS descriptions write a
continuous joint (a rotor, a wheel) as revolute with limits of +-1e16."""


def endless_revolutes(tree: ET.ElementTree) -> str | None:
    """Make each revolute joint whose limits span more than ENDLESS a continuous one (its effort and
    velocity limits kept): as written, MuJoCo takes the +-1e16 limits literally, and new-task planned
    position targets across them. Returns the report line, None where there is none."""
    changed = []
    for joint in tree.getroot().findall("joint"):
        limit = joint.find("limit")
        if joint.get("type") != "revolute" or limit is None:
            continue
        try:
            span = float(limit.get("upper", "0")) - float(limit.get("lower", "0"))
        except ValueError:  # MuJoCo's own parse names it
            continue
        if span > ENDLESS:
            joint.set("type", "continuous")
            limit.attrib.pop("lower", None)
            limit.attrib.pop("upper", None)
            changed.append((joint.get("name"), span))
    if not changed:
        return None
    return (f"joints {short([name for name, _ in changed])}: revolute with limits {changed[0][1] / 2:.3g} rad either side, a ROS way to write a joint "
            "without limits -> continuous in the copy")
