"""Manipulation terms: reaching a commanded end-effector position.

The end effector's position comes from a MuJoCo `framepos` sensor of its site, measured in the
robot's base frame, so every backend computes it and the frame is stated in the MJCF:

    <framepos name="ee_pos" objtype="site" objname="ee" reftype="xbody" refname="base"/>

(`xbody`: the body's own frame; `body` would be its inertial frame.) The target is a command with
three components x, y, z in that same frame (`commands: {ee_target: {ranges: {x: .., y: .., z: ..}}}`),
drawn uniformly and redrawn on its period like any command; the `sensor` observation term gives
the position itself and the `command` term the target. Rewards use the distance (a coarse term:
weight < 0) and `1 - tanh(distance / std)` (a fine term that pays mostly within ~std); metrics
report the distance in metres (`per: final`: where the reach settles).
"""

from __future__ import annotations

import torch

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
