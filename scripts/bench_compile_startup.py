"""What env.compile costs at start: build, reset and the first steps of a rollout, eager vs compiled,
with Inductor's on-disk cache empty (cold: a fresh machine) and then filled (warm: every later run).

    python scripts/bench_compile_startup.py [--task quadruped_flat] [--physics warp] [--num-envs 512]
                                            [--steps 30] [--out rows.jsonl]

Each case runs in a fresh process (what a launch pays); the cold and warm compiled cases share one
new cache folder, the warm case second. Reported per case: seconds to build the env, for reset(), for
the steps (inference mode, as the runner collects), and how many graphs Dynamo compiled (a graph
traced again for another grad mode or flag shows here).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time


def one_case(task: str, physics: str, num_envs: int, steps: int, compile: bool) -> dict:
    import torch

    from robolearn.compose import compose_train
    from robolearn.envs.batched_env import BatchedEnv
    from robolearn.registry import get_task

    cfg = compose_train([f"task={task}", f"physics={physics}"])
    t0 = time.perf_counter()
    env = BatchedEnv(cfg.task, get_task(cfg.task.name), num_envs, physics=physics, seed=0,
                     randomization=cfg.randomization, compile=compile)  # fmt: skip
    t1 = time.perf_counter()
    env.reset()
    t2 = time.perf_counter()
    gen = torch.Generator().manual_seed(0)
    with torch.inference_mode():
        for _ in range(steps):
            env.step(torch.randn(num_envs, env.num_actions, generator=gen, device=env.device))
    t3 = time.perf_counter()
    graphs = 0
    if compile:
        import torch._dynamo.utils

        graphs = int(torch._dynamo.utils.counters["stats"]["unique_graphs"])
    return {"build_s": round(t1 - t0, 2), "reset_s": round(t2 - t1, 2), "steps_s": round(t3 - t2, 2),
            "total_s": round(t3 - t0, 2), "graphs": graphs}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--task", default="quadruped_flat")
    parser.add_argument("--physics", default="warp")
    parser.add_argument("--num-envs", type=int, default=512)
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--out", default=None)
    parser.add_argument("--case", choices=("eager", "compiled"), help=argparse.SUPPRESS)  # one child process
    args = parser.parse_args()
    if args.case:
        print(json.dumps(one_case(args.task, args.physics, args.num_envs, args.steps, args.case == "compiled")))
        return
    cache = tempfile.mkdtemp(prefix="inductor-")
    rows = []
    for case, label in (("eager", "eager"), ("compiled", "compiled, cold cache"), ("compiled", "compiled, warm cache")):
        command = [sys.executable, __file__, "--case", case, "--task", args.task, "--physics", args.physics,
                   "--num-envs", str(args.num_envs), "--steps", str(args.steps)]  # fmt: skip
        done = subprocess.run(command, capture_output=True, text=True, env={**os.environ, "TORCHINDUCTOR_CACHE_DIR": cache})
        if done.returncode != 0:
            raise SystemExit(f"{label}: failed\n{done.stderr[-2000:]}")
        row = {"task": args.task, "physics": args.physics, "num_envs": args.num_envs, "steps": args.steps,
               "case": label, **json.loads(done.stdout.strip().splitlines()[-1])}  # fmt: skip
        rows.append(row)
        print(json.dumps(row), flush=True)
    if args.out:
        with open(args.out, "a") as f:
            f.writelines(json.dumps(row) + "\n" for row in rows)


if __name__ == "__main__":
    main()
