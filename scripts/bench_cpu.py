"""CPU benchmark: env-pipeline steps/s vs raw MuJoCo stepping, and wall-clock time to solve cartpole.

    python scripts/bench_cpu.py [--num-envs 256 1024] [--seconds 5] [--skip-train]

Rates are control steps per second (each = `decimation` physics steps), measured over a fixed
wall-clock window after a warm-up, for:
  raw rollout   mujoco.rollout alone on preallocated arrays (no robolearn code), all envs
                sharing the nominal model, then with one model copy per env (what per-env
                domain randomization needs on native MuJoCo)
  backend       robolearn's mujoco backend .step() (rollout + state exposed as torch tensors)
  env pipeline  BatchedEnv.step with random actions (actions, physics, terminations, rewards,
                resets with randomization events, observations with noise)
Then `robolearn train` (the default cartpole run) in a subprocess, reporting the wall time of the
first iteration whose mean episode length reaches 95 % of the maximum, and the whole command.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import mujoco
import numpy as np
import torch
from mujoco import rollout

from robolearn.compose import compose_train
from robolearn.envs.batched_env import BatchedEnv
from robolearn.registry import discover_tasks


def rate(step, seconds: float, warmup: int = 20) -> float:
    for _ in range(warmup):
        step()
    n, start = 0, time.perf_counter()
    while (elapsed := time.perf_counter() - start) < seconds:
        step()
        n += 1
    return n / elapsed


def bench_rates(task: str, num_envs: int, seconds: float, threads: int) -> dict:
    cfg = compose_train([f"task={task}"])
    env = BatchedEnv(cfg.task, discover_tasks()[task], num_envs, physics="mujoco",
                     physics_settings={"num_threads": threads})
    model, sub = env.model, env.decimation

    # raw engine: the same rollout call robolearn makes, with nothing around it
    pool = rollout.Rollout(nthread=threads)
    datas = [mujoco.MjData(model) for _ in range(threads)]
    full = mujoco.mjtState.mjSTATE_FULLPHYSICS
    state = np.tile(env.physics.state_dict()["physics_state"].numpy()[0], (num_envs, 1))
    ctrl = np.random.default_rng(0).uniform(-1, 1, (num_envs, sub, model.nu))
    out_state = np.empty((num_envs, sub, mujoco.mj_stateSize(model, full)))
    out_sensor = np.empty((num_envs, sub, model.nsensordata))
    chunk = max(1, num_envs // (4 * threads))

    def raw_step(models):
        pool.rollout(models, datas, state, ctrl, control_spec=int(mujoco.mjtState.mjSTATE_CTRL),
                     skip_checks=True, nstep=sub, state=out_state, sensordata=out_sensor, chunk_size=chunk)
        state[:] = out_state[:, -1]

    raw = num_envs * rate(lambda: raw_step([model] * num_envs), seconds)
    # What per-environment randomization costs the engine itself: one MjModel copy per env.
    copies = [copy.deepcopy(model) for _ in range(num_envs)]
    raw_per_env = num_envs * rate(lambda: raw_step(copies), seconds)
    pool.close()

    env.reset()
    ctrl_t = torch.from_numpy(ctrl[:, 0]).float()  # the same controls as the raw loop
    backend = num_envs * rate(lambda: env.physics.step(ctrl_t, sub), seconds)
    env.reset()
    gen = torch.Generator().manual_seed(0)

    def env_step():
        with torch.inference_mode():
            env.step(torch.rand(num_envs, env.num_actions, generator=gen) * 2 - 1)

    pipeline = num_envs * rate(env_step, seconds)
    env.close()
    return {"task": task, "num_envs": num_envs, "raw_rollout": raw, "raw_per_env_models": raw_per_env,
            "backend": backend, "env_pipeline": pipeline}


def bench_solve(seed: int) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        run = Path(tmp) / "run"
        start = time.perf_counter()
        subprocess.run(
            [sys.executable, "-m", "robolearn.cli", "train", f"seed={seed}", f"hydra.run.dir={run}", "runner.progress=false"],
            check=True, cwd=tmp, capture_output=True,
        )  # fmt: skip
        total = time.perf_counter() - start
        rows = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    target = 0.95 * 250
    solved = next((r for r in rows if r.get("mean_episode_length", 0) >= target), None)
    return {
        "seed": seed,
        "solved_iteration": solved and solved["iteration"],
        "solved_wall_s": solved and solved["wall_time_s"],
        "command_wall_s": total,
        "final_episode_length": rows[-1].get("mean_episode_length"),
        "train_steps_per_s": float(np.median([r["steps_per_s"] for r in rows])),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--num-envs", type=int, nargs="+", default=[256, 1024])
    parser.add_argument("--tasks", nargs="+", default=["cartpole", "pendulum"])
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--skip-train", action="store_true")
    args = parser.parse_args()

    print(f"# {platform.processor() or platform.machine()}, {os.cpu_count()} cores, torch {torch.__version__}, "
          f"mujoco {mujoco.__version__}, {time.strftime('%Y-%m-%d')}")
    print("\n| task | envs | raw rollout | raw, per-env models | backend | env pipeline | pipeline / raw |")
    print("|---|---|---|---|---|---|---|")
    for task in args.tasks:
        for n in args.num_envs:
            r = bench_rates(task, n, args.seconds, args.threads)
            print(f"| {task} | {n} | {r['raw_rollout']:,.0f} | {r['raw_per_env_models']:,.0f} | {r['backend']:,.0f} "
                  f"| {r['env_pipeline']:,.0f} "
                  f"| {r['env_pipeline'] / r['raw_rollout']:.0%} |", flush=True)
    if args.skip_train:
        return
    print("\n| seed | solved at iteration | solved at wall s | whole command s | final ep. length | train steps/s |")
    print("|---|---|---|---|---|---|")
    for seed in args.seeds:
        s = bench_solve(seed)
        solved_s = f"{s['solved_wall_s']:.1f}" if s["solved_wall_s"] is not None else "not solved"
        print(f"| {seed} | {s['solved_iteration']} | {solved_s} | {s['command_wall_s']:.1f} "
              f"| {s['final_episode_length']:.1f} | {s['train_steps_per_s']:,.0f} |", flush=True)


if __name__ == "__main__":
    main()
