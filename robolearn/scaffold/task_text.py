"""The generated task YAML: its training recipe's size (num_envs), the action mapping, and each
template's terms filled in from the robot's plan (robot_edits.plan_robot)."""

from __future__ import annotations

import json
import re

from robolearn.memory import gib
from robolearn.scaffold import pose_plan
from robolearn.scaffold.plan import TEMPLATES, RobotPlan, num, render
from robolearn.task_yaml import yaml_string


def _names(names: list[str]) -> str:
    return ", ".join(yaml_string(n) for n in names)


UNLIMITED_TARGET_SPREAD = 0.8
"""The minimal template's targets for a hinge without limits: its default pose's angle +- this [rad]
(a limited joint's span its range less 10 % at each end)."""


def _joint_pos_terms(plan: RobotPlan, joints: list[str] | None, relative: bool, noise: str, units: str | None) -> dict[str, str]:
    """The policy's and the critic's joint position terms (their YAML lines) over `joints` (None: every
    joint, the params naming none): joint_pos, and joint_pos_cos_sin for the unlimited hinges among
    them (plan.unlimited_hinges), whose angle grows without bound as they turn."""
    every = plan.robot_joints if joints is None else joints
    turning = [j for j in every if j in plan.unlimited_hinges]
    plain = [j for j in every if j not in plan.unlimited_hinges]
    named = joints is not None or bool(turning)
    policy, critic = [], []
    if plain:
        params = ", ".join(filter(None, ["relative: true" if relative else "", f"joints: [{_names(plain)}]" if named else ""]))
        unit = f", units: {units if units is not None else _units(plan, plain, '')}"
        policy.append(f"      joint_pos: {{func: joint_pos, params: {{{params}}}{unit}, noise: {{scale: {noise}}}}}")
        critic.append(f"      joint_pos: {{func: joint_pos, params: {{{params}}}}}")
    if turning:
        params = f"params: {{joints: [{_names(turning)}]}}"
        policy.append(f"      joint_pos_cos_sin: {{func: joint_pos_cos_sin, {params}, noise: {{scale: {noise}}}}}"
                      "  # unlimited hinges: cos and sin of the angle, bounded however far they turn")  # fmt: skip
        critic.append(f"      joint_pos_cos_sin: {{func: joint_pos_cos_sin, {params}}}")
    return dict(joint_pos_policy="\n".join(policy), joint_pos_critic="\n".join(critic))


SERVO_ACTION_SCALE = {"minimal": 0.5, "locomotion": 0.25, "reach": 1.0, "pose": 0.5}
"""How far from the default pose an action of 1 sets a position servo's target [rad or m], per
template. reach draws its targets where the end effector goes with every joint within 1.2 rad of
home (reach_plan.REACH_SPREAD): at 0.5, an arm whose servos hold it stiffly had to learn actions of
2 and more to get there, and a light two-link arm ended 80 mm from its targets after 300 iterations,
against 15 mm at 1.0; the built-in arm reached 8 mm at both. pose's targets lie within 0.8 rad,
and on the built-in arm 0.5 and 1.0 gave the same errors (docs/benchmarks.md, "The reach
template's action scale")."""


CPU_MODEL_COPIES_BYTES = 8 * 2**30
"""What a generated recipe's environments may hold in MjModel copies on the CPU backend: each
environment there has its own copy once an event randomizes a model field (the templates' friction
and mass events do). The copies leave visual meshes and textures out (physics/physics_copy.py), so
only a robot whose collision geometry itself is heavy gets fewer environments than the template's
default."""
TEMPLATE_NUM_ENVS = {"minimal": 128, "locomotion": 1024, "reach": 512, "pose": 512}
TEMPLATE_FOLDER = {"pose": "reach"}
"""Templates written from another's files (pose: reach's, with the orientation target filled in)."""


def num_envs(template: str, model_bytes: int) -> tuple[int, str]:
    """The recipe's env.num_envs and, where the model's size lowered it, why (else ''):
    the template's default, halved until its per-environment model copies fit CPU_MODEL_COPIES_BYTES
    (at least 16)."""
    wanted = n = TEMPLATE_NUM_ENVS[template]
    while n > 16 and n * model_bytes > CPU_MODEL_COPIES_BYTES:
        n //= 2
    if n == wanted:
        return n, ""
    return n, (f"not {wanted}: on a CPU each environment holds its own copy of this {gib(model_bytes)} model for the "
               f"randomized model fields ({gib(wanted * model_bytes)} at {wanted}); a GPU needs none")  # fmt: skip


