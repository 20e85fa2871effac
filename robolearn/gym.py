"""Every robolearn task as a gymnasium vector env, for other RL libraries (`pip install 'robolearn[gym]'`).

    from robolearn.gym import make_vec
    envs = make_vec("cartpole", num_envs=64, overrides=["randomization=none"])
    obs, info = envs.reset(seed=0)                                   # obs [64, 4] float32
    obs, reward, terminated, truncated, info = envs.step(envs.action_space.sample())

- The env is the one `robolearn train task=<task> <overrides>` trains on (same Hydra config, same
  batched env), except that the first episodes all start at step 0 (no staggered time-outs) and,
  with observation noise on, final observations draw noise of their own from the env's sampler.
- Observations: the task's `policy` group, Box(-clip, clip, (D,), float32) per env (+-inf for the
  terms the task does not clip). `critic_obs=True` adds the critic group (privileged
  observations) as infos["critic"].
- Actions: Box(low, high, (A,), float32) per env, where [low, high] are the actions whose control,
  `offset + scale * action`, lands inside the actuators' ctrlrange: robolearn clips the control
  there, so an action beyond the bound moves the robot no further (it still counts in action
  penalties and in a `last_action` observation). An actuator without a ctrlrange is unbounded
  (-inf, inf). Actions are not clipped here; SB3 clips its samples to the space.
- Autoreset: AutoresetMode.SAME_STEP (`metadata["autoreset_mode"]`). robolearn resets an env
  inside the step that ends its episode: the returned obs is the new episode's first; the ended
  episode's last observation is infos["final_obs"] where infos["_final_obs"] (= terminated |
  truncated) is true. infos["final_obs"] is a dense [N, D] array, equal to obs in the other rows,
  so it is the observation each transition led to (bootstrap truncated episodes from it).
- Seeding: `reset(seed=s)` restores the env as it was built and seeds its sampler as the CLI's
  `seed=s` does, so the same seed gives the same episodes; `reset()` starts new episodes and
  keeps drawing from the running sampler. One seed seeds the whole batch.
- `tensors=True`: obs, rewards, flags and infos are torch tensors on the env's device, actions may
  be tensors there too; nothing is copied to the host (values are copied on the device, so a
  returned tensor is never overwritten by a later step).

- Rendering: `render_mode="rgb_array"` (make_vec, make, gymnasium.make) makes render() return
  each env's RGB frame [480, 640, 3], drawn as `robolearn play` films it (gym_frames.py), one per
  env as gymnasium's vector wrappers expect; `metadata["render_fps"]` is the control rate.

`make()` is the single-env view (num_envs=1, a `gymnasium.Env`: on an episode's end it returns the
final observation; call reset() as usual). `register_envs()` registers `robolearn/<task>` for
`gymnasium.make` and `gymnasium.make_vec`. `to_sb3()` adapts a vector env to Stable-Baselines3
(`pip install 'robolearn[sb3]'`).
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache
from typing import Any

import numpy as np
import torch
from omegaconf import DictConfig

from robolearn.app import build_env, env_seed, fits_in_memory
from robolearn.compose import compose_train
from robolearn.envs.batched_env import BatchedEnv
from robolearn.errors import UserError
from robolearn.physics import resolve_placement
from robolearn.registry import discover_tasks, get_task

try:
    import gymnasium
    from gymnasium.vector import AutoresetMode, VectorEnv
    from gymnasium.vector.utils import batch_space
except ImportError as exc:  # an optional extra: say how to get it
    raise ImportError("robolearn.gym needs gymnasium>=1.0: pip install 'robolearn[gym]'") from exc

RENDER_MODES = ("rgb_array",)
"""render() gives RGB frames (robolearn/gym_frames.py); watching live is `robolearn play`."""
ID_PREFIX = "robolearn/"
"""gymnasium ids of robolearn tasks: robolearn/<task> (register_envs)."""


def _compose(task: str, overrides: Sequence[str], extra: Sequence[str] = ()) -> DictConfig:
    """The training config of `robolearn train task=<task> <overrides> <extra>`; mistakes are one line."""
    overrides = () if overrides is None else overrides
    if isinstance(overrides, str):
        raise UserError(f"overrides are a list of Hydra overrides, e.g. ['physics=mujoco'], got the string '{overrides}'")
    if any(o.lstrip("+~").startswith("task=") for o in overrides):
        raise UserError(f"the task is make_vec's first argument ('{task}'), not an override")
    overrides = [f"task={task}", *overrides, *extra]
    get_task(task)  # an unknown task: one line naming the installed ones
    return compose_train(overrides)


def _build(cfg: DictConfig) -> BatchedEnv:
    """The env `robolearn train` would build for this config, keeping final observations."""
    backend, device = resolve_placement(cfg.physics.backend, cfg.device)
    with fits_in_memory(cfg, device):
        return build_env(cfg, backend, device, keep_final_obs=True)


def action_bounds(env: BatchedEnv) -> tuple[np.ndarray, np.ndarray]:
    """(low, high) [A]: the actions whose control `offset + scale * action` stays inside the
    actuators' ctrlrange (robolearn clips the control there); +-inf where an actuator has none."""
    actions = env.actions
    ends = torch.stack([(actions.ctrl_low - actions.offset) / actions.scale,
                        (actions.ctrl_high - actions.offset) / actions.scale])  # fmt: skip
    low, high = ends.min(0).values, ends.max(0).values  # a negative scale swaps the ends
    return low.cpu().numpy().astype(np.float32), high.cpu().numpy().astype(np.float32)


