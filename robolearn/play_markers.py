"""What a video marks besides the robot (`Marks`, found once from the env's terms): velocity arrows,
each position a task commands a point of the robot to reach (a reach target, a sphere) and each
commanded orientation of it (its z axis, an arrow), placed in the world where the terms measure them.

The velocity command is the one a `track_lin_vel_xy_exp` reward tracks (a planar velocity in the
heading frame), else the first command whose name says `vel`.

A target is a command of 3 components that a reward, metric or observation term compares with one
`framepos` sensor (params `command` and `sensor`, as `position_command_error` takes them). The
command is in the sensor's reference frame (its `reftype`/`refname`; the world without one), so
the marker goes where the reward puts the target, whatever frame the task chose. An orientation
target is the same with a `framequat` sensor and a command read as roll, pitch, yaw.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import mujoco
import numpy as np

from robolearn.render import BLUE, GREEN, Arrow, Marker, robot_size


@dataclass(frozen=True)
class SensorTarget:
    """A command that is a target for a frame sensor's reading (position or orientation)."""

    command: str
    sensor: int
    """The framepos (a position target) or framequat (an orientation target) sensor."""


def yaw(quat: np.ndarray) -> float:
    w, x, y, z = quat
    return math.atan2(2 * (w * z + x * y), 1 - 2 * (y * y + z * z))


def velocity_arrows(qpos: np.ndarray, qvel: np.ndarray, command: np.ndarray | None,
                    base: tuple[int, int] | None) -> list[Arrow]:  # fmt: skip
    """The commanded planar velocity (in the heading frame, green) and the actual one (blue),
    from above the floating base, whose free joint's (qpos, dof) addresses `base` gives (None:
    no floating base, no arrows)."""
    if base is None:
        return []
    q, v = base
    start = qpos[q : q + 3] + np.array([0.0, 0.0, 0.25])
    arrows = [Arrow(start, start + np.array([qvel[v], qvel[v + 1], 0.0]), BLUE)]
    if command is not None and len(command) >= 2:
        c, s = math.cos(yaw(qpos[q + 3 : q + 7])), math.sin(yaw(qpos[q + 3 : q + 7]))
        vx, vy = command[0] * c - command[1] * s, command[0] * s + command[1] * c
        arrows.append(Arrow(start, start + np.array([vx, vy, 0.0]), GREEN))
    return [a for a in arrows if np.linalg.norm(a.end - a.start) > 1e-3]


VELOCITY_TRACKING = ("track_lin_vel_xy_exp",)
"""Generic rewards whose `command` is a planar base velocity (x, y first, in the heading frame)."""


def velocity_command(env) -> str | None:
    """The command the base-velocity arrows compare the robot's motion with (None: no arrows'
    command)."""
    for term in env.cfg.rewards.values():
        command = (term.get("params") or {}).get("command")
        if term.func in VELOCITY_TRACKING and command in env.commands.components:
            return command
    return next((name for name in env.commands.components if "vel" in name), None)


def position_targets(env) -> list[SensorTarget]:
    """The env's position targets, in the order its terms name them (each pair once)."""
    return _sensor_targets(env, mujoco.mjtSensor.mjSENS_FRAMEPOS)


def orientation_targets(env) -> list[SensorTarget]:
    """The env's orientation targets: a command (roll, pitch, yaw) compared with a framequat sensor."""
    return _sensor_targets(env, mujoco.mjtSensor.mjSENS_FRAMEQUAT)


def _sensor_targets(env, kind: mujoco.mjtSensor) -> list[SensorTarget]:
    """(command, sensor) pairs of 3-component commands and one sensor of this type that the env's
    rewards, metrics and observations name together."""
    cfg, model = env.cfg, env.model
    sections = [cfg.rewards, cfg.metrics or {}, *(group.terms for group in cfg.observations.values())]
    found: list[SensorTarget] = []
    for section in sections:
        for term in section.values():
            params = term.get("params") or {}
            command, sensor = params.get("command"), params.get("sensor")
            if not isinstance(command, str) or command not in env.commands.components:
                continue
            names = [sensor] if isinstance(sensor, str) else list(sensor or [])
            if len(names) != 1 or len(env.commands.components[command]) != 3:
                continue
            s = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_SENSOR, str(names[0]))
            if s < 0 or int(model.sensor_type[s]) != int(kind):
                continue
            target = SensorTarget(command, s)
            if target not in found:
                found.append(target)
    return found


def _frame(data: mujoco.MjData, kind: int, index: int) -> tuple[np.ndarray, np.ndarray]:
    """(position, 3x3 orientation) of a MuJoCo object's frame, as framepos reads it."""
    obj = mujoco.mjtObj
    if kind == obj.mjOBJ_XBODY:
        return data.xpos[index], data.xmat[index].reshape(3, 3)
    if kind == obj.mjOBJ_BODY:  # the body's inertial frame
        return data.xipos[index], data.ximat[index].reshape(3, 3)
    if kind == obj.mjOBJ_GEOM:
        return data.geom_xpos[index], data.geom_xmat[index].reshape(3, 3)
    if kind == obj.mjOBJ_SITE:
        return data.site_xpos[index], data.site_xmat[index].reshape(3, 3)
    if kind == obj.mjOBJ_CAMERA:
        return data.cam_xpos[index], data.cam_xmat[index].reshape(3, 3)
    raise ValueError(f"framepos of a {mujoco.mjtObj(kind).name}")


