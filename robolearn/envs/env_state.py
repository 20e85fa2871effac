"""An env's checkpoint: everything a resumed run needs to continue bit-exactly.

The physics state (and per-env model parameters), the env's random generator, episode counters
and statistics, the terrain levels, and each manager's own state (manager_base.py). Loading
copies into the live tensors, so CUDA graphs captured before a resume stay valid.
"""

from __future__ import annotations

from collections.abc import Mapping

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
