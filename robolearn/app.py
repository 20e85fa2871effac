"""What `train` does, given a composed config: seed, build the env and the runner, train, export at
the end (robolearn/run_policy.py: what the verbs after training do with a run)."""

from __future__ import annotations

import contextlib
import json
import os
import random
import signal
import sys
from pathlib import Path
from typing import Protocol

import numpy as np
import torch
from omegaconf import DictConfig, OmegaConf

from robolearn import checkpoint
from robolearn.atomic_file import write_text_atomic
from robolearn.config import EnvCfg, TrainCfg
from robolearn.config_checks import check_train_cfg, check_what_training_reads
from robolearn.distributed import Ranks, more_ranks_than_gpus
from robolearn.envs.batched_env import BatchedEnv
from robolearn.errors import UserError
from robolearn.heap import hold_heap
from robolearn.interrupts import Interrupted, Terminated, stop_on_signals, terminate_raises
from robolearn.isaaclab import isaaclab_task
from robolearn.log_sinks import check_logger, open_sinks
from robolearn.logger import RunLogger
from robolearn.manifest import describe_run, write_manifest
from robolearn.objective import Objective, check_objective
from robolearn.physics import learner_device, resolve_placement
from robolearn.registry import get_task
from robolearn.rl.models import Controller
from robolearn.rl.ppo import amp_note
from robolearn.rl.runner import OnPolicyRunner
from robolearn.run_dir import refuse_existing_run

# ONNX, ONNX Runtime and the evaluation are imported where they are used (the end of a run,
# export, eval), so that a run starts training without paying for them.


def seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)


def _seed(words: list[int]) -> int:
    return int(np.random.SeedSequence(words).generate_state(1, np.uint64)[0] >> 1)


def env_seed(seed: int, rank: int = 0) -> int:
    """The environments' sampler seed: its own stream, not the policy's (torch.manual_seed(seed));
    under torchrun each rank's own."""
    return _seed([seed, 1] if rank == 0 else [seed, 1, rank])


def rank_seed(seed: int, rank: int) -> int:
    """The policy-side seed of rank > 0 (its action noise and minibatch shuffles), after the
    networks were built from `seed` like rank 0's."""
    return _seed([seed, 2, rank])


