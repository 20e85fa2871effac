"""The quadruped's constants: the one place joint order, default pose, gains and limits live.

`apply(spec)` writes them into the MJCF (assets/quadruped.xml) before it is compiled, so the
simulation, the task and the exported bundle (whose robot.yaml is read from the compiled model)
all see these numbers and no others. Values follow the Unitree Go2 class of robot.
"""

from __future__ import annotations

import mujoco

LEGS = ("FL", "FR", "RL", "RR")
"""Front-left, front-right, rear-left, rear-right: the order of everything per leg below."""
PARTS = ("hip", "thigh", "calf")
JOINTS = tuple(f"{leg}_{part}_joint" for leg in LEGS for part in PARTS)
"""Joint order of the policy's actions and of the joint observations."""
ACTUATORS = tuple(f"{leg}_{part}" for leg in LEGS for part in PARTS)
FEET = tuple(f"{leg}_foot" for leg in LEGS)

BASE_HEIGHT = 0.34
"""Trunk height [m] in the default pose with the feet on flat ground (plus a few mm of drop)."""
DEFAULT_POSE = {
    **{f"{leg}_hip_joint": (0.1 if leg in ("FL", "RL") else -0.1) for leg in LEGS},
    **{f"{leg}_thigh_joint": (0.8 if leg in ("FL", "FR") else 1.0) for leg in LEGS},
    **{f"{leg}_calf_joint": -1.5 for leg in LEGS},
}
"""Standing pose [rad]: the action offset, the reset pose and the reference of relative joint observations."""

KP = 25.0
"""Position gain of every joint servo [N m / rad]."""
KD = 0.5
"""Damping gain of every joint servo [N m s / rad]."""
EFFORT_LIMIT = {"hip": 23.7, "thigh": 23.7, "calf": 45.4}
"""Peak joint torque [N m] per joint kind."""
JOINT_RANGE = {
    "hip": (-1.047, 1.047),
    "front_thigh": (-1.571, 3.491),
    "rear_thigh": (-0.524, 4.538),
    "calf": (-2.723, -0.838),
}
"""Joint limits [rad]."""


def joint_range(joint: str) -> tuple[float, float]:
    leg, part = joint.split("_")[:2]
    if part == "thigh":
        return JOINT_RANGE["front_thigh" if leg in ("FL", "FR") else "rear_thigh"]
    return JOINT_RANGE[part]


def apply(spec: mujoco.MjSpec) -> None:
    """Write limits, servo gains, torque limits and the `home` keyframe into the model spec."""
    for name in JOINTS:
        joint = spec.joint(name)
        joint.range = joint_range(name)
        joint.limited = mujoco.mjtLimited.mjLIMITED_TRUE
    for name, joint in zip(ACTUATORS, JOINTS):
        act = spec.actuator(name)
        limit = EFFORT_LIMIT[name.split("_")[1]]
        act.gainprm[0] = KP
        act.biasprm[:3] = [0.0, -KP, -KD]
        act.forcerange = [-limit, limit]
        act.forcelimited = mujoco.mjtLimited.mjLIMITED_TRUE
        act.ctrlrange = joint_range(joint)
        act.ctrllimited = mujoco.mjtLimited.mjLIMITED_TRUE
    base = [0.0, 0.0, BASE_HEIGHT, 1.0, 0.0, 0.0, 0.0]
    spec.add_key(name="home", qpos=base + [DEFAULT_POSE[j] for j in JOINTS], ctrl=[DEFAULT_POSE[j] for j in JOINTS])
