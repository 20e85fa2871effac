"""Where Isaac Lab and mjlab keep each piece of a run's config (params/env.yaml, agent.yaml).

A `Dialect` answers the same questions for both: the robot's config, its actuator groups, the
joint-position action term, the actor's observation groups, physics step and term naming. The
layout (layout.py) is written once against it. A run directory of neither kind is refused.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from robolearn.errors import UserError
from robolearn.interop.run_yaml import short_name
from robolearn.scene.sim_options import choices


EFFORT_KEYS = ("effort_limit_sim", "joint_effort_limit", "actuator_effort_limit", "effort_limit")
SOLVER_OPTIONS = {"integrator": str, "solver": str, "cone": str, "iterations": int, "ls_iterations": int,
                  "tolerance": float, "impratio": float}  # fmt: skip
"""MuJoCo options both frameworks record under these names, with their types."""


@dataclass(frozen=True)
class ActuatorGroup:
    patterns: list[str]
    stiffness: object
    damping: object
    effort_limit: object
    armature: object
    kind: str
    """The actuator model's class name ('' where the dump does not record it, as in mjlab)."""


@dataclass(frozen=True)
class ActionTerm:
    name: str
    patterns: list[str]
    scale: object
    offset: object
    use_default_offset: bool
    clip: object
    preserve_order: bool


