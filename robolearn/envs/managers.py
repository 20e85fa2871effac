"""Term managers: each turns a dict of term configs into one batched computation.

Terms are plain functions `f(env, **params)` resolved by name once, at build time, from the task's
own terms and robolearn.mdp's generic ones. Managers own their output buffers.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
import inspect
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch
from omegaconf import DictConfig, OmegaConf

from robolearn.config import EventMode, NoiseType, RandomizationCfg, RandomizationLevel
from robolearn.envs.adaptive import AdaptiveRange
from robolearn.errors import UserError
from robolearn.mdp.state import root_pos_w

if TYPE_CHECKING:
    from robolearn.envs.batched_env import BatchedEnv

LEVELS = list(RandomizationLevel)


def resolve_term(kind: str, term: str, func: str, namespace: Mapping[str, Callable]) -> Callable:
    if func not in namespace:
        raise UserError(f"{kind} term '{term}': unknown function '{func}'; valid: {', '.join(sorted(namespace))}")
    return namespace[func]


def plain(params: Any) -> dict[str, Any]:
    """YAML params as plain Python (lists stay lists) so term functions never see OmegaConf."""
    if isinstance(params, DictConfig):
        return OmegaConf.to_container(params, resolve=True)  # type: ignore[return-value]
    return dict(params)


def check_params(kind: str, name: str, func: Callable, /, *args: Any, **params: Any) -> None:
    """Wrong or missing YAML params are a UserError at build time; the step then calls terms directly."""
    try:
        inspect.signature(func).bind(*args, **params)
    except TypeError as exc:
        raise UserError(f"{kind} term '{name}' ({func.__name__}): {exc}") from None


def build_term(kind: str, name: str, func: Callable, params: dict, env: BatchedEnv, /) -> tuple[Callable, dict]:
    """(callable, params) for a term. A term that keeps state across steps (per-foot timers, ...)
    is a class: it is built here once with its params, then called as term(env); its optional
    `reset(mask)` runs when environments reset."""
    check_params(kind, name, func, env, **params)
    if inspect.isclass(func):
        return func(env, **params), {}
    return func, params


def reset_terms(terms, mask: torch.Tensor) -> None:
    for term in terms:
        if hasattr(term, "reset"):
            term.reset(mask)


def term_state(named_terms) -> dict[str, dict]:
    """What stateful terms keep (per-foot timers, ...), by term name: their own state_dict() if
    they have one, else their tensor attributes. Checkpoints hold it so a resumed run continues
    exactly."""
    return {
        name: term.state_dict() if hasattr(term, "state_dict")
        else {k: v.clone() for k, v in vars(term).items() if isinstance(v, torch.Tensor)}
        for name, term in named_terms
        if not inspect.isfunction(term)
    }  # fmt: skip


def load_term_state(named_terms, state: Mapping[str, Mapping]) -> None:
    for name, term in named_terms:
        if name not in state:
            continue
        if hasattr(term, "load_state_dict"):
            term.load_state_dict(state[name])
            continue
        for key, value in state[name].items():
            getattr(term, key).copy_(value)


@dataclass(frozen=True)
class ObsSlice:
    """Where one observation term sits in its group's vector (this goes to robot.yaml)."""

    name: str
    start: int
    stop: int
    scale: float
    clip: float | None
    units: str
    func: str
    params: dict


