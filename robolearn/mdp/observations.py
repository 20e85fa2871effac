"""Observation terms: f(env, **params) -> Tensor[num_envs, k]."""

from __future__ import annotations

import torch

from robolearn.mdp import state


def joint_pos(env, joints: list[str] | None = None, relative: bool = False) -> torch.Tensor:
    """Positions of hinge/slide joints [rad or m]; relative=True subtracts the default pose."""
    qadr, _ = env.joint_ids(joints)
    q = env.physics.qpos[:, qadr]
    return q - env.default_qpos[:, qadr] if relative else q


def joint_vel(env, joints: list[str] | None = None) -> torch.Tensor:
    """Velocities of hinge/slide joints [rad/s or m/s]."""
    _, dadr = env.joint_ids(joints)
    return env.physics.qvel[:, dadr]


def joint_pos_cos_sin(env, joints: list[str] | None = None) -> torch.Tensor:
    """[cos q_1..cos q_k, sin q_1..sin q_k] of hinge joints: continuous across full turns."""
    q = joint_pos(env, joints)
    return torch.cat([torch.cos(q), torch.sin(q)], dim=1)


def last_action(env) -> torch.Tensor:
    """The policy action applied at the previous step."""
    return env.actions.action


def model_field(env, field: str, names: list[str] | None = None, element: int | None = None) -> torch.Tensor:
    """Per-environment model parameters (e.g. randomized masses): privileged critic input."""
    rows = env.field_ids(field, names)
    values = env.physics.model_field(field)[:, rows]
    if element is not None:
        values = values[..., element]
    return values.reshape(env.num_envs, -1).float()


def base_lin_vel(env) -> torch.Tensor:
    """Floating-base linear velocity in the base frame [m/s] (privileged: robots estimate it)."""
    return state.root_lin_vel_b(env)


def base_ang_vel(env) -> torch.Tensor:
    """Floating-base angular velocity in the base frame [rad/s]: the IMU gyro."""
    return state.root_ang_vel_b(env)


def projected_gravity(env) -> torch.Tensor:
    """Unit gravity direction in the base frame: the IMU's orientation estimate, less yaw."""
    return state.gravity_b(env)


def command(env, name: str) -> torch.Tensor:
    """The env's current command `name` (e.g. a base velocity target)."""
    return env.commands.get(name)


def sensor(env, names: list[str]) -> torch.Tensor:
    """Readings of the named MJCF sensors, concatenated (e.g. foot touch forces)."""
    return env.physics.sensordata[:, state.sensor_columns(env, names)]
