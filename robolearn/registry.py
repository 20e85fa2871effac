"""Task discovery through the `robolearn.tasks` entry point.

A task package registers one `TaskPlugin` under its task name:

    [project.entry-points."robolearn.tasks"]
    my_task = "my_package.my_task:TASK"

Nothing is discovered at import time: `discover_tasks()` reads the entry points when called
(by the CLI, the tests, or user code). The same name registered twice is an error.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from pathlib import Path

from robolearn.errors import UserError

ENTRY_POINT_GROUP = "robolearn.tasks"


@dataclass(frozen=True)
class TaskPlugin:
    """What a task package provides: its name, its Hydra YAML and the term functions it defines."""

    name: str
    config: Path
    """The task YAML (validated against robolearn.config.TaskCfg)."""
    terms: Mapping[str, Callable] = field(default_factory=dict)
    """Task-specific term functions by name; robolearn.mdp's generic terms are always available."""
    edit_spec: Callable | None = None
    """edit_spec(mujoco.MjSpec): changes the MJCF before it is compiled (robot constants kept in
    Python, generated terrain, ...). The exported bundle carries the edited model."""

    @property
    def folder(self) -> Path:
        return self.config.parent


def discover_tasks() -> dict[str, TaskPlugin]:
    """Load every installed task plugin, keyed by name."""
    tasks: dict[str, TaskPlugin] = {}
    sources: dict[str, str] = {}
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        source = f"{ep.value} ({ep.dist.name if ep.dist else 'unknown distribution'})"
        if ep.name in tasks:
            raise UserError(
                f"task '{ep.name}' is registered twice: by {sources[ep.name]} and by {source}; "
                "uninstall or rename one of them"
            )
        plugin = ep.load()
        if not isinstance(plugin, TaskPlugin):
            raise UserError(f"entry point '{ep.name}' = {ep.value} is not a robolearn TaskPlugin")
        if plugin.name != ep.name:
            raise UserError(
                f"entry point '{ep.name}' = {ep.value} holds a task named '{plugin.name}'; "
                "the two names must match"
            )
        tasks[ep.name] = plugin
        sources[ep.name] = source
    return tasks


def get_task(name: str, tasks: Mapping[str, TaskPlugin] | None = None) -> TaskPlugin:
    tasks = discover_tasks() if tasks is None else tasks
    if name not in tasks:
        valid = ", ".join(sorted(tasks)) or "(none installed)"
        raise UserError(f"unknown task '{name}'; valid tasks: {valid}")
    return tasks[name]
