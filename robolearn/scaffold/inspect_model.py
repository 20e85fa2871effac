"""What `robolearn new-task --robot` reads from a robot model: its 1-DoF joints and actuators, and for
legged robots the floating base, the IMU, the feet and their contact sensors, the `home` keyframe
and the floor. Read from the compiled MjModel (names, kinematics at the model's default pose);
`robot_edits.py` turns what is missing into a spec edit the generated task applies.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import mujoco
import numpy as np

from robolearn.errors import UserError
from robolearn.scene.floating_base import floating_base_joint
from robolearn.scene.geometry import body_children, collision_geoms, geom_corners, subtree
from robolearn.scene.ground import has_ground

_ONE_DOF = (int(mujoco.mjtJoint.mjJNT_HINGE), int(mujoco.mjtJoint.mjJNT_SLIDE))
_IMU_SENSORS = (int(mujoco.mjtSensor.mjSENS_GYRO), int(mujoco.mjtSensor.mjSENS_ACCELEROMETER),
                int(mujoco.mjtSensor.mjSENS_FRAMEQUAT))  # fmt: skip


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


@dataclass(frozen=True)
class Foot:
    body: str
    point: tuple[float, float, float]
    """The lowest point of the foot's geometry at the default pose, in the body's frame [m]."""
    radius: float
    """Size of the contact site to put there [m]."""
    sensor: str | None
    """An existing touch sensor on the foot, None if it has none."""
    geom: str | None = None
    """Where the model leaves the foot's body unnamed: the named geom of it that the generated
    robot.py finds the body by (and names it `body`)."""


@dataclass(frozen=True)
class BaseJoint:
    """A joint between the world and a planar robot's root body (gymnasium's and dm_control's hopper,
    walker and cheetah move on rootx, rootz and rooty)."""

    name: str
    role: str
    """forward (the first horizontal slide), lateral (another), height (a vertical slide), pitch (a hinge
    about a horizontal axis: the body tilts) or yaw (a hinge about the vertical)."""
    axis: tuple[float, float, float]
    """The joint's axis in the world frame at the model's default pose."""
    qpos0: float


@dataclass
class ModelInfo:
    path: Path
    urdf: bool
    joints: list[Joint] = field(default_factory=list)
    """The robot's hinge/slide joints (objects' joints left out: `object_joints`)."""
    object_joints: list[str] = field(default_factory=list)
    """Hinge/slide joints of body trees no actuator acts on when the model has actuators (a goal
    marker's slides, an object to push), else of the trees beside the robot's: not the robot's."""
    actuators: list[Actuator] = field(default_factory=list)
    base: str | None = None
    """The body of the free joint (the floating base), None for a fixed-base model."""
    loose: str | None = None
    """A free body that carries no joint and no actuator (an object to push or pick): not the base."""
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
    """A site of the base carrying a gyro, accelerometer or framequat sensor."""
    feet: list[Foot] = field(default_factory=list)
    has_home: bool = False
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
    ee_sensor: str | None = None
    """A framepos sensor of a site (an end-effector position sensor), None if there is none."""

    @property
    def position_only(self) -> bool:
        return bool(self.actuators) and all(a.kind == "position" for a in self.actuators)


def _name(model: mujoco.MjModel, objtype: mujoco.mjtObj, i: int) -> str:
    return mujoco.mj_id2name(model, objtype, i) or ""


def _actuator_kind(model: mujoco.MjModel, a: int) -> str:
    gain, bias = model.actuator_gainprm[a], model.actuator_biasprm[a]
    if int(model.actuator_dyntype[a]) != int(mujoco.mjtDyn.mjDYN_NONE):
        return "other"
    if int(model.actuator_gaintype[a]) != int(mujoco.mjtGain.mjGAIN_FIXED):
        return "other"
    if int(model.actuator_biastype[a]) == int(mujoco.mjtBias.mjBIAS_NONE):
        return "motor"
    if int(model.actuator_biastype[a]) == int(mujoco.mjtBias.mjBIAS_AFFINE) and bias[1] != 0 and bias[1] == -gain[0]:
        return "position"
    return "other"


def _driven_joints(model: mujoco.MjModel) -> set[int]:
    """The joints an actuator drives through a joint transmission."""
    joint = (int(mujoco.mjtTrn.mjTRN_JOINT), int(mujoco.mjtTrn.mjTRN_JOINTINPARENT))
    return {int(model.actuator_trnid[a, 0]) for a in range(model.nu) if int(model.actuator_trntype[a]) in joint}


def _planar_base(model: mujoco.MjModel, data: mujoco.MjData, body: int) -> tuple[list[str], list[BaseJoint]]:
    """The root body's own joints, and the roles of those no actuator drives when one of them is a
    horizontal slide (a planar robot: it moves along the floor on that slide). A driven slide is a
    rail (a cart's, a gantry's): the robot drives it, nothing about it is a base that moves freely."""
    all_joints = range(int(model.body_jntadr[body]), int(model.body_jntadr[body] + model.body_jntnum[body]))
    names = [_name(model, mujoco.mjtObj.mjOBJ_JOINT, j) for j in all_joints]
    driven = _driven_joints(model)
    joints = [j for j in all_joints if j not in driven]
    axes = {}
    for j in joints:
        if int(model.jnt_type[j]) not in _ONE_DOF:
            return names, []
        axes[j] = data.xmat[body].reshape(3, 3) @ model.jnt_axis[j]
    slide = {j for j in joints if int(model.jnt_type[j]) == int(mujoco.mjtJoint.mjJNT_SLIDE)}
    horizontal = [j for j in slide if abs(axes[j][2]) <= 0.7]
    if not horizontal:
        return names, []
    forward = max(horizontal, key=lambda j: (abs(axes[j][0]), -j))  # the slide closest to the world's x
    found = []
    for j in joints:
        name = _name(model, mujoco.mjtObj.mjOBJ_JOINT, j)
        vertical = abs(axes[j][2]) > 0.7
        if j in slide:
            role = "forward" if j == forward else "height" if vertical else "lateral"
        else:
            role = "yaw" if vertical else "pitch"
        found.append(BaseJoint(name, role, tuple(round(float(v), 4) for v in axes[j]), float(model.qpos0[model.jnt_qposadr[j]])))
    return names, found


def _feet(model: mujoco.MjModel, data: mujoco.MjData, base: int, robot: list[int], children: dict[int, list[int]],
          geoms: list[int], low: dict[int, float], near_ground: float) -> list[Foot]:
    """The leaf bodies of the base's joint chains whose geometry reaches below `near_ground` (each
    geom's lowest world height in `low`), with the lowest point of each and its touch sensor if any."""
    touch = {}  # body -> [(site height, sensor name)]
    for s in range(model.nsensor):
        if int(model.sensor_type[s]) == int(mujoco.mjtSensor.mjSENS_TOUCH):
            site = int(model.sensor_objid[s])
            touch.setdefault(int(model.site_bodyid[site]), []).append((float(data.site_xpos[site, 2]),
                                                                       _name(model, mujoco.mjtObj.mjOBJ_SENSOR, s)))  # fmt: skip
    feet: list[Foot] = []
    for leaf in (b for b in robot if not children[b] and b != base):
        foot = leaf
        while not [g for g in geoms if int(model.geom_bodyid[g]) == foot] and foot != base:
            foot = int(model.body_parentid[foot])  # a frame without geometry: its parent is the foot
        foot_geoms = [g for g in geoms if int(model.geom_bodyid[g]) == foot]
        if foot == base or not foot_geoms:
            continue
        g = min(foot_geoms, key=lambda g: low[g])
        if low[g] > near_ground:
            continue
        corners = geom_corners(model, data, g)
        world = np.array([data.geom_xpos[g, 0], data.geom_xpos[g, 1], corners[:, 2].min()])
        local = data.xmat[foot].reshape(3, 3).T @ (world - data.xpos[foot])
        radius = float(max(0.02, 1.5 * np.sort(model.geom_aabb[g, 3:])[1]))
        sensors = sorted(touch.get(foot, []))
        name, by_geom = _name(model, mujoco.mjtObj.mjOBJ_BODY, foot), None
        if not name:  # an unnamed body (gymnasium's ant's ankles): found by a named geom of it, and named
            by_geom = next((n for n in (_name(model, mujoco.mjtObj.mjOBJ_GEOM, h) for h in [g, *foot_geoms]) if n), None)
            name = _unique_body_name(model, by_geom.removesuffix("_geom") or by_geom, [f.body for f in feet]) if by_geom else ""
        if name and name not in [f.body for f in feet]:
            feet.append(Foot(name, tuple(round(float(v), 4) for v in local), round(radius, 4),
                             sensors[0][1] if sensors else None, by_geom))  # fmt: skip
    return feet


def _unique_body_name(model: mujoco.MjModel, name: str, taken: list[str]) -> str:
    """`name`, or `name_2`, ...: no body of the model and none in `taken` has it."""
    candidate, k = name, 2
    while candidate in taken or mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, candidate) >= 0:
        candidate, k = f"{name}_{k}", k + 1
    return candidate


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
            bodies, names = [int(model.site_bodyid[i]) for i in ids], [_name(model, mujoco.mjtObj.mjOBJ_SITE, i) for i in ids]
        elif kind in (body, int(mujoco.mjtObj.mjOBJ_XBODY)):
            bodies, names = list(ids), [_name(model, mujoco.mjtObj.mjOBJ_BODY, i) for i in ids]
        else:
            continue
        mocap = [b for b in bodies if model.body_mocapid[b] >= 0]
        held = [b for b in bodies if b in robot]
        if mocap and held:
            found.append((names[0], names[1], _name(model, mujoco.mjtObj.mjOBJ_BODY, mocap[0]),
                          _name(model, mujoco.mjtObj.mjOBJ_BODY, held[0])))  # fmt: skip
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
        if int(model.actuator_trntype[a]) == int(mujoco.mjtTrn.mjTRN_JOINT) and int(model.jnt_type[target]) in _ONE_DOF:
            joint = _name(model, mujoco.mjtObj.mjOBJ_JOINT, target)
        ctrlrange = tuple(float(v) for v in model.actuator_ctrlrange[a]) if model.actuator_ctrllimited[a] else None
        info.actuators.append(Actuator(_name(model, mujoco.mjtObj.mjOBJ_ACTUATOR, a), joint, _actuator_kind(model, a),
                                       ctrlrange))  # fmt: skip

    children = body_children(model)
    free = floating_base_joint(model)
    if free is not None and not _carries_robot(model, int(model.jnt_bodyid[free]), children):
        info.loose = _name(model, mujoco.mjtObj.mjOBJ_BODY, int(model.jnt_bodyid[free])) or f"#{model.jnt_bodyid[free]}"
        free = None  # the robot is the largest tree under the world instead
    if free is not None:
        base = int(model.jnt_bodyid[free])
        info.base = _name(model, mujoco.mjtObj.mjOBJ_BODY, base)
        info.free_qpos = int(model.jnt_qposadr[free])
    else:  # the tree under the world with the most actuated joints (a kitchen's cabinets have none), then the largest
        driven = {int(model.jnt_bodyid[j]) for j in _driven_joints(model)}
        base = max(children[0], key=lambda b: (len(driven & set(subtree(children, b))), len(subtree(children, b))), default=0)
    info.root = _name(model, mujoco.mjtObj.mjOBJ_BODY, base) if base else None
    robot = sorted(subtree(children, base)) if base else []
    trees = _acted_trees(model) if model.nu else {int(model.body_rootid[base])} if base else set()
    _joints(info, model, trees)
    info.mocap_welds = _mocap_welds(model, set(robot))
    info.mass = float(sum(model.body_mass[b] for b in robot))
    info.has_home = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_KEY, "home") >= 0
    info.has_floor = has_ground(model)
    info.has_light = model.nlight > 0

    data = mujoco.MjData(model)
    mujoco.mj_kinematics(model, data)
    if free is None and base:
        info.root_joints, info.planar = _planar_base(model, data, base)
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

    info.imu_site = _imu_site(model, base)
    near_ground = info.lowest + 0.25 * max(top - info.lowest, 1e-6)
    info.feet = _feet(model, stance, base, robot, children, geoms, low, near_ground)

    for sensor in range(model.nsensor):  # an end-effector position sensor: of a site on the robot, not an object
        if int(model.sensor_type[sensor]) == int(mujoco.mjtSensor.mjSENS_FRAMEPOS) and int(model.sensor_objtype[sensor]) == int(mujoco.mjtObj.mjOBJ_SITE):
            if int(model.body_rootid[model.site_bodyid[model.sensor_objid[sensor]]]) in trees:
                info.ee_sensor = _name(model, mujoco.mjtObj.mjOBJ_SENSOR, sensor) or None
                break
    _tip(info, model, data, base, robot, children, geoms)
    return info


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
    """info.joints: the hinge/slide joints of the robot's body `trees`; the others' are object joints."""
    for j in range(model.njnt):
        if int(model.jnt_type[j]) not in _ONE_DOF:
            continue
        name = _name(model, mujoco.mjtObj.mjOBJ_JOINT, j)
        if int(model.body_rootid[model.jnt_bodyid[j]]) not in trees:
            if name:
                info.object_joints.append(name)
            continue
        if not name:
            body = _name(model, mujoco.mjtObj.mjOBJ_BODY, int(model.jnt_bodyid[j])) or f"#{model.jnt_bodyid[j]}"
            raise UserError(f"{info.path.name}: joint {j} (in body {body}) has no name; name every joint the task is to drive")
        limited = bool(model.jnt_limited[j])
        effort = float(np.abs(model.jnt_actfrcrange[j]).max()) if model.jnt_actfrclimited[j] else None
        info.joints.append(Joint(name, int(model.jnt_type[j]) == int(mujoco.mjtJoint.mjJNT_SLIDE),
                                 tuple(float(v) for v in model.jnt_range[j]) if limited else None, effort))  # fmt: skip


