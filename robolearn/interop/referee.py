"""The referee of `robolearn sim2sim` for a bundle imported with robot= and no task=, and the
bundle model it referees (write_referee: the robot= MJCF as the run simulated it).

Without a robolearn task of the same robot there are no reward terms to score the policy with,
and the run's own rewards are code of a framework that is not installed. What any imported policy
can be judged by is written from the run's own config into the bundle's task.yaml, with
robolearn's generic terms only (so `sim2sim` needs no plugin to rebuild it):

- the episode starts in the run's initial state (base position and orientation, default joint
  pose: the bundle model's `home` keyframe), turned by the run's reset yaw range, at rest;
- commands: each velocity command the policy reads, with the run's ranges, resampling period and
  share of standing commands (a heading command is drawn as its yaw-rate range);
- it ends at the run's episode length, or when the robot falls: the run's `bad_orientation` and
  `root_height_below_minimum` terms as they are; where the run has neither, the base tilting more
  than 1 rad or sinking below half its initial height (what a base-contact termination detects);
- the return is the velocity tracking reward (exp(-err^2 / std^2), linear 1.0, yaw 0.5 per step,
  std from the run's tracking rewards, else 0.5), or 1 per step for a policy without a velocity
  command; metrics: planar velocity and yaw-rate tracking error.
"""

from __future__ import annotations

import math
from pathlib import Path

import yaml

from robolearn.export.bundle import copy_model
from robolearn.interop.dialects import Dialect
from robolearn.interop.layout import VELOCITY_COMPONENTS, RunLayout
from robolearn.interop.robot_model import RobotModel
from robolearn.interop.run_yaml import short_name
from robolearn.scene.floating_base import floating_base_joint

REFEREE_TASK = "imported_referee"
"""task.yaml's name: no installed task, so sim2sim builds it from the bundle's task.yaml alone."""
FALL_TILT = 1.0
"""[rad] base tilt that ends an episode where the run's config says nothing of falls."""
FALL_HEIGHT = 0.5
"""Fraction of the initial base height below which the base counts as fallen (same case)."""
TRACKING_STD = 0.5
TRACKING_REWARDS = {"lin": ("track_lin_vel_xy_exp", "track_linear_velocity"),
                    "yaw": ("track_ang_vel_z_exp", "track_angular_velocity")}  # fmt: skip
"""The run's reward functions whose `std` the referee's tracking rewards take (Isaac Lab, mjlab)."""


def initial_base(d: Dialect, robot: dict) -> tuple[list[float] | None, list[float] | None]:
    """The run's initial base position and orientation as (x, y, z), (w, x, y, z). Isaac Lab 3
    writes quaternions (x, y, z, w); Isaac Lab 2 (no physics backend recorded) and mjlab (w, x, y, z)."""
    init = robot.get("init_state") if isinstance(robot.get("init_state"), dict) else {}
    pos, rot = _numbers(init.get("pos"), 3), _numbers(init.get("rot"), 4)
    if rot is not None and d.framework == "isaaclab" and d.physics_backend():
        rot = [rot[3], rot[0], rot[1], rot[2]]
    return pos, rot


def _terms(section: dict | None) -> dict[str, tuple[str, dict]]:
    """{term name: (function's short name, params)} of a rewards/terminations/events section."""
    out = {}
    for name, cfg in (section if isinstance(section, dict) else {}).items():
        if isinstance(cfg, dict):
            params = cfg.get("params")
            out[name] = (short_name(cfg.get("func")), params if isinstance(params, dict) else {})
    return out


def _number(value, default: float) -> float:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else default


def _numbers(value, n: int) -> list[float] | None:
    """`value` as n floats, or None where it is not a list of n numbers (a config this reads, not checks)."""
    if not isinstance(value, list) or len(value) != n:
        return None
    if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in value):
        return None
    return [float(v) for v in value]


def _falls(d: Dialect, base_height: float | None) -> dict:
    terms = {}
    for name, (func, params) in _terms(d.env.get("terminations")).items():
        if func == "bad_orientation" and "limit_angle" in params:
            terms[name] = {"func": "bad_orientation", "params": {"limit_angle": _number(params["limit_angle"], FALL_TILT)}}
        elif func == "root_height_below_minimum" and "minimum_height" in params:
            terms[name] = {"func": "base_height_below", "params": {"minimum": _number(params["minimum_height"], 0.0)}}
    if not terms:
        terms["bad_orientation"] = {"func": "bad_orientation", "params": {"limit_angle": FALL_TILT}}
        if base_height:
            terms["base_too_low"] = {"func": "base_height_below", "params": {"minimum": FALL_HEIGHT * base_height}}
    return terms


