"""robot.yaml: the contract between the trained policy and the robot.

Joint order, action scaling and gains, control period, the observation layout (each term's slice,
scale, clip, units, source and history: a term with `history: K` spans K steps of its width in
start:stop, oldest first), a recurrent policy's state tensors (`policy_state`), versions, the training evaluation, and a sha256 for every file
and for robot.yaml's own content. The deploy runtime (robolearn_deploy.bundle) reads exactly this.
"""

from __future__ import annotations

import inspect
from pathlib import Path

import mujoco
import onnx
import onnxruntime
import torch
import yaml

import robolearn
from robolearn.envs.batched_env import BatchedEnv
from robolearn.scene.lookup import names, single_dof_joints
from robolearn.errors import UserError
from robolearn.export.onnx import INPUT_NAME, OUTPUT_NAME, state_input, state_output
from robolearn.rl.models import InferencePolicy
from robolearn_deploy.bundle import BUNDLE_FORMAT, RECURRENT_BUNDLE_FORMAT, metadata_digest, sha256


CTRL = "clip(action_offset + action_scale * action, ctrl_min, ctrl_max)"
"""How robot.yaml's actuators turn an action into a joint command (its `action.ctrl` entry)."""


def _actuator_entry(model: mujoco.MjModel, a: int, name: str) -> dict:
    """How the robot realizes one policy output: a position servo (joint-space kp, kd) or a motor
    (effort per unit of ctrl). Anything else (actuator dynamics, velocity servos, ...) has no
    joint-level equivalent to hand a driver, and is refused."""
    gain, bias = model.actuator_gainprm[a], model.actuator_biasprm[a]
    gear = float(model.actuator_gear[a, 0])
    fixed_gain = int(model.actuator_gaintype[a]) == int(mujoco.mjtGain.mjGAIN_FIXED)
    biastype = int(model.actuator_biastype[a])
    if int(model.actuator_dyntype[a]) != int(mujoco.mjtDyn.mjDYN_NONE):
        raise UserError(f"actuator '{name}' has activation dynamics (dyntype); deploy bundles support motors and "
                        "position servos without dynamics")  # fmt: skip
    entry: dict = {}
    if model.actuator_forcelimited[a]:  # MuJoCo clamps the actuator force, then applies gear
        entry["effort_range"] = sorted(float(f) * gear for f in model.actuator_forcerange[a])
    if fixed_gain and biastype == int(mujoco.mjtBias.mjBIAS_NONE):
        return {"kind": "motor", "effort_per_ctrl": float(gain[0]) * gear, **entry}
    if fixed_gain and biastype == int(mujoco.mjtBias.mjBIAS_AFFINE) and bias[1] != 0 and bias[1] == -gain[0]:
        if gear != 1.0:
            raise UserError(f"position actuator '{name}' has gear {gear}; deploy bundles need gear 1 for position actuators")
        return {"kind": "position", "kp": float(gain[0]), "kd": float(-bias[2]), **entry}
    raise UserError(f"actuator '{name}' is neither a motor nor a position servo; deploy bundles support those two kinds")


def _ctrl_range(model: mujoco.MjModel, a: int, low: float, high: float) -> list[float]:
    """The action manager's clip, narrowed to ctrlrange where MuJoCo clamps ctrl itself."""
    if model.actuator_ctrllimited[a]:
        low, high = max(low, float(model.actuator_ctrlrange[a, 0])), min(high, float(model.actuator_ctrlrange[a, 1]))
    return [low, high]


def _term_params(func, params: dict, model: mujoco.MjModel) -> dict:
    """A term's params with joint lists made explicit (None = every 1-DoF joint in training)."""
    params = dict(params)
    if "joints" in inspect.signature(func).parameters and params.get("joints") is None:
        qadr, _ = single_dof_joints(model, None)
        by_qadr = {int(model.jnt_qposadr[j]): n for j, n in enumerate(names(model, mujoco.mjtObj.mjOBJ_JOINT))}
        params["joints"] = [by_qadr[q] for q in qadr]
    return params


def model_file_name(asset: Path, edited: bool) -> str:
    """The robot model's file name in a bundle: an MJCF no task edits keeps its name; a URDF, or a
    model a task edits, is stored as its compiled model's MJCF under an `.xml` name (robot.urdf ->
    robot.xml; bundle.py writes it)."""
    return asset.name if asset.suffix.lower() == ".xml" and not edited else f"{asset.stem}.xml"


_TRANSMISSIONS = {int(mujoco.mjtTrn.mjTRN_TENDON): "a tendon", int(mujoco.mjtTrn.mjTRN_SITE): "a site",
                  int(mujoco.mjtTrn.mjTRN_BODY): "a body (adhesion)", int(mujoco.mjtTrn.mjTRN_SLIDERCRANK): "a slider-crank",
                  int(mujoco.mjtTrn.mjTRN_JOINTINPARENT): "a joint in its parent's frame"}  # fmt: skip


