"""`+task.rewards.<new>={...}`: a new term (or a new entry of any dict of settings) from the command line.

OmegaConf refuses to assign a plain mapping to a new key of a dict whose values follow a schema
(`rewards: Dict[str, RewardTermCfg]`), so Hydra's `+key=value` fails there ("dict is not a
subclass of RewardTermCfg") and a new term could only come from a YAML file. Merging into the
dict works, and builds the new entry from its schema, so such an addition is handed to Hydra as
a merge into the dict:

    +task.rewards.alive={func: is_alive, weight: 1}  ->  ++task.rewards={alive: {func: is_alive, weight: 1}}
    +task.rewards.alive.weight=2                     ->  ++task.rewards={alive: {weight: 2}}

An entry that already exists is updated (what `++` does). A sweep (`a,b`, `choice(...)`, ...) and
a key that is not a plain name are left to Hydra as written. A setting the entry's schema lacks
fails the merge; robolearn/hydra_errors.py names it in the override as the user wrote it.
"""

from __future__ import annotations

import dataclasses
import re
import types
import typing

from robolearn.config import TrainCfg

_ADDITION = re.compile(r"^\+\+?([A-Za-z_][\w]*(?:\.[A-Za-z_][\w-]*)+)=(.+)$", re.S)
_NAME = re.compile(r"[A-Za-z_][\w]*")
_SWEEP_FUNCTIONS = ("choice(", "range(", "interval(", "glob(", "shuffle(", "sort(", "tag(")


def _unwrap(hint):
    """X from Optional[X]; the hint itself otherwise."""
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(hint) if a is not type(None)]
        return args[0] if len(args) == 1 else hint
    return hint


def _schema_dict(parts: list[str]) -> int | None:
    """The index of the first part of a key that is a dict of schema entries (Dict[str, <dataclass>])
    with an entry named after it; None if the key reaches none."""
    node = TrainCfg
    for i, part in enumerate(parts[:-1]):
        if not dataclasses.is_dataclass(node):
            return None
        hint = _unwrap(typing.get_type_hints(node).get(part))
        if typing.get_origin(hint) in (dict, typing.Dict):  # noqa: UP006 (the schemas use typing.Dict)
            value = typing.get_args(hint)[1] if len(typing.get_args(hint)) == 2 else None
            return i if dataclasses.is_dataclass(value) else None
        node = hint
    return None


def takes_new_entries(path: str) -> bool:
    """Whether `path` (task.rewards, task.observations.policy.terms, ...) is a dict of schema entries,
    to which `+<path>.<name>=...` adds one."""
    parts = path.split(".")
    return _schema_dict([*parts, "entry", "setting"]) == len(parts) - 1


def holds_entries(path: str) -> bool:
    """Whether `path` is a dict of schema entries anywhere in the config (task.rewards, task.observations,
    also task.observations.<group>.terms past a group's name), which an override merges into."""
    parts, node, i = path.split("."), TrainCfg, 0
    while i < len(parts) and dataclasses.is_dataclass(node):
        hint = _unwrap(typing.get_type_hints(node).get(parts[i]))
        i += 1
        if typing.get_origin(hint) in (dict, typing.Dict):  # noqa: UP006 (the schemas use typing.Dict)
            value = typing.get_args(hint)[1] if len(typing.get_args(hint)) == 2 else None
            if i == len(parts):
                return dataclasses.is_dataclass(value)
            node, i = value, i + 1  # past the entry's name
        else:
            node = hint
    return False


def _is_sweep(value: str) -> bool:
    """A Hydra sweep: a top-level comma (outside brackets and quotes) or a sweep function."""
    if value.strip().startswith(_SWEEP_FUNCTIONS):
        return True
    depth, quote = 0, None
    for ch in value:
        if quote:
            quote = None if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch in "[{(":
            depth += 1
        elif ch in "]})":
            depth -= 1
        elif ch == "," and depth == 0:
            return True
    return False


ORIGINAL: dict[str, str] = {}
"""Each merge as_merges wrote -> the override it was written from (for error messages)."""

_SETTING = re.compile(r"^(\+{0,2})([A-Za-z_][\w]*(?:\.[A-Za-z_][\w-]*)+)=(.+)$", re.S)


def _optional_schema(parts: list[str]) -> int | None:
    """The index of the part of a key that names an Optional[<dataclass>] setting (task.terrain,
    task.events.<name>.adaptive), None if the key reaches none."""
    node, i = TrainCfg, 0
    while i < len(parts) and dataclasses.is_dataclass(node):
        hint = typing.get_type_hints(node).get(parts[i])
        inner = _unwrap(hint)
        if inner is not hint and dataclasses.is_dataclass(inner):
            return i
        if typing.get_origin(inner) in (dict, typing.Dict):  # noqa: UP006 (the schemas use typing.Dict)
            inner, i = (typing.get_args(inner) or (None, None))[-1], i + 1  # past the entry's name
        node, i = inner, i + 1
    return None


def _into_optional(override: str) -> str | None:
    """A setting of an Optional[<dataclass>] setting, which is unset (None) unless the task sets it,
    written as a merge into its parent: `task.terrain.num_levels=2` -> `++task={terrain: {num_levels:
    2}}`. OmegaConf cannot merge into an unset one (an AttributeError, "Unexpected type for root:
    NoneType"); merged into the parent, the setting is built from its schema. None if not such a one."""
    match = _SETTING.match(override)
    if match is None or _is_sweep(match.group(3)):
        return None
    plus, parts, value = match.group(1), match.group(2).split("."), match.group(3)
    at = _optional_schema(parts)
    if not at or not all(_NAME.fullmatch(p) for p in parts[at:]) or (at == len(parts) - 1 and value == "null"):
        return None
    for part in reversed(parts[at:]):
        value = f"{{{part}:{value}}}"
    parent = ".".join(parts[:at])
    merge = f"{'++' if plus or parent == 'task' else ''}{parent}={value}"  # task= alone would choose a task
    ORIGINAL[merge] = override
    return merge


def as_merges(overrides: list[str]) -> list[str]:
    """`overrides` with each addition of a new dict entry written as a merge into the dict, and each
    setting of an unset Optional[<dataclass>] setting as a merge into its parent."""
    out = []
    for override in overrides:
        optional = _into_optional(override)
        if optional is not None:
            out.append(optional)
            continue
        match = _ADDITION.match(override)
        at = None
        if match and not _is_sweep(match.group(2)):
            parts = match.group(1).split(".")
            at = _schema_dict(parts)
        if at is None or not all(_NAME.fullmatch(p) for p in parts[at + 1 :]):
            out.append(override)
            continue
        value = match.group(2)
        for part in reversed(parts[at + 1 :]):
            value = f"{{{part}:{value}}}"
        merge = f"++{'.'.join(parts[: at + 1])}={value}"
        ORIGINAL[merge] = override
        out.append(merge)
    return out
