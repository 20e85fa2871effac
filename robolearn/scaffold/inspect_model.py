"""What `robolearn new-task --robot` reads from a robot model: its 1-DoF joints and actuators (the
robot's, apart from objects' and targets'), the floating base, the `home` keyframe, the floor, an
arm's tip (end_effector.py) and, through legs.py, a planar base, the IMU and the feet with their contact sensors.
Read from the compiled MjModel (names, kinematics at the model's default and standing poses);
`robot_edits.py` turns what is missing into a spec edit the generated task applies.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import mujoco
import numpy as np

from robolearn.errors import UserError
from robolearn_deploy.actuator_kinds import servo_bias
from robolearn.scaffold.end_effector import end_effector
from robolearn.scaffold.legs import BaseJoint, Foot, feet, imu_body, imu_site, planar_base
from robolearn.scaffold.model_query import ONE_DOF, driven_joints, home_value, obj_name
from robolearn.scene.floating_base import floating_base_joint
from robolearn.scene.geometry import body_children, collision_geoms, geom_corners, subtree
from robolearn.scene.ground import has_ground


@dataclass(frozen=True)
class Joint:
    name: str
    slide: bool
    range: tuple[float, float] | None
    """Joint limits, None where the joint is not limited."""
    effort: float | None
    """The joint's actuator force limit (a URDF's `effort`), None where it has none."""


@dataclass(frozen=True)
class Actuator:
    name: str
    joint: str | None
    """The hinge or slide joint it drives, None for a ball joint or a tendon, site or body transmission."""
    kind: str
    """position, motor or other (what an exported bundle can carry: position servos and motors)."""
    ctrlrange: tuple[float, float] | None = None
    """Its control range where the model limits it (a muscle's is [0, 1])."""
    gear: float = 1.0
    """Its transmission's gear (the joint's torque is gear x the actuator's force)."""
    damping: float = 0.0
    """Its velocity feedback: -biasprm[2] of an affine bias (a position servo's or a velocity servo's
    kv), 0 where its force does not fall with the joint's velocity."""


@dataclass
class ModelInfo:
    path: Path
    urdf: bool
    joints: list[Joint] = field(default_factory=list)
    """The robot's hinge/slide joints (objects' joints left out: `object_joints`)."""
    ball_joints: list[str] = field(default_factory=list)
    """The robot's ball joints (no generic joint term reads one: the templates leave them out)."""
    object_joints: list[str] = field(default_factory=list)
    """Hinge/slide joints of body trees no actuator acts on when the model has actuators (a goal
    marker's slides, an object to push), else of the trees beside the robot's: not the robot's."""
    actuators: list[Actuator] = field(default_factory=list)
    base: str | None = None
    """The body of the free joint (the floating base), None for a fixed-base model."""
    loose: str | None = None
    """A free body that carries no joint and no actuator (an object to push or pick): not the base."""
    coupled: dict[str, str | None] = field(default_factory=dict)
    """Robot joints an active joint equality makes follow another (a URDF <mimic>: the joint it
    follows) or holds still (None): nothing of theirs for a policy to drive."""
    mocap_welds: list[tuple[str, str, str, str]] = field(default_factory=list)
    """Active weld/connect constraints between a mocap body and the robot: (the constraint's two
    bodies or sites as the MJCF names them, the mocap body, the robot's body)."""
    root: str | None = None
    """The top body of the robot's tree (the floating base, or where one would go)."""
    root_joints: list[str] = field(default_factory=list)
    """Joints of the root body itself when it has no free joint (a planar base's, or a fixed-base
    arm's first joint)."""
    planar: list[BaseJoint] = field(default_factory=list)
    """The root body's joints no actuator drives when they include a horizontal slide (a planar
    robot), else empty."""
    imu_site: str | None = None
    """A site of the base (or of a body fixed to it) carrying a gyro, accelerometer or framequat sensor."""
    imu_body: str | None = None
    """Where an added IMU goes: the base, or a body fixed to it named like an IMU (a URDF's imu_link)."""
    feet: list[Foot] = field(default_factory=list)
    has_home: bool = False
    pose_key: str | None = None
    """The keyframe new-task's standing pose is read from: `home`, else one whose name says it stands
    (STANDING_KEYS: Menagerie's Apollo and older G1 name theirs `stand`) or the model's only one; None
    where new-task guesses the pose."""
    has_floor: bool = False
    has_light: bool = False
    mass: float = 0.0
    timestep: float = 0.002
    lowest: float = 0.0
    """World height of the robot's lowest point in its stance (stance_qpos) [m]."""
    stance_qpos: list[float] = field(default_factory=list)
    """The pose new-task stands the robot in, where the feet are looked for: the `home` keyframe,
    else qpos0 with each joint the robot drives at 0 within its limits (the pose the generated home
    keyframe takes)."""
    base_clearance: float = 0.0
    """How far the base body's origin is above the robot's lowest point in its stance [m]."""
    size: float = 0.0
    """The largest extent of the robot's collision geometry in its stance [m]."""
    qpos0: list[float] = field(default_factory=list)
    free_qpos: int | None = None
    """qpos address of the free joint."""
    tip: str | None = None
    """The end of the longest joint chain (an arm's end effector body)."""
    tip_point: tuple[float, float, float] = (0.0, 0.0, 0.0)
    """The point of the tip's geometry farthest from the chain's root, in the tip body's frame."""
    tip_site: str | None = None
    """A site on the tip body (the end effector's, if the model marks one)."""
    tip_named: bool = False
    """The end effector is a site or a fixed link whose name says so (end_effector.py), not the longest chain's tip."""
    given_names: set[str] = field(default_factory=set)
    """Names new-task gave actuators the model leaves unnamed (robot_edits.py); the user's file has none."""
    tip_fingers: tuple[str, ...] = ()
    """Where the longest chain ends in a gripper, its fingers (`tip` is the hand, `tip_point` the middle of their tips)."""
    ee_sensor: str | None = None
    """A framepos sensor of a site (an end-effector position sensor), None if there is none."""
    ee_sensor_skipped: str | None = None
    """A framepos sensor of a site on the robot not taken for ee_sensor, and why (its frame)."""

    @property
    def position_only(self) -> bool:
        return bool(self.actuators) and all(a.kind == "position" for a in self.actuators)


def actuator_kind(model: mujoco.MjModel, a: int) -> str:
    if int(model.actuator_dyntype[a]) != int(mujoco.mjtDyn.mjDYN_NONE):
        return "other"
    if int(model.actuator_gaintype[a]) != int(mujoco.mjtGain.mjGAIN_FIXED):
        return "other"
    if int(model.actuator_biastype[a]) == int(mujoco.mjtBias.mjBIAS_NONE):
        return "motor"
    if servo_bias(model, a):
        return "position"
    return "other"


def _actuator_damping(model: mujoco.MjModel, a: int) -> float:
    """An actuator's velocity feedback (kv: its force's fall per unit of joint velocity), 0 for none."""
    if int(model.actuator_biastype[a]) != int(mujoco.mjtBias.mjBIAS_AFFINE):
        return 0.0
    return max(0.0, -float(model.actuator_biasprm[a, 2]))


def _mocap_welds(model: mujoco.MjModel, robot: set[int]) -> list[tuple[str, str, str, str]]:
    """Active weld and connect constraints that tie a body of `robot` to a mocap body (what
    gymnasium-robotics' Fetch and hands are moved by: a controller writes the mocap pose)."""
    body, site = int(mujoco.mjtObj.mjOBJ_BODY), int(mujoco.mjtObj.mjOBJ_SITE)
    found = []
    for e in range(model.neq):
        if not model.eq_active0[e] or int(model.eq_type[e]) not in (int(mujoco.mjtEq.mjEQ_WELD), int(mujoco.mjtEq.mjEQ_CONNECT)):
            continue
        ids, kind = (int(model.eq_obj1id[e]), int(model.eq_obj2id[e])), int(model.eq_objtype[e])
        if kind == site:
            bodies, names = [int(model.site_bodyid[i]) for i in ids], [obj_name(model, mujoco.mjtObj.mjOBJ_SITE, i) for i in ids]
        elif kind in (body, int(mujoco.mjtObj.mjOBJ_XBODY)):
            bodies, names = list(ids), [obj_name(model, mujoco.mjtObj.mjOBJ_BODY, i) for i in ids]
        else:
            continue
        mocap = [b for b in bodies if model.body_mocapid[b] >= 0]
        held = [b for b in bodies if b in robot]
        if mocap and held:
            found.append((names[0], names[1], obj_name(model, mujoco.mjtObj.mjOBJ_BODY, mocap[0]),
                          obj_name(model, mujoco.mjtObj.mjOBJ_BODY, held[0])))  # fmt: skip
    return found


def _carries_robot(model: mujoco.MjModel, body: int, children: dict[int, list[int]]) -> bool:
    """Whether the free body `body` is a robot's base: a joint below it besides its own free joint,
    or an actuator acting on it or a body below it (a drone's thrusters on sites)."""
    below = set(subtree(children, body))
    if sum(int(model.body_jntnum[b]) for b in below) > 1:
        return True
    for a in range(model.nu):
        kind, target = int(model.actuator_trntype[a]), int(model.actuator_trnid[a, 0])
        if kind == int(mujoco.mjtTrn.mjTRN_BODY) and target in below:
            return True
        if kind in (int(mujoco.mjtTrn.mjTRN_SITE), int(mujoco.mjtTrn.mjTRN_SLIDERCRANK)) and int(model.site_bodyid[target]) in below:
            return True
        if kind == int(mujoco.mjtTrn.mjTRN_JOINT) and int(model.jnt_bodyid[target]) in below:
            return True
    return False


def inspect_model(path: Path, model: mujoco.MjModel, urdf: bool = False) -> ModelInfo:
    """What the compiled `model` (of file `path`) has; joints without names are refused (a task
    names what it drives)."""
    info = ModelInfo(path=path, urdf=urdf, timestep=float(model.opt.timestep), qpos0=[float(v) for v in model.qpos0])
    for a in range(model.nu):
        joint = None
        target = int(model.actuator_trnid[a, 0])
        if int(model.actuator_trntype[a]) == int(mujoco.mjtTrn.mjTRN_JOINT) and int(model.jnt_type[target]) in ONE_DOF:
            joint = obj_name(model, mujoco.mjtObj.mjOBJ_JOINT, target)
        ctrlrange = tuple(float(v) for v in model.actuator_ctrlrange[a]) if model.actuator_ctrllimited[a] else None
        info.actuators.append(Actuator(obj_name(model, mujoco.mjtObj.mjOBJ_ACTUATOR, a), joint, actuator_kind(model, a),
                                       ctrlrange, float(model.actuator_gear[a, 0]), _actuator_damping(model, a)))  # fmt: skip

    children = body_children(model)
    free = floating_base_joint(model)
    if free is not None and not _carries_robot(model, int(model.jnt_bodyid[free]), children):
        info.loose = obj_name(model, mujoco.mjtObj.mjOBJ_BODY, int(model.jnt_bodyid[free])) or f"#{model.jnt_bodyid[free]}"
        free = None  # the robot is the largest tree under the world instead
    if free is not None:
        base = int(model.jnt_bodyid[free])
        info.base = obj_name(model, mujoco.mjtObj.mjOBJ_BODY, base)
        info.free_qpos = int(model.jnt_qposadr[free])
    else:  # the tree under the world with the most actuated joints (a kitchen's cabinets have none), then the largest
        driven = {int(model.jnt_bodyid[j]) for j in driven_joints(model)}
        base = max(children[0], key=lambda b: (len(driven & set(subtree(children, b))), len(subtree(children, b))), default=0)
    info.root = obj_name(model, mujoco.mjtObj.mjOBJ_BODY, base) if base else None
    robot = sorted(subtree(children, base)) if base else []
    trees = _acted_trees(model) if model.nu else {int(model.body_rootid[base])} if base else set()
    _joints(info, model, trees)
    info.coupled = _coupled_joints(model, {j.name for j in info.joints})
    info.mocap_welds = _mocap_welds(model, set(robot))
    info.mass = float(sum(model.body_mass[b] for b in robot))
    info.has_home = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_KEY, "home") >= 0
    info.pose_key = "home" if info.has_home else _standing_key(model)
    info.has_floor = has_ground(model)
    info.has_light = model.nlight > 0

    data = mujoco.MjData(model)
    mujoco.mj_kinematics(model, data)
    if free is None and base:
        info.root_joints, info.planar = planar_base(model, data, base)
    stance = mujoco.MjData(model)
    stance.qpos[:] = _stance_qpos(model, info, base)
    mujoco.mj_kinematics(model, stance)
    info.stance_qpos = [float(v) for v in stance.qpos]
    geoms = collision_geoms(model, robot)
    corners = {g: geom_corners(model, stance, g) for g in geoms}
    low = {g: c[:, 2].min() for g, c in corners.items()}
    info.lowest = float(min(low.values(), default=0.0))
    top = float(max((c[:, 2].max() for c in corners.values()), default=0.0))
    if corners:
        every = np.concatenate(list(corners.values()))
        info.size = float((every.max(axis=0) - every.min(axis=0)).max())
    info.base_clearance = float(stance.xpos[base, 2]) - info.lowest if base else 0.0

    info.imu_site = imu_site(model, base)
    info.imu_body = imu_body(model, base) if base else None
    near_ground = info.lowest + 0.25 * max(top - info.lowest, 1e-6)
    info.feet = feet(model, stance, base, robot, children, geoms, low, near_ground)

    for sensor in range(model.nsensor):  # an end-effector position sensor: of a site on the robot, not an object
        if int(model.sensor_type[sensor]) == int(mujoco.mjtSensor.mjSENS_FRAMEPOS) and int(model.sensor_objtype[sensor]) == int(mujoco.mjtObj.mjOBJ_SITE):
            if int(model.body_rootid[model.site_bodyid[model.sensor_objid[sensor]]]) in trees:
                unusable = _frame_unusable(model, sensor)
                if unusable:
                    info.ee_sensor_skipped = f"sensor {obj_name(model, mujoco.mjtObj.mjOBJ_SENSOR, sensor) or '#' + str(sensor)} {unusable}"
                    continue
                info.ee_sensor = obj_name(model, mujoco.mjtObj.mjOBJ_SENSOR, sensor) or None
                break
    tip = end_effector(model, data, base, robot, children, geoms)
    if tip is not None:
        info.tip, info.tip_site, info.tip_named, info.tip_fingers = tip.body, tip.site, tip.named, tip.fingers
        info.tip_point = tip.point or info.tip_point
    return info


