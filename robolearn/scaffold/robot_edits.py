"""From what a robot model has (inspect_model.ModelInfo) to what a template needs: the joints and
actuators the policy drives, and the generated `robot.py` whose `apply(spec)` adds what is missing
(position actuators, a floating base, a floor, an IMU, foot contact sensors, the `home` keyframe;
the reach and pose templates' end effector and targets: reach_plan.py, pose_plan.py). Each finding
and each addition is one line of the report new-task prints; the plan and robot.py's text helpers
are in plan.py.
"""

from __future__ import annotations

import mujoco
import numpy as np

from robolearn.errors import UserError
from robolearn.scaffold.fixed_base import plan_arm_home, plan_base_contacts
from robolearn.scaffold.inspect_model import ModelInfo
from robolearn.scaffold.model_query import HOME_MARGIN, POSE_GUESS, home_value
from robolearn.scaffold.plan import RobotPlan, const, mapping, num, object_names, quoted, short, tuple_text, unique
from robolearn.scaffold.reach_plan import plan_reach
from robolearn.scaffold.self_contacts import plan_self_contacts
from robolearn.scaffold.servo_gains import plan_servo_gains
from robolearn.scaffold.shown_geoms import plan_shown_geoms
from robolearn.scaffold.stance import plan_stance
from robolearn.scaffold.wheels import plan_wheels
from robolearn.scene.geometry import CLEARANCE, lowest_point


def default_joint_value(info: ModelInfo, name: str) -> float:
    """A joint's value in new-task's default pose: 0, inside its limits (home_value)."""
    return home_value(next(j for j in info.joints if j.name == name).range)


def plan_robot(info: ModelInfo, model: mujoco.MjModel, template: str) -> RobotPlan:
    """What the generated task drives and which edits it makes, for `template` (minimal, reach, pose
    or locomotion)."""
    legged = template == "locomotion"
    by_name = {j.name: j for j in info.joints}
    plan = _plan_actuators(info) if info.actuators else _plan_servos(info, legged)
    if not info.actuators:
        plan_wheels(plan, info, model)
        if "add_position_actuators" in plan.steps:
            plan_servo_gains(plan, info, model, legged)
    joints = plan.joints
    if plan.position and plan.actuators:
        ranges = {j.name: j.range for j in info.joints if j.range}
        driven = {a.name: a.joint for a in info.actuators} if info.actuators else {j: j for j in plan.actuators}
        plan.servo_widths = {a: ranges[j][1] - ranges[j][0] for a, j in driven.items() if j in ranges}
    plan.tracked = list(joints) or [j.name for j in info.joints]
    if not joints and plan.tracked:
        plan.lines.append(f"no actuator drives a joint directly (tendons, muscles): the task's joint targets and "
                          f"observations are the model's {len(plan.tracked)} joints")  # fmt: skip
    # a joint that follows another (a mimic) is observed through the one it follows
    plan.robot_joints = [j.name for j in info.joints if j.name not in info.coupled or j.name in plan.tracked]
    plan.object_joints = list(info.object_joints)
    plan.slides = {j.name for j in info.joints if j.slide}
    # a position servo's target is an angle: its joint works about a pose even where the MJCF writes no
    # limits (robolearn's quadruped leaves them to robot.py), so only the other unlimited hinges turn freely
    servoed = {a.joint for a in info.actuators if a.kind == "position"} if info.actuators else set(plan.joints) - set(plan.wheels)
    stance = {name: float(info.stance_qpos[model.joint(name).qposadr[0]]) for name in plan.robot_joints}
    plan.unlimited_hinges = {j.name: stance[j.name] for j in info.joints
                             if not j.slide and j.range is None and j.name in stance and j.name not in servoed}  # fmt: skip
    if info.object_joints:
        plan.lines.append(f"joints of bodies no actuator moves: {short(info.object_joints)} (a target or an object, not "
                          "the robot's: the task's joint observations, penalties and resets leave them out)")  # fmt: skip
    _plan_mocap_welds(plan, info)
    if info.loose:
        plan.lines.append(f"free body {info.loose} carries no joint and no actuator: a loose object, not the robot's "
                          "base (the robot is the body tree under the world with the most actuated joints)")  # fmt: skip
    plan.joint_ranges = {name: by_name[name].range for name in plan.tracked if name in by_name and by_name[name].range}
    plan.constants.insert(0, const("JOINTS", "(" + "".join(f"\n    {quoted(name)}," for name in joints) + "\n)",
                                    "The joints the policy drives, in action order."))  # fmt: skip
    kinds = {j.slide for j in info.joints}
    what = "slide" if kinds == {True} else "hinge" if kinds == {False} else "hinge/slide"
    plan.lines.insert(0, f"joints: {len(info.joints)} {what}: {short([j.name for j in info.joints])}")
    _doubt_degrees(plan, info)
    _plan_joint_kinds(plan, info, template)

    damped = [a.name or "<unnamed>" for a in info.actuators if a.damping > 0]  # velocity servos' kv, servos' kv
    if (plan.position or damped) and int(model.opt.integrator) == int(mujoco.mjtIntegrator.mjINT_EULER):
        # Euler integrates a servo's damping explicitly: unstable once kd * timestep exceeds about twice
        # the joint's inertia, which light links (wrists, ankles, fingers, wheels) reach with robot-sized gains
        plan.integrator = "implicitfast"
        if plan.position:
            plan.lines.append("integrator: euler -> implicitfast in the task's sim: options (MuJoCo's choice for "
                              "position servos: their damping is integrated implicitly, stable on light links)")  # fmt: skip
        else:
            plan.lines.append(f"integrator: euler -> implicitfast in the task's sim: options (MuJoCo's choice for "
                              f"actuators with velocity feedback, here {short(damped)}: a velocity servo's kv is "
                              "damping, integrated implicitly, stable on light links such as wheels)")  # fmt: skip
    sites = object_names(model, mujoco.mjtObj.mjOBJ_SITE, model.nsite)
    sensors = object_names(model, mujoco.mjtObj.mjOBJ_SENSOR, model.nsensor)
    if legged:
        _plan_legs(plan, info, model, sites, sensors)
    else:
        plan_arm_home(plan, info, model)
        if template in ("reach", "pose"):
            plan_reach(plan, info, model, sites, sensors, orientation=template == "pose")
    if "add_free_joint" not in plan.steps:  # a root that will move freely is no longer fixed to the world
        plan_base_contacts(plan, model)
    plan_self_contacts(plan, info, model)
    if info.urdf:  # an MJCF says what it draws itself (a decorative geom that collides with nothing is not a mesh)
        plan_shown_geoms(plan, model)
    if not info.has_light:  # a URDF has none: the videos and viewers would be dark
        plan.steps.append("add_light")
        plan.lines.append("light: missing -> added one above the robot (for videos and the viewers)")
    return plan


