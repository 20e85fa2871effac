"""On-policy runner: rollout -> returns -> PPO update, one iteration at a time, with checkpoints.

Each iteration reads the device twice, both after the update: the PPO metrics (one read) and the
env's episode statistics (one read). Nothing inside the rollout or the update waits for the host,
except once per training clip (train_clips.py), in the step that completes it.

Under torchrun every rank runs this loop on its own environments (robolearn/distributed.py): the
ranks vote at each iteration boundary on stopping (a signal may reach one rank first), and a
checkpoint is written by rank 0 with every other rank's env, recurrent and RNG state in it.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Protocol

import torch

from robolearn import checkpoint
from robolearn.config import AlgoCfg, RunnerCfg
from robolearn.distributed import Ranks
from robolearn.envs.vec_env import VecEnv
from robolearn.errors import UserError
from robolearn.memory import mlp_bytes, require, rnn_bytes
from robolearn.rl.iteration_clock import IterationClock
from robolearn.rl.models import ActorCritic
from robolearn.rl.ppo import PPO
from robolearn.rl.storage import RolloutStorage

ROW_KEYS = ("iteration", "env_steps", "wall_time_s", "steps_per_s", "collection_s", "learning_s")
"""The runner's own columns of a metrics row (the env's episode statistics and PPO's follow)."""


