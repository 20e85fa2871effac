"""Metric terms: f(env, **params) -> Tensor[num_envs], one value per control step, reported by
evaluation (not rewarded). See MetricCfg.per for how they are aggregated."""

from __future__ import annotations

import torch

from robolearn.mdp import state
from robolearn.scene.entities import Joints

TERM_KIND = "metric"
"""Every term in this module is a metric term (robolearn/mdp/kinds.py)."""


def lin_vel_error_xy(env, command: str) -> torch.Tensor:
    """|commanded - actual| planar base velocity [m/s] (base frame)."""
    return (env.commands.get(command)[:, :2] - state.root_lin_vel_b(env)[:, :2]).norm(dim=1)


def ang_vel_error_z(env, command: str) -> torch.Tensor:
    """|commanded - actual| yaw rate [rad/s]."""
    return (env.commands.get(command)[:, 2] - state.root_ang_vel_b(env)[:, 2]).abs()


def joint_vel_error(env, command: str, joints: Joints) -> torch.Tensor:
    """|commanded - actual| velocity of the named joints [m/s or rad/s] (the norm over them)."""
    return state.joint_vel_command_error(env, command, joints).norm(dim=1)


def mechanical_power(env) -> torch.Tensor:
    """Sum over actuated joints of |torque * joint velocity| [W]."""
    force = state.actuator_force(env)  # checks that every policy actuator drives a joint
    return (force * env.physics.qvel[:, env.actions.joint_dof]).abs().sum(dim=1)