@dataclass(frozen=True)
class Dialect:
    framework: str  # isaaclab | mjlab
    env: dict
    agent: dict

    # --- the robot ------------------------------------------------------------------------------
    def robot(self, name: str) -> dict:
        scene = self.env.get("scene") or {}
        holder = scene.get("entities") if self.framework == "mjlab" else scene
        robot = (holder or {}).get(name)
        if not isinstance(robot, dict):
            raise UserError(f"the run's config has no scene entry {name!r} (the action's robot)")
        return robot

    def default_joint_pos(self, robot: dict) -> object:
        return (robot.get("init_state") or {}).get("joint_pos")

    def default_joint_vel(self, robot: dict) -> object:
        return (robot.get("init_state") or {}).get("joint_vel")

    def actuator_groups(self, robot: dict) -> list[ActuatorGroup]:
        if self.framework == "mjlab":
            entries = [(str(i), a) for i, a in enumerate((robot.get("articulation") or {}).get("actuators") or [])]
            key = "target_names_expr"
        else:
            entries = list((robot.get("actuators") or {}).items())
            key = "joint_names_expr"
        groups = []
        for name, a in entries:
            if not isinstance(a, dict):
                continue
            patterns = a.get(key) or []
            # the limit the simulator applied: Isaac Lab 3 names it effort_limit_sim, joint_effort_limit or
            # actuator_effort_limit (whichever is set), Isaac Lab 2 and mjlab effort_limit
            effort = next((a[k] for k in EFFORT_KEYS if a.get(k) is not None), None)
            groups.append(ActuatorGroup([patterns] if isinstance(patterns, str) else list(patterns), a.get("stiffness"),
                                        a.get("damping"), effort, a.get("armature"), short_name(a.get("class_type"))))  # fmt: skip
        return groups

    # --- the action -----------------------------------------------------------------------------
    def action(self) -> tuple[ActionTerm, str]:
        """The one joint-position action term, and the scene name of the robot it drives."""
        terms = {k: v for k, v in (self.env.get("actions") or {}).items() if isinstance(v, dict)}
        if len(terms) != 1:
            raise UserError(f"the run has {len(terms)} action terms ({', '.join(terms) or 'none'}); robolearn import reads "
                            "runs with one joint position action")  # fmt: skip
        name, t = next(iter(terms.items()))
        if self.framework == "mjlab":
            # mjlab's dump keeps no class name: its joint position action is the term named joint_pos
            transmission = t.get("transmission_type") or {}
            if "pos" not in name or (transmission.get("args") or ["joint"])[0] != "joint":
                raise UserError(f"the run's action term {name!r} is not mjlab's joint position action (term 'joint_pos' "
                                "with a joint transmission); robolearn import reads joint position actions")  # fmt: skip
            patterns, robot = t.get("actuator_names") or [".*"], t.get("entity_name", "robot")
        else:
            kind = short_name(t.get("class_type"))
            if kind != "JointPositionAction":
                raise UserError(f"the run's action term {name!r} is a {kind or 'term of unknown class'}; robolearn import "
                                "reads Isaac Lab's JointPositionAction")  # fmt: skip
            patterns, robot = t.get("joint_names") or [".*"], t.get("asset_name", "robot")
        patterns = [patterns] if isinstance(patterns, str) else list(patterns)
        return ActionTerm(name, patterns, t.get("scale", 1.0), t.get("offset", 0.0), bool(t.get("use_default_offset")),
                          t.get("clip"), bool(t.get("preserve_order"))), robot  # fmt: skip

    # --- observations ---------------------------------------------------------------------------
    def actor_groups(self) -> list[str]:
        """The observation groups the actor reads, concatenated in this order."""
        groups = (self.agent.get("obs_groups") or {}).get("actor") or (self.agent.get("obs_groups") or {}).get("policy")
        observations = self.env.get("observations") or {}
        if not groups:
            groups = ["actor"] if "actor" in observations and "policy" not in observations else ["policy"]
        missing = [g for g in groups if not isinstance(observations.get(g), dict)]
        if missing:
            raise UserError(f"the actor reads observation group {missing[0]!r}, which the run's env.yaml lacks "
                            f"(groups: {', '.join(observations) or 'none'})")  # fmt: skip
        return list(groups)

    def group(self, name: str) -> tuple[dict, dict]:
        """(group settings, {term name: term config}) of one observation group."""
        group = self.env["observations"][name]
        if self.framework == "mjlab":
            terms = group.get("terms") or {}
        else:  # Isaac Lab: terms sit beside the group's own settings; a term is a dict with a func
            terms = {k: v for k, v in group.items() if isinstance(v, dict) and "func" in v}
        return group, {k: v for k, v in terms.items() if isinstance(v, dict)}

    # --- timing ---------------------------------------------------------------------------------
    def physics_dt(self) -> float:
        """The physics step in seconds: refused unless positive and finite (a NaN passes `dt <= 0`
        and would give the bundle a NaN control period)."""
        sim = self.env.get("sim") or {}
        key = "sim.mujoco.timestep" if self.framework == "mjlab" else "sim.dt"
        dt = (sim.get("mujoco") or {}).get("timestep") if self.framework == "mjlab" else sim.get("dt")
        if dt is None:
            raise UserError(f"the run's env.yaml has no physics time step ({key}); valid: a positive number of seconds")
        if isinstance(dt, bool) or not isinstance(dt, (int, float)) or not math.isfinite(dt) or dt <= 0:
            raise UserError(f"{key}: {dt!r} in the run's env.yaml is not a physics time step; valid: a positive finite "
                            "number of seconds")  # fmt: skip
        return float(dt)

    def substeps(self) -> int:
        """MuJoCo steps per physics step: Isaac Lab's Newton backend divides sim.dt into num_substeps."""
        physics = (self.env.get("sim") or {}).get("physics") if self.framework == "isaaclab" else None
        n = physics.get("num_substeps") if isinstance(physics, dict) else None
        return n if isinstance(n, int) and not isinstance(n, bool) and n >= 1 else 1

    def solver_options(self) -> dict:
        """The MuJoCo options the run simulated with (integrator, solver, iterations, cone, ...; the
        keys of robolearn's `sim:`), from mjlab's sim.mujoco or Isaac Lab's MuJoCo Warp solver_cfg;
        {} for another engine. Values MuJoCo does not know are left out."""
        sim = self.env.get("sim") or {}
        if self.framework == "mjlab":
            cfg = sim.get("mujoco") or {}
        else:
            cfg = ((sim.get("physics") or {}).get("solver_cfg") or {}) if isinstance(sim.get("physics"), dict) else {}
            if cfg.get("solver_type") != "mujoco_warp":
                return {}
        out = {}
        for key, kind in SOLVER_OPTIONS.items():
            value = cfg.get(key)
            if kind is str and isinstance(value, str) and value.lower() in choices(key):
                out[key] = value.lower()
            elif kind is not str and isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0:
                out[key] = kind(value)
        return out

    def physics_backend(self) -> str:
        """'mujoco' (mjlab), 'newton' or 'physx' (Isaac Lab), '' where the dump does not say."""
        if self.framework == "mjlab":
            return "mujoco"
        physics = (self.env.get("sim") or {}).get("physics")
        kind = str(physics.get("class_type", "")).lower() if isinstance(physics, dict) else ""
        return "newton" if "newton" in kind else "physx" if "physx" in kind else ""


def dialect(env: dict, agent: dict) -> Dialect:
    """Tell an Isaac Lab run from an mjlab run by what their env.yaml holds."""
    scene = env.get("scene") or {}
    observations = env.get("observations")
    if not isinstance(observations, dict) or not isinstance(env.get("actions"), dict):
        raise UserError("params/env.yaml has no observations/actions sections: not a manager-based Isaac Lab or mjlab "
                        "run (robolearn import reads those)")  # fmt: skip
    if isinstance(scene.get("entities"), dict):
        return Dialect("mjlab", env, agent)
    if any(isinstance(v, dict) and "class_type" in v for v in scene.values()) or "sim" in env:
        return Dialect("isaaclab", env, agent)
    raise UserError("params/env.yaml is neither an Isaac Lab nor an mjlab config (no scene.entities, no scene assets "
                    "with class_type); robolearn import reads rsl_rl runs of those two")  # fmt: skip
