"""Sim-to-sim: a RobotInterface backed by native MuJoCo on the CPU, for the robot's own MJCF.

The stand-in behaves like a robot, not like the training environment: it steps physics at its
own rate (any timestep or integrator), its joint drivers apply the JointCommand's PD law at every
physics step, the actuators no joint command can drive (a tendon, activation dynamics, ...:
actuator_kinds.py) take JointCommand.ctrl as their MuJoCo ctrl, every named MJCF sensor is a
signal of its readings (`signals[name]`), and with realtime=True its clock is the wall clock, so a slow policy step lets the
world move on without it. With realtime=False the clock is simulated time and the loop runs as
fast as the CPU allows (the same code path, deterministically).

Requires the `mujoco` package (`pip install robolearn-deploy[sim]`).
"""

from __future__ import annotations

import math

import time
from pathlib import Path

import numpy as np

from robolearn_deploy.errors import DeployError
from robolearn_deploy.observations import BASE_SIGNALS
from robolearn_deploy.robot import JointCommand, RobotInterface, RobotState

INTEGRATORS = ("euler", "implicit", "implicitfast", "rk4")


def floating_base_joint(model, mujoco) -> int | None:
    """The robot's free joint: of the model's free joints (a floating base, loose objects), the one
    whose body carries the most joints below it, the first on a tie; None without a free joint.
    Training uses this rule too (robolearn/scene/floating_base.py), so both agree on the base."""
    free = [j for j in range(model.njnt) if int(model.jnt_type[j]) == int(mujoco.mjtJoint.mjJNT_FREE)]
    if not free:
        return None
    below = [int(n) for n in model.body_jntnum]
    for body in range(model.nbody - 1, 0, -1):  # a child's id is larger than its parent's
        below[int(model.body_parentid[body])] += below[body]
    return max(free, key=lambda j: below[int(model.jnt_bodyid[j])])


