"""From what a robot model has (inspect_model.ModelInfo) to what a template needs: the joints and
actuators the policy drives, and the generated `robot.py` whose `apply(spec)` adds what is missing
(position actuators, a floating base, a floor, an IMU, foot contact sensors, an end-effector site,
the `home` keyframe). Each finding and each addition is one line of the report new-task prints.
"""

from __future__ import annotations

import json
import textwrap
from dataclasses import dataclass, field
from pathlib import Path
from string import Template

import mujoco
import numpy as np

from robolearn.errors import UserError
from robolearn.scaffold.inspect_model import BaseJoint, ModelInfo
from robolearn.scene.geometry import CLEARANCE, lowest_point

TEMPLATES = Path(__file__).parent / "templates"


@dataclass
class RobotPlan:
    joints: list[str]
    """The joints the policy drives, in action order."""
    actuators: list[str]
    """The policy's actuators in action order (empty: every actuator, some being unnamed)."""
    position: bool
    """Every policy actuator is a position servo (actions are joint targets)."""
    tracked: list[str] = field(default_factory=list)
    """The joints the task's targets and joint observations are about: `joints`, or where no
    actuator drives a joint directly (tendons, muscles), every hinge/slide joint of the model."""
    joint_actuators: bool = True
    """Every policy actuator drives a joint (not a tendon, site or body)."""
    integrator: str | None = None
    """The integrator the task YAML sets (sim.integrator), None to keep the model's."""
    lines: list[str] = field(default_factory=list)
    """The report: what was found, guessed and added."""
    steps: list[str] = field(default_factory=list)
    """The edits robot.py's apply() makes, in order (templates/robot/<step>.py.tmpl)."""
    constants: list[str] = field(default_factory=list)
    """robot.py's constant definitions."""
    joint_ranges: dict[str, tuple[float, float]] = field(default_factory=dict)
    default_pose: dict[str, float] = field(default_factory=dict)
    base: str | None = None
    base_height: float = 0.0
    ctrl_spans: dict[str, tuple[float, float]] = field(default_factory=dict)
    """Policy actuators (not position servos) whose control range is not centred on 0, e.g. a
    muscle's [0, 1]: (offset, scale) that map actions -1..1 onto that range, so that a policy's
    exploration around 0 is not half clipped away."""
    planar: list[BaseJoint] = field(default_factory=list)
    """A planar robot's base joints (locomotion on a planar base: no free joint), else empty."""
    limbs: list[str] = field(default_factory=list)
    """A planar robot's other hinge/slide joints (its legs), driven or not."""
    foot_sensors: list[str] = field(default_factory=list)
    ee_sensor: str | None = None
    """The end effector's position sensor (framepos, base frame), read by the reach terms."""
    workspace: list[tuple[float, float]] = field(default_factory=list)
    """The end effector's [low, high] per axis x, y, z in the base frame: the reach target's ranges."""

    def robot_py(self, model_file: str) -> str | None:
        """The generated robot.py, or None when the model needs no edit."""
        if not self.steps:
            return None
        header = Template((TEMPLATES / "robot" / "header.py.tmpl").read_text())
        text = header.substitute(model_file=model_file, report="\n".join(textwrap.fill(f"- {line}", 100, subsequent_indent="  ") for line in self.lines))
        text += "\n\n".join(self.constants) + "\n"
        for step in self.steps:
            text += (TEMPLATES / "robot" / f"{step}.py.tmpl").read_text()
        calls = "\n".join(f"    {step}(spec)" for step in self.steps)
        text += f'\n\ndef apply(spec: mujoco.MjSpec) -> None:\n    """Edit the model before it compiles (the task\'s edit_spec)."""\n{calls}\n'
        return text


def _short(names: list[str], limit: int = 6) -> str:
    return ", ".join(names) if len(names) <= limit else ", ".join(names[:limit]) + f", ... ({len(names)} in all)"


