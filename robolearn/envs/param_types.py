"""A term's YAML params checked against the types its signature declares, when the term is built.

    def track_lin_vel_xy_exp(env, command: str, std: float) -> torch.Tensor: ...

`std: [1, 2]` in the task YAML is then one line naming the term, the param and what it takes,
instead of a TypeError deep inside the first step. Only the plain YAML types are checked (float,
int, bool, str, lists of them, unions with None), that a [low, high] pair (`range`, `*_range`,
`bounds`) is not reversed and that a reward's or metric's width (`std`, `*_std`) is positive; entity params (robolearn.scene.entities) are
checked when they resolve, and a param whose annotation is anything else, or a value the code
passes itself (a tensor: an adaptive range's per-environment values), is left alone.
"""

from __future__ import annotations

import inspect
import json
import math
import types
import typing
from collections.abc import Callable, Sequence

import torch

from robolearn.errors import UserError

_HINTS: dict[Callable, tuple[dict[str, typing.Any], dict[str, typing.Any]]] = {}


def _hints(func: Callable) -> tuple[dict[str, typing.Any], dict[str, typing.Any]]:
    """(annotations, defaults) of a term's params."""
    if func not in _HINTS:
        target = func.__init__ if inspect.isclass(func) else func
        try:
            hints = typing.get_type_hints(target)
            defaults = {k: p.default for k, p in inspect.signature(target).parameters.items()}
        except Exception:  # a plugin's annotations may name types we cannot evaluate
            hints, defaults = {}, {}
        _HINTS[func] = (hints, defaults)
    return _HINTS[func]


def _number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


# Lenient where Python is: a term annotated `int` that is given 0.5 works, so only values of
# another kind (text for a number, a list for a scalar, null) are refused.
_SCALARS: dict[type, tuple[Callable[[typing.Any], bool], str]] = {
    float: (_number, "a number"),
    int: (_number, "a number"),
    bool: (lambda v: isinstance(v, bool) or v in (0, 1), "true or false"),
    str: (lambda v: isinstance(v, str), "a string"),
}
_LISTS = (list, tuple, Sequence)
_PLURAL = {"a number": "numbers", "true or false": "true/false values", "a string": "strings"}


def expected(hint, value) -> str | None:
    """What `hint` takes, in words, when `value` is not that; None when it is (or when the hint is
    not one of the plain YAML types checked here)."""
    if hint in _SCALARS:
        ok, words = _SCALARS[hint]
        return None if ok(value) else words
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        options = [a for a in args if a is not type(None)]
        if value is None and len(options) < len(args):
            return None
        found = [expected(a, value) for a in options]
        if any(f is None for f in found):
            return None
        words = [f for f, a in zip(found, options) if a in _SCALARS or typing.get_origin(a) in _LISTS]
        if not words:
            return None  # a union of types not checked here
        return " or ".join(words) + (", or null" if len(options) < len(args) else "")
    if origin in _LISTS and args:
        fixed = origin is tuple and Ellipsis not in args  # tuple[float, float]: exactly that many
        if any(a not in _SCALARS for a in args if a is not Ellipsis) or (fixed and len(set(args)) > 1):
            return None
        item = args[0]
        words = f"a list of {f'{len(args)} ' if fixed else ''}{_PLURAL[_SCALARS[item][1]]}"
        if (not isinstance(value, (list, tuple)) or any(expected(item, v) is not None for v in value)
                or (fixed and len(value) != len(args))):  # fmt: skip
            return words
    return None


def check_param_types(kind: str, name: str, func: Callable, params: dict) -> None:
    """A UserError naming the term for the first param whose value is not of its declared type."""
    hints, defaults = _hints(func)
    for param, value in params.items():
        hint = hints.get(param)
        if hint is None or isinstance(value, torch.Tensor) or (value is None and defaults.get(param) is None):
            continue  # not checked here, set by the code, or null where null is the default
        words = expected(hint, value) or _reversed(param, value) or (_width(param, value) if kind in ("reward", "metric") else None)
        if words is not None:
            raise UserError(f"{kind} term '{name}' ({getattr(func, '__name__', func)}): {param}={yaml_text(value)} is not "
                            f"valid; valid: {words}")  # fmt: skip


def _reversed(param: str, value) -> str | None:
    """A [low, high] pair (a param named `range`, `*_range` or `bounds`, by the terms' convention)
    whose low is above its high; checked for every event, also one its preset does not run."""
    if not (param == "bounds" or param == "range" or param.endswith("_range")):
        return None
    if isinstance(value, (list, tuple)) and len(value) == 2 and all(_number(v) for v in value) and value[0] > value[1]:
        return "[low, high] with low <= high"
    return None


def _width(param: str, value) -> str | None:
    """A reward's or metric's kernel width (a param named `std` or `*_std`: exp(-error^2 / std^2), tanh(error
    / std)) that is not positive: 0 divides by zero, and a negative one reads as its square. (An
    event's or a noise's `std` of 0 may mean none: not checked.)"""
    if (param == "std" or param.endswith("_std")) and _number(value) and value <= 0:
        return "a number > 0 (a width: the error at which the reward has fallen to exp(-1))"
    return None


def yaml_text(value) -> str:
    """A value as the task YAML writes it (null, [1, 2], 'text')."""
    try:
        return json.dumps(value).replace('"', "'")
    except (TypeError, ValueError):
        return repr(value)
