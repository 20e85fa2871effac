"""Where the env's physics phase loses to the bare engine: the same decimated step of the same
compiled model, from the same state, set up four ways.

    python scripts/profile_physics_gap.py [--task quadruped_flat] [--num-envs 4096] [--steps 100]
                                          [--out rows.jsonl]

- `env`: the env's own Warp graph (WarpBackend's captured substep loop), replayed bare: no torch
  graphs, no stream waits, no ctrl copy;
- `raw`: mujoco_warp with one shared model (`put_model(model)`) and its default buffers, as
  bench_gpu.py's raw column;
- `raw+env_buffers`: the shared model with the env's contact/constraint buffers (nconmax, njmax);
- `raw+batched`: the env's per-world model arrays (`batch_sizes`, gravity per world, the env's
  randomized values copied in) with mujoco_warp's default buffers;
- `raw+batched+env_buffers`: both, which should match `env`.

Every variant starts from one snapshot of the env after some random-action steps (robots in
training-like states, not standing at qpos0), holds that snapshot's controls, and replays the same
number of decimated steps; the time is the device's (CUDA events) per decimated step, so the
variants step the same trajectory up to float rounding. On the CPU this is a dry run (host time).
"""

from __future__ import annotations

import argparse
import json
import time

import mujoco_warp as mjw
import torch
import warp as wp

from robolearn.compose import compose_train
from robolearn.envs.batched_env import BatchedEnv
from robolearn.registry import get_task

SNAPSHOT = ("qpos", "qvel", "act", "ctrl", "qacc_warmstart")


def decimated_graph(m, d, substeps: int, device):
    for _ in range(substeps):
        mjw.step(m, d)  # compiles kernels
    with wp.ScopedCapture(device=device) as capture:
        for _ in range(substeps):
            mjw.step(m, d)
    return capture.graph


def load(d, snapshot: dict[str, torch.Tensor]) -> None:
    for key, value in snapshot.items():
        wp.to_torch(getattr(d, key)).copy_(value)


def time_steps(graph, d, snapshot, steps: int, device: torch.device) -> float:
    """Microseconds per replay of `graph` over `steps` replays from `snapshot` (after 5 warm-up ones)."""
    load(d, snapshot)
    for _ in range(5):
        wp.capture_launch(graph)
    load(d, snapshot)
    if device.type == "cuda":
        wp.synchronize_device(d.qpos.device)
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        with wp.ScopedStream(wp.stream_from_torch(torch.cuda.current_stream())):
            start.record()
            for _ in range(steps):
                wp.capture_launch(graph)
            end.record()
        end.synchronize()
        return start.elapsed_time(end) * 1e3 / steps
    t0 = time.perf_counter()
    for _ in range(steps):
        wp.capture_launch(graph)
    return (time.perf_counter() - t0) * 1e6 / steps


def variant(env: BatchedEnv, batched: bool, env_buffers: bool):
    """A fresh model + data of the env's compiled model, set up as the flags say."""
    model, n, physics = env.model, env.num_envs, env.physics
    if batched:
        m = mjw.put_model(model, batch_sizes=physics.batch_sizes)
        m.opt.gravity = wp.clone(physics.m.opt.gravity)
        for field in physics.batch_sizes:  # the env's randomized values and what set_const derived from them
            wp.to_torch(getattr(m, field)).copy_(wp.to_torch(getattr(physics.m, field)))
    else:
        m = mjw.put_model(model)
    m.opt.warn_overflow = 0
    m.opt.deterministic = physics.m.opt.deterministic
    sizes = {"nconmax": physics.nconmax, "njmax": physics.njmax} if env_buffers else {}
    return m, mjw.make_data(model, nworld=n, **sizes)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--task", default="quadruped_flat")
    parser.add_argument("--randomization", default="default")
    parser.add_argument("--num-envs", type=int, default=4096)
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--warm-steps", type=int, default=50, help="random-action env steps before the snapshot")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    device = torch.device(args.device)
    cfg = compose_train([f"task={args.task}", "physics=warp", f"randomization={args.randomization}"])
    env = BatchedEnv(cfg.task, get_task(cfg.task.name), args.num_envs, physics="warp", device=device, seed=3,
                     randomization=cfg.randomization)  # fmt: skip
    env.reset()
    gen = torch.Generator(device).manual_seed(0)
    action = torch.empty(args.num_envs, env.num_actions, device=device)
    with torch.inference_mode():
        for _ in range(args.warm_steps):
            env.step(action.uniform_(-1, 1, generator=gen))
    physics = env.physics
    if device.type == "cuda":
        torch.cuda.synchronize()
    snapshot = {k: wp.to_torch(getattr(physics.d, k)).clone() for k in SNAPSHOT}
    wp_device = physics.d.qpos.device
    row = {"task": args.task, "num_envs": args.num_envs, "decimation": env.decimation, "device": str(device),
           "nconmax": physics.nconmax, "njmax": physics.njmax}  # fmt: skip
    own = physics.d.ctrl  # the env's Data reads its ctrl from its own buffer: hold the snapshot's there
    with wp.ScopedDevice(wp_device):
        graph = decimated_graph(physics.m, physics.d, env.decimation, wp_device)
        row["env"] = time_steps(graph, physics.d, snapshot, args.steps, device)
        assert physics.d.ctrl.ptr == own.ptr
        for name, batched, buffers in (("raw", False, False), ("raw+env_buffers", False, True),
                                       ("raw+batched", True, False), ("raw+batched+env_buffers", True, True)):
            m, d = variant(env, batched, buffers)
            load(d, snapshot)
            row[name] = time_steps(decimated_graph(m, d, env.decimation, wp_device), d, snapshot, args.steps, device)
            row[f"{name}_nconmax"] = int(d.naconmax // args.num_envs)
            del m, d
    print(" ".join(f"{k}={v:.0f}" if isinstance(v, float) else f"{k}={v}" for k, v in row.items()))
    if args.out:
        with open(args.out, "a") as f:
            f.write(json.dumps(row) + "\n")
    env.close()


if __name__ == "__main__":
    main()