def _unique(name: str, taken: set[str]) -> str:
    candidate, k = name, 2
    while candidate in taken:
        candidate, k = f"{name}_{k}", k + 1
    taken.add(candidate)
    return candidate


def _names(model: mujoco.MjModel, objtype: mujoco.mjtObj, count: int) -> set[str]:
    return {mujoco.mj_id2name(model, objtype, i) or "" for i in range(count)}


def _fmt(value: float) -> str:
    return repr(round(float(value), 4))


def _q(name: str) -> str:
    return json.dumps(name)


def _mapping(entries: dict[str, str]) -> str:
    """A dict literal, one entry a line: {"name": <value text>}."""
    return "{" + "".join(f"\n    {_q(k)}: {v}," for k, v in entries.items()) + ("\n}" if entries else "}")


def _const(name: str, value: str, doc: str, annotation: str = "") -> str:
    """A module constant (with a type annotation if given) and its docstring, wrapped to 100 columns."""
    lines = textwrap.wrap(doc, 97)
    body = lines[0] if len(lines) == 1 else "\n".join(lines)
    return f'{name}{": " + annotation if annotation else ""} = {value}\n"""{body}"""'


def _tuple(values) -> str:
    return "(" + ", ".join(_fmt(v) for v in values) + ")"


def default_joint_value(info: ModelInfo, name: str) -> float:
    """The model's own default (qpos0) for a joint, moved inside its limits."""
    joint = next(j for j in info.joints if j.name == name)
    return float(np.clip(0.0, *joint.range)) if joint.range else 0.0


