"""What training clips (runner.video_interval) cost training.

    python scripts/bench_video_clips.py [--tasks cartpole quadruped_flat] [--iterations 60]
        [--interval 10] [--repeats 3] [--num-envs N (default: each task's recipe)] [--skip-training]

1. Drawing, alone: the clip worker process's CPU time per clip (render.py frames at the clip size,
   the H.264 mp4, the GIF for TensorBoard), from a ClipRecorder fed by an env stepping with zero
   actions, no training beside it: 1 clip and 5 clips, so that the worker's start (imports, GL
   context) and a clip's own cost come apart. This is the least noisy number on a shared machine.

2. Training with and without clips: each task trains `--iterations` iterations in its own
   process, as a user runs it (logger=none, no export), alternately without clips
   (runner.video_interval=0) and with a clip every `--interval` iterations: a short interval, so
   that there are many clips and their cost stands out of the noise. Per clip, the median over
   the pairs of runs of the difference in iteration time (collection + update, from
   metrics.jsonl: the training loop, recording env 0's states included, slowed by the worker where
   it competes for the cores), wall time (also waiting for the last clip at the end) and CPU time
   (the process and its children).

Cost at the default interval (RunnerCfg.video_interval): the measured iteration-time cost of a
clip over that many iterations without clips; worst case: the worker's CPU time per clip (part 1)
over the same, as if every CPU second it spends were taken from training (all cores busy).
`--interval 250 --iterations 500` measures the default interval directly instead.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch

from robolearn.app import build_env
from robolearn.compose import compose_train
from robolearn.config import RunnerCfg
from robolearn.train_clips import ClipRecorder


def cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)  # waited-for descendants, the clip worker included
    return usage.ru_utime + usage.ru_stime


def drawing_cpu(task: str, clips: int, num_envs: int | None, work: Path) -> tuple[float, int]:
    """CPU seconds of the worker process (and its ffmpeg) for `clips` clips, its start included;
    the frames of a clip."""
    cfg = compose_train([f"task={task}", "physics=mujoco", "runner.video_interval=1",
                         *([f"env.num_envs={num_envs}"] if num_envs else [])])  # fmt: skip
    env = build_env(cfg, "mujoco", torch.device("cpu"))
    recorder = ClipRecorder(env, cfg.runner, work / f"videos-{task}-{clips}", task)
    before, iteration = cpu_s(), 0
    env.reset()
    with torch.inference_mode():
        while iteration < clips * recorder.span:
            iteration += 1
            if recorder.recording(iteration):
                for _ in range(cfg.runner.num_steps_per_env):
                    env.step(torch.zeros(env.num_envs, env.num_actions))
                    recorder.record()
    made = len(recorder.finished() + recorder.close())
    env.close()
    assert made == clips and recorder.error is None, (made, recorder.error)
    return cpu_s() - before, recorder.frames


def train(task: str, iterations: int, interval: int, num_envs: int | None, work: Path) -> dict:
    run = work / f"{task}-{interval}-{time.monotonic_ns()}"
    args = [f"task={task}", f"runner.max_iterations={iterations}", f"runner.video_interval={interval}",
            f"runner.save_interval={iterations}", "runner.export_onnx=false", "logger=none", "physics=mujoco",
            f"hydra.run.dir={run}", *([f"env.num_envs={num_envs}"] if num_envs else [])]  # fmt: skip
    start, cpu = time.perf_counter(), cpu_s()
    result = subprocess.run([sys.executable, "-m", "robolearn.cli", "train", *args], cwd=work, capture_output=True, text=True)
    wall, cpu = time.perf_counter() - start, cpu_s() - cpu
    if result.returncode != 0:
        sys.exit(f"robolearn train {' '.join(args)} failed:\n{result.stderr[-3000:]}")
    rows = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    clips = sorted((run / "videos").glob("train_it*.mp4")) if (run / "videos").is_dir() else []
    return {"iteration_s": sum(r["collection_s"] + r["learning_s"] for r in rows), "wall_s": wall, "cpu_s": cpu,
            "clips": len(clips), "iterations": len(rows)}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tasks", nargs="+", default=["cartpole", "quadruped_flat"])
    parser.add_argument("--iterations", type=int, default=60)
    parser.add_argument("--interval", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--num-envs", type=int, default=None, help="default: each task's recipe")
    parser.add_argument("--skip-training", action="store_true", help="part 1 only")
    args = parser.parse_args()
    default = RunnerCfg.video_interval
    print(f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}; {RunnerCfg.video_length_s:g} s clips at "
          f"{RunnerCfg.video_width}x{RunnerCfg.video_height}; default interval {default}\n")  # fmt: skip
    with tempfile.TemporaryDirectory() as tmp:
        drawing = {}
        print("| task | clip frames | worker start, CPU | CPU per clip |\n|---|---|---|---|")
        for task in args.tasks:
            (one, frames), (five, _) = (drawing_cpu(task, n, args.num_envs, Path(tmp)) for n in (1, 5))
            drawing[task] = (five - one) / 4
            print(f"| {task} | {frames} | {one - drawing[task]:.2f} s | {1e3 * drawing[task]:.0f} ms |", flush=True)
        if args.skip_training:
            return
        print(f"\n{args.iterations} iterations, clips every {args.interval}, {args.num_envs or 'recipe'} envs, "
              f"{args.repeats} pairs of runs\n")  # fmt: skip
        print("| task | iteration ms without clips | clips per run | per clip: iteration time | wall time | CPU time "
              f"| cost at the default interval ({default}) | worst case |")  # fmt: skip
        print("|---|---|---|---|---|---|---|---|")
        for task in args.tasks:
            base, with_clips = [], []
            for _ in range(args.repeats):  # alternated: slow drifts of the machine hit both
                base.append(train(task, args.iterations, 0, args.num_envs, Path(tmp)))
                with_clips.append(train(task, args.iterations, args.interval, args.num_envs, Path(tmp)))
            clips = with_clips[0]["clips"]
            per_iteration = statistics.median(b["iteration_s"] for b in base) / args.iterations
            cost = {key: statistics.median(c[key] - b[key] for b, c in zip(base, with_clips)) / clips
                    for key in ("iteration_s", "wall_s", "cpu_s")}  # fmt: skip
            share = lambda seconds, interval: 100 * seconds / (interval * per_iteration)  # noqa: E731
            print(f"| {task} | {1e3 * per_iteration:.1f} | {clips} | {1e3 * cost['iteration_s']:.0f} ms "
                  f"({share(cost['iteration_s'], args.interval):.1f}% at every {args.interval}) | "
                  f"{1e3 * cost['wall_s']:.0f} ms | {1e3 * cost['cpu_s']:.0f} ms | {share(cost['iteration_s'], default):.1f}% | "
                  f"{share(drawing[task], default):.1f}% |", flush=True)  # fmt: skip
    print(f"\nload average at the end: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
