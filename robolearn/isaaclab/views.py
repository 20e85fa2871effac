"""What `robolearn play` reads from an env (model, physics state, reward terms, commands), for an
Isaac Lab task: the MuJoCo model Newton's MuJoCo solver built from the USD stage (its collision
geometry: what the physics sees), that solver's per-world state, and Isaac Lab's reward and
command managers."""

from __future__ import annotations

import torch

from robolearn.errors import UserError


def mujoco_solver():
    """Newton's MuJoCo solver of the running Isaac Lab simulation."""
    from isaaclab_newton.physics import NewtonManager

    solver = getattr(NewtonManager, "_solver", None)
    if solver is None or not hasattr(solver, "mj_model"):
        raise UserError(f"play draws Isaac Lab tasks through Newton's MuJoCo solver; this task runs on "
                        f"{type(solver).__name__ if solver is not None else 'no Newton solver'}")  # fmt: skip
    return solver


class PhysicsView:
    """qpos [N, nq] and qvel [N, nv] of every world, in MuJoCo's layout (the solver's mjw_data)."""

    @property
    def qpos(self) -> torch.Tensor:
        return torch.as_tensor(mujoco_solver().mjw_data.qpos.numpy())

    @property
    def qvel(self) -> torch.Tensor:
        return torch.as_tensor(mujoco_solver().mjw_data.qvel.numpy())


class RewardView:
    """Each reward term's last value; `values * weights` is its share of the step's reward (Isaac Lab
    sums weighted term rates times the step time)."""

    def __init__(self, manager, dt: float):
        self.manager = manager
        self.names = list(manager.active_terms)
        self.weights = torch.full((len(self.names),), dt)

    @property
    def values(self) -> torch.Tensor:
        return self.manager._step_reward.T.cpu()


class CommandView:
    def __init__(self, manager):
        self.manager = manager
        self.names = list(manager.active_terms)

    def get(self, name: str) -> torch.Tensor:
        return self.manager.get_command(name)

    def hold(self, name: str, value) -> None:
        raise UserError("command= scripts robolearn's own commands; an Isaac Lab task samples its commands itself "
                        "(leave command= out)")  # fmt: skip
