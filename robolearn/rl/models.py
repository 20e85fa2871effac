"""Actor-critic networks: separate MLPs, observation normalizers, a state-independent log std."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from robolearn.errors import UserError

_ACTIVATIONS = {"elu": (nn.ELU, F.elu), "relu": (nn.ReLU, F.relu), "tanh": (nn.Tanh, torch.tanh)}
LOG_SQRT_2PI = 0.5 * math.log(2 * math.pi)


class MLP(nn.Sequential):
    """Linear layers with an activation between them. Its layers are a Sequential's (state dict
    keys 0.weight, 2.weight, ...); forward calls them as functions, which saves the per-module
    call overhead that dominates for small networks and batches."""

    def __init__(self, inputs: int, hidden: list[int], outputs: int, activation: str):
        if activation not in _ACTIVATIONS:
            raise UserError(f"unknown activation '{activation}'; valid: {', '.join(_ACTIVATIONS)}")
        module, self_act = _ACTIVATIONS[activation]
        layers: list[nn.Module] = []
        for size in hidden:
            layers += [nn.Linear(inputs, size), module()]
            inputs = size
        layers.append(nn.Linear(inputs, outputs))
        super().__init__(*layers)
        self._act = self_act
        self._linears = layers[::2]  # a plain list: the modules stay registered once, by the Sequential

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        *hidden, last = self._linears
        for linear in hidden:
            x = self._act(F.linear(x, linear.weight, linear.bias))
        return F.linear(x, last.weight, last.bias)


def mlp(inputs: int, hidden: list[int], outputs: int, activation: str) -> MLP:
    return MLP(inputs, hidden, outputs, activation)


class EmpiricalNormalization(nn.Module):
    """(x - mean) / max(std, min_std), then optionally clipped to [-clip, clip], with running
    statistics over every sample passed to `update`.

    The floor `min_std` bounds how much a column is amplified: a column that never varied in
    training (a constant command, a sensor at rest) would otherwise be divided by ~0 and turn a
    tiny deviation on the robot into a huge input. Floor and clip are part of the exported graph.
    """

    def __init__(self, dim: int, min_std: float = 1e-2, clip: float | None = None, enabled: bool = True):
        super().__init__()
        self.enabled = enabled
        self.min_var = float(min_std) ** 2
        self.clip = None if clip is None else float(clip)
        self.register_buffer("mean", torch.zeros(dim))
        self.register_buffer("var", torch.ones(dim))
        self.register_buffer("count", torch.zeros((), dtype=torch.float64))

    @torch.no_grad()
    def update(self, x: torch.Tensor, weights: torch.Tensor | None = None) -> None:
        """Merge the statistics of the samples x [B, dim] (parallel mean/variance combination);
        with weights [B] (0 or 1), only the samples of weight 1 (no host read)."""
        if not self.enabled:
            return
        if weights is None:
            n = x.shape[0]
            batch_mean, batch_var = x.mean(dim=0), x.var(dim=0, unbiased=False)
        else:
            n = weights.sum()
            share = weights.unsqueeze(1) / n.clamp(min=1.0)
            batch_mean = (x * share).sum(0)
            batch_var = ((x - batch_mean).square() * share).sum(0)
        total = self.count + n
        w = (n / total.clamp(min=1.0)).float()  # 0 when no sample counts: nothing changes
        delta = batch_mean - self.mean
        self.mean += w * delta
        self.var.copy_((1 - w) * self.var + w * batch_var + w * (1 - w) * delta.square())
        self.count.copy_(total)

    @property
    def std(self) -> torch.Tensor:
        """The standard deviation each column is divided by (the floor applied)."""
        return torch.sqrt(self.var.clamp(min=self.min_var))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not self.enabled:
            return x
        y = (x - self.mean) * torch.rsqrt(self.var.clamp(min=self.min_var))
        return y if self.clip is None else y.clamp(-self.clip, self.clip)


@torch.no_grad()
def follow_normalizer(norm: EmpiricalNormalization, net: MLP, x: torch.Tensor,
                      weights: torch.Tensor | None = None) -> None:  # fmt: skip
    """Update `norm` with the samples x and re-express the first layer of `net` so that
    net(norm(x)) is unchanged for every input the clip leaves alone.

    With z = (x - m) / s, the first layer computes W z + b. New statistics (m', s') keep it
    when W' = W diag(s' / s) and b' = b + W diag(1 / s) (m' - m). PPO does this for the critic at
    each update (robolearn/rl/ppo.py says why not for the actor).
    """
    if not norm.enabled:
        return
    mean, std = norm.mean.clone(), norm.std
    norm.update(x, weights)
    first = net[0]
    first.bias.add_(first.weight @ ((norm.mean - mean) / std))
    first.weight.mul_(norm.std / std)


def gaussian_log_prob(actions: torch.Tensor, mean: torch.Tensor, log_std: torch.Tensor) -> torch.Tensor:
    """log N(actions; mean, exp(log_std)^2) summed over action dimensions: [B]."""
    return (-0.5 * ((actions - mean) * torch.exp(-log_std)).square() - log_std - LOG_SQRT_2PI).sum(-1)


def gaussian_entropy(log_std: torch.Tensor) -> torch.Tensor:
    """Entropy of a diagonal Gaussian with these log stds, summed over action dimensions."""
    return (0.5 + LOG_SQRT_2PI + log_std).sum(-1)


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
        min_noise_std: float = 0.0,
        normalizer_min_std: float = 1e-2,
        normalizer_clip: float | None = None,
    ):
        super().__init__()
        norm = {"min_std": normalizer_min_std, "clip": normalizer_clip, "enabled": normalize_observations}
        self.actor_normalizer = EmpiricalNormalization(actor_obs_dim, **norm)
        self.critic_normalizer = EmpiricalNormalization(critic_obs_dim, **norm)
        self.actor = mlp(actor_obs_dim, list(actor_hidden_dims), num_actions, activation)
        self.critic = mlp(critic_obs_dim, list(critic_hidden_dims), 1, activation)
        self.log_std = nn.Parameter(torch.full((num_actions,), float(init_noise_std)).log())
        self.min_log_std = math.log(min_noise_std) if min_noise_std > 0 else -math.inf
        """The floor of log_std, kept by `clamp_noise()` after every optimizer step."""

    @classmethod
    def from_config(cls, algo, obs_dims: dict[str, int], num_actions: int) -> ActorCritic:
        return cls(
            obs_dims["policy"], obs_dims["critic"], num_actions, algo.actor_hidden_dims, algo.critic_hidden_dims,
            algo.activation, algo.init_noise_std, algo.normalize_observations, algo.min_noise_std,
            algo.normalizer_min_std, algo.normalizer_clip,
        )  # fmt: skip

    def actor_parameters(self) -> list[nn.Parameter]:
        """The policy's parameters (its MLP and its log std): clipped as one network."""
        return [*self.actor.parameters(), self.log_std]

    def critic_parameters(self) -> list[nn.Parameter]:
        return list(self.critic.parameters())

    def seed_normalizers(self, policy_obs: torch.Tensor, critic_obs: torch.Tensor) -> None:
        """Start both normalizers from a fresh run's first observations, each first layer absorbing
        them: the networks keep their initial functions, their first-layer columns now scaled to
        the spread of the observations that feed them."""
        follow_normalizer(self.actor_normalizer, self.actor, policy_obs)
        follow_normalizer(self.critic_normalizer, self.critic, critic_obs)

    @torch.no_grad()
    def clamp_noise(self) -> None:
        """Keep the policy's standard deviation at or above algo.min_noise_std (in place)."""
        if self.min_log_std > -math.inf:
            self.log_std.clamp_(min=self.min_log_std)

    def action_mean(self, policy_obs: torch.Tensor) -> torch.Tensor:
        """The deterministic policy (what is exported)."""
        return self.actor(self.actor_normalizer(policy_obs))

    def value(self, critic_obs: torch.Tensor) -> torch.Tensor:
        return self.critic(self.critic_normalizer(critic_obs)).squeeze(-1)

    def act(self, policy_obs: torch.Tensor, generator: torch.Generator | None = None):
        """(actions, their log probability, mean, std): a draw from the Gaussian policy."""
        mean = self.action_mean(policy_obs)
        std = self.log_std.exp().expand_as(mean)
        noise = torch.randn(mean.shape, device=mean.device, generator=generator)
        actions = torch.addcmul(mean, std, noise)
        # log N(mean + std * noise; mean, std) needs only the noise: -noise^2/2 - log std - log sqrt(2 pi)
        log_prob = noise.square().sum(-1).mul_(-0.5).sub_(self.log_std.sum() + LOG_SQRT_2PI * mean.shape[-1])
        return actions, log_prob, mean, std


class InferencePolicy(nn.Module):
    """normalizer + actor -> mean action: the graph that is exported and deployed."""

    def __init__(self, actor_critic: ActorCritic):
        super().__init__()
        self.normalizer = actor_critic.actor_normalizer
        self.actor = actor_critic.actor

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return self.actor(self.normalizer(obs))
