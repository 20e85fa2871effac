"""Small look-ups on a compiled MjModel that new-task's inspection (inspect_model.py, legs.py) shares."""

from __future__ import annotations

import mujoco
import numpy as np

ONE_DOF = (int(mujoco.mjtJoint.mjJNT_HINGE), int(mujoco.mjtJoint.mjJNT_SLIDE))
"""Joint types a policy's joint terms read (hinge, slide)."""


def obj_name(model: mujoco.MjModel, objtype: mujoco.mjtObj, i: int) -> str:
    return mujoco.mj_id2name(model, objtype, i) or ""


def driven_joints(model: mujoco.MjModel) -> set[int]:
    """The joints an actuator drives through a joint transmission."""
    joint = (int(mujoco.mjtTrn.mjTRN_JOINT), int(mujoco.mjtTrn.mjTRN_JOINTINPARENT))
    return {int(model.actuator_trnid[a, 0]) for a in range(model.nu) if int(model.actuator_trntype[a]) in joint}


HOME_MARGIN = 0.1
"""How far inside its range [fraction of the range] new-task poses a joint whose range leaves 0 out or
has it near an edge: the templates' joint_pos_limits penalty starts 5 % from an edge (soft_ratio
0.9), and a pose on a limit has half its reset and target draws outside the range."""


def home_value(joint_range: tuple[float, float] | None) -> float:
    """A joint's value in new-task's default pose: 0, moved HOME_MARGIN of its range inside where 0
    is outside the range or closer to a limit than that (a Franka-style elbow's [-3.07, -0.07]: -0.37)."""
    if joint_range is None:
        return 0.0
    low, high = joint_range
    margin = HOME_MARGIN * (high - low)
    return float(min(max(0.0, low + margin), high - margin))


POSE_GUESS = (f"each joint at 0, or {int(HOME_MARGIN * 100)} % of its range inside its limits where 0 lies outside "
              "them or nearer a limit than that")
"""new-task's default pose in words (robot.py's DEFAULT_POSE docs and the report)."""


def chain_joints(model: mujoco.MjModel, body: int, ref: int, driven: list[str] | None) -> list[str]:
    """The hinge/slide joints between body `ref` and body `body`, nearest `body` first (what moves an
    end effector or a foot in ref's frame): those of `driven`, or all of them where `driven` is None
    (actuators on tendons or muscles move joints without naming them)."""
    chain = []
    b = body
    while b not in (ref, 0):
        for j in range(int(model.body_jntadr[b]), int(model.body_jntadr[b]) + int(model.body_jntnum[b])):
            if int(model.jnt_type[j]) in (int(mujoco.mjtJoint.mjJNT_HINGE), int(mujoco.mjtJoint.mjJNT_SLIDE)):
                chain.append(mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_JOINT, j))
        b = int(model.body_parentid[b])
    return [name for name in chain if name and (driven is None or name in driven)]


def posed_qpos(model: mujoco.MjModel, pose: dict[str, float]) -> np.ndarray:
    """The model's qpos0 with each joint of `pose` (a name -> its value) set."""
    qpos = model.qpos0.copy()
    for name, value in pose.items():
        qpos[model.joint(name).qposadr[0]] = value
    return qpos


def leg_chains(model: mujoco.MjModel, base: int, feet, joints: list[str]) -> list[tuple[int, np.ndarray, list[str]]]:
    """Each foot (legs.Foot) that hangs on joints of `joints`: its body, its contact point in the body's
    frame and its leg's joints, hip first (a foot the model leaves unnamed: by a geom of it)."""
    legs = []
    for foot in feet:
        body = int(model.geom(foot.geom).bodyid[0]) if foot.geom else model.body(foot.body).id
        chain = chain_joints(model, body, base, joints)[::-1]
        if chain:
            legs.append((body, np.array(foot.point), chain))
    return legs


def leg_joints(model: mujoco.MjModel, legs: list[tuple[int, np.ndarray, list[str]]], ranges: dict[str, tuple[float, float]],
               margin: float) -> tuple[list[str], np.ndarray, np.ndarray, np.ndarray, np.ndarray]:  # fmt: skip
    """The joints of `legs` (leg_chains) a stance moves: their names (sorted), dof and qpos addresses,
    and the bounds each stays inside, `margin` of its range in from its limits (`ranges`; +-pi
    where it has none)."""
    names = sorted({name for *_, chain in legs for name in chain})
    joints = [model.joint(name) for name in names]
    lo = np.array([ranges.get(name, (-np.pi, np.pi))[0] for name in names])
    hi = np.array([ranges.get(name, (-np.pi, np.pi))[1] for name in names])
    return (names, np.array([int(j.dofadr[0]) for j in joints]), np.array([int(j.qposadr[0]) for j in joints]),
            lo + margin * (hi - lo), hi - margin * (hi - lo))  # fmt: skip


def separate_legs(legs: list[tuple[int, np.ndarray, list[str]]]) -> bool:
    """No joint between the base and one foot moves another (legs, not a hand's fingers)."""
    chains = [set(chain) for *_, chain in legs]
    return not any(a & b for i, a in enumerate(chains) for b in chains[i + 1:])


def foot_position(data: mujoco.MjData, body: int, point: np.ndarray) -> np.ndarray:
    """A point given in a body's frame, in the world [m]."""
    return data.xpos[body] + data.xmat[body].reshape(3, 3) @ point
