"""On-policy runner: rollout -> returns -> PPO update, one iteration at a time, with checkpoints.

Each iteration reads the device twice, both after the update: the PPO metrics (one read) and the
env's episode statistics (one read). Nothing inside the rollout or the update waits for the host,
except once per training clip (train_clips.py), in the step that completes it.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

import torch

from robolearn import checkpoint
from robolearn.config import AlgoCfg, RunnerCfg
from robolearn.envs.vec_env import VecEnv
from robolearn.errors import UserError
from robolearn.memory import require
from robolearn.rl.models import ActorCritic
from robolearn.rl.ppo import PPO
from robolearn.rl.storage import RolloutStorage

CHECKPOINT_FORMAT = 2
"""2: device-side optimizer and manager-owned env state (format 1 predates both)."""


class StepRecorder(Protocol):
    """Sees the env after every step of the iterations it asks for (training clips: train_clips.py)."""

    def recording(self, iteration: int) -> bool: ...
    def record(self) -> None: ...


def read_once(values: dict[str, torch.Tensor]) -> dict[str, float]:
    """Device scalars -> floats with one host read."""
    if not values:
        return {}
    return dict(zip(values, torch.stack([v.float().reshape(()) for v in values.values()]).tolist()))


class OnPolicyRunner:
    def __init__(self, env: VecEnv, algo: AlgoCfg, cfg: RunnerCfg, device: torch.device):
        self.env, self.cfg, self.device = env, cfg, device
        dims = env.observation_dims()
        actor_critic = ActorCritic.from_config(algo, dims, env.num_actions)
        shapes = {"actor": [s.shape[1:] for s in actor_critic.initial_actor_state(1)],
                  "critic": [s.shape[1:] for s in actor_critic.initial_critic_state(1)]}  # fmt: skip
        if torch.device(device).type == "cpu":
            state_size = sum(math.prod(shape) for group in shapes.values() for shape in group)
            require(RolloutStorage.nbytes(cfg.num_steps_per_env, env.num_envs, dims, env.num_actions, state_size),
                    f"env.num_envs={env.num_envs} x runner.num_steps_per_env={cfg.num_steps_per_env} (the rollout)",
                    "lower env.num_envs or runner.num_steps_per_env")  # fmt: skip
        self.actor_critic = actor_critic.to(device)
        self.storage = RolloutStorage(cfg.num_steps_per_env, env.num_envs, dims, env.num_actions, device, shapes)
        self.alg = PPO(self.actor_critic, self.storage, algo)
        self.iteration = 0
        self.env_steps = 0
        self.wall_time_s = 0.0
        self._obs: dict[str, torch.Tensor] | None = None

    def learn(self, log: Callable[[dict], None], checkpoint_dir: Path | None = None,
              should_stop: Callable[[], bool] = lambda: False, recorder: StepRecorder | None = None) -> None:  # fmt: skip
        """Run iterations until cfg.max_iterations, or until `should_stop()` is true at an iteration
        boundary; `log` receives one metrics row per iteration; `recorder` sees the env after every
        step of the iterations it asks for."""
        env, alg = self.env, self.alg
        obs = self.start()
        for it in range(self.iteration, self.cfg.max_iterations):
            if should_stop():
                break
            start = time.perf_counter()
            recording = recorder is not None and recorder.recording(it + 1)
            with torch.inference_mode():
                for _ in range(self.cfg.num_steps_per_env):
                    actions = alg.act(obs)
                    obs, reward, terminated, truncated = env.step(actions)
                    alg.record(reward, terminated, truncated, getattr(env, "invalid", None))
                    if recording:
                        recorder.record()
                alg.compute_returns(obs)
            collected = time.perf_counter()
            losses = read_once(alg.update())
            learned = time.perf_counter()

            self.iteration = it + 1
            self.env_steps += env.num_envs * self.cfg.num_steps_per_env
            self.wall_time_s += learned - start
            log({
                "iteration": self.iteration,
                "env_steps": self.env_steps,
                "wall_time_s": self.wall_time_s,
                "steps_per_s": env.num_envs * self.cfg.num_steps_per_env / (learned - start),
                "collection_s": collected - start,
                "learning_s": learned - collected,
                **env.pop_episode_stats(),
                **losses,
            })  # fmt: skip
            self._obs = obs
            if checkpoint_dir is not None and (
                self.iteration % self.cfg.save_interval == 0 or self.iteration == self.cfg.max_iterations
            ):
                self.save(checkpoint.checkpoint_path(checkpoint_dir, self.iteration))
                checkpoint.prune(checkpoint_dir, self.cfg.keep_checkpoints)

    def start(self) -> dict[str, torch.Tensor]:
        """The observations training continues from. A fresh run resets the env here (startup
        events: per-env model parameters are allocated now) and starts the normalizers from the
        first observations, not from N(0, 1); a resumed one continues from the checkpoint's."""
        if self._obs is None:
            self._obs = self.env.reset()
            self.actor_critic.seed_normalizers(self._obs["policy"], self._obs["critic"])
        return self._obs

    # --- checkpoints ---------------------------------------------------------------------------------
    def save(self, path: Path) -> None:
        checkpoint.save_atomic(
            {
                "format": CHECKPOINT_FORMAT,
                "iteration": self.iteration,
                "env_steps": self.env_steps,
                "wall_time_s": self.wall_time_s,
                "model": self.actor_critic.state_dict(),
                "algorithm": self.alg.state_dict(),
                "env": self.env.state_dict(),
                "rng": checkpoint.rng_state(),
            },
            path,
        )

    def load(self, payload: dict, source: Path | None = None) -> None:
        """Restore everything a checkpoint holds, so that training continues bit-exactly."""
        source = source or Path("checkpoint")
        if payload.get("format") != CHECKPOINT_FORMAT:
            raise UserError(f"{source} has checkpoint format {payload.get('format')}; this robolearn resumes format "
                            f"{CHECKPOINT_FORMAT} (export and eval still read the policy of older checkpoints)")  # fmt: skip
        checkpoint.restore(self.actor_critic, payload["model"], source)
        checkpoint.restore(self.alg, payload["algorithm"], source)
        checkpoint.restore(self.env, payload["env"], source)
        checkpoint.set_rng_state(payload["rng"])
        self.iteration = int(payload["iteration"])
        self.env_steps = int(payload["env_steps"])
        self.wall_time_s = float(payload["wall_time_s"])
        self._obs = self.env.current_observations()