def _plan_joint_kinds(plan: RobotPlan, info: ModelInfo, template: str) -> None:
    """Report lines on the joints the templates' joint terms cannot read as they read a limited
    hinge or a slide: unlimited hinges (observed through cos and sin) and ball joints (left out)."""
    hinges = list(plan.unlimited_hinges)
    if hinges and not (template == "locomotion" and info.planar):
        more = ("; their joint targets are centred on the default pose's angle, their target errors wrapped to "
                "+-pi" if template == "minimal" and set(hinges) & set(plan.tracked) else "")  # fmt: skip
        plan.lines.append(f"unlimited hinges: {short(hinges)} (no limits and no position servo: their angle grows "
                          f"without bound as they turn, e.g. wheels) -> observed as the cos and sin of their angle (joint_pos_cos_sin){more}")  # fmt: skip
    if info.ball_joints:
        plan.lines.append(f"ball joints: {short(info.ball_joints)} -> left out of the task's joint observations, "
                          "targets and resets (no generic term reads a ball joint: observe it through an MJCF "
                          "sensor, e.g. a framequat of its child body in its parent's frame and a gyro, with the "
                          "`sensor` term)")  # fmt: skip


TINY_HINGE_RANGE = 0.0873
"""5 degrees [rad]: an MJCF whose every limited hinge moves less than this most likely wrote
radians where MuJoCo reads degrees (its default unit)."""


def _doubt_degrees(plan: RobotPlan, info: ModelInfo) -> None:
    """A warning where an MJCF's hinge limits look like radians read as degrees (range="-1.57 1.57"
    without <compiler angle="radian"/> is +-1.57 degrees: every episode ends at a joint limit)."""
    widths = [j.range[1] - j.range[0] for j in info.joints if j.range and not j.slide]
    if info.urdf or not widths or max(widths) >= TINY_HINGE_RANGE:
        return
    plan.lines.append(f"WARNING: every limited hinge moves less than 5 degrees (at most {max(widths) * 57.29578:.2g}); "
                      "MJCF reads ranges in degrees unless <compiler angle=\"radian\"/> says radians: if you wrote "
                      "radians, add that element")  # fmt: skip


