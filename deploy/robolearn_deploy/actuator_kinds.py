"""How a MuJoCo actuator reaches a robot: as a joint command, or as its own ctrl.

A joint driver takes `effort = kp (position - q) + kd (velocity - qdot) + effort` per joint. Two
kinds of actuator are exactly that at the joint level, so a bundle hands them to the driver as a
JointCommand:
- 'motor':    a hinge/slide joint, no activation dynamics, fixed gain, no bias:
              joint effort = gear * gain * ctrl;
- 'position': the same with MuJoCo's position-servo bias (b0 = 0, b1 = -gain, gear 1):
              joint effort = kp (ctrl - q) - kd qdot.
Every other actuator (a tendon, site or slider-crank transmission, a ball joint, activation
dynamics such as filters, integrators and muscles, a velocity servo, a servo with a gear) has
no joint-level equivalent; its bundle entry is of kind 'actuator', and the robot driver receives
its ctrl as is (JointCommand.ctrl, in the driver's `actuator_names` order), to apply as MuJoCo
would. Export (robolearn/export/metadata.py) and the MuJoCo stand-in robot (sim.MujocoRobot) both
classify with this module, so the stand-in drives each actuator the way the bundle says.

Needs the `mujoco` package (export and sim-to-sim have it; the robot runtime does not import this).
"""

from __future__ import annotations

import mujoco

_ONE_DOF = (int(mujoco.mjtJoint.mjJNT_HINGE), int(mujoco.mjtJoint.mjJNT_SLIDE))


def joint_level_kind(model: mujoco.MjModel, a: int) -> str | None:
    """'motor' or 'position' when actuator `a` is one at the joint level (module doc), else None
    (it can only be driven by its ctrl)."""
    if int(model.actuator_trntype[a]) != int(mujoco.mjtTrn.mjTRN_JOINT):
        return None
    if int(model.jnt_type[model.actuator_trnid[a, 0]]) not in _ONE_DOF:
        return None
    if int(model.actuator_dyntype[a]) != int(mujoco.mjtDyn.mjDYN_NONE):
        return None
    if int(model.actuator_gaintype[a]) != int(mujoco.mjtGain.mjGAIN_FIXED):
        return None
    bias, gear = model.actuator_biasprm[a], float(model.actuator_gear[a, 0])
    biastype = int(model.actuator_biastype[a])
    if biastype == int(mujoco.mjtBias.mjBIAS_NONE) or (biastype == int(mujoco.mjtBias.mjBIAS_AFFINE) and not bias[:3].any()):
        return "motor"
    if servo_bias(model, a) and bias[0] == 0 and gear == 1.0:
        return "position"
    return None


def servo_bias(model: mujoco.MjModel, a: int) -> bool:
    """Whether actuator `a` has a position servo's bias: affine, its position term minus the gain
    (b1 = -kp, not 0), so that its force is kp (ctrl - length) plus what b0 and b2 add."""
    bias = model.actuator_biasprm[a]
    affine = int(model.actuator_biastype[a]) == int(mujoco.mjtBias.mjBIAS_AFFINE)
    return bool(affine and bias[1] != 0 and bias[1] == -model.actuator_gainprm[a, 0])


def holds_a_target(model: mujoco.MjModel, a: int) -> bool:
    """Whether an actuator's force pulls toward a position its ctrl sets (an affine bias on its
    length, the ctrl not integrated): such an actuator keeps its last ctrl when the watchdog
    trips; any other gets ctrl 0 (a motor or muscle then applies no force, a velocity servo stops,
    an integrating servo keeps the target it reached)."""
    affine = int(model.actuator_biastype[a]) == int(mujoco.mjtBias.mjBIAS_AFFINE) and model.actuator_biasprm[a, 1] != 0
    return affine and int(model.actuator_dyntype[a]) != int(mujoco.mjtDyn.mjDYN_INTEGRATOR)
