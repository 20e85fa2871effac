"""Placeholder gains for the position servos new-task adds to a model without actuators (most URDFs):
one KP and KD per joint.

A servo holds its joint at the target against gravity with a steady error of load / KP. One gain
for every joint, 2 x the robot's mass, is what the locomotion template's legged robots were
trained with (docs/benchmarks.md), and it stays theirs. It does not fit a robot that hangs from its
root, such as an arm fixed to the world: each joint there carries every link beyond it, out at arm's
length, and a light two-link arm sagged 0.44 rad under KP 7. There each joint's KP is at least its
worst gravity load divided by SAG, with the uniform gain as the floor.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import mujoco
import numpy as np

from robolearn.scaffold.inspect_model import ModelInfo
from robolearn.scaffold.plan import RobotPlan, const, mapping, num, short

SAG = 0.05
"""The steady error [rad or m] a servo at a zero action may show under the heaviest gravity load
its joint can carry (the links beyond it stretched out level)."""
KD_RATIO = 40.0
"""KD = KP / KD_RATIO: the damping new-task's uniform placeholder always had."""


@dataclass(frozen=True)
class ServoGains:
    kp: dict[str, float]
    load: dict[str, float]
    """Each joint's worst gravity load [N m or N]: what the bodies it carries weigh, at the lever
    arm of their centre of mass, turned to where gravity pulls hardest."""
    floor: float
    """The uniform gain every joint gets at least."""

    @property
    def kd(self) -> dict[str, float]:
        return {name: _damping(k) for name, k in self.kp.items()}

    def summary(self) -> str:
        """'KP=24, KD=0.6' where every joint shares one gain, else the range and the rule."""
        low, high = min(self.kp.values(), default=self.floor), max(self.kp.values(), default=self.floor)
        if low == high:
            return f"KP={num(low)}, KD={num(_damping(low))}"
        raised = sum(k > self.floor for k in self.kp.values())
        return (f"KP {num(low)}-{num(high)}: {raised} joint{'s' * (raised != 1)} raised above {num(self.floor)} to "
                f"hold the links they carry within {SAG} rad, KD = KP/{num(KD_RATIO)}")  # fmt: skip


def uniform_floor(mass: float) -> float:
    """new-task's one-gain placeholder: 2 x the robot's mass [kg], at least 5."""
    return float(max(5, round(2 * mass)))


def gravity_load(model: mujoco.MjModel, data: mujoco.MjData, joint: int) -> float:
    """The largest torque (hinge) or force (slide) gravity puts on `joint` through the bodies it
    carries (its body's subtree), over a whole turn of the joint, the other joints held as in
    `data` (after mj_kinematics and mj_comPos)."""
    gravity = np.asarray(model.opt.gravity, dtype=float)
    g = float(np.linalg.norm(gravity))
    body = int(model.jnt_bodyid[joint])
    mass = float(model.body_subtreemass[body])
    if g == 0.0 or mass == 0.0:
        return 0.0
    axis = np.asarray(data.xaxis[joint], dtype=float)
    down = gravity / g
    along = float(axis @ down)
    if int(model.jnt_type[joint]) == int(mujoco.mjtJoint.mjJNT_SLIDE):
        return mass * g * abs(along)
    lever = np.asarray(data.subtree_com[body], dtype=float) - np.asarray(data.xanchor[joint], dtype=float)
    off_axis = float(np.linalg.norm(lever - (lever @ axis) * axis))  # the centre of mass's distance from the axis
    return mass * g * off_axis * math.sqrt(max(0.0, 1.0 - along * along))


def servo_gains(model: mujoco.MjModel, joints: list[str], qpos: list[float] | np.ndarray, mass: float,
                hanging: bool = True) -> ServoGains:  # fmt: skip
    """KP and KD of each joint in `joints`, from its gravity load with the robot posed at `qpos`;
    `hanging`: the robot hangs from its root (fixed to the world, or on rails its servos drive), so
    each joint carries the bodies beyond it. A robot that stands on its feet (a floating or planar
    base) loads its joints the other way round: they all get the uniform gain."""
    data = mujoco.MjData(model)
    data.qpos[:] = qpos
    mujoco.mj_kinematics(model, data)
    mujoco.mj_comPos(model, data)
    floor = uniform_floor(mass)
    load = {name: gravity_load(model, data, model.joint(name).id) for name in joints}
    kp = {name: max(floor, _round_up(load[name] / SAG)) if hanging else floor for name in joints}
    return ServoGains(kp, load, floor)


def _damping(kp: float) -> float:
    return round(kp / KD_RATIO, 3)


def _round_up(value: float) -> float:
    """`value` rounded up to two significant digits (118.2 -> 120, 7.34 -> 7.4)."""
    if value <= 0:
        return 0.0
    step = 10.0 ** (math.floor(math.log10(value)) - 1)
    return float(round(math.ceil(round(value / step, 9)) * step, 6))


def plan_servo_gains(plan: RobotPlan, info: ModelInfo, model: mujoco.MjModel, legged: bool) -> None:
    """The gains of the position servos added on the joints that are no wheels; `legged`: the
    locomotion template's robot, which stands on its feet."""
    joints = [j for j in plan.joints if j not in plan.wheels]
    hanging = info.base is None and not legged
    gains = servo_gains(model, joints, info.stance_qpos, info.mass, hanging)
    but = f" but the {len(plan.wheels)} wheels" if plan.wheels else ""
    plan.lines.append(f"actuators: none -> added a position servo on each of the {len(plan.joints)} joints{but} "
                      f"({gains.summary()}: placeholders, set your robot's gains in robot.py)")  # fmt: skip
    effort = {j.name: j.effort for j in info.joints if j.effort}
    weak = [f"{j} {num(round(gains.load[j], 2))} > {num(effort[j])}" for j in joints
            if hanging and effort.get(j, math.inf) < gains.load[j]]  # fmt: skip
    if weak:
        plan.lines.append(f"WARNING: joints whose effort limit is below the weight they may carry (worst-case gravity "
                          f"load > effort, N m or N): {short(weak)}; they sag where the links beyond them reach out "
                          "(check the model's effort limits and masses)")  # fmt: skip
    raised = f", raised where a joint carries more weight than that holds within {SAG} rad" if hanging else ""
    at = next(i for i, c in enumerate(plan.constants) if c.startswith("EFFORT_LIMIT = "))
    plan.constants[at:at] = [
        const("KP", mapping({j: num(k) for j, k in gains.kp.items()}),
              f"Position gain of each joint's servo [N m/rad or N/m] (one number sets every joint's). TODO: "
              f"placeholders: 2 x the robot's {info.mass:.1f} kg (at least 5){raised}. Set your robot's."),
        const("KD", mapping({j: num(k) for j, k in gains.kd.items()}),
              f"Damping gain of each joint's servo [N m s/rad or N s/m] (one number sets every joint's). TODO: "
              f"placeholders (KP / {num(KD_RATIO)}): set your robot's."),
    ]  # fmt: skip
