"""What memory costs: PPO iteration time and the robot's control-step latency, MLP vs GRU vs LSTM.

    python scripts/bench_memory.py [--task quadruped_flat] [--num-envs 256 1024] [--iterations 6]
        [--networks mlp gru lstm] [--sections iteration latency] [--out results.json]

iteration: `robolearn train` in its own process per (network, num_envs), the task's recipe
otherwise; the median over iterations 2..N of collection (rollout) and learning (update) time
from metrics.jsonl (the first iteration is left out: it warms up). The recurrent networks use the
recipe's defaults (algo.rnn_hidden_size=64, one layer, the actor/critic heads of the recipe after it).
latency: one bundle per network (an untrained policy with the same shapes, exported as training
exports), then `sim2sim` on the CPU MuJoCo stand-in: the median and p99 of one control step
(observe + infer + map, batch 1, ONNX Runtime, one thread) over `--latency-episodes` episodes.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path


def iteration_times(task: str, network: str, num_envs: int, iterations: int, work: Path) -> dict:
    run_dir = work / f"{network}_{num_envs}"
    command = [sys.executable, "-m", "robolearn.cli", "train", f"task={task}", f"env.num_envs={num_envs}",
               f"algo.policy={network}", f"runner.max_iterations={iterations}", "runner.export_onnx=false",
               "runner.progress=false", "runner.video_interval=0", f"hydra.run.dir={run_dir}"]  # fmt: skip
    subprocess.run(command, check=True, capture_output=True)
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()][1:]
    collect = statistics.median(r["collection_s"] for r in rows)
    learn = statistics.median(r["learning_s"] for r in rows)
    return {"network": network, "num_envs": num_envs, "collection_s": collect, "learning_s": learn,
            "iteration_s": collect + learn, "iterations_timed": len(rows)}  # fmt: skip


def control_step_latency(task: str, network: str, episodes: int, work: Path) -> dict:
    import torch

    from robolearn.compose import compose_train
    from robolearn.envs.batched_env import BatchedEnv
    from robolearn.export.bundle import export_bundle
    from robolearn.registry import get_task
    from robolearn.rl.models import ActorCritic
    from robolearn.sim2sim import sim2sim

    cfg = compose_train([f"task={task}", f"algo.policy={network}"])
    env = BatchedEnv(cfg.task, get_task(task), 4, physics="mujoco", seed=0, physics_settings={"num_threads": 1})
    out = work / f"bundle_{network}"
    try:
        torch.manual_seed(0)
        ac = ActorCritic.from_config(cfg.algo, env.observation_dims(), env.num_actions)
        export_bundle(ac, env, out, progress=False)
    finally:
        env.close()
    result = sim2sim(out, episodes=episodes, engine="onnxruntime")
    return {"network": network, **result["control_step_ms"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--task", default="quadruped_flat")
    parser.add_argument("--num-envs", type=int, nargs="+", default=[256, 1024])
    parser.add_argument("--networks", nargs="+", default=["mlp", "gru", "lstm"])
    parser.add_argument("--iterations", type=int, default=6)
    parser.add_argument("--latency-episodes", type=int, default=2)
    parser.add_argument("--sections", nargs="+", default=["iteration", "latency"], choices=["iteration", "latency"])
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    results: dict = {"task": args.task}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        if "iteration" in args.sections:
            results["iteration"] = []
            for num_envs in args.num_envs:
                for network in args.networks:
                    row = iteration_times(args.task, network, num_envs, args.iterations, work)
                    results["iteration"].append(row)
                    print(f"{network:>4} {num_envs:>5} envs: iteration {row['iteration_s']:.3f} s (rollout "
                          f"{row['collection_s']:.3f} s, update {row['learning_s']:.3f} s)", flush=True)  # fmt: skip
        if "latency" in args.sections:
            results["latency"] = []
            for network in args.networks:
                row = control_step_latency(args.task, network, args.latency_episodes, work)
                results["latency"].append(row)
                print(f"{network:>4} control step: median {row['median'] * 1e3:.0f} us, p99 {row['p99'] * 1e3:.0f} us",
                      flush=True)  # fmt: skip
    if args.out:
        args.out.write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
