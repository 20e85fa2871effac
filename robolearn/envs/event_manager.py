"""Events by mode: startup (all envs, once), reset (the envs that reset), interval (per-env timers).

The randomization preset decides which events exist (their `level`) and whether ranges marked
`adaptive` adapt (robolearn/adaptive.py). An event that keeps state is a class, built once with
the widest range it can be given, then called as term(env, mask, **params).

Interval timers are drawn again whenever an environment resets, so an interval event (a push)
never lands on the first step of an episode: the first one comes a full drawn interval after
the reset.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from typing import Any

import torch

from robolearn import draws
from robolearn.adaptive import AdaptiveRange, check_adaptive_range
from robolearn.config import RandomizationCfg
from robolearn.config_task import EventMode, RandomizationLevel
from robolearn.envs.manager_base import ManagerBase, Term, check_params, plain, resolve_term, resolved
from robolearn.errors import UserError
from robolearn.physics.base import INERTIAL_FIELDS
from robolearn.scene.floating_base import floating_base_joint

LEVELS = list(RandomizationLevel)


def _check_values(name: str, t, func: Callable, env, params: dict) -> None:
    """A term's own check of its values against the model (`func.check_values(env, **params)`, e.g.
    randomize_model_field's: no negative mass), with the range an adaptive range widens to."""
    check = getattr(func, "check_values", None)
    if check is None:
        return
    widest = params if t.adaptive is None else {**params, t.adaptive.param: list(t.adaptive.limits)}
    try:
        check(env, **widest)
    except UserError as exc:
        raise UserError(f"event '{name}' ({t.func}): {exc}") from None


class EventManager(ManagerBase):
    KIND = "event"
    STATE = ("time_left",)
    CALL_ARGS = ("mask",)

    def __init__(self, terms: Mapping[str, Any], namespace: Mapping[str, Callable], env, preset: RandomizationCfg):
        super().__init__(env)
        self.modes: dict[EventMode, list[Term]] = {mode: [] for mode in EventMode}
        self.adaptive: dict[str, AdaptiveRange] = {}
        ranges = []
        allowed = LEVELS.index(preset.level)
        for name, t in terms.items():
            func, params = resolve_term("event", name, t.func, namespace), plain(t.params)  # a typo fails in any preset
            if getattr(func, "needs_floating_base", False) and floating_base_joint(env.scene.model) is None:
                raise UserError(f"event '{name}' ({t.func}) moves the floating base, and the model has no free joint; "
                                f"valid: remove it (~task.events.{name}) or give the robot a free joint")  # fmt: skip
            if t.adaptive is not None and t.mode == EventMode.startup:  # in every preset, as its params are
                raise UserError(f"event '{name}': an adaptive range needs mode reset or interval "
                                "(a startup value is drawn once and could never adapt)")  # fmt: skip
            # an adaptive range the preset holds at its initial value is checked all the same, after the params
            held = t.adaptive is not None and not (preset.adaptive and LEVELS.index(t.level) <= allowed)
            if LEVELS.index(t.level) > allowed:  # not built in this preset; its params are checked all the same
                check_params("event", name, func, env, *(() if inspect.isclass(func) else (None,)), **params)
                if inspect.isclass(func) and hasattr(func, "check"):  # a class term's own value checks, env-free
                    try:
                        func.check(**params)
                    except UserError as exc:
                        raise UserError(f"event '{name}' (runs from randomization={t.level.value}): {exc}") from None
                if held:
                    check_adaptive_range(name, t.adaptive, params, env, held=True)
                _check_values(name, t, func, env, params)
                continue
            build_params = params
            if t.adaptive is not None and preset.adaptive:
                adr = AdaptiveRange(name, t.adaptive, params, env)
                self.adaptive[name] = adr
                params = {**params, adr.param: adr.per_env}
                build_params = {**params, adr.param: list(adr.limits)}
            if inspect.isclass(func):
                check_params("event", name, func, env, **build_params)
                built = func(env, **resolved("event", name, func, build_params, env))
                call = resolved("event", name, type(built).__call__, params, env)
                term = Term(name, built, call, t.func, stateful=True)
            else:
                check_params("event", name, func, env, None, **params)
                term = Term(name, func, resolved("event", name, func, params, env), t.func)
            if held:
                check_adaptive_range(name, t.adaptive, params, env, held=True)
            _check_values(name, t, func, env, params)
            self.terms.append(term)
            self.modes[t.mode].append(term)
            if t.mode == EventMode.interval:
                low, high = (float(v) for v in t.interval_s)
                if not 0 < low <= high:
                    raise UserError(f"event '{name}': interval_s must be 0 < low <= high, got {list(t.interval_s)}")
                ranges.append((low, high))
        self._interval = [(term.func, term.params) for term in self.modes[EventMode.interval]]
        self._interval_range = torch.tensor(ranges, device=env.device).reshape(-1, 2)
        self.time_left = torch.zeros(len(ranges), env.num_envs, device=env.device)
        """Seconds until each interval event fires, per env: [events, N]."""

    def apply(self, mode: EventMode, mask: torch.Tensor) -> None:
        env = self._env
        for term in self.modes[mode]:
            try:
                term.func(env, mask, **term.params)
            except Exception as exc:
                raise self.term_error(term, exc) from exc

    def inertial_after_startup(self) -> list[tuple[Term, EventMode]]:
        """The reset and interval terms that randomize a mass or inertia field: each write makes the
        engine recompute derived constants (MuJoCo's set_const), which neither a CUDA graph nor
        torch.compile can hold."""
        return [(term, mode) for mode in (EventMode.reset, EventMode.interval) for term in self.modes[mode]
                if term.params.get("field") in INERTIAL_FIELDS]  # fmt: skip

    def reset(self, mask: torch.Tensor) -> None:
        super().reset(mask)
        if self._interval:
            self._draw_intervals(mask.unsqueeze(0))

    def _draw_intervals(self, mask: torch.Tensor) -> None:
        low, high = self._interval_range[:, :1], self._interval_range[:, 1:]
        u = draws.uniform(self._env, self.time_left.shape)
        torch.where(mask, low + (high - low) * u, self.time_left, out=self.time_left)

    def step_interval(self, dt: float) -> None:
        if not self._interval:
            return
        self.time_left -= dt
        due = self.time_left <= 0
        env = self._env
        try:
            for k, (func, params) in enumerate(self._interval):
                func(env, due[k], **params)
        except Exception as exc:
            raise self.term_error(self.modes[EventMode.interval][k], exc) from exc
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

    def state_dict(self) -> dict:
        return {**super().state_dict(), "adaptive": {name: adr.state_dict() for name, adr in self.adaptive.items()}}

    def load_state_dict(self, state: Mapping) -> None:
        super().load_state_dict(state)
        for name, adr in self.adaptive.items():
            if name in state.get("adaptive", {}):
                adr.load_state_dict(state["adaptive"][name])