def observation_bounds(env: BatchedEnv, group: str) -> tuple[np.ndarray, np.ndarray]:
    """(low, high) [D] of an observation group: +-clip for the terms the task clips, else +-inf."""
    high = np.full(env.observation_dims()[group], np.inf, dtype=np.float32)
    for term in env.observations.layout[group]:
        if term.clip is not None:
            high[term.start : term.stop] = term.clip
    return -high, high


def _seed(seed) -> int | None:
    """reset(seed=...): one int for the whole batch (a numpy integer as a Python one, as gymnasium wants)."""
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, (int, np.integer))):
        raise UserError(f"reset(seed=...) takes one int (it seeds the whole batch), got {type(seed).__name__}")
    return None if seed is None else int(seed)


class RobolearnVectorEnv(VectorEnv):
    """A robolearn task as a gymnasium VectorEnv (see the module docstring); build it with make_vec."""

    metadata = {"autoreset_mode": AutoresetMode.SAME_STEP, "render_modes": list(RENDER_MODES)}

    def __init__(self, env: BatchedEnv, task: str, tensors: bool = False, critic_obs: bool = False,
                 render_mode: str | None = None):  # fmt: skip
        check_render_mode(render_mode)
        self.batched_env = env
        """The underlying robolearn batched env (robolearn/envs/vec_env.py)."""
        self.task, self.tensors, self.critic_obs = task, tensors, critic_obs
        self.num_envs = env.num_envs
        self.device = env.device
        self.single_observation_space = gymnasium.spaces.Box(*observation_bounds(env, "policy"), dtype=np.float32)
        self.single_action_space = gymnasium.spaces.Box(*action_bounds(env), dtype=np.float32)
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.action_space = batch_space(self.single_action_space, self.num_envs)
        self.render_mode = render_mode
        self.metadata = {**self.metadata, "render_fps": 1.0 / env.dt}
        self._frames = None
        self._closed = False
        self._initial_state = env.state_dict()  # what reset(seed=) restores

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        """Start a new episode in every env. With a seed, first restore the env as it was built and
        seed it as `robolearn train seed=<seed>` would (startup randomization included)."""
        self._check_open("reset")
        seed = _seed(seed)
        if options:
            raise UserError(f"reset() takes no options, got {sorted(options)}")
        super().reset(seed=seed)
        env = self.batched_env
        with torch.no_grad():
            if seed is not None:
                env.load_state_dict(self._initial_state)
                env.generator.manual_seed(env_seed(int(seed)))
            obs = env.reset(spread_timeouts=False)
        return self._out(obs["policy"]), self._info(obs)

    def step(self, actions):
        """One step of every env with `actions` [num_envs, num_actions] (size-1 axes may be left out
        or added: [num_envs] for a task of one action). Numpy actions must be finite; tensors are not
        read back to check (on a GPU that would wait for it every step): a non-finite one ends its
        env's episode (the env's health check, counted in health/nonfinite_resets)."""
        self._check_open("step")
        env = self.batched_env
        shape = (self.num_envs, env.num_actions)
        if not self.tensors:
            actions = np.asarray(actions)
            if actions.dtype.kind not in "fiub":
                raise ValueError(f"actions must be real numbers, got {actions.dtype}")
            if not np.isfinite(actions).all():
                raise ValueError("actions are not finite (NaN or inf); valid: real numbers, e.g. within the action space")
        with torch.no_grad():
            action = torch.as_tensor(actions, dtype=torch.float32, device=self.device)
            if [d for d in action.shape if d != 1] != [d for d in shape if d != 1]:  # (6, 2) is not (2, 6) transposed
                raise ValueError(f"actions must have shape {shape}, got {tuple(action.shape)}")
            obs, reward, terminated, truncated = env.step(action.reshape(shape))
        info = self._info(obs, terminated | truncated)
        return self._out(obs["policy"]), self._out(reward), self._out(terminated), self._out(truncated), info

    def _info(self, obs: dict[str, torch.Tensor], ended: torch.Tensor | None = None) -> dict:
        """The critic group (critic_obs) and, after a step, each group's final observation, every
        key with gymnasium's `_key` mask of the envs it holds a value for."""
        info = {}
        if self.critic_obs:
            info["critic"], info["_critic"] = self._out(obs["critic"]), self._out(self._everyone())
        if ended is not None:
            finals = {"final_obs": "policy", "final_critic": "critic"} if self.critic_obs else {"final_obs": "policy"}
            for key, group in finals.items():
                final = torch.where(ended.unsqueeze(1), self.batched_env.final_obs[group], obs[group])
                info[key], info[f"_{key}"] = self._out(final), self._out(ended)
        return info

    def _everyone(self) -> torch.Tensor:
        return torch.ones(self.num_envs, dtype=torch.bool, device=self.device)

    def _out(self, value: torch.Tensor):
        """A copy the caller owns (the env's buffers are overwritten by its next step): a tensor on
        the env's device, or a numpy array."""
        return value.clone() if self.tensors else value.to("cpu", copy=True).numpy()

    def render(self) -> tuple[np.ndarray, ...] | None:
        """With render_mode="rgb_array": one RGB frame [480, 640, 3] per environment, as gymnasium's
        vector wrappers take them (gym_frames.py); None otherwise."""
        if self.render_mode is None:
            return None
        self._check_open("render")
        if self._frames is None:
            from robolearn.gym_frames import EnvFrames

            self._frames = EnvFrames(self.batched_env)
        return tuple(self._frames.frame(i) for i in range(self.num_envs))

    def close_extras(self, **kwargs) -> None:
        if self._frames is not None:
            self._frames.close()
        self.batched_env.close()
        self._closed = True

    def _check_open(self, what: str) -> None:
        if self._closed:
            raise UserError(f"{what}() on an env that is closed; make a new one (robolearn.gym.make_vec / make)")

    def __repr__(self) -> str:
        return f"RobolearnVectorEnv({self.task}, num_envs={self.num_envs}, device={self.device})"


