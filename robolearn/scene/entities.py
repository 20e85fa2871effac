"""Model entities a term names in its params, resolved to indices once, when the term is built.

A term declares such a param by annotating it with one of the types below:

    def joint_pos(env, joints: Joints | None = None, relative: bool = False) -> torch.Tensor:
        return env.physics.qpos[:, env.scene.joints(joints).qpos]

The task YAML gives names (`joints: [hip, knee]`, or nothing: every hinge/slide joint). The term's
manager resolves them once, at build, through `env.scene`; a wrong name fails there, in one line
naming the term. The term then receives ready indices: a slice where the entities are
consecutive (indexing is a view, not a gather), else an index tensor on the env's device.
`env.scene.joints(value)` returns an already resolved value unchanged and resolves names (cached)
otherwise, so a term also works when another term or a test calls it with plain names.
"""

from __future__ import annotations

import inspect
import types
import typing
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from robolearn.errors import UserError

Index = slice | torch.Tensor


@dataclass(frozen=True)
class Joints:
    """Hinge/slide joints: their qpos and dof addresses, in the order named."""

    names: tuple[str, ...]
    qpos: Index
    dof: Index

    @staticmethod
    def resolve(env, value, params: dict) -> Joints:
        return env.scene.joints(value)


@dataclass(frozen=True)
class Sensors:
    """MJCF sensors: their columns of sensordata, in the order named."""

    names: tuple[str, ...]
    columns: Index

    @staticmethod
    def resolve(env, value, params: dict) -> Sensors:
        return env.scene.sensors(value)


@dataclass(frozen=True)
class Actuators:
    """Actuators: their ids (rows of the actuator_* model fields), in the order named."""

    names: tuple[str, ...]
    ids: Index

    @staticmethod
    def resolve(env, value, params: dict) -> Actuators:
        return env.scene.actuators(value)


@dataclass(frozen=True)
class FieldRows:
    """Rows of a randomizable model field (robolearn.physics.base.RANDOMIZABLE_FIELDS) belonging to
    the named entities; the field is the term's `field` param."""

    field: str
    names: tuple[str, ...] | None
    rows: Index

    @staticmethod
    def resolve(env, value, params: dict) -> FieldRows:
        return env.scene.field_rows(params["field"], value)


@dataclass(frozen=True)
class Root:
    """The floating base (the robot's free joint, scene/floating_base.py): slices of qpos and qvel."""

    qpos_adr: int
    dof_adr: int

    @property
    def pos(self) -> slice:
        return slice(self.qpos_adr, self.qpos_adr + 3)

    @property
    def quat(self) -> slice:
        return slice(self.qpos_adr + 3, self.qpos_adr + 7)

    @property
    def lin_vel(self) -> slice:
        return slice(self.dof_adr, self.dof_adr + 3)

    @property
    def ang_vel(self) -> slice:
        return slice(self.dof_adr + 3, self.dof_adr + 6)


ENTITY_TYPES = (Joints, Sensors, Actuators, FieldRows)


def entity_names(value) -> tuple[str, ...] | None:
    """Names as a term's YAML gives them, as a tuple: a list of names, or one name on its own;
    None stays None (all of them). Anything else is a UserError."""
    if value is None:
        return None
    if isinstance(value, str):
        return (value,)
    if not isinstance(value, (list, tuple)) or not all(isinstance(n, str) for n in value):
        raise UserError(f"expected a list of names (or null for all), got {list(value) if isinstance(value, (list, tuple)) else value!r}")
    return tuple(value)


def _entity_type(hint: Any) -> type | None:
    if hint in ENTITY_TYPES:
        return hint
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        found = [a for a in typing.get_args(hint) if a in ENTITY_TYPES]
        return found[0] if found else None
    return None


_SIGNATURES: dict[Callable, dict[str, tuple[type, Any]]] = {}


def entity_params(func: Callable) -> dict[str, tuple[type, Any]]:
    """{param: (entity type, default)} for the params of a term (a function, or a class's
    __init__) annotated with an entity type. A term whose annotations cannot be evaluated
    declares none (its params are passed as given)."""
    if func not in _SIGNATURES:
        target = func.__init__ if inspect.isclass(func) else func
        try:
            hints = typing.get_type_hints(target)
            parameters = inspect.signature(target).parameters
        except Exception:  # a plugin's annotations may name types we cannot evaluate
            hints, parameters = {}, {}
        _SIGNATURES[func] = {
            name: (kind, parameters[name].default)
            for name, hint in hints.items()
            if name in parameters and (kind := _entity_type(hint)) is not None
        }
    return _SIGNATURES[func]


def resolve_entities(func: Callable, params: dict, env) -> dict:
    """`params` with every entity param resolved (a param left out resolves its default, e.g.
    None = every joint). Raises UserError for a name the model does not have."""
    declared = entity_params(func)
    if not declared:
        return params
    resolved = dict(params)
    for name, (kind, default) in declared.items():
        value = params.get(name, default)
        if value is inspect.Parameter.empty:
            continue  # a required param left out: check_params reports it
        if not isinstance(value, ENTITY_TYPES):  # names from the YAML (a resolved value passes as it is)
            try:
                value = entity_names(value)
            except UserError as exc:
                raise UserError(f"{name}: {exc}") from None
            if value == ():  # a term over nothing: an observation of no values, a reward of 0
                every = ", or null for every one" if default is None else ""
                raise UserError(f"{name}: [] names none; valid: a list of one or more names{every}")
        resolved[name] = kind.resolve(env, value, params)
    return resolved
