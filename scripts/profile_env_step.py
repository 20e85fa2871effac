"""Where an env step's time goes, phase by phase: the action mapping, the physics, rewards and
terminations (+ the reset state), the sensor refresh, and managers + observations.

    python scripts/profile_env_step.py [--task quadruped_flat] [--physics warp] [--num-envs 4096]
                                       [--steps 200] [--eager] [--compile] [--kinematic-reset]
                                       [--whole-refresh] [--out rows.jsonl]

The env marks the end of each phase itself (BatchedEnv.step's `mark` hook). On a GPU each phase
is timed by the device's own clock (CUDA events between the phases, read once at the end:
rl/iteration_clock.py), so the numbers are GPU time per phase, not launch time; with CUDA graphs
(the default where the env allows them) the phases are the graph replays and the Warp graphs
between them (envs/cuda_graph.py). On the CPU (a dry run, or the CPU backends) it is
host time. Random actions; per-phase medians over the steps, in microseconds, and each phase's
share of the step (and the mean step: on the CPU only steps where an env ended run the reset path).
`--whole-refresh` runs the whole sensor refresh after resets instead of the part the terms read
(env.sensor_refresh, envs/sensor_reads.py): the difference is what that plan saves.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import torch

from robolearn.compose import compose_train
from robolearn.envs.batched_env import STEP_PHASES, BatchedEnv
from robolearn.registry import get_task
from robolearn.rl.iteration_clock import IterationClock


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--task", default="quadruped_flat")
    parser.add_argument("--physics", default="warp")
    parser.add_argument("--randomization", default="default")
    parser.add_argument("--num-envs", type=int, default=4096)
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--eager", action="store_true", help="no CUDA graphs (the eager phases)")
    parser.add_argument("--compile", action="store_true", help="env.compile=true (terms through torch.compile)")
    parser.add_argument("--kinematic-reset", action="store_true",
                        help="physics.reset_sensors=kinematic (no solver in the sensor refresh after resets)")
    parser.add_argument("--whole-refresh", action="store_true",
                        help="env.sensor_refresh=full: the whole refresh after resets, whatever the terms read")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    device = torch.device(args.device)
    cfg = compose_train([f"task={args.task}", f"physics={args.physics}", f"randomization={args.randomization}"])
    env = BatchedEnv(cfg.task, get_task(cfg.task.name), args.num_envs, physics=args.physics, device=device, seed=3,
                     cuda_graph=False if args.eager else None, randomization=cfg.randomization,
                     compile=args.compile,
                     physics_settings={"reset_sensors": "kinematic" if args.kinematic_reset else "exact"})  # fmt: skip
    if args.whole_refresh:
        env.sensor_refresh = "full"
    env.reset()
    gen = torch.Generator(device).manual_seed(0)
    action = torch.empty(args.num_envs, env.num_actions, device=device)
    with torch.inference_mode():
        for _ in range(5):  # graphs captured, kernels compiled
            env.step(action.uniform_(-1, 1, generator=gen))
        clocks = []
        for _ in range(args.steps):  # no host read until the end: the host runs ahead as in training
            action.uniform_(-1, 1, generator=gen)
            clock = IterationClock(device)
            clock.mark("start")
            env.step(action, mark=clock.mark)  # the env marks the end of each of STEP_PHASES
            clocks.append(clock)
        samples = {name: [] for name in STEP_PHASES}
        steps = []
        for clock in clocks:
            phases = clock.phases()
            for name, seconds in phases.items():
                samples[name].append(1e6 * seconds)
            steps.append(1e6 * sum(phases.values()))
    medians = {name: statistics.median(values) for name, values in samples.items()}
    total = sum(medians.values())
    row = {"task": args.task, "physics": args.physics, "num_envs": args.num_envs, "device": str(device),
           "gpu": torch.cuda.get_device_name() if device.type == "cuda" else None, "graphs": env._graphed is not None, "compiled": args.compile,
           "reset_sensors": env.physics.reset_sensors, "sensor_refresh": env.sensor_refresh,
           "step_mean_us": statistics.fmean(steps),
           "phases_mean_us": {name: statistics.fmean(values) for name, values in samples.items()}, "date": time.strftime("%Y-%m-%d"), "step_us": total,
           "phases_us": medians, "shares": {k: v / total for k, v in medians.items()}}  # fmt: skip
    print(json.dumps(row), flush=True)
    if args.out:
        with open(args.out, "a") as out:
            out.write(json.dumps(row) + "\n")
    env.close()


if __name__ == "__main__":
    main()
