"""Evaluate a deterministic policy: one full episode per environment, randomization as in training.

Reports the undiscounted return, episode length, and how episodes ended (each termination term,
time-out). The same numbers are what export stores as the bundle's training evaluation, and what
sim-to-sim is compared against.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from robolearn.envs.batched_env import BatchedEnv
from robolearn.errors import UserError
from robolearn.progress import EvalProgress


MAX_EVAL_EPISODES = 65536
"""The most episodes eval (one environment per episode, all at once) and sim2sim (one after another)
take: more is a typo, not a test."""
ALL_ENDED_EVERY = 16
"""Control steps between the checks whether every episode has ended (each check reads the GPU)."""
SUMMARY_KEYS = ("episodes", "return_mean", "return_std", "episode_length_mean", "episode_length_s", "terminated_fraction")


def evaluation_names(env: BatchedEnv) -> list[str]:
    """The keys of evaluate()'s metrics for this env."""
    return [*SUMMARY_KEYS, *(f"termination/{n}" for n in env.terminations.names), *env.metrics.names]


def evaluate(
    env: BatchedEnv, act: Callable[[torch.Tensor], torch.Tensor], record_steps: int = 0, progress: bool = True,
    record_envs: int | None = None,
) -> tuple[dict[str, float], torch.Tensor]:
    """Run every environment's first episode to its end. `act`: policy observations -> actions;
    one that keeps a state per environment (a models.Controller) is told where episodes end
    through its `reset(done)`. Returns (metrics, the policy observations of the first
    `record_steps` steps of the first `record_envs` environments (None: all N), [record_steps, N, D],
    for parity checks). `progress`: show it on stderr (robolearn/progress.py)."""
    n, device = env.num_envs, env.device
    ended = torch.zeros(n, dtype=torch.bool, device=device)
    returns = torch.zeros(n, device=device)
    lengths = torch.zeros(n, device=device)
    fired = torch.zeros(len(env.terminations.names), n, device=device)
    metric_sums = torch.zeros(len(env.metrics.names), n, device=device)
    final_sums = torch.zeros_like(metric_sums)
    distance = torch.zeros(n, device=device)
    recorded = []
    nonfinite = torch.zeros(n, dtype=torch.bool, device=device)  # where the policy's actions were NaN or inf
    reset = getattr(act, "reset", None)
    env.track_metrics(True)
    shown = EvalProgress("evaluating", env.max_episode_length, n, progress)
    with shown, torch.inference_mode():
        obs = env.reset(spread_timeouts=False)
        for step in range(env.max_episode_length):
            if step < record_steps:
                recorded.append(obs["policy"][:record_envs].clone())
            actions = act(obs["policy"])
            nonfinite |= ~torch.isfinite(actions).all(-1)  # the env would reset those envs: a silent 1-step episode
            obs, reward, terminated, truncated = env.step(actions)
            if reset is not None:
                reset(terminated | truncated)
            running = ~ended
            returns += reward * running
            lengths += running
            metric_sums += env.metrics.values * running
            distance += env.metrics.distance * running
            done = (terminated | truncated) & running
            final_sums += env.metrics.window_mean * done
            fired += env.terminations.fired * done
            ended |= done
            shown.update(step + 1, ended)
            if (step + 1) % ALL_ENDED_EVERY == 0 and step + 1 >= record_steps and bool(ended.all()):
                if step + 1 < env.max_episode_length:
                    shown.all_ended(step + 1)
                break  # nothing accumulates any more (an episode may be set far longer than it lasts)
    env.track_metrics(False)
    if bool(nonfinite.any()):
        raise UserError(f"the policy's actions are not finite (NaN or inf) in {int(nonfinite.sum())} of {n} environments: "
                        "its weights diverged in training (e.g. with too large a learning rate) or the checkpoint is "
                        "damaged; valid: an earlier checkpoint (checkpoint=<name>)")  # fmt: skip
    metrics = {
        "episodes": n,
        "return_mean": returns.mean().item(),
        "return_std": returns.std(unbiased=False).item(),
        "episode_length_mean": lengths.mean().item(),
        "episode_length_s": lengths.mean().item() * env.dt,
        "terminated_fraction": (fired.sum(0) > 0).float().mean().item(),
    }
    for name, count in zip(env.terminations.names, fired.sum(1).tolist()):
        metrics[f"termination/{name}"] = count / n
    metrics.update(summarize_metrics(env, metric_sums.sum(1), lengths.sum(), distance.sum(), final_sums.sum(1),
                                     ended.sum()))  # fmt: skip
    empty = torch.zeros(0, min(n, record_envs or n), env.observation_dims()["policy"], device=device)
    return metrics, torch.stack(recorded) if recorded else empty


def summarize_metrics(env: BatchedEnv, sums: torch.Tensor, steps: torch.Tensor, distance: torch.Tensor,
                      final_sums: torch.Tensor, episodes: torch.Tensor) -> dict[str, float]:  # fmt: skip
    """Task metrics: per step, the mean over all evaluated steps (sums [K]: each metric's sum over
    them); per meter, the time integral over the distance the base travelled; per final, the mean
    over the episodes of each one's last-window mean (final_sums [K]: their sum)."""
    out = {}
    for k, name in enumerate(env.metrics.names):
        if env.metrics.per_meter[k]:
            out[name] = (sums[k] * env.dt / distance.clamp(min=1e-9)).item()
        elif env.metrics.per_final[k]:
            out[name] = (final_sums[k] / episodes.clamp(min=1)).item()
        else:
            out[name] = (sums[k] / steps.clamp(min=1)).item()
    return out
