"""The masses and inertias of a URDF's links as new-task copies it, mended where MuJoCo would refuse
them or weigh them wrongly and pybullet, Gazebo and Pinocchio take them (each change one line of
the report):
- a link without `<inertial>` is massless in URDF, MuJoCo weighs its geometry as water
  (massless_links);
- a link that moves with nothing to weigh it (no `<inertial>`, no geometry, or mass 0: a "virtual"
  link between two joints of a hip, a finger's mass left at 0) gets 1 g (weightless_links);
- moments no rigid body has: placeholders under 1 g get a 1 cm sphere's, heavier links the
  nearest positive definite moments, and links whose largest moment exceeds the other two's sum
  MuJoCo's own `balanceinertia` (mend_inertias).
"""

from __future__ import annotations

import xml.etree.ElementTree as ET

import numpy as np

from robolearn.scaffold.plan import short


def _weld_groups(robot: ET.Element, legged: bool) -> tuple[dict[str, str], set[str]] | None:
    """Each link's weld group (links joined by fixed joints, named by one of them) and the groups
    that have mass: a link with an `<inertial>` of positive mass, or, for a robot fixed to the world
    (not `legged`), its root. None for a broken tree (MuJoCo's own message names it)."""
    links = {link.get("name"): link for link in robot.findall("link")}
    group = {name: name for name in links}

    def find(name: str) -> str:
        while group[name] != name:
            name = group[name]
        return name

    parents = {}
    for joint in robot.findall("joint"):
        parent, child = joint.find("parent"), joint.find("child")
        if parent is None or child is None or parent.get("link") not in links or child.get("link") not in links:
            return None
        parents[child.get("link")] = parent.get("link")
        if joint.get("type") == "fixed":
            group[find(child.get("link"))] = find(parent.get("link"))
    weighed = {find(name) for name, link in links.items() if _mass(link) > 0}
    if not legged:
        weighed |= {find(name) for name in links if name not in parents}  # fixed to the world: it does not move
    return {name: find(name) for name in links}, weighed


def _mass(link: ET.Element) -> float:
    """A link's `<inertial>` mass; 0 without one, NaN where it does not read."""
    mass = link.find("inertial/mass")
    if link.find("inertial") is None:
        return 0.0
    try:
        return float(mass.get("value", "0")) if mass is not None else 0.0
    except ValueError:
        return float("nan")


def _geometry(link: ET.Element) -> bool:
    return link.find("collision") is not None or link.find("visual") is not None


def _from_geometry(robot: ET.Element) -> str | None:
    """The URDF's own `<mujoco><compiler inertiafromgeom>`, if it says one."""
    compiler = robot.find("mujoco/compiler")
    return compiler.get("inertiafromgeom") if compiler is not None else None


def massless_links(tree: ET.ElementTree, legged: bool) -> str | None:
    """A URDF link without `<inertial>` has no mass (URDF's rule); MuJoCo's default gives it the mass
    of its geometry at the density of water (an ANYmal's 0.58 m trunk box: 29 kg of 52). Where
    every such link is welded (by fixed joints) to a link that has mass, or to the root of a robot
    fixed to the world, the copy's compiler says inertiafromgeom="false": MuJoCo refuses a
    massless body that moves (where one would, a warning says so and nothing changes). The URDF's
    own setting stands. Returns the report line, None where there is nothing to say."""
    robot = tree.getroot()
    grouped = _weld_groups(robot, legged)
    if _from_geometry(robot) is not None or grouped is None:
        return None
    group, weighed = grouped
    bare = [link.get("name") for link in robot.findall("link") if link.find("inertial") is None and _geometry(link)]
    if not bare:
        return None
    moving = [name for name in bare if group[name] not in weighed]
    if moving:
        return (f"WARNING: links without <inertial> that move with nothing else to weigh them: {short(moving)} -> MuJoCo gives "
                "them the mass of their geometry as water (a massless moving body does not compile); give each an "
                "<inertial> with its real mass")  # fmt: skip
    urdf_compiler(robot).set("inertiafromgeom", "false")
    return (f"links without <inertial>: {short(bare)} -> massless, as URDF reads them (MuJoCo would weigh their "
            "geometry as water: inertiafromgeom=\"false\" in the copy)")


STAND_IN_MASS = 1e-3
"""The mass [kg] a moving link without any gets: MuJoCo refuses a moving body of mass 0."""
SPHERE_RADIUS = 0.01
"""The least moments a mended link gets are a sphere's of this radius [m] and its mass."""


def weightless_links(tree: ET.ElementTree, legged: bool) -> str | None:
    """Give each link that moves with nothing to weigh it and that MuJoCo would give no mass (no
    `<inertial>` and no geometry, or a mass of 0: example-robot-data's human has "virtual" links
    between the joints of a hip, Romeo's finger links weigh 0) STAND_IN_MASS on a 1 cm sphere.
    Returns the report line, None where there is none."""
    robot = tree.getroot()
    grouped = _weld_groups(robot, legged)
    if _from_geometry(robot) == "true" or grouped is None:
        return None
    group, weighed = grouped
    mended = []
    for link in robot.findall("link"):
        mass = _mass(link)
        if group[link.get("name")] in weighed or not mass == 0 or (link.find("inertial") is None and _geometry(link)):
            continue  # weighed, a mass of its own, or geometry MuJoCo weighs (massless_links)
        inertial = link.find("inertial")
        if inertial is None:
            inertial = ET.SubElement(link, "inertial")
        for tag in ("mass", "inertia"):
            if inertial.find(tag) is None:
                ET.SubElement(inertial, tag)
        inertial.find("mass").set("value", f"{STAND_IN_MASS:g}")
        _set_moments(inertial.find("inertia"), np.eye(3) * _sphere(STAND_IN_MASS))
        mended.append(link.get("name"))
    if not mended:
        return None
    return (f"links that move with no mass: {short(mended)} -> {STAND_IN_MASS * 1000:g} g on a 1 cm sphere in the copy "
            "(MuJoCo refuses a moving body without mass; URDF tools take it)")


