"""Rewards, terminations, task metrics and curricula: each turns a dict of term configs into one
batched computation (observations: observation_manager.py; events: event_manager.py)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import torch

from robolearn.envs.manager_base import ManagerBase, Term
from robolearn.errors import UserError
from robolearn.mdp.state import root_pos_w
from robolearn.scene.floating_base import floating_base_joint


def _check_output(manager: ManagerBase, term: Term, dtype: torch.dtype | None) -> None:
    """A plain term returns [num_envs] (of `dtype`): checked once at build, naming the term."""
    if term.stateful:  # calling it would advance its state; it is checked by its first step
        return
    kind, env = manager.KIND, manager._env
    value = manager.call_once(term)
    ok = isinstance(value, torch.Tensor) and tuple(value.shape) == (env.num_envs,)
    if ok and dtype is not None:
        ok = value.dtype == dtype
    if not ok:
        got = f"{tuple(value.shape)} {value.dtype}" if isinstance(value, torch.Tensor) else type(value).__name__
        want = f"[num_envs] {dtype}" if dtype is not None else "[num_envs]"
        raise UserError(f"{kind} term '{term.name}' ({term.source}) must return {want}, got {got}")


def _call_terms(manager: ManagerBase) -> list:
    """Each plain term's value this step (manager._calls: (function, params)), a term that raises
    named with its task."""
    env, values = manager._env, []
    try:
        for k, (func, params) in enumerate(manager._calls):
            values.append(func(env, **params))
    except Exception as exc:
        raise manager.term_error(manager.terms[k], exc) from exc
    return values


def _stack(manager: ManagerBase, values: list, out: torch.Tensor) -> None:
    """out[k] = values[k] for each term in one operation (one kernel, not one copy per term), after
    checking on the host that every value fits: a class term's, unchecked at build, is named here."""
    for term, value in zip(manager.terms, values):
        if not (isinstance(value, torch.Tensor) and value.shape == out.shape[1:] and value.device == out.device
                and (value.dtype == torch.bool or out.dtype != torch.bool)):  # fmt: skip
            got = type(value).__name__
            if isinstance(value, torch.Tensor):
                got = f"{tuple(value.shape)} {value.dtype} on {value.device}"
            raise manager.term_error(term, UserError(f"must return [num_envs] {out.dtype} on {out.device}, got {got}"))
    if values:
        torch.stack(values, out=out)


class RewardManager(ManagerBase):
    """reward = sum_i weight_i * term_i(env); keeps each term's running sum per episode."""

    KIND = "reward"
    STATE = ("episode_sums",)

    def __init__(self, terms: Mapping[str, Any], namespace: Mapping[str, Callable], env):
        super().__init__(env)
        self.add_terms(terms, namespace)
        self._calls = [(t.func, t.params) for t in self.terms]
        self.weights = torch.tensor([float(t.weight) for t in terms.values()], device=env.device)
        self.values = torch.zeros(len(self.terms), env.num_envs, device=env.device)
        """Unweighted term values of the last step, [K, N]."""
        self.reward = torch.zeros(env.num_envs, device=env.device)
        self.episode_sums = torch.zeros(len(self.terms), env.num_envs, device=env.device)
        """Weighted term sums of the running episodes, [K, N]."""

    def check_outputs(self) -> None:
        for term in self.terms:
            _check_output(self, term, None)

    def compute(self, health=None) -> torch.Tensor:
        """The step's reward [N]. `health` (envs/health.py) zeroes the terms of invalid envs and
        marks those whose terms are not finite, before anything is summed."""
        values = _call_terms(self)
        _stack(self, values, self.values)
        if health is not None:
            health.check_rewards(self.values)
        torch.mv(self.values.T, self.weights, out=self.reward)
        self.episode_sums.addcmul_(self.values, self.weights.unsqueeze(1))
        return self.reward

    def reset(self, mask: torch.Tensor) -> None:
        super().reset(mask)
        self.episode_sums.masked_fill_(mask, 0.0)


class TerminationManager(ManagerBase):
    """terminated = any term fired. Time-outs are not terms: the env tracks them separately."""

    KIND = "termination"

    def __init__(self, terms: Mapping[str, Any], namespace: Mapping[str, Callable], env):
        super().__init__(env)
        self.add_terms(terms, namespace)
        self._calls = [(t.func, t.params) for t in self.terms]
        self.fired = torch.zeros(len(self.terms), env.num_envs, dtype=torch.bool, device=env.device)
        """Which term fired in each env on the last step, [K, N]."""
        self.terminated = torch.zeros(env.num_envs, dtype=torch.bool, device=env.device)

    def check_outputs(self) -> None:
        for term in self.terms:
            _check_output(self, term, torch.bool)

    def compute(self) -> torch.Tensor:
        values = _call_terms(self)
        _stack(self, values, self.fired)
        torch.any(self.fired, dim=0, out=self.terminated)
        return self.terminated


