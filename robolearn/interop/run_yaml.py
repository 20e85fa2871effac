"""Reading the params/*.yaml an rsl_rl run dumps (Isaac Lab's and mjlab's dump_yaml).

Those files are written with PyYAML's unsafe dumper: tuples, slices, enums and functions carry
`!!python/...` tags that yaml.safe_load refuses. Nothing here imports or calls what a tag names:
a tuple becomes a list, a name (`!!python/name:pkg.mod.func`) its dotted string, a slice
{'slice': [start, stop, step]}, any other object {'object': dotted name, 'args': [...], 'state': {...}}.
The configs are read, never executed, so a run directory from anywhere is safe to import.
"""

from __future__ import annotations

from pathlib import Path

import yaml

from robolearn.errors import UserError

PYTHON_TAG = "tag:yaml.org,2002:python/"


class RunConfigLoader(yaml.SafeLoader):
    """SafeLoader plus inert stand-ins for PyYAML's python tags."""


def _python(loader: RunConfigLoader, suffix: str, node: yaml.Node):
    kind, _, name = suffix.partition(":")
    if kind == "tuple":
        return loader.construct_sequence(node, deep=True)
    if kind in ("name", "module"):
        return name
    if isinstance(node, yaml.SequenceNode):
        args, state = loader.construct_sequence(node, deep=True), {}
    elif isinstance(node, yaml.MappingNode):
        mapping = loader.construct_mapping(node, deep=True)
        args, state = mapping.get("args", []), mapping.get("state", mapping)
    else:
        args, state = [loader.construct_scalar(node)], {}
    if name in ("slice", "builtins.slice"):
        return {"slice": list(args)}
    return {"object": name, "args": list(args), "state": state}


RunConfigLoader.add_multi_constructor(PYTHON_TAG, _python)


def load_run_yaml(path: Path) -> dict:
    """One params/*.yaml as plain data; a missing, unreadable or non-mapping file is one line."""
    if not path.is_file():
        raise UserError(f"{path} is missing: an rsl_rl run directory has params/env.yaml and params/agent.yaml")
    try:
        data = yaml.load(path.read_text(), Loader=RunConfigLoader)  # noqa: S506 (inert loader above)
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        raise UserError(f"{path} is not valid YAML: {' '.join(str(exc).split())[:200]}") from None
    if not isinstance(data, dict):
        raise UserError(f"{path} does not hold a config mapping (found {type(data).__name__})")
    return data


def short_name(func) -> str:
    """A term function's own name from its dotted path ('mjlab.envs.mdp.observations.joint_pos_rel'
    -> 'joint_pos_rel'); '' for a config that names no function."""
    if isinstance(func, str):
        return func.rpartition(".")[2].rpartition(":")[2]
    if isinstance(func, dict) and isinstance(func.get("object"), str):
        return short_name(func["object"])
    return ""