def _std(d: Dialect, kind: str) -> float:
    for func, params in _terms(d.env.get("rewards")).values():
        if func in TRACKING_REWARDS[kind] and "std" in params:
            return _number(params["std"], TRACKING_STD)
    return TRACKING_STD


def _commands(d: Dialect, layout: RunLayout) -> dict:
    out = {}
    for name, command in layout.commands.items():
        cfg = (d.env.get("commands") or {}).get(name) or {}
        out[name] = {"ranges": {c: command["ranges"][c] for c in command["components"]},
                     "resampling_time_s": _numbers(cfg.get("resampling_time_range"), 2) or [10.0, 10.0],
                     "standing_probability": min(1.0, max(0.0, _number(cfg.get("rel_standing_envs"), 0.0)))}  # fmt: skip
    return out


def _yaw_range(d: Dialect) -> list[float]:
    for func, params in _terms(d.env.get("events")).values():
        if func == "reset_root_state_uniform":
            pose = params.get("pose_range")
            yaw = _numbers(pose.get("yaw"), 2) if isinstance(pose, dict) else None
            if yaw is not None:
                return yaw
    return [-math.pi, math.pi]


def referee_task(d: Dialect, layout: RunLayout, model_file: str, actuators: list[str], base_height: float | None,
                 floating: bool) -> dict:  # fmt: skip
    """task.yaml of the referee (see the module's docstring). `actuators`: the bundle model's
    actuators of the action joints, in action order; `base_height`: the run's initial base height;
    `floating`: the robot has a floating base."""
    commands = _commands(d, layout) if floating else {}
    velocity = [n for n, c in layout.commands.items() if c["components"] == list(VELOCITY_COMPONENTS) and n in commands]
    rewards: dict = {}
    metrics: dict = {}
    for name in velocity[:1]:  # the first velocity command is the one tracked
        rewards["track_lin_vel_xy"] = {"func": "track_lin_vel_xy_exp", "weight": 1.0, "params": {"command": name, "std": _std(d, "lin")}}
        rewards["track_ang_vel_z"] = {"func": "track_ang_vel_z_exp", "weight": 0.5, "params": {"command": name, "std": _std(d, "yaw")}}
        metrics["lin_vel_error"] = {"func": "lin_vel_error_xy", "params": {"command": name}, "units": "m/s"}
        metrics["yaw_rate_error"] = {"func": "ang_vel_error_z", "params": {"command": name}, "units": "rad/s"}
    if not rewards:
        rewards["alive"] = {"func": "is_alive", "weight": 1.0}
    task = {
        "name": REFEREE_TASK,
        "description": f"sim2sim referee of an imported {d.framework} run: falls and velocity tracking",
        "asset": model_file,
        "sim_dt": layout.physics_dt_s,
        "decimation": layout.decimation,
        "episode_length_s": _number(d.env.get("episode_length_s"), 20.0),
        "action": {"actuators": actuators},
        "commands": commands,
        "observations": {"policy": {"terms": {"gravity" if floating else "joints":
                                              {"func": "projected_gravity" if floating else "joint_pos"}}}},
        "rewards": rewards,
        "terminations": _falls(d, base_height) if floating else {},
        "events": {},
        "metrics": metrics,
    }  # fmt: skip
    if floating:
        task["events"]["reset_base"] = {"func": "reset_root_state", "mode": "reset",
                                        "params": {"xy_range": [0.0, 0.0], "yaw_range": _yaw_range(d), "velocity_range": [0.0, 0.0]}}  # fmt: skip
    return task


def write_referee(d: Dialect, layout: RunLayout, model: RobotModel, staging: Path, model_file: str) -> str:
    """The bundle's model (the run's actuators and armature, its initial state as `home`, a floor
    where the model has none) and task.yaml of the referee that scores it in sim2sim."""
    base_pos, base_quat = initial_base(d, d.robot(d.action()[1]))
    home = model.home_qpos(base_pos, base_quat, layout.default_pose)
    edit = model.edit(layout.actuators, layout.armature, layout.physics, home=home, floor=not model.has_floor())
    copy_model(model.path, staging, model_file, edit)
    bundled = RobotModel(staging / model_file)
    floating = floating_base_joint(bundled.model) is not None
    config = referee_task(d, layout, model_file, bundled.actuators_of(layout.action_joints),
                          base_pos[2] if floating and base_pos else None, floating)  # fmt: skip
    (staging / "task.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    from robolearn.sim2sim import Referee

    Referee(staging, model_file, seed=0).close()  # it builds, or the import stops here with the reason
    falls = ", ".join(f"{name} ({t['func']})" for name, t in config["terminations"].items()) or "none"
    return f"refereed from the run's config: episodes end on {falls}; reports {', '.join(config['metrics']) or 'time alive'}"
