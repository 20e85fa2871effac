"""Hydra config registration and in-process composition (the CLI and the tests share this)."""

from __future__ import annotations

from pathlib import Path

from hydra import compose, initialize_config_dir
from hydra.core.config_store import ConfigStore
from omegaconf import DictConfig, OmegaConf

from robolearn.config import TaskCfg, register_schemas
from robolearn.errors import UserError, one_line
from robolearn.paths import configs_dir
from robolearn.registry import TaskPlugin, discover_tasks


def load_task_yaml(path: Path, seen: tuple[Path, ...] = ()) -> DictConfig:
    """A task YAML; one with `extends: <other.yaml>` (relative to it) is that file with this one
    merged on top, so a variant (rough terrain) states only what differs from its base."""
    path = path.resolve()
    if path in seen:
        raise UserError(f"task config {path}: 'extends' loops back to itself")
    node = OmegaConf.load(path)
    base = node.pop("extends", None)
    if base is None:
        return node
    return OmegaConf.merge(load_task_yaml(path.parent / str(base), (*seen, path)), node)


def register_configs() -> dict[str, TaskPlugin]:
    """Put the schemas and every installed task's YAML (validated) into Hydra's ConfigStore."""
    cs = ConfigStore.instance()
    register_schemas(cs)
    tasks = discover_tasks()
    for name, plugin in tasks.items():
        try:
            node = OmegaConf.merge(OmegaConf.structured(TaskCfg), load_task_yaml(plugin.config))
        except Exception as exc:
            raise UserError(f"task '{name}': invalid config {plugin.config}: {one_line(exc)}") from None
        if node.name != name:
            raise UserError(f"task '{name}': {plugin.config} says name '{node.name}'; the names must match")
        cs.store(group="task", name=name, node=node)
    return tasks


def compose_train(overrides: list[str] | None = None) -> DictConfig:
    """The training config `robolearn train <overrides>` would run with, composed in-process."""
    register_configs()
    with initialize_config_dir(config_dir=str(configs_dir()), version_base="1.3"):
        return compose(config_name="train", overrides=list(overrides or []))
