"""Evaluate a deterministic policy: one full episode per environment, randomization as in training.

Reports the undiscounted return, episode length, and how episodes ended (each termination term,
time-out). The same numbers are what export stores as the bundle's training evaluation, and what
sim-to-sim is compared against.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from robolearn.envs.batched_env import BatchedEnv


def evaluate(
    env: BatchedEnv, act: Callable[[torch.Tensor], torch.Tensor], record_steps: int = 0
) -> tuple[dict[str, float], torch.Tensor]:
    """Run every environment's first episode to its end. Returns (metrics, the policy observations
    of the first `record_steps` steps, [record_steps * N, D], for parity checks)."""
    n, device = env.num_envs, env.device
    ended = torch.zeros(n, dtype=torch.bool, device=device)
    returns = torch.zeros(n, device=device)
    lengths = torch.zeros(n, device=device)
    fired = torch.zeros(len(env.terminations.names), n, device=device)
    recorded = []
    with torch.inference_mode():
        obs = env.reset(spread_timeouts=False)
        for step in range(env.max_episode_length):
            if step < record_steps:
                recorded.append(obs["policy"].clone())
            obs, reward, terminated, truncated = env.step(act(obs["policy"]))
            running = ~ended
            returns += reward * running
            lengths += running
            done = (terminated | truncated) & running
            fired += env.terminations.fired * done
            ended |= done
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
    empty = torch.zeros(0, env.observation_dims()["policy"], device=device)
    return metrics, torch.cat(recorded) if recorded else empty
