"""How a task's recipe learns over seeds: the spread a single training run hides.

    python scripts/seed_sweep.py pendulum_partial --seeds 0-6 --iterations 250 --solved 700
    python scripts/seed_sweep.py pendulum_partial --seeds 0-6 --label lr3e-4 algo.learning_rate=3e-4

Trains `robolearn train task=<task> seed=<s> runner.max_iterations=<n> [overrides]` once per seed, one
OpenMP thread each (as the test suite does), as many at a time as `--jobs`, each pinned to its own core.
For each seed it reads metrics.jsonl: the best 10-iteration mean of the training mean episode return,
the first iteration whose 10-iteration window reaches `--solved` (the window's last iteration), the last
window, and the wall time. Prints one markdown row per seed and a summary row (how many seeds solved,
the median first-solved iteration); `--out` appends the rows as JSON lines. Runs go under a temporary
folder that is removed (`--keep DIR` keeps them).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # robolearn from this checkout


def seed_list(text: str) -> list[int]:
    seeds: list[int] = []
    for part in text.split(","):
        first, _, last = part.partition("-")
        seeds.extend(range(int(first), int(last or first) + 1))
    return seeds


def windows(run_dir: Path) -> list[float]:
    from robolearn.app import read_metrics

    returns = [row["mean_episode_return"] for row in read_metrics(run_dir / "metrics.jsonl")]
    return [sum(returns[i : i + 10]) / 10 for i in range(len(returns) - 9)]


def train(args, seed: int, root: Path, cores: list[int], lock: threading.Lock) -> dict:
    with lock:
        core = cores.pop()
    run_dir = root / f"{args.label}_seed{seed}"
    command = [sys.executable, "-m", "robolearn.cli", "train", f"task={args.task}", f"seed={seed}",
               f"runner.max_iterations={args.iterations}", "runner.progress=false", "runner.video_interval=0",
               "runner.export_onnx=false", f"hydra.run.dir={run_dir}", *args.overrides]  # fmt: skip
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    started = time.perf_counter()
    try:
        result = subprocess.run(command, cwd=root, env=env, capture_output=True, text=True,
                                preexec_fn=lambda: os.sched_setaffinity(0, {core}))  # fmt: skip
    finally:
        with lock:
            cores.append(core)
    wall = time.perf_counter() - started
    if result.returncode != 0:
        return {"label": args.label, "seed": seed, "error": result.stderr.strip().splitlines()[-1:]}
    means = windows(run_dir)
    solved = next((i + 10 for i, w in enumerate(means) if w >= args.solved), None)
    return {"label": args.label, "seed": seed, "overrides": args.overrides, "iterations": args.iterations,
            "best": round(max(means), 1), "first_solved": solved, "last": round(means[-1], 1), "wall_s": round(wall, 1)}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("task")
    parser.add_argument("overrides", nargs="*", help="key=value settings added to every run")
    parser.add_argument("--seeds", default="0-6", help="e.g. 0-6 or 0,3,5")
    parser.add_argument("--iterations", type=int, default=250)
    parser.add_argument("--solved", type=float, required=True, help="the 10-iteration mean return that counts as solved")
    parser.add_argument("--jobs", type=int, default=len(os.sched_getaffinity(0)))
    parser.add_argument("--label", default="recipe")
    parser.add_argument("--out", type=Path, help="append the rows here as JSON lines")
    parser.add_argument("--keep", type=Path, help="keep the runs in this folder")
    args = parser.parse_intermixed_args()

    root = args.keep or Path(tempfile.mkdtemp(prefix="seed_sweep_"))
    root.mkdir(parents=True, exist_ok=True)
    usable = sorted(os.sched_getaffinity(0))
    cores, lock = [usable[i % len(usable)] for i in range(args.jobs)], threading.Lock()
    print("| label | seed | best window | first solved | last window | wall s |\n|---|---|---|---|---|---|", flush=True)
    rows = []
    with ThreadPoolExecutor(args.jobs) as pool:
        for row in pool.map(lambda seed: train(args, seed, root, cores, lock), seed_list(args.seeds)):
            rows.append(row)
            if "error" in row:
                print(f"| {row['label']} | {row['seed']} | failed: {row['error']} |||", flush=True)
            else:
                print(f"| {row['label']} | {row['seed']} | {row['best']} | {row['first_solved'] or '-'} | {row['last']} "
                      f"| {row['wall_s']} |", flush=True)  # fmt: skip
            if args.out:
                with args.out.open("a") as out:
                    out.write(json.dumps(row) + "\n")
    done = [row for row in rows if "error" not in row]
    solved = [row["first_solved"] for row in done if row["first_solved"] is not None]
    median = statistics.median(solved) if solved else "-"
    print(f"| {args.label} | {len(solved)} of {len(rows)} solved | median best {statistics.median(r['best'] for r in done) if done else '-'} "
          f"| median first solved {median} | | |")  # fmt: skip
    if not args.keep:
        subprocess.run(["rm", "-rf", str(root)], check=False)


if __name__ == "__main__":
    main()