def build_env(cfg: DictConfig, backend: str, device: torch.device, num_envs: int | None = None,
              ranks: Ranks | None = None, **options) -> BatchedEnv:  # fmt: skip
    """The env of a training config; `options`: further BatchedEnv arguments (keep_final_obs). An
    Isaac Lab task (task=isaaclab:<id>) runs on Isaac Lab's own physics at `device`. Under
    torchrun (`ranks`) this rank's share of env.num_envs, seeds and CPU threads."""
    ranks = ranks or Ranks()
    num_envs = num_envs or cfg.env.num_envs // ranks.world_size
    seed = env_seed(cfg.seed, ranks.rank)
    isaaclab = isaaclab_task(cfg.task.name)
    if isaaclab is not None:
        from robolearn.isaaclab.env import IsaacLabEnv
        from robolearn.isaaclab.task_config import resolved

        overrides = list(cfg.isaaclab.overrides)
        return IsaacLabEnv(isaaclab, num_envs, device, seed, overrides, cfg.env.stagger_timeouts,
                           cfg.runner.episode_window, resolved(isaaclab, overrides))  # fmt: skip
    plugin = get_task(cfg.task.name)
    settings = OmegaConf.to_container(cfg.physics)
    if ranks.local_world_size > 1 and not settings.get("num_threads"):  # the node's cores, shared
        settings["num_threads"] = max(1, len(os.sched_getaffinity(0)) // ranks.local_world_size)
    return BatchedEnv(
        cfg.task, plugin, num_envs, physics=backend, device=device,
        seed=seed, physics_settings=settings,
        cuda_graph=cfg.env.cuda_graph, randomization=cfg.get("randomization"),
        stagger_timeouts=cfg.env.stagger_timeouts, episode_window=cfg.runner.episode_window,
        state_limit=cfg.env.get("state_limit", EnvCfg.state_limit), compile=cfg.env.get("compile", False), **options,
    )  # fmt: skip


def placement(cfg: DictConfig, ranks: Ranks | None = None) -> tuple[str, torch.device]:
    """(physics backend, learner device) of a training config; under torchrun, this rank's GPU."""
    if isaaclab_task(cfg.task.name) is not None:  # Isaac Lab runs its own physics on the learner's device
        backend, device = "isaaclab", learner_device(cfg.device)
    else:
        backend, device = resolve_placement(cfg.physics.backend, cfg.device)
    return backend, (ranks or Ranks()).device(device)


def preflight(cfg: DictConfig, run_dir: Path, ranks: Ranks) -> None:
    """What rank 0 checks before the other ranks start: the config's values, and that every rank of
    this node has a GPU where the config asks for one. (One line, and no rank builds anything.)"""
    check_train_cfg(cfg, ranks.world_size)
    check_what_training_reads(cfg)
    check_logger(cfg.logger)
    if ranks.distributed:
        if not cfg.resume:
            refuse_existing_run(run_dir)
        _, device = placement(cfg)
        if device.type == "cuda" and ranks.local_world_size > torch.cuda.device_count():
            raise UserError(more_ranks_than_gpus(ranks.local_world_size, torch.cuda.device_count()))


def truncate_metrics(path: Path, iteration: int) -> None:
    """Drop rows a crashed run wrote after the checkpoint it is resumed from (they are redone), and a
    last line the crash cut short."""
    if not path.is_file():
        return
    try:
        lines = path.read_text().splitlines(keepends=True)
    except UnicodeDecodeError:
        raise UserError(f"{path} is not text (damaged); move it away and resume again (the run then writes a new one)") from None
    kept = []
    for number, line in enumerate(lines, 1):
        try:
            row_iteration = json.loads(line)["iteration"]
        except (ValueError, KeyError, TypeError):
            row_iteration = None
        if not isinstance(row_iteration, int):  # not a row, or its iteration not a whole number
            if number == len(lines):
                print(f"warning: {path}: dropped its last line, cut short when the run stopped", file=sys.stderr)
                continue
            raise UserError(f"{path} line {number} is not a metrics row; remove that line and resume again") from None
        if row_iteration <= iteration:
            kept.append(line if line.endswith("\n") else line + "\n")
    if kept != lines:
        write_text_atomic(path, "".join(kept))


_OUT_OF_MEMORY = ("out of memory", "failed to allocate", "resource_exhausted", "cuda_error_out_of_memory",
                  "maximum representable value")  # the last: Warp's 32-bit array sizes


@contextlib.contextmanager
def fits_in_memory(cfg: DictConfig, device: torch.device):
    """Turn an allocation failure while building into one line that says what to lower."""
    try:
        yield
    except Exception as exc:
        if device.type != "cuda" or not any(s in str(exc).lower() for s in _OUT_OF_MEMORY):
            raise
        free, total = torch.cuda.mem_get_info(device)
        raise UserError(
            f"env.num_envs={cfg.env.num_envs} does not fit on {torch.cuda.get_device_name(device)} "
            f"({free / 2**30:.1f} of {total / 2**30:.1f} GiB free): lower env.num_envs"
        ) from None


class RunObserver(Protocol):
    """Sees a run as it trains (Ray Tune's reporting: robolearn/tune.py)."""

    def row(self, row: dict, objective: float) -> None: ...
    def checkpoint(self, path: Path) -> None: ...
    def stop_requested(self) -> bool:
        """Stop at the next iteration boundary, with a checkpoint, as a signal does (raised as Interrupted)."""
    def save_at(self, iteration: int) -> bool:
        """A checkpoint after this iteration too (ASHA's rungs, where it may stop the trial)."""


def train(cfg: DictConfig, run_dir: Path, ranks: Ranks | None = None, observer: RunObserver | None = None,
          start_from: Path | None = None) -> float | None:  # fmt: skip
    """Train (or resume) into run_dir: config, manifest, metrics, loggers, clips, checkpoints, export.
    Returns the run's objective (objective.py) on rank 0; under torchrun (`ranks`) every rank
    calls this, and only rank 0 writes the run directory. `start_from`: a checkpoint file (of this
    run or another, PBT's exploit) to continue from in run_dir, with this config and fresh random
    streams; `observer` sees every metrics row and checkpoint."""
    ranks = ranks or Ranks()
    hold_heap()  # the update's buffers reused, not handed back to the kernel after every minibatch (heap.py)
    check_train_cfg(cfg, ranks.world_size)
    check_what_training_reads(cfg)
    check_logger(cfg.logger)
    if ranks.main and not cfg.resume and start_from is None:  # the CLI refuses an explicit hydra.run.dir before Hydra writes
        refuse_existing_run(run_dir)
    backend, device = placement(cfg, ranks)
    ranks.connect(device, cfg.distributed.timeout_s)
    seed_everything(cfg.seed)
    free = torch.cuda.mem_get_info(device)[0] if device.type == "cuda" else 0
    with fits_in_memory(cfg, device):
        env = build_env(cfg, backend, device, ranks=ranks)
    try:
        check_objective(cfg.objective, env)
        with fits_in_memory(cfg, device):
            physics_free = torch.cuda.mem_get_info(device)[0] if device.type == "cuda" else 0
            runner = OnPolicyRunner(env, cfg.algo, cfg.runner, device, ranks)
        if ranks.rank:  # the same networks as rank 0, then exploration and shuffles of its own
            seed_everything(rank_seed(cfg.seed, ranks.rank))
        if device.type == "cuda" and ranks.main:
            now = torch.cuda.mem_get_info(device)[0]
            print(f"GPU memory at start: physics {(free - physics_free) / 2**20:,.0f} MiB, learner "
                  f"{(physics_free - now) / 2**20:,.0f} MiB, {now / 2**20:,.0f} MiB free")
        objective = Objective(cfg.objective)
        resumed_from = None
        source = checkpoint.latest(Path(cfg.resume)) if cfg.resume else start_from
        if source is not None:
            runner.load(checkpoint.load(source), source)
            resumed_from = runner.iteration
            if cfg.resume and resumed_from >= cfg.runner.max_iterations:  # nothing to train: the run stays as it is
                raise UserError(f"runner.max_iterations={cfg.runner.max_iterations}: {cfg.resume} has done {resumed_from} "
                                f"iterations already; valid: more than {resumed_from} (a resume trains up to "
                                "runner.max_iterations)")  # fmt: skip
            if start_from is not None:  # its own exploration and env samples from here, not a replay of the donor's
                seed_everything(_seed([cfg.seed, 3, ranks.rank, runner.iteration]))
                if isinstance(getattr(env, "generator", None), torch.Generator):
                    env.generator.manual_seed(_seed([cfg.seed, 4, ranks.rank, runner.iteration]))
            if ranks.main:
                truncate_metrics(run_dir / "metrics.jsonl", resumed_from)
                for row in read_metrics(run_dir / "metrics.jsonl"):
                    objective.see(row)
        runner.start()  # startup events run before the run's files are written: a failure leaves no run
        if not ranks.main:
            _learn(runner, run_dir, lambda row: None)
            return None
        origin = str(start_from) if start_from is not None else None
        return _train_main(cfg, run_dir, env, runner, backend, device, resumed_from, origin, objective, observer)
    finally:
        env.close()


def _train_main(cfg: DictConfig, run_dir: Path, env, runner: OnPolicyRunner, backend: str, device: torch.device,
                resumed_from: int | None, origin: str | None, objective: Objective,
                observer: RunObserver | None) -> float:  # fmt: skip
    """Rank 0's part of train(): the run directory, loggers and clips around the iterations, the export."""
    run_dir.mkdir(parents=True, exist_ok=True)  # Hydra makes it; Ray Tune's trials do not
    sinks = open_sinks(cfg, run_dir, runner.iteration, backend, str(device))  # W&B failing to start leaves no run
    clips = None
    if cfg.runner.video_interval:
        from robolearn.train_clips import ClipRecorder

        clips = ClipRecorder(env, cfg.runner, run_dir / "videos", cfg.task.name)
        note = clips.schedule_note(cfg.runner.max_iterations)
        if note:
            print(f"note: {note}", flush=True)
    if note := amp_note(cfg.algo.amp, device):
        print(f"note: {note}", flush=True)
    logger = RunLogger(run_dir, cfg.runner.max_iterations, runner.iteration, cfg.runner.progress, sinks, clips)
    try:
        export = cfg.runner.export_onnx and _exportable(env)
        # the manifest first: a resume refuses a bad one before config.yaml is rewritten
        write_manifest(run_dir, describe_run(cfg.seed, cfg.task.name, backend, str(device), resumed_from,
                                             runner.ranks.world_size, origin))  # fmt: skip
        (run_dir / "config.yaml").write_text(OmegaConf.to_yaml(cfg, resolve=True))
        if resumed_from is not None:
            logger.message(f"resuming {run_dir} from iteration {resumed_from}")
        else:
            print(f"training {cfg.task.name} into {run_dir}", flush=True)

        def log(row: dict) -> None:
            objective.see(row)
            logger.log(row)
            if observer is not None:
                observer.row(row, objective.value())

        _learn(runner, run_dir, log, clips, observer)
        logger.end_training()
        with _stops_after_training(runner, run_dir):
            evaluation = _evaluate_or_export(cfg, env, runner, run_dir, export, objective)
        if evaluation is not None:
            logger.evaluation(evaluation, runner.iteration)
            objective.see_evaluation(evaluation)
    finally:
        logger.close()
    return objective.value()


@contextlib.contextmanager
def _stops_after_training(runner: OnPolicyRunner, run_dir: Path):
    """Ctrl+C or SIGTERM while the trained policy is evaluated and exported: the export's own cleanup
    runs (an earlier bundle stays whole), and the line says training ended and how to export."""
    try:
        with terminate_raises():
            yield
    except (KeyboardInterrupt, Terminated) as exc:
        signum = exc.signum if isinstance(exc, Terminated) else signal.SIGINT
        raise Interrupted(signum, run_dir, runner.iteration, _checkpoint_on_stop(runner, run_dir), runner.ranks.world_size,
                          exporting=True) from None  # fmt: skip


def _evaluate_or_export(cfg: DictConfig, env, runner: OnPolicyRunner, run_dir: Path, export: bool,
                        objective: Objective) -> dict | None:  # fmt: skip
    """The trained policy's evaluation: the export's (which also writes the bundle), or one of its own
    where a sweep's objective needs it without an export; None where neither runs."""
    if export:
        from robolearn.export.bundle import TrainedTo, export_bundle

        saved = checkpoint.checkpoint_path(run_dir / "checkpoints", runner.iteration)  # learn() saved the last one
        result = export_bundle(runner.actor_critic, env, run_dir / "export", progress=cfg.runner.progress,
                               trained_to=TrainedTo(runner.iteration, saved if saved.is_file() else None))
        result.print()
        return result.evaluation
    if objective.needs_evaluation:
        from robolearn.evaluate import evaluate

        evaluation, _ = evaluate(env, Controller(runner.actor_critic, env.num_envs, env.device), progress=cfg.runner.progress)
        return evaluation
    return None


def _exportable(env) -> bool:
    """Whether the robot can become a deploy bundle; if not, say why now (one line) rather than
    failing after the last iteration: training still runs, and keeps its checkpoints."""
    from robolearn.export.metadata import bundle_refusal, policy_terms, runtime_gap

    reason = bundle_refusal(env)
    if reason is not None:
        print(f"note: no deploy bundle at the end of this run: {reason}; the checkpoints are kept "
              "(runner.export_onnx=false skips this check)", flush=True)  # fmt: skip
    elif not hasattr(env, "bundle_metadata") and (gap := runtime_gap(policy_terms(env))):
        print(f"note: {gap}", flush=True)
    return reason is None


def _learn(runner: OnPolicyRunner, run_dir: Path, log, clips=None, observer: RunObserver | None = None) -> None:
    """The iterations; a signal (or the observer asking) stops them at an iteration boundary (every
    rank at the same one) with a checkpoint, raised as Interrupted."""
    with stop_on_signals() as stop:  # outside the iterations a signal stops at once
        asked = observer.stop_requested if observer is not None else lambda: False
        try:
            runner.learn(log, run_dir / "checkpoints", should_stop=lambda: stop() or asked(), recorder=clips,
                         saved=observer.checkpoint if observer is not None else None,
                         save_also=observer.save_at if observer is not None else None)  # fmt: skip
        except UserError:  # e.g. a rank died: torchrun's SIGTERM to this one must not cut the line that says so
            stop.ignore_sigterm_after = runner.ranks.distributed
            raise
        stopped = runner.iteration < runner.cfg.max_iterations or stop()  # a stop asked for (the vote), or a late signal
    if stopped:
        raise Interrupted(stop.signum or signal.SIGTERM, run_dir, runner.iteration, _checkpoint_on_stop(runner, run_dir),
                          runner.ranks.world_size)  # fmt: skip


def _checkpoint_on_stop(runner: OnPolicyRunner, run_dir: Path) -> Path | None:
    """The checkpoint of the iteration training stopped after (written now unless it exists)."""
    if runner.iteration == 0:
        return None
    path = checkpoint.checkpoint_path(run_dir / "checkpoints", runner.iteration)
    if runner.saved_at != runner.iteration:  # every rank decides alike (a save is collective)
        runner.save(path)
    return path


def read_metrics(path: Path) -> list[dict]:
    """The rows of a run's metrics.jsonl (none if it does not exist)."""
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def config_of(container: dict) -> DictConfig:
    """A training config from its plain form (what rank 0 hands the other ranks under torchrun)."""
    return OmegaConf.merge(OmegaConf.structured(TrainCfg), container)
