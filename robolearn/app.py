"""What the CLI verbs do, given a composed config: build env + runner, train, export."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import torch
from omegaconf import DictConfig, OmegaConf

from robolearn import checkpoint
from robolearn.config import TrainCfg
from robolearn.envs.batched_env import BatchedEnv
from robolearn.errors import UserError, one_line
from robolearn.export.bundle import export_bundle, record_observations
from robolearn.logger import RunLogger
from robolearn.manifest import describe_run, write_manifest
from robolearn.physics import resolve_backend
from robolearn.registry import get_task
from robolearn.rl.models import ActorCritic
from robolearn.rl.runner import OnPolicyRunner


def resolve_device(name: str) -> torch.device:
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        device = torch.device(name)
    except RuntimeError:
        raise UserError(f"unknown device '{name}'; valid: auto, cpu, cuda, cuda:N") from None
    if device.type == "cuda" and not torch.cuda.is_available():
        raise UserError(f"device '{name}' requested but CUDA is not available; use device=cpu or device=auto")
    return device


def seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)


def build_env(cfg: DictConfig, device: torch.device, num_envs: int | None = None) -> BatchedEnv:
    plugin = get_task(cfg.task.name)
    return BatchedEnv(
        cfg.task, plugin, num_envs or cfg.env.num_envs, physics=cfg.physics.backend, device=device,
        seed=cfg.seed, num_threads=cfg.physics.num_threads,
    )  # fmt: skip


def train(cfg: DictConfig, run_dir: Path) -> None:
    """Train (or resume) into run_dir: config, manifest, metrics, checkpoints, export."""
    seed_everything(cfg.seed)
    device = resolve_device(cfg.device)
    env = build_env(cfg, device)
    try:
        runner = OnPolicyRunner(env, cfg.algo, cfg.runner, device)
        resumed_from = None
        if cfg.resume:
            source = checkpoint.latest(Path(cfg.resume))
            runner.load(checkpoint.load(source))
            resumed_from = runner.iteration
        (run_dir / "config.yaml").write_text(OmegaConf.to_yaml(cfg, resolve=True))
        backend = resolve_backend(cfg.physics.backend, device)
        write_manifest(run_dir, describe_run(cfg.seed, cfg.task.name, backend, str(device), resumed_from))
        logger = RunLogger(run_dir, cfg.runner.max_iterations, runner.iteration, cfg.runner.progress)
        if resumed_from is not None:
            logger.message(f"resuming {run_dir} from iteration {resumed_from}")
        try:
            runner.learn(logger.log, run_dir / "checkpoints")
        finally:
            logger.close()
        if cfg.runner.export_onnx:
            recorded = runner.storage.policy_obs.flatten(0, 1)[:4096]
            report = export_bundle(runner.actor_critic, env, run_dir / "export", recorded)
            print(f"exported {run_dir / 'export'} (onnx parity max abs diff {report.max_abs_diff:.2e}, "
                  f"tolerance {report.tolerance:.1e})")
    finally:
        env.close()


def load_run_config(run_dir: Path) -> DictConfig:
    """The resolved config a run was trained with, validated against the schema."""
    path = run_dir / "config.yaml"
    if not path.is_file():
        raise UserError(f"{run_dir} is not a robolearn run directory (no config.yaml)")
    try:
        return OmegaConf.merge(OmegaConf.structured(TrainCfg), OmegaConf.load(path))
    except Exception as exc:
        raise UserError(f"cannot read {path}: {one_line(exc)}") from None


def export_run(run_dir: Path, checkpoint_file: Path | None = None, out: Path | None = None) -> Path:
    """Re-export a run's policy (latest checkpoint unless one is named) as a deploy bundle."""
    cfg = load_run_config(run_dir)
    source = checkpoint_file or checkpoint.latest(run_dir)
    payload = checkpoint.load(source)
    seed_everything(cfg.seed)
    env = build_env(cfg, torch.device("cpu"), num_envs=min(cfg.env.num_envs, 64))
    try:
        actor_critic = ActorCritic.from_config(cfg.algo, env.observation_dims(), env.num_actions)
        actor_critic.load_state_dict(payload["model"])
        out = out or run_dir / "export"
        report = export_bundle(actor_critic, env, out, record_observations(env, actor_critic))
    finally:
        env.close()
    print(
        f"exported {out} from {source.name} (iteration {payload['iteration']}): onnx parity max abs diff "
        f"random {report.random_max_abs_diff:.2e}, recorded {report.recorded_max_abs_diff:.2e} "
        f"over {report.samples} observations (tolerance {report.tolerance:.1e}, |action| up to "
        f"{report.max_abs_output:.3g})"
    )
    return out