class MetricManager(ManagerBase):
    """Task metrics for evaluation (not rewarded). Off during training; when `enabled`, each step
    leaves every metric's value in `values` [K, N], the base's planar travel in `distance` [N] and
    each metric's mean over the episode's most recent `window_s` seconds in `window_mean` [K, N]
    (the value per: final reports when the episode ends), computed after the physics and before
    resets, like rewards."""

    KIND = "metric"
    PER = ("step", "meter", "final")

    def __init__(self, terms: Mapping[str, Any], namespace: Mapping[str, Callable], env):
        super().__init__(env)
        bad = [(name, t.per) for name, t in terms.items() if t.per not in self.PER]
        if bad:
            raise UserError(f"metric '{bad[0][0]}': per must be one of {', '.join(self.PER)}, got '{bad[0][1]}'")
        short = [(name, t.window_s) for name, t in terms.items() if t.per == "final" and not t.window_s > 0]
        if short:
            raise UserError(f"metric '{short[0][0]}': window_s={short[0][1]} is out of range; valid: > 0 (seconds)")
        meter = [name for name, t in terms.items() if t.per == "meter"]
        if meter and floating_base_joint(env.scene.model) is None:  # found now, not at the first evaluation
            raise UserError(f"metric '{meter[0]}': per: meter divides by the distance the floating base travelled, and "
                            "the model has none (a free joint); valid: per: step or final")  # fmt: skip
        self.add_terms(terms, namespace)
        self._calls = [(t.func, t.params) for t in self.terms]
        self.per_meter = torch.tensor([t.per == "meter" for t in terms.values()], dtype=torch.bool)
        self.per_final = torch.tensor([t.per == "final" for t in terms.values()], dtype=torch.bool)
        self._tracks_distance = bool(self.per_meter.any())
        self.enabled = False
        n, device = env.num_envs, env.device
        self.values = torch.zeros(len(self.terms), n, device=device)
        self.distance = torch.zeros(n, device=device)
        self._root_before = torch.zeros(n, 2, device=device)
        windows = [max(1, round(t.window_s / env.dt)) for t in terms.values() if t.per == "final"]
        depth = min(max(windows, default=1), env.max_episode_length)
        self.window_steps = torch.tensor([min(max(1, round(t.window_s / env.dt)), depth) for t in terms.values()],
                                         device=device).unsqueeze(1)  # fmt: skip
        self._recent = torch.zeros(depth, len(self.terms), n, device=device)
        """The last `depth` steps' values, a ring indexed by episode step."""
        self._age = torch.arange(depth, device=device).view(depth, 1, 1)
        self.window_mean = torch.zeros_like(self.values)

    def check_outputs(self) -> None:
        for term in self.terms:
            _check_output(self, term, None)

    def before_physics(self) -> None:
        if self.enabled and self._tracks_distance:
            self._root_before.copy_(root_pos_w(self._env)[:, :2])

    def after_physics(self) -> None:
        if not self.enabled:
            return
        env, values = self._env, _call_terms(self)
        _stack(self, values, self.values)  # a class metric's value, unchecked at build, is checked here
        if self._tracks_distance:
            torch.linalg.vector_norm(root_pos_w(env)[:, :2] - self._root_before, dim=1, out=self.distance)
        if self.per_final.any():
            self._update_window(env.episode_steps)

    def _update_window(self, steps: torch.Tensor) -> None:
        """Store this step's values in the ring (slot (step - 1) % depth) and average, per metric,
        the newest min(steps, window) of them."""
        depth = self._recent.shape[0]
        slot = (steps - 1).remainder(depth)  # [N]
        self._recent.scatter_(0, slot.view(1, 1, -1).expand(1, self.values.shape[0], -1), self.values.unsqueeze(0))
        age = (slot.view(1, 1, -1) - self._age).remainder(depth)  # how many steps ago each slot was written
        count = torch.minimum(steps.view(1, -1), self.window_steps)  # [K, N]
        inside = age < count.unsqueeze(0)
        self.window_mean.copy_((self._recent * inside).sum(0) / count.clamp(min=1))


class CurriculumManager(ManagerBase):
    """Curriculum terms (robolearn.mdp.curriculum), run where episodes end, before reset events:
    term(env, mask, **params), a class term built once; its optional `log(env)` reports what it
    currently asks of the policy."""

    KIND = "curriculum"
    CALL_ARGS = ("mask",)

    def __init__(self, terms: Mapping[str, Any], namespace: Mapping[str, Callable], env):
        super().__init__(env)
        self.add_terms(terms, namespace)

    def apply(self, mask: torch.Tensor) -> None:
        env = self._env
        for term in self.terms:
            try:
                term.func(env, mask, **term.params)
            except Exception as exc:
                raise self.term_error(term, exc) from exc

    def log(self) -> dict[str, float]:
        logged: dict[str, float] = {}
        for term in self.terms:
            if hasattr(term.func, "log"):
                try:
                    logged.update(term.func.log(self._env))
                except Exception as exc:
                    raise self.term_error(term, exc) from exc
        return logged