class ObservationManager:
    """Concatenates each group's terms into a preallocated [N, D] buffer, then adds noise, scales
    and clips the whole group at once (per-column vectors), so the cost per term is one call."""

    def __init__(self, groups: Mapping[str, Any], namespace: Mapping[str, Callable], env: BatchedEnv,
                 noise: bool = True):  # fmt: skip
        if "policy" not in groups:
            raise UserError("the task defines no 'policy' observation group")
        if "critic" not in groups:  # the critic sees the policy's terms, without noise
            groups = {**groups, "critic": {"terms": groups["policy"].terms, "enable_noise": False}}
        self._env = env
        self._terms: dict[str, list[tuple[ObsSlice, Callable, dict]]] = {}
        self._post: dict[str, dict[str, torch.Tensor | None]] = {}
        self.layout: dict[str, list[ObsSlice]] = {}
        self.buffers: dict[str, torch.Tensor] = {}
        for group, gcfg in groups.items():
            start, terms, columns = 0, [], []
            for name, tcfg in gcfg["terms"].items():
                func, params = build_term("observation", name, resolve_term("observation", name, tcfg.func, namespace),
                                          plain(tcfg.params), env)  # fmt: skip
                value = func(env, **params)
                if value.dim() != 2 or value.shape[0] != env.num_envs:
                    raise UserError(f"observation term '{name}' must return [num_envs, k], got {tuple(value.shape)}")
                dim = value.shape[1]
                sl = ObsSlice(name, start, start + dim, float(tcfg.scale), tcfg.clip, tcfg.units, tcfg.func, plain(tcfg.params))
                terms.append((sl, func, params))
                clip = float("inf") if tcfg.clip is None else float(tcfg.clip)
                noisy = noise and bool(gcfg["enable_noise"])
                uniform = noisy and tcfg.noise.type == NoiseType.uniform
                columns += [(tcfg.noise.scale * uniform, tcfg.noise.scale * (noisy and not uniform), sl.scale, clip)] * dim
                start += dim
            if start == 0:
                raise UserError(f"observation group '{group}' has no terms")
            self._terms[group] = terms
            self.layout[group] = [t[0] for t in terms]
            self.buffers[group] = torch.zeros(env.num_envs, start, device=env.device)
            uniform, gaussian, scale, clip = torch.tensor(columns, device=env.device).T
            self._post[group] = {
                "uniform": uniform if uniform.any() else None,
                "gaussian": gaussian if gaussian.any() else None,
                "scale": scale if (scale != 1).any() else None,
                "clip": clip if torch.isfinite(clip).any() else None,
            }

    def reset(self, mask: torch.Tensor) -> None:
        reset_terms([func for terms in self._terms.values() for _, func, _ in terms], mask)

    def named_terms(self) -> list[tuple[str, Callable]]:
        return [(f"{group}/{sl.name}", func) for group, terms in self._terms.items() for sl, func, _ in terms]

    def functions(self, group: str) -> list[tuple[ObsSlice, Callable]]:
        """Each term's slice and the function computing it (export describes terms from these)."""
        return [(sl, func) for sl, func, _ in self._terms[group]]

    def compute(self) -> dict[str, torch.Tensor]:
        gen = self._env.generator
        for group, terms in self._terms.items():
            out = self.buffers[group]
            for sl, func, params in terms:
                out[:, sl.start : sl.stop] = func(self._env, **params)
            post = self._post[group]
            if post["uniform"] is not None:
                out.addcmul_(torch.rand(out.shape, generator=gen, device=out.device).mul_(2).sub_(1), post["uniform"])
            if post["gaussian"] is not None:
                out.addcmul_(torch.randn(out.shape, generator=gen, device=out.device), post["gaussian"])
            if post["scale"] is not None:
                out.mul_(post["scale"])
            if post["clip"] is not None:
                torch.clamp(out, -post["clip"], post["clip"], out=out)
        return self.buffers


class RewardManager:
    """reward = sum_i weight_i * term_i(env); keeps each term's running sum per episode."""

    def __init__(self, terms: Mapping[str, Any], namespace: Mapping[str, Callable], env: BatchedEnv):
        self._env = env
        self._terms = [
            (name, *build_term("reward", name, resolve_term("reward", name, t.func, namespace), plain(t.params), env))
            for name, t in terms.items()
        ]
        self.names = [t[0] for t in self._terms]
        self.weights = torch.tensor([float(t.weight) for t in terms.values()], device=env.device)
        self.values = torch.zeros(len(self._terms), env.num_envs, device=env.device)
        """Unweighted term values of the last step, [K, N]."""
        self.reward = torch.zeros(env.num_envs, device=env.device)
        self.episode_sums = torch.zeros(len(self._terms), env.num_envs, device=env.device)
        """Weighted term sums of the running episodes, [K, N]."""

    def reset(self, mask: torch.Tensor) -> None:
        reset_terms([t[1] for t in self._terms], mask)

    def named_terms(self) -> list[tuple[str, Callable]]:
        return [(name, func) for name, func, _ in self._terms]

    def compute(self) -> torch.Tensor:
        for k, (name, func, params) in enumerate(self._terms):
            self.values[k] = func(self._env, **params)
        torch.mv(self.values.T, self.weights, out=self.reward)
        self.episode_sums.addcmul_(self.values, self.weights.unsqueeze(1))
        return self.reward


