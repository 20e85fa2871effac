"""Feet around the centre of mass: new-task's standing pose for a robot on three feet or more
without a `home` keyframe.

"Each joint at 0 inside its limits" bends a knee whose range leaves 0 out while the thigh stays at
0, which puts every foot ahead of (or behind) its hip: pybullet's A1 stood with the middle of its
feet 0.18 m forward of its centre of mass and tipped back onto its thighs, AlienGo and Unitree's
Go2 likewise. Here the leg joints move, as little as they must and inside their limits, until the
middle of the feet is under the centre of mass (along the base's x and y: a robot turned upright,
upright.py, may face either). Feet that already surround it (an ant's, spread forward and back)
stay where they are, and so does a biped: each joint at 0 stood Talos (and G1
at KP x 4), while its feet's middle moved under its centre of mass tipped both over.
"""

from __future__ import annotations

import mujoco
import numpy as np

from robolearn.scaffold.inspect_model import ModelInfo
from robolearn.scaffold.legs import Foot
from robolearn.scaffold.model_query import HOME_MARGIN, foot_position, leg_chains, leg_joints, posed_qpos
from robolearn.scaffold.plan import RobotPlan, num, short
from robolearn.scaffold.unfold import STAND, unfold_legs

TOLERANCE = 0.02
"""Feet whose middle is within this of the centre of mass (horizontally) [m] are left where they are."""

ITERATIONS = 100

DEEPER = 10.0
"""Each joint farther down a leg costs this many times more to move (squared change): the thigh
turns before the knee bends further (a deeper crouch asks more of the placeholder gains)."""


def plan_stance(plan: RobotPlan, info: ModelInfo, model: mujoco.MjModel) -> dict[str, float] | None:
    """Move the leg joints of plan.default_pose so the feet's middle is under the centre of mass (the
    wheels' turn moves no foot: left out), folded legs stood up first (unfold.py), and say so in the
    report. Returns the leg joints as unfolded, None where nothing was folded."""
    ranges = {j.name: j.range for j in info.joints if j.range}
    guessed = dict(plan.default_pose)
    legs = {name: value for name, value in guessed.items() if name not in plan.wheels}
    unfolded, folded = unfold_legs(model, plan.base, info.feet, legs, ranges, HOME_MARGIN)
    moved = _moved(legs, unfolded)
    if moved:
        plan.lines.append(f"home pose: with each joint at 0 (inside its limits) the legs lay folded (a foot {folded:.0%} of "
                          f"its leg's length below its hip) -> moved {len(moved)} leg joints to stand each foot under its hip, "
                          f"{STAND:.0%} of the length below it: {short(moved)}")  # fmt: skip
    posed, before = feet_under_com(model, plan.base, info.feet, unfolded, ranges, HOME_MARGIN)
    plan.default_pose = {**guessed, **posed}
    moved = _moved(unfolded, posed)
    if moved:
        start = "then" if unfolded != legs else "with each joint at 0 (inside its limits)"
        plan.lines.append(f"home pose: {start} the middle of the feet stood {before:.3f} m away from the centre of mass -> "
                          f"moved {len(moved)} leg joints to put it under it: {short(moved)}")  # fmt: skip
    return unfolded if unfolded != legs else None


def _moved(before: dict[str, float], after: dict[str, float]) -> list[str]:
    """`name old -> new` of each joint that moved."""
    return [f"{name} {num(before[name])} -> {num(after[name])}" for name in before if abs(after[name] - before[name]) > 1e-4]


def feet_under_com(model: mujoco.MjModel, base: str, feet: list[Foot], pose: dict[str, float],
                   ranges: dict[str, tuple[float, float]], margin: float) -> tuple[dict[str, float], float]:  # fmt: skip
    """`pose` with the feet's middle under the centre of mass (module doc), each joint of `pose` that
    moves a foot at least `margin` of its range inside its limits; and how far the middle was from
    it before [m]. The pose comes back unchanged where it is within TOLERANCE, where the legs cannot
    get it there, or where fewer than three feet hang on joints of `pose`."""
    base_id = model.body(base).id
    data = mujoco.MjData(model)
    data.qpos[:] = posed_qpos(model, pose)
    mujoco.mj_kinematics(model, data)
    level = data.xmat[base_id].reshape(3, 3)[:, :2].T.copy()  # the base's x and y, level at home
    legs = leg_chains(model, base_id, feet, list(pose))
    if len(legs) < 3:  # a biped: left as guessed (module doc)
        return pose, 0.0
    names, dofs, adr, low, high = leg_joints(model, legs, ranges, margin)
    depth = {name: k for *_, chain in legs for k, name in enumerate(chain)}
    cost = np.array([DEEPER ** depth[name] for name in names])

    def offset() -> tuple[np.ndarray, np.ndarray]:
        """The feet's middle less the centre of mass along the base's x and y, and its gradient in the joints."""
        mujoco.mj_kinematics(model, data)
        mujoco.mj_comPos(model, data)
        jac = np.zeros((3, model.nv))
        mujoco.mj_jacSubtreeCom(model, data, jac, base_id)
        value, gradient = -level @ data.subtree_com[base_id], -(level @ jac)[:, dofs]
        for body, point, _ in legs:
            world = foot_position(data, body, point)
            mujoco.mj_jac(model, data, jac, None, world, body)
            value += level @ world / len(legs)
            gradient = gradient + (level @ jac)[:, dofs] / len(legs)
        return value, gradient

    before = float(np.linalg.norm(offset()[0]))
    if before <= TOLERANCE:
        return pose, before
    q = data.qpos[adr].copy()
    for _ in range(ITERATIONS):  # the cheapest (cost-weighted, least-squares) joint change that closes the offset
        data.qpos[adr] = q
        value, gradient = offset()
        scaled = gradient / np.sqrt(cost)
        step = -scaled.T @ np.linalg.solve(scaled @ scaled.T + 1e-6 * np.eye(2), value) / np.sqrt(cost)
        q = np.clip(q + step, low, high)
        if np.linalg.norm(step) < 1e-7:
            break
    data.qpos[adr] = q
    if np.linalg.norm(offset()[0]) > max(TOLERANCE, 0.5 * before):
        return pose, before  # the legs' limits do not allow it: keep the guess (the stand check says what happens)
    return {**pose, **{name: round(float(v), 4) for name, v in zip(names, q)}}, before