class MujocoRobot(RobotInterface):
    def __init__(self, mjcf: str | Path, timestep: float | None = None, integrator: str | None = None, realtime: bool = False):
        try:
            import mujoco
        except ImportError:
            raise DeployError("sim-to-sim needs MuJoCo: pip install mujoco") from None
        self._mj = mujoco
        try:
            self.model = mujoco.MjModel.from_xml_path(str(mjcf))
        except Exception as exc:
            raise DeployError(f"cannot load {mjcf}: {' '.join(str(exc).split())}") from None
        if timestep is not None:
            if not math.isfinite(timestep) or timestep <= 0:
                raise DeployError(f"timestep must be a positive number of seconds, got {timestep}")
            self.model.opt.timestep = timestep
        if integrator is not None:
            if integrator.lower() not in INTEGRATORS:
                raise DeployError(f"unknown integrator '{integrator}'; valid: {', '.join(INTEGRATORS)}")
            self.model.opt.integrator = getattr(mujoco.mjtIntegrator, f"mjINT_{integrator.upper()}")
        # MuJoCo resets a simulation that blows up (and turns its clock back to 0, so time would never
        # reach the next tick); a robot does not: its state stays non-finite and the watchdog trips on it
        self.model.opt.disableflags |= int(mujoco.mjtDisableBit.mjDSBL_AUTORESET)
        self.data = mujoco.MjData(self.model)
        self.realtime = realtime
        m = self.model
        one_dof = (int(mujoco.mjtJoint.mjJNT_HINGE), int(mujoco.mjtJoint.mjJNT_SLIDE))
        joints = [j for j in range(m.njnt) if int(m.jnt_type[j]) in one_dof]
        self.joint_names = [mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_JOINT, j) for j in joints]
        self._qadr = np.array([m.jnt_qposadr[j] for j in joints], dtype=np.intp)
        self._dadr = np.array([m.jnt_dofadr[j] for j in joints], dtype=np.intp)
        self._drivers(joints)
        sensor_names = [mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_SENSOR, s) for s in range(m.nsensor)]
        self._sensors = {name: slice(int(m.sensor_adr[s]), int(m.sensor_adr[s] + m.sensor_dim[s]))
                         for s, name in enumerate(sensor_names) if name}  # fmt: skip
        """Named sensors -> their columns of sensordata (what each reading's signals carry)."""
        base = floating_base_joint(m, mujoco)
        self._base = (int(m.jnt_qposadr[base]), int(m.jnt_dofadr[base])) if base is not None else None
        self.inputs: dict[str, np.ndarray] = {}
        """Signals from outside the robot, passed through with every reading (an operator's command)."""
        self.command = JointCommand.zeros(len(joints), len(self.actuator_names))
        self.reset()

    def _drivers(self, joints: list[int]) -> None:
        """Which actuator drives which joint, and how: position servos get the command's gains
        written into their gain/bias parameters; motors get the PD effort as their control.
        Every other actuator is commanded by its ctrl (`actuator_names`, JointCommand.ctrl)."""
        from robolearn_deploy.actuator_kinds import joint_level_kind

        mj, m = self._mj, self.model
        kinds = [joint_level_kind(m, a) for a in range(m.nu)]
        by_joint = {int(m.actuator_trnid[a, 0]): a for a in range(m.nu) if kinds[a] is not None}
        servo, motor = [], []
        for i, j in enumerate(joints):
            a = by_joint.get(j)
            if a is None:
                continue  # passive joint (or one an actuator of its own drives): its commands are ignored
            (servo if kinds[a] == "position" else motor).append((i, a))
        self._ctrl_act = np.array([a for a in range(m.nu) if kinds[a] is None], dtype=np.intp)
        self.actuator_names = [mj.mj_id2name(m, mj.mjtObj.mjOBJ_ACTUATOR, int(a)) or f"actuator {a}" for a in self._ctrl_act]
        self._servo_rows = np.array([i for i, _ in servo], dtype=np.intp)
        self._servo_act = np.array([a for _, a in servo], dtype=np.intp)
        self._motor_rows = np.array([i for i, _ in motor], dtype=np.intp)
        self._motor_act = np.array([a for _, a in motor], dtype=np.intp)
        self._motor_effort_per_ctrl = m.actuator_gear[self._motor_act, 0] * m.actuator_gainprm[self._motor_act, 0]

    # --- episodes and the clock -----------------------------------------------------------------
    def reset(self, qpos: np.ndarray | None = None, qvel: np.ndarray | None = None) -> None:
        """Put the robot in a state (full qpos/qvel of the model; default: its initial pose), with
        the activations of its `home` keyframe where it has one (as training starts its episodes)."""
        mj = self._mj
        mj.mj_resetData(self.model, self.data)
        home = mj.mj_name2id(self.model, mj.mjtObj.mjOBJ_KEY, "home")
        if home >= 0 and self.model.na:
            self.data.act[:] = self.model.key_act[home]
        if qpos is not None:
            self.data.qpos[:] = qpos
        if qvel is not None:
            self.data.qvel[:] = qvel
        mj.mj_forward(self.model, self.data)
        self.command = JointCommand.zeros(len(self.joint_names), len(self.actuator_names))
        self._apply_servo_gains()
        self._wall_start = time.monotonic()

    def now(self) -> float:
        if self.realtime:
            return time.monotonic() - self._wall_start
        return float(self.data.time)

    def sleep_until(self, t: float) -> None:
        """Simulated clock: step physics up to t. Wall clock: keep stepping physics at the wall
        clock's pace while waiting (as the world would move on), sleeping when ahead; at t the
        physics is then caught up and the next read costs no catch-up time."""
        if self.realtime:
            while (now := self.now()) < t:
                if self.data.time < now - 0.5 * self.model.opt.timestep:
                    self._physics_step()
                elif t - now > self.spin_s:
                    time.sleep(min(t - now - self.spin_s, self.model.opt.timestep))
        self._advance_to(t)

    def _advance_to(self, t: float) -> None:
        half = 0.5 * self.model.opt.timestep
        while self.data.time < t - half:
            self._physics_step()

    def _physics_step(self) -> None:
        c, d = self.command, self.data
        if len(self._motor_rows):
            r = self._motor_rows
            q, qd = d.qpos[self._qadr[r]], d.qvel[self._dadr[r]]
            effort = c.kp[r] * (c.position[r] - q) + c.kd[r] * (c.velocity[r] - qd) + c.effort[r]
            d.ctrl[self._motor_act] = effort / self._motor_effort_per_ctrl
        self._mj.mj_step(self.model, d)

    # --- the robot interface --------------------------------------------------------------------
    def read_state(self) -> RobotState:
        if self.realtime:
            self._advance_to(self.now())
        d = self.data
        sensors = {name: d.sensordata[columns].copy() for name, columns in self._sensors.items()}
        return RobotState(d.qpos[self._qadr].copy(), d.qvel[self._dadr].copy(), {**sensors, **self._base_signals(), **self.inputs})

    def _base_signals(self) -> dict[str, np.ndarray]:
        """What an IMU and a state estimator on the floating base report, in the base frame."""
        if self._base is None:
            return {}
        q, v = self._base
        quat, inverse = self.data.qpos[q + 3 : q + 7], np.empty(4)
        self._mj.mju_negQuat(inverse, quat)
        gravity, lin_vel = np.empty(3), np.empty(3)
        self._mj.mju_rotVecQuat(gravity, np.array([0.0, 0.0, -1.0]), inverse)
        self._mj.mju_rotVecQuat(lin_vel, self.data.qvel[v : v + 3], inverse)
        return dict(zip(BASE_SIGNALS, (self.data.qvel[v + 3 : v + 6].copy(), gravity, lin_vel)))

    def write_command(self, command: JointCommand) -> None:
        if self.realtime:
            self._advance_to(self.now())  # the old command acted until now
        if len(command.ctrl) not in (0, len(self._ctrl_act)):  # none: those actuators get ctrl 0
            raise DeployError(f"the command carries {len(command.ctrl)} actuator ctrl values; this robot commands "
                              f"{len(self._ctrl_act)} actuators by ctrl ({', '.join(self.actuator_names) or 'none'})")  # fmt: skip
        self.command = command.copy()
        self.data.ctrl[self._ctrl_act] = self.command.ctrl if len(command.ctrl) else 0.0
        self._apply_servo_gains()

    def _apply_servo_gains(self) -> None:
        """Servo force = kp (ctrl - q) - kd qdot + feed-forward; the feed-forward terms
        (effort + kd * velocity target) go in as an applied joint force."""
        if not len(self._servo_rows):
            return
        c, m, d, r, a = self.command, self.model, self.data, self._servo_rows, self._servo_act
        m.actuator_gainprm[a, 0] = c.kp[r]
        m.actuator_biasprm[a, 1] = -c.kp[r]
        m.actuator_biasprm[a, 2] = -c.kd[r]
        d.ctrl[a] = c.position[r]
        d.qfrc_applied[self._dadr[r]] = c.effort[r] + c.kd[r] * c.velocity[r]
