"""A scripted command for `robolearn play`: one value for the whole clip, or a schedule.

    command=[0.8,0,0]                              0.8 m/s forward, from start to end
    command=[[0,0,0,0],[2,0.8,0,0],[6,0,0,1.0]]    stand 2 s, walk until 6 s, then turn

A schedule's rows are [from_s, value...]: each value holds from its time until the next row's
(the first row's from the start); times rise strictly.
"""

from __future__ import annotations

import bisect
import math
from dataclasses import dataclass

from robolearn.errors import UserError

EXAMPLE = "e.g. command=[0.8,0,0] or command=[[0,0,0,0],[2,0.8,0,0]] (rows: [from_s, values...])"


@dataclass(frozen=True)
class CommandScript:
    starts: tuple[float, ...]
    values: tuple[tuple[float, ...], ...]

    @classmethod
    def parse(cls, text: str) -> CommandScript:
        import yaml

        try:
            raw = yaml.safe_load(text)
        except yaml.YAMLError:
            raw = None
        if not isinstance(raw, list) or not raw:
            raise UserError(f"command={text} is not a list of finite numbers or a schedule; {EXAMPLE}")
        try:
            if not any(isinstance(v, list) for v in raw):
                return cls((0.0,), (_check_size(text, tuple(_number(v) for v in raw)),))
            rows = [[_number(v) for v in row] for row in raw]
        except (TypeError, ValueError):
            raise UserError(f"command={text} is not a list of finite numbers or a schedule; {EXAMPLE}") from None
        if any(len(row) != len(rows[0]) or len(row) < 2 for row in rows):
            raise UserError(f"command={text}: every schedule row is [from_s, values...] of one length; {EXAMPLE}")
        for row in rows:
            _check_size(text, row[1:])
        starts = [row[0] for row in rows]
        if starts[0] < 0 or any(b <= a for a, b in zip(starts, starts[1:])):
            raise UserError(f"command={text}: a schedule's times must be >= 0 and rise strictly; {EXAMPLE}")
        return cls(tuple(starts), tuple(tuple(row[1:]) for row in rows))

    @property
    def width(self) -> int:
        return len(self.values[0])

    def at(self, t: float) -> tuple[float, ...]:
        """The value that holds at time t (s from the start of the clip)."""
        return self.values[max(0, bisect.bisect_right(self.starts, t) - 1)]

    def apply(self, env, t: float) -> None:
        """Set env's first command to the value at time t in every env, where it changes (a
        constant is held from the start: play_run pins it before the first reset)."""
        import torch

        if len(self.starts) == 1:
            return
        name = env.commands.names[0]
        value = torch.tensor(self.at(t))
        if not torch.equal(env.commands.get(name)[0], value):
            env.commands.hold(name, value, now=True)

    def check_width(self, width: int, name: str) -> None:
        if self.width != width:
            raise UserError(f"command: '{name}' has {width} values, the command given has {self.width}")


def _number(value) -> float:
    """A finite number; YAML 1.1 leaves `1e-1` (no dot) a string, which float() reads."""
    if isinstance(value, str):
        value = float(value)  # ValueError for a word
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(value)
    if not math.isfinite(value):  # a NaN target turns the policy's output into NaN; a NaN time is never reached
        raise ValueError(value)
    return float(value)


MAX_COMMAND = 1e6
"""The largest command value play takes: past it the observations' float32 arithmetic overflows, and
no task's command (a speed, a position, an angle) comes near it."""


def _check_size(text: str, values: tuple[float, ...]) -> tuple[float, ...]:
    big = next((v for v in values if abs(v) > MAX_COMMAND), None)
    if big is not None:
        raise UserError(f"command={text}: {big:g} is far past any command a policy was trained on; valid: values "
                        f"of magnitude at most {MAX_COMMAND:g} (the task's command ranges are in its YAML)")  # fmt: skip
    return values
