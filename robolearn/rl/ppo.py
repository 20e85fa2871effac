"""PPO: acting during the rollout, returns at its end, and the clipped-surrogate update."""

from __future__ import annotations

import torch
from torch import nn

from robolearn.config import AlgoCfg
from robolearn.errors import UserError
from robolearn.rl.losses import gae, gaussian_kl, ppo_loss
from robolearn.rl.models import ActorCritic
from robolearn.rl.storage import RolloutStorage


class PPO:
    def __init__(self, actor_critic: ActorCritic, storage: RolloutStorage, cfg: AlgoCfg):
        if cfg.schedule not in ("adaptive", "fixed"):
            raise UserError(f"algo.schedule must be 'adaptive' or 'fixed', got '{cfg.schedule}'")
        if (storage.num_steps * storage.num_envs) % cfg.num_mini_batches:
            raise UserError(
                f"num_envs * runner.num_steps_per_env = {storage.num_steps * storage.num_envs} "
                f"is not divisible by algo.num_mini_batches = {cfg.num_mini_batches}"
            )
        self.ac, self.storage, self.cfg = actor_critic, storage, cfg
        self.optimizer = torch.optim.Adam(actor_critic.parameters(), lr=cfg.learning_rate)
        self.learning_rate = cfg.learning_rate

    # --- rollout (called under torch.inference_mode) ----------------------------------------------
    def act(self, obs: dict[str, torch.Tensor]) -> torch.Tensor:
        self.ac.update_normalizers(obs)
        dist = self.ac.distribution(obs["policy"])
        actions = dist.sample()
        self.storage.write(
            policy_obs=obs["policy"], critic_obs=obs["critic"], actions=actions,
            log_probs=dist.log_prob(actions).sum(-1), values=self.ac.value(obs["critic"]),
            mu=dist.mean, sigma=dist.stddev,
        )  # fmt: skip
        return actions

    def record(self, rewards: torch.Tensor, terminated: torch.Tensor, truncated: torch.Tensor) -> None:
        self.storage.write(rewards=rewards, terminated=terminated, truncated=truncated)
        self.storage.advance()

    def compute_returns(self, last_obs: dict[str, torch.Tensor]) -> None:
        s = self.storage
        last_values = self.ac.value(last_obs["critic"])
        # A time-out bootstraps with the value of the state it was cut in; V(s_t) of that step is the
        # estimate we have (the final observation itself is replaced by the reset one).
        s.advantages[:], s.returns[:] = gae(
            s.rewards, s.values, last_values, s.terminated, s.truncated, s.values, self.cfg.gamma, self.cfg.lam
        )
        s.advantages.sub_(s.advantages.mean()).div_(s.advantages.std() + 1e-8)

    # --- learning -----------------------------------------------------------------------------------
    def update(self) -> dict[str, float]:
        cfg = self.cfg
        totals: dict[str, torch.Tensor] = {}
        n = 0
        for batch in self.storage.minibatches(cfg.num_mini_batches, cfg.num_learning_epochs):
            dist = self.ac.distribution(batch["policy_obs"])
            log_prob = dist.log_prob(batch["actions"]).sum(-1)
            values = self.ac.value(batch["critic_obs"])
            with torch.no_grad():
                kl = gaussian_kl(batch["mu"], batch["sigma"], dist.mean, dist.stddev).mean()
            if cfg.schedule == "adaptive":
                self._adapt_learning_rate(kl)
            loss, metrics = ppo_loss(
                log_prob, batch["log_probs"], batch["advantages"], values, batch["values"], batch["returns"],
                dist.entropy().sum(-1), cfg.clip_param, cfg.value_loss_coef, cfg.entropy_coef,
                cfg.use_clipped_value_loss,
            )  # fmt: skip
            self.optimizer.zero_grad(set_to_none=True)
            loss.backward()
            nn.utils.clip_grad_norm_(self.ac.parameters(), cfg.max_grad_norm)
            self.optimizer.step()
            metrics["kl"] = kl
            for key, value in metrics.items():
                totals[key] = totals.get(key, 0.0) + value
            n += 1
        self.storage.clear()
        out = {key: float(value) / n for key, value in totals.items()}
        out["learning_rate"] = self.learning_rate
        out["action_std"] = float(self.ac.log_std.detach().exp().mean())
        return out

    def _adapt_learning_rate(self, kl: torch.Tensor) -> None:
        """Shrink the step when the policy moved too far (KL > 2x target), grow it when too little."""
        kl_value = float(kl)
        if kl_value > 2.0 * self.cfg.desired_kl:
            self.learning_rate = max(1e-5, self.learning_rate / 1.5)
        elif 0.0 < kl_value < 0.5 * self.cfg.desired_kl:
            self.learning_rate = min(1e-2, self.learning_rate * 1.5)
        for group in self.optimizer.param_groups:
            group["lr"] = self.learning_rate

    def state_dict(self) -> dict:
        return {"optimizer": self.optimizer.state_dict(), "learning_rate": self.learning_rate}

    def load_state_dict(self, state: dict) -> None:
        self.optimizer.load_state_dict(state["optimizer"])
        self.learning_rate = float(state["learning_rate"])