@contextmanager
def torch_threads(count: int | None) -> Iterator[None]:
    """PyTorch's CPU thread count set to `count` inside the block (None: left alone).

    The rollout runs with one when the env steps on a CPU thread pool of its own (the mujoco
    backend): PyTorch's idle OpenMP threads spin after every parallel op and took a core from
    MuJoCo's threads, so 2-core collection ran ~10 % faster with one (docs/benchmarks.md); the
    update, all PyTorch, keeps every thread."""
    before = torch.get_num_threads()
    if count is None or count == before:
        yield
        return
    torch.set_num_threads(count)
    try:
        yield
    finally:
        torch.set_num_threads(before)


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
    def __init__(self, env: VecEnv, algo: AlgoCfg, cfg: RunnerCfg, device: torch.device, ranks: Ranks | None = None):
        self.env, self.cfg, self.device = env, cfg, device
        self.ranks = ranks or Ranks()
        dims = env.observation_dims()
        host = torch.device(device).type == "cpu"  # a GPU reports its own allocation failures (app.fits_in_memory)
        networks = [[dims["policy"], *algo.actor_hidden_dims, env.num_actions],
                    [dims.get("critic", dims["policy"]), *algo.critic_hidden_dims, 1]]  # fmt: skip
        layers = f"algo.actor_hidden_dims={list(algo.actor_hidden_dims)} with algo.critic_hidden_dims={list(algo.critic_hidden_dims)}"
        if host:  # the weights and the optimizer's state, before they are made
            require(mlp_bytes(networks, 0), layers, "use smaller layers")
            cores = [(kind, n) for kind, n in ((algo.policy, dims["policy"]), (algo.critic_network or algo.policy,
                     dims.get("critic", dims["policy"]))) if kind != "mlp"]  # fmt: skip
            if cores:
                need = sum(rnn_bytes(kind, n, algo.rnn_hidden_size, algo.rnn_num_layers) for kind, n in cores)
                require(need, f"algo.rnn_num_layers={algo.rnn_num_layers} x algo.rnn_hidden_size={algo.rnn_hidden_size} "
                        "(the recurrent cores)", "use a smaller recurrent core")  # fmt: skip
        actor_critic = ActorCritic.from_config(algo, dims, env.num_actions)
        shapes = {"actor": [s.shape[1:] for s in actor_critic.initial_actor_state(1)],
                  "critic": [s.shape[1:] for s in actor_critic.initial_critic_state(1)]}  # fmt: skip
        if host:
            state_size = sum(math.prod(shape) for group in shapes.values() for shape in group)
            require(RolloutStorage.nbytes(cfg.num_steps_per_env, env.num_envs, dims, env.num_actions, state_size),
                    f"env.num_envs={env.num_envs} x runner.num_steps_per_env={cfg.num_steps_per_env} (the rollout)",
                    "lower env.num_envs or runner.num_steps_per_env")  # fmt: skip
            minibatch = env.num_envs * cfg.num_steps_per_env // algo.num_mini_batches
            require(mlp_bytes(networks, minibatch), f"{layers} on minibatches of {minibatch:,} samples",
                    "use smaller layers or more algo.num_mini_batches")  # fmt: skip
        self.actor_critic = actor_critic.to(device)
        self.storage = RolloutStorage(cfg.num_steps_per_env, env.num_envs, dims, env.num_actions, device, shapes)
        self.alg = PPO(self.actor_critic, self.storage, algo, self.ranks)
        self.ranks.broadcast_(self.alg.optimizer.flat)  # every parameter, as rank 0 initialized it
        self.iteration = 0
        self.saved_at: int | None = None
        """The iteration of the last checkpoint this runner wrote."""
        self.env_steps = 0
        self.wall_time_s = 0.0
        self._obs: dict[str, torch.Tensor] | None = None

    def learn(self, log: Callable[[dict], None], checkpoint_dir: Path | None = None,
              should_stop: Callable[[], bool] = lambda: False, recorder: StepRecorder | None = None,
              saved: Callable[[Path], None] | None = None, save_also: Callable[[int], bool] | None = None) -> None:  # fmt: skip
        """Run iterations until cfg.max_iterations, or until `should_stop()` is true at an iteration
        boundary; `log` receives one metrics row per iteration; `recorder` sees the env after every
        step of the iterations it asks for; `saved` each checkpoint written (rank 0); `save_also(it)`:
        a checkpoint after iteration `it` too, besides every save_interval and the last."""
        env, alg = self.env, self.alg
        obs = self.start()
        clock = IterationClock(self.device)
        for it in range(self.iteration, self.cfg.max_iterations):
            if self.ranks.any(should_stop()):
                break
            start = time.perf_counter()
            clock.mark("start")
            recording = recorder is not None and recorder.recording(it + 1)
            pooled = getattr(env, "steps_on_host_threads", False)  # (the mujoco backend decides in its first steps)
            with torch.inference_mode(), torch_threads(1 if pooled else None):
                for _ in range(self.cfg.num_steps_per_env):
                    actions = alg.act(obs)
                    obs, reward, terminated, truncated = env.step(actions)
                    alg.record(reward, terminated, truncated, getattr(env, "invalid", None))
                    if recording:
                        recorder.record()
                alg.compute_returns(obs)
            clock.mark("collection_s")
            update = alg.update()
            clock.mark("learning_s")
            losses = read_once(update)
            learned = time.perf_counter()

            self.iteration = it + 1
            steps = env.num_envs * self.cfg.num_steps_per_env * self.ranks.world_size  # every rank's
            self.env_steps += steps
            self.wall_time_s += learned - start
            stats = self._episode_stats()
            self._refuse_total_divergence(stats, steps)
            self._refuse_a_lost_update(losses)
            log({
                "iteration": self.iteration,
                "env_steps": self.env_steps,
                "wall_time_s": self.wall_time_s,
                "steps_per_s": steps / (learned - start),
                **clock.phases(),  # collection_s, learning_s: the device's own times on a GPU
                **stats,
                **losses,
            })  # fmt: skip
            self._obs = obs
            if checkpoint_dir is not None and (
                self.iteration % self.cfg.save_interval == 0 or self.iteration == self.cfg.max_iterations
                or (save_also is not None and save_also(self.iteration))
            ):
                path = checkpoint.checkpoint_path(checkpoint_dir, self.iteration)
                self.save(path)
                if self.ranks.main:
                    checkpoint.prune(checkpoint_dir, self.cfg.keep_checkpoints)
                    if saved is not None:
                        saved(path)

    def _refuse_total_divergence(self, stats: dict[str, float], steps: int) -> None:
        """Every transition of the iteration invalid (envs/health.py): nothing can be learned, and
        going on would export an untrained policy; stop in one line that names the cause. (Under
        torchrun the ranks' counts differ, and one rank stopping alone would hang the others.)"""
        if self.ranks.distributed or stats.get("health/nonfinite_resets", 0) < steps:
            return
        cause = getattr(self.env, "divergence_cause", lambda: "")()
        raise UserError(f"iteration {self.iteration}: every one of its {steps:,} env steps diverged and was reset, so "
                        f"nothing can be learned: {cause or 'a non-finite state, reward or observation'}; "
                        f"{self._what_is_kept()}")  # fmt: skip

    def _refuse_a_lost_update(self, losses: dict[str, float]) -> None:
        """Every minibatch of the update skipped (its loss or gradient not finite, ppo.py) although
        its transitions were valid: an overflow that no iteration will learn past; stop in one line
        that names it instead of training on unchanged weights. (Every rank skips the same
        minibatches, so under torchrun all stop together.)"""
        total = self.alg.cfg.num_learning_epochs * self.alg.cfg.num_mini_batches
        if losses.get("health/skipped_minibatches", 0) < total:
            return
        cause = getattr(self.env, "update_failure_cause", lambda: "")()
        raise UserError(f"iteration {self.iteration}: the loss of every one of its {total} minibatches was not finite, so "
                        f"nothing was learned: {cause or 'an overflow in float32 (rewards or observations too large)'}; "
                        f"{self._what_is_kept()}")  # fmt: skip

    def _what_is_kept(self) -> str:
        """What a stopped run leaves to continue from, for its last line."""
        if self.saved_at is not None:
            return "the run keeps its checkpoints up to here"
        return "no checkpoint was written (overwrite=true trains into this run directory anew)"

    def _episode_stats(self) -> dict[str, float]:
        """The env's episode statistics; under torchrun, on rank 0, every rank's merged."""
        stats = self.env.pop_episode_stats()
        if not self.ranks.distributed:
            return stats
        parts = self.ranks.gather(stats)
        return merge_episode_stats(parts) if parts is not None else stats

    def start(self) -> dict[str, torch.Tensor]:
        """The observations training continues from. A fresh run resets the env here (startup
        events: per-env model parameters are allocated now) and starts the normalizers from the
        first observations, not from N(0, 1) (algo.normalizer_schedule=step merges them at the first
        action instead); a resumed one continues from the checkpoint's."""
        if self._obs is None:
            self._obs = self.env.reset()
            if not self.alg.per_step_normalizers:
                self.actor_critic.seed_normalizers(self._obs["policy"], self._obs["critic"], self.ranks)
        return self._obs

    # --- checkpoints ---------------------------------------------------------------------------------
    def save(self, path: Path) -> None:
        """Write a checkpoint (under torchrun every rank calls this; rank 0 writes every rank's part).
        Weights or an optimizer state that are no longer finite are not written: that checkpoint
        would become the run's newest, the one eval, export, play and resume take."""
        broken = checkpoint.nonfinite_entry({"model": self.actor_critic.state_dict(), "algorithm": self.alg.state_dict()})
        if broken:  # every rank holds the same weights: all stop here together
            raise UserError(f"iteration {self.iteration}: {broken} is not finite after the update, so this iteration is "
                            f"not saved (a learning rate or an advantage that overflowed); {self._what_is_kept()}")  # fmt: skip
        parts = self.ranks.gather(self._rank_state() if self.ranks.distributed else None)
        self.saved_at = self.iteration
        if not self.ranks.main:
            return
        payload = {
            "format": checkpoint.FORMAT,
            "iteration": self.iteration,
            "env_steps": self.env_steps,
            "wall_time_s": self.wall_time_s,
            "model": self.actor_critic.state_dict(),
            "robot_model": getattr(self.env, "robot_model", None),
            "algorithm": self.alg.state_dict(),
            "env": self.env.state_dict(),
            "rng": checkpoint.rng_state(),
        }
        if self.ranks.distributed:
            payload["world_size"] = self.ranks.world_size
            payload["other_ranks"] = parts[1:]
        checkpoint.save_atomic(payload, path)

    def _rank_state(self) -> dict:
        """What differs between ranks: the env (its state, samplers, curricula), the recurrent states, the RNGs."""
        to_cpu = lambda x: x.detach().cpu() if isinstance(x, torch.Tensor) else x  # noqa: E731
        return torch.utils._pytree.tree_map(to_cpu, {"env": self.env.state_dict(), "algorithm": self.alg.state_dict(),
                                                     "rng": checkpoint.rng_state()})  # fmt: skip

    def load(self, payload: dict, source: Path | None = None) -> None:
        """Restore everything a checkpoint holds, so that training continues bit-exactly."""
        source = source or Path("checkpoint")
        if payload.get("format") != checkpoint.FORMAT:
            raise UserError(f"{source} has checkpoint format {payload.get('format')}; this robolearn resumes format "
                            f"{checkpoint.FORMAT} (export and eval still read the policy of older checkpoints)")  # fmt: skip
        trained = int(payload.get("world_size", 1))
        if trained != self.ranks.world_size:
            raise UserError(resume_ranks_line(source, trained, self.ranks.world_size))
        other = checkpoint.other_robot(payload, self.env, source)
        if other:
            raise UserError(f"{other}; a resume would continue on another robot; valid: restore the model it trained "
                            "with, or start a new run")  # fmt: skip
        own = payload if self.ranks.main else checkpoint.resume_part(payload, "other_ranks", source)[self.ranks.rank - 1]
        policy, algorithm = checkpoint.policy_state(payload, source), checkpoint.resume_part(own, "algorithm", source)
        broken = checkpoint.nonfinite_entry({"model": policy, "algorithm": algorithm})
        if broken:
            raise UserError(f"checkpoint {source} holds {broken}: training would continue from a broken state (a damaged "
                            "or hand-edited checkpoint); move it away to resume from the one before it")  # fmt: skip
        checkpoint.restore(self.actor_critic, policy, source)
        checkpoint.restore(self.alg, algorithm, source)
        checkpoint.restore(self.env, checkpoint.resume_part(own, "env", source), source)
        checkpoint.set_rng_state(checkpoint.resume_part(own, "rng", source), source)
        self.iteration = payload["iteration"]  # an integer >= 0: checkpoint.load refused any other
        self.saved_at = self.iteration
        self.env_steps = int(checkpoint.resume_part(payload, "env_steps", source))
        self.wall_time_s = float(checkpoint.resume_part(payload, "wall_time_s", source))
        self._obs = self.env.current_observations()


