"""What a robot fixed to the world (an arm on a table, a gantry) needs from new-task beyond its joints:
a default pose inside its joint limits, and no contacts between the part fixed to the world and the
links it carries.

MuJoCo ignores contacts between a body and its parent, except where the parent is fixed to the world
(its weld is the world body): there an arm's base and its first link, which overlap at the shoulder in
most models (a URDF's meshes always do), push each other apart and jam the joint. new-task excludes
those pairs, as MuJoCo's rule does for every other parent and child.
"""

from __future__ import annotations

import mujoco

from robolearn.scaffold.inspect_model import ModelInfo
from robolearn.scaffold.model_query import HOME_MARGIN, POSE_GUESS, home_value, obj_name
from robolearn.scaffold.plan import RobotPlan, const, mapping, num, quoted, short


def plan_arm_home(plan: RobotPlan, info: ModelInfo, model: mujoco.MjModel) -> None:
    """A `home` keyframe where the model has none and its own pose (qpos0) puts a driven joint on or
    past a limit (a range that leaves 0 out, or starts at it): episodes, the action offset and
    relative joint observations start from the default pose, and one on a limit pays the limit
    penalty every step and draws half its resets and targets outside the range."""
    if info.has_home:
        return
    ranges = {j.name: j.range for j in info.joints if j.name in plan.joints}
    pose = {name: home_value(ranges[name]) for name in plan.joints if name in ranges}
    moved = [name for name, value in pose.items() if abs(value - float(model.qpos0[model.joint(name).qposadr[0]])) > 1e-9]
    if not moved:
        return
    plan.default_pose = pose
    plan.steps.append("add_home_pose")
    plan.constants.append(const("DEFAULT_POSE", mapping({name: num(v) for name, v in pose.items()}),
                                "The default pose [rad or m]: the `home` keyframe, where episodes start, the action offset "
                                f"and the reference of relative joint observations. new-task's guess: {POSE_GUESS}. TODO: "
                                "set your robot's home pose."))  # fmt: skip
    shown = short([f"{name} {num(pose[name])}" for name in moved])
    plan.lines.append(f"home keyframe: missing, and the model's pose puts {short(moved)} on or past a limit -> added "
                      f"'home' with those joints {int(HOME_MARGIN * 100)} % of their range inside it ({shown}); set "
                      "DEFAULT_POSE in robot.py")  # fmt: skip


def plan_base_contacts(plan: RobotPlan, model: mujoco.MjModel) -> None:
    """Exclude contacts between each body fixed to the world and each jointed child of it, where
    their geoms could collide (contype/conaffinity) and the model does not exclude them already."""
    excluded = {int(s) for s in model.exclude_signature}
    pairs = []
    for body in range(1, model.nbody):
        parent = int(model.body_parentid[body])
        if parent == 0 or int(model.body_weldid[parent]) != 0 or int(model.body_jntnum[body]) == 0:
            continue
        if (parent << 16) + body in excluded or not _could_touch(model, parent, body):
            continue
        names = obj_name(model, mujoco.mjtObj.mjOBJ_BODY, parent), obj_name(model, mujoco.mjtObj.mjOBJ_BODY, body)
        if all(names):
            pairs.append(names)
    if not pairs:
        return
    plan.steps.append("exclude_base_contacts")
    plan.constants.append(const("BASE_CONTACT_EXCLUDES", "(" + "".join(f"\n    ({quoted(a)}, {quoted(b)})," for a, b in pairs) + "\n)",
                                "Bodies fixed to the world and the jointed links they carry: their contacts are excluded "
                                "(MuJoCo ignores a body's contacts with its parent except where the parent is fixed to "
                                "the world)."))  # fmt: skip
    plan.lines.append(f"contacts: {short([f'{a}-{b}' for a, b in pairs])} excluded (a link and the body fixed to the world "
                      "that carries it: MuJoCo ignores a parent's contacts with its child except there, so they would "
                      "push each other apart and jam the joint)")  # fmt: skip


def _could_touch(model: mujoco.MjModel, a: int, b: int) -> bool:
    """Whether some geom of body a and some geom of body b pass MuJoCo's contype/conaffinity test."""
    first = [g for g in range(model.ngeom) if int(model.geom_bodyid[g]) == a]
    second = [g for g in range(model.ngeom) if int(model.geom_bodyid[g]) == b]
    return any(int(model.geom_contype[g]) & int(model.geom_conaffinity[h]) or int(model.geom_contype[h]) & int(model.geom_conaffinity[g])
               for g in first for h in second)  # fmt: skip
