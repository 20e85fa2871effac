"""Commands: targets the policy must follow (a base velocity, ...), one per env, resampled on
reset and after a random per-env period; a fraction of them are all-zero (stand still)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch

from robolearn import draws
from robolearn.envs.manager_base import ManagerBase, plain
from robolearn.envs.param_types import yaml_text
from robolearn.errors import UserError


def _pair(value) -> tuple[float, float]:
    """Two numbers, or (nan, nan) for anything else (which every check then refuses)."""
    try:
        low, high = (float(v) for v in value)
    except (TypeError, ValueError):
        return float("nan"), float("nan")
    return low, high


def _range(command: str, component: str, value) -> list[float]:
    """[low, high] of one component, as floats; anything else is one line."""
    low, high = _pair(value)
    if not low <= high:  # also nan
        raise UserError(f"command '{command}': range of {component} must be [low, high], got {yaml_text(value)}")
    return [low, high]


class CommandManager(ManagerBase):
    """Holds each command's current value per env ([N, k], overwritten in place), its [low, high]
    per component and each env's time to the next draw; commands have no terms."""

    KIND = "command"
    STATE = ("values", "time_left", "ranges")

    def __init__(self, cfgs: Mapping[str, Any], env):
        super().__init__(env)
        self.command_names = list(cfgs)
        self.components: dict[str, list[str]] = {}
        self.ranges: dict[str, torch.Tensor] = {}
        """[k, 2] low/high per component; a curriculum may widen or narrow them in place."""
        self.values: dict[str, torch.Tensor] = {}
        self._period: dict[str, tuple[float, float]] = {}
        self._standing: dict[str, float] = {}
        self._held: dict[str, float] = {}  # held commands' standing probability, for release
        self.time_left = torch.zeros(len(cfgs), env.num_envs, device=env.device)
        for name, cfg in cfgs.items():
            spec = plain(cfg)
            ranges = {k: _range(name, k, v) for k, v in spec["ranges"].items()}
            low, high = _pair(spec["resampling_time_s"])
            if not 0 < low <= high:
                raise UserError(f"command '{name}': resampling_time_s must be 0 < low <= high [s], got "
                                f"{yaml_text(spec['resampling_time_s'])}")  # fmt: skip
            self.components[name] = list(ranges)
            self.ranges[name] = torch.tensor(list(ranges.values()), device=env.device)
            self.values[name] = torch.zeros(env.num_envs, len(ranges), device=env.device)
            self._period[name] = (low, high)
            self._standing[name] = float(spec.get("standing_probability", 0.0))

    @property
    def names(self) -> list[str]:
        return self.command_names

    def get(self, name: str) -> torch.Tensor:
        if name not in self.values:
            raise UserError(f"no command named '{name}'; the task defines: {', '.join(self.names) or 'none'}")
        return self.values[name]

    def reset(self, mask: torch.Tensor) -> None:
        """New commands (and new periods) for the masked envs: at their reset."""
        for k in range(len(self.names)):
            self._draw(k, mask)

    def _draw(self, k: int, mask: torch.Tensor) -> None:
        env, name = self._env, self.names[k]
        low, high = self.ranges[name][:, 0], self.ranges[name][:, 1]
        drawn = torch.lerp(low, high, draws.uniform(env, self.values[name].shape))
        if self._standing[name] > 0:
            moving = draws.uniform(env, (env.num_envs, 1)) >= self._standing[name]
            drawn = drawn * moving
        torch.where(mask.unsqueeze(1), drawn, self.values[name], out=self.values[name])
        p_low, p_high = self._period[name]
        period = draws.uniform(env, (env.num_envs,), p_low, p_high)
        torch.where(mask, period, self.time_left[k], out=self.time_left[k])

    def hold(self, name: str, value: torch.Tensor, now: bool = False) -> None:
        """From the next draw on (`now`: from this step on), command `name` is `value` [k] in every
        env (a scripted command: the range is pinned and never standing), at resets and on the
        resampling timers alike. `release` gives it back to sampling."""
        value = value.to(self.ranges[name])
        self._held.setdefault(name, self._standing[name])
        self.ranges[name][:] = value.unsqueeze(1)
        self._standing[name] = 0.0
        if now:
            self.values[name][:] = value

    def release(self, name: str, ranges: torch.Tensor) -> None:
        """Sample command `name` again, within `ranges` [k, 2], from its next draw on."""
        self.ranges[name][:] = ranges.to(self.ranges[name])
        self._standing[name] = self._held.pop(name, self._standing[name])

    def step(self, dt: float) -> None:
        if not self.names:
            return
        self.time_left -= dt
        due = self.time_left <= 0
        for k in range(len(self.names)):
            self._draw(k, due[k])

