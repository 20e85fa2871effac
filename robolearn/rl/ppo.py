"""PPO: acting during the rollout, returns at its end, and the clipped-surrogate update.

The update never reads the device from the host: the adaptive learning rate is a device tensor
changed with tensor ops, losses are summed on the device and returned as tensors (the runner
reads them once per iteration). `algo.compile=true` runs each minibatch step through
torch.compile; `algo.cuda_graph=true` replays the whole update as one CUDA graph
(graphed_update.py).

The observation normalizers take each rollout once, at the update. The critic's takes it first
and its first layer absorbs the change (`follow_normalizer`): the values are unchanged, so value
clipping compares like with like. The actor's takes it after the epochs: the rollout was drawn
with the statistics the update sees (probability ratio exactly 1 and KL 0 at the first
minibatch), and the next rollout acts with the new ones. The actor is not re-expressed like the
critic: scaling a first-layer column by s'/s also scales down Adam's step for that input, and on
pendulum (angular velocity spread 0.3 rad/s at reset, ~5 rad/s once it swings) that stalled
learning for hundreds of iterations (docs/benchmarks.md). `algo.normalizer_schedule=step` is
rsl_rl's schedule instead: both normalizers merge every step's observations before acting on them,
nothing is merged or absorbed at the update, and the update normalizes the stored observations with
the newest statistics (its first ratio is not 1: it sees how far they moved in the rollout). An
observation is merged before its step is known to be valid (envs/health.py): a non-finite row,
already replaced by zeros, is merged as zeros.

A recurrent actor or critic (algo.policy=gru|lstm) carries a state per environment through the
rollout; it is stored before every step and zeroed after a step that ended the episode
(terminated or truncated). The update learns from whole sequences (storage.sequences): each
starts from the state the rollout had there, detached (truncated back-propagation through time),
and restarts from zero where an episode starts inside it, so no gradient crosses an episode
boundary. A time-out bootstraps with V(s_t) as computed in the rollout, i.e. with the critic
state the cut episode had.

Under torchrun (robolearn/distributed.py) every rank learns from its own rollout and the learners
stay identical: each minibatch's gradient and KL are averaged over the ranks in one all-reduce
(a non-finite loss on any rank poisons the average, so every rank skips that step together),
and the normalizers merge every rank's statistics. Advantages are normalized per rank.
"""

from __future__ import annotations

import torch
from omegaconf import OmegaConf

from robolearn.config import AlgoCfg
from robolearn.config_checks import NORMALIZER_SCHEDULES, SCHEDULES, check_sequences
from robolearn.distributed import Ranks
from robolearn.errors import UserError
from robolearn.rl.graphed_update import GraphedUpdate
from robolearn.rl.losses import adapt_learning_rate, gae, gaussian_kl, ppo_loss
from robolearn.rl.models import ActorCritic, follow_normalizer, gaussian_entropy, gaussian_log_prob
from robolearn.rl.optimizer import Adam
from robolearn.rl.recurrent import reset_where
from robolearn.rl.storage import RolloutStorage

METRICS = ("surrogate_loss", "value_loss", "entropy", "clip_fraction", "kl")
UPDATE_KEYS = (*METRICS, "health/skipped_minibatches", "learning_rate", "action_std")
"""What update() returns."""
BATCH_FIELDS = ("policy_obs", "critic_obs", "actions", "log_probs", "values", "advantages", "returns", "mu", "sigma",
                "valid")  # fmt: skip


def amp_note(amp: str | None, device: torch.device) -> str | None:
    """What to say at start when algo.amp=bf16 will make the update slower, not faster: a CPU
    without native bfloat16 (no AVX512-BF16 or AMX) emulates it, 8x slower for quadruped_flat's
    update on the 2-core AMD EPYC VM (15.5 s against 1.85 s an iteration, 2026-11-29)."""
    if amp != "bf16" or device.type != "cpu":
        return None
    try:
        native = bool(torch.ops.mkldnn._is_mkldnn_bf16_supported())
    except (AttributeError, RuntimeError):  # a torch without the probe: nothing known, nothing said
        return None
    if native:
        return None
    return ("algo.amp=bf16 on a CPU without native bfloat16 (no AVX512-BF16 or AMX) is emulated and makes the update "
            "several times slower; algo.amp=null trains in float32")  # fmt: skip