def _actuators(env: BatchedEnv) -> list[dict]:
    """robot.yaml's actuators, in action order; an actuator the runtime cannot drive is a UserError."""
    model, actions = env.model, env.actions
    actuators = []
    for k, (a, name, joint) in enumerate(zip(actions.actuator_ids.tolist(), actions.actuator_names, actions.joint_names)):
        if joint is None:
            what = _TRANSMISSIONS.get(int(model.actuator_trntype[a]), "something other than a joint")
            if int(model.actuator_trntype[a]) == int(mujoco.mjtTrn.mjTRN_JOINT):  # a ball or free joint
                what = f"the {mujoco.mjtJoint(int(model.jnt_type[model.actuator_trnid[a, 0]])).name[6:].lower()} joint"
            raise UserError(f"actuator '{name}' drives {what}, not a hinge or slide joint; deploy bundles carry joint "
                            "actuators only (the robot runtime commands hinge and slide joints)")  # fmt: skip
        ctrl_min, ctrl_max = _ctrl_range(model, a, float(actions.ctrl_low[k]), float(actions.ctrl_high[k]))
        actuators.append({
            "name": name, "joint": joint,
            "action_scale": float(actions.scale[k]), "action_offset": float(actions.offset[k]),
            "ctrl_min": ctrl_min, "ctrl_max": ctrl_max, **_actuator_entry(model, a, name),
        })  # fmt: skip
    return actuators


def bundle_refusal(env: BatchedEnv) -> str | None:
    """Why this env's robot cannot become a deploy bundle (the line export would stop with), None
    when it can: training checks it at the start instead of failing after the last iteration."""
    if hasattr(env, "bundle_metadata"):  # an Isaac Lab task describes itself
        return None
    try:
        _actuators(env)
    except UserError as e:
        return str(e)
    return None


def robot_metadata(env: BatchedEnv, task_name: str) -> dict:
    model = env.model
    actuators = _actuators(env)
    joint_names = names(model, mujoco.mjtObj.mjOBJ_JOINT)
    one_dof = [j for j in range(model.njnt) if int(model.jnt_type[j]) in (int(mujoco.mjtJoint.mjJNT_HINGE), int(mujoco.mjtJoint.mjJNT_SLIDE))]
    return {
        "bundle_format": BUNDLE_FORMAT,
        "task": task_name,
        "model_file": model_file_name(env.asset_path, edited=env.edit_spec is not None),
        "control_period_s": env.dt,
        "physics_dt_s": float(model.opt.timestep),
        "decimation": env.decimation,
        "actuators": actuators,
        "default_pose": {joint_names[j]: float(env.default_qpos[0, model.jnt_qposadr[j]]) for j in one_dof},
        "joint_limits": {joint_names[j]: [float(v) for v in model.jnt_range[j]] for j in one_dof if model.jnt_limited[j]},
        "observation": {
            "input": INPUT_NAME,
            "size": env.observation_dims()["policy"],
            "terms": [
                {"name": s.name, "start": s.start, "stop": s.stop, "scale": s.scale, "clip": s.clip, "units": s.units,
                 "source": s.func, "params": _term_params(func, s.params, model), "history": s.history}
                for s, func in env.observations.functions("policy")
            ],
        },
        "action": {"output": OUTPUT_NAME, "size": env.num_actions, "ctrl": CTRL},
        "commands": {
            name: {"components": comps, "ranges": {c: [float(v) for v in r] for c, r in zip(comps, env.commands.ranges[name].tolist())}}
            for name, comps in env.commands.components.items()
        },
    }  # fmt: skip


def policy_state(policy: InferencePolicy) -> dict:
    """What robot.yaml says about a recurrent policy's state: each tensor's graph input and output,
    its shape without the batch ([layers, hidden]), dtype and the value it starts an episode with;
    and the bundle format that marks a bundle as recurrent. {} for a feed-forward policy."""
    if not policy.state_names:
        return {}
    shapes = [list(s.shape[1:]) for s in policy.initial_state(1)]
    return {
        "bundle_format": RECURRENT_BUNDLE_FORMAT,
        "policy_state": [
            {"name": n, "input": state_input(n), "output": state_output(n), "shape": shape, "dtype": "float32", "reset": 0.0}
            for n, shape in zip(policy.state_names, shapes)
        ],
    }  # fmt: skip


def versions(onnx_path: Path) -> dict:
    opset = next((o.version for o in onnx.load(str(onnx_path), load_external_data=False).opset_import if o.domain in ("", "ai.onnx")), None)
    return {"robolearn": robolearn.__version__, "torch": torch.__version__.split("+")[0], "onnx": onnx.__version__,
            "opset": opset, "onnxruntime": onnxruntime.__version__}  # fmt: skip


def write_robot_yaml(meta: dict, bundle_dir: Path) -> Path:
    """Add checksums of every other file in the bundle and of the metadata itself, then write."""
    files = sorted(p for p in bundle_dir.rglob("*") if p.is_file() and p != bundle_dir / "robot.yaml")
    meta = {**meta, "files": {p.relative_to(bundle_dir).as_posix(): {"sha256": sha256(p)} for p in files}}
    meta["metadata_sha256"] = metadata_digest(meta)
    out = bundle_dir / "robot.yaml"
    tmp = out.with_name(out.name + ".tmp")
    tmp.write_text(yaml.safe_dump(meta, sort_keys=False))
    tmp.replace(out)
    return out
