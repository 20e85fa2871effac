"""Event terms: f(env, mask, **params). They act only where mask [num_envs] is True.

Reset events write the next episode's initial state into env.reset_qpos / env.reset_qvel; the
env hands those to the backend once, after all reset events ran. Randomization events write
per-environment model fields through the backend.
"""

from __future__ import annotations

import math

import torch

from robolearn.errors import UserError
from robolearn.mdp.state import root_addresses


def _uniform(env, shape: tuple[int, ...], low: float, high: float) -> torch.Tensor:
    return low + (high - low) * torch.rand(shape, generator=env.generator, device=env.device)


def reset_joints_uniform(
    env,
    mask: torch.Tensor,
    position_range: list[float],
    velocity_range: list[float] = (0.0, 0.0),
    joints: list[str] | None = None,
) -> None:
    """Initial joint positions = default + U(position_range), velocities = U(velocity_range)."""
    qadr, dadr = env.joint_ids(joints)
    default = env.default_qpos[:, qadr]
    shape = tuple(default.shape)
    env.reset_qpos[:, qadr] = default + _uniform(env, shape, *position_range)
    env.reset_qvel[:, dadr] = _uniform(env, shape, *velocity_range)


def randomize_model_field(
    env,
    mask: torch.Tensor,
    field: str,
    range: list[float],
    names: list[str] | None = None,
    element: int | None = None,
    operation: str = "scale",
    distribution: str = "uniform",
    per_element: bool = False,
) -> None:
    """Draw one value per environment and entity and apply it to an MjModel field.

    operation: `scale` (nominal * value), `add` (nominal + value) or `abs` (value).
    distribution: `uniform` or `log_uniform` (uniform in log space; for scales).
    element: a column of a multi-column field (e.g. 0 = sliding friction, gain of gainprm).
    per_element: draw each column separately (a centre-of-mass offset in x, y and z) instead of
    one value for the entity's whole row.
    """
    rows = env.field_ids(field, names)
    nominal = env.physics.default_model_field(field)[rows]
    if element is not None:
        nominal = nominal[..., element]
    low, high = (float(v) for v in range)
    shape = (env.num_envs, *nominal.shape) if per_element else (env.num_envs, nominal.shape[0])
    if distribution == "uniform":
        sample = _uniform(env, shape, low, high)
    elif distribution == "log_uniform":
        sample = torch.exp(_uniform(env, shape, math.log(low), math.log(high)))
    else:
        raise UserError(f"randomize_model_field: unknown distribution '{distribution}'; valid: uniform, log_uniform")
    sample = sample.to(nominal.dtype).reshape(shape + (1,) * (nominal.dim() + 1 - len(shape)))
    if operation == "scale":
        values = nominal * sample
    elif operation == "add":
        values = nominal + sample
    elif operation == "abs":
        values = sample.expand((env.num_envs, *nominal.shape))
    else:
        raise UserError(f"randomize_model_field: unknown operation '{operation}'; valid: scale, add, abs")
    new = env.physics.model_field(field).clone()
    if element is None:
        new[:, rows] = values
    else:
        new[:, rows, element] = values
    env.physics.set_model_field(field, new, mask)


def reset_root_state(
    env,
    mask: torch.Tensor,
    xy_range: list[float] = (0.0, 0.0),
    yaw_range: list[float] = (-math.pi, math.pi),
    velocity_range: list[float] = (0.0, 0.0),
) -> None:
    """Floating base at its default pose shifted by U(xy_range) in x and y, turned by U(yaw_range),
    with every base velocity component drawn from U(velocity_range)."""
    q, d = root_addresses(env)
    n = env.num_envs
    env.reset_qpos[:, q : q + 2] += _uniform(env, (n, 2), *xy_range)
    half_yaw = 0.5 * _uniform(env, (n,), *yaw_range)
    w, z = torch.cos(half_yaw), torch.sin(half_yaw)  # yaw about the world z axis, composed with the default
    q0 = env.reset_qpos[:, q + 3 : q + 7].clone()
    env.reset_qpos[:, q + 3] = w * q0[:, 0] - z * q0[:, 3]
    env.reset_qpos[:, q + 4] = w * q0[:, 1] - z * q0[:, 2]
    env.reset_qpos[:, q + 5] = w * q0[:, 2] + z * q0[:, 1]
    env.reset_qpos[:, q + 6] = w * q0[:, 3] + z * q0[:, 0]
    env.reset_qvel[:, d : d + 6] = _uniform(env, (n, 6), *velocity_range)


def randomize_pd_gains(
    env,
    mask: torch.Tensor,
    kp_range: list[float],
    kd_range: list[float],
    actuators: list[str] | None = None,
) -> None:
    """Scale each position servo's stiffness and damping by U(kp_range) and U(kd_range), per env
    and actuator: gain and position bias move together (the servo keeps its target), the
    velocity bias separately."""
    rows = env.field_ids("actuator_gainprm", actuators)
    n = env.num_envs
    gain, bias = env.physics.model_field("actuator_gainprm").clone(), env.physics.model_field("actuator_biasprm").clone()
    nominal_gain = env.physics.default_model_field("actuator_gainprm")[rows]
    nominal_bias = env.physics.default_model_field("actuator_biasprm")[rows]
    count = nominal_gain.shape[0]
    kp = _uniform(env, (n, count), *kp_range).to(gain.dtype)
    kd = _uniform(env, (n, count), *kd_range).to(gain.dtype)
    gain[:, rows, 0] = nominal_gain[:, 0] * kp
    bias[:, rows, 1] = nominal_bias[:, 1] * kp
    bias[:, rows, 2] = nominal_bias[:, 2] * kd
    env.physics.set_model_field("actuator_gainprm", gain, mask)
    env.physics.set_model_field("actuator_biasprm", bias, mask)