def _action_values(plan: RobotPlan, servo_scale: float) -> dict[str, str]:
    """The task YAML's `action.scale` and `action.offset`: position servos get `servo_scale` (about
    their default pose), or their joint's range width where that is narrower, wheels their top speed; actuators whose controls are off-centre (plan.ctrl_spans) get the offset and
    scale that map -1..1 onto their range: one value when every actuator shares one span, else per
    actuator (keys are patterns: the names escaped)."""
    key = lambda name: json.dumps(re.escape(name))  # noqa: E731
    if plan.position:  # a servo on a joint narrower than servo_scale (a 4 cm gripper slide) gets that width
        scales = {a: plan.wheels[a] if a in plan.wheels else min(servo_scale, plan.servo_widths.get(a, servo_scale))
                  for a in plan.actuators}  # fmt: skip
        if all(v == servo_scale for v in scales.values()):
            return {"action_scale": num(servo_scale), "action_offset": "0.0"}
        return {"action_scale": "{" + ", ".join(f"{key(a)}: {num(v)}" for a, v in scales.items()) + "}",
                "action_offset": "0.0"}  # fmt: skip
    factors, why = _motor_factors(plan)
    if not plan.ctrl_spans and len(set(factors.values())) <= 1:  # every actuator's ctrl spans -1..1: one scale for all
        factor = next(iter(factors.values()), 1.0)
        return {"action_scale": "1.0" if factor == 1.0 else f"{_small(factor)}  # not 1.0: {why}", "action_offset": "0.0"}
    shared = set(factors.values())
    note = "" if shared <= {1.0} else f"  # motors x {_small(next(iter(shared)))}: {why}" if len(shared) == 1 else f"  # motors scaled: {why}"
    spans = {a: (offset, scale * factors.get(a, 1.0)) for a, (offset, scale) in plan.ctrl_spans.items()}
    spans.update({a: (0.0, f) for a, f in factors.items() if a not in spans and f != 1.0})
    if len(spans) == len(plan.actuators) and len(set(spans.values())) == 1:
        offset, scale = next(iter(spans.values()))
        return {"action_scale": _small(scale) + note, "action_offset": num(offset)}
    scale = ", ".join(f"{key(n)}: {_small(s)}" for n, (_, s) in spans.items())
    offset = ", ".join(f"{key(n)}: {num(o)}" for n, (o, _) in spans.items())
    return {"action_scale": f"{{{scale}}}  # the others: 1.0{note.replace('  #', ';')}",
            "action_offset": f"{{{offset}}}  # the others: 0"}


def _small(value: float) -> str:
    """A scale as num() writes it, or in exponent form (with a decimal point, which YAML needs to read
    a float) where num() would round it to 0: a capped 1e9 N m motor's 1.668e-09."""
    return num(value) if abs(value) >= 1e-3 or value == 0 else f"{value:.3e}"


def _motor_factors(plan: RobotPlan) -> tuple[dict[str, float], str]:
    """What each motor's action scale is multiplied by, and why: the largest that keeps the simulation
    finite where full effort does not (limit_probe.motor_scales), else SOFT_LIMITS_SCALE where the
    joint limits are soft for them, else 1."""
    if plan.motor_scales:
        return dict(plan.motor_scales), "at full effort these motors make the simulation diverge (new-task's README)"
    if plan.soft_limits:
        return dict.fromkeys(plan.motors, SOFT_LIMITS_SCALE), ("these motors overshoot the joint limits at full effort (see "
                                                               "terminations); the policy's first actions push at a third of it")  # fmt: skip
    return dict.fromkeys(plan.motors, 1.0), ""


SOFT_LIMITS_SCALE = 0.3
"""The action scale of motors whose joint limits are soft for them (plan.soft_limits): at full
effort from the first, random actions, gymnasium's Walker2d toppled within ~8 steps and had not
stood up after 210 iterations; at 0.3 its episodes lasted ~70 steps by iteration 66
(docs/benchmarks.md, 2026-11-29). Actions are not clipped: the policy can still ask for full effort."""


