"""Which free joint is the robot's floating base: one rule for training, rendering and new-task
(torch-free, so the renderer and the scaffold can use it)."""

from __future__ import annotations

import mujoco

from robolearn_deploy.sim import floating_base_joint as _deploy_rule


def floating_base_joint(model: mujoco.MjModel) -> int | None:
    """The robot's free joint (the deploy stand-in's rule, robolearn_deploy.sim.floating_base_joint):
    of the free joints, the one whose body carries the most joints below it; None without one."""
    return _deploy_rule(model, mujoco)


def floating_base_addresses(model: mujoco.MjModel) -> tuple[int, int] | None:
    """(qpos address, dof address) of the floating base's free joint; None without one."""
    j = floating_base_joint(model)
    return None if j is None else (int(model.jnt_qposadr[j]), int(model.jnt_dofadr[j]))


def root_body(model: mujoco.MjModel) -> int:
    """The body a camera follows: the floating base's, else the world's first child (0 if none)."""
    j = floating_base_joint(model)
    return int(model.jnt_bodyid[j]) if j is not None else min(1, model.nbody - 1)
