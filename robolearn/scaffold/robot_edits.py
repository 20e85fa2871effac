"""From what a robot model has (inspect_model.ModelInfo) to what a template needs: the joints and
actuators the policy drives, and the generated `robot.py` whose `apply(spec)` adds what is missing
(position actuators; the locomotion template's floating base, floor, IMU, feet and `home` keyframe:
legged_plan.py; the reach and pose templates' end effector and targets: reach_plan.py, pose_plan.py). Each finding
and each addition is one line of the report new-task prints; the plan and robot.py's text helpers
are in plan.py.
"""

from __future__ import annotations

from dataclasses import replace

import mujoco

from robolearn.errors import UserError
from robolearn.scaffold.fixed_base import plan_arm_home, plan_base_contacts
from robolearn.scaffold.inspect_model import ModelInfo
from robolearn.scaffold.legged_plan import plan_legs
from robolearn.scaffold.plan import RobotPlan, const, mapping, num, object_names, quoted, short, tuple_text, unique
from robolearn.scaffold.reach_plan import plan_reach
from robolearn.scaffold.self_contacts import plan_self_contacts
from robolearn.scaffold.servo_gains import plan_servo_gains
from robolearn.scaffold.shown_geoms import plan_shown_geoms
from robolearn.scaffold.wheels import plan_wheels


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
            servos = ("position servos" if not plan.wheels else "velocity servos" if set(plan.joints) <= set(plan.wheels)
                      else "position and velocity servos")  # fmt: skip
            plan.lines.append(f"integrator: euler -> implicitfast in the task's sim: options (MuJoCo's choice for "
                              f"{servos}: their damping is integrated implicitly, stable on light links)")  # fmt: skip
        else:
            plan.lines.append(f"integrator: euler -> implicitfast in the task's sim: options (MuJoCo's choice for "
                              f"actuators with velocity feedback, here {short(damped)}: a velocity servo's kv is "
                              "damping, integrated implicitly, stable on light links such as wheels)")  # fmt: skip
    sites = object_names(model, mujoco.mjtObj.mjOBJ_SITE, model.nsite)
    sensors = object_names(model, mujoco.mjtObj.mjOBJ_SENSOR, model.nsensor)
    if legged:
        plan_legs(plan, info, model, sites, sensors)
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
    names = _name_actuators(info)
    plan = RobotPlan(joints, [a.name for a in info.actuators], info.position_only)
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
    if names:
        plan.steps.append("name_actuators")
        plan.constants.append(const("ACTUATOR_NAMES", mapping({name: str(k) for k, name in names.items()}), "Actuators "
                                    "the model leaves unnamed, named here: new name -> its place in the model's actuators."))  # fmt: skip
        plan.lines.append(f"unnamed actuators: {len(names)} -> named after what each drives: {short(list(names.values()))} "
                          "(the task and a deploy bundle's robot driver find each actuator by its name)")  # fmt: skip
    if not plan.position:
        _plan_ctrl_spans(plan, info)
    idle = [j.name for j in info.joints if j.name not in joints and j.name not in {b.name for b in info.planar}]
    if plan.joint_actuators and idle:
        plan.lines.append(f"joints no actuator drives: {short(idle)} (they move only when pushed; add actuators "
                          "in the MJCF or robot.py if the robot drives them)")  # fmt: skip
    return plan


def _name_actuators(info: ModelInfo) -> dict[int, str]:
    """A name for each actuator the model leaves unnamed (brax's test pendulums): its joint's and its
    kind (`hinge1_motor`), or `actuator_<k>` for a tendon, site or body transmission; info.actuators
    carries the names from here on (info.given_names: which, for messages about the user's file).
    Returns place in the model's actuators -> new name."""
    taken = {a.name for a in info.actuators if a.name}
    names = {k: unique(f"{a.joint}_{'actuator' if a.kind == 'other' else a.kind}" if a.joint else f"actuator_{k}", taken)
             for k, a in enumerate(info.actuators) if not a.name}  # fmt: skip
    info.actuators = [replace(a, name=names.get(k, a.name)) for k, a in enumerate(info.actuators)]
    info.given_names = set(names.values())
    return names


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
    plan.motors = {a.name for a in info.actuators if a.kind == "motor"}
    for a in info.actuators:
        if a.ctrlrange:  # a position servo's too, beside motors: its targets span its range
            low, high = a.ctrlrange
            off_centre = abs(low + high) > 1e-9 * (high - low)
            wide = a.name in plan.motors and abs((high - low) / 2 - 1) > 1e-9  # +-80 N m: not +-1
            if high > low and (off_centre or wide):
                plan.ctrl_spans[a.name] = ((low + high) / 2, (high - low) / 2)
    if plan.ctrl_spans:
        spans = sorted({f"[{num(o - s)}, {num(o + s)}]" for o, s in plan.ctrl_spans.values()})
        plan.lines.append(f"actions: {len(plan.ctrl_spans)} actuators take controls in {short(spans)}, not -1..1: "
                          "action.offset and action.scale map actions -1..1 onto those ranges")  # fmt: skip
