"""Termination terms: f(env, **params) -> BoolTensor[num_envs]. True ends the episode."""

from __future__ import annotations

import math

import torch

from robolearn.errors import UserError
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


class joint_pos_past_limits:  # noqa: N801 (term names are snake_case, like the functions)
    """Any limited joint more than `margin` [rad or m] past its range: what the deploy runtime's
    watchdog stops the robot for (its joint_limit_margin, 0.1 by default), so that training ends
    those episodes too. Every limited hinge/slide joint, or the named ones."""

    def __init__(self, env, margin: float = 0.1, joints: Joints | None = None):
        if not margin >= 0:
            raise UserError(f"joint_pos_past_limits: margin={margin} is out of range; valid: margin >= 0 (rad or m "
                            "past a joint's range)")  # fmt: skip
        self.qpos, ranges = state.joint_ranges(env, joints)
        self.low, self.high = ranges[:, 0] - margin, ranges[:, 1] + margin

    def __call__(self, env) -> torch.Tensor:
        q = env.physics.qpos[:, self.qpos]
        return ((q < self.low) | (q > self.high)).any(dim=1)

    def state_dict(self) -> dict:
        return {}  # limits are constants of the model

    def load_state_dict(self, state: dict) -> None:
        pass


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
