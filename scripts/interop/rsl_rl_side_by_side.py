"""robolearn's PPO vs rsl_rl's PPO (rsl-rl-lib 5.x) on the same robolearn env, the same recipe.

    # one run (one process): a library, a task, a seed
    python scripts/interop/rsl_rl_side_by_side.py train --lib robolearn|rsl_rl --task cartpole --seed 0 \\
        --out /tmp/sbs/cartpole/robolearn_s0 [--iterations N] [--num-envs N] [-- more overrides]
    # a campaign: the runs one after the other, libraries interleaved per seed (robolearn s0, rsl_rl s0,
    # robolearn s1, ...), each pinned to one core with one thread; then the summary
    python scripts/interop/rsl_rl_side_by_side.py campaign --task cartpole --seeds 0 1 2 --root /tmp/sbs [--cpu 1]
    python scripts/interop/rsl_rl_side_by_side.py summary --root /tmp/sbs --task cartpole

rsl_rl is not a robolearn dependency: run this with an interpreter that has `rsl-rl-lib` (and
tensordict) next to robolearn (scripts/interop/README.md says how the venv was made).

What is the same for both libraries:
- the env: one `robolearn.envs.BatchedEnv`, built as `robolearn train` builds it (app.build_env, the
  task's recipe, `physics=mujoco physics.num_threads=1`, staggered first time-outs), seeded alike;
- the recipe: every PPO hyperparameter is read from the composed robolearn config (`cfg.algo`,
  `cfg.runner`) and mapped onto rsl_rl's config (`rsl_rl_config`; what cannot be matched is
  listed in UNMATCHED);
- time-outs: rsl_rl gets `extras["time_outs"]` = robolearn's `truncated` (a time-out that did not
  also terminate), so both bootstrap a cut episode with V(s_t);
- the training curve: the env's own episode statistics (`pop_episode_stats`, a window of the last
  100 finished episodes), popped once per iteration for both;
- the evaluation: robolearn.evaluate.evaluate (deterministic actions, one full episode per env,
  randomization as trained) on a fresh env with a fixed seed, for robolearn's actor and for
  rsl_rl's actor alike; the quadruped is scored as scripts/bench_quadruped.py scores it (forward
  commands 0-1 m/s: tracking error < 0.2 m/s and falls < 5 % is walking).

Each library runs its own loop: robolearn's OnPolicyRunner.learn, rsl_rl's OnPolicyRunner.learn
(its logger's `log` is replaced by a hook that records the iteration and may stop the run; its
collection and learning times are rsl_rl's own). Timing caveat: rsl_rl counts compute_returns
(GAE) in its learning time, robolearn in its collection time.
"""

from __future__ import annotations

import argparse
import copy
import datetime
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from rsl_rl_adapter import RslVecEnv, Stop, rsl_rl_config  # noqa: E402

TASKS = {
    # task: (iterations, solve metric, threshold, extra overrides, evaluation envs, snapshots)
    "cartpole": dict(iterations=100, metric="mean_episode_length", threshold=237.5, overrides=[], eval_envs=256,
                     snapshots=[]),
    "pendulum": dict(iterations=300, metric="mean_episode_return", threshold=700.0, overrides=[], eval_envs=256,
                     snapshots=[100, 200]),
    "quadruped_flat": dict(iterations=250, metric=None, threshold=None, overrides=["env.num_envs=1024"], eval_envs=64,
                           snapshots=[100, 150, 175, 200, 225]),
}
EVAL_SEED = 12345
"""The evaluation env's seed: the same episodes for both libraries' policies."""

KEPT = ("iteration", "env_steps", "mean_episode_return", "mean_episode_length", "learning_rate", "action_std", "kl",
        "value_loss", "surrogate_loss", "entropy", "health/skipped_minibatches")
"""The columns of robolearn's metrics rows the comparison keeps."""
UNMATCHED = [
    "observation normalizers: robolearn seeds both from the first observations (each first layer absorbing them), "
    "merges each rollout once per iteration (critic before the update, its first layer re-expressed; actor after "
    "the update); rsl_rl merges every step's observations into both during the rollout, nothing absorbed, starting "
    "from mean 0 / var 1 (its update then sees statistics newer than the rollout's: ratio != 1 at the first minibatch)",
    "normalizer floor: robolearn divides by max(std, normalizer_min_std=0.01); rsl_rl by std + 0.01 (eps fixed)",
    "minibatches: robolearn reshuffles every epoch; rsl_rl draws one permutation and reuses it in every epoch",
    "non-finite minibatches: robolearn skips the step on the device; rsl_rl has no such guard (none occurred here "
    "unless the run logs skipped minibatches)",
    "rsl_rl's runner checks obs/rewards/dones for NaN every step (check_for_nan, its default: kept)",
    "the rsl_rl adapter clones the env's observation buffers and builds a TensorDict each step (robolearn's "
    "storage copies them itself); rsl_rl's time split counts GAE in learning, robolearn's in collection",
]