def _stance_qpos(model: mujoco.MjModel, info: ModelInfo, base: int) -> np.ndarray:
    """The `home` keyframe's qpos, else qpos0 with every joint the robot drives (every joint of the
    robot but its root body's where nothing drives one yet) at 0 within its limits."""
    if info.has_home:
        return model.key_qpos[mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_KEY, "home")].copy()
    qpos = model.qpos0.copy()
    posed = _driven_joints(model) if model.nu else {
        model.joint(j.name).id for j in info.joints if j.name not in info.root_joints}  # fmt: skip
    for j in posed:
        if int(model.jnt_type[j]) in _ONE_DOF:
            qpos[model.jnt_qposadr[j]] = np.clip(0.0, *model.jnt_range[j]) if model.jnt_limited[j] else 0.0
    return qpos


def _imu_site(model: mujoco.MjModel, base: int) -> str | None:
    """A site on the base that an IMU-type sensor reads."""
    for sensor in range(model.nsensor):
        if int(model.sensor_type[sensor]) in _IMU_SENSORS and int(model.sensor_objtype[sensor]) == int(mujoco.mjtObj.mjOBJ_SITE):
            site = int(model.sensor_objid[sensor])
            if int(model.site_bodyid[site]) == base:
                return _name(model, mujoco.mjtObj.mjOBJ_SITE, site)
    return None


