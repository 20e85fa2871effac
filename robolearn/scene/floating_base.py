"""Which free joint is the robot's floating base: one rule for training, rendering and new-task
(torch-free, so the renderer and the scaffold can use it)."""

from __future__ import annotations

import mujoco


def floating_base_joint(model: mujoco.MjModel) -> int | None:
    """The robot's free joint: of the model's free joints (a floating base, loose objects), the one
    whose body carries the most joints below it, the first on a tie; None without a free joint.
    (robolearn_deploy/sim.py applies the same rule to a bundle's model.)"""
    free = [j for j in range(model.njnt) if int(model.jnt_type[j]) == int(mujoco.mjtJoint.mjJNT_FREE)]
    if not free:
        return None
    below = [int(n) for n in model.body_jntnum]
    for body in range(model.nbody - 1, 0, -1):  # a child's id is larger than its parent's
        below[int(model.body_parentid[body])] += below[body]
    return max(free, key=lambda j: below[int(model.jnt_bodyid[j])])


def floating_base_addresses(model: mujoco.MjModel) -> tuple[int, int] | None:
    """(qpos address, dof address) of the floating base's free joint; None without one."""
    j = floating_base_joint(model)
    return None if j is None else (int(model.jnt_qposadr[j]), int(model.jnt_dofadr[j]))


def root_body(model: mujoco.MjModel) -> int:
    """The body a camera follows: the floating base's, else the world's first child (0 if none)."""
    j = floating_base_joint(model)
    return int(model.jnt_bodyid[j]) if j is not None else min(1, model.nbody - 1)
