"""How long a training run takes from launch to its first iteration with an empty Warp kernel cache,
with the kernels compiled one module at a time on first launch (`ROBOLEARN_WARP_COMPILE_WORKERS=0`,
Warp's own behaviour) and compiled ahead in parallel (the default: robolearn/physics/warp_kernels.py).

    python scripts/bench_cold_start.py [--task quadruped_flat] [--num-envs 64] [--repeats 2]
                                       [--workers 0 16] [--device cuda]

Each run is `robolearn train task=<task> physics=warp runner.max_iterations=1` in a fresh process
with a fresh, empty kernel cache (a temporary WARP_CACHE_PATH), timed from launch to exit; runs of
the settings alternate so that drift in the machine's load hits both alike. A warm run (the last
cache kept) is timed once at the end: what is not compilation.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time


def run(task: str, num_envs: int, workers: int | None, cache: str, device: str) -> float:
    env = dict(os.environ, WARP_CACHE_PATH=cache)
    if workers is not None:
        env["ROBOLEARN_WARP_COMPILE_WORKERS"] = str(workers)
    with tempfile.TemporaryDirectory() as out:
        command = [sys.executable, "-m", "robolearn", "train", f"task={task}", "physics=warp", f"device={device}",
                   f"env.num_envs={num_envs}", "runner.max_iterations=1", f"hydra.run.dir={out}/run"]  # fmt: skip
        start = time.perf_counter()
        done = subprocess.run(command, env=env, capture_output=True, text=True)
        took = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed:\n{done.stderr[-2000:]}")
    return took


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", default="quadruped_flat")
    parser.add_argument("--num-envs", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--workers", type=int, nargs="+", default=[0, len(os.sched_getaffinity(0))])
    parser.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    args = parser.parse_args()

    import warp

    times: dict[int, list[float]] = {w: [] for w in args.workers}
    with tempfile.TemporaryDirectory() as caches:
        last = ""
        for repeat in range(args.repeats):
            for workers in args.workers:
                last = os.path.join(caches, f"{workers}-{repeat}")
                times[workers].append(run(args.task, args.num_envs, workers, last, args.device))
                print(f"# cold, {workers} compile workers: {times[workers][-1]:.1f} s", flush=True)
        warm = run(args.task, args.num_envs, None, last, args.device)
    print(f"\n{args.task}, {args.num_envs} envs, device {args.device}, {len(os.sched_getaffinity(0))} cores, "
          f"warp-lang {warp.__version__}, {time.strftime('%Y-%m-%d')}: launch to exit of one iteration\n")  # fmt: skip
    print("| kernel cache | compile workers | runs | min s | median s | max s |")
    print("|---|---|---|---|---|---|")
    for workers, values in times.items():
        label = "0 (Warp's lazy, one module at a time)" if workers == 0 else str(workers)
        low, mid, high = min(values), statistics.median(values), max(values)
        print(f"| empty | {label} | {len(values)} | {low:.1f} | {mid:.1f} | {high:.1f} |")
    print(f"| warm | default | 1 | {warm:.1f} | {warm:.1f} | {warm:.1f} |")


if __name__ == "__main__":
    main()