def plan_robot(info: ModelInfo, model: mujoco.MjModel, template: str) -> RobotPlan:
    """What the generated task drives and which edits it makes, for `template` (minimal, reach or
    locomotion)."""
    legged = template == "locomotion"
    by_name = {j.name: j for j in info.joints}
    if info.actuators:
        joints = [a.joint for a in info.actuators if a.joint]
        named = all(a.name for a in info.actuators)
        plan = RobotPlan(joints, [a.name for a in info.actuators] if named else [], info.position_only)
        kinds = sorted({a.kind for a in info.actuators})
        plan.lines.append(f"actuators: {len(info.actuators)} ({', '.join(kinds)}): {_short([a.name or '<unnamed>' for a in info.actuators])}")
        plan.joint_actuators = all(a.joint for a in info.actuators)
        odd = [a.name or "<unnamed>" for a in info.actuators if a.kind == "other" or not a.joint]
        if odd:
            plan.lines.append(f"actuators {_short(odd)} are neither a motor nor a position servo on a hinge or slide "
                              "joint: a deploy bundle hands the robot driver their MuJoCo ctrl (robot.yaml kind "
                              "'actuator'), which it must apply as the MJCF does")  # fmt: skip
        if not named:
            plan.lines.append("some actuators have no name: the task drives every actuator (action.actuators: [])")
        elif not plan.position:
            _plan_ctrl_spans(plan, info)
        idle = [j.name for j in info.joints if j.name not in joints and j.name not in {b.name for b in info.planar}]
        if plan.joint_actuators and idle:
            plan.lines.append(f"joints no actuator drives: {_short(idle)} (they move only when pushed; add actuators "
                              "in the MJCF or robot.py if the robot drives them)")  # fmt: skip
    else:
        if not info.joints:
            raise UserError(f"{info.path.name} has no hinge or slide joint and no actuator: nothing for a policy to drive")
        # a walker's planar base (rootx, rootz, rooty) is not the robot's to drive; for the other templates a
        # slide under the root body is a rail the robot drives (a gantry, a cart)
        base_joints = {b.name for b in info.planar} if legged else set()
        joints = [j.name for j in info.joints if j.name not in base_joints]
        if not joints:
            raise UserError(f"{info.path.name} has no joint but its base's ({', '.join(sorted(base_joints))}) and no "
                            "actuator: nothing for a policy to drive")  # fmt: skip
        plan = RobotPlan(joints, list(joints), True)
        kp = float(max(5, round(2 * info.mass)))
        kd = round(kp / 40, 3)
        effort = {j.name: j.effort for j in info.joints if j.effort}
        plan.steps.append("add_position_actuators")
        plan.lines.append(f"actuators: none -> added a position servo on each of the {len(joints)} joints "
                          f"(KP={_fmt(kp)}, KD={_fmt(kd)}: placeholders, set your robot's gains in robot.py)")  # fmt: skip
        plan.constants.append(_const("KP", _fmt(kp), "Position gain of every servo [N m/rad or N/m]. TODO: a placeholder "
                                     f"(2 x the robot's {info.mass:.1f} kg): set your robot's."))  # fmt: skip
        plan.constants.append(_const("KD", _fmt(kd), "Damping gain of every servo [N m s/rad or N s/m]. TODO: a "
                                     "placeholder: set your robot's."))  # fmt: skip
        note = ("From the model's joint effort limits." if effort else
                "TODO: the model gives none, so the servos are not force-limited: add your motors' peak torques.")
        plan.constants.append(_const("EFFORT_LIMIT", _mapping({n: _fmt(v) for n, v in effort.items()}),
                                     f"Peak force of each joint's servo [N m or N]. {note}"))  # fmt: skip
        plan.constants.append(_const("JOINT_RANGE", _mapping({j.name: _tuple(j.range) for j in info.joints if j.range}),
                                     "Limits of the joints that have them: their servos' ctrlrange [rad or m]."))  # fmt: skip
    plan.tracked = list(joints) or [j.name for j in info.joints]
    if not joints and plan.tracked:
        plan.lines.append(f"no actuator drives a joint directly (tendons, muscles): the task's joint targets and "
                          f"observations are the model's {len(plan.tracked)} joints")  # fmt: skip
    if info.mocap_welds:
        plan.steps.append("release_mocap_welds")
        pairs = "".join(f"\n    ({_q(a)}, {_q(b)})," for a, b, _, _ in info.mocap_welds)
        plan.constants.append(_const("MOCAP_WELDS", f"({pairs}\n)", "Weld/connect constraints (their two bodies or "
                                     "sites) that tie the robot to a mocap body: turned off by apply()."))  # fmt: skip
        held = ", ".join(f"{m} holds {b}" for _, _, m, b in info.mocap_welds)
        plan.lines.append(f"mocap welds: {held} -> turned off (nothing moves a mocap body in a robolearn task, so "
                          "the weld would pin the robot against the policy; MOCAP_WELDS in robot.py)")  # fmt: skip
    if info.loose:
        plan.lines.append(f"free body {info.loose} carries no joint and no actuator: a loose object, not the robot's "
                          "base (the robot is the body tree under the world with the most actuated joints)")  # fmt: skip
    plan.joint_ranges = {name: by_name[name].range for name in plan.tracked if name in by_name and by_name[name].range}
    plan.constants.insert(0, _const("JOINTS", "(" + "".join(f"\n    {_q(name)}," for name in joints) + "\n)",
                                    "The joints the policy drives, in action order."))  # fmt: skip
    kinds = {j.slide for j in info.joints}
    what = "slide" if kinds == {True} else "hinge" if kinds == {False} else "hinge/slide"
    plan.lines.insert(0, f"joints: {len(info.joints)} {what}: {_short([j.name for j in info.joints])}")

    if plan.position and int(model.opt.integrator) == int(mujoco.mjtIntegrator.mjINT_EULER):
        # Euler integrates a servo's damping explicitly: unstable once kd * timestep exceeds about twice
        # the joint's inertia, which light links (wrists, ankles, fingers) reach with robot-sized gains
        plan.integrator = "implicitfast"
        plan.lines.append("integrator: euler -> implicitfast in the task's sim: options (MuJoCo's choice for position "
                          "servos: their damping is integrated implicitly, stable on light links)")  # fmt: skip
    sites = _names(model, mujoco.mjtObj.mjOBJ_SITE, model.nsite)
    sensors = _names(model, mujoco.mjtObj.mjOBJ_SENSOR, model.nsensor)
    if legged:
        _plan_legs(plan, info, model, sites, sensors)
    elif template == "reach":
        _plan_reach(plan, info, model, sites, sensors)
    return plan


