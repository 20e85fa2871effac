"""env.compile: the step's tensor work through torch.compile.

The action mapping, the managers' computations, command timers and resets, and the reset events
where the backend's model-field writes are torch work (fields_traceable; not for the inertial
fields, whose constants the engine recomputes). Fused, they are a few dozen kernels instead of a
few hundred. The engine's own calls stay outside; random draws stay inside (robolearn/draws.py).
Each compiled function is traced as the rollout's steps call it (in inference mode, resetting with
record=True): the env runs construction and reset() eagerly (BatchedEnv._eager_once).
"""

from __future__ import annotations

import torch

from robolearn import draws
from robolearn.errors import UserError


def targets(env) -> dict[str, tuple[object, str]]:
    """What env.compile compiles: {name: (object, method name)}."""
    found = {"rewards.compute": (env.rewards, "compute"), "terminations.compute": (env.terminations, "compute"),
             "observations.compute": (env.observations, "compute"), "commands.step": (env.commands, "step"),
             "_apply_action": (env, "_apply_action"), "_reset_managers": (env, "_reset_managers")}  # fmt: skip
    if env.physics.fields_traceable and not env.events.inertial_after_startup():
        found["_prepare_reset"] = (env, "_prepare_reset")
    return found


def compile_env(env, only: str | None = None) -> None:
    """Compile every target of `env` (or `only` that one: scripts/determinism_probe.py looks for
    which one a difference comes from)."""
    chosen = targets(env)
    if only is not None:
        if only not in chosen:
            raise UserError(f"'{only}' is not one of env.compile's targets; valid: {', '.join(chosen)}")
        chosen = {only: chosen[only]}
    env.health.exclude_host_reads_from_compile()
    draws.register(env.generator)
    env._compiled = True
    for owner, name in chosen.values():
        setattr(owner, name, torch.compile(getattr(owner, name), dynamic=False))
