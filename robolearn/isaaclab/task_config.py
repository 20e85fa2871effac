"""`task=isaaclab:<id>` as a robolearn task config: registered in Hydra's ConfigStore when chosen,
with the Isaac Lab task's own rsl_rl runner config as its recipe (recipe.py)."""

from __future__ import annotations

import sys

from hydra.core.config_store import ConfigStore
from hydra.core.override_parser.overrides_parser import OverridesParser

from robolearn.errors import UserError
from robolearn.isaaclab import isaaclab_task
from robolearn.isaaclab.recipe import recipe
from robolearn.isaaclab.runtime import ResolvedTask, resolve_task

_RESOLVED: dict[tuple, ResolvedTask] = {}


def resolved(task: str, overrides: list[str]) -> ResolvedTask:
    """resolve_task, once per process for the same task and overrides."""
    key = (task, tuple(overrides))
    if key not in _RESOLVED:
        _RESOLVED[key] = resolve_task(task, overrides)
    return _RESOLVED[key]


def isaaclab_overrides(overrides: list[str]) -> list[str]:
    """The value of an `isaaclab.overrides=[...]` command-line override (the last one), else []."""
    given = [o for o in overrides if o.split("=", 1)[0] == "isaaclab.overrides"]
    if not given:
        return []
    value = OverridesParser.create().parse_override(given[-1]).value()
    if not isinstance(value, list):
        raise UserError(f"{given[-1]}: isaaclab.overrides takes a list, e.g. 'isaaclab.overrides=[\"env.episode_length_s=10\"]' (each quoted)")
    return [str(v) for v in value]


def register_chosen(overrides: list[str]) -> None:
    """If the command line chooses `task=isaaclab:<id>`, put that task into Hydra's ConfigStore."""
    chosen = [o.split("=", 1)[1] for o in overrides if o.startswith("task=")]
    task = isaaclab_task(chosen[-1]) if chosen else None
    if task is None:
        return
    found = resolved(task, isaaclab_overrides(overrides))
    agent = found.agent_cfg.to_dict() if found.agent_cfg is not None else None
    train_recipe, skipped = recipe(agent)
    if skipped:
        print(f"note: {found.task_id}'s rsl_rl settings {', '.join(skipped)} have no robolearn counterpart and are not "
              "used", file=sys.stderr)  # fmt: skip
    cfg = found.env_cfg
    node = {"name": chosen[-1], "asset": "", "description": f"Isaac Lab task {found.task_id}",
            "decimation": int(cfg.decimation), "episode_length_s": float(cfg.episode_length_s)}  # fmt: skip
    ConfigStore.instance().store(group="task", name=chosen[-1], node={"task": node, **train_recipe}, package="_global_")

