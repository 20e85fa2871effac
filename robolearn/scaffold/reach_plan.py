"""The reach and pose templates' plan: the end effector (the model's position sensor, or the end of
the longest joint chain), the frame its targets are in, and the targets' ranges (where the joints
the policy drives take it). The pose template adds an orientation target: the end effector's
orientation sensor, and ranges around its orientation in the default pose (pose_plan.py)."""

from __future__ import annotations

import mujoco
import numpy as np

from robolearn.errors import UserError
from robolearn.scaffold.inspect_model import ModelInfo
from robolearn.scaffold.model_query import chain_joints
from robolearn.scaffold.plan import RobotPlan, const, quoted, tuple_text, unique
from robolearn.scaffold.pose_plan import JOINT_SPREAD, NEAR, plan_orientation
from robolearn.scaffold.tool import Tool
from robolearn.scene.ground import ground_height

REACH_SPREAD = 1.2
"""Position targets: where the end effector goes with every joint the policy drives within this
[rad; m for a slide] of its value in the default pose (and within its limits). The arm's whole
reach, all round its base, was a box 3 times larger on the built-in arm, much of it behind or
beside the base; 500 iterations ended 39 mm from its targets against 9 mm from these
(docs/benchmarks.md, "Reach targets near the default pose")."""


def plan_reach(plan: RobotPlan, info: ModelInfo, model: mujoco.MjModel, sites: set[str], sensors: set[str],
               orientation: bool = False) -> None:
    """The reach plan; with `orientation` (the pose template) the orientation target's too."""
    plan.base = info.root
    own = [name for name in info.root_joints if name in plan.tracked]  # the arm's first joints: on its root body
    if not info.base and (info.root == "" or own):  # targets in the world's frame
        plan.base = "world"
        why = "has no name" if info.root == "" else f"turns or slides on joints the policy drives ({', '.join(own)})"
        plan.lines.append(f"the arm's root body {why}: its end-effector targets are in the world's frame")
    if info.ee_sensor:
        s = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_SENSOR, info.ee_sensor)
        site = int(model.sensor_objid[s])
        plan.ee_sensor = info.ee_sensor
        body, point, frame = int(model.site_bodyid[site]), model.site_pos[site], model.site_quat[site]
        site_name = mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_SITE, site)
        ref = int(model.sensor_refid[s]) if int(model.sensor_reftype[s]) in (int(mujoco.mjtObj.mjOBJ_XBODY),
                                                                             int(mujoco.mjtObj.mjOBJ_BODY)) else 0  # fmt: skip
        plan.base = mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_BODY, ref) or "world"
        plan.lines.append(f"end effector: sensor {info.ee_sensor} (position of site {site_name} in the frame of {plan.base})")
    elif info.tip is None or plan.base is None:
        raise UserError(f"{info.path.name}: no end effector found (no body below a joint chain); the reach template needs an arm")
    else:
        body = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, info.tip)
        ref = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, plan.base)
        plan.constants.append(const("BASE", quoted(plan.base), "The arm's base body: the frame of the end-effector position "
                                     "and of its target."))  # fmt: skip
        if info.tip_site:
            site = info.tip_site
            point, frame = model.site(site).pos, model.site(site).quat
            why = "its name says so" if info.tip_named else "guessed: the end of the longest joint chain"
            plan.lines.append(f"end effector ({why}): site {site} on body {info.tip}")
        else:
            site, point, frame = unique("ee", sites), np.array(info.tip_point), np.array([1.0, 0.0, 0.0, 0.0])
            plan.steps.append("add_ee_site")
            why = ("its name says so" if info.tip_named else
                   f"guessed: the hand of the gripper that ends the longest joint chain, fingers {', '.join(info.tip_fingers)}"
                   if info.tip_fingers else "guessed: the end of the longest joint chain")  # fmt: skip
            where = ("the middle of its fingers' tips" if info.tip_fingers else "its origin" if not np.any(point) else
                     "its geometry's point farthest from the arm's base")  # fmt: skip
            plan.constants.append(const("EE_BODY", quoted(info.tip), f"The end effector's body (new-task: {why})."))
            plan.constants.append(const("EE_POINT", tuple_text(point), "The end effector's point in EE_BODY's frame [m] "
                                         f"(new-task's guess: {where})."))  # fmt: skip
            plan.lines.append(f"end effector ({why}): body {info.tip} -> added site '{site}' at {tuple_text(point)} "
                              "in its frame")  # fmt: skip
        if info.ee_sensor_skipped:
            plan.lines.append(f"{info.ee_sensor_skipped}: not taken for the end effector's position")
        plan.ee_sensor = unique("ee_pos", sensors)
        plan.steps.append("add_ee_sensor")
        plan.constants.append(f"EE_SITE = {quoted(site)}\n" + const("EE_SENSOR", quoted(plan.ee_sensor), "The end effector's "
                              "site and its position sensor (a framepos in BASE's frame), read by the reach terms."))  # fmt: skip
        plan.lines.append(f"end-effector position sensor: {'none usable' if info.ee_sensor_skipped else 'missing'} -> added "
                          f"framepos sensor '{plan.ee_sensor}' of site "
                          f"'{site}' in the frame of {plan.base}")  # fmt: skip
        site_name = site
    tool = Tool(body, np.asarray(point, dtype=float), np.asarray(frame, dtype=float), ref)
    joints = chain_joints(model, body, ref, plan.joints if plan.joint_actuators else None)
    positions, _ = tool.samples(info, model, joints, around=np.asarray(info.stance_qpos), spread=REACH_SPREAD)
    plan.workspace = _workspace(model, ref, positions)
    plan.workspace_note = f"middle 80 % of where it goes with every joint within {REACH_SPREAD} rad of the default pose"
    moving = sum(high - low >= 0.01 for low, high in plan.workspace)
    if moving < 2:  # a point, or a line (a gripper's slide): not an arm's reach
        what = f"sensor {plan.ee_sensor}'s site" if info.ee_sensor else f"body {mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_BODY, body)}"
        how = "does not move" if moving == 0 else "moves along one line only"
        raise UserError(f"{info.path.name}: the end effector ({what}) {how} relative to {plan.base} with the joints "
                        f"the policy drives; the {'pose' if orientation else 'reach'} template needs actuators that move "
                        "it (add them, or use --template minimal)")  # fmt: skip
    if not orientation:
        plan.lines.append(f"position targets: where the end effector goes with every joint within {REACH_SPREAD} rad "
                          "(m for a slide) of the default pose, the middle 80 % per axis")  # fmt: skip
    else:
        near = plan_orientation(plan, info, model, tool, joints, site_name, sensors)
        if near is not None:
            plan.workspace = _workspace(model, ref, near)
            plan.workspace_note = (f"middle 80 % of where it goes with every joint within {JOINT_SPREAD} rad of the default "
                                   f"pose and the tool within {NEAR} rad of its orientation there")  # fmt: skip


def _workspace(model: mujoco.MjModel, ref: int, positions: np.ndarray) -> list[tuple[float, float]]:
    """[low, high] per axis of the end effector's sampled positions in body `ref`'s frame: the middle
    80 % of each axis (targets the arm can reach)."""
    low, high = np.percentile(positions, 10, axis=0), np.percentile(positions, 90, axis=0)
    data = mujoco.MjData(model)
    mujoco.mj_kinematics(model, data)
    ground = ground_height(model, data)
    if ground is not None:  # targets at least 5 cm above the ground, where the arm reaches that high
        ref_height = float(data.xpos[ref, 2])  # where the base stands in the model's own pose
        low[2] = min(max(low[2], ground + 0.05 - ref_height), high[2])
    return [(round(float(lo), 2) + 0.0, round(float(hi), 2) + 0.0) for lo, hi in zip(low, high)]
