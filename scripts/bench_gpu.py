"""GPU benchmark: raw engine vs robolearn env pipeline vs full training, per backend and env count.

    python scripts/bench_gpu.py [--task cartpole] [--randomization default] [--backends warp mjx]
                                [--num-envs 1024 4096 16384] [--amp] [--env-compile] [--kinematic-reset] [--solve]
                                [--out results.jsonl]

Rates are control steps per second summed over environments (each is the task's decimation in
physics steps: cartpole 2, the quadrupeds 4):
  raw engine    the engine alone, no robolearn code: mujoco_warp's decimated step captured in a
                CUDA graph and replayed, fed the controls the env's action mapping makes of random
                actions (as the pipeline is: the engine's work depends on the state, and robots
                chasing random targets make more contacts than standing ones); raw_engine_standing
                holds the default pose instead (the column before 2026-11-27). MJX's jitted
                vmap(lax.scan(step)) on device arrays, random controls
  env pipeline  BatchedEnv.step with random actions on the GPU (torch + engine, no host sync); with
                --env-compile also with env.compile=true; with --kinematic-reset also with
                physics.reset_sensors=kinematic (no solver in the sensor refresh after resets), and
                with both flags both together
  training      OnPolicyRunner iterations (rollout + PPO update) with the task's recipe, median over
                measured iterations, with the eager and with the CUDA-graphed update
                (algo.cuda_graph), and the learner's share of the iteration time (from the device's
                own timestamps: rl/iteration_clock.py); with --amp also the graphed update in bf16
                autocast (algo.amp=bf16)
  memory        GPU memory taken by building the env (physics) and the learner, from cudaMemGetInfo
--solve additionally runs `robolearn train physics=<backend> env.num_envs=4096` as a user would
and reports the wall time, from launch (imports and compilation included), until an iteration's
mean episode length reaches 95 % of the maximum.
"""

from __future__ import annotations

import argparse
import contextlib
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
from robolearn.registry import discover_tasks
from robolearn.rl.runner import OnPolicyRunner

DEVICE = torch.device(os.environ.get("BENCH_DEVICE", "cuda"))  # BENCH_DEVICE=cpu: a dry run of the script


def sync() -> None:
    if DEVICE.type == "cuda":
        torch.cuda.synchronize()


def free_bytes() -> int:
    return torch.cuda.mem_get_info()[0] if DEVICE.type == "cuda" else 0


def timed(step, seconds: float, warmup: int = 10) -> float:
    """Calls per second of `step` (which must leave its work on the GPU), after warm-up."""
    for _ in range(warmup):
        step()
    sync()
    n, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        for _ in range(20):
            step()
        n += 20
        sync()
    return n / (time.perf_counter() - start)


def env_controls(env: BatchedEnv, count: int = 16) -> list[torch.Tensor]:
    """The controls the env writes for `count` uniform random actions (after its action mapping)."""
    gen = torch.Generator(DEVICE).manual_seed(1)
    controls = []
    with torch.inference_mode():
        for _ in range(count):
            env.step(torch.rand(env.num_envs, env.num_actions, device=DEVICE, generator=gen) * 2 - 1)
            controls.append(env.physics.state_dict()["ctrl"].to(DEVICE))
    return controls


def raw_warp(env: BatchedEnv, seconds: float, controls: list[torch.Tensor] | None = None) -> float:
    """The env's own compiled model (terrain included) and contact buffers, stepped bare: holding
    the env's current targets, or a new set of `controls` before each decimated step (copied on
    the stream the graph replays on)."""
    import mujoco_warp as mjw
    import warp as wp

    wp.config.quiet = True
    model, n = env.model, env.num_envs
    m = mjw.put_model(model)
    m.opt.warn_overflow = 0
    d = mjw.make_data(model, nworld=n)  # mujoco_warp's default buffers, as the env's (physics.nconmax unset)
    wp.to_torch(d.qpos).copy_(env.physics.qpos)  # the env's states: standing robots, not qpos0
    ctrl = wp.to_torch(d.ctrl)
    ctrl.copy_(env.physics.state_dict()["ctrl"])  # holding the env's targets
    mjw.step(m, d)  # compile
    with wp.ScopedCapture() as capture:
        for _ in range(env.decimation):
            mjw.step(m, d)
    if not controls:
        return n * timed(lambda: wp.capture_launch(capture.graph), seconds)
    stream = wp.stream_from_torch(torch.cuda.current_stream()) if DEVICE.type == "cuda" else None
    count = [0]

    def step():
        ctrl.copy_(controls[count[0] % len(controls)])
        count[0] += 1
        with wp.ScopedStream(stream) if stream else contextlib.nullcontext():
            wp.capture_launch(capture.graph)

    return n * timed(step, seconds)


