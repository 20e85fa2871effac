"""The locomotion template's plan for a robot: its floating base (the model's, a planar base, or a
free joint added), a floor, an IMU, the feet and their touch sensors, and the standing pose with
its `home` keyframe (stance.py moves the legs under the centre of mass), with warnings where the
template's guesses may not fit the robot (lying down, a swimmer). robot_edits.py plans the joints
and actuators first."""

from __future__ import annotations

import mujoco
import numpy as np

from robolearn.errors import UserError
from robolearn.scaffold.inspect_model import ModelInfo
from robolearn.scaffold.model_query import HOME_MARGIN, POSE_GUESS, home_value, posed_qpos
from robolearn.scaffold.plan import RobotPlan, const, mapping, num, object_names, quoted, short, tuple_text, unique
from robolearn.scaffold.stance import plan_stance
from robolearn.scene.geometry import CLEARANCE, lowest_point
from robolearn.scene.ground import ground_height, is_ground


def default_joint_value(info: ModelInfo, name: str) -> float:
    """A joint's value in new-task's default pose: 0, inside its limits (home_value)."""
    return home_value(next(j for j in info.joints if j.name == name).range)



def plan_legs(plan: RobotPlan, info: ModelInfo, model: mujoco.MjModel, sites: set[str], sensors: set[str]) -> None:
    """The locomotion template's additions (module doc), the model's `sites` and `sensors` names taken."""
    _plan_base(plan, info)
    if not info.has_floor:
        floor = unique("floor", object_names(model, mujoco.mjtObj.mjOBJ_GEOM, model.ngeom))
        plan.steps.append("add_floor")
        plan.constants.append(const("FLOOR", quoted(floor), "The ground plane's geom."))
        taken = "" if floor == "floor" else " (its geom 'floor' is no ground: a plane, height field or wide level box)"
        plan.lines.append(f"floor: missing -> added a ground plane '{floor}'{taken}")
    else:
        _level_ground(plan, model)
    if not np.any(model.opt.gravity):
        plan.steps.append("set_gravity")
        plan.lines.append("gravity: none in the model (0 0 0: a robot meant for a scene that sets it, as robosuite's) -> "
                          "0 0 -9.81 (a legged robot stands and walks under it)")  # fmt: skip
    if info.imu_site:
        plan.lines.append(f"IMU: site {info.imu_site} on the base")
    elif plan.base and not plan.planar:
        imu = unique("imu", sites)
        plan.steps.append("add_imu")
        where = info.imu_body or plan.base
        link = f" (the model's IMU link, fixed to the base {plan.base})" if where != plan.base else ""
        plan.constants.append(const("IMU_SITE", quoted(imu), f"The IMU's site (its sensors: {imu}_gyro, _acc, _quat)."))
        plan.constants.append(const("IMU_BODY", quoted(where), "The body the IMU's site is on: the base, or the "
                                                               "model's IMU link fixed to it."))  # fmt: skip
        plan.lines.append(f"IMU: missing -> added site '{imu}' on {where}{link} with a gyro, an accelerometer and a framequat")
    _plan_feet(plan, info, sites | sensors)
    _plan_colliding_feet(plan, info, model)
    rolling = [f.body for f in info.feet if f.body in {model.body(int(model.joint(j).bodyid[0])).name for j in plan.wheels}]
    if rolling:
        plan.stepping = False
        plan.rolls = len(rolling) == len(info.feet)
        sideways = "; and, every foot rolling, no lateral speed command (lin_vel_y: [0, 0]): wheels do not roll sideways" if plan.rolls else ""
        plan.lines.append(f"feet on wheels: {short(rolling, 8)} -> no feet_air_time reward (it pays for lifting a foot; "
                          f"these roll){sideways}")  # fmt: skip
    _doubt_legs(plan, info, model, _plan_home(plan, info, model))


STANDING = 0.15
"""A standing robot's base is at least this fraction of its size above its lowest point (in the
pose new-task stands it in: dm_control's quadruped 0.37, mjlab's Go1 0.61, gymnasium's ant 0.24 and
humanoid 0.82; gymnasium's humanoid lying on its back 0.12, its swimmer 0.03)."""


GROUND_TOLERANCE = 1e-4
"""A model's ground this far [m] from z = 0 or more is moved there (_level_ground)."""


