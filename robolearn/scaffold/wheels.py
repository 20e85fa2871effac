"""Wheels: where a model without actuators gets a velocity servo instead of a position servo.

A wheel is a hinge without limits (a URDF's `continuous` joint, an MJCF hinge without range) on a
horizontal axis, whose body carries no further joint (directly or through fixed links) and whose
collision geometry is round about the hinge's axis and centred on it (a sphere, or a cylinder,
capsule or round ellipsoid turning on its own axis). A position servo holds such a joint near one
angle, so a rover could not drive; its policy commands the wheel's speed. A continuous joint that
is not a wheel keeps its position servo: an arm's endless wrist, a caster's or a head's swivel (a
vertical axis), a pendulum's bob (off the axis), a leg's hip motor (it carries the knee).
"""

from __future__ import annotations

import mujoco
import numpy as np

from robolearn.scaffold.inspect_model import ModelInfo
from robolearn.scaffold.plan import RobotPlan, const, mapping, num, short

LEVEL = 0.26
"""A wheel's axis is within ~15 degrees of horizontal in the model's pose: |axis . z| below this."""

ON_AXIS = 0.05
"""A round geom's centre lies on the hinge's axis within this fraction of its radius."""

RIM_SPEED = 2.0
"""The speed a wheel's rim reaches at full action [m/s]: the placeholder top speed of new-task's
wheel servos (WHEEL_SPEED = RIM_SPEED / radius), above the locomotion template's 1 m/s commands."""

_ROUND_ABOUT_AXIS = (int(mujoco.mjtGeom.mjGEOM_CYLINDER), int(mujoco.mjtGeom.mjGEOM_CAPSULE), int(mujoco.mjtGeom.mjGEOM_ELLIPSOID))


def wheel_radii(info: ModelInfo, model: mujoco.MjModel) -> dict[str, float]:
    """The robot's wheels (module doc), by joint name, with the radius of each [m]."""
    data = mujoco.MjData(model)
    mujoco.mj_kinematics(model, data)
    mujoco.mj_comPos(model, data)  # xaxis
    carriers = set()  # every body with a joint somewhere below it (a fixed link between counts as nothing)
    for j in range(model.njnt):
        b = int(model.body_parentid[model.jnt_bodyid[j]])
        while b and b not in carriers:
            carriers.add(b)
            b = int(model.body_parentid[b])
    wheels = {}
    for joint in info.joints:
        if joint.slide or joint.range is not None:
            continue
        j = model.joint(joint.name).id
        body = int(model.jnt_bodyid[j])
        if body in carriers or int(model.body_jntnum[body]) != 1 or abs(float(data.xaxis[j][2])) >= LEVEL:
            continue
        radius = _round_radius(model, data, body, data.xanchor[j], data.xaxis[j])
        if radius:
            wheels[joint.name] = radius
    return wheels


def _round_radius(model: mujoco.MjModel, data: mujoco.MjData, body: int, anchor: np.ndarray, axis: np.ndarray) -> float | None:
    """The largest radius of the body's collision geoms that are round about the line through
    `anchor` along `axis` and centred on it, None if the body has collision geoms and not all of
    them are."""
    radii = []
    for g in range(model.ngeom):
        if int(model.geom_bodyid[g]) != body or not (model.geom_contype[g] or model.geom_conaffinity[g]):
            continue
        kind, size = int(model.geom_type[g]), model.geom_size[g]
        along = abs(float(data.geom_xmat[g].reshape(3, 3)[:, 2] @ axis))
        offset = data.geom_xpos[g] - anchor
        off_axis = float(np.linalg.norm(offset - (offset @ axis) * axis))
        if off_axis > ON_AXIS * float(size[0]):
            return None
        if kind == int(mujoco.mjtGeom.mjGEOM_SPHERE):
            radii.append(float(size[0]))
        elif kind in _ROUND_ABOUT_AXIS and along > 0.99 and (kind != int(mujoco.mjtGeom.mjGEOM_ELLIPSOID) or np.isclose(size[0], size[1])):
            radii.append(float(size[0]))
        else:
            return None
    return max(radii) if radii else None


def plan_wheels(plan: RobotPlan, info: ModelInfo, model: mujoco.MjModel) -> None:
    """Velocity servos on the wheels of a model new-task gives servos (plan.wheels, robot.py's
    add_wheel_servos, which runs before add_position_actuators takes the other joints)."""
    radii = {name: r for name, r in wheel_radii(info, model).items() if name in plan.joints}
    if not radii:
        return
    plan.wheels = {name: round(RIM_SPEED / r, 1) for name, r in radii.items()}
    kv = round(info.mass * max(radii.values()) ** 2, 4) or 0.01
    plan.steps.insert(plan.steps.index("add_position_actuators"), "add_wheel_servos")
    plan.constants.append(const("WHEEL_SPEED", mapping({n: num(v) for n, v in plan.wheels.items()}),
                                f"Top speed of each wheel's velocity servo [rad/s]: its ctrl range, full action. TODO: a "
                                f"placeholder ({num(RIM_SPEED)} m/s at the rim): set your motors' top speeds."))  # fmt: skip
    plan.constants.append(const("KV_WHEEL", num(kv), "Velocity gain of every wheel servo [N m s/rad]: torque = KV_WHEEL x "
                                f"(target - speed). TODO: a placeholder (the robot's {info.mass:.1f} kg x the wheel radius "
                                "squared): set your drives' gain."))  # fmt: skip
    if len(plan.wheels) == len(plan.joints):  # nothing left for a position servo
        plan.steps.remove("add_position_actuators")
    sizes = sorted({num(r) for r in radii.values()})
    shown = f"{sizes[0]} m" if len(sizes) == 1 else ", ".join(f"{n} {num(r)} m" for n, r in list(radii.items())[:6])
    plan.lines.append(f"actuators: none on the wheels {short(list(radii))} (no limits, round about their axis: radius {shown}) "
                      f"-> added a velocity servo on each (KV={num(kv)}, top speed {num(RIM_SPEED)} m/s at the rim: "
                      "placeholders in robot.py); their actions are target speeds")  # fmt: skip
