"""An env's checkpoint: everything a resumed run needs to continue bit-exactly.

The physics state (and per-env model parameters), the env's random generator, episode counters
and statistics, the terrain levels, and each manager's own state (manager_base.py). Loading
copies into the live tensors, so CUDA graphs captured before a resume stay valid.
"""

from __future__ import annotations

from collections.abc import Mapping

import torch

from robolearn.envs.manager_base import load_term_state, term_state
from robolearn.errors import UserError


def state_dict(env) -> dict:
    return {
        "physics": env.physics.state_dict(),
        "generator": env.generator.get_state(),
        "episode_length": env.episode_length.clone(),
        "episode_steps": env.episode_steps.clone(),
        "prev_qvel": env.prev_qvel.clone(),
        "health": env.health.state_dict(),
        "stats": env.stats.state_dict(),
        "managers": {name: manager.state_dict() for name, manager in env.managers().items()},
        "terrain": None if env.terrain is None else env.terrain.state_dict(),
    }


def load_state_dict(env, state: Mapping) -> None:
    if "managers" not in state:
        raise UserError("this checkpoint was written by an older robolearn (before manager state); "
                        "resume it with the robolearn version that wrote it")  # fmt: skip
    if state["episode_length"].shape[0] != env.num_envs:
        raise UserError(
            f"checkpoint has {state['episode_length'].shape[0]} environments, this run has {env.num_envs}; "
            "resume with the same env.num_envs"
        )
    env.physics.load_state_dict(state["physics"])
    env.generator.set_state(state["generator"])
    env.episode_length.copy_(state["episode_length"])
    env.episode_steps.copy_(state["episode_steps"])
    env.prev_qvel.copy_(state["prev_qvel"])
    if "health" in state:  # absent in checkpoints written before non-finite containment
        env.health.load_state_dict(state["health"])
    env.stats.load_state_dict(state["stats"])
    for name, manager in env.managers().items():
        manager.load_state_dict(state["managers"][name])
    if env.terrain is not None and state.get("terrain") is not None:
        env.terrain.load_state_dict(state["terrain"])


def load_conditions(env, state: Mapping) -> list[str]:
    """Into an env built afresh for a checkpoint's policy (eval, export, play; any env.num_envs),
    where training had taken the task's conditions, not its episodes: the commands' ranges and a
    command curriculum's own ranges, every adaptive event range (ADR) and the terrain levels (env i
    takes training env i's level, cycling where this env has more). Returns what differs from the
    fresh env's conditions, in words ([] when nothing does, or for a checkpoint without manager state)."""
    managers = state.get("managers")
    if managers is None:
        return []
    return [*_command_ranges(env, managers.get("commands", {}).get("state", {}).get("ranges", {})),
            *_curriculum_terms(env, managers.get("curriculum", {}).get("terms", {})),
            *_adaptive_ranges(env, managers.get("events", {}).get("adaptive", {})),
            *_terrain_levels(env, state.get("terrain"))]  # fmt: skip


def _command_ranges(env, saved_ranges: Mapping) -> list[str]:
    changed = []
    for name, ranges in env.commands.ranges.items():
        saved = saved_ranges.get(name)
        if saved is not None and saved.shape == ranges.shape and not torch.equal(saved.to(ranges.device), ranges):
            ranges.copy_(saved)
            components = zip(env.commands.components[name], ranges.tolist())
            changed.append(f"command {name} ranges " + ", ".join(f"{c} [{lo:.3g}, {hi:.3g}]" for c, (lo, hi) in components))
    return changed


def _curriculum_terms(env, saved_terms: Mapping) -> list[str]:
    """Curriculum terms whose state is not per env (a command curriculum's adaptive ranges, which set
    the command ranges at every reset)."""
    changed = []
    for term in env.curriculum.terms:
        saved = saved_terms.get(term.name) if term.stateful else None
        if saved and _shapes(saved) == _shapes(term_state(term.func)) and not _equal(saved, term_state(term.func)):
            load_term_state(term.func, saved)
            changed.append(f"curriculum {term.name}")
    return changed


def _adaptive_ranges(env, saved_adaptive: Mapping) -> list[str]:
    changed = []
    for name, adr in env.events.adaptive.items():
        saved = saved_adaptive.get(name)
        if saved is not None and saved["range"].shape == adr.range.shape and not torch.equal(saved["range"].to(adr.range.device), adr.range):
            adr.load_state_dict({k: v.to(adr.range.device) for k, v in saved.items()})
            low, high = adr.range[:, 0].min().item(), adr.range[:, 1].max().item()
            changed.append(f"adaptive {name}.{adr.param} [{low:.3g}, {high:.3g}]")
    return changed


def _terrain_levels(env, terrain: Mapping | None) -> list[str]:
    if env.terrain is None or terrain is None:
        return []
    trained = terrain["levels"].to(env.terrain.levels.device)
    levels = trained[torch.arange(env.num_envs, device=trained.device) % trained.shape[0]]
    if torch.equal(levels, env.terrain.levels):
        return []
    env.terrain.set_levels(levels)
    return [f"terrain levels (mean {levels.float().mean().item():.2g}, max {levels.max().item()} of 0-{env.terrain.num_levels - 1})"]


def _shapes(state):
    """The tensor shapes of a (nested) term state: a per-env state has another shape in an env of
    another size, and is not a condition to carry over."""
    if isinstance(state, torch.Tensor):
        return tuple(state.shape)
    if isinstance(state, dict):
        return {k: _shapes(v) for k, v in state.items()}
    return [_shapes(v) for v in state]


def _equal(a, b) -> bool:
    if isinstance(a, torch.Tensor):
        return torch.equal(a.cpu(), b.cpu())
    if isinstance(a, dict):
        return all(_equal(a[k], b[k]) for k in a)
    return all(_equal(x, y) for x, y in zip(a, b))


CONDITIONS_FILE = "conditions.yaml"
"""A bundle's file of conditions_summary."""

CONDITIONS = ("trained", "initial")
"""What a policy is run under (eval, export, play, sim2sim): where training had taken the task's
curricula, adaptive ranges and terrain tiles (load_conditions; a bundle's CONDITIONS_FILE), as
training's own evaluation at its end is, or the task's initial ones."""


def check_conditions(conditions: str) -> None:
    if conditions not in CONDITIONS:
        raise UserError(f"conditions={conditions} is not valid; valid: {', '.join(CONDITIONS)}")


def conditions_summary(env) -> dict:
    """The env's conditions as plain data for a bundle (export): how many envs stand on each terrain
    tile (`terrain_cells`: [level][column] counts), which sim2sim's referee draws its episodes' tiles
    from. Empty for a task without terrain. (Adaptive ranges are not among them: the referee runs
    the default randomization preset, which adapts none, and its events randomize only its own
    model, not the stand-in robot's.)"""
    if env.terrain is None:
        return {}
    t = env.terrain
    cells = torch.zeros(t.num_levels * t.terrain.num_cols, dtype=torch.long, device=t.levels.device)
    cells.index_add_(0, t.levels * t.terrain.num_cols + t.cols, torch.ones_like(t.levels))
    return {"terrain_cells": cells.view(t.num_levels, t.terrain.num_cols).tolist()}