COUNT_KEYS = ("episodes", "episode_window", "health/nonfinite_resets")


def merge_episode_stats(parts: list[dict[str, float]]) -> dict[str, float]:
    """Every rank's episode statistics as one row: counts summed, `*_max` / `*_min` as max / min, every
    other value a mean weighted by the episodes each rank's window holds (ranks that have one)."""
    out: dict[str, float] = {}
    for key in dict.fromkeys(k for part in parts for k in part):
        have = [part for part in parts if key in part]
        values = [part[key] for part in have]
        if key in COUNT_KEYS:
            out[key] = sum(values)
        elif key.endswith("_max"):
            out[key] = max(values)
        elif key.endswith("_min"):
            out[key] = min(values)
        else:
            weights = [part.get("episode_window", 1.0) for part in have]
            out[key] = sum(w * v for w, v in zip(weights, values)) / sum(weights) if sum(weights) else sum(values) / len(values)
    return out


def resume_ranks_line(source: Path, trained: int, now: int) -> str:
    how = "a single process (robolearn train)" if trained == 1 else f"{trained} ranks (torchrun --nproc_per_node=... with {trained} in all)"
    return (f"{source} was trained with {how}, resumed with {now}; every rank's environments are in the checkpoint, "
            f"so resume with the same number of ranks")  # fmt: skip
