"""Actor-critic networks: separate MLPs, observation normalizers, a state-independent log std."""

from __future__ import annotations

import torch
from torch import nn

from robolearn.errors import UserError

_ACTIVATIONS = {"elu": nn.ELU, "relu": nn.ReLU, "tanh": nn.Tanh}


def mlp(inputs: int, hidden: list[int], outputs: int, activation: str) -> nn.Sequential:
    if activation not in _ACTIVATIONS:
        raise UserError(f"unknown activation '{activation}'; valid: {', '.join(_ACTIVATIONS)}")
    layers: list[nn.Module] = []
    for size in hidden:
        layers += [nn.Linear(inputs, size), _ACTIVATIONS[activation]()]
        inputs = size
    layers.append(nn.Linear(inputs, outputs))
    return nn.Sequential(*layers)


class EmpiricalNormalization(nn.Module):
    """(x - mean) / std with running statistics over every sample seen while `update` is called."""

    def __init__(self, dim: int, eps: float = 1e-8, enabled: bool = True):
        super().__init__()
        self.enabled = enabled
        self.eps = eps
        self.register_buffer("mean", torch.zeros(dim))
        self.register_buffer("var", torch.ones(dim))
        self.register_buffer("count", torch.zeros((), dtype=torch.float64))

    @torch.no_grad()
    def update(self, x: torch.Tensor) -> None:
        if not self.enabled:
            return
        n = x.shape[0]
        batch_mean, batch_var = x.mean(dim=0), x.var(dim=0, unbiased=False)
        total = self.count + n
        w = (n / total).float()
        delta = batch_mean - self.mean
        self.mean += w * delta
        self.var.copy_((1 - w) * self.var + w * batch_var + w * (1 - w) * delta.square())
        self.count.copy_(total)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not self.enabled:
            return x
        return (x - self.mean) / torch.sqrt(self.var + self.eps)


class ActorCritic(nn.Module):
    def __init__(
        self,
        actor_obs_dim: int,
        critic_obs_dim: int,
        num_actions: int,
        actor_hidden_dims: list[int],
        critic_hidden_dims: list[int],
        activation: str = "elu",
        init_noise_std: float = 1.0,
        normalize_observations: bool = True,
    ):
        super().__init__()
        self.actor_normalizer = EmpiricalNormalization(actor_obs_dim, enabled=normalize_observations)
        self.critic_normalizer = EmpiricalNormalization(critic_obs_dim, enabled=normalize_observations)
        self.actor = mlp(actor_obs_dim, list(actor_hidden_dims), num_actions, activation)
        self.critic = mlp(critic_obs_dim, list(critic_hidden_dims), 1, activation)
        self.log_std = nn.Parameter(torch.full((num_actions,), float(init_noise_std)).log())

    @classmethod
    def from_config(cls, algo, obs_dims: dict[str, int], num_actions: int) -> ActorCritic:
        return cls(
            obs_dims["policy"], obs_dims["critic"], num_actions, algo.actor_hidden_dims, algo.critic_hidden_dims,
            algo.activation, algo.init_noise_std, algo.normalize_observations,
        )  # fmt: skip

    def update_normalizers(self, obs: dict[str, torch.Tensor]) -> None:
        self.actor_normalizer.update(obs["policy"])
        self.critic_normalizer.update(obs["critic"])

    def action_mean(self, policy_obs: torch.Tensor) -> torch.Tensor:
        """The deterministic policy (what is exported)."""
        return self.actor(self.actor_normalizer(policy_obs))

    def distribution(self, policy_obs: torch.Tensor) -> torch.distributions.Normal:
        mean = self.action_mean(policy_obs)
        return torch.distributions.Normal(mean, self.log_std.exp().expand_as(mean))

    def value(self, critic_obs: torch.Tensor) -> torch.Tensor:
        return self.critic(self.critic_normalizer(critic_obs)).squeeze(-1)


class InferencePolicy(nn.Module):
    """normalizer + actor -> mean action: the graph that is exported and deployed."""

    def __init__(self, actor_critic: ActorCritic):
        super().__init__()
        self.normalizer = actor_critic.actor_normalizer
        self.actor = actor_critic.actor

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return self.actor(self.normalizer(obs))