def _frame_unusable(model: mujoco.MjModel, sensor: int) -> str | None:
    """Why a framepos sensor of a site cannot be the end effector's position (None: it can). The
    reach terms command targets in the sensor's frame, which new-task plans in a body's frame or the
    world's; a frame the end effector carries along (its own body or one below it) reads a constant."""
    kind, ref = int(model.sensor_reftype[sensor]), int(model.sensor_refid[sensor])
    if kind <= 0 or ref < 0:
        return None  # the world's frame
    name = obj_name(model, mujoco.mjtObj(kind), ref) or f"#{ref}"
    if kind not in (int(mujoco.mjtObj.mjOBJ_BODY), int(mujoco.mjtObj.mjOBJ_XBODY)):
        return f"measures in the frame of {mujoco.mjtObj(kind).name[6:].lower()} {name}, not of a body or the world"
    body = int(model.site_bodyid[model.sensor_objid[sensor]])
    while ref > 0:
        if ref == body:
            return f"measures in the frame of body {name}, which moves with the end effector (it reads a constant)"
        ref = int(model.body_parentid[ref])
    return None


def _acted_trees(model: mujoco.MjModel) -> set[int]:
    """The body trees under the world (their top bodies, body_rootid) that an actuator acts on:
    through a joint, a tendon's joints or sites, a site or a body."""
    bodies = set()
    for a in range(model.nu):
        kind, ids = int(model.actuator_trntype[a]), [int(i) for i in model.actuator_trnid[a] if i >= 0]
        if kind in (int(mujoco.mjtTrn.mjTRN_JOINT), int(mujoco.mjtTrn.mjTRN_JOINTINPARENT)):
            bodies.add(int(model.jnt_bodyid[ids[0]]))
        elif kind == int(mujoco.mjtTrn.mjTRN_TENDON):
            t = ids[0]
            for w in range(int(model.tendon_adr[t]), int(model.tendon_adr[t] + model.tendon_num[t])):
                if int(model.wrap_type[w]) == int(mujoco.mjtWrap.mjWRAP_JOINT):
                    bodies.add(int(model.jnt_bodyid[model.wrap_objid[w]]))
                elif int(model.wrap_type[w]) == int(mujoco.mjtWrap.mjWRAP_SITE):
                    bodies.add(int(model.site_bodyid[model.wrap_objid[w]]))
        elif kind in (int(mujoco.mjtTrn.mjTRN_SITE), int(mujoco.mjtTrn.mjTRN_SLIDERCRANK)):
            bodies.update(int(model.site_bodyid[i]) for i in ids)
        elif kind == int(mujoco.mjtTrn.mjTRN_BODY):
            bodies.add(ids[0])
    return {int(model.body_rootid[b]) for b in bodies} - {0}


