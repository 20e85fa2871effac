"""Curriculum terms: classes built once with their params, called as term(env, mask) where
episodes end (before the reset events place the robots), with an optional `log()` of what they
currently ask of the policy."""

from __future__ import annotations

import torch

from robolearn import draws
from robolearn.config_task import AdaptiveRangeCfg
from robolearn.adaptive import AdaptiveRange
from robolearn.errors import UserError
from robolearn.mdp.state import root_pos_w

TERM_KIND = "curriculum"
"""Every term in this module is a curriculum term (robolearn/mdp/kinds.py)."""


class terrain_levels:  # noqa: N801 (term names are snake_case, like the functions)
    """Move each env's terrain level up or down when its episode ends, by how far it walked.

    Up when it walked farther than half a tile from its tile's centre, down when it covered less
    than `down_fraction` of the distance its velocity command `command` asked for over a full
    episode. Envs that climb past the top level go to a random level, so the hardest tiles never
    empty the rest of the grid."""

    def __init__(self, env, command: str | None = None, down_fraction: float = 0.5):
        if env.terrain is None:
            raise UserError("curriculum term terrain_levels needs a terrain: section in the task")
        if command is not None:
            env.commands.get(command)  # a wrong name fails here, in one line
        self.command, self.down_fraction = command, float(down_fraction)

    def __call__(self, env, mask: torch.Tensor) -> None:
        terrain = env.terrain
        walked = torch.linalg.vector_norm(root_pos_w(env)[:, :2] - terrain.env_origins[:, :2], dim=1)
        up = walked > terrain.terrain.tile_size / 2
        levels = terrain.levels + up.long()
        if self.command is not None:
            speed = torch.linalg.vector_norm(env.commands.get(self.command)[:, :2], dim=1)
            asked = speed * env.max_episode_length * env.dt * self.down_fraction
            levels = levels - ((walked < asked) & ~up).long()
        anywhere = draws.integers(env, levels.shape, 0, terrain.num_levels)
        levels = torch.where(levels >= terrain.num_levels, anywhere, levels.clamp(min=0))
        terrain.set_levels(torch.where(mask, levels, terrain.levels))

    def log(self, env) -> dict[str, float]:
        levels = env.terrain.levels.float()
        return {"curriculum/terrain_level_mean": float(levels.mean()), "curriculum/terrain_level_max": float(levels.max())}


class command_ranges:  # noqa: N801
    """Widen a command's ranges while the policy follows them (e.g. faster velocity targets).

    Each time `min_episodes` episodes have ended since the last change, if their mean per-step
    value of reward term `reward` is at least `threshold`, every component in `limits` grows by
    `step` on both sides, up to its limit. (An adaptive range with one group that never narrows;
    see robolearn/adaptive.py.)"""

    def __init__(self, env, command: str, reward: str, limits: dict, step: float = 0.1, threshold: float = 0.8,
                 min_episodes: int = 64):  # fmt: skip
        env.commands.get(command)
        components = env.commands.components[command]
        unknown = sorted(set(limits) - set(components))
        if unknown:
            raise UserError(f"curriculum command_ranges: command '{command}' has no component {unknown[0]}; "
                            f"valid: {', '.join(components)}")  # fmt: skip
        self.command = command
        self.ranges: dict[int, AdaptiveRange] = {}
        for name, limit in limits.items():
            if not (isinstance(limit, (list, tuple)) and len(limit) == 2 and all(isinstance(v, (int, float)) for v in limit)):
                raise UserError(f"curriculum command_ranges: limits.{name}={limit!r} is not valid; valid: [low, high] "
                                "(the widest range the curriculum may reach)")  # fmt: skip
            k = components.index(name)
            cfg = AdaptiveRangeCfg(param=name, limits=list(limit), step=step, metric=reward, widen_above=threshold,
                                   narrow_below=float("-inf"), num_groups=1, min_episodes=min_episodes)  # fmt: skip
            initial = env.commands.ranges[command][k].tolist()
            self.ranges[k] = AdaptiveRange(f"command {command}", cfg, {name: initial}, env,
                                           log_name=f"curriculum/{command}/{name}")  # fmt: skip

    def __call__(self, env, mask: torch.Tensor) -> None:
        for k, adaptive in self.ranges.items():
            adaptive.record(env, mask)
            adaptive.update()
            env.commands.ranges[self.command][k] = adaptive.range[0]

    def log(self, env) -> dict[str, float]:
        return {key: value for adaptive in self.ranges.values() for key, value in adaptive.log().items()}

    def state_dict(self) -> dict:
        return {str(k): adaptive.state_dict() for k, adaptive in self.ranges.items()}

    def load_state_dict(self, state: dict) -> None:
        for k, adaptive in self.ranges.items():
            adaptive.load_state_dict(state[str(k)])