def clip_grad_norm(grads: torch.Tensor, max_norm: float) -> torch.Tensor:
    """Scale a flat gradient in place so that its L2 norm is at most max_norm (no host read);
    returns the norm before clipping (not finite if any gradient is not)."""
    norm = torch.linalg.vector_norm(grads)
    grads.mul_(torch.clamp(max_norm / (norm + 1e-6), max=1.0))
    return norm


class PPO:
    def __init__(self, actor_critic: ActorCritic, storage: RolloutStorage, cfg: AlgoCfg, ranks: Ranks | None = None):
        for key, valid in (("schedule", SCHEDULES), ("normalizer_schedule", NORMALIZER_SCHEDULES)):
            if getattr(cfg, key) not in valid:
                raise UserError(f"algo.{key} must be {' or '.join(repr(v) for v in valid)}, got '{getattr(cfg, key)}'")
        if (storage.num_steps * storage.num_envs) % cfg.num_mini_batches:
            raise UserError(
                f"num_envs * runner.num_steps_per_env = {storage.num_steps * storage.num_envs} "
                f"is not divisible by algo.num_mini_batches = {cfg.num_mini_batches}"
            )
        self.recurrent = actor_critic.is_recurrent
        if self.recurrent:
            self.bptt_length = check_sequences(storage.num_envs, storage.num_steps, cfg.bptt_length, cfg.num_mini_batches)
        # a plain dataclass, not an OmegaConf node: the minibatch step reads a field per hyperparameter,
        # and each node access costs ~7 us (~1 ms per update with 20 minibatches)
        self.cfg = OmegaConf.to_object(cfg) if OmegaConf.is_config(cfg) else cfg
        self.ac, self.storage = actor_critic, storage
        self.ranks = ranks or Ranks()
        device = storage.rewards.device
        self.learning_rate = torch.tensor(float(cfg.learning_rate), device=device)
        """The current learning rate: a 0-d device tensor the adaptive schedule changes in place."""
        # the actor (with its log std) and the critic: two groups, each clipped on its own
        self.optimizer = Adam([actor_critic.actor_parameters(), actor_critic.critic_parameters()], self.learning_rate)
        self._value_clip = float(cfg.value_clip) if cfg.use_clipped_value_loss else None
        self.actor_state = actor_critic.initial_actor_state(storage.num_envs, device)
        """Each environment's recurrent actor state before the next step (() feed-forward)."""
        self.critic_state = actor_critic.initial_critic_state(storage.num_envs, device)
        self._step = self._minibatch_step
        if cfg.compile and self.ranks.distributed:
            raise UserError("algo.compile=true is not offered under torchrun (the all-reduce inside the compiled "
                            "step is untested); leave it false")  # fmt: skip
        if cfg.compile:
            self._step = torch.compile(self._minibatch_step)
        self._graphed: GraphedUpdate | None = None
        blocker = ("needs a CUDA device" if device.type != "cuda" else
                   f"captures feed-forward updates, not algo.policy={cfg.policy}" if self.recurrent else
                   "is not offered under torchrun (the update's all-reduces run eagerly)" if self.ranks.distributed else
                   None)  # fmt: skip
        if cfg.cuda_graph and blocker:
            raise UserError(f"algo.cuda_graph=true {blocker}; leave it unset (auto) or set it false")
        self._use_graph = cfg.cuda_graph is not False and blocker is None
        self.per_step_normalizers = self.cfg.normalizer_schedule == "step"
        """algo.normalizer_schedule=step: the normalizers merge each rollout step's observations
        before acting on them, and the update normalizes the rollout with the newest statistics."""

    # --- rollout (called under torch.inference_mode) ----------------------------------------------
    def act(self, obs: dict[str, torch.Tensor]) -> torch.Tensor:
        if self.recurrent:
            self.storage.write_states(self.actor_state, self.critic_state)
        if self.per_step_normalizers:
            self.ac.actor_normalizer.update(obs["policy"], ranks=self.ranks)
            self.ac.critic_normalizer.update(obs["critic"], ranks=self.ranks)
        actions, log_prob, mean, std, self.actor_state = self.ac.act(obs["policy"], self.actor_state)
        values, self.critic_state = self.ac.critic_step(obs["critic"], self.critic_state)
        self.storage.write(
            policy_obs=obs["policy"], critic_obs=obs["critic"], actions=actions, log_probs=log_prob,
            values=values, mu=mean, sigma=std,
        )  # fmt: skip
        return actions

    def record(self, rewards: torch.Tensor, terminated: torch.Tensor, truncated: torch.Tensor,
               invalid: torch.Tensor | None = None) -> None:  # fmt: skip
        """The step's outcome; `invalid` [N] marks transitions not to learn from (envs/health.py)."""
        s = self.storage
        s.write(rewards=rewards, terminated=terminated, truncated=truncated)
        if self.recurrent:  # the next step of an environment whose episode ended starts a new one
            done = terminated | truncated
            reset_where(self.actor_state, done)
            reset_where(self.critic_state, done)
        if invalid is None:
            s.valid[s.step].fill_(1.0)
        else:
            torch.logical_not(invalid, out=s.valid[s.step])
        s.advance()

    def compute_returns(self, last_obs: dict[str, torch.Tensor]) -> None:
        s = self.storage
        last_values, _ = self.ac.critic_step(last_obs["critic"], self.critic_state)
        # A time-out bootstraps with the value of the state it was cut in; V(s_t) of that step is the
        # estimate we have (the final observation itself is replaced by the reset one).
        s.advantages[:], s.returns[:] = gae(
            s.rewards, s.values, last_values, s.terminated, s.truncated, s.values, self.cfg.gamma, self.cfg.lam,
            s.valid,
        )  # fmt: skip
        # normalized over the valid transitions (the others are 0 and weigh nothing in the loss)
        count = s.valid.sum().clamp(min=2.0)
        mean = s.advantages.sum() / count
        std = torch.sqrt(((s.advantages - mean).square() * s.valid).sum() / (count - 1))
        s.advantages.sub_(mean).div_(std + 1e-8).mul_(s.valid)

    # --- learning -----------------------------------------------------------------------------------
    def update(self) -> dict[str, torch.Tensor]:
        """Epochs of minibatch steps over the rollout; the mean of each metric over the minibatches,
        as device tensors (nothing is read back here)."""
        if not self._use_graph:
            return self._update()
        if self._graphed is None:
            self._graphed = GraphedUpdate(self)
        return self._graphed()

    def _update(self, capturable: bool = False) -> dict[str, torch.Tensor]:
        cfg, s = self.cfg, self.storage
        totals = torch.zeros(len(METRICS), device=self.learning_rate.device)
        applied = torch.zeros((), device=self.learning_rate.device)  # minibatches whose step was taken
        count = 0
        policy_obs, critic_obs = s.policy_obs.flatten(0, 1), s.critic_obs.flatten(0, 1)
        valid = s.valid.flatten()
        if not self.per_step_normalizers:
            follow_normalizer(self.ac.critic_normalizer, self.ac.critic_input_layer(), critic_obs, valid, self.ranks)
        if self.recurrent:
            batches = s.sequences(self.bptt_length, cfg.num_mini_batches, cfg.num_learning_epochs, BATCH_FIELDS)
        else:
            batches = ((None, *b) for b in s.minibatches(cfg.num_mini_batches, cfg.num_learning_epochs, BATCH_FIELDS,
                                                         capturable))
        for memory, *batch in batches:
            metrics, ok = self._step(memory, *batch)
            totals += metrics
            applied += ok
            count += 1
        if not self.per_step_normalizers:
            self.ac.actor_normalizer.update(policy_obs, valid, self.ranks)
        s.clear()
        means = totals / applied.clamp(min=1)
        out = {name: means[k] for k, name in enumerate(METRICS)}
        out["health/skipped_minibatches"] = count - applied
        out["learning_rate"] = self.learning_rate.clone()
        out["action_std"] = self.ac.log_std.detach().exp().mean()
        return out

    def _minibatch_step(self, memory, policy_obs, critic_obs, actions, old_log_prob, old_values, advantages, returns,
                        old_mu, old_sigma, valid) -> torch.Tensor:  # fmt: skip
        """One gradient step; returns the METRICS of this minibatch as one [len(METRICS)] tensor (zeros
        if skipped) and whether the step was taken: a minibatch whose loss or gradient is not finite
        (a diverged environment's transition, an overflow) is skipped on the device, so the weights
        and Adam's moments stay as they were. `memory`: None for samples [B, ...], or (starts,
        actor state, critic state) for sequences [L, B, ...] (storage.sequences), flattened to
        samples once the networks have run over them."""
        cfg = self.cfg
        log_std = self.ac.log_std
        with self._autocast():
            if memory is None:
                mean, values = self.ac.action_mean(policy_obs), self.ac.value(critic_obs)
            else:
                mean, values = self.ac.sequences(policy_obs, critic_obs, *memory)
                mean, values = mean.flatten(0, 1), values.flatten(0, 1)
        mean, values = mean.float(), values.float()  # the losses in float32 (a no-op without amp)
        if memory is not None:
            actions, old_log_prob, old_values, advantages, returns, old_mu, old_sigma, valid = (
                x.flatten(0, 1) for x in (actions, old_log_prob, old_values, advantages, returns, old_mu, old_sigma, valid)
            )
        with torch.no_grad():
            kl = (gaussian_kl(old_mu, old_sigma, mean, log_std.exp().expand_as(mean)) * valid).sum() / valid.sum().clamp(min=1.0)
        loss, metrics = ppo_loss(
            gaussian_log_prob(actions, mean, log_std), old_log_prob, advantages, values, old_values, returns,
            gaussian_entropy(log_std), cfg.clip_param, cfg.value_loss_coef, cfg.entropy_coef, self._value_clip, valid,
        )  # fmt: skip
        self.optimizer.zero_grad()
        loss.backward()
        if self.ranks.distributed:
            kl = self._average_over_ranks(loss, kl)
        if cfg.schedule == "adaptive":
            self.learning_rate.copy_(adapt_learning_rate(self.learning_rate, kl, cfg.desired_kl))
        ok = torch.isfinite(loss)
        for grads in self.optimizer.group_grads():  # actor, critic: each norm clipped on its own
            ok = ok & torch.isfinite(clip_grad_norm(grads, cfg.max_grad_norm))
        self.optimizer.step(ok)
        self.ac.clamp_noise()
        values = torch.stack([*(metrics[name] for name in METRICS[:-1]), kl])
        return torch.where(ok, values, 0.0), ok.to(values.dtype)

    def _autocast(self):
        """bfloat16 autocast for the networks' forward passes (algo.amp=bf16; their backward passes
        follow it). Its cache of cast weights is off, as CUDA-graph capture requires: the graphed
        update re-casts the float32 weights its optimizer changes in place at every replay."""
        device_type = self.learning_rate.device.type
        return torch.autocast(device_type, dtype=torch.bfloat16, enabled=self.cfg.amp == "bf16", cache_enabled=False)

    @torch.no_grad()
    def _average_over_ranks(self, loss: torch.Tensor, kl: torch.Tensor) -> torch.Tensor:
        """Average this minibatch's gradient and KL over the ranks (one all-reduce); returns the mean
        KL. A rank whose loss is not finite sends NaN gradients, so that every rank skips the step."""
        grads = self.optimizer.flat_grad
        grads.masked_fill_(~torch.isfinite(loss), float("nan"))
        bucket = self.ranks.average_(torch.cat([grads, kl.reshape(1)]))
        grads.copy_(bucket[:-1])
        return bucket[-1]

    def state_dict(self) -> dict:
        state = {"optimizer": self.optimizer.state_dict()}
        if self.recurrent:  # where each environment's memory stands: the next rollout continues from it
            state["actor_state"] = [x.clone() for x in self.actor_state]
            state["critic_state"] = [x.clone() for x in self.critic_state]
        return state

    def load_state_dict(self, state: dict) -> None:
        self.optimizer.load_state_dict(state["optimizer"])
        if self.cfg.schedule == "fixed":  # the config's rate (a resume, or PBT's explore, may have changed it)
            self.learning_rate.fill_(float(self.cfg.learning_rate))
        for name in ("actor_state", "critic_state"):
            ours, theirs = getattr(self, name), state.get(name, [])
            if len(ours) != len(theirs) or any(a.shape != b.shape for a, b in zip(ours, theirs)):
                raise ValueError(f"the checkpoint's recurrent {name.replace('_', ' ')} does not fit this network "
                                 f"({[tuple(b.shape) for b in theirs]} vs {[tuple(a.shape) for a in ours]})")  # fmt: skip
            for a, b in zip(ours, theirs):
                a.copy_(b)
