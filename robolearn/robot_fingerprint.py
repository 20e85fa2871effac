"""Which robot a checkpoint was trained on: a hash of the compiled robot model's numbers that a
policy depends on, kept in every checkpoint (`robot_model`).

A run keeps its config, not its robot: eval, export, play and resume rebuild the model from the
task's package as it is now. A user who tunes gains in robot.py or edits the MJCF after training
would otherwise export a bundle that hands the real robot gains, limits or joints its policy never
saw, or resume "exactly" on another robot. The hash covers the robot (every body but the world,
whose terrain and floor differ between seeds and tiles), its joints, dofs, actuators and the
physics options; names are in it too, so a renamed or added joint changes it.
"""

from __future__ import annotations

import hashlib

import mujoco
import numpy as np

_ROBOT_ARRAYS = (
    "body_parentid", "body_pos", "body_quat", "body_ipos", "body_iquat", "body_mass", "body_inertia",
    "jnt_type", "jnt_bodyid", "jnt_range", "jnt_limited", "jnt_stiffness", "qpos0",
    "dof_damping", "dof_armature", "dof_frictionloss",
    "actuator_trntype", "actuator_dyntype", "actuator_gaintype", "actuator_biastype", "actuator_trnid",
    "actuator_gear", "actuator_gainprm", "actuator_biasprm", "actuator_dynprm", "actuator_ctrlrange",
    "actuator_ctrllimited", "actuator_forcerange", "actuator_forcelimited",
)  # fmt: skip
"""MjModel arrays of the robot (body arrays without the world's row)."""
_ROBOT_GEOM_ARRAYS = ("geom_type", "geom_size", "geom_friction", "geom_bodyid")
_OPTIONS = ("timestep", "integrator", "cone", "impratio", "gravity")


def robot_fingerprint(model: mujoco.MjModel) -> str:
    """A short hex digest of the robot's numbers and names (see the module docstring)."""
    digest = hashlib.sha256()
    for name in _ROBOT_ARRAYS:
        values = np.asarray(getattr(model, name))
        if name.startswith("body_"):
            values = values[1:]  # the world body
        digest.update(name.encode() + np.ascontiguousarray(values).tobytes())
    robot_geoms = np.asarray(model.geom_bodyid) > 0  # the world's geoms (floor, terrain) left out
    for name in _ROBOT_GEOM_ARRAYS:
        digest.update(name.encode() + np.ascontiguousarray(np.asarray(getattr(model, name))[robot_geoms]).tobytes())
    for name in _OPTIONS:
        digest.update(name.encode() + np.asarray(getattr(model.opt, name)).tobytes())
    for obj, count in ((mujoco.mjtObj.mjOBJ_BODY, model.nbody), (mujoco.mjtObj.mjOBJ_JOINT, model.njnt),
                       (mujoco.mjtObj.mjOBJ_ACTUATOR, model.nu)):  # fmt: skip
        for i in range(1 if obj == mujoco.mjtObj.mjOBJ_BODY else 0, count):
            digest.update((mujoco.mj_id2name(model, obj, i) or f"#{i}").encode() + b"\0")
    return digest.hexdigest()[:16]