def _plan_actuators(info: ModelInfo) -> RobotPlan:
    """The model's own actuators drive: what they are, what they leave undriven."""
    joints = [a.joint for a in info.actuators if a.joint]
    named = all(a.name for a in info.actuators)
    plan = RobotPlan(joints, [a.name for a in info.actuators] if named else [], info.position_only)
    kinds = sorted({a.kind for a in info.actuators})
    plan.lines.append(f"actuators: {len(info.actuators)} ({', '.join(kinds)}): {short([a.name or '<unnamed>' for a in info.actuators])}")
    plan.joint_actuators = all(a.joint for a in info.actuators)
    plan.geared = any(a.gear != 1.0 for a in info.actuators)
    odd = [a.name or "<unnamed>" for a in info.actuators if a.kind == "other" or not a.joint]
    if odd:
        plan.lines.append(f"actuators {short(odd)} do not act on one hinge or slide joint as a motor or position "
                          "servo does (a tendon, site or body transmission, activation dynamics, ...): a deploy bundle "
                          "hands the robot driver their MuJoCo ctrl (robot.yaml kind 'actuator'), which it must apply as "
                          "the MJCF does")  # fmt: skip
    if not named:
        plan.lines.append("some actuators have no name: the task drives every actuator (action.actuators: [])")
    elif not plan.position:
        _plan_ctrl_spans(plan, info)
    idle = [j.name for j in info.joints if j.name not in joints and j.name not in {b.name for b in info.planar}]
    if plan.joint_actuators and idle:
        plan.lines.append(f"joints no actuator drives: {short(idle)} (they move only when pushed; add actuators "
                          "in the MJCF or robot.py if the robot drives them)")  # fmt: skip
    return plan


def _plan_servos(info: ModelInfo, legged: bool) -> RobotPlan:
    """A model without actuators: a position servo added on each joint the robot drives."""
    if not info.joints:
        raise UserError(f"{info.path.name} has no hinge or slide joint and no actuator: nothing for a policy to drive")
    # a walker's planar base (rootx, rootz, rooty) is not the robot's to drive; for the other templates a
    # slide under the root body is a rail the robot drives (a gantry, a cart)
    base_joints = {b.name for b in info.planar} if legged else set()
    joints = [j.name for j in info.joints if j.name not in base_joints and j.name not in info.coupled]
    if not joints:
        raise UserError(f"{info.path.name} has no joint but its base's ({', '.join(sorted(base_joints))}) and no "
                        "actuator: nothing for a policy to drive")  # fmt: skip
    plan = RobotPlan(joints, list(joints), True)
    endless = {j.name for j in info.joints if j.range is None}
    if not legged and info.planar and all(b.name in endless for b in info.planar):  # a rail has limits
        base = ", ".join(f"{b.name} ({b.role})" for b in info.planar)
        plan.lines.append(f"WARNING: the root body {info.root} moves on {base}, as a planar robot's base does; this "
                          "template drives them with servos like the other joints (a cart's rail). If they are the "
                          "robot's free base, take them out of JOINTS in robot.py and the task YAML, or use --template "
                          "locomotion")  # fmt: skip
    effort = {j.name: j.effort for j in info.joints if j.effort}
    plan.steps.append("add_position_actuators")
    if info.coupled:
        ties = [f"{j} follows {leader}" if leader else f"{j} is held still" for j, leader in info.coupled.items()]
        plan.lines.append(f"coupled joints: {short(ties)} (a joint equality, e.g. a URDF <mimic>) -> no servo, action or "
                          "command of their own")  # fmt: skip
    note = ("From the model's joint effort limits." if effort else
            "TODO: the model gives none, so the servos are not force-limited: add your motors' peak torques.")
    plan.constants.append(const("EFFORT_LIMIT", mapping({n: num(v) for n, v in effort.items()}),
                                 f"Peak force of each joint's servo [N m or N]. {note}"))  # fmt: skip
    plan.constants.append(const("JOINT_RANGE", mapping({j.name: tuple_text(j.range) for j in info.joints if j.range}),
                                 "Limits of the joints that have them: their servos' ctrlrange [rad or m]."))  # fmt: skip
    return plan


def _plan_mocap_welds(plan: RobotPlan, info: ModelInfo) -> None:
    if not info.mocap_welds:
        return
    plan.steps.append("release_mocap_welds")
    pairs = "".join(f"\n    ({quoted(a)}, {quoted(b)})," for a, b, _, _ in info.mocap_welds)
    plan.constants.append(const("MOCAP_WELDS", f"({pairs}\n)", "Weld/connect constraints (their two bodies or "
                                 "sites) that tie the robot to a mocap body: turned off by apply()."))  # fmt: skip
    held = ", ".join(f"{m} holds {b}" for _, _, m, b in info.mocap_welds)
    plan.lines.append(f"mocap welds: {held} -> turned off (nothing moves a mocap body in a robolearn task, so "
                      "the weld would pin the robot against the policy; MOCAP_WELDS in robot.py)")  # fmt: skip


