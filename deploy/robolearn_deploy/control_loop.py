"""The control loop: read -> check -> observe -> infer -> map -> write, once per control period.

A watchdog guards every step. A reading that is not finite or out of range, a policy output that
is not finite, or a step that finishes later than `max_latency_s` after its tick trips it: from
then on the robot gets the safe command (damping, or hold the pose at the trip) on every tick,
the policy no longer runs (a recurrent policy's state is reset: what it remembered led here), and
the report says why. Clearing a trip is a deliberate `reset()`, which starts a new episode.

With `log=`, every step is appended to a JSON-lines file; the loop appends only to a new file or
to an earlier log of its own, never to another file that happens to sit at that path.
"""

from __future__ import annotations

import json
import math
import numbers
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

import numpy as np

from robolearn_deploy.actions import SAFE_MODES, ActionMapper
from robolearn_deploy.errors import DeployError
from robolearn_deploy.observations import ObservationBuilder
from robolearn_deploy.policy import Policy
from robolearn_deploy.robot import JointCommand, RobotInterface, RobotState


@dataclass
class Safety:
    max_latency_s: float | None = None
    """A step must finish this long after its tick at the latest; None = one control period."""
    joint_limit_margin: float = 0.1
    """Readings may exceed the bundle's joint limits by this much [rad or m] before it trips."""
    max_joint_vel: float | Mapping[str, float] | None = None
    """|joint velocity| above this trips [rad/s or m/s]: one value for every joint, or a value per
    joint name (a wrist may turn faster than a hip; joints not named are not checked); None = only
    non-finite values trip."""
    safe_mode: str = "damping"
    """'damping' (kp = 0) or 'hold' (the pose at the trip, the bundle's position gains)."""
    damping_kd: float = 1.0
    """Damping gain for joints whose actuator has no kd of its own (motors)."""
    action_rate_limit: float | None = None
    """Largest change of the policy action per second, in action units; None = unlimited."""

    def __post_init__(self):
        if not isinstance(self.safe_mode, str) or self.safe_mode not in SAFE_MODES:
            raise DeployError(f"unknown safe_mode {self.safe_mode!r}; valid: {', '.join(SAFE_MODES)}")
        _check_number("max_latency_s", self.max_latency_s, "a time above 0 [s], or None (one control period)", optional=True)
        _check_number("joint_limit_margin", self.joint_limit_margin, "a margin >= 0 [rad or m]", zero=True)
        _check_number("damping_kd", self.damping_kd, "a gain >= 0 (negative damping would push the joints)", zero=True)
        _check_number("action_rate_limit", self.action_rate_limit, "a rate above 0 [action units/s], or None (unlimited)",
                      optional=True)  # fmt: skip
        limits = self.max_joint_vel.items() if isinstance(self.max_joint_vel, Mapping) else [("", self.max_joint_vel)]
        for name, value in limits:
            if value is not None and not (isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0 and math.isfinite(value)):
                where = f"[{name!r}]" if name else ""
                raise DeployError(f"max_joint_vel{where} is {value!r}; valid: a speed above 0 [rad/s or m/s], or None (not checked)")

    def joint_speed_limits(self, joints: list[str]) -> np.ndarray | None:
        """max_joint_vel per joint in the driver's order (inf: not checked), None where nothing is checked."""
        if self.max_joint_vel is None:
            return None
        if not isinstance(self.max_joint_vel, Mapping):
            return np.full(len(joints), float(self.max_joint_vel))
        unknown = [name for name in self.max_joint_vel if name not in joints]
        if unknown:
            raise DeployError(f"max_joint_vel names joint {unknown[0]!r}, which the robot does not have; valid: {', '.join(joints)}")
        return np.array([float(self.max_joint_vel.get(name) or np.inf) for name in joints])


def _check_number(name: str, value, valid: str, optional: bool = False, zero: bool = False) -> None:
    """A Safety field: a finite real number above 0 (>= 0 with `zero`), or None where `optional`.
    NaN would switch its check off without a word; a text would fail on the loop's first tick."""
    if value is None and optional:
        return
    number = isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, (bool, np.bool_))
    if not (number and math.isfinite(value) and (value >= 0 if zero else value > 0)):
        raise DeployError(f"Safety {name} is {value!r}; valid: {valid}")