def _tip(info: ModelInfo, model: mujoco.MjModel, data: mujoco.MjData, base: int, robot: list[int],
         children: dict, geoms: list[int]) -> None:  # fmt: skip
    """The tip of the longest joint chain (an arm's end effector): its body, a site on it, and the
    far end of its geometry along the line from the chain's root (info.tip, tip_site, tip_point)."""

    def chain_length(b: int) -> int:
        n = 0
        while b and b != base:
            n += int(model.body_jntnum[b])
            b = int(model.body_parentid[b])
        return n

    leaves = [b for b in robot if not children[b]]
    if not leaves:
        return
    tip = max(leaves, key=lambda b: (chain_length(b), -b))
    info.tip = _name(model, mujoco.mjtObj.mjOBJ_BODY, tip) or None
    wrapped = {int(model.wrap_objid[w]) for w in range(model.nwrap) if int(model.wrap_type[w]) == int(mujoco.mjtWrap.mjWRAP_SITE)}
    # a site a tendon or muscle path runs through (MyoSuite's TRIlong-P5) is not an end effector
    tip_sites = [s for s in range(model.nsite) if int(model.site_bodyid[s]) == tip and s not in wrapped]
    info.tip_site = _name(model, mujoco.mjtObj.mjOBJ_SITE, tip_sites[0]) or None if tip_sites else None
    tip_geoms = [g for g in geoms if int(model.geom_bodyid[g]) == tip]
    if tip_geoms:
        origin = data.xpos[base] if base else np.zeros(3)
        g = max(tip_geoms, key=lambda g: np.linalg.norm(data.geom_xpos[g] - origin))
        center = data.geom_xpos[g]
        u = (center - origin) / max(np.linalg.norm(center - origin), 1e-9)
        far = center + u * float(((geom_corners(model, data, g) - center) @ u).max())
        local = data.xmat[tip].reshape(3, 3).T @ (far - data.xpos[tip])
        info.tip_point = tuple(round(float(v), 4) for v in local)
