"""Small look-ups on a compiled MjModel that new-task's inspection (inspect_model.py, legs.py) shares."""

from __future__ import annotations

import mujoco

ONE_DOF = (int(mujoco.mjtJoint.mjJNT_HINGE), int(mujoco.mjtJoint.mjJNT_SLIDE))
"""Joint types a policy's joint terms read (hinge, slide)."""


def obj_name(model: mujoco.MjModel, objtype: mujoco.mjtObj, i: int) -> str:
    return mujoco.mj_id2name(model, objtype, i) or ""


def driven_joints(model: mujoco.MjModel) -> set[int]:
    """The joints an actuator drives through a joint transmission."""
    joint = (int(mujoco.mjtTrn.mjTRN_JOINT), int(mujoco.mjtTrn.mjTRN_JOINTINPARENT))
    return {int(model.actuator_trnid[a, 0]) for a in range(model.nu) if int(model.actuator_trntype[a]) in joint}
