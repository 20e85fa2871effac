"""Feet around the centre of mass: new-task's standing pose for a robot on three feet or more
without a `home` keyframe.

"Each joint at 0 inside its limits" bends a knee whose range leaves 0 out while the thigh stays at
0, which puts every foot ahead of (or behind) its hip: pybullet's A1 stood with the middle of its
feet 0.18 m forward of its centre of mass and tipped back onto its thighs, AlienGo and Unitree's
Go2 likewise. Here the leg joints move, as little as they must and inside their limits, until the
middle of the feet is under the centre of mass along the base's forward axis (x). Feet that
already surround it (an ant's, spread
forward and back) stay where they are, and so does a biped: each joint at 0 stood Talos (and G1
at KP x 4), while its feet's middle moved under its centre of mass tipped both over.
"""

from __future__ import annotations

import mujoco
import numpy as np

from robolearn.scaffold.legs import Foot

TOLERANCE = 0.02
"""Feet whose middle is within this of the centre of mass along x [m] are left where they are."""

ITERATIONS = 100

DEEPER = 10.0
"""Each joint farther down a leg costs this many times more to move (squared change)."""


def leg_joints(model: mujoco.MjModel, foot: int, base: int, driven: set[str]) -> list[int]:
    """The driven hinge joints between the base and a foot body, hip first."""
    chain, b = [], foot
    while b not in (base, 0):
        for j in range(int(model.body_jntadr[b]), int(model.body_jntadr[b]) + int(model.body_jntnum[b])):
            if int(model.jnt_type[j]) == int(mujoco.mjtJoint.mjJNT_HINGE) and model.joint(j).name in driven:
                chain.append(j)
        b = int(model.body_parentid[b])
    return chain[::-1]


def feet_under_com(model: mujoco.MjModel, base: str, feet: list[Foot], pose: dict[str, float],
                    ranges: dict[str, tuple[float, float]], margin: float) -> tuple[dict[str, float], float]:  # fmt: skip
    """The pose with the feet's middle under the centre of mass (module doc), each joint at least
    `margin` of its range inside its limits; and how far the middle was from it before [m]. The pose
    comes back unchanged where it is within TOLERANCE, or where the legs cannot get it there."""
    base_id = model.body(base).id
    data = mujoco.MjData(model)
    data.qpos[:] = model.qpos0
    for name, value in pose.items():
        data.qpos[model.joint(name).qposadr[0]] = value
    mujoco.mj_kinematics(model, data)
    forward = data.xmat[base_id].reshape(3, 3)[:, 0].copy()
    legs = []
    for foot in feet:
        body = int(model.geom(foot.geom).bodyid[0]) if foot.geom else model.body(foot.body).id  # an unnamed foot: by a geom of it
        joints = leg_joints(model, body, base_id, set(pose))
        if joints:
            legs.append((body, np.array(foot.point), joints))
    if len(legs) < 3:  # a biped: left as guessed (module doc)
        return pose, 0.0
    joints = sorted({j for _, _, chain in legs for j in chain})
    column = {j: k for k, j in enumerate(joints)}
    adr = np.array([model.jnt_qposadr[j] for j in joints])
    low, high = [], []
    for j in joints:
        lo, hi = ranges.get(model.joint(j).name, (-np.pi, np.pi))
        low.append(lo + margin * (hi - lo))
        high.append(hi - margin * (hi - lo))
    low, high = np.array(low), np.array(high)
    start = data.qpos[adr].copy()
    # a joint's change costs more the farther down its leg it is: the thigh turns before the knee bends
    # further (a deeper crouch asks more of the placeholder gains)
    cost = np.ones(len(joints))
    for *_, chain in legs:
        for depth, j in enumerate(chain):
            cost[column[j]] = max(cost[column[j]], float(DEEPER ** depth))

    def residual() -> tuple[np.ndarray, np.ndarray]:
        """The feet's middle less the centre of mass, along x, and its gradient in the leg joints."""
        mujoco.mj_kinematics(model, data)
        mujoco.mj_comPos(model, data)
        com = np.zeros((3, model.nv))
        mujoco.mj_jacSubtreeCom(model, data, com, base_id)
        rows = [-forward @ data.subtree_com[base_id]]
        jac = [_columns(-forward @ com, model, joints, column)]
        for body, point, _ in legs:
            world = data.xpos[body] + data.xmat[body].reshape(3, 3) @ point
            jp = np.zeros((3, model.nv))
            mujoco.mj_jac(model, data, jp, None, world, body)
            rows[0] += forward @ world / len(legs)
            jac[0] = jac[0] + _columns(forward @ jp, model, joints, column) / len(legs)
        return np.array(rows, dtype=float), np.array(jac, dtype=float).reshape(len(rows), len(joints))

    r, _ = residual()
    before = abs(float(r[0]))
    if before <= TOLERANCE:
        return pose, before
    q = start.copy()
    for _ in range(ITERATIONS):
        data.qpos[adr] = q
        r, J = residual()
        # damped least squares from the guessed pose: the cheapest joint change (cost-weighted) that closes the residual
        scaled = J / np.sqrt(cost)
        step = np.linalg.solve(scaled.T @ scaled + 1e-6 * np.eye(len(joints)), -(scaled.T @ r)) / np.sqrt(cost)
        q = np.clip(q + step, low, high)
        if np.linalg.norm(step) < 1e-7:
            break
    data.qpos[adr] = q
    r, _ = residual()
    if abs(float(r[0])) > max(TOLERANCE, 0.5 * before):
        return pose, before  # the legs' limits do not allow it: keep the guess (the stand check says what happens)
    moved = dict(pose)
    for k, j in enumerate(joints):
        moved[model.joint(j).name] = round(float(q[k]), 4)
    return moved, before


def _columns(row: np.ndarray, model: mujoco.MjModel, joints: list[int], column: dict[int, int]) -> np.ndarray:
    out = np.zeros(len(joints))
    for j, k in column.items():
        out[k] = row[model.jnt_dofadr[j]]
    return out
