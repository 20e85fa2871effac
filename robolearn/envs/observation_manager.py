"""Observation groups: each group's terms concatenated into one preallocated [N, D] buffer, then
noise, scale and clip applied to the whole group at once (per-column vectors)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import torch

from robolearn.config import NoiseType
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


class ObservationManager(ManagerBase):
    KIND = "observation"
    STATE = ("buffers",)

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
        for group, gcfg in groups.items():
            start, columns, slices, terms = 0, [], [], []
            for name, tcfg in gcfg["terms"].items():
                term = self.build_term(f"{group}/{name}", tcfg.func, plain(tcfg.params), namespace)
                dim = self._width(term)
                sl = ObsSlice(name, start, start + dim, float(tcfg.scale), tcfg.clip, tcfg.units, tcfg.func, plain(tcfg.params))
                self.terms.append(term)
                terms.append((slice(sl.start, sl.stop), term.func, term.params))
                slices.append(sl)
                clip = float("inf") if tcfg.clip is None else float(tcfg.clip)
                noisy = noise and bool(gcfg["enable_noise"])
                uniform = noisy and tcfg.noise.type == NoiseType.uniform
                columns += [(tcfg.noise.scale * uniform, tcfg.noise.scale * (noisy and not uniform), sl.scale, clip)] * dim
                start += dim
            if start == 0:
                raise UserError(f"observation group '{group}' has no terms")
            self._groups[group] = terms
            self.layout[group] = slices
            self.buffers[group] = torch.zeros(env.num_envs, start, device=env.device)
            uniform, gaussian, scale, clip = torch.tensor(columns, device=env.device).T
            self._post[group] = {
                "uniform": uniform if uniform.any() else None,
                "gaussian": gaussian if gaussian.any() else None,
                "scale": scale if (scale != 1).any() else None,
                "clip": clip if torch.isfinite(clip).any() else None,
            }

    def _width(self, term: Term) -> int:
        value = self.call_once(term)
        if not isinstance(value, torch.Tensor) or value.dim() != 2 or value.shape[0] != self._env.num_envs:
            shape = tuple(value.shape) if isinstance(value, torch.Tensor) else type(value).__name__
            raise UserError(f"observation term '{term.name}' ({term.source}) must return [num_envs, k], got {shape}")
        return value.shape[1]

    def functions(self, group: str) -> list[tuple[ObsSlice, Callable]]:
        """Each term's slice and the function computing it (export describes terms from these)."""
        return [(sl, func) for sl, (_, func, _) in zip(self.layout[group], self._groups[group])]

    def compute(self) -> dict[str, torch.Tensor]:
        env = self._env
        gen = env.generator
        k = 0  # the flat index into self.terms, for an error message
        for group, terms in self._groups.items():
            out = self.buffers[group]
            try:
                for columns, func, params in terms:
                    out[:, columns] = func(env, **params)
                    k += 1
            except Exception as exc:
                raise self.term_error(self.terms[k], exc) from exc
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