def _joints(info: ModelInfo, model: mujoco.MjModel, trees: set[int]) -> None:
    """info.joints: the hinge/slide joints of the robot's body `trees`; the others' are object joints
    (info.ball_joints: the ball joints of those trees)."""
    for j in range(model.njnt):
        if int(model.jnt_type[j]) == int(mujoco.mjtJoint.mjJNT_BALL) and int(model.body_rootid[model.jnt_bodyid[j]]) in trees:
            body = obj_name(model, mujoco.mjtObj.mjOBJ_BODY, int(model.jnt_bodyid[j])) or f"#{model.jnt_bodyid[j]}"
            info.ball_joints.append(obj_name(model, mujoco.mjtObj.mjOBJ_JOINT, j) or f"<unnamed, of body {body}>")
        if int(model.jnt_type[j]) not in ONE_DOF:
            continue
        name = obj_name(model, mujoco.mjtObj.mjOBJ_JOINT, j)
        if int(model.body_rootid[model.jnt_bodyid[j]]) not in trees:
            if name:
                info.object_joints.append(name)
            continue
        if not name:
            body = obj_name(model, mujoco.mjtObj.mjOBJ_BODY, int(model.jnt_bodyid[j])) or f"#{model.jnt_bodyid[j]}"
            raise UserError(f"{info.path.name}: joint {j} (in body {body}) has no name; name every joint the task is to drive")
        limited = bool(model.jnt_limited[j])
        effort = float(np.abs(model.jnt_actfrcrange[j]).max()) if model.jnt_actfrclimited[j] else None
        info.joints.append(Joint(name, int(model.jnt_type[j]) == int(mujoco.mjtJoint.mjJNT_SLIDE),
                                 tuple(float(v) for v in model.jnt_range[j]) if limited else None, effort))  # fmt: skip


