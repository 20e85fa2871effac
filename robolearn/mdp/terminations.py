"""Termination terms: f(env, **params) -> BoolTensor[num_envs]. True ends the episode."""

from __future__ import annotations

import math

import torch

from robolearn.mdp import state
from robolearn.mdp.observations import joint_pos
from robolearn.scene.entities import Joints, Sensors

TERM_KIND = "termination"
"""Every term in this module is a termination term (robolearn/mdp/kinds.py)."""


def joint_pos_out_of_bounds(env, joints: Joints, bounds: tuple[float, float]) -> torch.Tensor:
    """Any named joint outside [low, high] (positions in rad or m)."""
    low, high = bounds
    q = joint_pos(env, joints)
    return ((q < low) | (q > high)).any(dim=1)


def state_not_finite(env) -> torch.Tensor:
    """The physics state holds NaN or inf (a diverged simulation): end and reset that episode."""
    return ~(torch.isfinite(env.physics.qpos).all(dim=1) & torch.isfinite(env.physics.qvel).all(dim=1))


def sensor_above(env, sensors: Sensors, threshold: float) -> torch.Tensor:
    """Any named sensor reads more than `threshold` (e.g. the trunk's touch sensor: a fall)."""
    return (env.physics.sensordata[:, env.scene.sensors(sensors).columns] > threshold).any(dim=1)


def base_height_below(env, minimum: float) -> torch.Tensor:
    """The floating base's origin is less than `minimum` [m] above its environment's origin (on flat
    ground: its height above the floor; a fall)."""
    return (state.root_pos_w(env)[:, 2] - env.env_origins[:, 2]) < minimum


def bad_orientation(env, limit_angle: float) -> torch.Tensor:
    """The base is tilted more than `limit_angle` [rad] from upright."""
    return state.gravity_b(env)[:, 2] > -math.cos(limit_angle)