def _level_ground(plan: RobotPlan, model: mujoco.MjModel) -> None:
    """The locomotion task measures heights from z = 0 (the home pose's clearance, base_below, the
    base height reward). A model whose ground plane sits elsewhere (robosuite's GR1: z = -0.97, the
    robot placed by a scene) gets its planes there moved to z = 0; other ground (a height field, a
    box) is warned of."""
    data = mujoco.MjData(model)
    mujoco.mj_kinematics(model, data)
    level = ground_height(model, data)
    if level is None or abs(level) < GROUND_TOLERANCE:
        return
    planes = [g for g in range(model.ngeom) if int(model.geom_bodyid[g]) == 0 and is_ground(model, g)
              and int(model.geom_type[g]) == int(mujoco.mjtGeom.mjGEOM_PLANE) and abs(data.geom_xpos[g, 2] - level) < GROUND_TOLERANCE]  # fmt: skip
    if not planes:
        plan.lines.append(f"WARNING: the model's ground (a height field or box) tops out at z = {level:.3f}: the task measures "
                          "heights from z = 0 (the home pose, base_below, base_height); move the ground there")  # fmt: skip
        return
    plan.steps.append("level_ground")
    plan.constants.append(const("GROUND_Z", num(level), "Where the model's ground plane was [m]: level_ground moves the "
                                                         "planes there to z = 0."))  # fmt: skip
    plan.lines.append(f"floor: the model's ground plane is at z = {level:.3f} -> moved to z = 0 (the task measures heights "
                      "from there: the home pose's 5 mm clearance, base_below, base_height)")  # fmt: skip


def _doubt_legs(plan: RobotPlan, info: ModelInfo, model: mujoco.MjModel, clearance: float) -> None:
    """Warnings where the locomotion template's guesses may not fit the robot: it lies down in the
    standing pose (`clearance`: the base's height above the robot's lowest point there), or it lives
    in a fluid (a swimmer)."""
    if info.size > 0 and clearance < STANDING * info.size and not plan.rolls:  # a car is low by design
        plan.lines.append(f"WARNING: in the standing pose the base is only {clearance:.3f} m above the robot's "
                          f"lowest point ({info.size:.2f} m across): it may be lying down, and the feet above may be "
                          "wrong; set DEFAULT_POSE (or add a `home` keyframe to the model) and check the feet")  # fmt: skip
    if model.opt.density > 100 or model.opt.viscosity > 0:
        plan.lines.append(f"WARNING: the model moves in a fluid (density {model.opt.density:g}, viscosity "
                          f"{model.opt.viscosity:g}): the locomotion template walks on a floor; a swimmer needs a task "
                          "of its own (start from --template minimal)")  # fmt: skip


def _plan_base(plan: RobotPlan, info: ModelInfo) -> None:
    """The floating base: the model's free joint, a planar base (kept), or a free joint added."""
    plan.base = info.base or info.root
    if info.planar:
        plan.planar = list(info.planar)
        plan.limbs = [j.name for j in info.joints if j.name not in {b.name for b in info.planar}]
        roles = ", ".join(f"{b.name} ({b.role})" for b in info.planar)
        forward = next(b.name for b in info.planar if b.role == "forward")
        plan.lines.append(f"planar base: body {info.root} moves on {roles}: no free joint is added; the task tracks a "
                          f"forward speed along {forward} and observes these joints (on a robot: a boom's encoders)")  # fmt: skip
    elif info.base:
        plan.lines.append(f"floating base: body {info.base} (free joint)")
    elif info.root_joints:
        held = ", ".join(n or "<unnamed>" for n in info.root_joints)
        driven = [f"{a.joint} by {'an unnamed actuator' if a.name in info.given_names else f'actuator {a.name}'}"
                  for a in info.actuators if a.joint in info.root_joints]  # fmt: skip
        why = (f"driven ({', '.join(driven)}: a rail or a mount that moves the robot, not a base that moves freely)"
               if driven else "none of them a horizontal slide no actuator drives")  # fmt: skip
        raise UserError(f"the locomotion template needs a robot that moves freely or on a planar base (a horizontal "
                        f"slide joint no actuator drives); {info.path.name}'s root body {info.root} is held by {held}, "
                        f"{why}: use --template minimal or reach")  # fmt: skip
    elif info.root:
        plan.steps.append("add_free_joint")
        plan.lines.append(f"floating base: missing -> added a free joint on the root body {info.root}")
    if plan.base:
        plan.constants.append(const("BASE", quoted(plan.base), "The floating base's body."))


