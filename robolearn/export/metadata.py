"""robot.yaml: the contract between the trained policy and the robot.

Joint order, action scaling and gains (or, for an actuator no joint command can drive, its ctrl:
kind 'actuator'), control period, the observation layout (each term's slice, scale, clip, units,
source and history: a term with `history: K` spans K steps of its width in start:stop, oldest
first), the MJCF sensors the policy reads (`sensors`: width and type, supplied by the robot as
signals of their names), a recurrent policy's state tensors (`policy_state`), versions, the
training evaluation, and a sha256 for every file and for robot.yaml's own content. The deploy runtime (robolearn_deploy.bundle) reads exactly this.
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
from robolearn.atomic_file import write_text_atomic
from robolearn.envs.batched_env import BatchedEnv
from robolearn.scene.entities import Sensors, entity_names, entity_params
from robolearn.scene.lookup import names, single_dof_joints
from robolearn.errors import UserError
from robolearn.export.onnx import INPUT_NAME, OUTPUT_NAME, state_input, state_output
from robolearn.rl.models import PolicyGraph
from robolearn_deploy.actuator_kinds import holds_a_target, joint_level_kind
from robolearn_deploy.bundle import BUNDLE_FORMAT, RECURRENT_BUNDLE_FORMAT, metadata_digest, sha256
from robolearn_deploy.observations import BASE_SIGNALS, SOURCES


CTRL = "clip(action_offset + action_scale * action, ctrl_min, ctrl_max)"
"""How robot.yaml's actuators turn an action into ctrl (its `action.ctrl` entry): then a joint command
(kinds motor and position), or the actuator's own ctrl for the driver (kind actuator)."""


def _actuator_entry(model: mujoco.MjModel, a: int) -> dict:
    """How the robot realizes one policy output: at the joint level as a position servo (joint-space
    kp, kd) or a motor (effort per unit of ctrl); any other actuator (a tendon, activation dynamics,
    a velocity servo, ...) by its ctrl, as MuJoCo applies it (robolearn_deploy/actuator_kinds.py)."""
    gain, bias = model.actuator_gainprm[a], model.actuator_biasprm[a]
    gear = float(model.actuator_gear[a, 0])
    kind = joint_level_kind(model, a)
    if kind is None:
        if not mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_ACTUATOR, a):
            raise UserError(f"actuator {a} ({_drives(model, a)}) has no name; the robot driver receives its ctrl by "
                            "the actuator's name, so give it one in the MJCF (<general name=...>)")  # fmt: skip
        return {"joint": None, "kind": "actuator", "drives": _drives(model, a),
                "safe_ctrl": "hold" if holds_a_target(model, a) else "zero"}  # fmt: skip
    entry: dict = {}
    if model.actuator_forcelimited[a]:  # MuJoCo clamps the actuator force, then applies gear
        entry["effort_range"] = sorted(float(f) * gear for f in model.actuator_forcerange[a])
    if kind == "motor":
        return {"kind": "motor", "effort_per_ctrl": float(gain[0]) * gear, **entry}
    return {"kind": "position", "kp": float(gain[0]), "kd": float(-bias[2]) + 0.0, **entry}  # + 0.0: no -0.0


_TRANSMISSIONS = {int(mujoco.mjtTrn.mjTRN_JOINT): "joint", int(mujoco.mjtTrn.mjTRN_JOINTINPARENT): "joint",
                  int(mujoco.mjtTrn.mjTRN_TENDON): "tendon", int(mujoco.mjtTrn.mjTRN_SITE): "site",
                  int(mujoco.mjtTrn.mjTRN_BODY): "body", int(mujoco.mjtTrn.mjTRN_SLIDERCRANK): "slider-crank"}  # fmt: skip
_OBJECTS = {"joint": mujoco.mjtObj.mjOBJ_JOINT, "tendon": mujoco.mjtObj.mjOBJ_TENDON, "site": mujoco.mjtObj.mjOBJ_SITE,
            "body": mujoco.mjtObj.mjOBJ_BODY, "slider-crank": mujoco.mjtObj.mjOBJ_SITE}  # fmt: skip


def _drives(model: mujoco.MjModel, a: int) -> str:
    """What an actuator commanded by its ctrl moves, and how, in words: "tendon 'rope', filter
    dynamics, gain 2" (for a person reading robot.yaml; the bundle's MJCF has the details)."""
    trn = _TRANSMISSIONS.get(int(model.actuator_trntype[a]), "transmission")
    target = mujoco.mj_id2name(model, _OBJECTS.get(trn, mujoco.mjtObj.mjOBJ_UNKNOWN), int(model.actuator_trnid[a, 0]))
    words = [f"{trn} '{target}'" if target else trn]
    if trn == "joint":
        words[0] = f"{mujoco.mjtJoint(int(model.jnt_type[model.actuator_trnid[a, 0]])).name[6:].lower()} {words[0]}"
    dyn = int(model.actuator_dyntype[a])
    if dyn != int(mujoco.mjtDyn.mjDYN_NONE):
        words.append(f"{mujoco.mjtDyn(dyn).name[6:].lower()} dynamics")
    gear = float(model.actuator_gear[a, 0])
    if gear != 1.0:
        words.append(f"gear {gear:g}")
    return ", ".join(words)


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


