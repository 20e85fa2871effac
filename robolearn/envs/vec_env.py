"""The batched environment interface the runner consumes (it knows nothing of physics).

    obs = env.reset()                     # dict: "policy" [N, Dp], "critic" [N, Dc]
    obs, reward, terminated, truncated = env.step(action)   # action [N, A]

- Every tensor has a leading dimension of `num_envs` and lives on `env.device`. Returned tensors
  are the env's own buffers, overwritten by the next `step`: copy what must outlive it.
- `reward` [N] float: the reward of the step just taken.
- `terminated` [N] bool: the episode ended in a terminal state (fell, out of bounds). The return
  is cut here: no value is bootstrapped.
- `truncated` [N] bool: the episode hit its time limit (a time-out) without terminating. The
  state was not terminal, so the learner bootstraps from its value estimate.
- `invalid` [N] bool (optional attribute, read after each `step`): the transition just taken must
  not be learned from (its simulation diverged, or its reward or observation was not finite); that
  env was terminated and reset. The learner masks it out (robolearn/envs/health.py).
- `steps_on_host_threads` (optional attribute): `step` runs on this machine's CPU cores in a
  thread pool of its own; the runner then keeps PyTorch to one CPU thread while collecting, so
  that PyTorch's idle threads, which spin after each op, do not compete with it for the cores.
- Environments that ended are reset inside `step`; the returned `obs` is already the first
  observation of their next episode.
- `pop_episode_stats()` returns `episodes` (how many ended since the last call) and, once any
  episode has ended, means over the last K finished episodes (return, length, each reward term,
  each termination term's rate). It is the only call that reads the device; the runner makes it
  once per iteration.
- `state_dict()` / `load_state_dict()` capture everything needed to continue bit-exactly;
  `current_observations()` returns the observations of the restored state.
"""

from __future__ import annotations

from typing import Protocol

import torch


class VecEnv(Protocol):
    num_envs: int
    num_actions: int
    device: torch.device
    max_episode_length: int

    def reset(self) -> dict[str, torch.Tensor]: ...

    def step(
        self, action: torch.Tensor
    ) -> tuple[dict[str, torch.Tensor], torch.Tensor, torch.Tensor, torch.Tensor]: ...

    def current_observations(self) -> dict[str, torch.Tensor]: ...

    def observation_dims(self) -> dict[str, int]: ...

    def pop_episode_stats(self) -> dict[str, float]: ...

    def logged_names(self) -> list[str]: ...

    def state_dict(self) -> dict: ...

    def load_state_dict(self, state: dict) -> None: ...