# ---------------------------------------------------------------------------------------------------
def compose(task: str, seed: int, overrides: list[str]):
    from robolearn.compose import compose_train

    return compose_train([f"task={task}", "physics=mujoco", "physics.num_threads=1", f"seed={seed}",
                          "runner.progress=false", "logger=none", *overrides])  # fmt: skip


def train(args) -> None:
    import torch

    torch.set_num_threads(1)
    torch.set_num_interop_threads(1)
    from robolearn.app import build_env, placement, seed_everything

    spec = TASKS[args.task]
    iterations = args.iterations or spec["iterations"]
    overrides = [*spec["overrides"], *([f"env.num_envs={args.num_envs}"] if args.num_envs else []), *args.overrides,
                 f"runner.max_iterations={iterations}"]  # fmt: skip
    cfg = compose(args.task, args.seed, overrides)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    backend, device = placement(cfg)
    t_launch = time.perf_counter()
    seed_everything(cfg.seed)
    env = build_env(cfg, backend, device)
    rows: list[dict] = []
    snapshots: dict[str, object] = {}
    state = {"solved_at": None, "t0": None, "t_prev": None}
    metric, threshold = spec["metric"], spec["threshold"]
    snap_at = set(spec["snapshots"] if args.snapshots is None else args.snapshots)
    metrics_file = (out / "metrics.jsonl").open("w")

    def record(row: dict, policy_copy) -> bool:
        """Log one iteration; True: stop."""
        now = time.perf_counter()
        row["iter_wall_s"] = now - state["t_prev"]
        row["wall_s"] = now - state["t0"]
        state["t_prev"] = now
        rows.append(row)
        metrics_file.write(json.dumps(row) + "\n")
        metrics_file.flush()
        it = row["iteration"]
        if metric and state["solved_at"] is None and row.get(metric, -1e9) >= threshold:
            state["solved_at"] = {"iteration": it, "env_steps": row["env_steps"], "wall_s": row["wall_s"]}
            snapshots[f"solved@{it}"] = policy_copy()
            if args.stop_at_solve:
                return True
        if it in snap_at:
            snapshots[f"it{it}"] = policy_copy()
        if it % 10 == 0 or it == 1:
            ret, length = row.get("mean_episode_return", float("nan")), row.get("mean_episode_length", float("nan"))
            print(f"[{args.lib} {args.task} s{args.seed}] it {it} steps {row['env_steps']} return {ret:.1f} "
                  f"length {length:.1f} collect {row['collect_s']*1e3:.0f} ms learn {row['learn_s']*1e3:.0f} ms", flush=True)
        return False

    steps_per_it = env.num_envs * cfg.runner.num_steps_per_env
    state["t0"] = state["t_prev"] = time.perf_counter()
    learn = _learn_robolearn if args.lib == "robolearn" else _learn_rsl_rl
    policy_copy = learn(env, cfg, device, iterations, record, out)
    metrics_file.close()
    train_wall = time.perf_counter() - state["t0"]
    last = rows[-1]
    snapshots[f"final@{last['iteration']}"] = policy_copy()
    env.close()

    evals = _evaluate(args, overrides, snapshots, backend, device)

    def med(key, skip=5):
        vals = [r[key] for r in rows[skip:]] or [r[key] for r in rows]
        return statistics.median(vals)

    summary = {
        "lib": args.lib, "task": args.task, "seed": args.seed, "num_envs": env.num_envs,
        "steps_per_iteration": steps_per_it, "iterations_run": last["iteration"], "env_steps": last["env_steps"],
        "train_wall_s": train_wall, "setup_s": state["t0"] - t_launch,
        "median_iter_s": med("iter_wall_s"), "median_collect_s": med("collect_s"), "median_learn_s": med("learn_s"),
        "solve_metric": metric, "threshold": threshold, "solved": state["solved_at"],
        "final_row": {k: last.get(k) for k in ("mean_episode_return", "mean_episode_length")},
        "eval": evals, "date": datetime.date.today().isoformat(), "versions": versions(),
        "torch_threads": torch.get_num_threads(), "affinity": sorted(os.sched_getaffinity(0)),
    }  # fmt: skip
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    print(json.dumps({k: summary[k] for k in ("lib", "task", "seed", "solved", "train_wall_s", "median_collect_s",
                                              "median_learn_s")}), flush=True)  # fmt: skip


