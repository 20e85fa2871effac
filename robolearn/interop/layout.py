"""robot.yaml's robot side from an Isaac Lab or mjlab run: joints in action order, default pose,
action scale/offset/clip, PD gains, control period and the observation layout.

Every value is resolved from the run's own config (params/env.yaml) against the robot's joint
order; whatever cannot be resolved unambiguously is refused in one line that says what settles it.

Observation terms map onto the deploy runtime's sources where the quantity is the same (base
velocities, projected gravity, joint positions relative to the default pose, joint velocities,
the last action, a velocity command); any other term keeps its own name as the source
(`isaaclab.height_scan`), which a robot supplies with robolearn_deploy's register_source. A term's
width is known for those sources; one term of unknown width takes what the others leave of the
actor's input, two are refused. Isaac Lab and mjlab clip a term before they scale it; the runtime
scales, then clips symmetrically, so a clip [-c, c] with scale s becomes clip |s| c (an
asymmetric clip has no such equivalent and is refused).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from robolearn.errors import UserError
from robolearn.interop.dialects import ActuatorGroup, Dialect
from robolearn.interop.names import match_names, per_name
from robolearn.interop.run_yaml import short_name
from robolearn_deploy.fields import FINITE, GAIN

VELOCITY_COMPONENTS = ("lin_vel_x", "lin_vel_y", "ang_vel_z")
POSITION_PD = ("", "ImplicitActuator", "IdealPDActuator", "DCMotor", "DelayedPDActuator", "RemotizedPDActuator")
"""Actuator models whose joint-level behaviour is a position PD servo (kp, kd, an effort limit);
'' is mjlab, whose dump does not name the class (its joint actuators with stiffness are PD servos)."""
UNITS = {"base_lin_vel": "m/s", "base_ang_vel": "rad/s", "joint_pos": "rad", "joint_vel": "rad/s"}
SCALE = (lambda v: math.isfinite(v) and v != 0, "a finite non-zero number (at 0 the policy cannot move the joint)")
EFFORT = (lambda v: v > 0, "a positive number (.inf: unbounded)")
"""(test, what is valid) for one per-joint number of the run's config, beside the deploy runtime's
own FINITE and GAIN (robolearn_deploy.bundle): the runtime refuses a bundle with a NaN, and a
negative gain or effort limit would be unsafe on a robot."""


@dataclass
class Term:
    name: str
    source: str
    params: dict
    width: int | None
    """Values per step; None: not known from the config (resolved from the actor's input size)."""
    scale: float = 1.0
    clip: float | None = None
    history: int = 1
    units: str = ""


@dataclass
class RunLayout:
    joints: list[str]
    """The robot's joints in the simulator's order (observations over 'all joints' follow it)."""
    action_joints: list[str]
    default_pose: dict[str, float]
    actuators: list[dict]
    terms: list[Term]
    control_period_s: float
    physics_dt_s: float
    decimation: int
    commands: dict = field(default_factory=dict)
    armature: dict[str, float] = field(default_factory=dict)
    """{joint: armature} where the run's actuator group sets one (for the bundle's robot model)."""
    physics: dict = field(default_factory=dict)
    """MuJoCo options the run simulated with ({timestep, integrator, solver, ...}: the keys of a
    task's `sim:`), written into the bundle's robot model."""


def _number(value, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise UserError(f"{what} in the run's config is {value!r}; expected a number")
    return float(value)


def _scale(value, term: str) -> float:
    if value is None:
        return 1.0
    if isinstance(value, list) and value and len({float(v) for v in value}) == 1:
        return float(value[0])
    if isinstance(value, list):
        raise UserError(f"observation {term!r} has a per-element scale {value}; robot.yaml scales a term by one "
                        "number (re-train with a scalar scale)")  # fmt: skip
    return _number(value, f"scale of observation {term!r}")


def _checked(value: float, what: str, rule: tuple, source: str = "the run's env.yaml") -> float:
    """`value` if it passes `rule` (FINITE, GAIN, ...); else one line naming it and what is valid."""
    ok, valid = rule
    if not ok(value):
        raise UserError(f"{what} is {value} in {source}; valid: {valid}")
    return value


def _history(group_name: str, group: dict, name: str, cfg: dict) -> int:
    """Steps of a term's history: the group's history_length overrides the term's (as in Isaac
    Lab and mjlab); None and 0 mean the current value only. Anything but a whole number >= 0 is
    refused: int() would read -1 and 1.5 as 1, a layout the run never had."""
    if group.get("history_length") is not None:
        value, where = group["history_length"], f"observation group {group_name!r}"
    else:
        value, where = cfg.get("history_length"), f"observation {name!r}"
    if value is None:
        return 1
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise UserError(f"{where} has history_length {value!r} in the run's env.yaml; valid: a whole number >= 0 "
                        "(0: the current value only)")  # fmt: skip
    return max(1, value)


def _clip(value, scale: float, term: str) -> float | None:
    if value is None:
        return None
    low, high = (_number(v, f"clip of observation {term!r}") for v in value)
    if math.isinf(low) and math.isinf(high):
        return None
    if low > high:
        raise UserError(f"observation {term!r} is clipped to [{low}, {high}] in the run's env.yaml; valid: [low, high] "
                        "with low <= high")  # fmt: skip
    if low != -high or high == 0:
        raise UserError(f"observation {term!r} is clipped to [{low}, {high}]; robot.yaml clips symmetrically, so only "
                        "[-c, c] with c > 0 (or none) can be imported")  # fmt: skip
    return abs(scale) * high


def _entity_joints(params: dict, joints: list[str]) -> list[str]:
    """The joints a term's asset_cfg selects (none named: all, in the simulator's order)."""
    cfg = params.get("asset_cfg") or {}
    if isinstance(cfg, dict) and "object" in cfg:
        cfg = cfg.get("state") or {}
    names = cfg.get("joint_names") if isinstance(cfg, dict) else None
    if names is None:
        return list(joints)
    return match_names(names, joints, bool(cfg.get("preserve_order")))


class _Terms:
    """Turns one observation term config into a Term (source, params, width)."""

    def __init__(self, d: Dialect, joints: list[str], num_actions: int, default_vel: dict[str, float]):
        self.d, self.joints, self.num_actions, self.default_vel = d, joints, num_actions, default_vel
        self.commands: dict = {}

    def __call__(self, name: str, cfg: dict) -> Term:
        func, params = short_name(cfg.get("func")), dict(cfg.get("params") or {})
        if func == "builtin_sensor":  # mjlab reads the IMU's velocimeter and gyro through sensors
            sensor = str(params.get("sensor_name", ""))
            func = {"imu_lin_vel": "base_lin_vel", "imu_ang_vel": "base_ang_vel"}.get(sensor.rpartition("/")[2], func)
        if func in ("base_lin_vel", "base_ang_vel", "projected_gravity"):
            return Term(name, func, {}, 3, units=UNITS.get(func, ""))
        if func in ("joint_pos_rel", "joint_pos", "joint_vel_rel", "joint_vel"):
            joints = _entity_joints(params, self.joints)
            if func == "joint_vel_rel" and any(self.default_vel.get(j, 0.0) for j in joints):
                raise UserError(f"observation {name!r} is joint velocity relative to a non-zero default velocity; "
                                "robot.yaml's joint_vel is absolute")  # fmt: skip
            source = func.removesuffix("_rel")
            extra = {"relative": True} if func == "joint_pos_rel" else {}
            return Term(name, source, {"joints": joints, **extra}, len(joints), units=UNITS[source])
        if func == "last_action" and not params.get("action_name"):
            return Term(name, "last_action", {}, self.num_actions)
        if func == "generated_commands":
            command = str(params.get("command_name"))
            ranges = ((self.d.env.get("commands") or {}).get(command) or {}).get("ranges") or {}
            if all(c in ranges for c in VELOCITY_COMPONENTS):
                self.commands[command] = {"components": list(VELOCITY_COMPONENTS),
                                          "ranges": {c: [float(v) for v in ranges[c]] for c in VELOCITY_COMPONENTS}}  # fmt: skip
                return Term(name, "command", {"name": command}, 3, units="m/s, m/s, rad/s")
        plain = {k: v for k, v in params.items() if isinstance(v, (str, int, float, bool, list)) or v is None}
        return Term(name, f"{self.d.framework}.{func or name}", plain, None)


def observation_terms(d: Dialect, joints: list[str], num_actions: int, obs_dim: int, default_vel: dict[str, float]) -> tuple[list[Term], dict]:
    """The actor's observation layout, checked against its input size `obs_dim`; and the
    commands it reads ({name: {components, ranges}})."""
    make = _Terms(d, joints, num_actions, default_vel)
    groups = d.actor_groups()
    terms: list[Term] = []
    for g in groups:
        group, configs = d.group(g)
        if group.get("concatenate_terms") is False:
            raise UserError(f"observation group {g!r} does not concatenate its terms; rsl_rl actors read concatenated groups")
        for name, cfg in configs.items():
            term = make(f"{g}/{name}" if len(groups) > 1 else name, cfg)
            term.history = _history(g, group, name, cfg)
            if term.history > 1 and not cfg.get("flatten_history_dim", group.get("flatten_history_dim", True)):
                raise UserError(f"observation {name!r} keeps its history as a separate dimension; rsl_rl MLP actors read flattened histories")
            term.scale = _scale(cfg.get("scale"), name)
            term.clip = _clip(cfg.get("clip"), term.scale, name)
            terms.append(term)
    unknown = [t for t in terms if t.width is None]
    known = sum(t.width * t.history for t in terms if t.width is not None)
    if len(unknown) > 1:
        raise UserError(f"the widths of observations {', '.join(t.name for t in unknown)} cannot be told from the run's "
                        f"config (only one unknown term can take the rest of the actor's {obs_dim} inputs)")  # fmt: skip
    if unknown:
        rest, t = obs_dim - known, unknown[0]
        if rest <= 0 or rest % t.history:
            raise UserError(f"observation {t.name!r} would have {rest} values (the actor takes {obs_dim}, the other terms "
                            f"{known}); the run's config and checkpoint disagree")  # fmt: skip
        t.width = rest // t.history
    elif known != obs_dim:
        raise UserError(f"the run's observation terms add up to {known} values but the checkpoint's actor takes {obs_dim}: "
                        "the checkpoint does not belong to this config, or the joint order names the wrong joints")  # fmt: skip
    return terms, make.commands


def _group_of(joint: str, groups: list[ActuatorGroup]) -> ActuatorGroup:
    for g in groups:
        if any(re.fullmatch(p, joint) for p in g.patterns):
            return g
    raise UserError(f"no actuator group of the run's robot config drives joint {joint!r}")


def armature(d: Dialect, robot: dict, action_joints: list[str]) -> dict[str, float]:
    """The armature the run's actuator groups add to their joints (None: the asset's own)."""
    groups, out = d.actuator_groups(robot), {}
    for j in action_joints:
        g = _group_of(j, groups)
        if g.armature is not None:
            out[j] = per_name(g.armature, [j], "armature", strict=False)[j]
    return out


def actuators(d: Dialect, action, robot: dict, action_joints: list[str], default_pose: dict[str, float],
              model_gains: dict[str, dict] | None = None) -> list[dict]:  # fmt: skip
    """robot.yaml's actuators, one per action entry: ctrl = clip(offset + scale * action), and the
    PD gains and effort limit of the actuator group that drives the joint. A group that leaves its
    gains to the robot asset (None) takes them from the robot= model's position actuator."""
    scale = per_name(action.scale, action_joints, "action scale")
    scale = {j: _checked(v, f"action scale of joint {j!r}", SCALE) for j, v in scale.items()}
    offset = ({j: default_pose[j] for j in action_joints} if action.use_default_offset
              else per_name(action.offset, action_joints, "action offset"))  # fmt: skip
    what = "default position (the action's offset)" if action.use_default_offset else "action offset"
    offset = {j: _checked(v, f"{what} of joint {j!r}", FINITE) for j, v in offset.items()}
    clip = _action_clip(action.clip, action_joints)
    groups = d.actuator_groups(robot)
    out = []
    for j in action_joints:
        g = _group_of(j, groups)
        if g.kind not in POSITION_PD:
            raise UserError(f"joint {j!r} is driven by a {g.kind}, which has no joint-level PD equivalent; robolearn import "
                            f"reads position PD actuators ({', '.join(k for k in POSITION_PD if k)})")  # fmt: skip
        entry = {"name": j, "joint": j, "action_scale": scale[j], "action_offset": offset[j],
                 "ctrl_min": clip[j][0], "ctrl_max": clip[j][1], "kind": "position", **_gains(j, g, model_gains)}  # fmt: skip
        if g.effort_limit is not None:
            effort = per_name(g.effort_limit, [j], "effort limit", strict=False)[j]
            if math.isfinite(_checked(effort, f"effort limit of joint {j!r}", EFFORT)):
                entry["effort_range"] = [-effort, effort]
        out.append(entry)
    return out


def _gains(joint: str, g: ActuatorGroup, model_gains: dict[str, dict] | None) -> dict[str, float]:
    """{kp, kd} of `joint`: its actuator group's stiffness and damping, or where the group leaves
    them to the robot asset (None), the robot= model's position actuator. A negative or NaN gain
    is refused: the runtime would drive the joint away from its target."""
    gains = {}
    for key, what, value in (("kp", "stiffness", g.stiffness), ("kd", "damping", g.damping)):
        if value is None:
            if not model_gains or joint not in model_gains:
                raise UserError(f"the run's config leaves the {what} of joint {joint!r} to the robot asset; pass "
                                "robot=<model.xml> with a position actuator on that joint")  # fmt: skip
            gains[key] = _checked(model_gains[joint][key], f"{what} of joint {joint!r}", GAIN, "the robot= model")
        else:
            gains[key] = _checked(per_name(value, [joint], what, strict=False)[joint], f"{what} of joint {joint!r}", GAIN)
    return gains


def _action_clip(value, action_joints: list[str]) -> dict[str, list[float]]:
    """{joint: [ctrl_min, ctrl_max]} from the action term's clip ({joint pattern: [min, max]}); a
    joint no pattern names is unbounded. A NaN or reversed pair is refused: the runtime's np.clip
    would pass a NaN through, and min > max clips every action to one value."""
    clip = {j: [-math.inf, math.inf] for j in action_joints}
    if value is None:
        return clip
    if not isinstance(value, dict):
        raise UserError(f"action clip {value!r} in the run's config; expected {{joint pattern: [min, max]}}")
    for pattern, bounds in value.items():
        if not isinstance(bounds, (list, tuple)) or len(bounds) != 2:
            raise UserError(f"action clip {bounds!r} of {pattern!r} in the run's env.yaml; valid: [min, max]")
        low, high = (_number(b, "action clip") for b in bounds)
        if math.isnan(low) or math.isnan(high) or low > high:
            raise UserError(f"action clip of {pattern!r} is [{low}, {high}] in the run's env.yaml; valid: [min, max], "
                            "numbers (.inf: unbounded) with min <= max")  # fmt: skip
        for j in match_names(pattern, action_joints):
            clip[j] = [low, high]
    return clip
