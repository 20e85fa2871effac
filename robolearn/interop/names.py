"""Joint-name patterns as Isaac Lab and mjlab resolve them.

Their configs select joints by regular expressions (`".*_hip_joint"`) and give per-joint values as
{pattern: value} dictionaries. A pattern matches a whole name (re.fullmatch); a name matched by
two patterns, or a pattern that matches nothing, is an error there and here. The result follows
the robot's joint order, or the patterns' order with preserve_order (each pattern's matches in
joint order).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from robolearn.errors import UserError


def _patterns(keys) -> list[str]:
    return [keys] if isinstance(keys, str) else [str(k) for k in keys]


def match_names(keys, names: Sequence[str], preserve_order: bool = False, what: str = "joint") -> list[str]:
    """The names in `names` that the pattern(s) `keys` select, in joint (or pattern) order."""
    patterns = _patterns(keys)
    owner: dict[str, str] = {}
    for pattern in patterns:
        try:
            found = [n for n in names if re.fullmatch(pattern, n)]
        except re.error as exc:
            raise UserError(f"{what} pattern {pattern!r} in the run's config is not a regular expression ({exc})") from None
        if not found:
            raise UserError(f"{what} pattern {pattern!r} in the run's config matches none of the robot's {what}s "
                            f"({', '.join(names)}); check robot= / joint_order=")  # fmt: skip
        for n in found:
            if n in owner and owner[n] != pattern:
                raise UserError(f"{what} {n!r} is matched by two patterns of the run's config ({owner[n]!r}, {pattern!r})")
            owner[n] = pattern
    if preserve_order:
        return [n for p in patterns for n in names if owner.get(n) == p]
    return [n for n in names if n in owner]


def _fullmatch(pattern: str, name: str) -> bool:
    try:
        return re.fullmatch(pattern, name) is not None
    except re.error as exc:
        raise UserError(f"joint pattern {pattern!r} in the run's config is not a regular expression ({exc})") from None


def per_name(value, names: Sequence[str], what: str, default: float | None = None, strict: bool = True) -> dict[str, float]:
    """A scalar, or a {pattern: value} dictionary, resolved to one float per name. A name no
    pattern covers takes `default`, or is an error if there is none. strict=False: `names` is a
    part of the robot's joints, so a pattern may match none of them."""
    if value is None and default is not None:
        return {n: float(default) for n in names}
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return {n: float(value) for n in names}
    if not isinstance(value, dict):
        raise UserError(f"{what} in the run's config is {value!r}; expected a number or {{joint pattern: number}}")
    out: dict[str, float] = {}
    for pattern, v in value.items():
        matched = match_names(pattern, names, what="joint") if strict else [n for n in names if _fullmatch(pattern, n)]
        for n in matched:
            if n in out:
                raise UserError(f"joint {n!r} gets two values for {what} in the run's config")
            try:
                out[n] = float(v)
            except (TypeError, ValueError):
                raise UserError(f"{what} for {pattern!r} in the run's config is {v!r}, not a number") from None
    missing = [n for n in names if n not in out]
    if missing and default is None:
        raise UserError(f"the run's config gives no {what} for joint {missing[0]!r}")
    return {n: out.get(n, default) for n in names}
