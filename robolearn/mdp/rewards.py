"""Reward terms: f(env, **params) -> Tensor[num_envs]. The manager multiplies by the weight."""

from __future__ import annotations

import torch

from robolearn.errors import UserError
from robolearn.mdp import state
from robolearn.mdp.observations import joint_pos, joint_vel
from robolearn.scene.entities import Joints, Sensors

TERM_KIND = "reward"
"""Every term in this module is a reward term (robolearn/mdp/kinds.py)."""


def is_alive(env) -> torch.Tensor:
    """1 while the episode has not terminated this step (time-outs still count as alive)."""
    return (~env.terminated).float()


def is_terminated(env) -> torch.Tensor:
    """1 on the step an episode terminates (use a negative weight as a failure penalty)."""
    return env.terminated.float()


def joint_pos_cos(env, joints: Joints) -> torch.Tensor:
    """Sum of cos(q): 1 per joint at q = 0 (e.g. a pole straight up), -1 at q = pi."""
    return torch.cos(joint_pos(env, joints)).sum(dim=1)


def joint_pos_l2(env, joints: Joints | None = None, relative: bool = True) -> torch.Tensor:
    """Sum of squared joint positions (relative to the default pose by default)."""
    return joint_pos(env, joints, relative=relative).square().sum(dim=1)


def joint_vel_l2(env, joints: Joints | None = None) -> torch.Tensor:
    """Sum of squared joint velocities."""
    return joint_vel(env, joints).square().sum(dim=1)


def action_l2(env) -> torch.Tensor:
    """Sum of squared actions (effort)."""
    return env.actions.action.square().sum(dim=1)


def action_rate_l2(env) -> torch.Tensor:
    """Sum of squared action changes since the previous step (smoothness)."""
    return (env.actions.action - env.actions.last_action).square().sum(dim=1)


def track_lin_vel_xy_exp(env, command: str, std: float) -> torch.Tensor:
    """exp(-|v_xy - command_xy|^2 / std^2): 1 at the commanded planar base velocity (base frame).

    The command's first two components are the target x and y velocity [m/s]."""
    error = (env.commands.get(command)[:, :2] - state.root_lin_vel_b(env)[:, :2]).square().sum(dim=1)
    return torch.exp(-error / std**2)


def track_joint_vel_exp(env, command: str, joints: Joints, std: float) -> torch.Tensor:
    """exp(-|qdot - command|^2 / std^2): 1 at the commanded joint velocities (a wheel's speed, a planar
    base's forward slide); the command has one component per named joint, in their order."""
    return torch.exp(-state.joint_vel_command_error(env, command, joints).square().sum(dim=1) / std**2)


def track_ang_vel_z_exp(env, command: str, std: float) -> torch.Tensor:
    """exp(-(w_z - command_yaw_rate)^2 / std^2), the yaw rate being the command's third component."""
    error = (env.commands.get(command)[:, 2] - state.root_ang_vel_b(env)[:, 2]).square()
    return torch.exp(-error / std**2)


def lin_vel_z_l2(env) -> torch.Tensor:
    """Squared vertical base velocity (bouncing)."""
    return state.root_lin_vel_b(env)[:, 2].square()


def ang_vel_xy_l2(env) -> torch.Tensor:
    """Squared roll and pitch rates (wobbling)."""
    return state.root_ang_vel_b(env)[:, :2].square().sum(dim=1)


def flat_orientation_l2(env) -> torch.Tensor:
    """Squared horizontal components of gravity in the base frame: 0 when the base is level."""
    return state.gravity_b(env)[:, :2].square().sum(dim=1)


def joint_torques_l2(env) -> torch.Tensor:
    """Sum of squared actuator torques on their joints, gear included [(N m)^2].

    Every policy actuator must drive a joint; for tendon- or site-driven actuators penalize
    effort with action_l2."""
    return state.actuator_force(env).square().sum(dim=1)


def joint_acc_l2(env, joints: Joints | None = None) -> torch.Tensor:
    """Sum of squared joint accelerations over the control step [(rad/s^2)^2] (1-DoF joints)."""
    dadr = env.scene.joints(joints).dof
    return ((env.physics.qvel[:, dadr] - env.prev_qvel[:, dadr]) / env.dt).square().sum(dim=1)


class joint_pos_limits:  # noqa: N801 (term names are snake_case, like the functions)
    """How far limited joints are past the middle `soft_ratio` of their range [rad], summed.

    Every limited hinge/slide joint, or the named ones; the limits are read from the model once."""

    def __init__(self, env, soft_ratio: float = 0.9, joints: Joints | None = None):
        if not 0 < soft_ratio <= 1:
            raise UserError(f"joint_pos_limits: soft_ratio={soft_ratio} is out of range; valid: 0 < soft_ratio <= 1 "
                            "(the share of each joint's range that costs nothing)")  # fmt: skip
        self.qpos, ranges = state.joint_ranges(env, joints)
        mid, half = ranges.mean(dim=1), (ranges[:, 1] - ranges[:, 0]) / 2 * soft_ratio
        self.low, self.high = mid - half, mid + half

    def __call__(self, env) -> torch.Tensor:
        q = env.physics.qpos[:, self.qpos]
        return ((self.low - q).clamp(min=0) + (q - self.high).clamp(min=0)).sum(dim=1)

    def state_dict(self) -> dict:
        return {}  # limits are constants of the model

    def load_state_dict(self, state: dict) -> None:
        pass