class TerminationManager:
    """terminated = any term fired. Time-outs are not terms: the env tracks them separately."""

    def __init__(self, terms: Mapping[str, Any], namespace: Mapping[str, Callable], env: BatchedEnv):
        self._env = env
        self._terms = [
            (name, *build_term("termination", name, resolve_term("termination", name, t.func, namespace), plain(t.params), env))
            for name, t in terms.items()
        ]
        self.names = [t[0] for t in self._terms]
        self.fired = torch.zeros(len(self._terms), env.num_envs, dtype=torch.bool, device=env.device)
        self.terminated = torch.zeros(env.num_envs, dtype=torch.bool, device=env.device)

    def reset(self, mask: torch.Tensor) -> None:
        reset_terms([t[1] for t in self._terms], mask)

    def named_terms(self) -> list[tuple[str, Callable]]:
        return [(name, func) for name, func, _ in self._terms]

    def compute(self) -> torch.Tensor:
        for k, (name, func, params) in enumerate(self._terms):
            self.fired[k] = func(self._env, **params)
        torch.any(self.fired, dim=0, out=self.terminated)
        return self.terminated


class EventManager:
    """Runs events by mode: startup (all envs, once), reset (masked), interval (per-env timers).

    The randomization preset decides which events exist (their `level`) and whether ranges marked
    `adaptive` adapt (adaptive.py); an event that keeps state is a class, built once with the
    widest range it can be given, then called as term(env, mask, **params)."""

    def __init__(self, terms: Mapping[str, Any], namespace: Mapping[str, Callable], env: BatchedEnv,
                 preset: RandomizationCfg):  # fmt: skip
        self._env = env
        self._events: dict[EventMode, list[tuple[str, Callable, dict]]] = {mode: [] for mode in EventMode}
        self.adaptive: dict[str, AdaptiveRange] = {}
        self._stateful: list[tuple[str, Callable]] = []
        ranges = []
        allowed = LEVELS.index(preset.level)
        for name, t in terms.items():
            func, params = resolve_term("event", name, t.func, namespace), plain(t.params)  # a typo fails in any preset
            if LEVELS.index(t.level) > allowed:
                continue
            build_params = params
            if t.adaptive is not None and preset.adaptive:
                if t.mode == EventMode.startup:
                    raise UserError(f"event '{name}': an adaptive range needs mode reset or interval "
                                    "(a startup value is drawn once and could never adapt)")  # fmt: skip
                adr = AdaptiveRange(name, t.adaptive, params, env)
                self.adaptive[name] = adr
                params = {**params, adr.param: adr.per_env}
                build_params = {**params, adr.param: list(adr.limits)}
            if inspect.isclass(func):
                check_params("event", name, func, env, **build_params)
                func = func(env, **build_params)
                self._stateful.append((name, func))
            else:
                check_params("event", name, func, env, None, **params)
            self._events[t.mode].append((name, func, params))
            if t.mode == EventMode.interval:
                low, high = (float(v) for v in t.interval_s)
                if not 0 < low <= high:
                    raise UserError(f"event '{name}': interval_s must be 0 < low <= high, got {list(t.interval_s)}")
                ranges.append((low, high))
        self._interval_range = torch.tensor(ranges, device=env.device).reshape(-1, 2)
        self.time_left = torch.zeros(len(ranges), env.num_envs, device=env.device)

    def named_terms(self) -> list[tuple[str, Callable]]:
        return list(self._stateful)

    def reset(self, mask: torch.Tensor) -> None:
        reset_terms([term for _, term in self._stateful], mask)

    def apply(self, mode: EventMode, mask: torch.Tensor) -> None:
        for name, func, params in self._events[mode]:
            func(self._env, mask, **params)

    def _draw_intervals(self, mask: torch.Tensor) -> None:
        low, high = self._interval_range[:, :1], self._interval_range[:, 1:]
        u = torch.rand(self.time_left.shape, generator=self._env.generator, device=self.time_left.device)
        torch.where(mask, low + (high - low) * u, self.time_left, out=self.time_left)

    def start_intervals(self) -> None:
        self._draw_intervals(torch.ones_like(self.time_left, dtype=torch.bool))

    def step_interval(self, dt: float) -> None:
        if not self._events[EventMode.interval]:
            return
        self.time_left -= dt
        due = self.time_left <= 0
        for k, (name, func, params) in enumerate(self._events[EventMode.interval]):
            func(self._env, due[k], **params)
        self._draw_intervals(due)

    # --- adaptive ranges ------------------------------------------------------------------------
    def record_episodes(self, done: torch.Tensor) -> None:
        for adr in self.adaptive.values():
            adr.record(self._env, done)

    def update_adaptive(self) -> dict[str, float]:
        """Move the adaptive ranges (once per iteration) and return their new values to log."""
        logged: dict[str, float] = {}
        for adr in self.adaptive.values():
            adr.update()
            logged.update(adr.log())
        return logged


