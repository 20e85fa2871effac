"""Which part of a step is not reproducible: two eager envs, same seed, same actions, MuJoCo
Warp's deterministic mode; after each step, every array of the two engines' Data and every
observation group are compared, and the first step where anything differs is reported field by
field (max |difference|). Engine fields that differ point at MuJoCo Warp (a report upstream);
observations that differ while every engine field is equal point at a torch op.

    python scripts/determinism_probe.py [--task quadruped_flat] [--randomization sim2real]
                                        [--num-envs 512] [--steps 20] [--out rows.jsonl]

On a GPU (tests/gpu/test_cuda_graphs.py's control failed there, H200 2026-11-27); on the CPU it is
a dry run (Warp's CPU device runs one thread: nothing should differ).
"""

from __future__ import annotations

import argparse
import json

import torch
import warp as wp

from robolearn.compose import compose_train
from robolearn.envs.batched_env import BatchedEnv
from robolearn.registry import get_task


def data_arrays(d) -> dict[str, torch.Tensor]:
    """Every float/int Warp array of a mujoco_warp Data, as torch views."""
    out = {}
    for name in dir(d):
        value = getattr(d, name, None)
        if isinstance(value, wp.array) and value.size:
            try:
                out[name] = wp.to_torch(value)
            except Exception:  # types torch cannot view (none expected); skipped, not compared
                continue
    return out


def differences(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> dict[str, float]:
    diff = {}
    for name, x in a.items():
        y = b[name]
        if not torch.equal(x, y):
            delta = (x.double() - y.double()).abs()
            diff[name] = float(delta[torch.isfinite(delta)].max()) if torch.isfinite(delta).any() else float("nan")
    return diff


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--task", default="quadruped_flat")
    parser.add_argument("--randomization", default="sim2real")
    parser.add_argument("--num-envs", type=int, default=512)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    device = torch.device(args.device)
    cfg = compose_train([f"task={args.task}", "physics=warp", f"randomization={args.randomization}"])
    envs = [BatchedEnv(cfg.task, get_task(cfg.task.name), args.num_envs, physics="warp", device=device, seed=5,
                       cuda_graph=False, randomization=cfg.randomization,
                       physics_settings={"deterministic": True}) for _ in range(2)]  # fmt: skip
    for env in envs:
        env.reset()
    gen = torch.Generator(device).manual_seed(0)
    row = {"task": args.task, "randomization": args.randomization, "num_envs": args.num_envs, "device": str(device)}
    with torch.inference_mode():
        before = differences(*(data_arrays(env.physics.d) for env in envs))
        row["after_reset_engine"] = before
        for step in range(args.steps):
            action = torch.randn(args.num_envs, envs[0].num_actions, device=device, generator=gen)
            outs = [env.step(action) for env in envs]
            engine = differences(*(data_arrays(env.physics.d) for env in envs))
            observed = differences(outs[0][0], outs[1][0])
            if engine or observed or before:
                row.update(first_step=step, engine=engine, observations=observed)
                break
        else:
            row["first_step"] = None
    print(json.dumps(row, indent=1))
    if args.out:
        with open(args.out, "a") as f:
            f.write(json.dumps(row) + "\n")
    for env in envs:
        env.close()


if __name__ == "__main__":
    main()
