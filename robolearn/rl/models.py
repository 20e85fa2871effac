"""Actor-critic networks: observation normalizers, an optional recurrent core each (recurrent.py),
MLP heads, a state-independent log std.

A feed-forward network is a function of the observation. A recurrent one also takes its state and
returns the next one (`actor_step`, `critic_step`); `unroll` runs it over a rollout's sequences,
restarting from the zero state where an episode starts. `Controller` acts deterministically
with the state kept per environment (evaluation, play, viewers); `PolicyGraph` is the graph
that is exported: obs (+ h_in, c_in) -> actions (+ h_out, c_out), `InferencePolicy` that of a
policy trained here."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from robolearn.errors import UserError
from robolearn.rl.recurrent import RecurrentCore, State, reset_where

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
    def update(self, x: torch.Tensor, weights: torch.Tensor | None = None, ranks=None) -> None:
        """Merge the statistics of the samples x [B, dim] (parallel mean/variance combination);
        with weights [B] (0 or 1), only the samples of weight 1 (no host read). With `ranks`
        (distributed.Ranks of a torchrun job), the samples of every rank: all ranks end with the
        same statistics."""
        if not self.enabled:
            return
        if ranks is not None and ranks.distributed:
            n, batch_mean, batch_var = _moments_over_ranks(x, weights, ranks)
        elif weights is None:
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


def _moments_over_ranks(x: torch.Tensor, weights: torch.Tensor | None, ranks) -> tuple[torch.Tensor, ...]:
    """(count, mean, variance) of the weighted samples of every rank: two all-reduces (the sums,
    then the squared deviations from the common mean)."""
    w = torch.ones(x.shape[0], device=x.device) if weights is None else weights.to(x.dtype)
    sums = ranks.sum_(torch.cat([w.sum().reshape(1), (x * w.unsqueeze(1)).sum(0)]))
    n, mean = sums[0], sums[1:] / sums[0].clamp(min=1.0)
    var = ranks.sum_(((x - mean).square() * w.unsqueeze(1)).sum(0)) / n.clamp(min=1.0)
    return n, mean, var


@torch.no_grad()
def follow_normalizer(norm: EmpiricalNormalization, first: tuple[torch.Tensor, torch.Tensor], x: torch.Tensor,
                      weights: torch.Tensor | None = None, ranks=None) -> None:  # fmt: skip
    """Update `norm` with the samples x and re-express the layer that reads its output, `first`
    = (weight, bias) (an MLP's first linear layer, a recurrent core's input weights), so that the
    network's function of x is unchanged for every input the clip leaves alone.

    With z = (x - m) / s, the first layer computes W z + b. New statistics (m', s') keep it
    when W' = W diag(s' / s) and b' = b + W diag(1 / s) (m' - m). PPO does this for the critic at
    each update (robolearn/rl/ppo.py says why not for the actor).
    """
    if not norm.enabled:
        return
    weight, bias = first
    mean, std = norm.mean.clone(), norm.std
    norm.update(x.flatten(0, -2), None if weights is None else weights.flatten(), ranks)
    bias.add_(weight @ ((norm.mean - mean) / std))
    weight.mul_(norm.std / std)


def gaussian_log_prob(actions: torch.Tensor, mean: torch.Tensor, log_std: torch.Tensor) -> torch.Tensor:
    """log N(actions; mean, exp(log_std)^2) summed over action dimensions: [B]."""
    return (-0.5 * ((actions - mean) * torch.exp(-log_std)).square() - log_std - LOG_SQRT_2PI).sum(-1)


def gaussian_entropy(log_std: torch.Tensor) -> torch.Tensor:
    """Entropy of a diagonal Gaussian with these log stds, summed over action dimensions."""
    return (0.5 + LOG_SQRT_2PI + log_std).sum(-1)


def _memory(kind: str, inputs: int, hidden: int, layers: int) -> RecurrentCore | None:
    if kind == "mlp":
        return None
    return RecurrentCore(kind, inputs, hidden, layers)


def _input_layer(memory: RecurrentCore | None, net: MLP) -> tuple[torch.Tensor, torch.Tensor]:
    return memory.first_layer() if memory is not None else (net[0].weight, net[0].bias)


def unroll(memory: RecurrentCore, x: torch.Tensor, state: State, starts: torch.Tensor) -> torch.Tensor:
    """Run `memory` over sequences x [T, B, D] from `state` (the state before step 0); where
    starts[t] [T, B] is true (t > 0), an episode begins at step t and the state goes back to zero
    first. Zeroing by multiplication also stops the gradient there: no step learns through another
    episode's. Returns the outputs [T, B, hidden]."""
    keep = (~starts).to(x.dtype).unsqueeze(-1).unsqueeze(-1)  # [T, B, 1, 1]
    outputs = []
    for t in range(x.shape[0]):
        if t > 0:
            state = tuple(s * keep[t] for s in state)
        out, state = memory(x[t], state)
        outputs.append(out)
    return torch.stack(outputs)


