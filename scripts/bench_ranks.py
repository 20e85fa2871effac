"""Training throughput of one process vs torchrun ranks on this machine, same total environments.

    python scripts/bench_ranks.py [--task quadruped_flat] [--num-envs 256] [--iterations 20]
        [--ranks 1 2] [--repeats 2] [-- overrides...]

Each configuration trains as a user would (`robolearn train`, or `torchrun --standalone
--nproc_per_node=K -m robolearn train`) with env.num_envs the total over the ranks, logger and export
off. Reported per configuration: the median env-steps/s over iterations 3.. (every rank's steps,
as metrics.jsonl counts them), the median collection and learning seconds per iteration, and the
wall time from launch to exit, each the best of --repeats launches. On one GPU machine only
ranks=1 can be measured with GPUs; on the CPU every rank shares the cores (threads are split).
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


def launch(ranks: int, task: str, num_envs: int, iterations: int, extra: list[str], run: Path) -> float:
    train = ["-m", "robolearn", "train", f"task={task}", f"env.num_envs={num_envs}", f"runner.max_iterations={iterations}",
             "runner.export_onnx=false", "runner.progress=false", "runner.video_interval=0", "logger=none",
             "physics=mujoco", "device=cpu", f"hydra.run.dir={run}", *extra]  # fmt: skip
    if ranks > 1:
        command = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={ranks}",
                   f"--log-dir={run.parent / 'torchrun-logs'}", *train]  # not a /tmp/torchelastic_* per launch
    else:
        command = [sys.executable, *train]
    start = time.perf_counter()
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode:
        sys.exit(f"{' '.join(command)} failed:\n{result.stderr[-3000:]}")
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--task", default="quadruped_flat")
    parser.add_argument("--num-envs", type=int, default=256)
    parser.add_argument("--iterations", type=int, default=20)
    parser.add_argument("--ranks", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("overrides", nargs="*")
    args = parser.parse_args()
    print("| task | env.num_envs (total) | ranks | env-steps/s | collection s/it | learning s/it | wall s (launch to exit) |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for ranks in args.ranks:
        best = None
        for _ in range(args.repeats):
            with tempfile.TemporaryDirectory() as tmp:
                run = Path(tmp) / "run"
                wall = launch(ranks, args.task, args.num_envs, args.iterations, args.overrides, run)
                rows = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()][2:]
            result = (statistics.median(r["steps_per_s"] for r in rows), statistics.median(r["collection_s"] for r in rows),
                      statistics.median(r["learning_s"] for r in rows), wall)  # fmt: skip
            best = result if best is None or result[0] > best[0] else best
        steps, collect, learn, wall = best
        print(f"| {args.task} | {args.num_envs} | {ranks} | {steps:,.0f} | {collect:.3f} | {learn:.3f} | {wall:.1f} |", flush=True)


if __name__ == "__main__":
    main()
