"""Write a run's deploy bundle: policy.onnx + robot.yaml, checked against the torch policy."""

from __future__ import annotations

import copy
import shutil
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
    """Build the bundle in a sibling folder and put it in place only once parity holds, so a failed
    export never replaces a good bundle."""
    policy = InferencePolicy(copy.deepcopy(actor_critic).cpu())
    staging = out_dir.with_name(out_dir.name + ".tmp")
    shutil.rmtree(staging, ignore_errors=True)
    onnx_path = export_onnx(policy, env.observation_dims()["policy"], staging / "policy.onnx")
    report = check_parity(policy, onnx_path, recorded_obs)
    if not report.ok:
        shutil.rmtree(staging, ignore_errors=True)
        raise UserError(
            f"ONNX parity check failed: max abs difference {report.max_abs_diff:.3g} >= tolerance "
            f"{report.tolerance:.3g} (outputs up to {report.max_abs_output:.3g}); {out_dir} left as it was"
        )
    write_robot_yaml(robot_metadata(env, env.cfg.name), onnx_path, staging / "robot.yaml")
    previous = out_dir.with_name(out_dir.name + ".old")
    shutil.rmtree(previous, ignore_errors=True)
    if out_dir.exists():
        out_dir.rename(previous)
    staging.rename(out_dir)
    shutil.rmtree(previous, ignore_errors=True)
    return report