def _learn_robolearn(env, cfg, device, iterations, record, out):
    """robolearn's OnPolicyRunner.learn, each iteration's row through `record` (True: stop);
    returns a function that copies the current policy (deterministic actions)."""
    from robolearn.rl.runner import OnPolicyRunner

    runner = OnPolicyRunner(env, cfg.algo, cfg.runner, device)
    runner.start()
    ac = runner.actor_critic
    stop = {"now": False}

    def policy_copy():
        net = copy.deepcopy(ac).eval()
        return lambda obs: net.action_mean(obs)

    def log(row: dict) -> None:
        keep = {k: v for k, v in row.items() if k in KEPT}
        keep.update(collect_s=row["collection_s"], learn_s=row["learning_s"])
        stop["now"] = record(keep, policy_copy)

    runner.learn(log, None, should_stop=lambda: stop["now"])
    return policy_copy


def _learn_rsl_rl(env, cfg, device, iterations, record, out):
    """rsl_rl's OnPolicyRunner.learn on the same env (its logger replaced by a hook that records each
    iteration and may stop the run); returns a function that copies the current policy."""
    from rsl_rl.runners import OnPolicyRunner as RslRunner

    steps_per_it = env.num_envs * cfg.runner.num_steps_per_env
    vec = RslVecEnv(env)
    train_cfg = rsl_rl_config(cfg)
    (out / "rsl_rl_config.json").write_text(json.dumps(train_cfg, indent=2) + "\n")
    runner = RslRunner(vec, copy.deepcopy(train_cfg), log_dir=None, device=str(device))
    actor = runner.alg.get_policy()

    def policy_copy():  # rsl_rl's own export copy: normalizer + MLP, deterministic (mean) output
        net = actor.as_jit().eval()
        return lambda obs: net(obs)

    def hook(it, start_it, total_it, collect_time, learn_time, loss_dict, learning_rate, action_std, **_):
        row = {"iteration": it + 1, "env_steps": (it + 1) * steps_per_it, **env.pop_episode_stats()}
        row = {k: v for k, v in row.items() if k in ("iteration", "env_steps", "mean_episode_return",
               "mean_episode_length")}  # fmt: skip
        row.update(collect_s=collect_time, learn_s=learn_time, learning_rate=float(learning_rate),
                   action_std=float(action_std.detach().mean()), **{f"{k}_loss" if k != "entropy" else k: v
                                                            for k, v in loss_dict.items()})  # fmt: skip
        if record(row, policy_copy):
            raise Stop

    runner.logger.log = hook
    try:
        runner.learn(iterations)
    except Stop:
        pass
    return policy_copy


def _evaluate(args, overrides, snapshots, backend, device) -> dict:
    """Each snapshot scored on a fresh env of the same config with a fixed seed, the same for both
    libraries (the quadruped on bench_quadruped's forward commands)."""
    from robolearn.app import build_env
    from robolearn.evaluate import evaluate

    spec = TASKS[args.task]
    evals = {}
    eval_overrides = list(overrides)
    if args.task.startswith("quadruped"):
        sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
        from bench_quadruped import FORWARD

        eval_overrides += FORWARD
    ecfg = compose(args.task, EVAL_SEED, eval_overrides)
    for name, act in snapshots.items():
        eenv = build_env(ecfg, backend, device, num_envs=spec["eval_envs"])
        t = time.perf_counter()
        m, _ = evaluate(eenv, act, progress=False)
        eenv.close()
        keys = ["return_mean", "return_std", "episode_length_mean", "terminated_fraction", "lin_vel_error"]
        evals[name] = {k: m[k] for k in keys if k in m} | {"eval_s": time.perf_counter() - t}
        print(f"[{args.lib} {args.task} s{args.seed}] eval {name}: {json.dumps(evals[name])}", flush=True)
    return evals


def versions() -> dict:
    from importlib.metadata import PackageNotFoundError, version

    out = {}
    for name in ("torch", "mujoco", "rsl-rl-lib", "tensordict", "robolearn"):
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            out[name] = None
    return out