def _past_limits(plan: RobotPlan, joints_param: str) -> str:
    """The locomotion templates' termination where the deploy watchdog stops the robot, or, where the
    model's limits are soft for its motors (plan.soft_limits), that line commented out with why."""
    line = (f"past_joint_limits: {{func: joint_pos_past_limits, params: {{margin: 0.1{joints_param}}}}}  # where the "
            "deploy watchdog stops the robot")  # fmt: skip
    if not plan.soft_limits:
        return "  " + line
    joint, past = max(plan.soft_limits.items(), key=lambda item: item[1])
    return (f"  # left out: full motor effort takes {joint} {past:.2f} rad past its range within 0.1 s (its limits are soft "
            "for its motors), so it would end\n  # nearly every early episode; the joint_limits penalty keeps the "
            "policy off them, and sim2sim's watchdog checks the trained one\n  # " + line)  # fmt: skip


def task_yaml(template: str, name: str, asset: str, plan: RobotPlan, timestep: float, model_bytes: int) -> str:
    decimation = max(1, round(0.02 / timestep))
    envs, envs_note = num_envs(template, model_bytes)
    values = dict(name=name, asset=asset, decimation=decimation, control_hz=f"{1.0 / (timestep * decimation):.3g}",
                  num_envs=envs, num_envs_note=f"  # {envs_note}" if envs_note else "",
                  actuators=_names(plan.actuators), num_actions=len(plan.actuators) or len(plan.joints),
                  use_default_offset=str(plan.position).lower(), delay_steps=min(2, decimation),
                  sim_options=f"\nsim: {{integrator: {plan.integrator}}}  # the model's is euler: see README" if plan.integrator else "")  # fmt: skip
    count = values["num_actions"]
    values.update(actions_text=f"{count} action{'s' * (count != 1)}")
    values.update(_action_values(plan, SERVO_ACTION_SCALE[template]))
    only = f"joints: [{_names(plan.robot_joints)}]" if plan.object_joints and plan.robot_joints else ""
    values.update(joints_param=f", {only}" if only else "", joints_params=f", params: {{{only}}}" if only else "")
    values.update(past_joint_limits=_past_limits(plan, f", {only}" if only else ""))
    if template in ("locomotion", "reach", "pose") and not plan.planar:
        values.update(_joint_pos_terms(plan, plan.robot_joints if only else None, relative=True,
                                       noise="0.01" if template == "locomotion" else "0.005", units="rad"))  # fmt: skip
    servos = [a for a in plan.actuators if a not in plan.wheels]  # a wheel's velocity servo has no stiffness to vary
    only_servos = f", actuators: [{_names(servos)}]" if plan.wheels else ""
    pd_gains = ("\n  pd_gains:\n    func: randomize_pd_gains\n    mode: reset\n    level: default\n"
                f"    params: {{kp_range: [0.85, 1.15], kd_range: [0.8, 1.2]{only_servos}}}") if plan.position and servos else ""  # fmt: skip
    if template == "minimal":
        ranges = []
        for joint in plan.tracked:
            if joint in plan.unlimited_hinges:  # about the default pose's angle: its error is wrapped to +-pi
                centre = plan.unlimited_hinges[joint]
                low, high = centre - UNLIMITED_TARGET_SPREAD, centre + UNLIMITED_TARGET_SPREAD
            else:
                low, high = plan.joint_ranges.get(joint, (-1.0, 1.0))
                low, high = low + 0.1 * (high - low), high - 0.1 * (high - low)
            ranges.append(f"{yaml_string(joint)}: [{num(low)}, {num(high)}]")
        observed = [*plan.tracked, *(j for j in plan.robot_joints if j not in plan.tracked)]  # a pole no actuator drives too
        wrapped = [j for j in plan.tracked if j in plan.unlimited_hinges]
        values.update(joints=_names(plan.tracked), joints_text=f"{len(plan.tracked)} joint{'s' * (len(plan.tracked) != 1)}",
                      command_ranges=", ".join(ranges), wrap_param=f", wrap: [{_names(wrapped)}]" if wrapped else "",
                      observed=_names(observed), vel_units=_units(plan, observed, "/s"),
                      target_units=_units(plan, plan.tracked, ""))  # fmt: skip
        values.update(_joint_pos_terms(plan, observed, relative=False, noise="0.01", units=None))
    elif template == "locomotion" and plan.planar:
        return render(TEMPLATES / template / "planar.yaml.tmpl", **values, **_planar_values(plan, pd_gains))
    elif template == "locomotion":
        critic_feet, air_time = _feet_terms(plan, "base_velocity")
        energy = "\n  energy_per_meter: {func: mechanical_power, per: meter, units: J/m}"
        if plan.joint_actuators and not plan.geared:  # actuator forces are computed for joint actuators only (mdp/state.py)
            effort = "torques: {func: joint_torques_l2, weight: -2.0e-4}"
        elif plan.joint_actuators:
            effort = ("effort: {func: action_l2, weight: -0.01}  # on the actions: geared motors' joint torques (gear x "
                      "ctrl) would make joint_torques_l2 at -2e-4 outweigh the tracking rewards")  # fmt: skip
        else:
            effort, energy = "effort: {func: action_l2, weight: -0.01}  # joint_torques_l2 sees joint actuators only", ""
        values.update(effort_reward=effort, energy_metric=energy)
        values.update(base=yaml_string(plan.base or ""), critic_feet=critic_feet, feet_air_time=air_time,
                      pd_gains=pd_gains)  # fmt: skip
        values.update(lateral_range="[0.0, 0.0]" if plan.rolls else "[-0.5, 0.5]",
                      lateral_note="  # no lateral speed: the robot rolls on wheels alone" if plan.rolls else "")  # fmt: skip
    else:
        (x, y, z) = plan.workspace
        values.update(base=plan.base, ee_sensor=yaml_string(plan.ee_sensor or ""), pd_gains=pd_gains,
                      range_x=f"[{num(x[0])}, {num(x[1])}]", range_y=f"[{num(y[0])}, {num(y[1])}]",
                      range_z=f"[{num(z[0])}, {num(z[1])}]", template=template,
                      workspace_note=plan.workspace_note)  # fmt: skip
        values.update(_orientation_values(plan))
    return render(TEMPLATES / TEMPLATE_FOLDER.get(template, template) / "task.yaml.tmpl", **values)