class MetricManager:
    """Task metrics for evaluation (not rewarded). Off during training; when `enabled`, each step
    leaves every metric's value in `values` [K, N] and the base's planar travel in `distance` [N],
    computed after the physics and before resets, like rewards."""

    def __init__(self, terms: Mapping[str, Any], namespace: Mapping[str, Callable], env: BatchedEnv):
        self._env = env
        self._terms = [
            (name, *build_term("metric", name, resolve_term("metric", name, t.func, namespace), plain(t.params), env))
            for name, t in terms.items()
        ]
        bad = [(name, t.per) for name, t in terms.items() if t.per not in ("step", "meter")]
        if bad:
            raise UserError(f"metric '{bad[0][0]}': per must be 'step' or 'meter', got '{bad[0][1]}'")
        self.names = [t[0] for t in self._terms]
        self.per_meter = torch.tensor([t.per == "meter" for t in terms.values()], dtype=torch.bool)
        self._tracks_distance = bool(self.per_meter.any())
        self.enabled = False
        self.values = torch.zeros(len(self._terms), env.num_envs, device=env.device)
        self.distance = torch.zeros(env.num_envs, device=env.device)
        self._root_before = torch.zeros(env.num_envs, 2, device=env.device)

    def before_physics(self) -> None:
        if self.enabled and self._tracks_distance:
            self._root_before.copy_(root_pos_w(self._env)[:, :2])

    def after_physics(self) -> None:
        if not self.enabled:
            return
        for k, (name, func, params) in enumerate(self._terms):
            self.values[k] = func(self._env, **params)
        if self._tracks_distance:
            torch.linalg.vector_norm(root_pos_w(self._env)[:, :2] - self._root_before, dim=1, out=self.distance)

    def named_terms(self) -> list[tuple[str, Callable]]:
        return [(name, func) for name, func, _ in self._terms]

    def reset(self, mask: torch.Tensor) -> None:
        reset_terms([t[1] for t in self._terms], mask)


class CurriculumManager:
    """Curriculum terms (robolearn.mdp.curriculum), run where episodes end, before reset events."""

    def __init__(self, terms: Mapping[str, Any], namespace: Mapping[str, Callable], env: BatchedEnv):
        self._env = env
        self._terms = []
        for name, t in terms.items():
            func, params = resolve_term("curriculum", name, t.func, namespace), plain(t.params)
            if not inspect.isclass(func):
                check_params("curriculum", name, func, env, None, **params)
                self._terms.append((name, func, params))
                continue
            self._terms.append((name, *build_term("curriculum", name, func, params, env)))

    def apply(self, mask: torch.Tensor) -> None:
        for name, func, params in self._terms:
            func(self._env, mask, **params)

    def log(self) -> dict[str, float]:
        logged: dict[str, float] = {}
        for name, func, _ in self._terms:
            if hasattr(func, "log"):
                logged.update(func.log(self._env))
        return logged

    def named_terms(self) -> list[tuple[str, Callable]]:
        return [(name, func) for name, func, _ in self._terms]

    def reset(self, mask: torch.Tensor) -> None:
        reset_terms([func for _, func, _ in self._terms], mask)
