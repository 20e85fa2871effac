"""Manipulation terms: reaching a commanded end-effector position, and orientation.

The end effector's position comes from a MuJoCo `framepos` sensor of its site, measured in the
robot's base frame, so every backend computes it and the frame is stated in the MJCF:

    <framepos name="ee_pos" objtype="site" objname="ee" reftype="xbody" refname="base"/>

(`xbody`: the body's own frame; `body` would be its inertial frame.) The target is a command with
three components x, y, z in that same frame (`commands: {ee_target: {ranges: {x: .., y: .., z: ..}}}`),
drawn uniformly and redrawn on its period like any command; the `sensor` observation term gives
the position itself and the `command` term the target. Rewards use the distance (a coarse term:
weight < 0) and `1 - tanh(distance / std)` (a fine term that pays mostly within ~std); metrics
report the distance in metres (`per: final`: where the reach settles).

An orientation target is a command of three components, read as roll, pitch, yaw in that order
(radians; the rotation yaw about z, then pitch about y, then roll about x, as Isaac Lab's pose
commands), each drawn uniformly from its range, in the frame of a `framequat` sensor of the end
effector (`<framequat name="ee_quat" objtype="site" objname="ee" reftype="xbody" refname="base"/>`).
The policy sees it as a unit quaternion (`command_quat`, w >= 0: no jump where an angle wraps),
rewards and metrics use the angle between the two orientations.
"""

from __future__ import annotations

import math

import torch

from robolearn.errors import UserError
from robolearn.mdp.kinds import term_kind
from robolearn.scene.entities import Sensors


@term_kind("reward", "metric")
def position_command_error(env, sensor: Sensors, command: str) -> torch.Tensor:
    """|p - p*| [m]: distance from a 3-D position sensor's reading to a position command.

    The sensor is e.g. `[ee_pos]`, a framepos sensor in the base frame, and the command `command`
    has components x, y, z in the same frame. As a metric with `per: final` it is the error the
    reach settles at (its mean over each episode's last `window_s`), with `per: step` its mean
    over every step, the reach included."""
    position = env.physics.sensordata[:, env.scene.sensors(sensor).columns]
    return torch.linalg.vector_norm(position - env.commands.get(command), dim=1)


@term_kind("reward")
def position_command_error_tanh(env, sensor: Sensors, command: str, std: float) -> torch.Tensor:
    """1 - tanh(|p - p*| / std): 1 at the target, 0.24 at one std, about 0 beyond a few."""
    return 1.0 - torch.tanh(position_command_error(env, sensor, command) / std)


def _quat_from_euler(angles: torch.Tensor) -> torch.Tensor:
    """Unit quaternions (w, x, y, z), w >= 0, of roll, pitch, yaw [..., 3] (yaw about z, then pitch
    about y, then roll about x)."""
    half = angles * 0.5
    (cr, cp, cy), (sr, sp, sy) = torch.cos(half).unbind(-1), torch.sin(half).unbind(-1)
    q = torch.stack([cr * cp * cy + sr * sp * sy, sr * cp * cy - cr * sp * sy,
                     cr * sp * cy + sr * cp * sy, cr * cp * sy - sr * sp * cy], dim=-1)  # fmt: skip
    return torch.where(q[..., :1] < 0, -q, q)


def _orientation(env, command: str) -> torch.Tensor:
    value = env.commands.get(command)
    if value.shape[1] != 3:
        raise UserError(f"command '{command}' has {value.shape[1]} components; an orientation command has three: "
                        "roll, pitch, yaw [rad]")  # fmt: skip
    if [name.lower() for name in env.commands.components.get(command, [])] == ["x", "y", "z"]:
        raise UserError(f"command '{command}' is a position (components x, y, z); an orientation command's three "
                        "components are roll, pitch, yaw [rad]")  # fmt: skip
    return _quat_from_euler(value)


@term_kind("observation")
def command_quat(env, name: str, near: list[float] | None = None) -> torch.Tensor:
    """An orientation command (roll, pitch, yaw) as a unit quaternion (w, x, y, z) [N, 4]: w >= 0,
    or with `near` (roll, pitch, yaw of a reference orientation, e.g. the middle of the command's
    ranges) the sign that points the same way as near's quaternion. q and -q are one orientation;
    w >= 0 picks between them discontinuously where w crosses 0 (a tool turned half round, e.g.
    pointing down: roll pi, yaw pi), so commands a hair apart would look opposite to the policy. A
    reference within the commands' range keeps every command's sign continuous."""
    quat = _orientation(env, name)
    if near is None:
        return quat
    ref = _reference_quat(tuple(float(v) for v in near), quat.dtype, quat.device)
    return torch.where((quat @ ref).unsqueeze(1) < 0, -quat, quat)


_REFERENCES: dict[tuple, torch.Tensor] = {}
"""command_quat's reference quaternions, made once per (near, dtype, device): a step makes no
tensor and copies nothing to the device (the step may be a captured CUDA graph)."""


def _reference_quat(near: tuple[float, ...], dtype: torch.dtype, device: torch.device) -> torch.Tensor:
    key = (near, dtype, device)
    if key not in _REFERENCES:
        if len(near) != 3 or not all(math.isfinite(v) for v in near):
            raise UserError(f"command_quat: near is {list(near)}; it takes three finite numbers, the roll, pitch, yaw [rad] "
                            "of a reference orientation")  # fmt: skip
        ref = _quat_from_euler(torch.tensor(near, dtype=torch.float64))
        # the reference's own sign by a rule float32 and float64 agree on (w may be ~1e-17 of either sign):
        # its first component of magnitude >= 0.25 (a unit quaternion has one of >= 0.5) is positive
        ref = ref * torch.sign(ref[(ref.abs() >= 0.25).nonzero()[0, 0]])
        _REFERENCES[key] = ref.to(dtype=dtype, device=device)
    return _REFERENCES[key]


@term_kind("reward", "metric")
def orientation_command_error(env, sensor: Sensors, command: str) -> torch.Tensor:
    """The angle [rad] between a `framequat` sensor's orientation and an orientation command (roll,
    pitch, yaw in the sensor's frame): 0 when they agree, pi when turned half round."""
    sensors = env.scene.sensors(sensor)
    sensed = env.physics.sensordata[:, sensors.columns]
    if sensed.shape[1] != 4:
        raise UserError(f"orientation_command_error: sensor {list(sensors.names)} reads {sensed.shape[1]} values; "
                        "it needs one framequat sensor (4)")  # fmt: skip
    dot = (sensed * _orientation(env, command)).sum(1).abs()
    return 2.0 * torch.acos(dot.clamp(max=1.0))


@term_kind("reward")
def orientation_command_error_tanh(env, sensor: Sensors, command: str, std: float) -> torch.Tensor:
    """1 - tanh(angle / std): 1 at the commanded orientation, about 0 beyond a few std [rad]."""
    return 1.0 - torch.tanh(orientation_command_error(env, sensor, command) / std)
