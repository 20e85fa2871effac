"""The pose template's orientation target: the arm must turn its end effector in all three axes
while placing it (its joints' Jacobian has rank 6), the end effector's orientation sensor (a
framequat in the base frame: the model's, or one robot.py adds), and the commanded roll, pitch and
yaw, drawn within ORIENTATION_SPREAD of the end effector's orientation in the default pose. The
position targets are then taken where the end effector goes, with every joint within JOINT_SPREAD
of the default pose, while it keeps about that orientation: the two targets can be met together,
in the part of the workspace the default pose faces (the arm's whole reach, all round its base,
holds targets a tool at a fixed orientation cannot reach: measured in docs/benchmarks.md)."""

from __future__ import annotations

import re

import mujoco
import numpy as np

from robolearn.errors import UserError
from robolearn.scaffold.inspect_model import ModelInfo
from robolearn.scaffold.plan import RobotPlan, const, quoted, unique
from robolearn.scaffold.tool import Tool

ORIENTATION_SPREAD = 0.4
"""The commanded roll, pitch and yaw: the default pose's, +- this [rad]."""
NEAR = 0.5
"""Sampled configurations whose end-effector orientation is within this angle [rad] of the default
pose's give the position targets' ranges."""
JOINT_SPREAD = 0.8
"""The position targets' configurations: each joint within this [rad, or m for a slide] of its
value in the default pose (and within its limits)."""
SAMPLES = 20000
"""Random joint configurations sampled for the position targets."""
MIN_NEAR = 50
"""Fewer samples within NEAR than this: the position targets are the reach template's."""
GIMBAL_MARGIN = 0.3
"""A default pitch within this [rad] of +-pi/2 gets a warning: there roll and yaw turn the end
effector about nearly one axis, and the targets' per-angle ranges barely turn it about a third."""


def euler_from_matrix(rot: np.ndarray) -> tuple[float, float, float]:
    """Roll, pitch, yaw of a rotation matrix, composed as `command_quat` composes them (yaw about z,
    then pitch about y, then roll about x: R = Rz(yaw) Ry(pitch) Rx(roll)); pitch in [-pi/2, pi/2],
    roll and yaw in (-pi, pi]."""
    pitch = float(np.arcsin(np.clip(-rot[2, 0], -1.0, 1.0))) + 0.0  # + 0.0: no -0.0
    if abs(rot[2, 0]) > 1 - 1e-9:  # pitch +-pi/2: roll and yaw turn about one axis; all of it in yaw
        roll, yaw = 0.0, float(np.arctan2(-rot[0, 1], rot[1, 1]))
    else:
        roll, yaw = float(np.arctan2(rot[2, 1], rot[2, 2])), float(np.arctan2(rot[1, 0], rot[0, 0]))
    half_turn = lambda a: np.pi if a <= -np.pi + 1e-9 else a  # noqa: E731  (-pi from a -0.0 entry: the same turn)
    return half_turn(roll), pitch, half_turn(yaw)


def plan_orientation(plan: RobotPlan, info: ModelInfo, model: mujoco.MjModel, tool: Tool, joints: list[str],
                     site: str, sensors: set[str]) -> np.ndarray | None:  # fmt: skip
    """Fill the plan's orientation target (sensor, ranges, report lines) for the end effector at
    `site`; returns the sampled positions the position targets are to be taken from (None: the
    reach template's)."""
    rank = tool.rank(info, model, joints)
    if rank < 6:
        raise UserError(f"{info.path.name}: the joints the policy drives move the end effector (site {site}) in {rank} "
                        f"independent directions relative to {plan.base}; a pose (position and orientation) needs 6: "
                        "use --template reach (position only), or give the arm more joints")  # fmt: skip
    data = mujoco.MjData(model)
    data.qpos[:] = info.stance_qpos
    mujoco.mj_kinematics(model, data)
    home = tool.pose(data)[1]
    centre = euler_from_matrix(home)
    plan.orientation = [(c - ORIENTATION_SPREAD, c + ORIENTATION_SPREAD) for c in centre]
    _plan_sensor(plan, model, tool, site, sensors)
    positions, rotations = tool.samples(info, model, joints, SAMPLES, around=np.asarray(info.stance_qpos), spread=JOINT_SPREAD)
    angle = np.arccos(np.clip((np.einsum("ij,kij->k", home, rotations) - 1.0) / 2.0, -1.0, 1.0))
    near = angle < NEAR
    shown = ", ".join(f"{name} {round(value, 2) + 0.0:.2f}" for name, value in zip(("roll", "pitch", "yaw"), centre))
    plan.lines.append(f"orientation targets: the end effector's orientation in the default pose ({shown} rad in the "
                      f"frame of {plan.base}) +- {ORIENTATION_SPREAD} rad each")  # fmt: skip
    _doubt_gimbal(plan, model, tool, site, centre[1], home)
    if near.sum() < MIN_NEAR:
        plan.lines.append(f"position targets: the reach template's (only {int(near.sum())} of {len(angle)} random "
                          f"configurations near the default pose keep the end effector within {NEAR} rad of that "
                          "orientation)")  # fmt: skip
        return None
    plan.lines.append(f"position targets: where the end effector goes with every joint within {JOINT_SPREAD} of the "
                      f"default pose while it stays within {NEAR} rad of that orientation ({int(near.sum())} of "
                      f"{len(angle)} random configurations)")  # fmt: skip
    return positions[near]