def _plan_ctrl_spans(plan: RobotPlan, info: ModelInfo) -> None:
    for a in info.actuators:
        if a.ctrlrange and a.kind != "position":
            low, high = a.ctrlrange
            if high > low and abs(low + high) > 1e-9 * (high - low):
                plan.ctrl_spans[a.name] = ((low + high) / 2, (high - low) / 2)
    if plan.ctrl_spans:
        spans = sorted({f"[{_fmt(o - s)}, {_fmt(o + s)}]" for o, s in plan.ctrl_spans.values()})
        plan.lines.append(f"actions: {len(plan.ctrl_spans)} actuators take controls in {', '.join(spans)}, not "
                          "centred on 0: action.offset and action.scale map actions -1..1 onto those ranges")  # fmt: skip


def _plan_legs(plan: RobotPlan, info: ModelInfo, model: mujoco.MjModel, sites: set[str], sensors: set[str]) -> None:
    _plan_base(plan, info)
    if not info.has_floor:
        plan.steps.append("add_floor")
        plan.lines.append("floor: missing -> added a ground plane 'floor'")
        if not info.has_light:
            plan.steps.append("add_light")
    if info.imu_site:
        plan.lines.append(f"IMU: site {info.imu_site} on the base")
    elif plan.base and not plan.planar:
        imu = _unique("imu", sites)
        plan.steps.append("add_imu")
        plan.constants.append(_const("IMU_SITE", _q(imu), f"The IMU's site on the base (its sensors: {imu}_gyro, _acc, _quat)."))
        plan.lines.append(f"IMU: missing -> added site '{imu}' on {plan.base} with a gyro, an accelerometer and a framequat")
    _plan_feet(plan, info, sites | sensors)
    _plan_home(plan, info, model)


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
        driven = [f"{a.joint} by {a.name}" for a in info.actuators if a.joint in info.root_joints]
        why = (f"driven ({', '.join(driven)}: a rail or a mount the robot moves, not a base that moves freely)"
               if driven else "none of them a horizontal slide no actuator drives")  # fmt: skip
        raise UserError(f"the locomotion template needs a robot that moves freely or on a planar base (a horizontal "
                        f"slide joint no actuator drives); {info.path.name}'s root body {info.root} is held by {held}, "
                        f"{why}: use --template minimal or reach")  # fmt: skip
    elif info.root:
        plan.steps.append("add_free_joint")
        plan.lines.append(f"floating base: missing -> added a free joint on the root body {info.root}")
    if plan.base:
        plan.constants.append(_const("BASE", _q(plan.base), "The floating base's body."))


