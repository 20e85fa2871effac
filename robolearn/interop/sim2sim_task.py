"""task= of an import: the robolearn task whose reset events, commands, rewards and terminations
referee `robolearn sim2sim` of the imported bundle (task.yaml in the bundle, naming its model)."""

from __future__ import annotations

from pathlib import Path

import torch
from omegaconf import OmegaConf

from robolearn.errors import UserError
from robolearn.export.bundle import copy_model
from robolearn.export.metadata import model_file_name
from robolearn.interop.layout import RunLayout


def write_task_yaml(task: str, staging: Path, model_file: str | None, layout: RunLayout) -> str:
    """Write staging/task.yaml for `task`, naming the bundle's model (the task's own robot, copied
    as the task builds it, where robot= gave none). Refused in one line when the task drives other
    joints than the run, or its terms do not fit the robot model. Returns the model file name."""
    from robolearn.compose import compose_train
    from robolearn.envs.batched_env import BatchedEnv
    from robolearn.registry import get_task
    from robolearn.sim2sim import Referee

    cfg = compose_train([f"task={task}"])
    env = BatchedEnv(cfg.task, get_task(task), 1, physics="mujoco", device=torch.device("cpu"))
    try:
        theirs = list(env.actions.joint_names)
        if set(theirs) != set(layout.action_joints):
            raise UserError(f"task={task} drives joints {', '.join(map(str, theirs))} but the run's policy drives "
                            f"{', '.join(layout.action_joints)}; choose the robolearn task of the same robot")  # fmt: skip
        _check_commands(task, dict(env.commands.components), layout.commands)
        if model_file is None:
            model_file = model_file_name(env.asset_path, edited=env.edit_spec is not None)
            copy_model(env.asset_path, staging, model_file, env.edit_spec)
        config = OmegaConf.to_container(env.cfg, resolve=True)
    finally:
        env.close()
    config["asset"] = model_file
    # the referee's control period is the run's: its timestep and steps per control step (the bundle's model
    # may step at the run's substep, as MuJoCo Warp under Newton does), not the task's own
    config["sim_dt"], config["decimation"] = layout.physics_dt_s, layout.decimation
    (staging / "task.yaml").write_text(OmegaConf.to_yaml(OmegaConf.create(config)))
    try:
        Referee(staging, model_file, seed=0).close()
    except UserError as exc:
        raise UserError(f"task={task} does not fit the imported robot model: {exc}") from None
    return model_file


def _check_commands(task: str, provided: dict[str, list[str]], needed: dict[str, dict]) -> None:
    """The task must command what the policy reads, by name and components: sim2sim hands the
    robot the task's commands as signals of their names, and a command the policy reads that no
    one provides ends every episode at its first tick (the watchdog: a reading without it)."""
    if any(provided.get(name) != list(spec["components"]) for name, spec in needed.items()):
        raise UserError(f"task={task} does not provide the command the run's policy reads: the bundle needs "
                        f"{_listed({n: spec['components'] for n, spec in needed.items()})}, the task provides "
                        f"{_listed(provided)}; "
                        "choose a task with those commands, or import with robot= alone (its referee uses the run's)")  # fmt: skip


def _listed(commands: dict) -> str:
    """`name (component, ...)` of each command, or none."""
    return ", ".join(f"{n} ({', '.join(c)})" for n, c in commands.items()) or "none"