def _orientation_values(plan: RobotPlan) -> dict[str, str]:
    """The reach template's orientation sections: the pose template's orientation command, its
    observations, rewards and metric (empty for reach)."""
    if not plan.orientation:
        return dict(goal="position", orientation_command="", orientation_policy="", orientation_critic="",
                    orientation_rewards="", orientation_metrics="")  # fmt: skip
    ranges = ", ".join(f"{axis}: [{num(low)}, {num(high)}]" for axis, (low, high) in zip(("roll", "pitch", "yaw"), plan.orientation))
    sensor = f"sensor: [{yaml_string(plan.ee_quat_sensor or '')}], command: ee_orientation"
    centre = ", ".join(num((low + high) / 2) for low, high in plan.orientation)
    command = f"{{func: command_quat, params: {{name: ee_orientation, near: [{centre}]}}}}"  # a continuous sign
    return dict(
        goal="position and orientation",
        orientation_command=("\n  ee_orientation:  # roll, pitch, yaw [rad] of the end effector in the frame of body "
                             f"{plan.base} (yaw about z, then pitch, then roll): its default pose's +- "
                             f"{num(pose_plan.ORIENTATION_SPREAD)}\n    ranges: {{{ranges}}}\n    resampling_time_s: [2.0, 2.0]"),
        orientation_policy=f"\n      ee_orientation: {command}  # a unit quaternion (w, x, y, z), signed as near's",
        orientation_critic=(f"\n      ee_orientation: {command}\n      ee_quat: {{func: sensor, params: {{names: "
                            f"[{yaml_string(plan.ee_quat_sensor or '')}]}}}}"),
        orientation_rewards=(f"\n  ee_orientation: {{func: orientation_command_error, weight: -0.2, params: {{{sensor}}}}}"
                             f"\n  ee_orientation_fine: {{func: orientation_command_error_tanh, weight: 0.5, params: "
                             f"{{{sensor}, std: 0.3}}}}"),
        orientation_metrics=(f"\n  ee_orientation_error: {{func: orientation_command_error, params: {{{sensor}}}, per: final, "
                             "window_s: 1.0, units: rad}"),
    )  # fmt: skip


