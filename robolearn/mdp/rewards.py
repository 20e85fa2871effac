"""Reward terms: f(env, **params) -> Tensor[num_envs]. The manager multiplies by the weight."""

from __future__ import annotations

import torch

from robolearn.mdp.observations import joint_pos, joint_vel


def is_alive(env) -> torch.Tensor:
    """1 while the episode has not terminated this step (time-outs still count as alive)."""
    return (~env.terminated).float()


def is_terminated(env) -> torch.Tensor:
    """1 on the step an episode terminates (use a negative weight as a failure penalty)."""
    return env.terminated.float()


def joint_pos_cos(env, joints: list[str]) -> torch.Tensor:
    """Sum of cos(q): 1 per joint at q = 0 (e.g. a pole straight up), -1 at q = pi."""
    return torch.cos(joint_pos(env, joints)).sum(dim=1)


def joint_pos_l2(env, joints: list[str] | None = None, relative: bool = True) -> torch.Tensor:
    """Sum of squared joint positions (relative to the default pose by default)."""
    return joint_pos(env, joints, relative=relative).square().sum(dim=1)


def joint_vel_l2(env, joints: list[str] | None = None) -> torch.Tensor:
    """Sum of squared joint velocities."""
    return joint_vel(env, joints).square().sum(dim=1)


def action_l2(env) -> torch.Tensor:
    """Sum of squared actions (effort)."""
    return env.actions.action.square().sum(dim=1)


def action_rate_l2(env) -> torch.Tensor:
    """Sum of squared action changes since the previous step (smoothness)."""
    return (env.actions.action - env.actions.last_action).square().sum(dim=1)
