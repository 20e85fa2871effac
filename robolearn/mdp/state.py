"""Derived physics quantities shared by terms (not terms themselves): the floating base's pose and
velocities in its own frame, sensor columns, actuator forces. Computed from the backend's state
tensors only, so every backend gives them."""

from __future__ import annotations

import mujoco
import torch

from robolearn.errors import UserError


def quat_rotate_inverse(q: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """Rotate world vectors v [N, 3] into the frames of unit quaternions q [N, 4] (w, x, y, z)."""
    w, xyz = q[:, :1], q[:, 1:]
    t = 2.0 * torch.linalg.cross(xyz, v, dim=1)
    return v - w * t + torch.linalg.cross(xyz, t, dim=1)


def root_addresses(env) -> tuple[int, int]:
    """qpos and dof address of the model's first free joint (the floating base)."""
    key = ("root",)
    if key not in env._id_cache:
        free = [j for j in range(env.model.njnt) if int(env.model.jnt_type[j]) == int(mujoco.mjtJoint.mjJNT_FREE)]
        if not free:
            raise UserError("this term needs a floating base (a free joint), and the model has none")
        env._id_cache[key] = (int(env.model.jnt_qposadr[free[0]]), int(env.model.jnt_dofadr[free[0]]))
    return env._id_cache[key]


def root_pos_w(env) -> torch.Tensor:
    q, _ = root_addresses(env)
    return env.physics.qpos[:, q : q + 3]


def root_quat_w(env) -> torch.Tensor:
    q, _ = root_addresses(env)
    return env.physics.qpos[:, q + 3 : q + 7]


def root_lin_vel_b(env) -> torch.Tensor:
    """Base linear velocity in the base frame [m/s] (MuJoCo keeps a free joint's in the world frame)."""
    _, d = root_addresses(env)
    return quat_rotate_inverse(root_quat_w(env), env.physics.qvel[:, d : d + 3])


def root_ang_vel_b(env) -> torch.Tensor:
    """Base angular velocity in the base frame [rad/s]: what a base-mounted gyro reads."""
    _, d = root_addresses(env)
    return env.physics.qvel[:, d + 3 : d + 6]


def gravity_b(env) -> torch.Tensor:
    """The unit gravity direction in the base frame: (0, 0, -1) when the base is level."""
    down = torch.zeros(env.num_envs, 3, device=env.device)
    down[:, 2] = -1.0
    return quat_rotate_inverse(root_quat_w(env), down)


def sensor_columns(env, names: list[str]) -> torch.Tensor | slice:
    """Columns of env.physics.sensordata holding the named sensors, in the order given."""
    key = ("sensor", tuple(names))
    if key not in env._id_cache:
        model, cols = env.model, []
        for name in names:
            i = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_SENSOR, name)
            if i < 0:
                valid = [mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_SENSOR, k) for k in range(model.nsensor)]
                raise UserError(f"no sensor named '{name}' in the model; valid: {', '.join(valid)}")
            adr, dim = int(model.sensor_adr[i]), int(model.sensor_dim[i])
            cols += range(adr, adr + dim)
        env._id_cache[key] = env._index(cols)
    return env._id_cache[key]


def actuated_dofs(env) -> tuple[torch.Tensor | slice, torch.Tensor | slice]:
    """(qpos, dof) addresses of the joints the policy's actuators drive, in action order."""
    key = ("actuated",)
    if key not in env._id_cache:
        m = env.model
        joints = [int(m.actuator_trnid[a, 0]) for a in env.actions.actuator_ids.tolist()]
        env._id_cache[key] = (env._index([int(m.jnt_qposadr[j]) for j in joints]), env._index([int(m.jnt_dofadr[j]) for j in joints]))
    return env._id_cache[key]


def actuator_force(env) -> torch.Tensor:
    """Force of every policy actuator [N, A] as MuJoCo computes it for a fixed-gain, affine-bias
    actuator on a joint: clamp(gain * ctrl + b0 + b1 * q + b2 * qdot, forcerange), with each
    env's own (possibly randomized) gains and force limits."""
    key = ("force_limited",)
    if key not in env._id_cache:
        limited = env.model.actuator_forcelimited[env.actions.actuator_ids.tolist()].astype(bool)
        env._id_cache[key] = torch.as_tensor(limited, device=env.device)
    qadr, dadr = actuated_dofs(env)
    limited = env._id_cache[key]
    forcerange = env.physics.model_field("actuator_forcerange")[:, env.actions.actuator_ids].float()
    lo = torch.where(limited, forcerange[..., 0], -torch.inf)
    hi = torch.where(limited, forcerange[..., 1], torch.inf)
    ids = env.actions.actuator_ids
    gain = env.physics.model_field("actuator_gainprm")[:, ids, 0].float()
    bias = env.physics.model_field("actuator_biasprm")[:, ids, :3].float()
    ctrl = env.actions.ctrl[:, ids]
    force = gain * ctrl + bias[..., 0] + bias[..., 1] * env.physics.qpos[:, qadr] + bias[..., 2] * env.physics.qvel[:, dadr]
    return torch.clamp(force, lo, hi)