def raw_mjx(env: BatchedEnv, seconds: float) -> float:
    import jax
    import jax.numpy as jnp
    from mujoco import mjx

    model, num_envs, substeps = env.model, env.num_envs, env.decimation
    mx, d0 = mjx.put_model(model, impl="jax"), mjx.make_data(model, impl="jax")
    data = jax.vmap(lambda _: d0)(jnp.arange(num_envs))
    ctrl = jax.random.uniform(jax.random.PRNGKey(0), (num_envs, model.nu), minval=-1, maxval=1)

    def decimated(d, c):
        d = d.replace(ctrl=c)
        return jax.lax.scan(lambda d, _: (mjx.step(mx, d), None), d, None, length=substeps)[0]

    step = jax.jit(jax.vmap(decimated))
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


TASK = {"name": "cartpole", "randomization": "default"}


def compose(backend: str):
    return compose_train([f"task={TASK['name']}", f"physics={backend}", f"randomization={TASK['randomization']}"])


def make_env(backend: str, num_envs: int, cuda_graph: bool | None = None, compile: bool = False,
             reset_sensors: str = "exact") -> BatchedEnv:  # fmt: skip
    cfg = compose(backend)
    env = BatchedEnv(cfg.task, discover_tasks()[TASK["name"]], num_envs, physics=backend, device=DEVICE, seed=3,
                     cuda_graph=cuda_graph, randomization=cfg.randomization, compile=compile,
                     physics_settings={"reset_sensors": reset_sensors})  # fmt: skip
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
            action = torch.rand(num_envs, envs[0].num_actions, generator=gen, device=DEVICE) * 2 - 1
            outs = [env.step(action) for env in envs]
    diff = max((outs[0][0][g] - outs[1][0][g]).abs().max().item() for g in outs[0][0])
    for env in envs:
        env.close()
    return diff


def pipeline_rate(env: BatchedEnv, seconds: float) -> float:
    actions = torch.empty(env.num_envs, env.num_actions, device=DEVICE)

    def env_step():
        with torch.inference_mode():
            env.step(actions.uniform_(-1, 1))

    return env.num_envs * timed(env_step, seconds)


