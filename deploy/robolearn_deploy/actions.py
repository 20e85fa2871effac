"""Policy output -> JointCommand in the robot's joint order, with the bundle's scaling and gains.

    ctrl = clip(action_offset + action_scale * action, ctrl_min, ctrl_max)     (as in training)
    position actuator: position target = ctrl, gains kp/kd from the bundle
    motor actuator:    effort = clip(ctrl * effort_per_ctrl, effort_range), no gains
    actuator (kind):   JointCommand.ctrl[the driver's index of its name] = ctrl, as is
(A position servo's effort limit is its driver's to enforce, as MuJoCo's forcerange was in training.)
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from robolearn_deploy.bundle import Bundle
from robolearn_deploy.errors import DeployError
from robolearn_deploy.robot import JointCommand, RobotState, driver_names

SAFE_MODES = ("damping", "hold")


class ActionMapper:
    def __init__(self, bundle: Bundle, joint_names: Sequence[str], damping_kd: float = 1.0,
                 actuator_names: Sequence[str] = ()):  # fmt: skip
        """joint_names / actuator_names: the driver's joints and the actuators it commands by
        their ctrl (RobotInterface.actuator_names), each in the driver's order."""
        acts = bundle.actuators
        joint_names, actuator_names = driver_names(joint_names), driver_names(actuator_names, "actuator_names")
        index = {name: i for i, name in enumerate(joint_names)}
        missing = [a.joint for a in acts if a.kind != "actuator" and a.joint not in index]
        if missing:
            raise DeployError(
                f"the robot has no joint {missing[0]!r} (driven by the policy); robot joints: {', '.join(joint_names)}"
            )
        direct = {name: i for i, name in enumerate(actuator_names)}
        lacking = [a for a in acts if a.kind == "actuator" and a.name not in direct]
        if lacking:
            raise DeployError(f"the policy drives actuator {lacking[0].name!r} ({lacking[0].drives or 'no joint'}) by its "
                              "ctrl, which the robot does not list in its actuator_names (it lists: "
                              f"{', '.join(actuator_names) or 'none'})")  # fmt: skip
        self.scale = np.array([a.action_scale for a in acts])
        self.offset = np.array([a.action_offset for a in acts])
        self.low = np.array([a.ctrl_min for a in acts])
        self.high = np.array([a.ctrl_max for a in acts])
        position = np.array([a.kind == "position" for a in acts], dtype=bool)
        motor = np.array([a.kind == "motor" for a in acts], dtype=bool)
        own = np.array([a.kind == "actuator" for a in acts], dtype=bool)
        joint_of = np.array([index.get(a.joint, -1) for a in acts], dtype=np.intp)
        self._pos_joints, self._motor_joints = joint_of[position], joint_of[motor]
        self._pos_rows, self._motor_rows = np.flatnonzero(position), np.flatnonzero(motor)
        self._own_rows = np.flatnonzero(own)
        self._own_index = np.array([direct[acts[k].name] for k in self._own_rows], dtype=np.intp)
        self._effort_per_ctrl = np.array([a.effort_per_ctrl for a in acts])[motor]
        motors = [a for a in acts if a.kind == "motor"]
        self._effort_low = np.array([a.effort_range[0] if a.effort_range else -np.inf for a in motors])
        self._effort_high = np.array([a.effort_range[1] if a.effort_range else np.inf for a in motors])
        self._limit_effort = bool(np.isfinite(self._effort_low).any() or np.isfinite(self._effort_high).any())

        n = len(joint_names)
        self.command = JointCommand.zeros(n, len(actuator_names))
        self.command.kp[self._pos_joints] = [a.kp for a in acts if a.kind == "position"]
        self.command.kd[self._pos_joints] = [a.kd for a in acts if a.kind == "position"]
        self._ctrl = np.zeros(len(acts))
        # Gains of the safe command: the bundle's own where it has them, damping_kd elsewhere.
        self.hold_kp = np.zeros(n)
        self.hold_kp[self._pos_joints] = self.command.kp[self._pos_joints]
        self.damping_kd = np.zeros(n)
        self.damping_kd[joint_of[position | motor]] = damping_kd
        own_kd = self.command.kd[self._pos_joints]
        self.damping_kd[self._pos_joints] = np.where(own_kd > 0, own_kd, damping_kd)
        # Actuators commanded by ctrl: until the policy acts, their ctrl is that of a zero action.
        self.command.ctrl[self._own_index] = np.clip(self.offset, self.low, self.high)[self._own_rows]
        self._hold_ctrl = np.array([acts[k].safe_ctrl == "hold" for k in self._own_rows], dtype=bool)
        self._zero_ctrl = np.clip(0.0, self.low, self.high)[self._own_rows]

    def map(self, action: np.ndarray) -> JointCommand:
        """The command for `action` (the mapper's own buffer, overwritten by the next call)."""
        if getattr(action, "shape", None) != self.scale.shape:  # a single value would broadcast to every actuator
            raise DeployError(f"action has shape {getattr(action, 'shape', type(action).__name__)}; valid: an array of "
                              f"{self.scale.shape[0]} values, the policy's output")  # fmt: skip
        ctrl = self._ctrl
        np.multiply(self.scale, action, out=ctrl)
        np.add(ctrl, self.offset, out=ctrl)
        np.maximum(ctrl, self.low, out=ctrl)  # two ufuncs: a third of np.clip's cost at this size
        np.minimum(ctrl, self.high, out=ctrl)
        if len(self._pos_rows):
            self.command.position[self._pos_joints] = ctrl[self._pos_rows]
        if len(self._motor_rows):
            effort = ctrl[self._motor_rows] * self._effort_per_ctrl
            if self._limit_effort:  # MuJoCo's forcerange clamp, as in training
                np.clip(effort, self._effort_low, self._effort_high, out=effort)
            self.command.effort[self._motor_joints] = effort
        if len(self._own_rows):
            self.command.ctrl[self._own_index] = ctrl[self._own_rows]
        return self.command

    def safe_command(self, state: RobotState, mode: str) -> JointCommand:
        """damping: no position gain, only the damping gains (the robot sags safely).
        hold: keep the current pose with the bundle's position gains (motors only damp).
        Damping gains: the bundle's kd where it has one, else `damping_kd`. Actuators commanded
        by ctrl, in either mode: their last ctrl where the bundle says `safe_ctrl: hold` (a servo
        keeps its target), else ctrl 0 within their range (a motor or muscle lets go)."""
        if mode not in SAFE_MODES:
            raise DeployError(f"unknown safe mode '{mode}'; valid: {', '.join(SAFE_MODES)}")
        n = len(self.damping_kd)
        position = np.asarray(state.joint_pos, dtype=float).copy()
        kp = self.hold_kp.copy() if mode == "hold" else np.zeros(n)
        broken = ~np.isfinite(position)  # a failed sensor: no position target on that joint
        position[broken], kp[broken] = 0.0, 0.0
        ctrl = self.command.ctrl.copy()
        ctrl[self._own_index] = np.where(self._hold_ctrl, ctrl[self._own_index], self._zero_ctrl)
        return JointCommand(position=position, velocity=np.zeros(n), kp=kp, kd=self.damping_kd.copy(), effort=np.zeros(n),
                            ctrl=ctrl)  # fmt: skip
