"""Policy action -> actuator controls: ctrl = clip(offset + scale * action), optionally delayed.

scale, offset and clip are per actuator: one value for all, or set by joint/actuator name or
pattern (config_task.ActionCfg); they reach the bundle's robot.yaml per actuator.

Actuator latency: with a delay of d physics steps, the ctrl computed at control step t takes
effect at physics step t * decimation + d. Until then the previous controls keep acting, so the
physics gets one ctrl per physics step ([N, decimation, nu]); every backend runs that the same way.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

import mujoco
import torch

from robolearn.config_task import ActionCfg
from robolearn.errors import UserError
from robolearn.envs.manager_base import ManagerBase
from robolearn.scene.lookup import as_index, entity_ids, names
from robolearn_deploy.actuator_kinds import holds_a_target


class _PerActuator:
    """Resolves a per-actuator setting given as one value or as {name or pattern: value}: a key
    matches an actuator when it matches the actuator's name or its joint's name in full."""

    def __init__(self, actuators: list[str], joints: list[str | None]):
        self.actuators, self.joints = actuators, joints

    def values(self, setting, key: str, default) -> list:
        if not isinstance(setting, Mapping):
            return [setting] * len(self.actuators)
        out, owner = [default] * len(self.actuators), [None] * len(self.actuators)
        for pattern, value in setting.items():
            hits = [k for k, (a, j) in enumerate(zip(self.actuators, self.joints))
                    if re.fullmatch(str(pattern), a) or (j is not None and re.fullmatch(str(pattern), j))]  # fmt: skip
            if not hits:
                listed = ", ".join(a if j is None else f"{a} ({j})" for a, j in zip(self.actuators, self.joints))
                raise UserError(f"task.action.{key}: '{pattern}' matches no policy actuator or its joint; "
                                f"actuators (joints): {listed}")  # fmt: skip
            for k in hits:
                if owner[k] is not None:
                    raise UserError(f"task.action.{key}: actuator '{self.actuators[k]}' is matched by both "
                                    f"'{owner[k]}' and '{pattern}'; make the patterns exclusive")  # fmt: skip
                out[k], owner[k] = (list(value) if isinstance(value, Sequence) else value), pattern
        return out


class ActionManager(ManagerBase):
    """Holds the current and previous action and the ctrl tensor handed to the physics backend."""

    KIND = "action"
    STATE = ("action", "last_action", "ctrl", "history", "delay")

    def __init__(self, cfg: ActionCfg, model: mujoco.MjModel, num_envs: int, device: torch.device,
                 default_qpos: torch.Tensor, decimation: int = 1):  # fmt: skip
        super().__init__(None)
        if model.nu == 0:
            raise UserError("the task's model has no actuators, so the policy has nothing to drive; add <actuator> "
                            "elements (e.g. <position joint=... kp=...>) to the MJCF or in the task's edit_spec")  # fmt: skip
        ids = entity_ids(model, mujoco.mjtObj.mjOBJ_ACTUATOR, list(cfg.actuators) or None)
        self.actuator_ids = torch.tensor(ids, dtype=torch.long, device=device)
        self.actuator_names = [names(model, mujoco.mjtObj.mjOBJ_ACTUATOR)[i] for i in ids]
        self.joint_names = [self._joint_of(model, i) for i in ids]
        joints = [int(model.actuator_trnid[a, 0]) for a in ids]
        on_joints = all(joint is not None for joint in self.joint_names)
        self.joint_qpos = as_index([int(model.jnt_qposadr[j]) for j in joints], device) if on_joints else None
        """qpos addresses of the joints the policy's actuators drive, in action order (None when an
        actuator drives a tendon, a site or a ball joint)."""
        self.joint_dof = as_index([int(model.jnt_dofadr[j]) for j in joints], device) if on_joints else None
        """dof addresses of those joints, in action order (None as for joint_qpos)."""
        self.force_limited = torch.as_tensor(model.actuator_forcelimited[ids].astype(bool), device=device)
        """Which policy actuators MuJoCo clamps to their forcerange."""
        self.gear = torch.as_tensor(model.actuator_gear[ids, 0], dtype=torch.float32, device=device)
        """The policy actuators' gear: a joint actuator's length is gear * q, its torque on the joint gear * force."""
        matched = _PerActuator(self.actuator_names, self.joint_names)
        self.scale = torch.tensor(matched.values(cfg.scale, "scale", 1.0), dtype=torch.float32, device=device)
        self.offset = torch.tensor(matched.values(cfg.offset, "offset", 0.0), dtype=torch.float32, device=device)
        if cfg.use_default_offset:  # a position servo's ctrl is a joint position; a motor's or a wheel's is not
            for k, a in enumerate(ids):
                if self.joint_names[k] is not None and holds_a_target(model, a):
                    self.offset[k] += float(default_qpos[model.jnt_qposadr[model.actuator_trnid[a, 0]]])
        low = torch.full((len(ids),), -torch.inf, device=device)
        high = torch.full((len(ids),), torch.inf, device=device)
        if cfg.clip_to_ctrlrange:
            for k, a in enumerate(ids):
                if model.actuator_ctrllimited[a]:
                    low[k], high[k] = (float(v) for v in model.actuator_ctrlrange[a])
        for k, bounds in enumerate(matched.values(cfg.clip or {}, "clip", None)):
            if bounds is not None:
                low[k], high[k] = max(float(low[k]), bounds[0]), min(float(high[k]), bounds[1])
                if low[k] > high[k]:
                    raise UserError(f"task.action.clip {list(bounds)} of actuator '{self.actuator_names[k]}' lies "
                                    f"outside its ctrlrange {list(model.actuator_ctrlrange[ids[k]])}")  # fmt: skip
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
        """The hinge or slide joint an actuator drives; None for a tendon, site or body transmission
        and for a ball or free joint (whose qpos is a quaternion, not one coordinate)."""
        if int(model.actuator_trntype[actuator]) != int(mujoco.mjtTrn.mjTRN_JOINT):
            return None
        joint = int(model.actuator_trnid[actuator, 0])
        if int(model.jnt_type[joint]) not in (int(mujoco.mjtJoint.mjJNT_HINGE), int(mujoco.mjtJoint.mjJNT_SLIDE)):
            return None
        return mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_JOINT, joint)

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
