"""Links whose collision geometry overlaps in the pose the robot starts in.

A robot description's collision meshes are often coarse: a humanoid's hip meshes sink into each
other, a quadruped's thighs into its trunk. MuJoCo collides every pair of bodies except a parent
and its child, so such a pair pushes itself apart from the first step: servos saturate against it
and the robot folds (a Talos URDF fell from 1.13 m to 0.36 m in a second, holding its home pose).
new-task finds the pairs that penetrate in the home pose and excludes their contacts, as a user
would with `<contact><exclude>` in the MJCF, and says which and by how much.
"""

from __future__ import annotations

import mujoco
import numpy as np

from robolearn.scaffold.inspect_model import ModelInfo
from robolearn.scaffold.model_query import obj_name, posed_qpos
from robolearn.scaffold.plan import RobotPlan, const, quoted, short
from robolearn.scene.geometry import body_children, subtree

PENETRATION = 1e-4
"""How deep [m] two links must overlap at home to be excluded (a contact at 0 is two surfaces
that touch, which a joint can move apart)."""


def home_qpos(plan: RobotPlan, info: ModelInfo, model: mujoco.MjModel) -> np.ndarray:
    """The pose the robot starts in: the model's `home` keyframe, else qpos0 with plan.default_pose."""
    if info.has_home:
        return model.key_qpos[mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_KEY, "home")].copy()
    return posed_qpos(model, plan.default_pose)


def overlapping_links(model: mujoco.MjModel, qpos: np.ndarray, robot: set[int]) -> dict[tuple[int, int], float]:
    """Pairs of the robot's bodies (neither the other's parent) whose geoms penetrate at `qpos`,
    each with its deepest overlap [m]."""
    data = mujoco.MjData(model)
    data.qpos[:] = qpos
    mujoco.mj_forward(model, data)
    pairs: dict[tuple[int, int], float] = {}
    for c in data.contact[: data.ncon]:
        a, b = sorted((int(model.geom_bodyid[c.geom1]), int(model.geom_bodyid[c.geom2])))
        if a == b or a not in robot or b not in robot or c.dist > -PENETRATION:
            continue
        if int(model.body_parentid[b]) == a or int(model.body_parentid[a]) == b:  # MuJoCo's own filter, or fixed_base's
            continue
        pairs[(a, b)] = max(pairs.get((a, b), 0.0), -float(c.dist))
    return pairs


def plan_self_contacts(plan: RobotPlan, info: ModelInfo, model: mujoco.MjModel) -> None:
    """Exclude the contacts of each pair of links that overlap in the home pose (SELF_CONTACT_EXCLUDES)."""
    root = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, info.root) if info.root else -1
    if root <= 0:
        return
    robot = set(subtree(body_children(model), root))
    found = overlapping_links(model, home_qpos(plan, info, model), robot)
    named = {(obj_name(model, mujoco.mjtObj.mjOBJ_BODY, a), obj_name(model, mujoco.mjtObj.mjOBJ_BODY, b)): depth
             for (a, b), depth in sorted(found.items(), key=lambda item: -item[1])}  # fmt: skip
    pairs = {names: depth for names, depth in named.items() if all(names)}
    if len(pairs) < len(named):
        plan.lines.append(f"WARNING: {len(named) - len(pairs)} pairs of unnamed bodies overlap in the home pose: "
                          "name them and exclude their contacts in the MJCF (<contact><exclude>)")  # fmt: skip
    if not pairs:
        return
    plan.steps.append("exclude_self_contacts")
    plan.constants.append(const("SELF_CONTACT_EXCLUDES", "(" + "".join(f"\n    ({quoted(a)}, {quoted(b)}),"
                                                                     for a, b in pairs) + "\n)",
                                "Links whose collision geometry overlaps in the home pose: their contacts are excluded "
                                "(they would push each other apart from the first step). Remove a pair once the "
                                "geometry or the pose no longer overlaps."))  # fmt: skip
    shown = short([f"{a}-{b} {depth * 1000:.1f} mm" for (a, b), depth in pairs.items()])
    plan.lines.append(f"self-contacts: {shown} overlap in the home pose -> excluded (SELF_CONTACT_EXCLUDES: the "
                      "links' collision geometry would push them apart from the first step)")  # fmt: skip

