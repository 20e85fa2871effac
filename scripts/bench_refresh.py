"""The warp backend's sensor refresh after a reset, per physics.reset_sensors mode, against one
physics step of the same worlds: what a reset costs the env step when every world is reset.

    python scripts/bench_refresh.py [--model quadruped.xml] [--num-envs 512 4096] [--repeats 20]
                                    [--device cuda|cpu] [--out results.jsonl]

exact refreshes with a whole forward (the solver included where a sensor needs it); kinematic with
mujoco_warp's step1 (position and velocity stages). The robots stand on the ground (feet in
contact), as after a reset. Times are wall time per call after a synchronization (the device's
work included), the median of `--repeats` calls.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import torch

from robolearn.paths import assets_dir
from robolearn.physics import load_model, make_backend
from robolearn.physics.base import RESET_SENSORS


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def median_ms(call, device: torch.device, repeats: int) -> float:
    call()  # captured/compiled on the first call
    sync(device)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        call()
        sync(device)
        times.append(time.perf_counter() - start)
    return 1000 * statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="quadruped.xml", help="a file under assets/, or a path")
    parser.add_argument("--num-envs", type=int, nargs="+", default=[512])
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    device = torch.device(args.device)
    path = assets_dir() / args.model if (assets_dir() / args.model).is_file() else args.model
    model = load_model(path)
    for n in args.num_envs:
        for mode in RESET_SENSORS:
            backend = make_backend("warp", model, n, device, {"reset_sensors": mode})
            standing = torch.as_tensor(model.qpos0, dtype=torch.float32, device=device).repeat(n, 1)
            everyone = torch.ones(n, dtype=torch.bool, device=device)
            backend.reset(everyone, standing, torch.zeros(n, model.nv, device=device))
            ctrl = torch.zeros(n, model.nu, device=device)
            row = {"model": str(args.model), "device": str(device), "num_envs": n, "reset_sensors": mode,
                   "date": time.strftime("%Y-%m-%d"),
                   "gpu": torch.cuda.get_device_name(device) if device.type == "cuda" else None,
                   "refresh_ms": median_ms(lambda: backend.refresh(everyone), device, args.repeats),
                   "physics_step_ms": median_ms(lambda: backend.step(ctrl, 1), device, args.repeats)}  # fmt: skip
            row["refresh_over_step"] = row["refresh_ms"] / row["physics_step_ms"]
            print(json.dumps(row), flush=True)
            if args.out:
                with open(args.out, "a") as out:
                    out.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    main()