def _reference(model: mujoco.MjModel, data: mujoco.MjData, target: SensorTarget) -> tuple[np.ndarray, np.ndarray]:
    """The frame a target's command is in: its sensor's reference (reftype/refname), else the world."""
    s = target.sensor
    if int(model.sensor_refid[s]) < 0:
        return np.zeros(3), np.eye(3)
    return _frame(data, int(model.sensor_reftype[s]), int(model.sensor_refid[s]))


def _sensed(model: mujoco.MjModel, data: mujoco.MjData, target: SensorTarget) -> tuple[np.ndarray, np.ndarray]:
    """The frame of the sensor's object (the end effector's site)."""
    s = target.sensor
    return _frame(data, int(model.sensor_objtype[s]), int(model.sensor_objid[s]))


def target_in_world(model: mujoco.MjModel, data: mujoco.MjData, target: SensorTarget, value: np.ndarray) -> np.ndarray:
    """The commanded position in world coordinates (data's kinematics must be current)."""
    pos, mat = _reference(model, data, target)
    return pos + mat @ np.asarray(value, dtype=np.float64)


def sensed_in_world(model: mujoco.MjModel, data: mujoco.MjData, target: SensorTarget) -> np.ndarray:
    """Where the sensed point is (the sensor's object), in world coordinates."""
    return np.array(_sensed(model, data, target)[0])


def marker_radius(model) -> float:
    """A target marker's radius: 3 % of the robot's size, 1-5 cm."""
    return float(np.clip(0.03 * robot_size(model), 0.01, 0.05))


def target_markers(model, data, targets: list[SensorTarget], values: dict, radius: float) -> list[Marker]:
    """Each reach target (green) and the point that reaches for it (blue, smaller); `values`: each
    command's value for this robot (a target whose command is missing is left out)."""
    markers = []
    for target in targets:
        value = values.get(target.command)
        if value is not None:
            markers.append(Marker(target_in_world(model, data, target, np.asarray(value)), radius, GREEN))
            markers.append(Marker(sensed_in_world(model, data, target), 0.6 * radius, BLUE))
    return markers


def orientation_frames(model, data, target: SensorTarget, value) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """An orientation target's tool point in the world, and the tool's 3x3 orientation in the world
    as commanded (`value`: roll, pitch, yaw in the sensor's reference frame) and as it is."""
    from robolearn_deploy.observations import quat_from_euler

    quat, rot = np.zeros(4), np.zeros(9)
    point, tool = _sensed(model, data, target)
    quat_from_euler(*(float(v) for v in value), quat)
    mujoco.mju_quat2Mat(rot, quat)
    return np.array(point), _reference(model, data, target)[1] @ rot.reshape(3, 3), np.array(tool)


def orientation_arrows(model, data, targets: list[SensorTarget], values: dict, length: float) -> list[Arrow]:
    """For each orientation target, the tool's z axis as commanded (green) and as it is (blue), from
    the sensed point; `values`: each command's roll, pitch, yaw for this robot."""
    arrows = []
    for target in targets:
        value = values.get(target.command)
        if value is None:
            continue
        start, commanded, tool = orientation_frames(model, data, target, value)
        arrows += [Arrow(start, start + length * commanded[:, 2], GREEN), Arrow(start, start + length * tool[:, 2], BLUE)]
    return arrows


class Marks:
    """What the videos draw for one env's task beside the robot: velocity arrows, reach targets,
    orientation targets' tool axes, found once from the env's terms."""

    def __init__(self, env):
        from robolearn.scene.floating_base import floating_base_addresses

        model = env.model
        self.base = floating_base_addresses(model)
        self.velocity = velocity_command(env)
        self.positions, self.orientations = position_targets(env), orientation_targets(env)
        self.radius = marker_radius(model)
        self.commands = sorted({c for c in [self.velocity, *(t.command for t in self.positions + self.orientations)] if c})
        """The commands draw() needs values of."""

    def draw(self, model, data, values: dict) -> tuple[list[Arrow], list[Marker]]:
        """(arrows, markers) of data's robot (kinematics current); `values`: its commands' values."""
        velocity = values.get(self.velocity) if self.velocity else None
        arrows = velocity_arrows(data.qpos, data.qvel, None if velocity is None else np.asarray(velocity), self.base)
        arrows += orientation_arrows(model, data, self.orientations, values, 8 * self.radius)
        return arrows, target_markers(model, data, self.positions, values, self.radius)