def _plan_colliding_feet(plan: RobotPlan, info: ModelInfo, model: mujoco.MjModel) -> None:
    """Where no geom of the model collides with anything and it has no contact pairs (MuJoCo Menagerie's
    Apollo: contype and conaffinity 0 throughout, its contacts are <pair>s in scene.xml), the robot
    would fall through any floor: the feet's geoms (not visual ones, groups 1 and 2, where the foot
    has others) collide (contype and conaffinity 1), so the floor collides with them."""
    named = [f.body for f in info.feet if not f.geom]
    if not named or model.npair or np.any(model.geom_contype[model.geom_bodyid > 0] | model.geom_conaffinity[model.geom_bodyid > 0]):
        return
    plan.steps.insert(plan.steps.index("add_floor") if "add_floor" in plan.steps else len(plan.steps), "collide_feet")
    plan.constants.append(const("COLLIDING_FEET", "[" + ", ".join(quoted(f) for f in named) + "]", "Feet whose geoms "
                                "new-task made collide: nothing of the model collided with anything (its contacts were "
                                "a scene's <pair>s)."))  # fmt: skip
    plan.lines.append(f"collisions: no geom of the model collides with anything, and it has no contact pairs (a scene "
                      f"file may add them: give that file instead, if you have it) -> the feet's geoms collide: "
                      f"{short(named, 8)} (contype and conaffinity 1; their visual geoms, groups 1 and 2, left as they are)")  # fmt: skip


def _plan_feet(plan: RobotPlan, info: ModelInfo, taken: set[str]) -> None:
    """Each foot's touch sensor: the model's, or one added (named apart from the `taken` site and sensor names)."""
    if not info.feet:
        plan.lines.append("feet: none found (no leaf body of a leg chain reaches the ground): the task has no foot "
                          "contact terms; add touch sensors and a feet_air_time reward by hand")  # fmt: skip
        return
    plan.lines.append(f"feet (guessed: the leaf body of each leg chain that reaches the ground in the standing "
                      f"pose): {short([f.body for f in info.feet], 8)}")  # fmt: skip
    new = {}
    for foot in info.feet:
        if foot.sensor:
            plan.foot_sensors.append(foot.sensor)
        else:
            name = unique(f"{foot.body}_contact", taken)
            new[name] = foot
            plan.foot_sensors.append(name)
    if new:
        unnamed = {f.body: f.geom for f in new.values() if f.geom}
        if unnamed:
            plan.steps.append("name_bodies")
            plan.constants.append(const("BODY_NAMES", mapping({name: quoted(geom) for name, geom in unnamed.items()}),
                                         "Feet the model leaves unnamed, named here: new name -> a geom of the body."))  # fmt: skip
            plan.lines.append(f"unnamed foot bodies: named after a geom of each: {short(list(unnamed), 8)}")
        plan.steps.append("add_foot_sensors")
        entries = {name: f"({quoted(f.body)}, {tuple_text(f.point)}, {num(f.radius)})" for name, f in new.items()}
        plan.constants.append(const("NEW_FOOT_SENSORS", mapping(entries), "Touch sensors new-task added: sensor (and "
                                     "site) name -> (foot body, site centre in its frame [m], site radius [m]: the site holds what the foot stands on)."))  # fmt: skip
        plan.lines.append(f"foot contact sensors: missing on {len(new)} {'foot' if len(new) == 1 else 'feet'} -> added touch "
                          f"sensors {short(list(new), 8)}")  # fmt: skip
    if len(new) < len(info.feet):
        have = [f.sensor for f in info.feet if f.sensor]
        plan.lines.append(f"foot contact sensors: {short(have, 8)}")


def _posed(model: mujoco.MjModel, plan: RobotPlan, qpos: np.ndarray | None = None) -> tuple[mujoco.MjData, float, float]:
    """The robot at `qpos` (default: the model's qpos0 with plan.default_pose): its data, the base
    body's height and the lowest point of the robot [m]."""
    data = mujoco.MjData(model)
    data.qpos[:] = posed_qpos(model, plan.default_pose) if qpos is None else qpos
    mujoco.mj_kinematics(model, data)
    base = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, plan.base) if plan.base else -1
    if base < 0:
        return data, 0.0, 0.0
    return data, float(data.xpos[base, 2]), lowest_point(model, data, base)