def _plan_feet(plan: RobotPlan, info: ModelInfo, taken: set[str]) -> None:
    """Each foot's touch sensor: the model's, or one added (named apart from the `taken` site and sensor names)."""
    if not info.feet:
        plan.lines.append("feet: none found (no leaf body of a leg chain reaches the ground): the task has no foot "
                          "contact terms; add touch sensors and a feet_air_time reward by hand")  # fmt: skip
        return
    plan.lines.append(f"feet (guessed: the leaf body of each leg chain that reaches the ground): "
                      f"{_short([f.body for f in info.feet], 8)}")  # fmt: skip
    new = {}
    for foot in info.feet:
        if foot.sensor:
            plan.foot_sensors.append(foot.sensor)
        else:
            name = _unique(f"{foot.body}_contact", taken)
            new[name] = foot
            plan.foot_sensors.append(name)
    if new:
        plan.steps.append("add_foot_sensors")
        entries = {name: f"({_q(f.body)}, {_tuple(f.point)}, {_fmt(f.radius)})" for name, f in new.items()}
        plan.constants.append(_const("NEW_FOOT_SENSORS", _mapping(entries), "Touch sensors new-task added: sensor (and "
                                     "site) name -> (foot body, contact point in its frame [m], site radius [m])."))  # fmt: skip
        plan.lines.append(f"foot contact sensors: missing on {len(new)} feet -> added touch sensors {_short(list(new), 8)}")
    if len(new) < len(info.feet):
        have = [f.sensor for f in info.feet if f.sensor]
        plan.lines.append(f"foot contact sensors: {_short(have, 8)}")


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
    pose = _mapping({name: _fmt(v) for name, v in plan.default_pose.items()})
    if plan.planar:
        pose_doc = ("The standing pose [rad or m], the planar base's joints included: the `home` keyframe, the action "
                    "offset and the reference of relative joint observations. new-task's guess: each joint at 0 within "
                    "its limits. TODO: set your robot's standing pose (and the height slide with it).")  # fmt: skip
        height_doc = (f"Height of {plan.base} above the ground in the home pose [m] (the planar base sets it through "
                      "its height slide in DEFAULT_POSE).")  # fmt: skip
    else:
        pose_doc = ("The standing pose [rad or m]: the `home` keyframe, the action offset and the reference of relative "
                    "joint observations. new-task's guess: 0 within each joint's limits. TODO: set your robot's "
                    "standing pose.")  # fmt: skip
        height_doc = ("Base height in the home pose [m]. None: computed from DEFAULT_POSE when the model compiles, the "
                      f"robot's lowest point 5 mm above the ground ({plan.base_height:.3f} m in new-task's pose).")  # fmt: skip
    plan.constants.append(_const("DEFAULT_POSE", pose, pose_doc))
    height_value = _fmt(plan.base_height) if plan.planar else "None"
    plan.constants.append(_const("BASE_HEIGHT", height_value, height_doc, "" if plan.planar else "float | None"))
    plan.lines.append(f"home keyframe: missing -> added 'home': each joint at 0 within its limits, {where}; set "
                      "DEFAULT_POSE in robot.py")


def _plan_reach(plan: RobotPlan, info: ModelInfo, model: mujoco.MjModel, sites: set[str], sensors: set[str]) -> None:
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
        body, point = int(model.site_bodyid[site]), model.site_pos[site]
        ref = int(model.sensor_refid[s]) if int(model.sensor_reftype[s]) in (int(mujoco.mjtObj.mjOBJ_XBODY),
                                                                             int(mujoco.mjtObj.mjOBJ_BODY)) else 0  # fmt: skip
        plan.base = mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_BODY, ref) or "world"
        plan.lines.append(f"end effector: sensor {info.ee_sensor} (position of site "
                          f"{mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_SITE, site)} in the frame of {plan.base})")
    elif info.tip is None or plan.base is None:
        raise UserError(f"{info.path.name}: no end effector found (no body below a joint chain); the reach template needs an arm")
    else:
        body = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, info.tip)
        ref = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, plan.base)
        plan.constants.append(_const("BASE", _q(plan.base), "The arm's base body: the frame of the end-effector position "
                                     "and of its target."))  # fmt: skip
        if info.tip_site:
            site = info.tip_site
            point = model.site_pos[mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_SITE, site)]
            plan.lines.append(f"end effector (guessed: the end of the longest joint chain): site {site} on body {info.tip}")
        else:
            site, point = _unique("ee", sites), np.array(info.tip_point)
            plan.steps.append("add_ee_site")
            plan.constants.append(_const("EE_BODY", _q(info.tip), "The end effector's body (new-task's guess: the end of "
                                         "the longest joint chain)."))  # fmt: skip
            plan.constants.append(_const("EE_POINT", _tuple(point), "The end effector's point in EE_BODY's frame [m] "
                                         "(new-task's guess: its geometry's point farthest from the arm's base)."))  # fmt: skip
            plan.lines.append(f"end effector (guessed: the end of the longest joint chain): body {info.tip} -> added site "
                              f"'{site}' at {_tuple(point)} in its frame")  # fmt: skip
        plan.ee_sensor = _unique("ee_pos", sensors)
        plan.steps.append("add_ee_sensor")
        plan.constants.append(f"EE_SITE = {_q(site)}\n" + _const("EE_SENSOR", _q(plan.ee_sensor), "The end effector's "
                              "site and its position sensor (a framepos in BASE's frame), read by the reach terms."))  # fmt: skip
        plan.lines.append(f"end-effector position sensor: missing -> added framepos sensor '{plan.ee_sensor}' of site "
                          f"'{site}' in the frame of {plan.base}")  # fmt: skip
    plan.workspace = _workspace(info, model, body, np.asarray(point, dtype=float), ref,
                                _chain_joints(model, body, ref, plan.joints if plan.joint_actuators else None))
    moving = sum(high - low >= 0.01 for low, high in plan.workspace)
    if moving < 2:  # a point, or a line (a gripper's slide): not an arm's reach
        what = f"sensor {plan.ee_sensor}'s site" if info.ee_sensor else f"body {mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_BODY, body)}"
        how = "does not move" if moving == 0 else "moves along one line only"
        raise UserError(f"{info.path.name}: the end effector ({what}) {how} relative to {plan.base} with the joints "
                        "the policy drives; the reach template needs actuators that move it (add them, or use --template "
                        "minimal)")  # fmt: skip


