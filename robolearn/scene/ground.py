"""The ground of a model: which geoms are ground (planes, height fields), whether the world has
any, and a ground plane for a robot model that has none (a robot description ships without one)."""

from __future__ import annotations

import mujoco
import numpy as np

GROUND_TYPES = (int(mujoco.mjtGeom.mjGEOM_PLANE), int(mujoco.mjtGeom.mjGEOM_HFIELD))


GROUND_BOX_HALF_SIZE = 1.0
"""A box on the world body whose top is level and at least 2 x 2 m is ground too (scene files often
make their floor a thin wide box); a table or a step is not."""


def is_ground(model: mujoco.MjModel, g: int) -> bool:
    """Geom g is a plane, a height field, or a ground box (GROUND_BOX_HALF_SIZE) on the world body."""
    return int(model.geom_type[g]) in GROUND_TYPES or _ground_box(model, g)


def _ground_box(model: mujoco.MjModel, g: int) -> bool:
    if int(model.geom_type[g]) != mujoco.mjtGeom.mjGEOM_BOX or int(model.geom_bodyid[g]) != 0:
        return False
    frame = np.zeros(9)
    mujoco.mju_quat2Mat(frame, model.geom_quat[g])
    return bool(frame[8] > 0.9999 and (model.geom_size[g, :2] >= GROUND_BOX_HALF_SIZE).all())  # its z axis up


def has_ground(model: mujoco.MjModel) -> bool:
    """The world body carries a plane, height field or ground box the robot can stand on."""
    return any(is_ground(model, g) and int(model.geom_bodyid[g]) == 0 for g in range(model.ngeom))


def ground_height(model: mujoco.MjModel, data: mujoco.MjData) -> float | None:
    """World height of the world body's highest level ground (a horizontal plane, a height field's
    base, a ground box's top) after kinematics; None where it has none. A plane standing upright (a
    wall) is not ground."""
    heights = [float(data.geom_xpos[g, 2]) + (float(model.geom_size[g, 2]) if _ground_box(model, g) else 0.0)
               for g in range(model.ngeom)
               if is_ground(model, g) and int(model.geom_bodyid[g]) == 0 and data.geom_xmat[g, 8] > 0.99]  # fmt: skip
    return max(heights, default=None)


def add_floor(spec: mujoco.MjSpec, name: str = "floor") -> mujoco.MjsGeom:
    """A plane `name` on the world body that collides with every geom that collides with anything:
    its contype/conaffinity are set from the model's geoms, so a model whose default class turns
    collisions off one way (contype 0, conaffinity 1, as many robot descriptions do) still stands on it."""
    floor = spec.worldbody.add_geom(name=name, type=mujoco.mjtGeom.mjGEOM_PLANE, size=[0, 0, 0.05], rgba=[0.3, 0.35, 0.4, 1])
    floor.contype = floor.conaffinity = 0
    for geom in spec.geoms:
        if geom.name != name:
            floor.contype |= geom.conaffinity
            floor.conaffinity |= geom.contype
    return floor


def level_ground_geoms(spec: mujoco.MjSpec) -> list[mujoco.MjsGeom]:
    """The world body's level ground in a spec, whatever its name (a plane called `ground`, an
    unnamed one, a wide flat box): what a generated terrain replaces, since left in place it would
    fill the terrain's dips. A turned plane (a wall) and a small box (an obstacle) are not."""
    found = []
    for geom in spec.worldbody.geoms:
        turned = geom.alt.type != mujoco.mjtOrientation.mjORIENTATION_QUAT or not np.allclose(geom.quat, [1, 0, 0, 0])
        wide_box = geom.type == mujoco.mjtGeom.mjGEOM_BOX and bool((np.asarray(geom.size[:2]) >= GROUND_BOX_HALF_SIZE).all())
        if not turned and (geom.type == mujoco.mjtGeom.mjGEOM_PLANE or wide_box):
            found.append(geom)
    return found
