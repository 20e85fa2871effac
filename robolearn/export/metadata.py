"""robot.yaml: what a robot needs to run the exported policy (joint order, scaling, timing, layout)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import mujoco
import yaml

import robolearn
from robolearn.envs.batched_env import BatchedEnv
from robolearn.export.onnx import INPUT_NAME, OUTPUT_NAME


def _gains(model: mujoco.MjModel, actuator: int) -> dict:
    """PD gains of a position-style actuator (gain kp, bias -kp*q - kd*qdot); empty for motors."""
    kp = float(model.actuator_gainprm[actuator, 0])
    bias = model.actuator_biasprm[actuator]
    if int(model.actuator_biastype[actuator]) == int(mujoco.mjtBias.mjBIAS_AFFINE) and bias[1] != 0:
        return {"kp": kp, "kd": float(-bias[2])}
    return {}


def robot_metadata(env: BatchedEnv, task_name: str) -> dict:
    model, actions = env.model, env.actions
    ids = actions.actuator_ids.tolist()
    default_pose = {}
    for joint in actions.joint_names:
        if joint is not None:
            j = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_JOINT, joint)
            default_pose[joint] = float(model.qpos0[model.jnt_qposadr[j]])
    return {
        "robolearn_version": robolearn.__version__,
        "task": task_name,
        "model_file": env.asset_path.name,
        "control_period_s": env.dt,
        "physics_dt_s": float(model.opt.timestep),
        "decimation": env.decimation,
        "actuators": [
            {
                "name": name,
                "joint": joint,
                "action_scale": float(actions.scale[k]),
                "action_offset": float(actions.offset[k]),
                "ctrl_min": float(actions.ctrl_low[k]),
                "ctrl_max": float(actions.ctrl_high[k]),
                **_gains(model, a),
            }
            for k, (a, name, joint) in enumerate(zip(ids, actions.actuator_names, actions.joint_names))
        ],
        "default_pose": default_pose,
        "observation": {
            "input": INPUT_NAME,
            "size": env.observation_dims()["policy"],
            "terms": [
                {"name": s.name, "start": s.start, "stop": s.stop, "scale": s.scale, "clip": s.clip, "units": s.units,
                 "source": s.func, "params": s.params}
                for s in env.observations.layout["policy"]
            ],
        },
        "action": {"output": OUTPUT_NAME, "size": env.num_actions, "ctrl": "clip(action_offset + action_scale * action)"},
    }


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def write_robot_yaml(meta: dict, onnx_path: Path, out: Path) -> Path:
    meta = {**meta, "files": {onnx_path.name: {"sha256": sha256(onnx_path)}}}
    tmp = out.with_name(out.name + ".tmp")
    tmp.write_text(yaml.safe_dump(meta, sort_keys=False))
    tmp.replace(out)
    return out
