"""What videos and viewers draw of a URDF robot: its visual meshes, not the collision geoms in the
same place (drawn together, the two surfaces flicker)."""

from __future__ import annotations

import mujoco

from robolearn.scaffold.plan import RobotPlan


def plan_shown_geoms(plan: RobotPlan, model: mujoco.MjModel) -> None:
    """A URDF's links keep their visual meshes (group 1, colliding with nothing) and their collision
    geoms (group 0): both drawn, they flicker where they coincide. The collision geoms of the links
    that have a visual geom move to group 3 (the step hide_collision_geoms)."""
    shown = range(3)
    robot = [g for g in range(model.ngeom) if int(model.geom_bodyid[g]) > 0 and int(model.geom_group[g]) in shown]
    colliding = {g for g in robot if model.geom_contype[g] or model.geom_conaffinity[g]}
    drawn = {int(model.geom_bodyid[g]) for g in robot if g not in colliding}
    hidden = [g for g in colliding if int(model.geom_bodyid[g]) in drawn]
    if hidden:
        plan.steps.append("hide_collision_geoms")
        plan.lines.append(f"collision geoms: {len(hidden)} drawn over their links' visual meshes -> moved to group 3 "
                          "(videos and viewers draw the visual meshes alone; the collisions are unchanged)")  # fmt: skip
