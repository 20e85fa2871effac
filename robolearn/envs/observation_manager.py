"""Observation groups: each group's terms concatenated into one preallocated [N, D] buffer, then
noise, scale and clip applied to the whole group at once (per-column vectors).

A term with `history: K` (K > 1) holds its last K values, oldest first: its slice is
[v(t-K+1), ..., v(t)], each v as wide as the term and already noised, scaled and clipped (noise
is drawn once per value, when it is the newest). Such a group computes its terms into a
"current" block first, post-processes it, then builds its output with one gather from
[previous output | current] per case: an env in a new control step shifts every history one
slot and appends the current value; an env whose episode just started (reset) fills every slot
with its first value; an env computed a second time within the same step (the final
observations before a reset) keeps its older slots and only replaces the newest. The control
step is read from `env.episode_steps`, so the history advances exactly once per step, whoever
calls compute(). The history lives in the output buffers themselves (the checkpointed state);
the step each env was last computed at is saved with it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import torch

from robolearn import draws
from robolearn.config_task import NoiseType
from robolearn.envs.manager_base import ManagerBase, Term, plain
from robolearn.errors import UserError


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
    history: int = 1
    """Control steps the slice holds, oldest first; each step is `width` values."""

    @property
    def width(self) -> int:
        """Values of one step (the term's own output width)."""
        return (self.stop - self.start) // self.history


@dataclass
class _History:
    """A group's history gathers: three [D] column indices into work = [output D | current W]."""

    work: torch.Tensor
    """[N, D + W]: the previous output, then the current (post-processed) values."""
    scratch: torch.Tensor
    """[N, D]: one gather's result before it is merged into the output."""
    advance: torch.Tensor
    """A new step: each slot takes the next newer slot; the newest takes the current value."""
    stay: torch.Tensor
    """The same step again: older slots kept; the newest takes the current value."""
    fill: torch.Tensor
    """An episode's first value: every slot takes the current value."""


def _history_indices(slices: list[ObsSlice], size: int) -> tuple[list[int], list[int], list[int]]:
    """Column indices into [output (size) | current] of the three gathers (_History)."""
    advance, stay, fill = [], [], []
    current = size  # where the term's current values start in `work`
    for sl in slices:
        w = sl.width
        for j in range(sl.history):
            for c in range(w):
                newest = current + c
                fill.append(newest)
                last = j == sl.history - 1
                advance.append(newest if last else sl.start + (j + 1) * w + c)
                stay.append(newest if last else sl.start + j * w + c)
        current += w
    return advance, stay, fill


class ObservationManager(ManagerBase):
    KIND = "observation"
    STATE = ("buffers",)
    """With a history term, also `last_step` (set on the instance: checkpoints of tasks without
    history keep their old layout)."""

    def __init__(self, groups: Mapping[str, Any], namespace: Mapping[str, Callable], env, noise: bool = True):
        super().__init__(env)
        if "policy" not in groups:
            raise UserError("the task defines no 'policy' observation group")
        if "critic" not in groups:  # the critic sees the policy's terms, without noise
            groups = {**groups, "critic": {"terms": groups["policy"].terms, "enable_noise": False}}
        self.layout: dict[str, list[ObsSlice]] = {}
        self.buffers: dict[str, torch.Tensor] = {}
        self._groups: dict[str, list[tuple[slice, Callable, dict]]] = {}
        self._post: dict[str, dict[str, torch.Tensor | None]] = {}
        self._current: dict[str, torch.Tensor] = {}
        """Where each group's terms write this step's values (the output itself without history)."""
        self._history: dict[str, _History] = {}
        for group, gcfg in groups.items():
            start, width, columns, slices, terms = 0, 0, [], [], []
            for name, tcfg in gcfg["terms"].items():
                term = self.build_term(f"{group}/{name}", tcfg.func, plain(tcfg.params), namespace)
                dim = self._width(term)
                history = self._history_length(group, name, tcfg)
                sl = ObsSlice(name, start, start + dim * history, float(tcfg.scale), tcfg.clip, tcfg.units, tcfg.func,
                              plain(tcfg.params), history)  # fmt: skip
                self.terms.append(term)
                terms.append((slice(width, width + dim), term.func, term.params))
                slices.append(sl)
                clip = float("inf") if tcfg.clip is None else float(tcfg.clip)
                noisy = noise and bool(gcfg["enable_noise"])
                uniform = noisy and tcfg.noise.type == NoiseType.uniform
                columns += [(tcfg.noise.scale * uniform, tcfg.noise.scale * (noisy and not uniform), sl.scale, clip)] * dim
                start, width = sl.stop, width + dim
            if start == 0:
                raise UserError(f"observation group '{group}' has no terms")
            self._groups[group] = terms
            self.layout[group] = slices
            self.buffers[group] = torch.zeros(env.num_envs, start, device=env.device)
            self._current[group] = self.buffers[group]
            if start != width:  # a history term: the terms write into a current block of their own
                work = torch.zeros(env.num_envs, start + width, device=env.device)
                indices = _history_indices(slices, start)
                advance, stay, fill = (torch.tensor(i, dtype=torch.long, device=env.device) for i in indices)
                self._history[group] = _History(work, torch.zeros_like(self.buffers[group]), advance, stay, fill)
                self._current[group] = work[:, start:]
            uniform, gaussian, scale, clip = torch.tensor(columns, device=env.device).T
            self._post[group] = {
                "uniform": uniform if uniform.any() else None,
                "gaussian": gaussian if gaussian.any() else None,
                "scale": scale if (scale != 1).any() else None,
                "clip": clip if torch.isfinite(clip).any() else None,
            }
        if self._history:
            self.last_step = torch.full((env.num_envs,), -1, dtype=torch.long, device=env.device)
            """The env's episode_steps when its observation was last computed; -1: its episode
            has just started (reset), the next compute fills the history with the first value."""
            self.STATE = (*type(self).STATE, "last_step")
            self._fresh = torch.zeros(env.num_envs, 1, dtype=torch.bool, device=env.device)
            self._same = torch.zeros(env.num_envs, 1, dtype=torch.bool, device=env.device)

    def _history_length(self, group: str, name: str, tcfg) -> int:
        """The term's `history`, refused (one line) below 1 or longer than the episode."""
        history = getattr(tcfg, "history", 1)
        key = f"task.observations.{group}.terms.{name}.history"
        limit = self._env.max_episode_length
        if not isinstance(history, int) or isinstance(history, bool) or history < 1:
            raise UserError(f"{key}={history!r} is out of range; valid: an integer >= 1")
        if history > limit:
            raise UserError(f"{key}={history} is longer than the episode ({limit} control steps of "
                            f"{self._env.dt:g} s); valid: 1..{limit}")  # fmt: skip
        return history

    def _width(self, term: Term) -> int:
        value = self.call_once(term)
        if not isinstance(value, torch.Tensor) or value.dim() != 2 or value.shape[0] != self._env.num_envs:
            shape = tuple(value.shape) if isinstance(value, torch.Tensor) else type(value).__name__
            raise UserError(f"observation term '{term.name}' ({term.source}) must return [num_envs, k], got {shape}")
        if value.shape[1] == 0:  # it would give the policy nothing and take a name in the layout
            raise UserError(f"observation term '{term.name}' ({term.source}) returns no values ([num_envs, 0]); valid: "
                            "k >= 1 values per env (remove the term, or check the joints/sensors it selects)")  # fmt: skip
        return value.shape[1]

    def functions(self, group: str) -> list[tuple[ObsSlice, Callable]]:
        """Each term's slice and the function computing it (export describes terms from these)."""
        return [(sl, func) for sl, (_, func, _) in zip(self.layout[group], self._groups[group])]

    def compute(self) -> dict[str, torch.Tensor]:
        """Every group's observation of the current state (the buffers, overwritten next call).
        History terms advance once per control step (module docstring)."""
        env = self._env
        k = 0  # the flat index into self.terms, for an error message
        if self._history:
            torch.lt(self.last_step.unsqueeze(1), 0, out=self._fresh)
            torch.eq(env.episode_steps.unsqueeze(1), self.last_step.unsqueeze(1), out=self._same)
        for group, terms in self._groups.items():
            out, parts = self._current[group], []
            try:
                for columns, func, params in terms:
                    part = func(env, **params)
                    width = columns.stop - columns.start
                    if not (isinstance(part, torch.Tensor) and part.shape == (env.num_envs, width)
                            and part.device == out.device):  # fmt: skip
                        got = type(part).__name__
                        if isinstance(part, torch.Tensor):
                            got = f"{tuple(part.shape)} on {part.device}"
                        raise UserError(f"must return [num_envs, {width}] on {out.device} as it did at build, got {got}")
                    parts.append(part)
                    k += 1
            except Exception as exc:
                raise self.term_error(self.terms[k], exc) from exc
            if out.is_contiguous():  # the terms' columns in one operation, not one copy each
                torch.cat(parts, dim=1, out=out)
            else:  # a block of a history group's work buffer
                out.copy_(torch.cat(parts, dim=1))
            post = self._post[group]
            if post["uniform"] is not None:
                out.addcmul_(draws.uniform(env, out.shape).mul_(2).sub_(1), post["uniform"])
            if post["gaussian"] is not None:
                out.addcmul_(draws.normal(env, out.shape), post["gaussian"])
            if post["scale"] is not None:
                out.mul_(post["scale"])
            if post["clip"] is not None:
                torch.clamp(out, -post["clip"], post["clip"], out=out)
            if group in self._history:
                self._advance(self.buffers[group], self._history[group])
        if self._history:
            self.last_step.copy_(env.episode_steps)
        return self.buffers

    def _advance(self, out: torch.Tensor, h: _History) -> None:
        """out <- the new history: shifted (a new step), kept (the same step) or filled (a new episode)."""
        h.work[:, : out.shape[1]].copy_(out)
        torch.index_select(h.work, 1, h.advance, out=out)
        torch.index_select(h.work, 1, h.stay, out=h.scratch)
        torch.where(self._same, h.scratch, out, out=out)
        torch.index_select(h.work, 1, h.fill, out=h.scratch)
        torch.where(self._fresh, h.scratch, out, out=out)

    def reset(self, mask: torch.Tensor) -> None:
        super().reset(mask)
        if self._history:  # their next observation is an episode's first: every slot takes it
            self.last_step.masked_fill_(mask, -1)
