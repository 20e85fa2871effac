"""Worked example for docs/authoring.md: a bare legged MJCF made trainable by an MjSpec edit.

bare_legged.xml has bodies, geoms and hinge joints only. A legged task needs more, and `edit_spec`
below adds it before the model compiles (the exported bundle carries the edited model):

- a floating base (a free joint on the torso) and a floor to stand on;
- joint limits and one position servo per joint (gains, torque limits, ctrl range = joint range);
- an IMU site on the torso with gyro, accelerometer and orientation (framequat) sensors;
- a touch sensor per foot (and one on the torso, to end an episode on a fall);
- a `home` keyframe: where episodes start, the action offset, the reference of relative joint obs.

Each addition is skipped when the model already has it, so the same edit serves a richer MJCF.
tests/test_term_catalog.py builds and steps the task below, so this example is known to work.
"""

from __future__ import annotations

from pathlib import Path

import mujoco

from robolearn.registry import TaskPlugin

# --- robot constants: the one place they live (one module per robot) ------------------------------
LEGS = ("FL", "FR", "RL", "RR")
JOINTS = tuple(f"{leg}_{part}" for leg in LEGS for part in ("hip", "knee"))
"""Joint order of the actions and the joint observations (the MJCF's body order)."""
JOINT_RANGE = {"hip": (-1.2, 1.2), "knee": (-2.4, -0.2)}
"""Joint limits [rad]."""
DEFAULT_POSE = {"hip": 0.6, "knee": -1.2}
"""Standing pose [rad]: the feet end up about 0.25 m below the hips."""
BASE_HEIGHT = 0.29
"""Torso height [m] in the standing pose (feet on the floor, plus a few mm of drop)."""
KP, KD, EFFORT = 20.0, 0.5, 12.0
"""Servo stiffness [N m / rad], damping [N m s / rad] and torque limit [N m]."""
FOOT_OFFSET = (0.0, 0.0, -0.15)
"""Where each foot sphere sits in its calf body."""


def _part(joint: str) -> str:
    return joint.split("_")[1]


def _add_sensor(spec: mujoco.MjSpec, name: str, kind: mujoco.mjtSensor, site: str) -> None:
    if spec.sensor(name) is None:
        spec.add_sensor(name=name, type=kind, objtype=mujoco.mjtObj.mjOBJ_SITE, objname=site)


def edit_spec(spec: mujoco.MjSpec) -> None:
    """Add what bare_legged.xml lacks (see the module docstring)."""
    torso = spec.body("torso")
    if torso.first_joint() is None:  # welded to the world: give it six degrees of freedom
        torso.add_freejoint(name="root")
    if spec.geom("floor") is None:  # a task's terrain: section would replace this plane
        spec.worldbody.add_geom(name="floor", type=mujoco.mjtGeom.mjGEOM_PLANE, size=[0, 0, 0.05],
                                contype=1, conaffinity=0)  # fmt: skip

    for joint in JOINTS:
        low, high = JOINT_RANGE[_part(joint)]
        spec.joint(joint).range = [low, high]
        spec.joint(joint).limited = mujoco.mjtLimited.mjLIMITED_TRUE
        if spec.actuator(joint) is None:
            servo = spec.add_actuator(name=joint, target=joint, trntype=mujoco.mjtTrn.mjTRN_JOINT)
            servo.set_to_position(kp=KP, kv=KD)  # gain KP, bias [0, -KP, -KD]: a PD servo
            servo.ctrlrange = [low, high]
            servo.ctrllimited = mujoco.mjtLimited.mjLIMITED_TRUE
            servo.forcerange = [-EFFORT, EFFORT]
            servo.forcelimited = mujoco.mjtLimited.mjLIMITED_TRUE

    if spec.site("imu") is None:
        torso.add_site(name="imu", pos=[0, 0, 0])
    _add_sensor(spec, "imu_gyro", mujoco.mjtSensor.mjSENS_GYRO, "imu")
    _add_sensor(spec, "imu_acc", mujoco.mjtSensor.mjSENS_ACCELEROMETER, "imu")
    _add_sensor(spec, "imu_quat", mujoco.mjtSensor.mjSENS_FRAMEQUAT, "imu")

    # A touch sensor sums the normal forces of contacts inside its site's volume on the site's body.
    for leg in LEGS:
        if spec.site(f"{leg}_foot_touch") is None:
            spec.body(f"{leg}_calf").add_site(name=f"{leg}_foot_touch", type=mujoco.mjtGeom.mjGEOM_SPHERE,
                                              size=[0.03, 0, 0], pos=list(FOOT_OFFSET))  # fmt: skip
        _add_sensor(spec, f"{leg}_foot_contact", mujoco.mjtSensor.mjSENS_TOUCH, f"{leg}_foot_touch")
    if spec.site("torso_touch") is None:
        torso.add_site(name="torso_touch", type=mujoco.mjtGeom.mjGEOM_BOX, size=[0.18, 0.10, 0.05])
    _add_sensor(spec, "torso_contact", mujoco.mjtSensor.mjSENS_TOUCH, "torso_touch")

    if spec.key("home") is None:
        pose = [DEFAULT_POSE[_part(j)] for j in JOINTS]
        spec.add_key(name="home", qpos=[0, 0, BASE_HEIGHT, 1, 0, 0, 0, *pose], ctrl=pose)


TASK = TaskPlugin(name="bare_legged", config=Path(__file__).with_name("bare_legged.yaml"), edit_spec=edit_spec)
"""Registered in a package's pyproject.toml as `bare_legged = "<package>.bare_legged:TASK"`."""
