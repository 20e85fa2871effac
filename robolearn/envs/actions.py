"""Policy action -> actuator controls: ctrl = clip(offset + scale * action), optionally delayed.

Actuator latency: with a delay of d physics steps, the ctrl computed at control step t takes
effect at physics step t * decimation + d. Until then the previous controls keep acting, so the
physics gets one ctrl per physics step ([N, decimation, nu]); every backend runs that the same way.
"""

from __future__ import annotations

import mujoco
import torch

from robolearn.config import ActionCfg
from robolearn.envs.manager_base import ManagerBase
from robolearn.scene.lookup import as_index, entity_ids, names


class ActionManager(ManagerBase):
    """Holds the current and previous action and the ctrl tensor handed to the physics backend."""

    KIND = "action"
    STATE = ("action", "last_action", "ctrl", "history", "delay")

    def __init__(self, cfg: ActionCfg, model: mujoco.MjModel, num_envs: int, device: torch.device,
                 default_qpos: torch.Tensor, decimation: int = 1):  # fmt: skip
        super().__init__(None)
        ids = entity_ids(model, mujoco.mjtObj.mjOBJ_ACTUATOR, list(cfg.actuators) or None)
        self.actuator_ids = torch.tensor(ids, dtype=torch.long, device=device)
        self.actuator_names = [names(model, mujoco.mjtObj.mjOBJ_ACTUATOR)[i] for i in ids]
        self.joint_names = [self._joint_of(model, i) for i in ids]
        joints = [int(model.actuator_trnid[a, 0]) for a in ids]
        on_joints = all(int(model.actuator_trntype[a]) == int(mujoco.mjtTrn.mjTRN_JOINT) for a in ids)
        self.joint_qpos = as_index([int(model.jnt_qposadr[j]) for j in joints], device) if on_joints else None
        """qpos addresses of the joints the policy's actuators drive, in action order (None when an
        actuator drives a tendon or a site)."""
        self.joint_dof = as_index([int(model.jnt_dofadr[j]) for j in joints], device) if on_joints else None
        """dof addresses of those joints, in action order (None as for joint_qpos)."""
        self.force_limited = torch.as_tensor(model.actuator_forcelimited[ids].astype(bool), device=device)
        """Which policy actuators MuJoCo clamps to their forcerange."""
        self.scale = torch.full((len(ids),), float(cfg.scale), device=device)
        self.offset = torch.zeros(len(ids), device=device)
        if cfg.use_default_offset:
            for k, a in enumerate(ids):
                if int(model.actuator_trntype[a]) == int(mujoco.mjtTrn.mjTRN_JOINT):
                    self.offset[k] = float(default_qpos[model.jnt_qposadr[model.actuator_trnid[a, 0]]])
        low = torch.full((len(ids),), -torch.inf, device=device)
        high = torch.full((len(ids),), torch.inf, device=device)
        if cfg.clip_to_ctrlrange:
            for k, a in enumerate(ids):
                if model.actuator_ctrllimited[a]:
                    low[k], high[k] = (float(v) for v in model.actuator_ctrlrange[a])
        self.ctrl_low, self.ctrl_high = low, high
        self.num_actions = len(ids)
        self.action = torch.zeros(num_envs, self.num_actions, device=device)
        self.last_action = torch.zeros_like(self.action)
        self.ctrl = torch.zeros(num_envs, model.nu, device=device)
        self.rest_ctrl = torch.zeros(model.nu, device=device)
        """The controls of a zero action: what acts before an episode's first delayed action lands."""
        self.rest_ctrl[self.actuator_ids] = torch.clamp(self.offset, low, high)
        self.decimation = decimation
        self.delay = torch.zeros(num_envs, dtype=torch.long, device=device)
        """Actuator latency of each env in physics steps (set by the randomize_action_delay event)."""
        self.history = torch.zeros(0, num_envs, model.nu, device=device)
        """ctrl of the previous control steps, newest first: [ceil(max delay / decimation), N, nu]."""
        self.physics_ctrl = self.ctrl
        """What the physics gets: ctrl [N, nu], or with latency one ctrl per physics step [N, decimation, nu]."""

    @staticmethod
    def _joint_of(model: mujoco.MjModel, actuator: int) -> str | None:
        if int(model.actuator_trntype[actuator]) != int(mujoco.mjtTrn.mjTRN_JOINT):
            return None
        return mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_JOINT, int(model.actuator_trnid[actuator, 0]))

    def enable_delay(self, max_steps: int) -> None:
        """Keep enough past controls to delay actions by up to max_steps physics steps (call before
        the first step: the buffers it allocates are what a captured step reads)."""
        depth = -(-max_steps // self.decimation)
        if depth > self.history.shape[0]:
            n, nu = self.ctrl.shape
            self.history = self.rest_ctrl.expand(depth, n, nu).clone()
            self.physics_ctrl = torch.zeros(n, self.decimation, nu, device=self.ctrl.device)
            self._substep = torch.arange(self.decimation, device=self.ctrl.device)
            self._env_index = torch.arange(n, device=self.ctrl.device).unsqueeze(1)

    def process(self, action: torch.Tensor) -> None:
        self.last_action.copy_(self.action)
        self.action.copy_(action)
        if self.history.shape[0]:
            self.history.copy_(torch.cat([self.ctrl.unsqueeze(0), self.history[:-1]]))
        target = torch.clamp(self.offset + self.scale * action, self.ctrl_low, self.ctrl_high)
        self.ctrl[:, self.actuator_ids] = target
        if self.history.shape[0]:
            # physics step s of this control step applies the ctrl of ceil((delay - s) / decimation)
            # control steps ago (0 = this one)
            lag = torch.div(self._substep - self.delay.unsqueeze(1), self.decimation, rounding_mode="floor").neg()
            lag.clamp_(0, self.history.shape[0])
            stacked = torch.cat([self.ctrl.unsqueeze(0), self.history])  # [1 + depth, N, nu]
            self.physics_ctrl.copy_(stacked[lag, self._env_index])

    def reset(self, mask: torch.Tensor) -> None:
        keep = (~mask).unsqueeze(1).to(self.action.dtype)
        self.action.mul_(keep)
        self.last_action.mul_(keep)
        if self.history.shape[0]:  # a new episode's delayed start holds the rest pose
            self.ctrl.copy_(torch.where(mask.unsqueeze(1), self.rest_ctrl, self.ctrl))
            self.history.copy_(torch.where(mask.view(1, -1, 1), self.rest_ctrl, self.history))