def training(env: BatchedEnv, backend: str, iterations: int, graphed_update: bool, amp: str | None = None) -> dict:
    cfg = compose(backend)
    cfg.algo.cuda_graph = graphed_update
    cfg.algo.amp = amp
    runner_cfg = RunnerCfg(num_steps_per_env=cfg.runner.num_steps_per_env, max_iterations=iterations + 2)
    runner = OnPolicyRunner(env, cfg.algo, runner_cfg, DEVICE)
    rows: list[dict] = []
    runner.learn(rows.append)
    rows = sorted(rows[2:], key=lambda r: r["steps_per_s"])
    mid = rows[len(rows) // 2]
    key = ("graphed_update" if graphed_update else "eager_update") + (f"_{amp}" if amp else "")
    return {f"training_{key}": mid["steps_per_s"],
            f"learner_share_{key}": mid["learning_s"] / (mid["learning_s"] + mid["collection_s"]),
            f"update_ms_{key}": 1000 * mid["learning_s"]}  # fmt: skip


def variant_rate(backend: str, num_envs: int, seconds: float, **options) -> float:
    """The env pipeline's rate in a variant of make_env's `options`, the env closed afterwards."""
    env = make_env(backend, num_envs, **options)
    rate = pipeline_rate(env, seconds)
    env.close()
    return rate


def pipeline_and_training(backend: str, num_envs: int, seconds: float, iterations: int, amp: bool = False,
                          env_compile: bool = False, kinematic_reset: bool = False) -> dict:  # fmt: skip
    variants = {"env_pipeline_eager": {"cuda_graph": False}}
    if env_compile:  # env.compile: the term computations fused by torch.compile (inside the graphs)
        variants["env_pipeline_compiled"] = {"compile": True}
    if kinematic_reset:  # physics.reset_sensors=kinematic: no solver in the refresh after resets
        variants["env_pipeline_kinematic_reset"] = {"reset_sensors": "kinematic"}
        if env_compile:
            variants["env_pipeline_kinematic_reset_compiled"] = {"reset_sensors": "kinematic", "compile": True}
    rates = {key: variant_rate(backend, num_envs, seconds, **options) for key, options in variants.items()}
    sync()
    free0 = free_bytes()
    env = make_env(backend, num_envs)
    sync()
    free1 = free_bytes()
    if backend == "warp":
        row = {"raw_engine_standing": raw_warp(env, seconds)}
        row["raw_engine"] = raw_warp(env, seconds, env_controls(env))
    else:
        row = {"raw_engine": raw_mjx(env, seconds)}
    row["env_pipeline"] = pipeline_rate(env, seconds)
    row.update(rates)
    sync()
    free2 = free_bytes()
    row.update(training(env, backend, iterations, graphed_update=False))
    sync()
    free3 = free_bytes()
    graphed = DEVICE.type == "cuda"  # (a CPU dry run trains eagerly)
    row.update(training(env, backend, iterations, graphed_update=graphed))
    if amp:
        row.update(training(env, backend, iterations, graphed_update=graphed, amp="bf16"))
    env.close()
    row.update(physics_mib=(free0 - free1) / 2**20, learner_mib=(free2 - free3) / 2**20,
               total_mib_at_end=(free0 - free_bytes()) / 2**20)  # fmt: skip
    return row


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
    parser.add_argument("--task", default="cartpole")
    parser.add_argument("--randomization", default="default")
    parser.add_argument("--parity-envs", type=int, default=1024)
    parser.add_argument("--backends", nargs="+", default=["warp", "mjx"])
    parser.add_argument("--num-envs", type=int, nargs="+", default=[1024, 4096, 16384])
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--iterations", type=int, default=4)
    parser.add_argument("--amp", action="store_true", help="also train with the graphed update in bf16 autocast")
    parser.add_argument("--env-compile", action="store_true", help="also the env pipeline with env.compile=true")
    parser.add_argument("--kinematic-reset", action="store_true",
                        help="also the env pipeline with physics.reset_sensors=kinematic")
    parser.add_argument("--solve", action="store_true")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    TASK.update(name=args.task, randomization=args.randomization)
    out = open(args.out, "a") if args.out else None

    def record(row: dict) -> None:
        print(json.dumps(row), flush=True)
        if out:
            out.write(json.dumps(row) + "\n")
            out.flush()

    record({"gpu": torch.cuda.get_device_name() if DEVICE.type == "cuda" else "cpu", "torch": torch.__version__, "date": time.strftime("%Y-%m-%d"),
            "warp_cache": os.environ.get("WARP_CACHE_PATH"), **TASK})
    for backend in args.backends:
        if args.parity_envs:
            record({"backend": backend, "graph_vs_eager_max_obs_diff_after_100_steps": graph_parity(backend, args.parity_envs)})
        for n in args.num_envs:
            t0 = time.perf_counter()
            row = {"task": TASK["name"], "backend": backend, "num_envs": n}
            row.update(pipeline_and_training(backend, n, args.seconds, args.iterations, args.amp, args.env_compile,
                                              args.kinematic_reset))
            row["pipeline_over_raw"] = row["env_pipeline"] / row["raw_engine"]
            for variant in ("compiled", "kinematic_reset", "kinematic_reset_compiled"):
                if f"env_pipeline_{variant}" in row:
                    row[f"{variant}_pipeline_over_raw"] = row[f"env_pipeline_{variant}"] / row["raw_engine"]
            row["bench_s"] = time.perf_counter() - t0
            record(row)
        if args.solve:
            record({"backend": backend, "solve_4096": solve_time(backend, 4096)})


if __name__ == "__main__":
    main()
