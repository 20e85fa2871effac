"""Where a model's geoms are: world-frame bounding-box corners, for new-task (the lowest point, the
feet, a reach workspace) and the renderer (how big the robot is). numpy on MjData, no torch."""

from __future__ import annotations

import mujoco
import numpy as np

_SIGNS = np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)], dtype=float)


def geom_corners(model: mujoco.MjModel, data: mujoco.MjData, g: int) -> np.ndarray:
    """The 8 corners of geom g's bounding box in the world frame [8, 3] (kinematics done)."""
    center, half = model.geom_aabb[g, :3], model.geom_aabb[g, 3:]
    local = center + _SIGNS * half
    return data.geom_xpos[g] + local @ data.geom_xmat[g].reshape(3, 3).T