class RobolearnEnv(gymnasium.Env):
    """One env of a task as a plain gymnasium.Env (numpy). When an episode ends, step returns its
    final observation; reset() starts the next one (the batched env restarted it already, and
    reset() starts it afresh)."""

    metadata = {"render_modes": list(RENDER_MODES)}

    def __init__(self, vector_env: RobolearnVectorEnv):
        if vector_env.num_envs != 1 or vector_env.tensors:
            raise ValueError("RobolearnEnv wraps a numpy vector env of one env (robolearn.gym.make builds one)")
        self.vector_env = vector_env
        self.observation_space = vector_env.single_observation_space
        self.action_space = vector_env.single_action_space
        self.render_mode = vector_env.render_mode
        self.metadata = {**self.metadata, "render_fps": vector_env.metadata["render_fps"]}

    def render(self) -> np.ndarray | None:
        """With render_mode="rgb_array": the robot as an RGB frame [480, 640, 3]; None otherwise."""
        frames = self.vector_env.render()
        return None if frames is None else frames[0]

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        seed = _seed(seed)
        super().reset(seed=seed)
        obs, info = self.vector_env.reset(seed=seed, options=options)
        return obs[0], {key: value[0] for key, value in info.items() if not key.startswith("_")}

    def step(self, action):
        action = np.asarray(action)
        if [d for d in action.shape if d != 1] != [d for d in self.action_space.shape if d != 1]:
            raise ValueError(f"action must have shape {self.action_space.shape}, got {action.shape}")
        _, reward, terminated, truncated, info = self.vector_env.step(action.reshape(1, -1))
        obs = info["final_obs"]  # the next observation, or the final one when the episode ended
        extra = {"critic": info["final_critic"][0]} if self.vector_env.critic_obs else {}
        return obs[0], float(reward[0]), bool(terminated[0]), bool(truncated[0]), extra

    def close(self) -> None:
        self.vector_env.close()

    def __repr__(self) -> str:
        return f"RobolearnEnv({self.vector_env.task})"


