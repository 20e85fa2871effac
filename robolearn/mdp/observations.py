"""Observation terms: f(env, **params) -> Tensor[num_envs, k]."""

from __future__ import annotations

import torch

from robolearn.errors import UserError
from robolearn.mdp import state
from robolearn.scene.entities import FieldRows, Joints, Sensors

TERM_KIND = "observation"
"""Every term in this module is an observation term (robolearn/mdp/kinds.py)."""


def joint_pos(env, joints: Joints | None = None, relative: bool = False) -> torch.Tensor:
    """Positions of hinge/slide joints [rad or m]; relative=True subtracts the default pose."""
    qadr = env.scene.joints(joints).qpos
    q = env.physics.qpos[:, qadr]
    return q - env.default_qpos[:, qadr] if relative else q


def joint_vel(env, joints: Joints | None = None) -> torch.Tensor:
    """Velocities of hinge/slide joints [rad/s or m/s]."""
    return env.physics.qvel[:, env.scene.joints(joints).dof]


def joint_pos_cos_sin(env, joints: Joints | None = None) -> torch.Tensor:
    """[cos q_1..cos q_k, sin q_1..sin q_k] of hinge joints: continuous across full turns."""
    q = joint_pos(env, joints)
    return torch.cat([torch.cos(q), torch.sin(q)], dim=1)


def last_action(env) -> torch.Tensor:
    """The policy action applied at the previous step."""
    return env.actions.action


def model_field(env, field: str, names: FieldRows | None = None, element: int | None = None) -> torch.Tensor:
    """Per-environment model parameters (e.g. randomized masses): privileged critic input."""
    values = env.physics.model_field(field)[:, env.scene.field_rows(field, names).rows]
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


def sensor(env, names: Sensors) -> torch.Tensor:
    """Readings of the named MJCF sensors, concatenated (e.g. foot touch forces)."""
    return env.physics.sensordata[:, env.scene.sensors(names).columns]


MAX_SCAN_POINTS = 10_000
"""The most points a height scan may have (the default 1.6 x 1.0 m at 0.1 m has 187)."""


class height_scan:  # noqa: N801 (term names are snake_case, like the functions)
    """Base height above the ground at a grid of points around the base [m] (privileged).

    A robot would need a depth camera for this. The grid is size[0] x size[1] m (x forward),
    `resolution` apart, turned with the base's yaw; each value is base z - ground z - offset. The
    ground is the task's terrain (exact, from its heightfield), else the plane z = 0."""

    def __init__(self, env, size: tuple[float, float] = (1.6, 1.0), resolution: float = 0.1, offset: float = 0.5):
        if len(size) != 2 or min(size) < 0 or not resolution > 0:
            raise UserError(f"height_scan needs size [x, y] >= 0 (metres) and resolution > 0, got size={list(size)} "
                            f"resolution={resolution}")  # fmt: skip
        if (size[0] / resolution + 1) * (size[1] / resolution + 1) > MAX_SCAN_POINTS:
            raise UserError(f"height_scan of size={list(size)} at resolution={resolution} has more than "
                            f"{MAX_SCAN_POINTS} points; use a coarser resolution")  # fmt: skip
        xs = torch.arange(-size[0] / 2, size[0] / 2 + 1e-6, resolution, device=env.device)
        ys = torch.arange(-size[1] / 2, size[1] / 2 + 1e-6, resolution, device=env.device)
        gx, gy = torch.meshgrid(xs, ys, indexing="ij")
        self.px, self.py = gx.reshape(-1), gy.reshape(-1)
        self.offset = offset

    def __call__(self, env) -> torch.Tensor:
        base = state.root_pos_w(env)
        w, x, y, z = state.root_quat_w(env).unbind(1)
        yaw = torch.atan2(2 * (w * z + x * y), 1 - 2 * (y * y + z * z)).unsqueeze(1)
        cos, sin = torch.cos(yaw), torch.sin(yaw)
        wx = base[:, :1] + cos * self.px - sin * self.py
        wy = base[:, 1:2] + sin * self.px + cos * self.py
        ground = torch.zeros_like(wx) if env.terrain is None else env.terrain.height_at(wx, wy)
        return base[:, 2:3] - ground - self.offset

    def state_dict(self) -> dict:
        return {}  # the grid is a constant of the term, rebuilt from its params

    def load_state_dict(self, state: dict) -> None:
        pass
