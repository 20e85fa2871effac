"""Term managers: each turns a dict of term configs into one batched computation.

Terms are plain functions `f(env, **params)` resolved by name once, at build time, from the task's
own terms and robolearn.mdp's generic ones. Managers own their output buffers.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch
from omegaconf import DictConfig, OmegaConf

from robolearn.config import EventMode, NoiseType
from robolearn.errors import UserError

if TYPE_CHECKING:
    from robolearn.envs.batched_env import BatchedEnv


def resolve_term(kind: str, term: str, func: str, namespace: Mapping[str, Callable]) -> Callable:
    if func not in namespace:
        raise UserError(f"{kind} term '{term}': unknown function '{func}'; valid: {', '.join(sorted(namespace))}")
    return namespace[func]


def plain(params: Any) -> dict[str, Any]:
    """YAML params as plain Python (lists stay lists) so term functions never see OmegaConf."""
    if isinstance(params, DictConfig):
        return OmegaConf.to_container(params, resolve=True)  # type: ignore[return-value]
    return dict(params)


def call_term(kind: str, name: str, func: Callable, *args: Any, **params: Any) -> Any:
    try:
        return func(*args, **params)
    except TypeError as exc:
        raise UserError(f"{kind} term '{name}' ({func.__name__}): {exc}") from None


@dataclass(frozen=True)
class ObsSlice:
    """Where one observation term sits in its group's vector (this goes to robot.yaml)."""

    name: str
    start: int
    stop: int
    scale: float
    units: str
    func: str


class ObservationManager:
    """Concatenates each group's terms (noise, scale, clip) into a preallocated [N, D] buffer."""

    def __init__(self, groups: Mapping[str, Any], namespace: Mapping[str, Callable], env: BatchedEnv):
        if "policy" not in groups:
            raise UserError("the task defines no 'policy' observation group")
        if "critic" not in groups:
            groups = {**groups, "critic": groups["policy"]}
        self._env = env
        self._terms: dict[str, list[tuple[ObsSlice, Callable, dict, Any, float | None]]] = {}
        self._noise: dict[str, bool] = {}
        self.layout: dict[str, list[ObsSlice]] = {}
        self.buffers: dict[str, torch.Tensor] = {}
        for group, gcfg in groups.items():
            start, terms = 0, []
            for name, tcfg in gcfg.terms.items():
                func = resolve_term("observation", name, tcfg.func, namespace)
                params = plain(tcfg.params)
                value = call_term("observation", name, func, env, **params)
                if value.dim() != 2 or value.shape[0] != env.num_envs:
                    raise UserError(f"observation term '{name}' must return [num_envs, k], got {tuple(value.shape)}")
                dim = value.shape[1]
                sl = ObsSlice(name, start, start + dim, float(tcfg.scale), tcfg.units, tcfg.func)
                terms.append((sl, func, params, tcfg.noise, tcfg.clip))
                start += dim
            if start == 0:
                raise UserError(f"observation group '{group}' has no terms")
            self._terms[group] = terms
            self._noise[group] = bool(gcfg.enable_noise)
            self.layout[group] = [t[0] for t in terms]
            self.buffers[group] = torch.zeros(env.num_envs, start, device=env.device)

    def compute(self) -> dict[str, torch.Tensor]:
        gen = self._env.generator
        for group, terms in self._terms.items():
            out = self.buffers[group]
            for sl, func, params, noise, clip in terms:
                value = func(self._env, **params)
                if self._noise[group] and noise.scale > 0:
                    if noise.type == NoiseType.uniform:
                        r = torch.rand(value.shape, generator=gen, device=value.device) * 2 - 1
                    else:
                        r = torch.randn(value.shape, generator=gen, device=value.device)
                    value = value + noise.scale * r
                value = value * sl.scale
                if clip is not None:
                    value = value.clamp(-clip, clip)
                out[:, sl.start : sl.stop] = value
        return self.buffers


class RewardManager:
    """reward = sum_i weight_i * term_i(env); keeps each term's running sum per episode."""

    def __init__(self, terms: Mapping[str, Any], namespace: Mapping[str, Callable], env: BatchedEnv):
        self._env = env
        self._terms = [
            (name, resolve_term("reward", name, t.func, namespace), float(t.weight), plain(t.params))
            for name, t in terms.items()
        ]
        self.names = [t[0] for t in self._terms]
        self.reward = torch.zeros(env.num_envs, device=env.device)
        self.episode_sums = torch.zeros(len(self._terms), env.num_envs, device=env.device)

    def compute(self) -> torch.Tensor:
        self.reward.zero_()
        for k, (name, func, weight, params) in enumerate(self._terms):
            value = weight * call_term("reward", name, func, self._env, **params)
            self.reward += value
            self.episode_sums[k] += value
        return self.reward


class TerminationManager:
    """terminated = any term fired. Time-outs are not terms: the env tracks them separately."""

    def __init__(self, terms: Mapping[str, Any], namespace: Mapping[str, Callable], env: BatchedEnv):
        self._env = env
        self._terms = [
            (name, resolve_term("termination", name, t.func, namespace), plain(t.params)) for name, t in terms.items()
        ]
        self.names = [t[0] for t in self._terms]
        self.fired = torch.zeros(len(self._terms), env.num_envs, dtype=torch.bool, device=env.device)
        self.terminated = torch.zeros(env.num_envs, dtype=torch.bool, device=env.device)

    def compute(self) -> torch.Tensor:
        self.terminated.zero_()
        for k, (name, func, params) in enumerate(self._terms):
            self.fired[k] = call_term("termination", name, func, self._env, **params)
            self.terminated |= self.fired[k]
        return self.terminated


class EventManager:
    """Runs events by mode: startup (all envs, once), reset (masked), interval (per-env timers)."""

    def __init__(self, terms: Mapping[str, Any], namespace: Mapping[str, Callable], env: BatchedEnv):
        self._env = env
        self._events: dict[EventMode, list[tuple[str, Callable, dict]]] = {mode: [] for mode in EventMode}
        ranges = []
        for name, t in terms.items():
            self._events[t.mode].append((name, resolve_term("event", name, t.func, namespace), plain(t.params)))
            if t.mode == EventMode.interval:
                low, high = (float(v) for v in t.interval_s)
                if not 0 < low <= high:
                    raise UserError(f"event '{name}': interval_s must be 0 < low <= high, got {list(t.interval_s)}")
                ranges.append((low, high))
        self._interval_range = torch.tensor(ranges, device=env.device).reshape(-1, 2)
        self.time_left = torch.zeros(len(ranges), env.num_envs, device=env.device)

    def apply(self, mode: EventMode, mask: torch.Tensor) -> None:
        for name, func, params in self._events[mode]:
            call_term("event", name, func, self._env, mask, **params)

    def _draw_intervals(self, mask: torch.Tensor) -> None:
        low, high = self._interval_range[:, :1], self._interval_range[:, 1:]
        u = torch.rand(self.time_left.shape, generator=self._env.generator, device=self.time_left.device)
        self.time_left = torch.where(mask, low + (high - low) * u, self.time_left)

    def start_intervals(self) -> None:
        self._draw_intervals(torch.ones_like(self.time_left, dtype=torch.bool))

    def step_interval(self, dt: float) -> None:
        if not self._events[EventMode.interval]:
            return
        self.time_left -= dt
        due = self.time_left <= 0
        for k, (name, func, params) in enumerate(self._events[EventMode.interval]):
            call_term("event", name, func, self._env, due[k], **params)
        self._draw_intervals(due)
