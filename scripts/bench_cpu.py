"""CPU benchmark: pipeline rates, start-up and small-batch overhead, update time, time to solve.

    python scripts/bench_cpu.py [--sections rates overhead update solve] [--num-envs 256 1024]
        [--seconds 5] [--seeds 0 1 2]

Sections (all by default):
  rates     control steps per second (each = `decimation` physics steps), over a fixed wall-clock
            window after a warm-up, for: raw `mujoco.rollout` on preallocated arrays (all envs
            sharing the nominal model, then one model copy per env, what per-env randomization
            needs); robolearn's mujoco backend .step(); BatchedEnv.step with random actions
            (actions, physics, terminations, rewards, resets with events, noisy observations)
  overhead  `python -c "import torch"` vs `robolearn train` from launch to its first metrics row
            (medians of 5 launches); one cartpole iteration (24 steps + update) with 16 envs
            (median over 40 iterations after 5 warm-up ones), collection and update apart
  update    the PPO update's time per iteration (cartpole, 24 steps per env) at each --num-envs,
            eager and with algo.compile=true (median over 20 iterations after warm-up ones)
  solve     `robolearn train` from launch until solved, per seed: cartpole when the reported mean
            episode length reaches 95 % of its 250 steps, pendulum when the mean return reaches
            700 (max 1000); each metrics row is timed as it appears in metrics.jsonl
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import mujoco
import numpy as np
import torch
from mujoco import rollout

from robolearn.app import build_env
from robolearn.compose import compose_train
from robolearn.envs.batched_env import BatchedEnv
from robolearn.registry import get_task
from robolearn.rl.runner import OnPolicyRunner

SOLVED = {"cartpole": ("mean_episode_length", 0.95 * 250, 100), "pendulum": ("mean_episode_return", 700.0, 300)}
"""task: (metrics key, threshold, max iterations)."""


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
    env = BatchedEnv(cfg.task, get_task(task), num_envs, physics="mujoco",
                     physics_settings={"num_threads": threads})  # fmt: skip
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
                     skip_checks=True, nstep=sub, state=out_state, sensordata=out_sensor, chunk_size=chunk)  # fmt: skip
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
            "backend": backend, "env_pipeline": pipeline}  # fmt: skip


def train_command(run: Path, *overrides: str) -> list[str]:
    return [sys.executable, "-m", "robolearn.cli", "train", f"hydra.run.dir={run}", "runner.progress=false", *overrides]


def watch_rows(command: list[str], cwd: str, on_row) -> float:
    """Run `command`, calling on_row(row, seconds since launch) for each metrics.jsonl row as it
    appears; returns the command's wall time. The run directory is the command's hydra.run.dir."""
    run = Path(next(a.split("=", 1)[1] for a in command if a.startswith("hydra.run.dir=")))
    start = time.perf_counter()
    proc = subprocess.Popen(command, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    handle, pending, stopped = None, "", False
    while True:
        finished = proc.poll() is not None
        path = run / "metrics.jsonl"
        if handle is None and path.exists():
            handle = open(path)
        if handle is not None:
            pending += handle.read()
            now = time.perf_counter() - start
            *lines, pending = pending.split("\n")
            for line in lines:
                if on_row(json.loads(line), now) and not stopped:
                    proc.terminate()  # train stops at the iteration boundary and exits 143
                    stopped = True
        if finished:
            break
        time.sleep(0.01)
    if handle is not None:
        handle.close()
    if proc.returncode != 0 and not (stopped and proc.returncode in (-15, 143)):
        raise SystemExit(f"train failed: {proc.stderr.read().decode()[-2000:]}")
    return time.perf_counter() - start


def bench_overhead(launches: int = 5) -> dict:
    imports = []
    for _ in range(launches):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", "import torch"], check=True)
        imports.append(time.perf_counter() - start)
    first = []
    for _ in range(launches):
        with tempfile.TemporaryDirectory() as tmp:
            seen: list[float] = []
            watch_rows(train_command(Path(tmp) / "run", "runner.max_iterations=2", "runner.export_onnx=false"), tmp,
                       lambda row, t: seen.append(t) or True)  # stop at the first row
            first.append(seen[0])
    small = iteration_times("cartpole", 16, iterations=40)
    return {"import_torch_s": statistics.median(imports), "launch_to_first_iteration_s": statistics.median(first),
            "iteration_16_envs_ms": small["iteration_ms"], "collection_16_envs_ms": small["collection_ms"],
            "update_16_envs_ms": small["update_ms"]}  # fmt: skip


def iteration_times(task: str, num_envs: int, iterations: int, warmup: int = 5, overrides: tuple = ()) -> dict:
    cfg = compose_train([f"task={task}", f"env.num_envs={num_envs}", "physics=mujoco", *overrides])
    env = build_env(cfg, "mujoco", torch.device("cpu"))
    cfg.runner.max_iterations = iterations + warmup
    runner = OnPolicyRunner(env, cfg.algo, cfg.runner, torch.device("cpu"))
    rows: list[dict] = []
    runner.learn(rows.append)
    env.close()
    rows = rows[warmup:]
    return {"iteration_ms": 1e3 * statistics.median(r["collection_s"] + r["learning_s"] for r in rows),
            "collection_ms": 1e3 * statistics.median(r["collection_s"] for r in rows),
            "update_ms": 1e3 * statistics.median(r["learning_s"] for r in rows)}  # fmt: skip


def bench_solve(task: str, seed: int, overrides: tuple = ()) -> dict:
    key, threshold, iterations = SOLVED[task]
    solved: dict = {}
    rows: list[dict] = []

    def on_row(row: dict, t: float) -> bool:
        rows.append(row)
        if not solved and row.get(key, -np.inf) >= threshold:
            solved.update(iteration=row["iteration"], from_launch_s=t, training_s=row["wall_time_s"])
        return False  # let the run finish (its checkpoint and export are part of the command)

    with tempfile.TemporaryDirectory() as tmp:
        total = watch_rows(train_command(Path(tmp) / "run", f"task={task}", f"seed={seed}",
                                         f"runner.max_iterations={iterations}", *overrides), tmp, on_row)  # fmt: skip
    return {"task": task, "seed": seed, "solved_iteration": solved.get("iteration"),
            "solved_from_launch_s": solved.get("from_launch_s"), "solved_training_s": solved.get("training_s"),
            "command_s": total, "final": rows[-1].get(key),
            "train_steps_per_s": float(np.median([r["steps_per_s"] for r in rows]))}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sections", nargs="+", default=["rates", "overhead", "update", "solve"],
                        choices=["rates", "overhead", "update", "solve"])  # fmt: skip
    parser.add_argument("--num-envs", type=int, nargs="+", default=[256, 1024])
    parser.add_argument("--tasks", nargs="+", default=["cartpole", "pendulum"])
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--override", nargs="*", default=[], help="extra `robolearn train` overrides for solve, "
                        "e.g. algo.num_mini_batches=2 (a recipe variant)")  # fmt: skip
    args = parser.parse_args()

    print(f"# {platform.processor() or platform.machine()}, {os.cpu_count()} cores, torch {torch.__version__}, "
          f"mujoco {mujoco.__version__}, {time.strftime('%Y-%m-%d')}")  # fmt: skip
    if "rates" in args.sections:
        print("\n| task | envs | raw rollout | raw, per-env models | backend | env pipeline | pipeline / raw |")
        print("|---|---|---|---|---|---|---|")
        for task in args.tasks:
            for n in args.num_envs:
                r = bench_rates(task, n, args.seconds, args.threads)
                print(f"| {task} | {n} | {r['raw_rollout']:,.0f} | {r['raw_per_env_models']:,.0f} | {r['backend']:,.0f} "
                      f"| {r['env_pipeline']:,.0f} | {r['env_pipeline'] / r['raw_rollout']:.0%} |", flush=True)  # fmt: skip
    if "overhead" in args.sections:
        o = bench_overhead()
        print("\n| import torch s | launch to first iteration s | difference s | 16-env iteration ms | "
              "of which collection ms | of which update ms |")
        print("|---|---|---|---|---|---|")
        print(f"| {o['import_torch_s']:.2f} | {o['launch_to_first_iteration_s']:.2f} "
              f"| {o['launch_to_first_iteration_s'] - o['import_torch_s']:.2f} | {o['iteration_16_envs_ms']:.1f} "
              f"| {o['collection_16_envs_ms']:.1f} | {o['update_16_envs_ms']:.1f} |", flush=True)  # fmt: skip
    if "update" in args.sections:
        print("\n| envs | update ms, eager | update ms, algo.compile=true |")
        print("|---|---|---|")
        for n in args.num_envs:
            eager = iteration_times("cartpole", n, iterations=20)["update_ms"]
            compiled = iteration_times("cartpole", n, iterations=20, warmup=3, overrides=("algo.compile=true",))
            print(f"| {n} | {eager:.1f} | {compiled['update_ms']:.1f} |", flush=True)
    if "solve" in args.sections:
        print("\n| task | seed | solved at iteration | from launch s | of which training s | whole command s "
              "| final | train steps/s |")
        print("|---|---|---|---|---|---|---|---|")
        for task in args.tasks:
            for seed in args.seeds:
                s = bench_solve(task, seed, tuple(args.override))
                launch = f"{s['solved_from_launch_s']:.1f}" if s["solved_from_launch_s"] is not None else "not solved"
                training = f"{s['solved_training_s']:.1f}" if s["solved_training_s"] is not None else "-"
                print(f"| {task} | {seed} | {s['solved_iteration']} | {launch} | {training} | {s['command_s']:.1f} "
                      f"| {s['final']:.1f} | {s['train_steps_per_s']:,.0f} |", flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