LOG_KEYS = frozenset({"step", "tick", "joint_pos", "joint_vel", "action", "command", "tripped"})
"""Keys every row of the step log has (ControlLoop._write_log): how an earlier log is recognized."""
MAX_LOG_LINE = 1 << 24
"""A longer line is no step log's row (which holds one observation and one command)."""


def is_step_log(path: str | Path) -> bool:
    """Whether `path` holds step-log rows and nothing else: a file a loop may append to without
    damaging someone's notes, a checkpoint or a bundle file. An empty file is no log (it may be a
    run's train.log, say). Read one line at a time, each at most MAX_LOG_LINE long: a log of a
    long run is large, a binary file may have no line breaks at all."""
    rows = 0
    try:
        with open(path, encoding="utf-8") as f:
            while line := f.readline(MAX_LOG_LINE):
                row = json.loads(line)
                if not isinstance(row, dict) or not LOG_KEYS <= row.keys():
                    return False
                rows += 1
    except (OSError, ValueError):  # ValueError: not JSON, or not UTF-8 text (UnicodeDecodeError)
        return False
    return rows > 0


def open_log(log: str | Path) -> TextIO:
    """`log` opened for appending, after refusing a folder or an existing file that is not a step log."""
    path = Path(log)
    if path.is_dir():
        raise DeployError(f"the log {log} is a folder; valid: a file path (e.g. steps.jsonl)")
    if path.exists() and not is_step_log(path):
        raise DeployError(f"the log {log} exists and is not a step log (JSON lines this loop wrote); valid: a new file, "
                          "or an earlier log to append to")  # fmt: skip
    try:
        return open(path, "a", encoding="utf-8")
    except OSError as exc:
        raise DeployError(f"cannot open the log {log} ({exc.strerror})") from None


@dataclass
class Step:
    """What happened on one tick (passed to `on_step`, and written to the log)."""

    index: int
    tick: float
    state: RobotState
    action: np.ndarray | None
    command: JointCommand
    compute_s: float
    tripped: str | None


@dataclass
class LoopReport:
    steps: int = 0
    tripped: str | None = None
    trip_step: int | None = None
    compute_s: list[float] = field(default_factory=list)

    def latency_ms(self) -> dict[str, float]:
        """Median and 99th percentile of observe + infer + map, in milliseconds."""
        if not self.compute_s:
            return {"median": float("nan"), "p99": float("nan")}
        ms = np.asarray(self.compute_s) * 1e3
        return {"median": float(np.median(ms)), "p99": float(np.percentile(ms, 99))}