class ActorCritic(nn.Module):
    """Actor and critic, each: normalizer -> [recurrent core] -> MLP head. `actor_memory`,
    `critic_memory`: 'mlp' (no core) or a recurrent kind ('gru', 'lstm'), with `rnn_hidden_size`
    units in each of `rnn_num_layers` layers; the head's hidden layers are *_hidden_dims."""

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
        actor_memory: str = "mlp",
        critic_memory: str = "mlp",
        rnn_hidden_size: int = 64,
        rnn_num_layers: int = 1,
    ):
        super().__init__()
        norm = {"min_std": normalizer_min_std, "clip": normalizer_clip, "enabled": normalize_observations}
        self.actor_normalizer = EmpiricalNormalization(actor_obs_dim, **norm)
        self.critic_normalizer = EmpiricalNormalization(critic_obs_dim, **norm)
        self.actor_memory = _memory(actor_memory, actor_obs_dim, rnn_hidden_size, rnn_num_layers)
        self.critic_memory = _memory(critic_memory, critic_obs_dim, rnn_hidden_size, rnn_num_layers)
        actor_in = actor_obs_dim if self.actor_memory is None else rnn_hidden_size
        critic_in = critic_obs_dim if self.critic_memory is None else rnn_hidden_size
        self.actor = mlp(actor_in, list(actor_hidden_dims), num_actions, activation)
        self.critic = mlp(critic_in, list(critic_hidden_dims), 1, activation)
        self.log_std = nn.Parameter(torch.full((num_actions,), float(init_noise_std)).log())
        self.min_log_std = math.log(min_noise_std) if min_noise_std > 0 else -math.inf
        """The floor of log_std, kept by `clamp_noise()` after every optimizer step."""

    @classmethod
    def from_config(cls, algo, obs_dims: dict[str, int], num_actions: int) -> ActorCritic:
        critic = algo.critic_network if algo.critic_network is not None else algo.policy
        return cls(
            obs_dims["policy"], obs_dims["critic"], num_actions, algo.actor_hidden_dims, algo.critic_hidden_dims,
            algo.activation, algo.init_noise_std, algo.normalize_observations, algo.min_noise_std,
            algo.normalizer_min_std, algo.normalizer_clip, algo.policy, critic, algo.rnn_hidden_size,
            algo.rnn_num_layers,
        )  # fmt: skip

    @property
    def is_recurrent(self) -> bool:
        """Whether the actor or the critic carries a state from step to step."""
        return self.actor_memory is not None or self.critic_memory is not None

    def actor_parameters(self) -> list[nn.Parameter]:
        """The policy's parameters (its core, its MLP and its log std): clipped as one network."""
        core = [] if self.actor_memory is None else list(self.actor_memory.parameters())
        return [*core, *self.actor.parameters(), self.log_std]

    def critic_parameters(self) -> list[nn.Parameter]:
        core = [] if self.critic_memory is None else list(self.critic_memory.parameters())
        return [*core, *self.critic.parameters()]

    def actor_input_layer(self) -> tuple[torch.Tensor, torch.Tensor]:
        """(weight, bias) of the actor's layer that reads the normalized observation."""
        return _input_layer(self.actor_memory, self.actor)

    def critic_input_layer(self) -> tuple[torch.Tensor, torch.Tensor]:
        return _input_layer(self.critic_memory, self.critic)

    def initial_actor_state(self, batch: int, device: torch.device | str = "cpu") -> State:
        """The actor's state at an episode start ((): a feed-forward actor has none)."""
        return () if self.actor_memory is None else self.actor_memory.initial_state(batch, device)

    def initial_critic_state(self, batch: int, device: torch.device | str = "cpu") -> State:
        return () if self.critic_memory is None else self.critic_memory.initial_state(batch, device)

    def seed_normalizers(self, policy_obs: torch.Tensor, critic_obs: torch.Tensor, ranks=None) -> None:
        """Start both normalizers from a fresh run's first observations (every rank's, under
        torchrun), each input layer absorbing them: the networks keep their initial functions,
        their input columns now scaled to the spread of the observations that feed them."""
        follow_normalizer(self.actor_normalizer, self.actor_input_layer(), policy_obs, ranks=ranks)
        follow_normalizer(self.critic_normalizer, self.critic_input_layer(), critic_obs, ranks=ranks)

    @torch.no_grad()
    def clamp_noise(self) -> None:
        """Keep the policy's standard deviation at or above algo.min_noise_std (in place)."""
        if self.min_log_std > -math.inf:
            self.log_std.clamp_(min=self.min_log_std)

    def actor_step(self, policy_obs: torch.Tensor, state: State = ()) -> tuple[torch.Tensor, State]:
        """One step of the deterministic policy: (mean action, the actor's next state)."""
        x = self.actor_normalizer(policy_obs)
        if self.actor_memory is not None:
            x, state = self.actor_memory(x, state)
        return self.actor(x), state

    def critic_step(self, critic_obs: torch.Tensor, state: State = ()) -> tuple[torch.Tensor, State]:
        """One step of the critic: (value [B], the critic's next state)."""
        x = self.critic_normalizer(critic_obs)
        if self.critic_memory is not None:
            x, state = self.critic_memory(x, state)
        return self.critic(x).squeeze(-1), state

    def action_mean(self, policy_obs: torch.Tensor) -> torch.Tensor:
        """The deterministic feed-forward policy; a recurrent one acts through `actor_step` (or a
        `Controller`, which keeps its state)."""
        if self.actor_memory is not None:
            raise TypeError("a recurrent policy needs its state: use actor_step(obs, state) or a Controller")
        return self.actor(self.actor_normalizer(policy_obs))

    def value(self, critic_obs: torch.Tensor) -> torch.Tensor:
        if self.critic_memory is not None:
            raise TypeError("a recurrent critic needs its state: use critic_step(obs, state)")
        return self.critic(self.critic_normalizer(critic_obs)).squeeze(-1)

    def act(self, policy_obs: torch.Tensor, state: State = (), generator: torch.Generator | None = None):
        """(actions, their log probability, mean, std, the actor's next state): a draw from the
        Gaussian policy."""
        mean, state = self.actor_step(policy_obs, state)
        std = self.log_std.exp().expand_as(mean)
        noise = torch.randn(mean.shape, device=mean.device, generator=generator)
        actions = torch.addcmul(mean, std, noise)
        # log N(mean + std * noise; mean, std) needs only the noise: -noise^2/2 - log std - log sqrt(2 pi)
        log_prob = noise.square().sum(-1).mul_(-0.5).sub_(self.log_std.sum() + LOG_SQRT_2PI * mean.shape[-1])
        return actions, log_prob, mean, std, state

    def sequences(self, policy_obs: torch.Tensor, critic_obs: torch.Tensor, starts: torch.Tensor,
                  actor_state: State, critic_state: State) -> tuple[torch.Tensor, torch.Tensor]:  # fmt: skip
        """Mean actions [T, B, A] and values [T, B] over sequences [T, B, D] that start from the given
        states, with the states zeroed where an episode starts (starts [T, B], see `unroll`)."""
        x = self.actor_normalizer(policy_obs)
        if self.actor_memory is not None:
            x = unroll(self.actor_memory, x, actor_state, starts)
        y = self.critic_normalizer(critic_obs)
        if self.critic_memory is not None:
            y = unroll(self.critic_memory, y, critic_state, starts)
        return self.actor(x), self.critic(y).squeeze(-1)


