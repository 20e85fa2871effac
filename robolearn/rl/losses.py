"""PPO's math as pure functions: no state, no device syncs, unit-tested against hand-worked numbers."""

from __future__ import annotations

import torch


def gae(
    rewards: torch.Tensor,
    values: torch.Tensor,
    last_values: torch.Tensor,
    terminated: torch.Tensor,
    truncated: torch.Tensor,
    timeout_values: torch.Tensor,
    gamma: float,
    lam: float,
    valid: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Generalized advantage estimation over a rollout of T steps and N environments.

    rewards, values, terminated, truncated, timeout_values: [T, N]; last_values: [N], the value of
    the observation after the last step. At step t the episode may end:
      - terminated: the return stops; nothing is bootstrapped;
      - truncated (time-out): the state was not terminal, so the return is bootstrapped with
        timeout_values[t], the value estimate of the state the episode was cut in.
    Either way the advantage recursion does not cross into the next episode.
    valid [T, N] (optional): a step that is not valid (a diverged simulation's, envs/health.py) gets
    advantage 0 and return values[t], so the steps before it bootstrap from values[t] as if the
    episode had been cut there.
    Returns (advantages, returns), both [T, N].
    """
    T = rewards.shape[0]
    ended = (terminated | truncated).float()
    advantages = torch.zeros_like(rewards)
    next_adv = torch.zeros_like(last_values)
    next_values = last_values
    for t in reversed(range(T)):
        bootstrap = torch.where(truncated[t], timeout_values[t], next_values * (1.0 - ended[t]))
        delta = rewards[t] + gamma * bootstrap - values[t]
        next_adv = delta + gamma * lam * (1.0 - ended[t]) * next_adv
        if valid is not None:
            next_adv = torch.where(valid[t] > 0, next_adv, 0.0)
        advantages[t] = next_adv
        next_values = values[t]
    return advantages, advantages + values


def gaussian_kl(mu_old: torch.Tensor, sigma_old: torch.Tensor, mu: torch.Tensor, sigma: torch.Tensor) -> torch.Tensor:
    """KL(old || new) of diagonal Gaussians, summed over action dimensions: [B]."""
    return (
        torch.log(sigma / sigma_old) + (sigma_old.square() + (mu_old - mu).square()) / (2.0 * sigma.square()) - 0.5
    ).sum(dim=-1)


def ppo_loss(
    log_prob: torch.Tensor,
    old_log_prob: torch.Tensor,
    advantages: torch.Tensor,
    values: torch.Tensor,
    old_values: torch.Tensor,
    returns: torch.Tensor,
    entropy: torch.Tensor,
    clip_param: float,
    value_loss_coef: float,
    entropy_coef: float,
    value_clip: float | None = 0.2,
    weights: torch.Tensor | None = None,
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """Clipped-surrogate PPO loss on one minibatch (all inputs [B], entropy [B] or a scalar).
    Returns (loss, metrics).

    surrogate = mean(max(-A r, -A clip(r, 1-eps, 1+eps))),  r = exp(log_prob - old_log_prob),
                eps = clip_param
    value     = mean(max((V - R)^2, (V_old + clip(V - V_old, -c, c) - R)^2)),  c = value_clip
                (unclipped, mean((V - R)^2), when value_clip is None)
    loss      = surrogate + value_loss_coef * value - entropy_coef * mean(entropy)
    weights [B] (optional, 0 or 1): every mean over samples becomes sum(w x) / sum(w), so a sample
    of weight 0 (a masked-out transition) has no part in the loss or the metrics.
    """
    if weights is None:
        mean = torch.mean
    else:
        total = weights.sum().clamp(min=1.0)

        def mean(x: torch.Tensor) -> torch.Tensor:
            return (x * weights).sum() / total

    ratio = torch.exp(log_prob - old_log_prob)
    surrogate = mean(torch.max(-advantages * ratio, -advantages * ratio.clamp(1.0 - clip_param, 1.0 + clip_param)))
    if value_clip is not None:
        clipped = old_values + (values - old_values).clamp(-value_clip, value_clip)
        value_loss = mean(torch.max((values - returns).square(), (clipped - returns).square()))
    else:
        value_loss = mean((values - returns).square())
    entropy_mean = entropy.mean()
    loss = surrogate + value_loss_coef * value_loss - entropy_coef * entropy_mean
    metrics = {
        "surrogate_loss": surrogate.detach(),
        "value_loss": value_loss.detach(),
        "entropy": entropy_mean.detach(),
        "clip_fraction": mean(((ratio - 1.0).abs() > clip_param).float()).detach(),
    }
    return loss, metrics


def adapt_learning_rate(lr: torch.Tensor, kl: torch.Tensor, desired_kl: float, min_lr: float = 1e-5,
                        max_lr: float = 1e-2) -> torch.Tensor:  # fmt: skip
    """The KL-adaptive schedule, on the device: the rate shrinks 1.5x (not below min_lr) when the
    policy moved too far (kl > 2 desired_kl), grows 1.5x (not above max_lr) when it barely moved
    (0 < kl < desired_kl / 2), and stays otherwise."""
    shrink = (lr / 1.5).clamp(min=min_lr)
    grow = (lr * 1.5).clamp(max=max_lr)
    return torch.where(kl > 2.0 * desired_kl, shrink, torch.where((kl > 0) & (kl < 0.5 * desired_kl), grow, lr))