def make_vec(task: str, num_envs: int | None = None, overrides: Sequence[str] = (), device: str | None = None,
             tensors: bool = False, critic_obs: bool = False, render_mode: str | None = None) -> RobolearnVectorEnv:  # fmt: skip
    """The task as a gymnasium VectorEnv. `overrides` are `robolearn train`'s Hydra overrides
    (`physics=mujoco`, `randomization=none`, `seed=3`, `task.episode_length_s=2`, ...);
    `num_envs` None keeps the task's own number; `device` None keeps the config's (auto: where the
    physics runs); `tensors`: torch tensors on that device instead of numpy arrays; `critic_obs`:
    the critic observation group in infos["critic"] (and infos["final_critic"]); `render_mode`
    "rgb_array": render() gives each environment's frame."""
    check_render_mode(render_mode)
    extra = ["env.stagger_timeouts=false"] + ([f"env.num_envs={num_envs}"] if num_envs is not None else [])
    extra += [f"device={device}"] if device is not None else []
    cfg = _compose(task, overrides, extra)
    return RobolearnVectorEnv(_build(cfg), task, tensors=tensors, critic_obs=critic_obs, render_mode=render_mode)


def make(task: str, overrides: Sequence[str] = (), device: str | None = None, critic_obs: bool = False,
         render_mode: str | None = None) -> RobolearnEnv:  # fmt: skip
    """One env of the task as a gymnasium.Env (numpy); arguments as for make_vec."""
    return RobolearnEnv(make_vec(task, 1, overrides, device, tensors=False, critic_obs=critic_obs, render_mode=render_mode))


def check_render_mode(render_mode: str | None) -> None:
    if render_mode is not None and render_mode not in RENDER_MODES:
        raise UserError(f"render_mode={render_mode!r} is not offered; valid: {', '.join(map(repr, RENDER_MODES))} "
                        "or None (robolearn play mode=viewer or mode=web to watch live)")  # fmt: skip


def register_envs() -> list[str]:
    """Register every installed task with gymnasium as `robolearn/<task>`, so that
    `gymnasium.make("robolearn/cartpole", overrides=[...])` and
    `gymnasium.make_vec("robolearn/cartpole", num_envs=64, vectorization_mode="vector_entry_point")`
    work; returns the ids. Calling it again replaces these registrations."""
    ids = []
    for name in sorted(discover_tasks()):
        env_id = ID_PREFIX + name
        gymnasium.registry.pop(env_id, None)
        gymnasium.register(env_id, entry_point="robolearn.gym:make", vector_entry_point="robolearn.gym:make_vec",
                           kwargs={"task": name})  # fmt: skip
        ids.append(env_id)
    return ids


def to_sb3(env: RobolearnVectorEnv):
    """The vector env as a Stable-Baselines3 VecEnv (SB3 2.x takes its own VecEnv type, not a
    gymnasium VectorEnv). Ended envs carry SB3's `terminal_observation` and `TimeLimit.truncated`
    infos, so SB3 bootstraps time-outs; wrap it in SB3's VecMonitor for episode returns."""
    if env.tensors:
        raise ValueError("to_sb3 needs a numpy vector env (make_vec(..., tensors=False))")
    return _sb3_adapter()(env)


@cache
def _sb3_adapter() -> type:
    """The adapter class, defined on first use: stable-baselines3 is an optional extra."""
    try:
        from stable_baselines3.common.vec_env import VecEnv as SB3VecEnv
    except ImportError as exc:
        raise ImportError("robolearn.gym.to_sb3 needs stable-baselines3: pip install 'robolearn[sb3]'") from exc

    class RobolearnSB3VecEnv(SB3VecEnv):
        def __init__(self, env: RobolearnVectorEnv):
            self.env = env
            super().__init__(env.num_envs, env.single_observation_space, env.single_action_space)

        def reset(self):
            obs, _ = self.env.reset(seed=self._seeds[0])  # SB3 seeds env i with seed + i: one batch, one seed
            self._reset_seeds()
            self._reset_options()
            return obs

        def step_async(self, actions: np.ndarray) -> None:
            self._actions = actions

        def step_wait(self):
            obs, reward, terminated, truncated, info = self.env.step(self._actions)
            dones = terminated | truncated
            infos: list[dict] = [{} for _ in range(self.num_envs)]
            for i in np.flatnonzero(dones):
                infos[i] = {"terminal_observation": info["final_obs"][i],
                            "TimeLimit.truncated": bool(truncated[i] and not terminated[i])}  # fmt: skip
            return obs, reward, dones, infos

        def close(self) -> None:
            self.env.close()

        def get_attr(self, attr_name: str, indices=None) -> list:
            return [getattr(self.env, attr_name) for _ in self._get_indices(indices)]

        def set_attr(self, attr_name: str, value, indices=None) -> None:
            setattr(self.env, attr_name, value)

        def env_method(self, method_name: str, *method_args, indices=None, **method_kwargs) -> list:
            result = getattr(self.env, method_name)(*method_args, **method_kwargs)  # once: one batched env
            return [result for _ in self._get_indices(indices)]

        def env_is_wrapped(self, wrapper_class, indices=None) -> list[bool]:
            return [False for _ in self._get_indices(indices)]

    return RobolearnSB3VecEnv
