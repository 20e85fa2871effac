"""Placeholder gains for the position servos new-task adds to a model without actuators (most URDFs):
one KP and KD per joint.

A servo holds its joint at the target against gravity with a steady error of load / KP. One gain
for every joint, 2 x the robot's mass, is what the locomotion template's legged robots were
trained with (docs/benchmarks.md), and it stays theirs. It does not fit a robot that hangs from its
root, such as an arm fixed to the world: each joint there carries every link beyond it, out at arm's
length, and a light two-link arm sagged 0.44 rad under KP 7. There each joint's KP is at least its
worst gravity load divided by SAG, with the uniform gain as the floor, and its KD gives the joint
a damping ratio of DAMPING_RATIO on its own inertia (KP / 40 left those arms ringing).
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
"""KD = KP / KD_RATIO: the damping of a robot on its feet (what its recipes were measured with)."""
DAMPING_RATIO = 0.7
"""The damping ratio a hanging robot's servo gives its joint: KD = 2 x DAMPING_RATIO x sqrt(KP x the
joint's inertia at the stance, the other joints held), never below KP / KD_RATIO; the joint's own
damping comes on top. With KP / 40 (ratios of 0.1-0.45 on most arm joints) a 0.4 rad step of one
target overshot by up to 55 % on the four arms of docs/benchmarks.md ("Servo damping"), by at most
6.5 % with this. The floor is for light links: implicitfast integrates the damping implicitly but
the spring explicitly, stable only while KD > timestep x KP / 2 - 2 x inertia / timestep (derived
for one joint, not measured), and a
10 g finger under a robot-sized KP needs more damping than its ratio asks for (KP / 40 is above
timestep x KP for any timestep up to 25 ms)."""


@dataclass(frozen=True)
class ServoGains:
    kp: dict[str, float]
    kd: dict[str, float]
    load: dict[str, float]
    """Each joint's worst gravity load [N m or N]: what the bodies it carries weigh, at the lever
    arm of their centre of mass, turned to where gravity pulls hardest."""
    floor: float
    """The uniform gain every joint gets at least."""
    hanging: bool

    def summary(self) -> str:
        """'KP=24, KD=0.6' where every joint shares one gain, else the ranges and the rules."""
        return f"{self._kp_summary()}, {self._kd_summary()}"

    def _kp_summary(self) -> str:
        low, high = _span(self.kp, self.floor)
        if low == high:
            return f"KP={num(low)}"
        raised = sum(k > self.floor for k in self.kp.values())
        return (f"KP {num(low)}-{num(high)}: {raised} joint{'s' * (raised != 1)} raised above {num(self.floor)} to "
                f"hold the links they carry within {SAG} rad")  # fmt: skip

    def _kd_summary(self) -> str:
        low, high = _span(self.kd, _damping(self.floor))
        value = f"KD={num(low)}" if low == high else f"KD {num(low)}-{num(high)}"
        return f"{value} for a damping ratio of {DAMPING_RATIO} (at least KP/{num(KD_RATIO)})" if self.hanging else value


def _span(gains: dict[str, float], default: float) -> tuple[float, float]:
    return min(gains.values(), default=default), max(gains.values(), default=default)


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
    mujoco.mj_forward(model, data)
    floor = uniform_floor(mass)
    load = {name: gravity_load(model, data, model.joint(name).id) for name in joints}
    if not hanging:
        return ServoGains({name: floor for name in joints}, {name: _damping(floor) for name in joints}, load, floor,
                          hanging)  # fmt: skip
    kp = {name: max(floor, _round_up(load[name] / SAG)) for name in joints}
    inertia = joint_inertias(model, data, joints)
    kd = {name: max(_damping(kp[name]), _round_2(2 * DAMPING_RATIO * math.sqrt(kp[name] * inertia[name]))) for name in joints}
    return ServoGains(kp, kd, load, floor, hanging)


def joint_inertias(model: mujoco.MjModel, data: mujoco.MjData, joints: list[str]) -> dict[str, float]:
    """The inertia [kg m^2, or kg for a slide] each joint's servo moves with the other joints held:
    the diagonal of the joint-space inertia matrix, armature included (after mj_forward)."""
    full = np.zeros((model.nv, model.nv))
    mujoco.mj_fullM(model, data, full)
    return {name: float(full[model.joint(name).dofadr[0], model.joint(name).dofadr[0]]) for name in joints}


def _damping(kp: float) -> float:
    return round(kp / KD_RATIO, 3)


def _round_2(value: float) -> float:
    """`value` to two significant digits (4.717 -> 4.7, 0.6034 -> 0.6)."""
    if value <= 0:
        return 0.0
    return float(round(value, 1 - math.floor(math.log10(value))))


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
    damping = (f"a damping ratio of {DAMPING_RATIO} on each joint's inertia in the stance, 2 x {DAMPING_RATIO} x "
               f"sqrt(KP x inertia), at least KP / {num(KD_RATIO)}" if hanging else f"KP / {num(KD_RATIO)}")  # fmt: skip
    plan.kp, plan.kd = dict(gains.kp), dict(gains.kd)
    at = next(i for i, c in enumerate(plan.constants) if c.startswith("EFFORT_LIMIT = "))
    plan.constants[at:at] = [
        const("KP", mapping({j: num(k) for j, k in gains.kp.items()}),
              f"Position gain of each joint's servo [N m/rad or N/m] (one number sets every joint's). TODO: "
              f"placeholders: 2 x the robot's {info.mass:.1f} kg (at least 5){raised}. Set your robot's."),
        const("KD", mapping({j: num(k) for j, k in gains.kd.items()}),
              f"Damping gain of each joint's servo [N m s/rad or N s/m] (one number sets every joint's). TODO: "
              f"placeholders ({damping}): set your robot's."),
    ]  # fmt: skip


def raise_gains(plan: RobotPlan, factor: float, why: str) -> None:
    """Scale the added servos' KP by `factor` and KD by its square root (each joint keeps its damping
    ratio) in the plan and in robot.py's constants, whose KP doc says `why`."""
    plan.kp = {joint: round(kp * factor, 3) for joint, kp in plan.kp.items()}
    plan.kd = {joint: round(kd * math.sqrt(factor), 3) for joint, kd in plan.kd.items()}
    tails = {"KP": (" Set your robot's.", f" Raised x {factor:g}: {why}. Set your robot's."),
             "KD": ("): set your robot's.", f"; x {math.sqrt(factor):.3g} with KP): set your robot's.")}  # fmt: skip
    for name, gains in (("KP", plan.kp), ("KD", plan.kd)):
        at = next(i for i, c in enumerate(plan.constants) if c.startswith(f"{name} = "))
        doc = " ".join(plan.constants[at].split('"""')[1].split("\n")).replace(*tails[name])
        plan.constants[at] = const(name, mapping({j: num(k) for j, k in gains.items()}), doc)
