"""Derived physics quantities shared by terms (not terms themselves): the floating base's pose and
velocities in its own frame, actuator forces. Computed from the backend's state tensors only, so
every backend gives them; the addresses they need come resolved from env.scene and env.actions."""

from __future__ import annotations

import torch

from robolearn.errors import UserError
from robolearn.mdp.constants import constant


def needs_floating_base(term):
    """Mark an event that reads or moves the floating base (env.scene.root): a model without a free
    joint is refused when the task is built, not when the event first runs (an interval push may
    come minutes into training). Other terms need no mark: each runs once when the task is built."""
    term.needs_floating_base = True
    return term


def quat_rotate_inverse(q: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """Rotate world vectors v [N, 3] into the frames of unit quaternions q [N, 4] (w, x, y, z)."""
    w, xyz = q[:, :1], q[:, 1:]
    t = 2.0 * torch.linalg.cross(xyz, v, dim=1)
    return v - w * t + torch.linalg.cross(xyz, t, dim=1)


def root_addresses(env) -> tuple[int, int]:
    """qpos and dof address of the model's first free joint (the floating base)."""
    root = env.scene.root
    return root.qpos_adr, root.dof_adr


def joint_ranges(env, joints) -> tuple[torch.Tensor | slice, torch.Tensor]:
    """The limited hinge/slide joints among `joints` (env.scene.joints' names or patterns, None:
    all): their qpos index and their ranges [k, 2] [rad or m], read from the model."""
    named = env.scene.joints(joints).qpos
    limits = env.scene.qpos_limits  # -inf, inf where a joint has no range
    wanted = set(range(named.start, named.stop)) if isinstance(named, slice) else set(named.tolist())
    limited = [a for a in sorted(wanted) if bool(torch.isfinite(limits[a]).all())]
    return env.scene.index(limited), limits[limited].reshape(-1, 2)


def root_pos_w(env) -> torch.Tensor:
    """Base position in the world frame [N, 3] [m]."""
    return env.physics.qpos[:, env.scene.root.pos]


def root_pos_home(env) -> torch.Tensor:
    """Base position in the home pose (the `home` keyframe, else qpos0) [N, 3] [m]."""
    return env.default_qpos[:, env.scene.root.pos]


def root_quat_w(env) -> torch.Tensor:
    """Base orientation in the world frame [N, 4], unit quaternions (w, x, y, z)."""
    return env.physics.qpos[:, env.scene.root.quat]


def root_lin_vel_b(env) -> torch.Tensor:
    """Base linear velocity in the base frame [m/s] (MuJoCo keeps a free joint's in the world frame)."""
    return quat_rotate_inverse(root_quat_w(env), env.physics.qvel[:, env.scene.root.lin_vel])


def root_ang_vel_b(env) -> torch.Tensor:
    """Base angular velocity in the base frame [rad/s]: what a base-mounted gyro reads."""
    return env.physics.qvel[:, env.scene.root.ang_vel]


def gravity_b(env) -> torch.Tensor:
    """The unit gravity direction in the base frame: (0, 0, -1) when the base is level.

    R^T (0, 0, -1), minus the third row of the rotation matrix of q = (w, x, y, z):
    (2 (wy - xz), -2 (yz + wx), 2 (xx + yy) - 1), computed as six products in pairs, times +-2, each
    pair summed, then -1: five kernels instead of fourteen (it runs in four terms of the quadruped's
    step), bit for bit the same values (scaling by 2 is exact; each component sums one pair)."""
    q = root_quat_w(env)
    pick = constant((0, 1, 2, 0, 1, 2, 2, 3, 3, 1, 1, 2), q.device, torch.long)  # (w x y w x y) * (y z z x x y)
    signs = constant(((2.0, -2.0), (-2.0, -2.0), (2.0, 2.0)), q.device, q.dtype)
    offset = constant((0.0, 0.0, -1.0), q.device, q.dtype)
    factors = q.index_select(1, pick)
    products = (factors[:, :6] * factors[:, 6:]).view(-1, 3, 2)  # (wy, xz), (yz, wx), (xx, yy)
    return (products * signs).sum(dim=2).add_(offset)


def joint_vel_command_error(env, command: str, joints) -> torch.Tensor:
    """Commanded minus actual velocity of the named joints [N, k], the command having one component
    per joint in their order (a wheel's speed, a planar base's forward slide)."""
    target = env.commands.get(command)
    qd = env.physics.qvel[:, env.scene.joints(joints).dof]
    if target.shape[1] != qd.shape[1]:
        raise UserError(f"command '{command}' has {target.shape[1]} components and joints names {qd.shape[1]}; "
                        "valid: one component per joint")  # fmt: skip
    return target - qd


def actuator_force(env) -> torch.Tensor:
    """Force or torque every policy actuator applies to its joint [N, A] as MuJoCo computes it for a
    fixed-gain, affine-bias actuator on a joint: gear * clamp(gain * ctrl + b0 + b1 * gear * q + b2 *
    gear * qdot, forcerange) (MuJoCo clamps the actuator's force, then the gear scales it onto the
    joint: a motor of gear 100 at ctrl 0.4 puts 40 N m on it), with each env's own (possibly
    randomized) gains and force limits."""
    actions = env.actions
    if actions.joint_qpos is None:
        others = [n for n, joint in zip(actions.actuator_names, actions.joint_names) if joint is None]
        listed = ", ".join(others[:3]) + (f" and {len(others) - 3} more" if len(others) > 3 else "")
        raise UserError(f"this term needs every policy actuator to drive a hinge or slide joint, and {listed} drive a "
                        "tendon, site, body or ball joint; penalize effort with action_l2 instead")  # fmt: skip
    ids = actions.actuator_ids
    forcerange = env.physics.model_field("actuator_forcerange")[:, ids].float()
    lo = torch.where(actions.force_limited, forcerange[..., 0], -torch.inf)
    hi = torch.where(actions.force_limited, forcerange[..., 1], torch.inf)
    gain = env.physics.model_field("actuator_gainprm")[:, ids, 0].float()
    bias = env.physics.model_field("actuator_biasprm")[:, ids, :3].float()
    gear = actions.gear
    q, qd = env.physics.qpos[:, actions.joint_qpos] * gear, env.physics.qvel[:, actions.joint_dof] * gear
    force = gain * actions.ctrl[:, ids] + bias[..., 0] + bias[..., 1] * q + bias[..., 2] * qd
    return torch.clamp(force, lo, hi) * gear
