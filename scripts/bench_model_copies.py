"""What per-environment model copies cost on the CPU backend: full copies vs physics-only copies.

    python scripts/bench_model_copies.py --task go1_walk [--num-envs 128 1024] [--seconds 5]

For an installed task's model (with its edits and floor): the size of the full MjModel and of its
physics-only copy (robolearn/physics/physics_copy.py), the time to make one copy per environment,
and control steps per second of raw `mujoco.rollout` (the call the mujoco backend makes, with
random controls) with all environments sharing the nominal model, with one physics-only copy per
environment, and with one full copy per environment (skipped where the copies would not fit in half
of the available memory). Both kinds of copies step bit for bit alike (tests/physics/test_physics_copy.py),
so the rates differ by memory traffic only.
"""

from __future__ import annotations

import argparse
import copy
import os
import time

import mujoco
import numpy as np
import torch
from bench_cpu import rate
from mujoco import rollout

from robolearn.compose import compose_train
from robolearn.memory import available_bytes
from robolearn.registry import get_task
from robolearn.scene.scene import Scene


def copies(model: mujoco.MjModel, n: int) -> tuple[list[mujoco.MjModel], float]:
    start = time.perf_counter()
    made = [copy.deepcopy(model) for _ in range(n)]
    return made, time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", required=True)
    parser.add_argument("--num-envs", type=int, nargs="+", default=[128, 1024])
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--threads", type=int, default=len(os.sched_getaffinity(0)))
    args = parser.parse_args()

    cfg = compose_train([f"task={args.task}"])
    scene = Scene.build(cfg.task, get_task(args.task), torch.device("cpu"))
    model, decimation = scene.model, cfg.task.decimation
    physics, note = scene.physics_copy()
    if physics is None:
        raise SystemExit(f"no physics-only copy of {args.task}: {note}")
    full_size, physics_size = mujoco.mj_sizeModel(model), mujoco.mj_sizeModel(physics)
    print(f"# {args.task}: MjModel {full_size / 2**20:.1f} MiB, physics-only copy {physics_size / 2**10:.0f} KiB "
          f"({note}); {args.threads} threads, mujoco {mujoco.__version__}, {time.strftime('%Y-%m-%d')}")  # fmt: skip
    print("\n| envs | copies | memory | time to copy s | control steps/s |")
    print("|---|---|---|---|---|")

    full_state = mujoco.mjtState.mjSTATE_FULLPHYSICS
    data = mujoco.MjData(model)
    if model.nkey:
        mujoco.mj_resetDataKeyframe(model, data, model.key("home").id)
    row = np.empty(mujoco.mj_stateSize(model, full_state))
    mujoco.mj_getState(model, data, row, full_state)
    pool = rollout.Rollout(nthread=args.threads)
    for n in args.num_envs:
        rng = np.random.default_rng(0)
        home_ctrl = np.array(data.ctrl)
        state = np.tile(row, (n, 1))
        out_state = np.empty((n, decimation, row.size))
        out_sensor = np.empty((n, decimation, model.nsensordata))

        def measure(models: list, base: mujoco.MjModel) -> float:
            datas = [mujoco.MjData(base) for _ in range(args.threads)]
            state[:] = row

            def step() -> None:
                ctrl = home_ctrl + rng.uniform(-0.3, 0.3, (n, decimation, model.nu))
                pool.rollout(models, datas, state, ctrl, control_spec=int(mujoco.mjtState.mjSTATE_CTRL), skip_checks=True,
                             nstep=decimation, state=out_state, sensordata=out_sensor,
                             chunk_size=max(1, n // (4 * args.threads)))  # fmt: skip
                state[:] = out_state[:, -1]

            return n * rate(step, args.seconds)

        print(f"| {n} | none (shared nominal model) | - | - | {measure([model] * n, model):,.0f} |", flush=True)
        made, seconds = copies(physics, n)
        print(f"| {n} | physics-only | {n * physics_size / 2**20:,.0f} MiB | {seconds:.2f} | {measure(made, physics):,.0f} |",
              flush=True)  # fmt: skip
        del made
        if n * full_size > available_bytes() / 2:
            print(f"| {n} | full | {n * full_size / 2**30:,.1f} GiB | - | does not fit |", flush=True)
            continue
        made, seconds = copies(model, n)
        print(f"| {n} | full | {n * full_size / 2**30:,.1f} GiB | {seconds:.2f} | {measure(made, model):,.0f} |", flush=True)
        del made
    pool.close()


if __name__ == "__main__":
    main()
