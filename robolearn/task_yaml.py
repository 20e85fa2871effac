"""Reading a task YAML, and what `extends:` brings with it.

`extends: <base>` names an installed task (`extends: quadruped_flat`) or a YAML file relative to
this one. The base's settings come first and this file's merge on top (mappings key by key,
anything else replaced, a term or group set to null removed), so a variant states only what
differs. Extending an installed task also
brings that task's plugin along (registry.inherit): its term functions, its spec edit (robot
constants) and, named here by its full path, its model file, wherever that task is installed.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path

import yaml
from omegaconf._utils import get_yaml_loader

from robolearn.errors import UserError, one_line

class _TaskYamlLoader(yaml.CSafeLoader):
    """libyaml's parser with OmegaConf's scalar rules (1e-3 is a float, no timestamps) and its
    refusal of duplicate keys: every installed task's YAML is read at start-up, and the pure
    Python parser takes ~15x longer."""

    def construct_mapping(self, node, deep=False):
        keys = [k.value for k, _ in node.value if k.tag == yaml.resolver.BaseResolver.DEFAULT_SCALAR_TAG]
        duplicate = next((k for i, k in enumerate(keys) if k in keys[:i]), None)
        if duplicate is not None:
            raise yaml.constructor.ConstructorError("while constructing a mapping", node.start_mark,
                                                    f"found duplicate key {duplicate}", node.start_mark)  # fmt: skip
        return super().construct_mapping(node, deep=deep)


_TaskYamlLoader.yaml_implicit_resolvers = get_yaml_loader().yaml_implicit_resolvers


def yaml_string(text: str) -> str:
    """`text` as a YAML scalar that a task YAML reads back as the same string: bare where it is a
    plain name (`FL_hip`, `arm.joint_1`), quoted where YAML would read a name as something else
    (`null`, `yes`, `on`, `1.5`, `#wrist`)."""
    plain = re.fullmatch(r"[A-Za-z_][A-Za-z0-9_.\-]*", text) is not None
    return text if plain and yaml.load(text, Loader=_TaskYamlLoader) == text else json.dumps(text)


def _merged(base: dict, override: dict, where: str = "") -> dict:
    """`override` on top of `base`: mappings merge key by key, anything else is replaced; a null
    in place of one of the base's mappings (a term, a group) removes it, and a null for a term or
    group the base does not have is refused (a misspelt name would otherwise fail later, unnamed)."""
    out = dict(base)
    for key, value in override.items():
        named = f"{where}.{key}" if where else str(key)
        if value is None and isinstance(out.get(key), dict):
            del out[key]
        elif value is None and key not in out and out and all(isinstance(v, dict) for v in out.values()):
            raise UserError(f"{named}: null removes a term or group of the base task, and it has no '{key}' there; "
                            f"valid: {', '.join(map(str, out))}")  # fmt: skip
        elif isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _merged(out[key], value, named)
        else:
            out[key] = value
    return out


def _read(path: Path) -> dict:
    try:
        node = yaml.load(path.read_text(), Loader=_TaskYamlLoader)
    except (OSError, yaml.YAMLError) as exc:
        raise UserError(f"cannot read task config {path}: {one_line(exc)}") from None
    if not isinstance(node, dict):
        raise UserError(f"task config {path} must be a mapping of task settings")
    return node


def load_task_yaml(path: Path, tasks: Mapping[str, Path] | None = None, seen: tuple[Path, ...] = ()) -> dict:
    """The task YAML at `path` as plain data, its `extends:` chain merged in (`tasks`: the YAML of
    each installed task an `extends:` may name). The base's `name` is not inherited, and a base's
    model file that lives next to the base's YAML is named by its full path. The schema
    (config_task.TaskCfg) checks the result when the task is chosen."""
    path = path.resolve()
    if path in seen:
        raise UserError(f"task config {path}: 'extends' loops back to itself")
    node = _read(path)
    base = node.pop("extends", None)
    if base is None:
        return node
    base_path = _extended(path, base, tasks or {})
    base_node = load_task_yaml(base_path, tasks, (*seen, path))
    base_node.pop("name", None)
    asset = base_node.get("asset")
    if isinstance(asset, str) and (base_path.parent / asset).is_file():
        base_node["asset"] = str((base_path.parent / asset).resolve())
    try:
        return _merged(base_node, node)
    except UserError as exc:
        raise UserError(f"task config {path} (extends: {base}): {exc}") from None


def _extended(path: Path, base, tasks: Mapping[str, Path]) -> Path:
    """The YAML that `extends: <base>` in `path` names: an installed task's, else a file next to it."""
    if isinstance(base, str) and base in tasks:
        return tasks[base]
    if isinstance(base, str) and base and (path.parent / base).is_file():
        return path.parent / base
    valid = ", ".join(sorted(tasks)) or "(none installed)"
    raise UserError(f"task config {path}: extends: {base} is neither an installed task nor a YAML file next to it; "
                    f"installed tasks: {valid}")  # fmt: skip


def extends_of(path: Path) -> str | None:
    """The `extends:` of the YAML at `path` as written (None: none, or a file it cannot read; the
    config's composition reports the latter)."""
    try:
        base = _read(path).get("extends")
    except UserError:
        return None
    return base if isinstance(base, str) else None
