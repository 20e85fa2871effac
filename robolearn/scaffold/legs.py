"""What the locomotion template reads of a robot besides its joints (inspect_model.py): a planar
base's joints and their roles, the feet with their touch sensors, the base's IMU
site."""

from __future__ import annotations

from dataclasses import dataclass

import mujoco
import numpy as np

from robolearn.scaffold.model_query import ONE_DOF, driven_joints, obj_name
from robolearn.scene.geometry import geom_corners

_IMU_SENSORS = (int(mujoco.mjtSensor.mjSENS_GYRO), int(mujoco.mjtSensor.mjSENS_ACCELEROMETER),
                int(mujoco.mjtSensor.mjSENS_FRAMEQUAT))  # fmt: skip


SOLE_TOLERANCE = 0.005
"""A foot's geoms whose lowest point is within this of its lowest one [m] are what it stands on (a flat
foot's four corner spheres; not the shin capsule that ends in a ball foot)."""


@dataclass(frozen=True)
class Foot:
    body: str
    point: tuple[float, float, float]
    """The centre of the geoms the foot stands on (`sole`), in the body's frame [m]."""
    radius: float
    """Radius of the contact site to put there: it holds those geoms (`sole`) [m]."""
    sensor: str | None
    """An existing touch sensor on the foot, None if it has none."""
    geom: str | None = None
    """Where the model leaves the foot's body unnamed: the named geom of it that the generated
    robot.py finds the body by (and names it `body`)."""


@dataclass(frozen=True)
class BaseJoint:
    """A joint between the world and a planar robot's root body (gymnasium's and dm_control's hopper,
    walker and cheetah move on rootx, rootz and rooty)."""

    name: str
    role: str
    """forward (the first horizontal slide), lateral (another), height (a vertical slide), pitch (a hinge
    about a horizontal axis: the body tilts) or yaw (a hinge about the vertical)."""
    axis: tuple[float, float, float]
    """The joint's axis in the world frame at the model's default pose."""
    qpos0: float


def planar_base(model: mujoco.MjModel, data: mujoco.MjData, body: int) -> tuple[list[str], list[BaseJoint]]:
    """The root body's own joints, and the roles of those no actuator drives when one of them is a
    horizontal slide (a planar robot: it moves along the floor on that slide). A driven slide is a
    rail (a cart's, a gantry's): the robot drives it, nothing about it is a base that moves freely."""
    all_joints = range(int(model.body_jntadr[body]), int(model.body_jntadr[body] + model.body_jntnum[body]))
    names = [obj_name(model, mujoco.mjtObj.mjOBJ_JOINT, j) for j in all_joints]
    driven = driven_joints(model)
    if any(int(model.jnt_type[j]) == int(mujoco.mjtJoint.mjJNT_SLIDE) for j in all_joints if j in driven):
        return names, []  # a rail under the robot (point.xml's ballx), even beside slides nothing drives
    joints = [j for j in all_joints if j not in driven]
    axes = {}
    for j in joints:
        if int(model.jnt_type[j]) not in ONE_DOF:
            return names, []
        axes[j] = data.xmat[body].reshape(3, 3) @ model.jnt_axis[j]
    slide = {j for j in joints if int(model.jnt_type[j]) == int(mujoco.mjtJoint.mjJNT_SLIDE)}
    horizontal = [j for j in slide if abs(axes[j][2]) <= 0.7]
    if not horizontal:
        return names, []
    forward = max(horizontal, key=lambda j: (abs(axes[j][0]), -j))  # the slide closest to the world's x
    found = []
    for j in joints:
        name = obj_name(model, mujoco.mjtObj.mjOBJ_JOINT, j)
        vertical = abs(axes[j][2]) > 0.7
        if j in slide:
            role = "forward" if j == forward else "height" if vertical else "lateral"
        else:
            role = "yaw" if vertical else "pitch"
        found.append(BaseJoint(name, role, tuple(round(float(v), 4) for v in axes[j]), float(model.qpos0[model.jnt_qposadr[j]])))
    return names, found


