"""Automatic domain randomization: one event range that widens while the policy copes.

Used by the event manager (adaptive event ranges) and by curriculum terms (command ranges); it
reads the env only through its public episode state (terminated, episode_steps, rewards).

Environments are split into groups (env i in group i % num_groups), each with its own current
[low, high]. When episodes end, their metric is added to their group's tally (on the device, no
host sync). Once per iteration, `update()` moves every group that finished `min_episodes`
episodes: wider by `step` on each side when its mean metric is at or above `widen_above`, back
toward the initial range when below `narrow_below`; the range stays inside `limits` and never
gets narrower than where it started. The event draws from the current range of each env's group.
"""

from __future__ import annotations

import torch

from robolearn.config_task import AdaptiveRangeCfg
from robolearn.errors import UserError

EPISODE_METRICS = ("survival", "episode_length")


def _pair(event: str, what: str, value) -> tuple[float, float]:
    try:
        low, high = (float(v) for v in value)
    except (TypeError, ValueError):
        raise UserError(f"event '{event}': {what} must be a [low, high] pair, got {value!r}") from None
    if low > high:
        raise UserError(f"event '{event}': {what} must have low <= high, got {[low, high]}")
    return low, high


def _require(event: str, cfg, key: str, valid: str) -> None:
    """A field the schema leaves unset (`???`): one line naming it, not OmegaConf's error."""
    from omegaconf import OmegaConf

    missing = OmegaConf.is_missing(cfg, key) if OmegaConf.is_config(cfg) else getattr(cfg, key) == "???"
    if missing:
        raise UserError(f"event '{event}': adaptive.{key} is not set; valid: {valid}")


def check_adaptive_range(event: str, cfg: AdaptiveRangeCfg, params: dict, env, held: bool = False) -> tuple:
    """(initial, limits) of an event's adaptive range, or a UserError naming what is wrong. `held`:
    a preset that keeps the range at its initial value checks it too, but allows a metric reward an
    ablation set to weight 0 (it never drives the range then)."""
    if cfg.param not in params:
        raise UserError(f"event '{event}': adaptive param '{cfg.param}' is not one of its params {sorted(params)}")
    initial = _pair(event, f"params.{cfg.param}", params[cfg.param])
    _require(event, cfg, "limits", f"[low, high] around params.{cfg.param}={list(initial)}, the widest it may reach")
    _require(event, cfg, "step", "> 0, how far each bound moves per update")
    limits = _pair(event, "adaptive.limits", cfg.limits)
    if not limits[0] <= initial[0] <= initial[1] <= limits[1]:
        raise UserError(f"event '{event}': adaptive.limits {list(limits)} must contain the initial range {list(initial)}")
    if cfg.step <= 0 or cfg.num_groups < 1 or cfg.min_episodes < 1:
        raise UserError(f"event '{event}': adaptive.step must be > 0 and num_groups, min_episodes >= 1")
    if cfg.narrow_below > cfg.widen_above:
        raise UserError(f"event '{event}': adaptive.narrow_below must not exceed widen_above")
    if cfg.metric not in EPISODE_METRICS and cfg.metric not in env.rewards.names:
        valid = ", ".join([*EPISODE_METRICS, *env.rewards.names])
        raise UserError(f"event '{event}': unknown adaptive metric '{cfg.metric}'; valid: {valid}")
    if not held and cfg.metric in env.rewards.names and float(env.rewards.weights[env.rewards.names.index(cfg.metric)]) == 0:
        raise UserError(f"event '{event}': adaptive metric '{cfg.metric}' is a reward term with weight 0")
    return initial, limits


class AdaptiveRange:
    def __init__(self, event: str, cfg: AdaptiveRangeCfg, params: dict, env, log_name: str | None = None):
        initial, limits = check_adaptive_range(event, cfg, params, env)
        self.event, self.param = event, cfg.param
        device = env.device
        self.log_name = log_name or f"adr/{event}/{cfg.param}"
        self.cfg = cfg
        self.metric = str(cfg.metric)
        """What record() tallies (plain values, not the config node: torch.compile traces record())."""
        self.min_episodes = int(cfg.min_episodes)
        self.widen_above, self.narrow_below = float(cfg.widen_above), float(cfg.narrow_below)
        self.limits = limits
        self.initial = torch.tensor(initial, device=device)
        self.group = torch.arange(env.num_envs, device=device) % cfg.num_groups
        self._member = torch.nn.functional.one_hot(self.group, cfg.num_groups).float()
        """[N, G]: env n is in group g. Sums per group go through it, not index_add_, whose float
        atomics on CUDA add in a different order each run (ADR would not be reproducible)."""
        self.range = self.initial.repeat(cfg.num_groups, 1)
        """Current [low, high] of each group, [G, 2]."""
        self.per_env = self.range[self.group]
        """Current [low, high] of each env, [N, 2]: what the event receives as its param."""
        self._step = torch.tensor([-cfg.step, cfg.step], device=device)
        """How a widening moves [low, high] (made once: update() may run inside a captured step)."""
        self.tally = torch.zeros(cfg.num_groups, device=device)
        self.count = torch.zeros(cfg.num_groups, device=device)

    def _metric(self, env) -> torch.Tensor:
        """The ending episodes' metric per env (read where episodes end, before their reset)."""
        if self.metric == "survival":
            return (~env.terminated).float()
        steps = env.episode_steps.clamp(min=1).float()
        if self.metric == "episode_length":
            return steps / env.max_episode_length
        k = env.rewards.names.index(self.metric)
        return env.rewards.episode_sums[k] / (env.rewards.weights[k] * steps)

    def record(self, env, done: torch.Tensor) -> None:
        done = done.float().unsqueeze(1)
        self.tally.add_((self._member * (self._metric(env).unsqueeze(1) * done)).sum(0))
        self.count.add_((self._member * done).sum(0))

    def update(self) -> None:
        ready = self.count >= self.min_episodes
        mean = self.tally / self.count.clamp(min=1)
        widen = (ready & (mean >= self.widen_above)).float().unsqueeze(1)
        narrow = (ready & (mean < self.narrow_below)).float().unsqueeze(1)
        moved = self.range + self._step * widen - self._step * narrow
        low = torch.minimum(moved[:, 0].clamp(min=self.limits[0]), self.initial[0])
        high = torch.maximum(moved[:, 1].clamp(max=self.limits[1]), self.initial[1])
        self.range.copy_(torch.stack([low, high], dim=1))
        self.per_env.copy_(self.range[self.group])
        self.tally.masked_fill_(ready, 0.0)
        self.count.masked_fill_(ready, 0.0)

    def log(self) -> dict[str, float]:
        """Scalars for the logger: each group's current bounds."""
        values = self.range.tolist()
        group = (lambda g: f"/group{g}") if len(values) > 1 else (lambda g: "")  # noqa: E731
        return {f"{self.log_name}{group(g)}/{side}": values[g][i]
                for g in range(len(values)) for i, side in enumerate(("low", "high"))}  # fmt: skip

    def state_dict(self) -> dict[str, torch.Tensor]:
        return {"range": self.range.clone(), "tally": self.tally.clone(), "count": self.count.clone()}

    def load_state_dict(self, state: dict[str, torch.Tensor]) -> None:
        self.range.copy_(state["range"])
        self.tally.copy_(state["tally"])
        self.count.copy_(state["count"])
        self.per_env.copy_(self.range[self.group])
