"""Preallocated rollout buffers [T, N, ...] and the minibatch iterator."""

from __future__ import annotations

from collections.abc import Iterator

import torch

FIELDS = ("policy_obs", "critic_obs", "actions", "log_probs", "values", "mu", "sigma",
          "rewards", "terminated", "truncated", "valid", "advantages", "returns")  # fmt: skip


class RolloutStorage:
    def __init__(self, num_steps: int, num_envs: int, obs_dims: dict[str, int], num_actions: int, device: torch.device):
        self.num_steps, self.num_envs, self.step = num_steps, num_envs, 0
        T, N, A = num_steps, num_envs, num_actions

        def buf(*shape: int, dtype: torch.dtype = torch.float32) -> torch.Tensor:
            return torch.zeros(T, N, *shape, dtype=dtype, device=device)

        self.policy_obs, self.critic_obs = buf(obs_dims["policy"]), buf(obs_dims["critic"])
        self.actions, self.mu, self.sigma = buf(A), buf(A), buf(A)
        self.log_probs, self.values, self.rewards = buf(), buf(), buf()
        self.terminated, self.truncated = buf(dtype=torch.bool), buf(dtype=torch.bool)
        self.valid = buf().fill_(1.0)
        """1.0, or 0.0 for a transition the env marked invalid (envs/health.py): masked out of the
        normalizers, the advantages and the loss."""
        self.advantages, self.returns = buf(), buf()

    @staticmethod
    def nbytes(num_steps: int, num_envs: int, obs_dims: dict[str, int], num_actions: int) -> int:
        """What the buffers take (float32; the two bool ones counted as float), and the flattened
        copies one update makes of the observations."""
        per_sample = 2 * (obs_dims["policy"] + obs_dims["critic"]) + 3 * num_actions + 9
        return 4 * num_steps * num_envs * per_sample

    def write(self, **fields: torch.Tensor) -> None:
        """Copy values into the current step (the env overwrites its buffers in place)."""
        for name, value in fields.items():
            getattr(self, name)[self.step].copy_(value)

    def advance(self) -> None:
        self.step += 1

    def clear(self) -> None:
        self.step = 0

    def minibatches(self, num_mini_batches: int, num_epochs: int, fields: tuple[str, ...] = FIELDS) -> Iterator[tuple]:
        """Random minibatches over all T * N samples, reshuffled each epoch (global torch RNG):
        one tuple of the named fields' samples per minibatch."""
        batch = self.num_steps * self.num_envs
        size = batch // num_mini_batches
        flat = [getattr(self, name).flatten(0, 1) for name in fields]
        for _ in range(num_epochs):
            order = torch.randperm(batch, device=self.rewards.device)
            for k in range(num_mini_batches):
                idx = order[k * size : (k + 1) * size]
                yield tuple(value[idx] for value in flat)