def _units(plan: RobotPlan, joints: list[str], per: str) -> str:
    """A joint term's units: rad for hinges, m for slides (plan.slides), both where they mix."""
    kinds = sorted({"m" if j in plan.slides else "rad" for j in joints}, reverse=True) or ["rad"]
    text = " or ".join(k + per for k in kinds)
    return json.dumps(text) if " " in text else text


def _feet_terms(plan: RobotPlan, command: str) -> tuple[str, str]:
    """The critic's foot contact observation and the feet_air_time reward, where the robot has foot sensors."""
    if not plan.foot_sensors:
        return "", ""
    sensors = _names(plan.foot_sensors)
    critic = f"\n      feet_contact_forces: {{func: sensor, params: {{names: [{sensors}]}}, scale: 0.01, units: N}}"
    if not plan.stepping:
        return critic, ""
    air_time = (f"\n  feet_air_time:\n    func: feet_air_time\n    weight: 0.5\n    params:\n      sensors: [{sensors}]\n"
                f"      command: {command}\n      target: 0.5")  # fmt: skip
    return critic, air_time


def _planar_values(plan: RobotPlan, pd_gains: str) -> dict[str, str]:
    """What templates/locomotion/planar.yaml.tmpl needs: the base's joints by role, and the terms that
    exist only for some roles (a height slide ends the episode when the base sinks to half its
    standing height; a pitch hinge when the base tilts more than 1 rad from its home angle)."""
    role = lambda *roles: [b for b in plan.planar if b.role in roles]  # noqa: E731
    pose = role("height", "pitch", "yaw")
    base_pose = {"policy": "", "critic": ""}
    if pose:
        joints = _names([b.name for b in pose])
        base_pose["policy"] = (f"\n      base_pose: {{func: joint_pos, params: {{joints: [{joints}], relative: true}}, "
                               'units: "m, rad", noise: {scale: 0.01}}')  # fmt: skip
        base_pose["critic"] = f"\n      base_pose: {{func: joint_pos, params: {{joints: [{joints}], relative: true}}}}"
    terminations = []
    for b in role("height"):
        home, drop = plan.default_pose[b.name], 0.5 * plan.base_height / b.axis[2]
        bounds = f"[{num(home - drop)}, 1000.0]" if drop > 0 else f"[-1000.0, {num(home - drop)}]"
        terminations.append(f"  base_too_low: {{func: joint_pos_out_of_bounds, params: {{joints: [{yaml_string(b.name)}], "
                            f"bounds: {bounds}}}}}  # {plan.base} below {num(0.5 * plan.base_height)} m")  # fmt: skip
    tilt = role("pitch")
    terminations.append(_past_limits(plan, f", joints: [{_names(plan.joints or plan.limbs)}]"))
    for b in tilt:
        home = plan.default_pose[b.name]
        terminations.append(f"  {yaml_string(b.name + '_too_far')}: {{func: joint_pos_out_of_bounds, params: {{joints: [{yaml_string(b.name)}], "
                            f"bounds: [{num(home - 1.0)}, {num(home + 1.0)}]}}}}")  # fmt: skip
    tilt_rewards = ""
    if tilt:
        joints = _names([b.name for b in tilt])
        tilt_rewards = (f"\n  pitch_rate: {{func: joint_vel_l2, weight: -0.05, params: {{joints: [{joints}]}}}}"
                        f"\n  pitch: {{func: joint_pos_l2, weight: -1.0, params: {{joints: [{joints}], relative: true}}}}")  # fmt: skip
    critic_feet, air_time = _feet_terms(plan, "forward_velocity")
    joints = plan.joints or plan.limbs  # the legs' joints (every actuator drives a tendon: all of them)
    return dict(base_joints=_names([b.name for b in plan.planar]), forward=yaml_string(role("forward")[0].name),
                base_pose_policy=base_pose["policy"], base_pose_critic=base_pose["critic"], joints=_names(joints),
                tilt_rewards=tilt_rewards, terminations="\n" + "\n".join(terminations),
                critic_feet=critic_feet, feet_air_time=air_time, base=yaml_string(plan.base or ""), pd_gains=pd_gains)  # fmt: skip