def undesired_contacts(env, sensors: Sensors, threshold: float = 1.0) -> torch.Tensor:
    """How many of the named touch sensors read more than `threshold` [N] (e.g. knees on the ground)."""
    return (env.physics.sensordata[:, env.scene.sensors(sensors).columns] > threshold).float().sum(dim=1)


def _asked_to_move(env, command: str) -> torch.Tensor:
    """Whether the command asks for a planar speed above 0.1 (the stepping rewards pay nothing below it)."""
    return env.commands.get(command)[:, :2].norm(dim=1) > 0.1


class feet_air_time:
    """On each foot's touchdown, (time it was in the air - target) [s]: rewards long steps.

    Zero while the command asks to stand still (planar speed below 0.1). A foot is in contact
    while its touch sensor reads more than `threshold` [N]. Keeps per-foot timers, reset with
    the episode."""

    def __init__(self, env, sensors: Sensors, command: str, target: float = 0.5, threshold: float = 1.0):
        sensors = env.scene.sensors(sensors)
        self.columns = sensors.columns
        self.command, self.target, self.threshold = command, target, threshold
        self.air_time = torch.zeros(env.num_envs, len(sensors.names), device=env.device)
        self.was_in_contact = torch.ones(env.num_envs, len(sensors.names), dtype=torch.bool, device=env.device)

    def __call__(self, env) -> torch.Tensor:
        contact = env.physics.sensordata[:, self.columns] > self.threshold
        touchdown = contact & ~self.was_in_contact
        self.air_time += env.dt
        reward = ((self.air_time - self.target) * touchdown).sum(dim=1)
        self.air_time *= ~contact
        self.was_in_contact.copy_(contact)
        return reward * _asked_to_move(env, self.command)

    def reset(self, mask: torch.Tensor) -> None:
        self.air_time.masked_fill_(mask.unsqueeze(1), 0.0)  # masked writes: no host sync (CUDA graphs)
        self.was_in_contact.masked_fill_(mask.unsqueeze(1), True)


class feet_air_time_biped:  # noqa: N801
    """While exactly one of two feet is down, the shorter of how long the stance foot has been down and
    the swing foot up [s], capped at `target`; 0 otherwise. A walk is paid on each step with one foot
    down, more as the step goes on, most when steps last `target` or more; hopping on both feet and
    shuffling on both feet earn nothing (feet_air_time pays on each touchdown and cannot tell a hop
    from a step). Standing on one foot with the other raised pays too: the velocity tracking reward
    is what makes the robot step.

    Zero while the command asks to stand still (planar speed below 0.1). A foot is in contact while
    its touch sensor reads more than `threshold` [N]. Keeps per-foot timers, which start at 0 with
    each episode."""

    def __init__(self, env, sensors: Sensors, command: str, target: float = 0.4, threshold: float = 1.0):
        sensors = env.scene.sensors(sensors)
        if env.physics.sensordata[:, sensors.columns].shape[1] != 2:  # a touch sensor reads one number
            raise UserError(f"feet_air_time_biped: sensors reads {', '.join(sensors.names)}; valid: exactly two touch "
                            "sensors, one per foot (feet_air_time takes any number)")  # fmt: skip
        if target <= 0:
            raise UserError(f"feet_air_time_biped: target={target} is out of range; valid: a step time > 0 [s]")
        self.columns = sensors.columns
        self.command, self.target, self.threshold = command, target, threshold
        self.air_time = torch.zeros(env.num_envs, 2, device=env.device)
        self.contact_time = torch.zeros(env.num_envs, 2, device=env.device)

    def __call__(self, env) -> torch.Tensor:
        contact = env.physics.sensordata[:, self.columns] > self.threshold
        self.air_time.add_(env.dt).masked_fill_(contact, 0.0)  # in place: a captured CUDA graph keeps these buffers
        self.contact_time.add_(env.dt).masked_fill_(~contact, 0.0)
        in_mode = torch.where(contact, self.contact_time, self.air_time)
        single_stance = contact.sum(dim=1) == 1
        reward = (in_mode.min(dim=1).values * single_stance).clamp(max=self.target)
        return reward * _asked_to_move(env, self.command)

    def reset(self, mask: torch.Tensor) -> None:
        self.air_time.masked_fill_(mask.unsqueeze(1), 0.0)
        self.contact_time.masked_fill_(mask.unsqueeze(1), 0.0)