def _chain_joints(model: mujoco.MjModel, body: int, ref: int, driven: list[str] | None) -> list[str]:
    """The hinge/slide joints between body `ref` and body `body` (what moves the end effector in
    ref's frame): those of `driven`, or all of them where `driven` is None (actuators on tendons
    or muscles move joints without naming them)."""
    chain = []
    b = body
    while b not in (ref, 0):
        for j in range(int(model.body_jntadr[b]), int(model.body_jntadr[b]) + int(model.body_jntnum[b])):
            if int(model.jnt_type[j]) in (int(mujoco.mjtJoint.mjJNT_HINGE), int(mujoco.mjtJoint.mjJNT_SLIDE)):
                chain.append(mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_JOINT, j))
        b = int(model.body_parentid[b])
    return [name for name in chain if name and (driven is None or name in driven)]


def _workspace(info: ModelInfo, model: mujoco.MjModel, body: int, point: np.ndarray, ref: int, joints: list[str],
               samples: int = 2000) -> list[tuple[float, float]]:
    """[low, high] per axis of the end effector's position in body `ref`'s frame over random joint
    configurations within the limits (a joint without limits: a full turn, or 0.5 m either way for
    a slide): the middle 80 % of each axis (targets the arm can reach)."""
    gen = np.random.default_rng(0)
    data = mujoco.MjData(model)
    mujoco.mj_kinematics(model, data)
    ref_height = float(data.xpos[ref, 2])  # where the base stands in the model's own pose
    found = []
    limits = {j.name: j.range or ((-0.5, 0.5) if j.slide else (-np.pi, np.pi)) for j in info.joints}
    addresses = [(int(model.joint(name).qposadr[0]), limits[name]) for name in joints]
    for _ in range(samples):
        data.qpos[:] = model.qpos0
        for adr, (low, high) in addresses:
            data.qpos[adr] = gen.uniform(low, high)
        mujoco.mj_kinematics(model, data)
        world = data.xpos[body] + data.xmat[body].reshape(3, 3) @ point
        found.append(data.xmat[ref].reshape(3, 3).T @ (world - data.xpos[ref]))
    found = np.array(found)
    low, high = np.percentile(found, 10, axis=0), np.percentile(found, 90, axis=0)
    if info.has_floor:  # targets at least 5 cm above the ground, where the arm reaches that high
        low[2] = min(max(low[2], 0.05 - ref_height), high[2])
    return [(round(float(lo), 2) + 0.0, round(float(hi), 2) + 0.0) for lo, hi in zip(low, high)]
