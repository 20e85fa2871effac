"""Hydra config registration and in-process composition (the CLI and the tests share this).

A task YAML may carry its own training recipe: `algo:` and `runner:` sections with any of those
settings (network sizes, learning rate, steps per env, iterations, ...). Precedence, lowest
first: the schema defaults (config.py) < configs/algo/<name>.yaml and configs/train.yaml < the
task's recipe < command-line overrides. The task is stored in Hydra's ConfigStore at the root
package, so choosing `task=<name>` also brings its recipe, and train.yaml lists the task after
its own values.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from hydra import compose, initialize_config_dir
from hydra.core.config_store import ConfigStore
from omegaconf import DictConfig, OmegaConf

from robolearn.config import AlgoCfg, RunnerCfg, TaskCfg, register_schemas
from robolearn.config_checks import check_train_cfg
from robolearn.errors import UserError, one_line
from robolearn.paths import configs_dir
from robolearn.registry import TaskPlugin, discover_tasks

RECIPE_SECTIONS = {"algo": AlgoCfg, "runner": RunnerCfg}
"""Sections of a task YAML that set training defaults for that task, and their schemas."""


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


def split_recipe(name: str, node: DictConfig) -> tuple[DictConfig, dict]:
    """(the task config, its recipe {section: {key: value}}), the recipe checked against the
    schemas: an unknown key or a wrong type is a UserError naming the task."""
    recipe = {}
    for section, schema in RECIPE_SECTIONS.items():
        values = node.pop(section, None)
        if values is None:
            continue
        if not isinstance(values, DictConfig):
            raise UserError(f"task '{name}': its {section}: section must be a mapping of {section} settings")
        valid = [f.name for f in dataclasses.fields(schema)]
        unknown = [k for k in values if k not in valid]
        if unknown:
            raise UserError(f"task '{name}': its recipe sets {section}.{unknown[0]}, which is not a {section} setting; "
                            f"valid: {', '.join(valid)}")  # fmt: skip
        try:
            OmegaConf.merge(OmegaConf.structured(schema), values)
        except Exception as exc:
            raise UserError(f"task '{name}': its recipe's {section}: section is invalid: {one_line(exc)}") from None
        recipe[section] = OmegaConf.to_container(values, resolve=True)
    return node, recipe


def register_configs() -> dict[str, TaskPlugin]:
    """Put the schemas and every installed task's YAML (validated) into Hydra's ConfigStore."""
    cs = ConfigStore.instance()
    register_schemas(cs)
    tasks = discover_tasks()
    for name, plugin in tasks.items():
        try:
            raw = load_task_yaml(plugin.config)
        except UserError:
            raise
        except Exception as exc:
            raise UserError(f"task '{name}': cannot read {plugin.config}: {one_line(exc)}") from None
        raw, recipe = split_recipe(name, raw)
        try:
            node = OmegaConf.merge(OmegaConf.structured(TaskCfg), raw)
        except Exception as exc:
            raise UserError(f"task '{name}': invalid config {plugin.config}: {one_line(exc)}") from None
        if node.name != name:
            raise UserError(f"task '{name}': {plugin.config} says name '{node.name}'; the names must match")
        cs.store(group="task", name=name, node={"task": node, **recipe}, package="_global_")
    return tasks


def compose_train(overrides: list[str] | None = None) -> DictConfig:
    """The training config `robolearn train <overrides>` would run with, composed in-process and
    checked (config_checks.py)."""
    register_configs()
    with initialize_config_dir(config_dir=str(configs_dir()), version_base="1.3"):
        cfg = compose(config_name="train", overrides=list(overrides or []))
    check_train_cfg(cfg)
    return cfg
