"""robot.yaml of a policy trained on an Isaac Lab task, from the live env's managers.

The task's config is read as `robolearn import` reads an Isaac Lab run's params/env.yaml (written
here with Isaac Lab's own dump_yaml, loaded with interop/run_yaml.py), with what a run directory
cannot tell taken from the live env: the joint order (the articulation's), the joint limits, and
a check that the resolved action scale/offset and each observation term's width are what Isaac
Lab's action and observation managers use. A task whose gym registration names a robolearn task
(`robolearn_sim2sim_task`) gets that task's MJCF and task.yaml too, so `robolearn sim2sim` runs it.
"""

from __future__ import annotations

import math
import tempfile
from importlib.metadata import version
from pathlib import Path
from types import SimpleNamespace

import gymnasium as gym
import torch

from robolearn.errors import UserError
from robolearn.interop.dialects import dialect
from robolearn.interop.importer import layout_yaml, resolve
from robolearn.interop.run_yaml import load_run_yaml


def _config_dicts(env) -> tuple[dict, dict]:
    """The env's and agent's configs as a run directory's params/ would hold them."""
    from isaaclab.utils.io import dump_yaml

    with tempfile.TemporaryDirectory() as folder:
        dump_yaml(str(Path(folder) / "env.yaml"), env.env.cfg)
        agent = env.resolved.agent_cfg
        dump_yaml(str(Path(folder) / "agent.yaml"), agent if agent is not None else {"obs_groups": {"actor": env.actor_groups}})
        return load_run_yaml(Path(folder) / "env.yaml"), load_run_yaml(Path(folder) / "agent.yaml")


def _check_action(layout, term, task_id: str) -> None:
    """The resolved scale/offset per actuator equal the live action term's (a reading error otherwise)."""
    for key, live in (("action_scale", getattr(term, "_scale", None)), ("action_offset", getattr(term, "_offset", None))):
        if live is None:
            continue
        live = torch.as_tensor(live, dtype=torch.float32).cpu()
        live = (live[0] if live.ndim == 2 else live).reshape(-1)  # per env [N, A] -> [A]; a scalar for every joint
        for actuator, value in zip(layout.actuators, live.expand(len(layout.actuators)).tolist()):
            if abs(value - actuator[key]) > 1e-5:
                raise UserError(f"{task_id}: {key} of {actuator['joint']} resolves to {actuator[key]} from the config but "
                                f"Isaac Lab's action term uses {value}; the bundle would not match the training")  # fmt: skip


def bundle_metadata(env, staging: Path) -> dict:
    """robot.yaml's contract for the policy of an IsaacLabEnv (writes task.yaml + model where the task names a
    robolearn sim-to-sim task)."""
    u, task_id = env.env, env.resolved.task_id
    env_yaml, agent_yaml = _config_dicts(env)
    d = dialect(env_yaml, agent_yaml)
    action, robot_name = d.action()
    robot = u.scene[robot_name]
    joints = list(robot.joint_names)
    dims = env.observation_dims()
    layout = resolve(d, SimpleNamespace(num_actions=env.num_actions, obs_dim=dims["policy"]), joints, None, None)
    names = u.action_manager.active_terms
    if len(names) == 1:
        _check_action(layout, u.action_manager.get_term(names[0]), task_id)
    widths = [w for g in env.actor_groups for w in u.observation_manager.group_obs_term_dim[g]]
    ours = [t.width * t.history for t in layout.terms]
    if [math.prod(w) for w in widths] != ours:
        raise UserError(f"{task_id}: the observation terms resolve to widths {ours} but Isaac Lab's observation manager "
                        f"builds {[list(w) for w in widths]}; the bundle's layout would not match the policy's input")  # fmt: skip
    limits = robot.data.joint_pos_limits
    limits = (limits.torch if hasattr(limits, "torch") else torch.as_tensor(limits))[0].tolist()
    joint_limits = {j: [float(lo), float(hi)] for j, (lo, hi) in zip(joints, limits)}
    model_file = None
    sim2sim = gym.spec(task_id).kwargs.get("robolearn_sim2sim_task")
    if sim2sim:
        from robolearn.interop.sim2sim_task import write_task_yaml

        model_file = write_task_yaml(sim2sim, staging, None, layout)
    meta = layout_yaml(layout, env.cfg.name, model_file, joint_limits)
    meta["isaaclab"] = {"task": task_id, "isaaclab": version("isaaclab"), "physics_backend": d.physics_backend(),
                        "joint_order": f"{robot_name}.joint_names of the live articulation", "sim2sim_task": sim2sim}  # fmt: skip
    return meta