def _doubt_gimbal(plan: RobotPlan, model: mujoco.MjModel, tool: Tool, site: str, pitch: float, home: np.ndarray) -> None:
    """A warning where the default pitch is near +-pi/2 (gimbal lock: roll and yaw turn the tool about
    one axis, so the per-angle ranges spread it over about two axes), with the site turn that fixes
    it: the site's frame turned so that the default orientation is roll, pitch, yaw 0."""
    if abs(abs(pitch) - np.pi / 2) > GIMBAL_MARGIN:
        return
    home_quat, turn = np.zeros(4), np.zeros(4)
    mujoco.mju_mat2Quat(home_quat, np.ascontiguousarray(home).reshape(9))
    mujoco.mju_negQuat(home_quat, home_quat)
    mujoco.mju_mulQuat(turn, np.asarray(tool.frame, dtype=float), home_quat)
    turn *= 1.0 if turn[0] >= 0 else -1.0
    quat = " ".join(f"{round(float(v), 4) + 0.0:g}" for v in turn)
    body = mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_BODY, tool.body) or f"#{tool.body}"
    if mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_SITE, site) >= 0:
        fix = f'give site {site} quat="{quat}"'
    else:  # robot.py adds the site: the model gets one of its own, which new-task then takes
        point = " ".join(f"{round(float(v), 4) + 0.0:g}" for v in tool.point)
        fix = f'add <site name="{site}" pos="{point}" quat="{quat}"/> to body {body}'
    plan.lines.append(f"WARNING: the end effector's default pitch ({pitch:.2f} rad) is within {GIMBAL_MARGIN} rad of "
                      "+-pi/2, where roll and yaw turn it about nearly one axis (gimbal lock): the +- "
                      f"{ORIENTATION_SPREAD} rad ranges barely turn it about a third axis; {fix} (its frame then has "
                      "roll, pitch, yaw 0 in the default pose) and run new-task again")  # fmt: skip


def _plan_sensor(plan: RobotPlan, model: mujoco.MjModel, tool: Tool, site: str, sensors: set[str]) -> None:
    """The model's framequat sensor of `site` in the base frame, or one robot.py adds."""
    site_id = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_SITE, site)  # -1: robot.py adds the site
    for s in range(model.nsensor):
        if int(model.sensor_type[s]) != int(mujoco.mjtSensor.mjSENS_FRAMEQUAT) or site_id < 0:
            continue
        if int(model.sensor_objtype[s]) != int(mujoco.mjtObj.mjOBJ_SITE) or int(model.sensor_objid[s]) != site_id:
            continue
        reftype, refid = int(model.sensor_reftype[s]), int(model.sensor_refid[s])
        in_base = (reftype == int(mujoco.mjtObj.mjOBJ_XBODY) and refid == tool.ref) or (reftype <= 0 and tool.ref == 0)
        name = mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_SENSOR, s)
        if in_base and name:
            plan.ee_quat_sensor = name
            plan.lines.append(f"end-effector orientation: sensor {name} (orientation of site {site} in the frame of {plan.base})")
            return
    plan.ee_quat_sensor = unique("ee_quat", sensors)
    plan.steps.append("add_ee_quat_sensor")
    defined = "\n".join(plan.constants)
    missing = [(n, v) for n, v in (("EE_SITE", site), ("BASE", plan.base)) if not re.search(rf"^{n} =", defined, re.M)]
    text = "".join(f"{n} = {quoted(v)}\n" for n, v in missing)
    plan.constants.append(text + const("EE_QUAT_SENSOR", quoted(plan.ee_quat_sensor), "The end effector's orientation "
                                        "sensor (a framequat of site EE_SITE in BASE's frame), read by the pose terms."))  # fmt: skip
    plan.lines.append(f"end-effector orientation sensor: missing -> added framequat sensor '{plan.ee_quat_sensor}' of "
                      f"site '{site}' in the frame of {plan.base}")  # fmt: skip
