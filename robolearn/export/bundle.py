"""Write a run's deploy bundle: policy.onnx + robot.yaml, checked against the torch policy."""

from __future__ import annotations

import copy
from pathlib import Path

import torch

from robolearn.envs.batched_env import BatchedEnv
from robolearn.errors import UserError
from robolearn.export.metadata import robot_metadata, write_robot_yaml
from robolearn.export.onnx import ParityReport, check_parity, export_onnx
from robolearn.rl.models import ActorCritic, InferencePolicy


def record_observations(env: BatchedEnv, actor_critic: ActorCritic, steps: int = 32) -> torch.Tensor:
    """Policy observations met while running the deterministic policy: [steps * N, D]."""
    seen = []
    with torch.inference_mode():
        obs = env.reset()
        for _ in range(steps):
            seen.append(obs["policy"].clone())
            obs, *_ = env.step(actor_critic.action_mean(obs["policy"]))
    return torch.cat(seen)


def export_bundle(actor_critic: ActorCritic, env: BatchedEnv, out_dir: Path, recorded_obs: torch.Tensor) -> ParityReport:
    policy = InferencePolicy(copy.deepcopy(actor_critic).cpu())
    onnx_path = export_onnx(policy, env.observation_dims()["policy"], out_dir / "policy.onnx")
    report = check_parity(policy, onnx_path, recorded_obs)
    write_robot_yaml(robot_metadata(env, env.cfg.name), onnx_path, out_dir / "robot.yaml")
    if not report.ok:
        raise UserError(
            f"ONNX parity check failed for {onnx_path}: max abs difference {report.max_abs_diff:.3g} "
            f">= tolerance {report.tolerance:.3g} (outputs up to {report.max_abs_output:.3g})"
        )
    return report