class Controller:
    """The deterministic policy acting in `num_envs` environments, keeping the actor's state of
    each: call it with the observations, and `reset(done)` where episodes ended (all with None)."""

    def __init__(self, actor_critic: ActorCritic, num_envs: int, device: torch.device | str = "cpu"):
        self.ac, self.num_envs, self.device = actor_critic, num_envs, device
        self.state = actor_critic.initial_actor_state(num_envs, device)

    def __call__(self, policy_obs: torch.Tensor) -> torch.Tensor:
        mean, self.state = self.ac.actor_step(policy_obs, self.state)
        return mean

    def reset(self, done: torch.Tensor | None = None) -> None:
        if done is None:
            self.state = self.ac.initial_actor_state(self.num_envs, self.device)
        else:
            reset_where(self.state, done)


class PolicyGraph(nn.Module):
    """normalizer -> [core] -> actor head: the graph that is exported and deployed. Feed-forward:
    obs -> actions. Recurrent: (obs, h_in[, c_in]) -> (actions, h_out[, c_out]), states
    [B, layers, hidden], zero at an episode start. A policy trained here (InferencePolicy) and
    one imported from another framework (interop/rsl_checkpoint.py) are both this graph."""

    def __init__(self, normalizer: nn.Module, memory: RecurrentCore | None, actor: nn.Module):
        super().__init__()
        self.normalizer = normalizer
        self.memory = memory
        self.actor = actor

    @property
    def state_names(self) -> tuple[str, ...]:
        """'h' (GRU) or 'h', 'c' (LSTM): inputs <name>_in, outputs <name>_out; () feed-forward."""
        return () if self.memory is None else self.memory.state_names

    def initial_state(self, batch: int) -> State:
        return () if self.memory is None else self.memory.initial_state(batch)

    def forward(self, obs: torch.Tensor, h_in: torch.Tensor | None = None, c_in: torch.Tensor | None = None):
        x = self.normalizer(obs)
        if self.memory is None:
            return self.actor(x)
        x, state = self.memory(x, (h_in,) if c_in is None else (h_in, c_in))
        return (self.actor(x), *state)


class InferencePolicy(PolicyGraph):
    """The exported graph of a policy trained here: its actor's normalizer, core and head."""

    def __init__(self, actor_critic: ActorCritic):
        super().__init__(actor_critic.actor_normalizer, actor_critic.actor_memory, actor_critic.actor)
