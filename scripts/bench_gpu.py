"""GPU benchmark: raw engine vs robolearn env pipeline vs full training, per backend and env count.

    python scripts/bench_gpu.py [--backends warp mjx] [--num-envs 1024 4096 16384] [--solve]
                                [--out results.jsonl]

Rates are control steps per second summed over environments (cartpole: 2 physics steps each):
  raw engine    the engine alone, no robolearn code: mujoco_warp's decimated step captured in a
                CUDA graph and replayed; MJX's jitted vmap(lax.scan(step)) on device arrays
  env pipeline  BatchedEnv.step with random actions on the GPU (torch + engine, no host sync)
  training      OnPolicyRunner iterations (rollout + PPO update), median over measured iterations
  memory        GPU memory taken by building the env (physics) and the learner, from cudaMemGetInfo
--solve additionally runs `robolearn train physics=<backend> env.num_envs=4096` as a user would
and reports the wall time, from launch (imports and compilation included), until an iteration's
mean episode length reaches 95 % of the maximum.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch

from robolearn.compose import compose_train
from robolearn.config import RunnerCfg
from robolearn.envs.batched_env import BatchedEnv
from robolearn.paths import assets_dir
from robolearn.physics import load_model
from robolearn.registry import discover_tasks
from robolearn.rl.runner import OnPolicyRunner

DEVICE = torch.device("cuda")
SUBSTEPS = 2


def timed(step, seconds: float, warmup: int = 10) -> float:
    """Calls per second of `step` (which must leave its work on the GPU), after warm-up."""
    for _ in range(warmup):
        step()
    torch.cuda.synchronize()
    n, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        for _ in range(20):
            step()
        n += 20
        torch.cuda.synchronize()
    return n / (time.perf_counter() - start)


def raw_warp(num_envs: int, seconds: float) -> float:
    import mujoco_warp as mjw
    import warp as wp

    wp.config.quiet = True
    model = load_model(assets_dir() / "cartpole.xml")
    m = mjw.put_model(model)
    m.opt.warn_overflow = 0
    d = mjw.make_data(model, nworld=num_envs)
    wp.to_torch(d.ctrl).uniform_(-1, 1)
    mjw.step(m, d)  # compile
    with wp.ScopedCapture() as capture:
        for _ in range(SUBSTEPS):
            mjw.step(m, d)
    return num_envs * timed(lambda: wp.capture_launch(capture.graph), seconds)


def raw_mjx(num_envs: int, seconds: float) -> float:
    import jax
    import jax.numpy as jnp
    from mujoco import mjx

    model = load_model(assets_dir() / "cartpole.xml")
    mx, d0 = mjx.put_model(model, impl="jax"), mjx.make_data(model, impl="jax")
    data = jax.vmap(lambda _: d0)(jnp.arange(num_envs))
    ctrl = jax.random.uniform(jax.random.PRNGKey(0), (num_envs, model.nu), minval=-1, maxval=1)

    def substeps(d, c):
        d = d.replace(ctrl=c)
        return jax.lax.scan(lambda d, _: (mjx.step(mx, d), None), d, None, length=SUBSTEPS)[0]

    step = jax.jit(jax.vmap(substeps))
    state = {"d": data}

    def run():
        state["d"] = step(state["d"], ctrl)

    run()
    jax.block_until_ready(state["d"].qpos)
    start, n = time.perf_counter(), 0
    while time.perf_counter() - start < seconds:
        for _ in range(20):
            run()
        n += 20
        jax.block_until_ready(state["d"].qpos)
    return num_envs * n / (time.perf_counter() - start)


def make_env(backend: str, num_envs: int, cuda_graph: bool = True) -> BatchedEnv:
    cfg = compose_train(["task=cartpole", f"physics={backend}"])
    env = BatchedEnv(cfg.task, discover_tasks()["cartpole"], num_envs, physics=backend, device=DEVICE, seed=3,
                     cuda_graph=cuda_graph)
    env.reset()
    with torch.inference_mode():
        env.step(torch.zeros(num_envs, env.num_actions, device=DEVICE))  # graphs captured here, not while timing
    return env


def graph_parity(backend: str, num_envs: int = 1024, steps: int = 100) -> float:
    """Max |obs difference| between the graphed and the eager env after `steps` identical steps."""
    envs = [make_env(backend, num_envs, cuda_graph=flag) for flag in (True, False)]
    gen = torch.Generator(DEVICE).manual_seed(0)
    with torch.inference_mode():
        for _ in range(steps):
            action = torch.rand(num_envs, 1, generator=gen, device=DEVICE) * 2 - 1
            outs = [env.step(action) for env in envs]
    diff = max((outs[0][0][g] - outs[1][0][g]).abs().max().item() for g in ("policy", "critic"))
    for env in envs:
        env.close()
    return diff


def pipeline_rate(env: BatchedEnv, seconds: float) -> float:
    actions = torch.empty(env.num_envs, env.num_actions, device=DEVICE)

    def env_step():
        with torch.inference_mode():
            env.step(actions.uniform_(-1, 1))

    return env.num_envs * timed(env_step, seconds)


def pipeline_and_training(backend: str, num_envs: int, seconds: float, iterations: int) -> dict:
    eager = make_env(backend, num_envs, cuda_graph=False)
    eager_rate = pipeline_rate(eager, seconds)
    eager.close()
    torch.cuda.synchronize()
    free0 = torch.cuda.mem_get_info()[0]
    env = make_env(backend, num_envs)
    torch.cuda.synchronize()
    free1 = torch.cuda.mem_get_info()[0]
    pipeline = pipeline_rate(env, seconds)
    cfg = compose_train(["task=cartpole", f"physics={backend}"])
    runner = OnPolicyRunner(env, cfg.algo, RunnerCfg(num_steps_per_env=24, max_iterations=iterations + 2), DEVICE)
    torch.cuda.synchronize()
    free2 = torch.cuda.mem_get_info()[0]
    rows: list[dict] = []
    runner.learn(rows.append)
    measured = sorted(r["steps_per_s"] for r in rows[2:])
    env.close()
    return {
        "env_pipeline": pipeline,
        "env_pipeline_eager": eager_rate,
        "training": measured[len(measured) // 2],
        "physics_mib": (free0 - free1) / 2**20,
        "learner_mib": (free1 - free2) / 2**20,
    }


def solve_time(backend: str, num_envs: int, timeout: float = 300.0) -> dict:
    target = 0.95 * 250
    with tempfile.TemporaryDirectory() as tmp:
        run = Path(tmp) / "run"
        start = time.perf_counter()
        proc = subprocess.Popen(
            [sys.executable, "-m", "robolearn.cli", "train", f"physics={backend}", f"env.num_envs={num_envs}",
             "runner.max_iterations=150", "runner.progress=false", "runner.export_onnx=false", f"hydra.run.dir={run}"],
            cwd=tmp, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        )  # fmt: skip
        solved = None
        while proc.poll() is None and time.perf_counter() - start < timeout:
            metrics = run / "metrics.jsonl"
            if solved is None and metrics.is_file():
                for line in metrics.read_text().splitlines():
                    try:
                        row = json.loads(line)
                    except json.JSONDecodeError:  # the line being written right now
                        break
                    if row.get("mean_episode_length", 0) >= target:
                        solved = {"iteration": row["iteration"], "wall_from_launch_s": time.perf_counter() - start,
                                  "training_wall_s": row["wall_time_s"]}
                        break
            time.sleep(0.05)
        proc.kill()
        output = proc.communicate()[0]
    first = next((line for line in output.splitlines() if line.startswith("GPU memory")), "")
    return {"solved": solved, "memory_line": first}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backends", nargs="+", default=["warp", "mjx"])
    parser.add_argument("--num-envs", type=int, nargs="+", default=[1024, 4096, 16384])
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--iterations", type=int, default=4)
    parser.add_argument("--solve", action="store_true")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    out = open(args.out, "a") if args.out else None

    def record(row: dict) -> None:
        print(json.dumps(row), flush=True)
        if out:
            out.write(json.dumps(row) + "\n")
            out.flush()

    record({"gpu": torch.cuda.get_device_name(), "torch": torch.__version__, "date": time.strftime("%Y-%m-%d"),
            "warp_cache": os.environ.get("WARP_CACHE_PATH")})
    raw = {"warp": raw_warp, "mjx": raw_mjx}
    for backend in args.backends:
        record({"backend": backend, "graph_vs_eager_max_obs_diff_after_100_steps": graph_parity(backend)})
        for n in args.num_envs:
            t0 = time.perf_counter()
            row = {"backend": backend, "num_envs": n, "raw_engine": raw[backend](n, args.seconds)}
            row.update(pipeline_and_training(backend, n, args.seconds, args.iterations))
            row["pipeline_over_raw"] = row["env_pipeline"] / row["raw_engine"]
            row["bench_s"] = time.perf_counter() - t0
            record(row)
        if args.solve:
            record({"backend": backend, "solve_4096": solve_time(backend, 4096)})


if __name__ == "__main__":
    main()