def feet(model: mujoco.MjModel, data: mujoco.MjData, base: int, robot: list[int], children: dict[int, list[int]],
          geoms: list[int], low: dict[int, float], near_ground: float) -> list[Foot]:
    """The leaf bodies of the base's joint chains whose geometry reaches below `near_ground` (each
    geom's lowest world height in `low`), with the lowest point of each and its touch sensor if any.
    Of the leaves fixed to one moving link, only the lowest (and any within SOLE_TOLERANCE of it) is
    a foot; so is a leaf below another (a wheel on its ankle, where a frame without geometry makes the
    ankle a leaf too) where it stands lower."""
    touch = {}  # body -> [(site height, sensor name)]
    for s in range(model.nsensor):
        if int(model.sensor_type[s]) == int(mujoco.mjtSensor.mjSENS_TOUCH):
            site = int(model.sensor_objid[s])
            touch.setdefault(int(model.site_bodyid[site]), []).append((float(data.site_xpos[site, 2]),
                                                                       obj_name(model, mujoco.mjtObj.mjOBJ_SENSOR, s)))  # fmt: skip
    reaching = {}  # foot body -> its lowest geom
    for leaf in (b for b in robot if not children[b] and b != base):
        foot = leaf
        while not [g for g in geoms if int(model.geom_bodyid[g]) == foot] and foot != base:
            foot = int(model.body_parentid[foot])  # a frame without geometry: its parent is the foot
        foot_geoms = [g for g in geoms if int(model.geom_bodyid[g]) == foot]
        if foot != base and foot_geoms and low[min(foot_geoms, key=lambda g: low[g])] <= near_ground:
            reaching[foot] = min(foot_geoms, key=lambda g: low[g])
    feet: list[Foot] = []
    for foot, g in reaching.items():
        if any(low[h] < low[g] - SOLE_TOLERANCE for other, h in reaching.items()
               if int(model.body_weldid[other]) == int(model.body_weldid[foot]) or _above(model, foot, other)):
            continue  # higher than a foot fixed to the same shank (Go2's shin links) or one below it (Centauro's wheels)
        foot_geoms = [h for h in geoms if int(model.geom_bodyid[h]) == foot]
        world, radius = sole(model, data, [h for h in foot_geoms if low[h] <= low[g] + SOLE_TOLERANCE])
        local = data.xmat[foot].reshape(3, 3).T @ (world - data.xpos[foot])
        sensors = sorted(touch.get(foot, []))
        name, by_geom = obj_name(model, mujoco.mjtObj.mjOBJ_BODY, foot), None
        if not name:  # an unnamed body (gymnasium's ant's ankles): found by a named geom of it, and named
            by_geom = next((n for n in (obj_name(model, mujoco.mjtObj.mjOBJ_GEOM, h) for h in [g, *foot_geoms]) if n), None)
            name = _unique_body_name(model, by_geom.removesuffix("_geom") or by_geom, [f.body for f in feet]) if by_geom else ""
        if name and name not in [f.body for f in feet]:
            feet.append(Foot(name, tuple(round(float(v), 4) for v in local), round(radius, 4),
                             sensors[0][1] if sensors else None, by_geom))  # fmt: skip
    return feet


def _above(model: mujoco.MjModel, body: int, other: int) -> bool:
    """`other` hangs below `body` (in its subtree)."""
    while other:
        other = int(model.body_parentid[other])
        if other == body:
            return True
    return False


def sole(model: mujoco.MjModel, data: mujoco.MjData, geoms: list[int]) -> tuple[np.ndarray, float]:
    """A touch sensor's site for a foot: a sphere holding all of the given geoms (their bounding boxes)
    with room for their contact margin, as (centre in the world frame [m], radius [m]). A touch sensor
    counts a contact of its body only when the contact point is inside the site (or when the ray from
    it along the normal, away from the body, still meets the site), so the site must hold every point
    where the foot can touch: a lying capsule touches at its ends, a box at its corners, not under
    its centre."""
    corners = np.concatenate([geom_corners(model, data, g) for g in geoms])
    center = (corners.min(axis=0) + corners.max(axis=0)) / 2
    reach = float(np.linalg.norm(corners - center, axis=1).max())
    return center, reach + float(model.geom_margin[geoms].max()) + 0.005  # + 5 mm of slack


def _unique_body_name(model: mujoco.MjModel, name: str, taken: list[str]) -> str:
    """`name`, or `name_2`, ...: no body of the model and none in `taken` has it."""
    candidate, k = name, 2
    while candidate in taken or mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, candidate) >= 0:
        candidate, k = f"{name}_{k}", k + 1
    return candidate


def imu_site(model: mujoco.MjModel, base: int) -> str | None:
    """A site that an IMU-type sensor reads, on the base or on a body fixed to it (an IMU link)."""
    for sensor in range(model.nsensor):
        if int(model.sensor_type[sensor]) in _IMU_SENSORS and int(model.sensor_objtype[sensor]) == int(mujoco.mjtObj.mjOBJ_SITE):
            site = int(model.sensor_objid[sensor])
            if int(model.body_weldid[model.site_bodyid[site]]) == int(model.body_weldid[base]):
                return obj_name(model, mujoco.mjtObj.mjOBJ_SITE, site)
    return None


def imu_body(model: mujoco.MjModel, base: int) -> str:
    """Where an added IMU goes: a body fixed to the base whose name says IMU (a URDF's `imu_link`,
    kept as a body: its frame is where the robot's IMU sits), else the base itself."""
    for body in range(base + 1, model.nbody):
        name = obj_name(model, mujoco.mjtObj.mjOBJ_BODY, body)
        if int(model.body_weldid[body]) == int(model.body_weldid[base]) and "imu" in name.lower():
            return name
    return obj_name(model, mujoco.mjtObj.mjOBJ_BODY, base)