PLACEHOLDER_MASS = 1e-3
"""An `<inertial>` lighter than this [kg] is a placeholder: ROS descriptions give frames that carry
nothing (HyQ's base_link, TIAGo's antennas) 1e-6 kg and moments such as ixx = ixy = ... = 1e-6,
which no rigid body has and MuJoCo refuses ("inertia must have positive eigenvalues")."""


def mend_inertias(tree: ET.ElementTree) -> list[str]:
    """Moments of inertia no rigid body has, mended (module doc): a placeholder (lighter than
    PLACEHOLDER_MASS) gets a 1 cm sphere's; a heavier link whose moments are not positive definite
    (iCub's ankles: 0.27 kg, all 0; TriFinger's izz rounded to 0) the same principal axes with each
    moment at least that sphere's; one whose largest principal moment exceeds the other two's sum
    (PR2's sensor mount, an Allegro hand's links) MuJoCo's `balanceinertia` in the copy. Returns
    the report's lines."""
    robot = tree.getroot()
    if _from_geometry(robot) == "true":
        return []
    placeholders, clipped, unbalanced = [], [], []
    for link in robot.findall("link"):
        mass, inertia = _mass(link), link.find("inertial/inertia")
        moments = _moments(inertia) if inertia is not None else None
        if moments is None or not 0 < mass < float("inf") or not np.isfinite(moments).all() or _rigid(moments, mass):
            continue
        principal, axes = np.linalg.eigh(moments)
        name = link.get("name")
        if mass < PLACEHOLDER_MASS:
            _set_moments(inertia, np.eye(3) * _sphere(mass))
            placeholders.append(f"{name} ({mass:g} kg)")
        elif principal.min() <= max(1e-15, 1e-6 * _sphere(mass)):
            raised = np.maximum(principal, _sphere(mass))
            _set_moments(inertia, axes @ np.diag(raised) @ axes.T)
            clipped.append(name)
            if raised.max() > raised.sum() - raised.max():  # a flat body's moments, raised: balanced below
                unbalanced.append(name)
        else:
            unbalanced.append(name)
    lines = []
    if placeholders:
        lines.append(f"placeholder inertias: {short(placeholders)} have moments no rigid body has (MuJoCo refuses them) -> a "
                     "1 cm sphere's in the copy (they weigh on nothing at that mass)")  # fmt: skip
    if clipped:
        lines.append(f"inertias: {short(clipped)} not positive definite, or vanishingly small (MuJoCo refuses them) -> each principal moment at "
                     "least a 1 cm sphere's of the link's mass in the copy, the axes kept; set the links' real ones")  # fmt: skip
    if unbalanced:
        urdf_compiler(robot).set("balanceinertia", "true")
        lines.append(f"inertias: {short(unbalanced)} have a principal moment above the other two's sum (MuJoCo refuses "
                     "them) -> balanceinertia=\"true\" in the copy (MuJoCo's own mend); set the links' real ones")  # fmt: skip
    return lines


def urdf_compiler(robot: ET.Element) -> ET.Element:
    """The URDF's `<mujoco><compiler>` element (MuJoCo's URDF extension), made where it has none."""
    extension = robot.find("mujoco")
    if extension is None:
        extension = ET.SubElement(robot, "mujoco")
    compiler = extension.find("compiler")
    return compiler if compiler is not None else ET.SubElement(extension, "compiler")


def _sphere(mass: float) -> float:
    return 0.4 * mass * SPHERE_RADIUS**2


def _moments(inertia: ET.Element) -> np.ndarray | None:
    """The 3 x 3 inertia matrix an `<inertia>` element writes; None where a number does not read."""
    try:
        i = {k: float(inertia.get(k, "0")) for k in ("ixx", "iyy", "izz", "ixy", "ixz", "iyz")}
    except ValueError:
        return None
    return np.array([[i["ixx"], i["ixy"], i["ixz"]], [i["ixy"], i["iyy"], i["iyz"]], [i["ixz"], i["iyz"], i["izz"]]])


def _set_moments(inertia: ET.Element, matrix: np.ndarray) -> None:
    for key, (r, c) in zip(("ixx", "iyy", "izz", "ixy", "ixz", "iyz"), ((0, 0), (1, 1), (2, 2), (0, 1), (0, 2), (1, 2))):
        inertia.set(key, f"{matrix[r, c] + 0.0:.9g}")


def _rigid(matrix: np.ndarray, mass: float) -> bool:
    """Whether moments of inertia are a rigid body's of `mass`: positive definite (each principal
    moment above a millionth of a 1 cm sphere's: iCub's ankles write 0.746 kg with moments of 1e-20,
    which MuJoCo refuses), and each at most the sum of the other two."""
    moments = np.linalg.eigvalsh(matrix)
    least = max(1e-15, 1e-6 * _sphere(mass))
    return bool(moments.min() > least and moments.max() <= moments.sum() - moments.max() + 1e-12 * moments.max())
