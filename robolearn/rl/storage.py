"""Preallocated rollout buffers [T, N, ...] and the minibatch iterators: random samples for
feed-forward networks, whole sequences of environment steps for recurrent ones."""

from __future__ import annotations

from collections.abc import Iterator

import torch

FIELDS = ("policy_obs", "critic_obs", "actions", "log_probs", "values", "mu", "sigma",
          "rewards", "terminated", "truncated", "valid", "advantages", "returns")  # fmt: skip


class RolloutStorage:
    def __init__(self, num_steps: int, num_envs: int, obs_dims: dict[str, int], num_actions: int, device: torch.device,
                 state_shapes: dict[str, list[tuple[int, ...]]] | None = None):  # fmt: skip
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
        shapes = state_shapes or {}
        self.actor_state = tuple(buf(*shape) for shape in shapes.get("actor", ()))
        """The recurrent actor's state before each step ([T, N, layers, hidden] per state tensor; ()
        for a feed-forward actor): where each training sequence starts from."""
        self.critic_state = tuple(buf(*shape) for shape in shapes.get("critic", ()))

    @staticmethod
    def nbytes(num_steps: int, num_envs: int, obs_dims: dict[str, int], num_actions: int, state_size: int = 0) -> int:
        """What the buffers take (float32; the two bool ones counted as float), and the flattened
        copies one update makes of the observations; state_size: the recurrent states' values per
        environment."""
        per_sample = 2 * (obs_dims["policy"] + obs_dims["critic"]) + 3 * num_actions + 9 + state_size
        return 4 * num_steps * num_envs * per_sample

    def write(self, **fields: torch.Tensor) -> None:
        """Copy values into the current step (the env overwrites its buffers in place)."""
        for name, value in fields.items():
            getattr(self, name)[self.step].copy_(value)

    def write_states(self, actor_state: tuple, critic_state: tuple) -> None:
        for buffer, value in zip((*self.actor_state, *self.critic_state), (*actor_state, *critic_state)):
            buffer[self.step].copy_(value)

    def advance(self) -> None:
        self.step += 1

    def clear(self) -> None:
        self.step = 0

    def minibatches(self, num_mini_batches: int, num_epochs: int, fields: tuple[str, ...] = FIELDS,
                    capturable: bool = False) -> Iterator[tuple]:  # fmt: skip
        """Random minibatches over all T * N samples, reshuffled each epoch (global torch RNG):
        one tuple of the named fields' samples per minibatch. `capturable`: shuffle by sorting
        random keys, which a CUDA graph can capture."""
        batch = self.num_steps * self.num_envs
        size = batch // num_mini_batches
        flat = [getattr(self, name).flatten(0, 1) for name in fields]
        for _ in range(num_epochs):
            if capturable:
                order = torch.rand(batch, device=self.rewards.device).argsort(stable=True)
            else:
                order = torch.randperm(batch, device=self.rewards.device)
            for k in range(num_mini_batches):
                idx = order[k * size : (k + 1) * size]
                yield tuple(value[idx] for value in flat)

    def sequences(self, length: int, num_mini_batches: int, num_epochs: int, fields: tuple[str, ...] = FIELDS) -> Iterator[tuple]:
        """Random minibatches of whole sequences: the rollout of each environment cut into pieces of
        `length` steps, each piece kept in order. Yields ((starts [L, B], actor state, critic state),
        *fields [L, B, ...]): the states the rollout had before each piece's first step ([B, layers,
        hidden] each), and where an episode begins inside a piece (after a terminated or truncated
        step; the rollout already restarted the stored state of a piece that begins with one)."""
        T, N = self.num_steps, self.num_envs
        pieces = T // length

        def cut(x: torch.Tensor) -> torch.Tensor:  # [T, N, ...] -> [L, pieces * N, ...]
            return x.reshape(pieces, length, N, *x.shape[2:]).transpose(0, 1).reshape(length, pieces * N, *x.shape[2:])

        ended = self.terminated | self.truncated
        starts = torch.zeros_like(ended)
        starts[1:] = ended[:-1]
        starts = cut(starts)
        starts[0] = False
        states = [x[::length].flatten(0, 1) for x in (*self.actor_state, *self.critic_state)]  # [pieces * N, ...]
        split = len(self.actor_state)
        cuts = [cut(getattr(self, name)) for name in fields]
        count = pieces * N
        size = count // num_mini_batches
        for _ in range(num_epochs):
            order = torch.randperm(count, device=self.rewards.device)
            for k in range(num_mini_batches):
                idx = order[k * size : (k + 1) * size]
                chosen = [x[idx] for x in states]
                yield ((starts[:, idx], tuple(chosen[:split]), tuple(chosen[split:])), *(x[:, idx] for x in cuts))
