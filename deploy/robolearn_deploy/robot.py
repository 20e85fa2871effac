"""What a hardware driver implements: read the state, write a joint command, keep time.

Both directions use the driver's own joint order (`joint_names`); the observation builder and
the action mapper translate to and from the bundle's order by name, so no hand-written code
ever depends on the order the policy was trained with.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from robolearn_deploy.errors import DeployError


def driver_names(names, what: str = "joint_names") -> list[str]:
    """A driver's `joint_names` (or `actuator_names`) as a list, refused in one line where it is no
    sequence of distinct names: with a name twice, observations would read one index and commands
    write another."""
    if isinstance(names, (str, bytes)) or not isinstance(names, Iterable):
        raise DeployError(f"{what} is {type(names).__name__} {names!r}; valid: a list of names in the driver's order, "
                          "e.g. ['hip', 'knee']")  # fmt: skip
    names = [str(n) if isinstance(n, str) else n for n in names]  # numpy's str_ as str
    odd = [n for n in names if not isinstance(n, str) or not n]
    if odd:
        raise DeployError(f"{what} holds {odd[0]!r}; valid: each entry a name (a non-empty string)")
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise DeployError(f"{what} names {twice[0]!r} more than once; valid: each name once, in the driver's order")
    return names


@dataclass
class RobotState:
    """One reading, in the driver's joint order. `signals` holds everything that is not a joint
    (IMU rates and orientation, an operator's velocity command, ...), keyed by name."""

    joint_pos: np.ndarray
    joint_vel: np.ndarray
    signals: Mapping[str, np.ndarray] = field(default_factory=dict)


@dataclass
class JointCommand:
    """Per joint, in the driver's order: effort = kp (position - q) + kd (velocity - qdot) + effort.
    This is the command most joint-level motor drivers take; a driver without built-in PD
    evaluates it itself at its own rate. Unactuated joints carry kp = kd = effort = 0.

    `ctrl`: one value per actuator the driver commands directly, in its `actuator_names` order
    (empty for a driver that lists none): the MuJoCo ctrl of actuators that have no joint-level
    equivalent (tendons, activation dynamics, ...; robot.yaml kind 'actuator')."""

    position: np.ndarray
    velocity: np.ndarray
    kp: np.ndarray
    kd: np.ndarray
    effort: np.ndarray
    ctrl: np.ndarray = field(default_factory=lambda: np.zeros(0))

    @classmethod
    def zeros(cls, num_joints: int, num_actuators: int = 0) -> JointCommand:
        return cls(*(np.zeros(num_joints) for _ in range(5)), np.zeros(num_actuators))

    def copy(self) -> JointCommand:
        return JointCommand(self.position.copy(), self.velocity.copy(), self.kp.copy(), self.kd.copy(),
                            self.effort.copy(), self.ctrl.copy())  # fmt: skip


class RobotInterface(ABC):
    """The robot side of the control loop. `now`/`sleep_until` are the loop's clock: wall time on
    hardware; a simulator may run its own clock instead (see sim.MujocoRobot)."""

    joint_names: Sequence[str]
    actuator_names: Sequence[str] = ()
    """The actuators this driver commands by their ctrl (JointCommand.ctrl, in this order): needed
    when the bundle has actuators of kind 'actuator' (robot.yaml), which no joint command can drive."""
    signals: Sequence[str] | None = None
    """The names of the `RobotState.signals` this driver provides. Declared, they are checked
    against what the bundle needs when the ControlLoop is built; undeclared, a reading without a
    needed signal trips the safe command on its tick."""
    spin_s: float = 0.001
    """sleep_until busy-waits this last stretch: a core woken from sleep runs the next step several
    times slower (measured here: ~190 us instead of ~30 us for a small policy after a 20 ms sleep)."""

    @abstractmethod
    def read_state(self) -> RobotState: ...

    @abstractmethod
    def write_command(self, command: JointCommand) -> None: ...

    def now(self) -> float:
        """Seconds on a monotonic clock."""
        return time.monotonic()

    def sleep_until(self, t: float) -> None:
        delay = t - self.now()
        if delay > self.spin_s:
            time.sleep(delay - self.spin_s)
        while self.now() < t:
            pass