def _actuators(env: BatchedEnv) -> list[dict]:
    """robot.yaml's actuators, in action order; an actuator the runtime cannot drive is a UserError."""
    model, actions = env.model, env.actions
    actuators = []
    for k, (a, name, joint) in enumerate(zip(actions.actuator_ids.tolist(), actions.actuator_names, actions.joint_names)):
        ctrl_min, ctrl_max = _ctrl_range(model, a, float(actions.ctrl_low[k]), float(actions.ctrl_high[k]))
        actuators.append({
            "name": name, "joint": joint,
            "action_scale": float(actions.scale[k]), "action_offset": float(actions.offset[k]),
            "ctrl_min": ctrl_min, "ctrl_max": ctrl_max, **_actuator_entry(model, a),
        })  # fmt: skip
    return actuators


def bundle_refusal(env: BatchedEnv) -> str | None:
    """Why this env's robot cannot become a deploy bundle (the line export would stop with), None
    when it can: training checks it at the start instead of failing after the last iteration."""
    if hasattr(env, "bundle_metadata"):  # an Isaac Lab task describes itself
        return None
    try:
        _actuators(env)
        _sensors(env.model, list(env.observations.functions("policy")), env.commands.names)
    except UserError as e:
        return str(e)
    return None


def runtime_gap(terms: list[tuple[str, str]]) -> str | None:
    """What the deploy runtime cannot compute of a policy observation ((term name, source) pairs, a
    source being the term's function), in one line; None when it computes every term. Not a refusal:
    the robot's own code may teach the runtime a source (robolearn_deploy.register_source), as a
    plugin that registers its numpy twin on import already has by the time this runs."""
    missing = [f"'{name}' ({source})" for name, source in terms if source not in SOURCES]
    if not missing:
        return None
    return (f"the deploy runtime has no source for policy observation {', '.join(missing)}; the robot's code must "
            f"register one (robolearn_deploy.register_source) before the bundle runs there or in sim2sim "
            f"(built in: {', '.join(sorted(SOURCES))})")


def policy_terms(env: BatchedEnv) -> list[tuple[str, str]]:
    """(name, source) of each term of the policy's observation."""
    return [(s.name, s.func) for s, _ in env.observations.functions("policy")]


def _sensors(model: mujoco.MjModel, terms: list, commands: list[str]) -> dict:
    """robot.yaml's `sensors`: each MJCF sensor a policy observation term reads (a param declared
    `Sensors`, as the `sensor` term's `names`), with its width, type and what it is attached to.
    The robot supplies each as the signal of the sensor's name (sim.MujocoRobot: every named sensor),
    so a sensor named like a base signal or a command is refused (the driver could not tell them apart)."""
    found = {}
    for spec, func in terms:
        for param, (kind, default) in entity_params(func).items():
            if kind is not Sensors:
                continue
            for name in entity_names(spec.params.get(param, default)) or ():
                if name in BASE_SIGNALS or name in commands:
                    what = "floating base's" if name in BASE_SIGNALS else "command's"
                    raise UserError(f"sensor '{name}' (observation '{spec.name}') has the name of the {what} signal "
                                    f"'{name}'; the robot supplies each sensor under its own name, so rename the "
                                    "sensor in the MJCF")  # fmt: skip
                s = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_SENSOR, name)
                entry = {"dim": int(model.sensor_dim[s]), "type": mujoco.mjtSensor(int(model.sensor_type[s])).name[7:].lower()}
                obj = mujoco.mj_id2name(model, int(model.sensor_objtype[s]), int(model.sensor_objid[s]))
                if obj:
                    entry["object"] = f"{mujoco.mjtObj(int(model.sensor_objtype[s])).name[6:].lower()} '{obj}'"
                found[name] = entry
    return found


def robot_metadata(env: BatchedEnv, task_name: str) -> dict:
    model = env.model
    actuators = _actuators(env)
    terms = list(env.observations.functions("policy"))
    sensors = _sensors(model, terms, env.commands.names)
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
                for s, func in terms
            ],
        },
        **({"sensors": sensors} if sensors else {}),
        "action": {"output": OUTPUT_NAME, "size": env.num_actions, "ctrl": CTRL},
        "commands": {
            name: {"components": comps, "ranges": {c: [float(v) for v in r] for c, r in zip(comps, env.commands.ranges[name].tolist())}}
            for name, comps in env.commands.components.items()
        },
    }  # fmt: skip


def policy_state(policy: PolicyGraph) -> dict:
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
    write_text_atomic(out, yaml.safe_dump(meta, sort_keys=False))
    return out