def _coupled_joints(model: mujoco.MjModel, joints: set[str]) -> dict[str, str | None]:
    """Of `joints`, those an active joint equality ties (MuJoCo's joint1 = f(joint2): joint1 follows
    joint2, or keeps a constant where joint2 is absent), each with the joint it follows."""
    coupled = {}
    for e in range(model.neq):
        if int(model.eq_type[e]) != int(mujoco.mjtEq.mjEQ_JOINT) or not model.eq_active0[e]:
            continue
        follower = obj_name(model, mujoco.mjtObj.mjOBJ_JOINT, int(model.eq_obj1id[e]))
        leader = int(model.eq_obj2id[e])
        if follower in joints:
            coupled[follower] = obj_name(model, mujoco.mjtObj.mjOBJ_JOINT, leader) if leader >= 0 else None
    return coupled


STANDING_KEYS = ("stand", "standing", "default", "init", "initial", "neutral", "ready", "nominal")
"""Keyframe names that say the robot stands there (compared lowercased, `_`/`-`/spaces dropped)."""


def _standing_key(model: mujoco.MjModel) -> str | None:
    """A keyframe, other than `home`, whose name says the robot stands there, else the only one."""
    names = [obj_name(model, mujoco.mjtObj.mjOBJ_KEY, k) for k in range(model.nkey)]
    squeezed = {name: re.sub(r"[_\- ]", "", name.lower()) for name in names if name}
    for wanted in STANDING_KEYS:
        found = next((name for name, plain in squeezed.items() if plain == wanted), None)
        if found:
            return found
    return names[0] or None if len(names) == 1 else None


def _stance_qpos(model: mujoco.MjModel, info: ModelInfo, base: int) -> np.ndarray:
    """The qpos of the keyframe the pose is read from (pose_key), else qpos0 with every joint the
    robot drives (every joint of the robot but its root body's where nothing drives one yet) at 0,
    inside its limits (home_value)."""
    if info.pose_key:
        return model.key_qpos[mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_KEY, info.pose_key)].copy()
    qpos = model.qpos0.copy()
    posed = driven_joints(model) if model.nu else {
        model.joint(j.name).id for j in info.joints if j.name not in info.root_joints}  # fmt: skip
    for j in posed:
        if int(model.jnt_type[j]) in ONE_DOF:
            qpos[model.jnt_qposadr[j]] = home_value(tuple(model.jnt_range[j]) if model.jnt_limited[j] else None)
    return qpos
