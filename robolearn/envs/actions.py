"""Policy action -> actuator controls: ctrl = clip(offset + scale * action)."""

from __future__ import annotations

import mujoco
import torch

from robolearn.config import ActionCfg
from robolearn.envs.scene import entity_ids, names


class ActionManager:
    """Holds the current and previous action and the ctrl tensor handed to the physics backend."""

    def __init__(self, cfg: ActionCfg, model: mujoco.MjModel, num_envs: int, device: torch.device,
                 default_qpos: torch.Tensor):  # fmt: skip
        ids = entity_ids(model, mujoco.mjtObj.mjOBJ_ACTUATOR, list(cfg.actuators) or None)
        self.actuator_ids = torch.tensor(ids, dtype=torch.long, device=device)
        self.actuator_names = [names(model, mujoco.mjtObj.mjOBJ_ACTUATOR)[i] for i in ids]
        self.joint_names = [self._joint_of(model, i) for i in ids]
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

    @staticmethod
    def _joint_of(model: mujoco.MjModel, actuator: int) -> str | None:
        if int(model.actuator_trntype[actuator]) != int(mujoco.mjtTrn.mjTRN_JOINT):
            return None
        return mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_JOINT, int(model.actuator_trnid[actuator, 0]))

    def process(self, action: torch.Tensor) -> None:
        self.last_action.copy_(self.action)
        self.action.copy_(action)
        target = torch.clamp(self.offset + self.scale * action, self.ctrl_low, self.ctrl_high)
        self.ctrl[:, self.actuator_ids] = target

    def reset(self, mask: torch.Tensor) -> None:
        keep = (~mask).unsqueeze(1).to(self.action.dtype)
        self.action.mul_(keep)
        self.last_action.mul_(keep)