class ControlLoop:
    def __init__(self, policy: Policy, robot: RobotInterface, safety: Safety | None = None, log: str | Path | None = None):
        if not all(hasattr(policy, name) for name in ("bundle", "input_buffer", "act", "reset")):  # a Policy, or a wrapper
            raise DeployError(f"policy is {type(policy).__name__} {policy!r}; valid: a Policy (Policy(bundle_dir))")
        if safety is not None and not isinstance(safety, Safety):
            raise DeployError(f"safety is {type(safety).__name__}; valid: a Safety (e.g. Safety(max_joint_vel=20.0)), or "
                              "None for the defaults")  # fmt: skip
        missing = [name for name in ("joint_names", "read_state", "write_command", "now", "sleep_until")
                   if not hasattr(robot, name)]  # fmt: skip
        if missing:
            raise DeployError(f"robot is {type(robot).__name__} without {missing[0]}; valid: a RobotInterface (joint_names, "
                              "read_state, write_command; now and sleep_until have defaults)")  # fmt: skip
        self.policy, self.robot = policy, robot
        self.safety = safety or Safety()
        bundle = policy.bundle
        self.period = bundle.control_period_s
        self.max_latency = self.safety.max_latency_s if self.safety.max_latency_s is not None else self.period
        self.observations = ObservationBuilder(bundle, robot.joint_names, out=policy.input_buffer)
        provided = getattr(robot, "signals", None)
        missing = [name for name in self.observations.signals if provided is not None and name not in provided]
        if missing:
            raise DeployError(f"the policy needs signal {missing[0]!r}, which {type(robot).__name__} does not provide "
                              f"(it provides: {', '.join(provided) or 'none'}); needed: {', '.join(self.observations.signals)}")  # fmt: skip
        self.actions = ActionMapper(bundle, robot.joint_names, self.safety.damping_kd, getattr(robot, "actuator_names", ()))
        self._limits = self._joint_limits(bundle.joint_limits, list(robot.joint_names))
        self._max_vel = self.safety.joint_speed_limits(list(robot.joint_names))
        self._log = open_log(log) if log is not None else None
        self.reset()

    def _joint_limits(self, limits: dict, joints: list[str]) -> tuple[np.ndarray, np.ndarray]:
        low, high = np.full(len(joints), -np.inf), np.full(len(joints), np.inf)
        for i, name in enumerate(joints):
            if name in limits:
                low[i] = limits[name][0] - self.safety.joint_limit_margin
                high[i] = limits[name][1] + self.safety.joint_limit_margin
        return low, high

    def reset(self) -> None:
        """Start over, as a training episode starts: last action zero, observation histories
        refilled from the next reading, a recurrent policy's state at its reset value, watchdog
        re-armed (after the robot is safe again)."""
        self.observations.reset()
        self.policy.reset()
        self.tripped: str | None = None
        self._safe: JointCommand | None = None

    # --- one tick ---------------------------------------------------------------------------------
    def _check_state(self, state: RobotState) -> str | None:
        q, qd = state.joint_pos, state.joint_vel
        low, high = self._limits
        # Fast path, a few microseconds: comparisons with NaN are false, and a non-finite velocity
        # makes its dot product non-finite. Only a failing reading pays for the message below.
        if (q >= low).all() and (q <= high).all() and math.isfinite(qd @ qd) and (
            self._max_vel is None or (np.abs(qd) <= self._max_vel).all()
        ):
            return None
        if not (np.isfinite(q).all() and np.isfinite(qd).all()):
            bad = [n for n, x, v in zip(self.robot.joint_names, q, qd) if not (np.isfinite(x) and np.isfinite(v))]
            return f"reading of joint {bad[0]!r} is not finite"
        out = np.flatnonzero((q < low) | (q > high))
        if len(out):
            i = out[0]
            return (f"joint {self.robot.joint_names[i]!r} at {q[i]:.3f} is outside its limits "
                    f"[{low[i]:.3f}, {high[i]:.3f}] (incl. margin)")  # fmt: skip
        if self._max_vel is not None:
            fast = np.flatnonzero(np.abs(qd) > self._max_vel)
            if len(fast):
                i = fast[0]
                return f"joint {self.robot.joint_names[i]!r} moves at {qd[i]:.3f}, above max_joint_vel {self._max_vel[i]:g}"
        return None

    def _policy_step(self, state: RobotState) -> tuple[np.ndarray | None, JointCommand | None, str | None]:
        self.observations.build(state, checked=True)  # straight into the policy's input buffer; step() checked it
        action = self.policy.act()
        if not math.isfinite(action @ action):  # NaN or inf anywhere (or an absurd ~1e19 action)
            return None, None, "policy output is not finite (NaN or inf)"
        last = self.observations.last_action
        if self.safety.action_rate_limit is not None:
            step = self.safety.action_rate_limit * self.period
            np.clip(action, last - step, last + step, out=action)
        last[:] = action
        return action, self.actions.map(action), None

    def step(self, index: int, tick: float) -> Step:
        """Run tick `index` (scheduled at robot time `tick`) and write its command."""
        action, command, started = None, None, time.perf_counter()
        problem = None
        try:
            state = self.robot.read_state()
        except Exception as exc:  # the driver failed to read: the robot still gets the safe command
            n = len(self.robot.joint_names)
            state = RobotState(np.full(n, np.nan), np.full(n, np.nan))
            problem = f"reading the robot failed: {type(exc).__name__}: {exc}"
        if self.tripped is None:  # once tripped, only the safe command is sent
            problem = problem or self.observations.check_reading(state) or self._check_state(state)
            if problem is None:
                try:
                    action, command, problem = self._policy_step(state)
                except Exception as exc:  # a source or engine failing: the robot still gets a command
                    action, command, problem = None, None, f"policy step failed: {type(exc).__name__}: {exc}"
            if problem is None:
                now, problem = self._clock()
                late = now - tick
                if problem is None and late > self.max_latency:
                    problem = f"step {index} finished {late * 1e3:.1f} ms after its tick (limit {self.max_latency * 1e3:.1f} ms)"
            if problem is not None:
                self.tripped = problem
                self._safe = self._safe_command(state)
                self.policy.reset()
        compute = time.perf_counter() - started
        if self.tripped is not None:
            command, action = self._safe, None
        try:
            self.robot.write_command(command)
        except Exception as exc:  # the driver could not send it: trip, and send the safe command once more
            failed = f"writing the command failed: {type(exc).__name__}: {exc}"
            if self.tripped is None:
                problem = self.tripped = failed
                self._safe = self._safe_command(state)
                self.policy.reset()
            action, command = None, self._safe
            try:
                self.robot.write_command(command)
            except Exception as again:
                raise DeployError(f"step {index}: {failed}, and sending the safe command failed too ({type(again).__name__}: "
                                  f"{again}): the robot may still hold the last command; stop it by other means") from None  # fmt: skip
        record = Step(index, tick, state, action, command, compute, problem)
        if self._log is not None:
            self._write_log(record)
        return record

    def _clock(self) -> tuple[float, str | None]:
        """The robot's clock (seconds), and why it cannot be used: a driver clock that raises or reads
        NaN (not yet synced) would switch the latency check off without a word."""
        try:
            now = self.robot.now()
            if isinstance(now, numbers.Real) and not isinstance(now, bool) and math.isfinite(now):
                return float(now), None
            problem = f"the robot's clock reads {now!r}, not a finite number of seconds"
        except Exception as exc:
            problem = f"reading the robot's clock failed: {type(exc).__name__}: {exc}"
        return math.nan, problem

    def _safe_command(self, state: RobotState) -> JointCommand:
        """The safe command for `state`; a reading too malformed to hold a pose gets damping only."""
        n = len(self.robot.joint_names)
        pos = getattr(state, "joint_pos", None)
        if not isinstance(pos, np.ndarray) or pos.shape != (n,) or pos.dtype.kind not in "fiu":
            state = RobotState(np.full(n, np.nan), np.zeros(n))  # no position target anywhere
        return self.actions.safe_command(state, self.safety.safe_mode)

    # --- the loop ---------------------------------------------------------------------------------
    def run(self, steps: int, on_step: Callable[[Step], bool | None] | None = None) -> LoopReport:
        """Run up to `steps` ticks, one control period apart on the robot's clock. `on_step` sees
        every tick after its command is written and ends the run by returning True."""
        if isinstance(steps, bool) or not isinstance(steps, int) or steps < 0:
            raise DeployError(f"ControlLoop.run: steps={steps!r}; valid: an integer >= 0 (ticks to run)")
        report = LoopReport()
        start, problem = self._clock()
        if problem is not None:  # nothing was commanded yet: no tick can be scheduled
            raise DeployError(f"ControlLoop.run: {problem}; valid: now() returning the robot's time in seconds")
        for k in range(steps):
            tick = start + k * self.period
            self.robot.sleep_until(tick)
            record = self.step(k, tick)
            report.steps += 1
            if record.tripped is not None and report.tripped is None:
                report.tripped, report.trip_step = record.tripped, k
            elif record.action is not None:
                report.compute_s.append(record.compute_s)
            if on_step is not None and on_step(record):
                break
        return report

    def _write_log(self, s: Step) -> None:
        c = s.command
        row = {
            "step": s.index, "tick": s.tick, "compute_ms": s.compute_s * 1e3,
            "joint_pos": s.state.joint_pos.tolist(), "joint_vel": s.state.joint_vel.tolist(),
            "obs": self.observations.obs.tolist() if s.action is not None else None,
            "action": None if s.action is None else s.action.tolist(),
            "command": {k: getattr(c, k).tolist() for k in ("position", "velocity", "kp", "kd", "effort", "ctrl")},
            "tripped": s.tripped, "safe": self.tripped is not None,
        }  # fmt: skip
        self._log.write(json.dumps(row) + "\n")

    def close(self) -> None:
        if self._log is not None:
            self._log.close()
            self._log = None
