"""Time to a walking quadruped: train as a user would, then score every checkpoint.

    python scripts/bench_quadruped.py [--task quadruped_flat] [--physics warp] [--num-envs 4096]
        [--iterations 1500] [--save-interval 25] [--eval-envs 512] [--out results.json] [-- overrides...]
    python scripts/bench_quadruped.py --pipeline [--physics mujoco] [--num-envs 512]

--pipeline only measures env-pipeline steps/s (BatchedEnv.step, random actions) of
quadruped_flat and quadruped_rough under each randomization preset: what latency, pushes,
gravity tilt and the terrain cost.

1. Runs `robolearn train task=<task> physics=<physics> env.num_envs=<n>` in its own process,
   keeping a checkpoint every `--save-interval` iterations; the wall clock starts at launch
   (imports, kernel compilation and graph capture included).
2. Scores each checkpoint with the deterministic policy on forward commands only (x in [0, 1]
   m/s, no lateral or yaw command, no standing), randomization on, one full episode per env
   (an Isaac Lab velocity task's run is scored on Isaac Lab with the same commands):
   tracking error = mean |commanded - actual| planar base velocity (m/s), fall rate = fraction
   of episodes that terminated.
3. Reports the first checkpoint with tracking error < 0.2 m/s and fall rate < 5 %, its wall time
   (the checkpoint file's time since launch), and training env-steps/s (median over iterations).

For quadruped_rough it also reports the mean terrain level per logged iteration.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch

from robolearn import checkpoint
from robolearn.app import build_env
from robolearn.run_policy import load_run_config
from robolearn.evaluate import evaluate
from robolearn.rl.models import ActorCritic, Controller

FORWARD = ["task.commands.base_velocity.ranges.lin_vel_x=[0.0,1.0]", "task.commands.base_velocity.ranges.lin_vel_y=[0.0,0.0]",
           "task.commands.base_velocity.ranges.ang_vel_z=[0.0,0.0]", "task.commands.base_velocity.standing_probability=0.0",
           "task.commands.base_velocity.resampling_time_s=[100.0,100.0]"]  # fmt: skip
ISAACLAB_FORWARD = [f"env.commands.base_velocity.{k}" for k in (
    "ranges.lin_vel_x=[0.0,1.0]", "ranges.lin_vel_y=[0.0,0.0]", "ranges.ang_vel_z=[0.0,0.0]", "heading_command=false",
    "rel_standing_envs=0.0", "resampling_time_range=[100.0,100.0]")]  # fmt: skip
"""The same forward-only commands for an Isaac Lab velocity task (task=isaaclab:..., e.g. its run from
scripts/isaaclab/gpu_compare.sh): Isaac Lab's own overrides, after the run's."""
TARGET_ERROR, TARGET_FALLS = 0.2, 0.05


def train(args, run_dir: Path) -> float:
    command = [sys.executable, "-m", "robolearn.cli", "train", f"task={args.task}", f"physics={args.physics}",
               f"env.num_envs={args.num_envs}", f"runner.max_iterations={args.iterations}",
               f"runner.save_interval={args.save_interval}", "runner.keep_checkpoints=100000", "runner.progress=false",
               f"hydra.run.dir={run_dir}", *args.overrides]  # fmt: skip
    start = time.time()
    subprocess.run(command, check=True)
    return start


def forward_overrides(run_dir: Path) -> list[str]:
    trained = load_run_config(run_dir)
    if not trained.task.name.startswith("isaaclab:"):
        return FORWARD
    given = [*trained.isaaclab.overrides, *ISAACLAB_FORWARD]
    return ["isaaclab.overrides=[" + ",".join(f'"{o}"' for o in given) + "]"]


def score(run_dir: Path, ckpt: Path, physics: str, num_envs: int, overrides: list[str]) -> dict:
    """`overrides`: forward_overrides(run_dir)."""
    cfg = load_run_config(run_dir, overrides)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    env = build_env(cfg, physics, device, num_envs=num_envs)
    model = ActorCritic.from_config(cfg.algo, env.observation_dims(), env.num_actions).to(device)
    payload = checkpoint.load(ckpt)
    checkpoint.restore(model, payload["model"], ckpt)
    try:
        metrics, _ = evaluate(env, Controller(model, env.num_envs, device))
    finally:
        env.close()
    return {"iteration": payload["iteration"], "tracking_error": metrics["lin_vel_error"],
            "fall_rate": metrics["terminated_fraction"], "episode_length_s": metrics["episode_length_s"]}  # fmt: skip


def pipeline_rates(physics: str, num_envs: int, seconds: float = 10.0) -> list[dict]:
    from robolearn.compose import compose_train
    from robolearn.envs.batched_env import BatchedEnv
    from robolearn.registry import get_task

    device = torch.device("cuda" if physics != "mujoco" and torch.cuda.is_available() else "cpu")
    rows = []
    for task, preset in [("quadruped_flat", "none"), ("quadruped_flat", "default"), ("quadruped_flat", "sim2real"),
                         ("quadruped_rough", "sim2real")]:  # fmt: skip
        cfg = compose_train([f"task={task}", f"randomization={preset}"])
        env = BatchedEnv(cfg.task, get_task(task), num_envs, physics=physics, device=device,
                         randomization=cfg.randomization)  # fmt: skip
        env.reset()
        actions = torch.randn(num_envs, env.num_actions, device=device)
        for _ in range(20):
            env.step(actions)
        steps, start = 0, time.perf_counter()
        while time.perf_counter() - start < seconds:
            env.step(actions)
            steps += 1
        if device.type == "cuda":
            torch.cuda.synchronize()
        rate = steps * num_envs / (time.perf_counter() - start)
        rows.append({"task": task, "randomization": preset, "physics": physics, "num_envs": num_envs, "steps_per_s": rate})
        print(json.dumps(rows[-1]), flush=True)
        env.close()
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--task", default="quadruped_flat")
    parser.add_argument("--physics", default="warp")
    parser.add_argument("--num-envs", type=int, default=4096)
    parser.add_argument("--iterations", type=int, default=1500)
    parser.add_argument("--save-interval", type=int, default=25)
    parser.add_argument("--eval-envs", type=int, default=512)
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--run-dir", type=Path, default=None, help="keep the run here (default: a temporary folder)")
    parser.add_argument("--stop-at-target", action="store_true", help="score no checkpoint after the first on target")
    parser.add_argument("--from-iteration", type=int, default=0,
                        help="score only checkpoints from this iteration on (split a long scoring into parts)")
    parser.add_argument("--pipeline", action="store_true", help="only env-pipeline steps/s per task and preset")
    parser.add_argument("--score", type=Path, default=None, metavar="RUN_DIR",
                        help="train nothing: score the checkpoints of a run made elsewhere (e.g. on the GPU machine)")
    parser.add_argument("--launch-epoch", type=Path, default=None,
                        help="with --score: a file holding the run's launch time (seconds since the epoch); "
                             "wall times are checkpoint file times since then, so score the files as they were written")
    parser.add_argument("overrides", nargs="*", help="more `robolearn train` overrides (after --)")
    args = parser.parse_args()
    if args.pipeline:
        rows = pipeline_rates(args.physics, args.num_envs)
        if args.out:
            args.out.write_text(json.dumps(rows, indent=2) + "\n")
        return

    if args.score:  # checkpoint file times are measured from the launch written beside the run
        run_dir, start = args.score, float(args.launch_epoch.read_text()) if args.launch_epoch else None
    else:
        run_dir = args.run_dir or Path(tempfile.mkdtemp(prefix="bench_quadruped_")) / "run"
        start = train(args, run_dir)
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    manifest = json.loads((run_dir / "manifest.json").read_text()) if (run_dir / "manifest.json").exists() else {}
    trained = load_run_config(run_dir, [])  # what the run was (with --score, trained elsewhere)
    isaaclab = trained.task.name.startswith("isaaclab:")  # trained and scored on Isaac Lab's own physics
    result = {
        "task": trained.task.name, "physics": manifest.get("physics_backend") or ("isaaclab" if isaaclab else args.physics),
        "num_envs": trained.env.num_envs,
        "trained_on": manifest.get("device"), "scored_with": "isaaclab" if isaaclab else args.physics,
        "scored_on": torch.cuda.get_device_name() if torch.cuda.is_available() else "cpu",
        "date": time.strftime("%Y-%m-%d"), "train_wall_s": rows[-1]["wall_time_s"],
        "env_steps_per_s_median": statistics.median(r["steps_per_s"] for r in rows),
        "checkpoints": [], "time_to_target_s": None,
    }  # fmt: skip
    if any("curriculum/terrain_level_mean" in r for r in rows):
        result["terrain_level_mean"] = [(r["iteration"], r["curriculum/terrain_level_mean"]) for r in rows
                                        if "curriculum/terrain_level_mean" in r][:: max(1, len(rows) // 30)]  # fmt: skip
    forward = forward_overrides(run_dir)
    for ckpt in checkpoint.list_checkpoints(run_dir / "checkpoints"):
        if checkpoint.iteration_of(ckpt) < args.from_iteration:
            continue
        wall = ckpt.stat().st_mtime - start if start is not None else None
        row = {**score(run_dir, ckpt, args.physics, args.eval_envs, forward), "wall_s": wall}
        result["checkpoints"].append(row)
        print(json.dumps(row), flush=True)
        if result["time_to_target_s"] is None and row["tracking_error"] < TARGET_ERROR and row["fall_rate"] < TARGET_FALLS:
            result["time_to_target_s"], result["target_iteration"] = row["wall_s"], row["iteration"]
            if args.stop_at_target:
                break
    print(json.dumps({k: v for k, v in result.items() if k != "checkpoints"}, indent=2))
    if args.out:
        args.out.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
