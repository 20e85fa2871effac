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

VELOCITY_COMPONENTS = ("lin_vel_x", "lin_vel_y", "ang_vel_z")
POSITION_PD = ("", "ImplicitActuator", "IdealPDActuator", "DCMotor", "DelayedPDActuator", "RemotizedPDActuator")
"""Actuator models whose joint-level behaviour is a position PD servo (kp, kd, an effort limit);
'' is mjlab, whose dump does not name the class (its joint actuators with stiffness are PD servos)."""
UNITS = {"base_lin_vel": "m/s", "base_ang_vel": "rad/s", "joint_pos": "rad", "joint_vel": "rad/s"}


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


def _clip(value, scale: float, term: str) -> float | None:
    if value is None:
        return None
    low, high = (_number(v, f"clip of observation {term!r}") for v in value)
    if math.isinf(low) and math.isinf(high):
        return None
    if low != -high:
        raise UserError(f"observation {term!r} is clipped to [{low}, {high}]; robot.yaml clips symmetrically, so only "
                        "[-c, c] (or none) can be imported")  # fmt: skip
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
            history = group.get("history_length") if group.get("history_length") is not None else cfg.get("history_length")
            term.history = max(1, int(history or 0))
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
    offset = ({j: default_pose[j] for j in action_joints} if action.use_default_offset
              else per_name(action.offset, action_joints, "action offset"))  # fmt: skip
    clip = {j: [-math.inf, math.inf] for j in action_joints}
    if isinstance(action.clip, dict):
        for pattern, bounds in action.clip.items():
            for j in match_names(pattern, action_joints):
                clip[j] = [_number(bounds[0], "action clip"), _number(bounds[1], "action clip")]
    elif action.clip is not None:
        raise UserError(f"action clip {action.clip!r} in the run's config; expected {{joint pattern: [min, max]}}")
    groups = d.actuator_groups(robot)
    out = []
    for j in action_joints:
        g = _group_of(j, groups)
        if g.kind not in POSITION_PD:
            raise UserError(f"joint {j!r} is driven by a {g.kind}, which has no joint-level PD equivalent; robolearn import "
                            f"reads position PD actuators ({', '.join(k for k in POSITION_PD if k)})")  # fmt: skip
        gains = {}
        for key, value in (("kp", g.stiffness), ("kd", g.damping)):
            if value is None:
                if not model_gains or j not in model_gains:
                    raise UserError(f"the run's config leaves the {'stiffness' if key == 'kp' else 'damping'} of joint {j!r} "
                                    "to the robot asset; pass robot=<model.xml> with a position actuator on that joint")  # fmt: skip
                gains[key] = model_gains[j][key]
            else:
                gains[key] = per_name(value, [j], "stiffness" if key == "kp" else "damping", strict=False)[j]
        entry = {"name": j, "joint": j, "action_scale": scale[j], "action_offset": offset[j],
                 "ctrl_min": clip[j][0], "ctrl_max": clip[j][1], "kind": "position", **gains}  # fmt: skip
        if g.effort_limit is not None:
            effort = per_name(g.effort_limit, [j], "effort limit", strict=False)[j]
            if math.isfinite(effort):
                entry["effort_range"] = [-effort, effort]
        out.append(entry)
    return out
