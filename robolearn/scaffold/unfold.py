"""Legs folded flat by new-task's guessed pose, stood up under their hips.

"Each joint at 0 inside its limits" is a standing pose only where the model's zero is one. Where a
thigh's 0 points it forward and a knee's range starts at 0 (pybullet's Vision 60: thighs level,
knees 10 % into [0, pi]), the legs lie folded under the body: its base 0.17 m up on legs 0.6 m
long, a crouch from which no gait starts (300 iterations learned to stand still,
docs/benchmarks.md). Here, for a robot on three feet or more with a leg folded back on itself (its
foot less than CROUCH of the leg's length below its hip, and less than that out from it across the
ground), the leg joints move (inside their limits) until each foot is under its hip, STAND of its
leg's length below it; stance.py then puts the feet's middle under the centre of mass. Legs that
reach out are left: an ant's (brax's, Genesis's) stand 0.37 of their length below their hips and
0.89 of it out, sprawled by design; Vision 60's folded legs 0.22 below and 0.11 out.
"""

from __future__ import annotations

import mujoco
import numpy as np

from robolearn.scaffold.legs import Foot
from robolearn.scaffold.model_query import foot_position, leg_chains, leg_joints, posed_qpos, separate_legs

CROUCH = 0.5
"""Feet less than this fraction of their leg's length below its first joint, and less than it out from
it across the ground, are folded: mjlab's Go1 in Unitree's stance is 0.7 below, pybullet's A1 as
new-task stands it 0.8, Vision 60's guess 0.22 below and 0.11 out."""

STAND = 0.75
"""How far below its hip each foot goes [fraction of the leg's length]: a quadruped's usual stance."""

ITERATIONS = 200


def unfold_legs(model: mujoco.MjModel, base: str, feet: list[Foot], pose: dict[str, float],
                ranges: dict[str, tuple[float, float]], margin: float) -> tuple[dict[str, float], float]:  # fmt: skip
    """`pose` with folded legs stood up (module doc), each joint moved at least `margin` of its range
    inside its limits; and the least drop of a foot below its hip as a fraction of its leg's length
    before. The pose comes back unchanged where no leg is folded, where the legs cannot unfold to
    CROUCH, where fewer than three feet hang on joints of `pose`, or where two feet share a joint."""
    data = mujoco.MjData(model)
    data.qpos[:] = posed_qpos(model, pose)
    mujoco.mj_kinematics(model, data)
    legs = leg_chains(model, model.body(base).id, feet, list(pose))
    if len(legs) < 3 or not separate_legs(legs):
        return pose, 1.0  # a biped, or "feet" that share joints: a hand's fingers (TIAGo's), not legs
    lengths = np.array([_length(model, data, leg) for leg in legs])
    offsets = _hips_to_feet(model, data, legs) / lengths[:, None]
    drops, reaches = offsets[:, 2], np.linalg.norm(offsets[:, :2], axis=1)
    before = float(np.min(drops))
    if not np.any((drops < CROUCH) & (reaches < CROUCH)):
        return pose, before  # no leg folded back on itself; a leg that reaches out (an ant's) sprawls by design
    names, dofs, adr, low, high = leg_joints(model, legs, ranges, margin)
    targets = []
    for (body, point, chain), length in zip(legs, lengths):  # under the hip, the foot's sideways offset kept
        hip, foot = data.xanchor[model.joint(chain[0]).id], foot_position(data, body, point)
        targets.append(np.array([hip[0], foot[1], hip[2] - STAND * length]))
    q = data.qpos[adr].copy()
    jac = np.zeros((3, model.nv))
    for _ in range(ITERATIONS):  # damped least squares toward the targets, inside the limits
        data.qpos[adr] = q
        mujoco.mj_kinematics(model, data)
        mujoco.mj_comPos(model, data)
        rows, errors = [], []
        for (body, point, _), target in zip(legs, targets):
            world = foot_position(data, body, point)
            mujoco.mj_jac(model, data, jac, None, world, body)
            rows.append(jac[:, dofs].copy())
            errors.append(target - world)
        jacobian, error = np.vstack(rows), np.concatenate(errors)
        step = jacobian.T @ np.linalg.solve(jacobian @ jacobian.T + 1e-4 * np.eye(len(error)), error)
        q = np.clip(q + step, low, high)
        if np.linalg.norm(step) < 1e-7:
            break
    data.qpos[adr] = q
    mujoco.mj_kinematics(model, data)
    if float(np.min(_hips_to_feet(model, data, legs)[:, 2] / lengths)) < CROUCH:
        return pose, before  # the limits do not allow it: keep the guess (the stand check says what happens)
    return {**pose, **{name: round(float(v), 4) for name, v in zip(names, q)}}, before


def _hips_to_feet(model: mujoco.MjModel, data: mujoco.MjData, legs: list) -> np.ndarray:
    """Each leg's first joint less its foot's point, in the world frame [m]: [:, 2] is how far the
    foot is below it, the norm of [:, :2] how far out from it across the ground."""
    return np.array([data.xanchor[model.joint(chain[0]).id] - foot_position(data, body, point) for body, point, chain in legs])


def _length(model: mujoco.MjModel, data: mujoco.MjData, leg) -> float:
    """A leg's length: from joint to joint down the chain, then to the foot's point [m]."""
    body, point, chain = leg
    points = [data.xanchor[model.joint(name).id] for name in chain] + [foot_position(data, body, point)]
    return float(sum(np.linalg.norm(b - a) for a, b in zip(points[:-1], points[1:])))
