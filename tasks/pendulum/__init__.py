"""Pendulum swing-up and hold with a motor too weak to lift it directly."""

from pathlib import Path

import torch

from robolearn.mdp.observations import joint_pos
from robolearn.registry import TaskPlugin


def upright_bonus(env, joints: list[str], threshold: float) -> torch.Tensor:
    """1 while the (wrapped) hinge angle is within `threshold` rad of straight up: rewards holding."""
    angle = torch.remainder(joint_pos(env, joints) + torch.pi, 2 * torch.pi) - torch.pi
    return (angle.abs() < threshold).all(dim=1).float()


TASK = TaskPlugin(
    config=Path(__file__).with_name("pendulum.yaml"),
    terms={"upright_bonus": upright_bonus},
)
PARTIAL = TaskPlugin(config=Path(__file__).with_name("partial.yaml"))  # extends pendulum: its terms too
