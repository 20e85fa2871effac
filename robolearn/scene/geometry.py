"""Where a model's geoms are: world-frame bounding-box corners, for new-task (the lowest point, the
feet, a reach workspace), generated tasks (the height their robot stands at) and the renderer (how
big the robot is). numpy on MjData, no torch."""

from __future__ import annotations

import mujoco
import numpy as np

_SIGNS = np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)], dtype=float)


def geom_corners(model: mujoco.MjModel, data: mujoco.MjData, g: int) -> np.ndarray:
    """The 8 corners of geom g's bounding box in the world frame [8, 3] (kinematics done)."""
    center, half = model.geom_aabb[g, :3], model.geom_aabb[g, 3:]
    local = center + _SIGNS * half
    return data.geom_xpos[g] + local @ data.geom_xmat[g].reshape(3, 3).T


def body_children(model: mujoco.MjModel) -> dict[int, list[int]]:
    """Each body's child bodies."""
    children: dict[int, list[int]] = {b: [] for b in range(model.nbody)}
    for b in range(1, model.nbody):
        children[int(model.body_parentid[b])].append(b)
    return children


def subtree(children: dict[int, list[int]], body: int) -> list[int]:
    """`body` and every body below it (`children` from body_children)."""
    out, pending = [], [body]
    while pending:
        b = pending.pop()
        out.append(b)
        pending += children[b]
    return out


def collision_geoms(model: mujoco.MjModel, bodies: list[int]) -> list[int]:
    """The geoms of `bodies` that collide with anything; all their geoms where none does."""
    geoms = [g for g in range(model.ngeom) if int(model.geom_bodyid[g]) in bodies]
    colliding = [g for g in geoms if model.geom_contype[g] or model.geom_conaffinity[g]]
    return colliding or geoms


def lowest_point(model: mujoco.MjModel, data: mujoco.MjData, body: int) -> float:
    """World height of the lowest point of `body` and everything below it (kinematics done)."""
    geoms = collision_geoms(model, subtree(body_children(model), body))
    return float(min((geom_corners(model, data, g)[:, 2].min() for g in geoms), default=data.xpos[body, 2]))


CLEARANCE = 0.005
"""How far above the ground [m] a standing pose puts the robot's lowest point (new-task's home keyframes)."""


def standing_height(model: mujoco.MjModel, qpos: np.ndarray, body: int, clearance: float = CLEARANCE) -> float:
    """The height [m] to give the free joint of `body` (its qpos z) for the lowest point of the body
    and everything below it to be `clearance` above z = 0 in pose `qpos`."""
    data = mujoco.MjData(model)
    data.qpos[:] = qpos
    mujoco.mj_kinematics(model, data)
    z = int(model.jnt_qposadr[model.body_jntadr[body]]) + 2
    return round(float(qpos[z]) + clearance - lowest_point(model, data, body), 4)
