"""Evaluation metrics of an Isaac Lab task, in robolearn's form (evaluate.py reads them).

Isaac Lab logs its own per-episode Metrics/ while training (reported under isaaclab/); robolearn's
evaluation needs a value per control step. A task whose commands include a base-velocity term
(one with a `vel_command_b` [N, 3] command and a `robot` asset, as Isaac Lab's
UniformVelocityCommand) gets the two tracking errors robolearn's locomotion tasks report:

    lin_vel_error  |commanded - actual| planar base velocity [m/s], base frame
    ang_vel_error  |commanded - actual| yaw rate [rad/s]

Values are read after Isaac Lab's step, which has already reset the environments that ended: at
an episode's last step the value is of the next episode's first state (one step in an episode's
~1,000; robolearn's own envs score the pre-reset state). Other tasks have no metrics.
"""

from __future__ import annotations

import torch


class NoMetrics:
    """No metric terms (a task without a base-velocity command)."""

    enabled = False

    def __init__(self, num_envs: int, device: torch.device):
        self.names, self.per_meter, self.per_final = [], [], []
        self.values = self.window_mean = torch.zeros(0, num_envs, device=device)
        self.distance = torch.zeros(num_envs, device=device)

    def update(self) -> None:
        pass


class VelocityMetrics(NoMetrics):
    """lin_vel_error and ang_vel_error of one base-velocity command term."""

    def __init__(self, term, num_envs: int, device: torch.device):
        super().__init__(num_envs, device)
        self.term = term
        self.names, self.per_meter, self.per_final = ["lin_vel_error", "ang_vel_error"], [False, False], [False, False]
        self.values = torch.zeros(2, num_envs, device=device)
        self.window_mean = torch.zeros_like(self.values)

    def update(self) -> None:
        if not self.enabled:
            return
        data = self.term.robot.data
        command = self.term.vel_command_b
        self.values[0] = (command[:, :2] - _torch(data.root_lin_vel_b)[:, :2]).norm(dim=1)
        self.values[1] = (command[:, 2] - _torch(data.root_ang_vel_b)[:, 2]).abs()


def _torch(value) -> torch.Tensor:
    """Isaac Lab 3's asset data are Warp arrays with a `.torch` view; older ones are tensors."""
    return value if isinstance(value, torch.Tensor) else value.torch


def task_metrics(command_manager, num_envs: int, device: torch.device) -> NoMetrics:
    """VelocityMetrics of the task's base-velocity command (the one named base_velocity where there
    are several), else NoMetrics."""
    terms = {name: command_manager.get_term(name) for name in command_manager.active_terms}
    velocity = {n: t for n, t in terms.items() if _is_velocity(t)}
    if not velocity:
        return NoMetrics(num_envs, device)
    term = velocity.get("base_velocity", next(iter(velocity.values())))
    return VelocityMetrics(term, num_envs, device)


def _is_velocity(term) -> bool:
    command = getattr(term, "vel_command_b", None)
    return isinstance(command, torch.Tensor) and command.ndim == 2 and command.shape[1] == 3 and hasattr(term, "robot")