def _plan_ctrl_spans(plan: RobotPlan, info: ModelInfo) -> None:
    for a in info.actuators:
        if a.ctrlrange:  # a position servo's too, beside motors: its targets span its range
            low, high = a.ctrlrange
            if high > low and abs(low + high) > 1e-9 * (high - low):
                plan.ctrl_spans[a.name] = ((low + high) / 2, (high - low) / 2)
    if plan.ctrl_spans:
        spans = sorted({f"[{num(o - s)}, {num(o + s)}]" for o, s in plan.ctrl_spans.values()})
        plan.lines.append(f"actions: {len(plan.ctrl_spans)} actuators take controls in {', '.join(spans)}, not "
                          "centred on 0: action.offset and action.scale map actions -1..1 onto those ranges")  # fmt: skip


def _plan_legs(plan: RobotPlan, info: ModelInfo, model: mujoco.MjModel, sites: set[str], sensors: set[str]) -> None:
    _plan_base(plan, info)
    if not info.has_floor:
        floor = unique("floor", object_names(model, mujoco.mjtObj.mjOBJ_GEOM, model.ngeom))
        plan.steps.append("add_floor")
        plan.constants.append(const("FLOOR", quoted(floor), "The ground plane's geom."))
        taken = "" if floor == "floor" else " (its geom 'floor' is no ground: a plane, height field or wide level box)"
        plan.lines.append(f"floor: missing -> added a ground plane '{floor}'{taken}")
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
    rolling = [f.body for f in info.feet if f.body in {model.body(int(model.joint(j).bodyid[0])).name for j in plan.wheels}]
    if rolling:
        plan.stepping = False
        plan.lines.append(f"feet on wheels: {short(rolling, 8)} -> no feet_air_time reward (it pays for lifting a foot; "
                          "these roll)")  # fmt: skip
    _plan_home(plan, info, model)
    _doubt_legs(plan, info, model)


STANDING = 0.15
"""A standing robot's base is at least this fraction of its size above its lowest point (in the
pose new-task stands it in: dm_control's quadruped 0.37, mjlab's Go1 0.61, gymnasium's ant 0.24 and
humanoid 0.82; gymnasium's humanoid lying on its back 0.12, its swimmer 0.03)."""


def _doubt_legs(plan: RobotPlan, info: ModelInfo, model: mujoco.MjModel) -> None:
    """Warnings where the locomotion template's guesses may not fit the robot: it lies down in the
    standing pose, or it lives in a fluid (a swimmer)."""
    if info.size > 0 and info.base_clearance < STANDING * info.size:
        plan.lines.append(f"WARNING: in the standing pose the base is only {info.base_clearance:.3f} m above the robot's "
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
        driven = [f"{a.joint} by {f'actuator {a.name}' if a.name else 'an unnamed actuator'}"
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
    data.qpos[:] = model.qpos0 if qpos is None else qpos
    if qpos is None:
        for name, value in plan.default_pose.items():
            data.qpos[model.joint(name).qposadr[0]] = value
    mujoco.mj_kinematics(model, data)
    base = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, plan.base) if plan.base else -1
    if base < 0:
        return data, 0.0, 0.0
    return data, float(data.xpos[base, 2]), lowest_point(model, data, base)


def _plan_home(plan: RobotPlan, info: ModelInfo, model: mujoco.MjModel) -> None:
    """The standing pose and the `home` keyframe: the model's, or one added with each joint at 0
    within its limits and the robot's lowest point 5 mm above the ground (a free base lifted by
    BASE_HEIGHT, a planar base by its height slide; the planar base's joints are in the pose)."""
    plan.default_pose = {name: default_joint_value(info, name) for name in plan.joints if name in {j.name for j in info.joints}}
    if info.has_home:
        plan.lines.append("home keyframe: present")
        key = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_KEY, "home")
        data, plan.base_height, _ = _posed(model, plan, model.key_qpos[key])
        for b in plan.planar:
            plan.default_pose[b.name] = float(data.qpos[model.joint(b.name).qposadr[0]])
        return
    for b in plan.planar:
        plan.default_pose[b.name] = b.qpos0
    if not plan.planar and info.feet:
        plan_stance(plan, info, model)
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
    plan.lines.append(f"home keyframe: missing -> added 'home': each joint at 0{off}, {where}; set DEFAULT_POSE in "
                      "robot.py")