def _plan_home(plan: RobotPlan, info: ModelInfo, model: mujoco.MjModel) -> float:
    """The standing pose and the `home` keyframe: the model's, or one added with each joint at 0
    within its limits and the robot's lowest point 5 mm above the ground (a free base lifted by
    BASE_HEIGHT, a planar base by its height slide; the planar base's joints are in the pose).
    Returns the base's height above the robot's lowest point in the standing pose: the model's, or
    where folded legs were stood up (unfold.py), with them so (the feet's move under the centre of
    mass is left out: a humanoid on its back propped up on its arms does not stand)."""
    plan.default_pose = {name: default_joint_value(info, name) for name in plan.joints if name in {j.name for j in info.joints}}
    if info.has_home:
        plan.lines.append("home keyframe: present")
        key = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_KEY, "home")
        data, plan.base_height, _ = _posed(model, plan, model.key_qpos[key])
        for b in plan.planar:
            plan.default_pose[b.name] = float(data.qpos[model.joint(b.name).qposadr[0]])
        return info.base_clearance
    for b in plan.planar:
        plan.default_pose[b.name] = b.qpos0
    clearance = info.base_clearance
    keyed = info.pose_key  # the model's own standing keyframe under another name: its joint positions
    if keyed:
        qpos = model.key_qpos[model.key(keyed).id]
        plan.default_pose.update({name: round(float(qpos[model.joint(name).qposadr[0]]), 4) for name in plan.joints
                                  if name in plan.default_pose})  # fmt: skip
    elif not plan.planar and info.feet:
        unfolded = plan_stance(plan, info, model)
        if unfolded is not None:
            _, base_z, lowest = _posed(model, plan, posed_qpos(model, {**plan.default_pose, **unfolded}))
            clearance = base_z - lowest
    _, base_z, lowest = _posed(model, plan)
    lift = CLEARANCE - lowest
    height = next((b for b in plan.planar if b.role == "height"), None)
    if height is not None:
        plan.default_pose[height.name] = round(height.qpos0 + lift / height.axis[2], 4)
    elif plan.planar:
        lift = 0.0  # nothing lifts it
    plan.base_height = round(base_z + lift, 4)
    if not plan.planar:
        where = f"base {plan.base_height:.3f} m up (the lowest point 5 mm above the ground)"
    elif height is None:
        where = "the base at the model's height (it has no height slide)"
    else:
        where = f"{height.name} at {plan.default_pose[height.name]:.3f} (the lowest point 5 mm above the ground)"
    plan.steps.append("add_home_keyframe")
    pose = mapping({name: num(v) for name, v in plan.default_pose.items()})
    if plan.planar:
        pose_doc = ("The standing pose [rad or m], the planar base's joints included: the `home` keyframe, the action "
                    f"offset and the reference of relative joint observations. new-task's guess: {POSE_GUESS}. TODO: "
                    "set your robot's standing pose (and the height slide with it).")  # fmt: skip
        height_doc = (f"Height of {plan.base} above the ground in the home pose [m] (the planar base sets it through "
                      "its height slide in DEFAULT_POSE).")  # fmt: skip
    else:
        pose_doc = ("The standing pose [rad or m]: the `home` keyframe, the action offset and the reference of relative "
                    f"joint observations. new-task's guess: {POSE_GUESS}. TODO: set your robot's standing pose.")  # fmt: skip
        height_doc = ("Base height in the home pose [m]. None: computed from DEFAULT_POSE when the model compiles, the "
                      f"robot's lowest point 5 mm above the ground ({plan.base_height:.3f} m in new-task's pose).")  # fmt: skip
    plan.constants.append(const("DEFAULT_POSE", pose, pose_doc))
    height_value = num(plan.base_height) if plan.planar else "None"
    plan.constants.append(const("BASE_HEIGHT", height_value, height_doc, "" if plan.planar else "float | None"))
    base_joints = {b.name for b in plan.planar}
    guessed = {j.name: home_value(j.range) for j in info.joints}
    moved = {name: v for name, v in plan.default_pose.items()  # 10 % inside a limit (the legs' move has its own line)
             if v != 0 and name not in base_joints and abs(v - guessed.get(name, v)) < 1e-9}  # fmt: skip
    off = (f" but {short([f'{name} at {v:.3g}' for name, v in moved.items()])} ({int(HOME_MARGIN * 100)} % of the "
           "range inside a limit that 0 is on, near or beyond)") if moved else ""  # fmt: skip
    if any(abs(v - guessed.get(name, v)) > 1e-9 for name, v in plan.default_pose.items() if name not in base_joints):
        off += ", the legs moved as the line above says"
    if keyed:
        off = f" from the model's keyframe '{keyed}' (its joint positions; the base placed anew)"
        plan.lines.append(f"home keyframe: missing -> added 'home'{off}, {where}; set DEFAULT_POSE in robot.py")
        return clearance
    plan.lines.append(f"home keyframe: missing -> added 'home': each joint at 0{off}, {where}; set DEFAULT_POSE in "
                      "robot.py")
    return clearance
