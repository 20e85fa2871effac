"""Task discovery through the `robolearn.tasks` entry point.

A task package registers one `TaskPlugin` under its task name:

    [project.entry-points."robolearn.tasks"]
    my_task = "my_package.my_task:TASK"

The entry point's name is the task's name: the plugin and its YAML may leave it out (a `name`
they do state must match it).

Nothing is discovered at import time: `discover_tasks()` reads the entry points when called
(by the CLI, the tests, or user code). A plugin that fails to load is set aside in BROKEN
with the reason; the other tasks keep working.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from importlib.metadata import entry_points
from pathlib import Path

from robolearn.errors import UserError, one_line
from robolearn.task_yaml import extends_of

ENTRY_POINT_GROUP = "robolearn.tasks"


@dataclass(frozen=True)
class TaskPlugin:
    """What a task package provides: its name, its Hydra YAML and the term functions it defines."""

    name: str = ""
    """The task's name; empty: the name of the entry point it is registered under."""
    config: Path | None = None
    """The task YAML (validated against robolearn.config_task.TaskCfg)."""
    terms: Mapping[str, Callable] = field(default_factory=dict)
    """Task-specific term functions by name; robolearn.mdp's generic terms are always available."""
    edit_spec: Callable | None = None
    """edit_spec(mujoco.MjSpec): changes the MJCF before it is compiled (robot constants kept in
    Python, generated terrain, ...). The exported bundle carries the edited model."""

    def __post_init__(self) -> None:
        if self.config is None:
            raise TypeError("TaskPlugin needs config=<path of the task YAML>")
        if isinstance(self.config, str):  # a path given as text
            object.__setattr__(self, "config", Path(self.config))
        if not isinstance(self.config, Path):
            raise TypeError(f"TaskPlugin config= is a {type(self.config).__name__}; valid: the path of the task YAML")
        if not isinstance(self.terms, Mapping):
            raise TypeError(f"TaskPlugin terms= is a {type(self.terms).__name__}; valid: a mapping of names to term "
                            "functions, e.g. terms={'my_reward': my_reward}")  # fmt: skip
        for key, term in self.terms.items():
            if not isinstance(key, str) or not callable(term):
                raise TypeError(f"TaskPlugin terms[{key!r}] is a {type(term).__name__}; valid: a term function or class "
                                "under a name the YAML's func: uses")  # fmt: skip
        if self.edit_spec is not None and not callable(self.edit_spec):
            raise TypeError(f"TaskPlugin edit_spec= is a {type(self.edit_spec).__name__}; valid: a function "
                            "edit_spec(spec: mujoco.MjSpec)")  # fmt: skip

    @property
    def folder(self) -> Path:
        return self.config.parent


BROKEN: dict[str, str] = {}
"""Installed task plugins that failed to load, with the reason (filled by discovery and by
compose.register_configs): `robolearn list` shows them, `task=<name>` names the reason, and
every other task keeps working."""


def discover_tasks() -> dict[str, TaskPlugin]:
    """Load every installed task plugin, keyed by name. One that fails to load (an import error, not
    a TaskPlugin, a name that does not match, a name registered twice) goes to BROKEN instead."""
    tasks: dict[str, TaskPlugin] = {}
    sources: dict[str, str] = {}
    BROKEN.clear()
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        source = f"{ep.value} ({ep.dist.name if ep.dist else 'unknown distribution'})"
        if ep.name in tasks or ep.name in BROKEN:
            first = sources.get(ep.name, "another plugin")
            tasks.pop(ep.name, None)
            BROKEN[ep.name] = (f"task '{ep.name}' is registered twice: by {first} and by {source}; "
                               "uninstall or rename one of them")  # fmt: skip
            continue
        sources[ep.name] = source
        try:
            plugin = ep.load()
        except Exception as exc:  # a plugin's own bug must not stop the other tasks
            BROKEN[ep.name] = f"{source} failed to import: {type(exc).__name__}: {one_line(exc)}{_shadowed(ep)}"
            continue
        except SystemExit as exc:  # sys.exit() or argparse at import would end every robolearn command silently
            BROKEN[ep.name] = f"{source} exited while it was imported (SystemExit: {exc.code}); a plugin module must not exit"
            continue
        if not isinstance(plugin, TaskPlugin):
            BROKEN[ep.name] = f"entry point '{ep.name}' = {ep.value} is not a robolearn TaskPlugin"
        elif plugin.name and plugin.name != ep.name:
            BROKEN[ep.name] = (f"entry point '{ep.name}' = {ep.value} holds a task named '{plugin.name}'; "
                               "the two names must match")  # fmt: skip
        else:
            tasks[ep.name] = plugin if plugin.name else replace(plugin, name=ep.name)
    return tasks


def _shadowed(ep) -> str:
    """Why a plugin's package may not be the installed one: its top-level name was imported from a
    folder without __init__.py (a namespace package), e.g. the project folder new-task wrote, found
    first because `python -m` puts the current directory at the head of sys.path."""
    top = ep.value.split(":")[0].split(".")[0]
    module = sys.modules.get(top)
    if module is None or getattr(module, "__file__", None) is not None or not hasattr(module, "__path__"):
        return ""
    folders = ", ".join(str(p) for p in module.__path__)
    return (f" ('{top}' was imported from the folder {folders}, which has no __init__.py and hides the installed "
            "package; run from another directory, or through the robolearn command rather than python -m)")


def get_task(name: str, tasks: Mapping[str, TaskPlugin] | None = None) -> TaskPlugin:
    tasks = discover_tasks() if tasks is None else tasks
    if name not in tasks and name in BROKEN:
        raise UserError(f"task '{name}' is installed but cannot be used: {BROKEN[name]}")
    if name not in tasks:
        valid = ", ".join(sorted(tasks)) or "(none installed)"
        raise UserError(f"unknown task '{name}'; valid tasks: {valid}")
    return inherit(tasks[name], tasks)


def task_configs(tasks: Mapping[str, TaskPlugin]) -> dict[str, Path]:
    """Each task's YAML by name: what an `extends:` may name (task_yaml.load_task_yaml)."""
    return {name: plugin.config for name, plugin in tasks.items()}


class _Edits:
    """Spec edits applied in order (a base task's, then its variant's)."""

    def __init__(self, *edits: Callable):
        self.edits = edits

    def __call__(self, spec) -> None:
        for edit in self.edits:
            edit(spec)


def inherit(plugin: TaskPlugin, tasks: Mapping[str, TaskPlugin], seen: tuple[str, ...] = ()) -> TaskPlugin:
    """`plugin` with what the installed task its YAML extends provides: that task's terms under its
    own (its own win a clash) and that task's spec edit before its own."""
    base = extends_of(plugin.config)
    if base is None or base not in tasks or base in seen or base == plugin.name:
        return plugin
    parent = inherit(tasks[base], tasks, (*seen, plugin.name))
    edits = [e for e in (parent.edit_spec, plugin.edit_spec) if e is not None]
    edit = edits[0] if len(edits) == 1 else (_Edits(*edits) if edits else None)
    return replace(plugin, terms={**parent.terms, **plugin.terms}, edit_spec=edit)