# ---------------------------------------------------------------------------------------------------
def campaign(args) -> None:
    root = Path(args.root) / args.task
    root.mkdir(parents=True, exist_ok=True)
    environ = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}
    for seed in args.seeds:
        for lib in args.libs:
            run = root / f"{lib}_s{seed}"
            if (run / "summary.json").exists() and not args.redo:
                print(f"skip {run} (done)")
                continue
            command = ["taskset", "-c", str(args.cpu), sys.executable, __file__, "train", "--lib", lib, "--task",
                       args.task, "--seed", str(seed), "--out", str(run)]  # fmt: skip
            if args.iterations:
                command += ["--iterations", str(args.iterations)]
            if args.stop_at_solve:
                command += ["--stop-at-solve"]
            if args.overrides:
                command += ["--", *args.overrides]
            print(" ".join(command), flush=True)
            run.mkdir(parents=True, exist_ok=True)
            with (run / "log.txt").open("w") as logf:
                subprocess.run(command, env=environ, stdout=logf, stderr=subprocess.STDOUT, check=True)
            print((run / "summary.json").read_text() if (run / "summary.json").exists() else "no summary", flush=True)
    summary(args)


def summary(args) -> None:
    root = Path(args.root) / args.task
    runs = sorted(root.glob("*_s*/summary.json"))
    print(f"\n## {args.task}\n")
    print("| lib | seed | solved at it | env steps | train wall s to solve | iterations | final return | final length "
          "| iter s (median) | collect s | learn s | eval (final) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for path in runs:
        s = json.loads(path.read_text())
        solved = s["solved"] or {}
        final = [v for k, v in s["eval"].items() if k.startswith("final")]
        ev = final[0] if final else {}
        ev_text = f"R {ev.get('return_mean', float('nan')):.1f} len {ev.get('episode_length_mean', float('nan')):.0f}"
        if "lin_vel_error" in ev:
            ev_text += f" track {ev['lin_vel_error']:.3f} falls {ev['terminated_fraction']:.3f}"
        fr = s["final_row"]
        print(f"| {s['lib']} | {s['seed']} | {solved.get('iteration', '-')} | {solved.get('env_steps', '-')} | "
              f"{solved.get('wall_s', float('nan')):.1f} | {s['iterations_run']} | {fr['mean_episode_return'] or 0:.1f} | "
              f"{fr['mean_episode_length'] or 0:.1f} | {s['median_iter_s']:.3f} | {s['median_collect_s']:.3f} | "
              f"{s['median_learn_s']:.3f} | {ev_text} |")
    for path in runs:
        s = json.loads(path.read_text())
        print(f"{s['lib']} s{s['seed']} evals: " + "; ".join(
            f"{k}: R {v.get('return_mean', 0):.1f}" + (f" track {v['lin_vel_error']:.3f} falls {v['terminated_fraction']:.3f}"
                                                       if "lin_vel_error" in v else "")
            for k, v in s["eval"].items()))  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    t = sub.add_parser("train")
    t.add_argument("--lib", choices=["robolearn", "rsl_rl"], required=True)
    t.add_argument("--task", choices=sorted(TASKS), required=True)
    t.add_argument("--seed", type=int, default=0)
    t.add_argument("--iterations", type=int, default=None)
    t.add_argument("--num-envs", type=int, default=None)
    t.add_argument("--snapshots", type=int, nargs="*", default=None)
    t.add_argument("--stop-at-solve", action="store_true")
    t.add_argument("--out", required=True)
    t.add_argument("overrides", nargs="*")
    c = sub.add_parser("campaign")
    c.add_argument("--task", choices=sorted(TASKS), required=True)
    c.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    c.add_argument("--libs", nargs="+", default=["robolearn", "rsl_rl"])
    c.add_argument("--root", default="/tmp/sbs")
    c.add_argument("--cpu", type=int, default=1)
    c.add_argument("--iterations", type=int, default=None)
    c.add_argument("--stop-at-solve", action="store_true")
    c.add_argument("--redo", action="store_true")
    c.add_argument("overrides", nargs="*")
    s = sub.add_parser("summary")
    s.add_argument("--task", choices=sorted(TASKS), required=True)
    s.add_argument("--root", default="/tmp/sbs")
    args = parser.parse_args()
    {"train": train, "campaign": campaign, "summary": summary}[args.command](args)


if __name__ == "__main__":
    main()
