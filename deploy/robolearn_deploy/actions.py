"""Policy output -> JointCommand in the robot's joint order, with the bundle's scaling and gains.

    ctrl = clip(action_offset + action_scale * action, ctrl_min, ctrl_max)     (as in training)
    position actuator: position target = ctrl, gains kp/kd from the bundle
    motor actuator:    effort = clip(ctrl * effort_per_ctrl, effort_range), no gains
(A position servo's effort limit is its driver's to enforce, as MuJoCo's forcerange was in training.)
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from robolearn_deploy.bundle import Bundle
from robolearn_deploy.errors import DeployError
from robolearn_deploy.robot import JointCommand, RobotState

SAFE_MODES = ("damping", "hold")


class ActionMapper:
    def __init__(self, bundle: Bundle, joint_names: Sequence[str], damping_kd: float = 1.0):
        index = {name: i for i, name in enumerate(joint_names)}
        missing = [a.joint for a in bundle.actuators if a.joint not in index]
        if missing:
            raise DeployError(
                f"the robot has no joint {missing[0]!r} (driven by the policy); robot joints: {', '.join(joint_names)}"
            )
        acts = bundle.actuators
        self.joints = np.array([index[a.joint] for a in acts], dtype=np.intp)
        self.scale = np.array([a.action_scale for a in acts])
        self.offset = np.array([a.action_offset for a in acts])
        self.low = np.array([a.ctrl_min for a in acts])
        self.high = np.array([a.ctrl_max for a in acts])
        position = np.array([a.kind == "position" for a in acts])
        self._pos_joints, self._motor_joints = self.joints[position], self.joints[~position]
        self._pos_rows, self._motor_rows = np.flatnonzero(position), np.flatnonzero(~position)
        self._effort_per_ctrl = np.array([a.effort_per_ctrl for a in acts])[~position]
        motors = [a for a in acts if a.kind == "motor"]
        self._effort_low = np.array([a.effort_range[0] if a.effort_range else -np.inf for a in motors])
        self._effort_high = np.array([a.effort_range[1] if a.effort_range else np.inf for a in motors])
        self._limit_effort = bool(np.isfinite(self._effort_low).any() or np.isfinite(self._effort_high).any())

        n = len(joint_names)
        self.command = JointCommand.zeros(n)
        self.command.kp[self._pos_joints] = [a.kp for a in acts if a.kind == "position"]
        self.command.kd[self._pos_joints] = [a.kd for a in acts if a.kind == "position"]
        self._ctrl = np.zeros(len(acts))
        # Gains of the safe command: the bundle's own where it has them, damping_kd elsewhere.
        self.hold_kp = np.zeros(n)
        self.hold_kp[self._pos_joints] = self.command.kp[self._pos_joints]
        self.damping_kd = np.zeros(n)
        self.damping_kd[self.joints] = damping_kd
        own_kd = self.command.kd[self._pos_joints]
        self.damping_kd[self._pos_joints] = np.where(own_kd > 0, own_kd, damping_kd)

    def map(self, action: np.ndarray) -> JointCommand:
        """The command for `action` (the mapper's own buffer, overwritten by the next call)."""
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
        return self.command

    def safe_command(self, state: RobotState, mode: str) -> JointCommand:
        """damping: no position gain, only the damping gains (the robot sags safely).
        hold: keep the current pose with the bundle's position gains (motors only damp).
        Damping gains: the bundle's kd where it has one, else `damping_kd`."""
        if mode not in SAFE_MODES:
            raise DeployError(f"unknown safe mode '{mode}'; valid: {', '.join(SAFE_MODES)}")
        n = len(self.damping_kd)
        position = np.asarray(state.joint_pos, dtype=float).copy()
        kp = self.hold_kp.copy() if mode == "hold" else np.zeros(n)
        broken = ~np.isfinite(position)  # a failed sensor: no position target on that joint
        position[broken], kp[broken] = 0.0, 0.0
        return JointCommand(position=position, velocity=np.zeros(n), kp=kp, kd=self.damping_kd.copy(), effort=np.zeros(n))
